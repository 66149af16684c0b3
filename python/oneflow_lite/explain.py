"""Where the step-time error lives: the predicted step against a measured one, task by task.

The prediction is ``PlannedStrategy.simulate(...)`` (a simulation of the very
Plan a ``DistributedSession`` runs, oneflow_lite/api/step_simulation.h);
the measurement is the runtime's Chrome trace (``trace_path=``: one "X"
event per act, ``pid`` = rank, ``tid`` = stream, ``args.task`` = the task id;
one file per process, each with its own clock). Both share task ids, so
they join task by task on every rank.

- ``write_prediction(sim, path)``: the predicted timeline as a Chrome trace
  (opens beside the measured one in Perfetto), with the prediction itself
  under the key ``"oneflow_lite"`` for the join.
- ``join(prediction, events)``: per task, predicted and measured seconds
  (summed over its acts), act counts; tasks missing on either side.
- ``breakdown(prediction, joined)``: per category (op type, ``boxing
  <kind>``, ``source``, ...) predicted and measured busy seconds over all
  ranks, and each one's share of the step's error: the simulated step with
  that category's tasks at their measured times minus the predicted step,
  over (measured - predicted step). ``replay_step_s`` is the simulation with
  every task at its measured time (collectives at the fastest member's
  time: the others waited); measured minus replay is what the schedule
  model misses (``schedule_s``: overheads, contention between threads).
  The slowest rank's critical path, predicted and replayed.
- ``python -m oneflow_lite.explain --predicted P.json --measured M0.json
  [M1.json ...]`` prints it (``--json OUT`` writes it).
"""
from __future__ import annotations

import argparse
import base64
import json
import sys
from collections import defaultdict
from typing import Dict, List, Sequence

KEY = "oneflow_lite"


def write_prediction(sim: dict, path: str) -> None:
    """Writes `sim` (PlannedStrategy.simulate's dict) as a Chrome trace at `path`."""
    trace = json.loads(sim["trace_json"])
    trace[KEY] = prediction_of(sim)
    with open(path, "w") as f:
        json.dump(trace, f)


def prediction_of(sim: dict) -> dict:
    """The JSON-able part of `sim` that join and breakdown need."""
    return {"step_s": sim["step_s"], "slowest_rank": sim["slowest_rank"],
            "rank_end_s": list(sim["rank_end_s"]), "tasks": sim["tasks"],
            "acts": [list(a) for a in sim["acts"]], "critical_path": list(sim["critical_path"]),
            "iterations": sim["iterations"], "options": dict(sim["options"]),
            "plan_b64": base64.b64encode(sim["plan"]).decode()}


def load_prediction(path: str) -> dict:
    with open(path) as f:
        trace = json.load(f)
    if KEY not in trace:
        raise ValueError(f"explain: '{path}' is no predicted trace (no '{KEY}' key; "
                         "write it with oneflow_lite.explain.write_prediction)")
    return trace[KEY]


def load_events(paths: Sequence[str]) -> List[dict]:
    """The "X" events of the measured traces at `paths` (one per process),
    each with the index of its file as ``file``."""
    events = []
    for i, path in enumerate(paths):
        with open(path) as f:
            trace = json.load(f)
        for e in trace.get("traceEvents", []):
            if e.get("ph") == "X" and "task" in e.get("args", {}):
                events.append(dict(e, file=i))
    if not events:
        raise ValueError(f"explain: no act events in {list(paths)}")
    return events


def measured_step_s(events: Sequence[dict]) -> float:
    """The longest run span of any file (each process's clock starts at its run)."""
    ends = defaultdict(float)
    for e in events:
        ends[e["file"]] = max(ends[e["file"]], (e["ts"] + e["dur"]) * 1e-6)
    return max(ends.values())


def join(prediction: dict, events: Sequence[dict]) -> dict:
    """Per task: predicted and measured seconds and acts, and what is missing."""
    tasks = prediction["tasks"]
    measured = [0.0] * len(tasks)
    acts = [0] * len(tasks)
    extra = []
    for e in events:
        t = int(e["args"]["task"])
        if not 0 <= t < len(tasks) or int(e["pid"]) != tasks[t]["rank"]:
            extra.append(t)
            continue
        measured[t] += e["dur"] * 1e-6
        acts[t] += 1
    predicted_acts = [0] * len(tasks)
    predicted = [0.0] * len(tasks)
    for task, _act, start, end, _wait in prediction["acts"]:
        predicted_acts[task] += 1
        predicted[task] += end - start
    ranks = {int(e["pid"]) for e in events}
    rows = [{"task": t["task"], "name": t["name"], "category": t["category"], "rank": t["rank"],
             "group_id": t["group_id"], "predicted_s": predicted[i], "measured_s": measured[i],
             "predicted_acts": predicted_acts[i], "measured_acts": acts[i]}
            for i, t in enumerate(tasks)]
    missing = [r["task"] for r in rows if r["rank"] in ranks
               and r["measured_acts"] != r["predicted_acts"]]
    return {"rows": rows, "missing": missing, "extra": extra, "ranks": sorted(ranks),
            "measured_step_s": measured_step_s(events), "predicted_step_s": prediction["step_s"]}


