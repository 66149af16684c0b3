"""fidelity_explain: where each plan's step-time error lives, for bench/fidelity.py.

Per measured strategy, the runtime's traces of its last timed step (one
file per process, written by the children of bench/fidelity_runner.py) are
joined task by task with the simulated step it was planned with
(``python -m oneflow_lite.explain``'s breakdown): per op type and boxing kind
the busy time predicted and measured and the share of the step's error; the
replay (every task at its measured time) against the measured trace; the
slowest rank's critical path, predicted and replayed. The row gets
``trace_step_s`` (the runtime's own span of the step, without the Python
around session.run) and ``explain`` (the breakdown, its top categories).
With ``traces_out``, the measured traces and the predicted one are copied
there side by side (``<mode>_<model>_<strategy>_measured_p<k>.json``,
``..._predicted.json``) to open in Perfetto.
"""
from __future__ import annotations

import glob
import json
import os
import shutil
from typing import Optional

TOP = 8


def _round(x: float) -> float:
    return float(f"{x:.6g}")


def compact(b: dict) -> dict:
    """The breakdown with its top categories and critical paths, rounded."""
    cats = [{k: (_round(v) if isinstance(v, float) else v) for k, v in c.items()}
            for c in b["categories"][:TOP]]
    return {"predicted_step_s": _round(b["predicted_step_s"]),
            "trace_step_s": _round(b["measured_step_s"]),
            "replay_step_s": _round(b["replay_step_s"]), "schedule_s": _round(b["schedule_s"]),
            "categories": cats,
            "critical_path_predicted": [dict(c, seconds=_round(c["seconds"]))
                                        for c in b["critical_path_predicted"][:5]],
            "critical_path_replayed": [dict(c, seconds=_round(c["seconds"]))
                                       for c in b["critical_path_replayed"][:5]],
            "missing_tasks": b["missing_tasks"], "extra_events": b["extra_events"]}


def attach(row: dict, prediction: dict, trace_json: str, trace_dir: str, mode: str,
           traces_out: Optional[str]) -> None:
    from oneflow_lite import explain

    name = row["strategy"]
    files = sorted(glob.glob(os.path.join(trace_dir, f"{name}_p*.json")))
    if not files:
        row["explain"] = {"error": "no trace was written"}
        return
    try:
        b = explain.breakdown(prediction, explain.join(prediction, explain.load_events(files)))
    except (OSError, ValueError) as e:
        row["explain"] = {"error": str(e)}
        return
    row["trace_step_s"] = b["measured_step_s"]
    row["explain"] = compact(b)
    if traces_out:
        os.makedirs(traces_out, exist_ok=True)
        stem = os.path.join(traces_out, f"{mode}_{row['model']}_{name}")
        for path in files:
            process = os.path.basename(path).rsplit("_p", 1)[1]
            shutil.copyfile(path, f"{stem}_measured_p{process}")
        trace = json.loads(trace_json)
        trace[explain.KEY] = prediction
        with open(f"{stem}_predicted.json", "w") as f:
            json.dump(trace, f)
