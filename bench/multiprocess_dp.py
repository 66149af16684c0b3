"""multiprocess_dp: data-parallel GPT training on 2 processes over 1 process.

What it measures: samples/s of AdamW training steps (forward, backward,
update) of ``oneflow_lite.models.GPT`` with the config and initial weights of
bench/ops_gpt.py (4 layers, hidden 256, 4 heads, sequence 128, vocabulary
2048, float32, ``flow.manual_seed(0)``; traced with its loss by
``models.trace_loss``), global batch 16, the same batches in both runs:

- ``single``: 1 process, the plain single-device ``Session`` with 1 kernel
  thread;
- ``dp2``: 2 processes of one world started by
  ``python -m oneflow_lite.distributed.launch --nproc-per-node 2``, one rank
  each, one kernel thread each: a ``_C.DistributedSession`` on ranks [0, 1]
  (hierarchy [2]) with the ``data_parallel`` searcher's plan
  (``_C.plan(program, [2], --cluster, "data_parallel")``): each process
  computes 8 samples and the gradients are all-reduced over Gloo
  (runtime/gloo_communicator.h);
- ``dp2_pinned``: dp2 with bench/runtime_dp.py's strategy instead of the
  searcher's: ids, labels and every batch-major activation (and activation
  gradient) pinned to S(0), the rest deduced. The data_parallel preset
  leaves the residual stream broadcast (the embedding's output is B), so
  each block's two residual adds all-gather their S(0) input and both
  processes compute the adds and layer norms on the whole batch: 32.5 MB
  sent per step and process against 17.0 MB (the gradients) here;
- ``half`` (a diagnostic, not a peer): ``single`` on 8 samples of each batch,
  i.e. one rank's share with no communication; twice its samples/s over
  ``single``'s is ``compute_ceiling``, the speedup dp2 would reach if
  communication and the second process cost nothing (every rank still
  runs the whole AdamW update).

Every process has OMP_NUM_THREADS=OPENBLAS_NUM_THREADS=1; processes are not
pinned to cores (the machine is shared: pinning would tie a process to a core
someone else is using). ``--rounds`` rounds, interleaved (single, dp2,
dp2_pinned, half, single, ...), each a fresh process (or pair) running ``--warmup``
untimed steps then ``--steps`` timed ones; a run's samples/s is
16 x steps / their seconds (process 0's clock in dp2, whose steps end when
every rank's have: the loss is gathered); ``dp2_speedup`` is the median over
rounds of dp2's samples/s over the same round's single's (the ratio of the
medians is given too). ``cpu_over_wall`` is each run's CPU
seconds over its wall seconds (process 0's in dp2): below 1, the process
waited (for a core or for its peer). The losses of single and dp2 must agree
(numpy allclose, rtol 1e-4, atol 1e-5), and dp2_pinned's: same model, same data; the exit
status is 2 when they do not.

Prints one JSON object on stdout (merged by bench/merge_multiprocess.py).
Rerun: ``bench/run.sh multiprocess``, or
``PYTHONPATH=python .venv/bin/python bench/multiprocess_dp.py``.
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
RTOL, ATOL = 1e-4, 1e-5
KINDS = ("single", "dp2", "dp2_pinned", "half")  # the order of each round


def run_one(kind: str, warmup: int, steps: int, cluster: str) -> dict:
    """One run in this process (for dp2: this process's rank of the world
    the launcher set up); its timed seconds, CPU seconds and every step's
    loss. ``half``: the single Session on the first 8 samples of each batch
    (what one rank of dp2 computes)."""
    import oneflow_lite as flow
    from oneflow_lite import _C
    from oneflow_lite.models import GPT, GPTConfig, trace_loss

    flow.manual_seed(SEED)
    batch = BATCH // 2 if kind == "half" else BATCH
    g = trace_loss(GPT(GPTConfig(**CONFIG)), batch)
    g.builder.minimize(g.loss, "adamw", **HYPER)
    out: dict = {}
    if not kind.startswith("dp2"):
        sess = g.builder.session(1)
    else:
        if kind == "dp2":
            strategy = _C.plan(g.program, [2], cluster, "data_parallel").strategy
        else:  # every batch-major activation pinned, as bench/runtime_dp.py's dist2
            from runtime_dp import batch_pins
            strategy = _C.PlanSpec.deduce(batch_pins(g.program, g))
        sess = _C.DistributedSession(g.program, [0, 1], [2], strategy, [g.loss], num_threads=1)
        lines = [ln for ln in sess.strategy().splitlines() if " = " in ln]
        out["ops"] = len(lines)
        out["ops_with_split_output"] = sum(1 for ln in lines if "S(0)" in ln.split("->")[-1])
    data = batches(warmup + steps)
    losses = []
    for i, (ids, labels) in enumerate(data):
        if i == warmup:
            start, cpu = time.perf_counter(), time.process_time()
        (value,) = sess.run({g.data: ids[:batch], g.labels: labels[:batch]}, [g.loss])
        losses.append(float(value))
    seconds = time.perf_counter() - start
    out.update(seconds=seconds, cpu_s=time.process_time() - cpu,
               samples_per_s=batch * steps / seconds, losses=losses)
    if kind.startswith("dp2"):
        sent = sess.bytes_sent()
        out["bytes_sent_per_step"] = {str(k): v // (warmup + steps) for k, v in sent.items()}
    return out


def child_env() -> dict:
    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(here, "..", "python")] + (
        [env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    return env


def launch(kind: str, args, out_path: str) -> dict:
    """Runs `kind` in fresh processes; returns process 0's result."""
    me = [os.path.abspath(__file__), "--one", kind, "--out", out_path, "--warmup",
          str(args.warmup), "--steps", str(args.steps), "--cluster", args.cluster]
    if not kind.startswith("dp2"):
        cmd = [sys.executable, *me]
    else:
        cmd = [sys.executable, "-m", "oneflow_lite.distributed.launch", "--nproc-per-node", "2",
               *me]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout_s,
                          env=child_env())
    if proc.returncode != 0:
        tail = (proc.stdout + proc.stderr).strip().splitlines()[-5:]
        raise RuntimeError(f"{kind} exited {proc.returncode}: " + " | ".join(tail))
    with open(out_path) as f:
        return json.load(f)


