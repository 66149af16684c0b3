"""eager_step: the eager GPT training step and one small op's per-call cost,
this tree against a baseline build, in interleaved rounds.

What it measures, in two configurations (``after``: this tree's
``python/``, or the folder named by ``--after``; ``before``: the package
folder named by ``--baseline``, e.g. a copy of ``python/`` with its built
``_C`` taken at an earlier commit):

- ``gpt_step_ms``: ms of one eager AdamW training step of bench/ops_gpt.py's
  model and batch (4 layers, hidden 256, 4 heads, sequence 128, vocabulary
  2048, batch 8, float32): ``cross_entropy(model(ids), labels)``,
  ``zero_grad``, ``loss.backward()``, ``opt.step()``; median of ``--steps``
  steps after ``--warmup``;
- ``add_us``: µs per call of ``flow.ops.add`` on two 16 x 16 float32 tensors
  (no grad), the median of 7 runs of 2,000 calls: the per-op overhead of
  the eager path (Python dispatch, binding, inference, kernel lookup,
  allocation), the kernel itself being ~256 flops;
- ``add_grad_us``: the same with ``requires_grad`` inputs (the tape is
  recorded); ``run_op_us``: ``_C.run_op("add", ...)`` alone on numpy arrays
  (the binding and the C++ path without the Python frontend).

Every run is a fresh process with OMP_NUM_THREADS = OPENBLAS_NUM_THREADS =
``--threads`` (the package sets OMP_WAIT_POLICY=PASSIVE itself); ``--rounds``
rounds, each running ``before`` then ``after`` (or the reverse on odd rounds)
so that both see the same load. A figure is the median over rounds of each
round's median; ``ratio`` = after / before, also the median of the
per-round ratios. The first losses must agree: the two compute the same
step.

Prints one JSON object on stdout. Rerun:
``PYTHONPATH=python .venv/bin/python bench/eager_step.py --baseline DIR
> bench/results/eager.json`` (bench/README.md, "eager").
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
FIGURES = ("gpt_step_ms", "add_us", "add_grad_us", "run_op_us")


def time_gpt(warmup: int, steps: int) -> dict:
    sys.path.insert(0, HERE)
    import oneflow_lite as flow
    from oneflow_lite.nn import functional as F
    from ops_gpt import HYPER, batches, make_model

    model = make_model()
    opt = flow.optim.AdamW(model.named_parameters(), **HYPER)
    times, losses = [], []
    for ids, labels in batches(warmup + steps):
        t0 = time.perf_counter()
        loss = F.cross_entropy(model(flow.tensor(ids)), flow.tensor(labels))
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
        losses.append(loss.item())
    return {"gpt_step_ms": 1e3 * float(np.median(times[warmup:])), "losses": losses}


def per_call_us(fn, calls: int = 2000, runs: int = 7) -> float:
    fn()
    samples = []
    for _ in range(runs):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        samples.append((time.perf_counter() - t0) / calls)
    return 1e6 * float(np.median(samples))


def time_small_op() -> dict:
    import oneflow_lite as flow
    from oneflow_lite import _C

    rng = np.random.default_rng(0)
    a_np, b_np = (rng.standard_normal((16, 16), dtype=np.float32) for _ in range(2))
    a, b = flow.tensor(a_np), flow.tensor(b_np)
    ga = flow.tensor(a_np, requires_grad=True)
    got = flow.ops.add(a, b).numpy()
    assert np.allclose(got, a_np + b_np, rtol=1e-6, atol=1e-6), "add: wrong result"
    return {"add_us": per_call_us(lambda: flow.ops.add(a, b)),
            "add_grad_us": per_call_us(lambda: flow.ops.add(ga, b)),
            "run_op_us": per_call_us(lambda: _C.run_op("add", [a_np, b_np], {}))}


def run_child(package: str, args) -> dict:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [package, os.path.join(HERE, "..", "tests", "python")]),
        OMP_NUM_THREADS=str(args.threads), OPENBLAS_NUM_THREADS=str(args.threads))
    cmd = [sys.executable, os.path.abspath(__file__), "--one", "--warmup", str(args.warmup),
           "--steps", str(args.steps)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, env=env)
    if out.returncode != 0:
        raise RuntimeError(f"{package}: {out.stderr.strip()[-2000:]}")
    return json.loads(out.stdout)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", required=False, help="package folder of the baseline")
    parser.add_argument("--after", default=os.path.join(HERE, "..", "python"),
                        help="package folder measured against it (default: this tree's)")
    parser.add_argument("--label", nargs=2, metavar=("BEFORE", "AFTER"),
                        help="what the two packages are (e.g. their commits), recorded as is")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        out = time_small_op()
        out.update(time_gpt(args.warmup, args.steps))
        print(json.dumps(out))
        return 0
    if not args.baseline:
        parser.error("--baseline is required")
    packages = {"before": os.path.abspath(args.baseline),
                "after": os.path.abspath(args.after)}
    load_before = " ".join(f"{x:.2f}" for x in os.getloadavg())
    rounds = []
    for r in range(args.rounds):
        order = ("before", "after") if r % 2 == 0 else ("after", "before")
        rounds.append({c: run_child(packages[c], args) for c in order})
    per = {c: {f: [rd[c][f] for rd in rounds] for f in FIGURES} for c in packages}
    result = {
        "benchmark": "eager_step",
        "what": "eager GPT AdamW training step (ops_gpt.py's model, batch 8) and per-call "
                "cost of a 16x16 add: this tree (after) vs a baseline build (before), "
                "interleaved rounds, fresh process each",
        "median": {c: {f: float(np.median(per[c][f])) for f in FIGURES} for c in packages},
        "ratio_after_over_before": {
            f: float(np.median([rd["after"][f] / rd["before"][f] for rd in rounds]))
            for f in FIGURES},
        "rounds": per,
        "first_losses": {c: rounds[0][c]["losses"][0] for c in packages},
        "losses_agree": bool(all(np.allclose(rd["after"]["losses"], rd["before"]["losses"],
                                             rtol=1e-4, atol=1e-5) for rd in rounds)),
        "threads": args.threads, "warmup": args.warmup, "steps": args.steps,
        "baseline": packages["before"],
        "labels": dict(zip(("before", "after"), args.label or ("", ""))),
        "loadavg_before": load_before,
        "loadavg_after": " ".join(f"{x:.2f}" for x in os.getloadavg()),
        "rerun": "PYTHONPATH=python .venv/bin/python bench/eager_step.py --baseline DIR",
    }
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
