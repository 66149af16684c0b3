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
- ``dp4``: as dp2 on 4 processes (``--nproc-per-node 4``, hierarchy [4]):
  4 samples each, 2 processes per core on this 2-core machine;
- ``emu2`` (root only): dp2 on the emulated 2-node cluster (``launch
  --emulate-nodes 2 --nproc-per-node 1 --emulate-rate 860mbit``: a network
  namespace per node, links shaped by tc; bench/fidelity.py's emulated2);
- the PyTorch peer (bench/multiprocess_peer.py, multiprocess_ddp_worker.py):
  ``torch1`` (1 process, no DDP), ``ddp2`` and ``ddp4`` (DistributedDataParallel,
  Gloo, ``torchrun --standalone``), ``ddp_emu2`` (torchrun on each node of
  the same emulated cluster); the same GPT, weights, batches, AdamW and 1
  thread per process, none of our environment variables. ``ours_over_peer``
  is, per setting ("1", "2", "4", "emulated2"), the median over rounds of our
  samples/s over the peer's in the same round; ``ddp2_speedup`` and
  ``ddp4_speedup`` are the peer's own over torch1. The peer's losses must
  agree with single's at rtol 1e-3, atol 1e-4 (another framework's
  summation order);
- ``half`` (a diagnostic, not a peer): ``single`` on 8 samples of each batch,
  i.e. one rank's share with no communication; twice its samples/s over
  ``single``'s is ``compute_ceiling``, the speedup dp2 would reach if
  communication and the second process cost nothing (every rank still
  runs the whole AdamW update).

Each of our processes has OMP_NUM_THREADS=OPENBLAS_NUM_THREADS=1; processes are not
pinned to cores (the machine is shared: pinning would tie a process to a core
someone else is using). ``--rounds`` rounds, interleaved (single, dp2,
dp2_pinned, half, dp4, emu2, torch1, ddp2, ddp4, ddp_emu2, single, ...;
``--kinds`` chooses a subset), each a fresh process (or pair) running ``--warmup``
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
``PYTHONPATH=python .venv/bin/python bench/multiprocess_dp.py --torch-python
.venv-torch/bin/python`` (without ``--torch-python``, no peer).
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
from multiprocess_peer import (EMULATED_RATE, PEER_KINDS, THREADS, env_removed,  # noqa: E402
                               run_peer, write_inputs)  # noqa: E402
from runtime_dp import BATCH, CONFIG, batches  # noqa: E402  the same model, batch and data

HYPER = dict(lr=1e-3, weight_decay=0.01)
SEED = 0
RTOL, ATOL = 1e-4, 1e-5
OURS = ("single", "dp2", "dp2_pinned", "half", "dp4", "emu2")
KINDS = OURS + PEER_KINDS  # the order of each round
WORLD = {"dp2": 2, "dp2_pinned": 2, "dp4": 4, "emu2": 2}  # processes of our runs
# our side over the peer's, by setting (the goal: >= 1 on each)
VERSUS = {"2": ("dp2", "ddp2"), "4": ("dp4", "ddp4"), "emulated2": ("emu2", "ddp_emu2"),
          "1": ("single", "torch1")}