def measure(args) -> dict:
    load_before = " ".join(f"{x:.2f}" for x in os.getloadavg())
    runs = {k: [] for k in KINDS}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for kind in KINDS:
                runs[kind].append(launch(kind, args, os.path.join(tmp, f"{kind}{r}.json")))
    sps = {k: [run["samples_per_s"] for run in v] for k, v in runs.items()}
    per_round = [d / s for d, s in zip(sps["dp2"], sps["single"])]
    pinned = [d / s for d, s in zip(sps["dp2_pinned"], sps["single"])]
    ceiling = [2 * h / s for h, s in zip(sps["half"], sps["single"])]
    ref = runs["single"][0]["losses"]
    agree = all(np.allclose(run["losses"], ref, rtol=RTOL, atol=ATOL)
                for k in ("single", "dp2", "dp2_pinned") for run in runs[k])
    med = {k: float(np.median(v)) for k, v in sps.items()}
    return {
        "benchmark": "multiprocess_dp",
        "what": "samples/s of AdamW training of the GPT of bench/ops_gpt.py, global batch 16: "
                "2 processes x 1 kernel thread (DistributedSession, data_parallel plan, Gloo "
                "all-reduce of the gradients) over 1 process x 1 thread (plain Session)",
        "config": dict(CONFIG, batch=BATCH, dtype="float32", optimizer="adamw", **HYPER),
        "plan": {"dp2": f"data_parallel searcher on {args.cluster}",
                 "dp2_pinned": "deduce with batch-major tensors pinned to S(0)",
                 **{f"{k}_ops_with_split_output": f"{runs[k][0]['ops_with_split_output']} of "
                    f"{runs[k][0]['ops']}" for k in ("dp2", "dp2_pinned")}},
        "threads_per_process": 1, "pinned_to_cores": False,
        "warmup": args.warmup, "steps": args.steps, "rounds": args.rounds,
        "samples_per_s": {k: [round(x, 3) for x in v] for k, v in sps.items()},
        "speedup_per_round": [round(x, 4) for x in per_round],
        "dp2_speedup": float(np.median(per_round)),
        "dp2_speedup_of_medians": med["dp2"] / med["single"],
        "dp2_pinned_speedup": float(np.median(pinned)),
        "dp2_pinned_speedup_per_round": [round(x, 4) for x in pinned],
        "compute_ceiling_per_round": [round(x, 4) for x in ceiling],
        "compute_ceiling": float(np.median(ceiling)),
        "cpu_over_wall": {k: [round(run["cpu_s"] / run["seconds"], 3) for run in v]
                          for k, v in runs.items()},
        "median_samples_per_s": med,
        "bytes_sent_per_step": {k: runs[k][0]["bytes_sent_per_step"]
                                for k in ("dp2", "dp2_pinned")},
        "losses": {k: runs[k][0]["losses"] for k in ("single", "dp2", "dp2_pinned")},
        "losses_agree": bool(agree), "loss_tolerance": {"rtol": RTOL, "atol": ATOL},
        "loadavg_before": load_before,
        "loadavg_after": " ".join(f"{x:.2f}" for x in os.getloadavg()),
        "rerun": "bench/run.sh multiprocess, or PYTHONPATH=python .venv/bin/python "
                 "bench/multiprocess_dp.py",
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--cluster", default="v100_8gpu",
                        help="cluster preset the data_parallel searcher plans for")
    parser.add_argument("--timeout-s", type=float, default=900)
    parser.add_argument("--one", choices=KINDS, help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.warmup < 0 or args.steps < 1 or args.rounds < 1:
        parser.error(f"need --warmup >= 0, --steps >= 1, --rounds >= 1 (got {args.warmup}, "
                     f"{args.steps}, {args.rounds})")
    if args.one:
        result = run_one(args.one, args.warmup, args.steps, args.cluster)
        if int(os.environ.get("RANK", "0")) == 0:
            with open(args.out, "w") as f:
                json.dump(result, f)
        return 0
    try:
        result = measure(args)
    except (RuntimeError, subprocess.TimeoutExpired, OSError) as e:
        print(json.dumps({"benchmark": "multiprocess_dp", "error": str(e)}))
        return 2
    print(json.dumps(result, indent=2))
    return 0 if result["losses_agree"] else 2


if __name__ == "__main__":
    sys.exit(main())