def _replay_seconds(prediction: dict, joined: dict, categories) -> List[float]:
    """Per task: its predicted seconds, or, for `categories`, its measured
    mean per act (a collective: the fastest member's, the others waited)."""
    tasks = prediction["tasks"]
    out = [t["seconds"] for t in tasks]
    fastest: Dict[int, float] = {}
    for r in joined["rows"]:
        if r["group_id"] >= 0 and r["measured_acts"]:
            mean = r["measured_s"] / r["measured_acts"]
            fastest[r["group_id"]] = min(fastest.get(r["group_id"], mean), mean)
    for r in joined["rows"]:
        if r["category"] not in categories or not r["measured_acts"]:
            continue
        mean = r["measured_s"] / r["measured_acts"]
        out[r["task"]] = fastest[r["group_id"]] if r["group_id"] >= 0 else mean
    return out


def _replay(prediction: dict, seconds: List[float]) -> dict:
    from oneflow_lite import _C

    o = prediction["options"]
    return _C.simulate_plan(base64.b64decode(prediction["plan_b64"]), seconds,
                            iterations=prediction["iterations"],
                            act_overhead_s=o["act_overhead_s"], message_s=o["message_s"])


def _path(prediction: dict, acts, path) -> List[dict]:
    tasks = prediction["tasks"]
    by_category: Dict[str, float] = defaultdict(float)
    for k in path:
        task, _act, start, end, _wait = acts[k]
        by_category[tasks[task]["category"]] += end - start
    return sorted(({"category": c, "seconds": s} for c, s in by_category.items()),
                  key=lambda r: -r["seconds"])


def breakdown(prediction: dict, joined: dict) -> dict:
    """Per category: busy seconds predicted and measured, and share of the step's error."""
    categories = sorted({r["category"] for r in joined["rows"]})
    busy = {c: {"category": c, "predicted_s": 0.0, "measured_s": 0.0, "tasks": 0}
            for c in categories}
    for r in joined["rows"]:
        b = busy[r["category"]]
        b["predicted_s"] += r["predicted_s"]
        b["measured_s"] += r["measured_s"]
        b["tasks"] += 1
    predicted_step = prediction["step_s"]
    measured = joined["measured_step_s"]
    error = measured - predicted_step
    base = _replay(prediction, _replay_seconds(prediction, joined, ()))["step_s"]
    for c in categories:
        step = _replay(prediction, _replay_seconds(prediction, joined, {c}))["step_s"]
        busy[c]["step_delta_s"] = step - base
        busy[c]["error_share"] = (step - base) / error if error else 0.0
    full = _replay(prediction, _replay_seconds(prediction, joined, set(categories)))
    rows = sorted(busy.values(), key=lambda r: -abs(r["step_delta_s"]))
    return {"predicted_step_s": predicted_step, "measured_step_s": measured,
            "ratio": predicted_step / measured if measured else float("nan"),
            "replay_step_s": full["step_s"], "schedule_s": measured - full["step_s"],
            "categories": rows,
            "critical_path_predicted": _path(prediction, prediction["acts"],
                                             prediction["critical_path"]),
            "critical_path_replayed": _path(prediction, full["acts"], full["critical_path"]),
            "slowest_rank_predicted": prediction["slowest_rank"],
            "slowest_rank_replayed": full["slowest_rank"],
            "missing_tasks": len(joined["missing"]), "extra_events": len(joined["extra"])}


def explain(prediction: dict, measured_paths: Sequence[str]) -> dict:
    return breakdown(prediction, join(prediction, load_events(measured_paths)))


def to_text(b: dict, top: int = 15) -> str:
    ms = 1e3
    lines = [f"step: predicted {b['predicted_step_s'] * ms:.3f} ms, measured "
             f"{b['measured_step_s'] * ms:.3f} ms (predicted/measured {b['ratio']:.3f}); "
             f"replayed with measured task times {b['replay_step_s'] * ms:.3f} ms "
             f"(schedule model misses {b['schedule_s'] * ms:+.3f} ms)",
             f"{'category':28s} {'pred busy ms':>12s} {'meas busy ms':>12s} {'step +ms':>9s} "
             f"{'share':>7s}"]
    for r in b["categories"][:top]:
        lines.append(f"{r['category'][:28]:28s} {r['predicted_s'] * ms:12.3f} "
                     f"{r['measured_s'] * ms:12.3f} {r['step_delta_s'] * ms:+9.3f} "
                     f"{100 * r['error_share']:6.1f}%")
    for which in ("predicted", "replayed"):
        path = b[f"critical_path_{which}"][:6]
        lines.append(f"critical path ({which}, slowest rank {b[f'slowest_rank_{which}']}): "
                     + ", ".join(f"{r['category']} {r['seconds'] * ms:.3f} ms" for r in path))
    if b["missing_tasks"] or b["extra_events"]:
        lines.append(f"join: {b['missing_tasks']} tasks with other act counts, "
                     f"{b['extra_events']} events of no task of the plan")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m oneflow_lite.explain",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--predicted", required=True, help="write_prediction's trace")
    parser.add_argument("--measured", required=True, nargs="+",
                        help="the runtime's trace of the same plan, one file per process")
    parser.add_argument("--top", type=int, default=15, help="categories to print")
    parser.add_argument("--json", default=None, help="also write the breakdown here")
    args = parser.parse_args(argv)
    try:
        b = explain(load_prediction(args.predicted), args.measured)
    except (OSError, ValueError) as e:
        print(f"explain: {e}", file=sys.stderr)
        return 2
    print(to_text(b, args.top))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(b, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
