"""zero_dp: the sharded update (the "zero" preset) against data parallelism.

What it measures: samples/s of AdamW training steps of bench/ops_gpt.py's
GPT (4 layers, hidden 256, 4 heads, sequence 128, vocabulary 2048, float32,
``flow.manual_seed(0)``; bench/runtime_dp.py's CONFIG), global batch 16, the
same batches in every run, under two plans of ``_C.plan(program, mesh,
--cluster, preset)``:

- ``dp_v4`` / ``zero_v4``: one process, 4 virtual devices (hierarchy [4]),
  one kernel thread per device;
- ``dp_p2`` / ``zero_p2``: 2 processes of one world started by
  ``python -m oneflow_lite.distributed.launch --nproc-per-node 2``, one
  rank each (hierarchy [2]), Gloo between them.

Both with the session's default gradient buckets (25 MiB): data_parallel's
all-reduces and zero's reduce-scatters fused (graph/gradient_buckets.h);
``zero0_v4`` / ``zero0_p2``: zero with buckets off (each gradient's
reduce-scatter alone), ``buckets_over_none`` zero's over zero0's.
Each run is a fresh process (or pair), ``--warmup`` untimed steps then
``--steps`` timed ones; samples/s = 16 x steps / their seconds (process 0's
clock). ``--rounds`` rounds, interleaved (dp_v4, zero_v4, zero0_v4,
dp_p2, zero_p2, zero0_p2, dp_v4, ...); ``zero_over_dp`` is per setting the median over rounds of
zero's samples/s over the same round's dp's. Memory: ``peak_bytes`` per
rank (the allocators' peak, DistributedSession.peak_bytes) of the last
round (each process reports its own rank); bytes sent per step and rank
(the communicators' count). The losses
of zero and dp must agree (numpy allclose, rtol 1e-4, atol 1e-5): exit 2
when they do not.

Prints one JSON object on stdout. Rerun: ``PYTHONPATH=python
.venv/bin/python bench/zero_dp.py --rounds 5``.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from runtime_dp import BATCH, CONFIG, batches  # noqa: E402  the same model, batch and data

HYPER = dict(lr=1e-3, weight_decay=0.01)
SEED = 0
KINDS = ("dp_v4", "zero_v4", "zero0_v4", "dp_p2", "zero_p2", "zero0_p2")
PRESET = {"dp": "data_parallel", "zero": "zero", "zero0": "zero"}


def run_one(kind: str, warmup: int, steps: int, cluster: str) -> dict:
    """One run in this process (for *_p2: this process's rank of the world
    the launcher set up): timed seconds, losses, peak and sent bytes."""
    import oneflow_lite as flow
    from oneflow_lite import _C
    from oneflow_lite.models import GPT, GPTConfig, trace_loss

    flow.manual_seed(SEED)
    g = trace_loss(GPT(GPTConfig(**CONFIG)), BATCH)
    g.builder.minimize(g.loss, "adamw", **HYPER)
    plan, where = kind.split("_")
    world = 4 if where == "v4" else 2
    strategy = _C.plan(g.program, [world], cluster, PRESET[plan]).strategy
    buckets = {"gradient_bucket_bytes": 0} if plan == "zero0" else {}  # else the default
    sess = _C.DistributedSession(g.program, list(range(world)), [world], strategy, [g.loss],
                                 num_threads=1, **buckets)
    losses = []
    for i, (ids, labels) in enumerate(batches(warmup + steps)):
        if i == warmup:
            start = time.perf_counter()
        (value,) = sess.run({g.data: ids, g.labels: labels}, [g.loss])
        losses.append(float(value))
    seconds = time.perf_counter() - start
    sent = sess.bytes_sent()
    peak = sess.peak_bytes()
    peak = dict(peak) if isinstance(peak, dict) else dict(enumerate(peak))
    local = set(sess.local_ranks())
    return {"seconds": seconds, "samples_per_s": BATCH * steps / seconds, "losses": losses,
            "peak_bytes": {str(k): v for k, v in peak.items() if k in local},
            "bytes_sent_per_step": {str(k): v // (warmup + steps) for k, v in sent.items()}}


def launch(kind: str, args, out_path: str) -> dict:
    me = [os.path.abspath(__file__), "--one", kind, "--out", out_path, "--warmup",
          str(args.warmup), "--steps", str(args.steps), "--cluster", args.cluster]
    if kind.endswith("_p2"):
        cmd = [sys.executable, "-m", "oneflow_lite.distributed.launch", "--nproc-per-node", "2",
               *me]
    else:
        cmd = [sys.executable, *me]
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout_s, env=env)
    if proc.returncode != 0:
        tail = (proc.stdout + proc.stderr).strip().splitlines()[-5:]
        raise RuntimeError(f"{kind} exited {proc.returncode}: " + " | ".join(tail))
    with open(f"{out_path}.0") as f:
        result = json.load(f)
    if kind.endswith("_p2"):  # each process's own ranks' peak and bytes
        with open(f"{out_path}.1") as f:
            other = json.load(f)
        result["peak_bytes"].update(other["peak_bytes"])
        result["bytes_sent_per_step"].update(other["bytes_sent_per_step"])
    return result


def ratio(sps: dict, num: str, den: str) -> float:
    """The median over rounds of num's samples/s over the same round's den's."""
    return float(np.median([n / d for n, d in zip(sps[num], sps[den])]))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--cluster", default="h100_8gpu")
    ap.add_argument("--timeout-s", type=float, default=600)
    ap.add_argument("--one", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        result = run_one(args.one, args.warmup, args.steps, args.cluster)
        with open(f"{args.out}.{os.environ.get('RANK', '0')}", "w") as f:
            json.dump(result, f)
        return 0
    runs: dict = {k: [] for k in KINDS}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for kind in KINDS:
                runs[kind].append(launch(kind, args, os.path.join(tmp, f"{kind}.{r}.json")))
    ok = all(np.allclose(runs[f"{z}_{w}"][0]["losses"], runs[f"dp_{w}"][0]["losses"],
                         rtol=1e-4, atol=1e-5) for w in ("v4", "p2") for z in ("zero", "zero0"))
    sps = {k: [x["samples_per_s"] for x in v] for k, v in runs.items()}
    out = {
        "config": CONFIG, "batch": BATCH, "rounds": args.rounds, "steps": args.steps,
        "samples_per_s_median": {k: float(np.median(v)) for k, v in sps.items()},
        "zero_over_dp": {w: ratio(sps, f"zero_{w}", f"dp_{w}") for w in ("v4", "p2")},
        "buckets_over_none": {w: ratio(sps, f"zero_{w}", f"zero0_{w}") for w in ("v4", "p2")},
        "peak_bytes": {k: v[-1]["peak_bytes"] for k, v in runs.items()},
        "bytes_sent_per_step": {k: v[-1]["bytes_sent_per_step"] for k, v in runs.items()},
        "losses_agree": ok,
    }
    print(json.dumps(out, indent=1))
    return 0 if ok else 2


if __name__ == "__main__":
    sys.exit(main())