PEER_RTOL, PEER_ATOL = 1e-3, 1e-4  # our losses against PyTorch's (another summation order)


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
    world = WORLD.get(kind, 1)
    if world == 1:
        sess = g.builder.session(1)
    else:
        if kind != "dp2_pinned":
            strategy = _C.plan(g.program, [world], cluster, "data_parallel").strategy
        else:  # every batch-major activation pinned, as bench/runtime_dp.py's dist2
            from runtime_dp import batch_pins
            strategy = _C.PlanSpec.deduce(batch_pins(g.program, g))
        sess = _C.DistributedSession(g.program, list(range(world)), [world], strategy, [g.loss],
                                     num_threads=1)
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
    if world > 1:
        sent = sess.bytes_sent()
        out["bytes_sent_per_step"] = {str(k): v // (warmup + steps) for k, v in sent.items()}
    return out


def child_env() -> dict:
    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(here, "..", "python")] + (
        [env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    return env


def launch(kind: str, args, out_path: str, inputs) -> dict:
    """Runs `kind` in fresh processes; returns process 0's result."""
    if kind in PEER_KINDS:
        return run_peer(kind, args.torch_python, inputs, args.warmup, args.steps, out_path,
                        args.timeout_s)
    me = [os.path.abspath(__file__), "--one", kind, "--out", out_path, "--warmup",
          str(args.warmup), "--steps", str(args.steps), "--cluster", args.cluster]
    world = WORLD.get(kind, 1)
    launcher = [sys.executable, "-m", "oneflow_lite.distributed.launch"]
    if world == 1:
        cmd = [sys.executable, *me]
    elif kind == "emu2":  # the peer's emulated cluster: 2 nodes, one process each
        cmd = [*launcher, "--emulate-nodes", "2", "--nproc-per-node", "1", "--emulate-rate",
               EMULATED_RATE, *me]
    else:
        cmd = [*launcher, "--nproc-per-node", str(world), *me]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout_s,
                          env=child_env())
    if proc.returncode != 0:
        tail = (proc.stdout + proc.stderr).strip().splitlines()[-5:]
        raise RuntimeError(f"{kind} exited {proc.returncode}: " + " | ".join(tail))
    with open(out_path) as f:
        return json.load(f)


def per_round(sps: dict, num: str, den: str, factor: float = 1.0) -> list:
    """factor x num/den of each round where both ran."""
    return [factor * n / d for n, d in zip(sps.get(num, []), sps.get(den, []))]


def median_or_none(values: list):
    return float(np.median(values)) if values else None


def chosen_kinds(text: str) -> tuple:
    """The kinds of --kinds, in round order; the emulated ones only as root."""
    wanted = [k for k in text.split(",") if k]
    unknown = [k for k in wanted if k not in KINDS]
    if unknown:
        raise SystemExit(f"multiprocess_dp: --kinds {','.join(unknown)}: not one of "
                         f"{','.join(KINDS)}")
    skipped = {}
    if os.geteuid() != 0:
        skipped = {k: "emulated clusters need root" for k in wanted if "emu" in k}
    return tuple(k for k in KINDS if k in wanted and k not in skipped), skipped


def agreement(runs: dict) -> dict:
    """Our kinds' losses against single's (RTOL, ATOL); the peer's against
    single's (PEER_RTOL, PEER_ATOL) and its largest relative difference."""
    ref = runs["single"][0]["losses"] if runs.get("single") else None
    ours = [r["losses"] for k in ("single", "dp2", "dp2_pinned", "dp4", "emu2")
            for r in runs.get(k, [])]
    peer = [r["losses"] for k in PEER_KINDS for r in runs.get(k, [])]
    if ref is None:
        return {"losses_agree": True, "peer_losses_agree": None, "peer_max_rel_diff": None}
    rel = [float(np.max(np.abs(np.subtract(p, ref)) / np.abs(ref))) for p in peer]
    return {"losses_agree": all(np.allclose(x, ref, rtol=RTOL, atol=ATOL) for x in ours),
            "peer_losses_agree": all(np.allclose(x, ref, rtol=PEER_RTOL, atol=PEER_ATOL)
                                     for x in peer) if peer else None,
            "peer_max_rel_diff": max(rel) if rel else None}


def measure(args) -> dict:
    load_before = " ".join(f"{x:.2f}" for x in os.getloadavg())
    kinds, skipped = chosen_kinds(args.kinds)
    runs = {k: [] for k in kinds}
    with tempfile.TemporaryDirectory() as tmp:
        inputs = None
        if any(k in PEER_KINDS for k in kinds):
            ids = np.stack([ids for ids, _ in batches(args.warmup + args.steps)])
            inputs = write_inputs(tmp, ids)
        for r in range(args.rounds):
            for kind in kinds:
                runs[kind].append(launch(kind, args, os.path.join(tmp, f"{kind}{r}.json"),
                                         inputs))
    sps = {k: [run["samples_per_s"] for run in v] for k, v in runs.items()}
    med = {k: float(np.median(v)) for k, v in sps.items()}
    versus = {s: per_round(sps, o, p) for s, (o, p) in VERSUS.items() if o in sps and p in sps}
    dp_kinds = [k for k in ("dp2", "dp2_pinned", "dp4", "emu2") if k in runs]
    first = {k: runs[k][0] for k in kinds}
    return {
        "benchmark": "multiprocess_dp",
        "what": "samples/s of AdamW training of the GPT of bench/ops_gpt.py, global batch 16: "
                "2 and 4 processes x 1 kernel thread (DistributedSession, data_parallel plan, "
                "Gloo all-reduce of the gradients) over 1 process x 1 thread (plain Session); "
                "PyTorch DDP (Gloo, torchrun) on the same settings",
        "config": dict(CONFIG, batch=BATCH, dtype="float32", optimizer="adamw", **HYPER),
        "kinds": list(kinds), "skipped": skipped,
        "plan": {"dp2": f"data_parallel searcher on {args.cluster}",
                 "dp2_pinned": "deduce with batch-major tensors pinned to S(0)",
                 **{f"{k}_ops_with_split_output": f"{first[k]['ops_with_split_output']} of "
                    f"{first[k]['ops']}" for k in dp_kinds}},
        "emulated": {"nodes": 2, "processes_per_node": 1, "rate": EMULATED_RATE},
        "threads_per_process": 1, "pinned_to_cores": False,
        "warmup": args.warmup, "steps": args.steps, "rounds": args.rounds,
        "samples_per_s": {k: [round(x, 3) for x in v] for k, v in sps.items()},
        "speedup_per_round": [round(x, 4) for x in per_round(sps, "dp2", "single")],
        "dp2_speedup": median_or_none(per_round(sps, "dp2", "single")),
        "dp2_speedup_of_medians": (med["dp2"] / med["single"]
                                   if "dp2" in med and "single" in med else None),
        "dp2_pinned_speedup": median_or_none(per_round(sps, "dp2_pinned", "single")),
        "dp2_pinned_speedup_per_round": [round(x, 4) for x in
                                         per_round(sps, "dp2_pinned", "single")],
        "dp4_speedup": median_or_none(per_round(sps, "dp4", "single")),
        "compute_ceiling_per_round": [round(x, 4) for x in per_round(sps, "half", "single", 2)],
        "compute_ceiling": median_or_none(per_round(sps, "half", "single", 2)),
        "ddp2_speedup": median_or_none(per_round(sps, "ddp2", "torch1")),
        "ddp4_speedup": median_or_none(per_round(sps, "ddp4", "torch1")),
        "ours_over_peer": {s: median_or_none(v) for s, v in versus.items()},
        "ours_over_peer_per_round": {s: [round(x, 4) for x in v] for s, v in versus.items()},
        "cpu_over_wall": {k: [round(run["cpu_s"] / run["seconds"], 3) for run in v]
                          for k, v in runs.items()},
        "median_samples_per_s": med,
        "bytes_sent_per_step": {k: first[k]["bytes_sent_per_step"] for k in dp_kinds},
        "losses": {k: first[k]["losses"] for k in kinds if k != "half"},
        **agreement(runs),
        "loss_tolerance": {"rtol": RTOL, "atol": ATOL},
        "peer_loss_tolerance": {"rtol": PEER_RTOL, "atol": PEER_ATOL},
        "peer": {"launch": "torchrun --standalone --nproc-per-node N (ddp2, ddp4); torchrun "
                           "--nnodes 2 per emulated node (ddp_emu2); python (torch1)",
                 "env_removed": env_removed(), "threads": THREADS,
                 "torch_version": next((first[k]["torch_version"] for k in PEER_KINDS
                                        if k in first), None),
                 "env_seen": {k: first[k].get("env") for k in PEER_KINDS if k in first}},
        "loadavg_before": load_before,
        "loadavg_after": " ".join(f"{x:.2f}" for x in os.getloadavg()),
        "rerun": "bench/run.sh multiprocess, or PYTHONPATH=python .venv/bin/python "
                 "bench/multiprocess_dp.py --torch-python .venv-torch/bin/python",
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--cluster", default="v100_8gpu",
                        help="cluster preset the data_parallel searcher plans for")
    parser.add_argument("--kinds", default=",".join(KINDS),
                        help="the runs of each round (default: all; emulated ones as root)")
    parser.add_argument("--torch-python", default="",
                        help="an interpreter that imports torch (for the PyTorch peer)")
    parser.add_argument("--timeout-s", type=float, default=900)
    parser.add_argument("--one", choices=OURS, help=argparse.SUPPRESS)
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
    if not args.torch_python:  # no peer without its interpreter
        args.kinds = ",".join(k for k in args.kinds.split(",") if k not in PEER_KINDS)
    try:
        result = measure(args)
    except (RuntimeError, subprocess.TimeoutExpired, OSError) as e:
        print(json.dumps({"benchmark": "multiprocess_dp", "error": str(e)}))
        return 2
    print(json.dumps(result, indent=2))
    return 0 if result["losses_agree"] and result["peer_losses_agree"] is not False else 2


if __name__ == "__main__":
    sys.exit(main())
