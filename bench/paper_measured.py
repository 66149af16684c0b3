"""paper_measured: the paper table's measured column, on 2 processes of this machine.

bench/search_bench.py paper predicts autoddl against the best rule-based
preset on the AutoDDL paper's clusters. This adds what can be measured
here: a scaled-down VGG (6 convolutions 16-32-64 on 32 x 32 images, FC
512-512, 100 classes, batch 16) and a scaled-down Transformer (GPT, 4
layers x 256, 8 heads, T=64, V=2048, batch 8), both float32 with AdamW
(bench/fidelity_runner.py's ``vgg_paper`` and ``transformer_paper``),
planned on this machine's calibrated Cluster for 2 devices
(bench/fidelity.py's calibration: microbenchmarks only; written to
``--cluster``, or read from it with ``--reuse-cluster``) and run as 2
processes with one thread each (bench/fidelity_runner.py, ``procs`` mode):
autoddl's plan and the rule-based preset the cost model ranks best, in
``--rounds`` interleaved rounds. Per model: both strategies' predicted
(full model) and measured median step, the predicted and the measured
reduction (1 - autoddl / preset), bytes per rank predicted and measured
(equal, or the exit status is 3).

Writes its result into ``--paper`` (bench/results/paper.json) under the key
``measured``, beside the predicted rows it leaves as they are; prints it too.
Rerun: ``bench/run.sh paper`` (after the predicted suite), or
``PYTHONPATH=python .venv/bin/python bench/paper_measured.py``.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fidelity  # noqa: E402
import fidelity_runner as fr  # noqa: E402

MODELS = ("vgg_paper", "transformer_paper")


def log(message: str) -> None:
    print(f"paper_measured: {message}", file=sys.stderr, flush=True)


def one_model(model: str, cluster, args) -> dict:
    predicted, skipped = fr.plan_all(model, [2], cluster, list(fr.RULE_BASED))
    if not predicted:
        return {"model": model, "error": f"no rule-based preset applies: {skipped}"}
    best = min(predicted, key=lambda r: r["predicted_step_s"])["strategy"]
    log(f"{model}: best rule-based preset (predicted): {best}")
    res = fr.measure(model, [2], cluster, ["autoddl", best], "procs", args.rounds, args.warmup,
                     args.steps, 1, args.timeout_s, log)
    by = {r["strategy"]: r for r in res["rows"]}
    out = {"model": model, "config": fr.describe(model), "best_preset": best,
           "presets_predicted_step_s": {r["strategy"]: r["predicted_step_s"] for r in predicted},
           "skipped": skipped, "errors": res["errors"], "rows": res["rows"]}
    if "autoddl" in by and best in by:
        a, b = by["autoddl"], by[best]
        out["same_plan"] = a["predicted_bytes"] == b["predicted_bytes"] and (
            a["predicted_step_s"] == b["predicted_step_s"])
        out["predicted_reduction"] = 1 - a["predicted_step_s"] / b["predicted_step_s"]
        out["measured_reduction"] = 1 - a["measured_step_s"] / b["measured_step_s"]
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--paper", default="bench/results/paper.json")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--timeout-s", type=float, default=600)
    parser.add_argument("--cluster", default="bench/results/paper_cluster_2.pbtxt",
                        help="written by calibrating first unless --reuse-cluster")
    parser.add_argument("--reuse-cluster", action="store_true")
    args = parser.parse_args()
    load_before = list(os.getloadavg())
    cluster, calibration = fidelity.calibrate(2, args.cluster, args.reuse_cluster, processes=2)
    rows = [one_model(m, cluster, args) for m in MODELS]
    measured = {
        "what": "scaled-down VGG and Transformer, 2 processes x 1 thread on this machine, "
                "planned on its calibrated cluster: autoddl vs the best rule-based preset "
                "(predicted), both run",
        "rows": rows, "calibration": calibration, "rounds": args.rounds,
        "warmup": args.warmup, "steps": args.steps, "load_before": load_before,
        "load_after": list(os.getloadavg()),
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "how_to_rerun": "PYTHONPATH=python .venv/bin/python bench/paper_measured.py",
    }
    paper = {}
    if os.path.exists(args.paper):
        with open(args.paper) as f:
            paper = json.load(f)
    paper["measured"] = measured
    with open(args.paper, "w") as f:
        json.dump(paper, f, indent=1)
    print(json.dumps(measured, indent=1))
    bad = [f"{r['model']}/{x['strategy']}" for r in rows for x in r.get("rows", [])
           if not x["bytes_equal"]]
    if bad:
        log(f"BYTES DIFFER: {', '.join(bad)}")
        return 3
    return 1 if any(r.get("errors") or r.get("error") for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
