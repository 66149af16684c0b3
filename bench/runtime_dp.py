"""runtime_dp: data-parallel training throughput on 2 and 4 virtual devices over 1.

What it measures: samples/s of AdamW training steps (forward, backward,
update) of ``oneflow_lite.models.GPT`` (the config and initial weights of
bench/ops_gpt.py: 4 layers, hidden 256, 4 heads, sequence 128, vocabulary
2048, float32; traced with its loss by ``models.trace_loss``) with global
batch 16, in three configurations, each using the machine's 2 cores in
total (``num_threads=--threads`` in every one):

- ``session``: the plain single-device ``_C.Session`` (the single-device
  lowering, run as a one-rank plan on the actor runtime);
- ``dist1``: a 1-rank ``_C.DistributedSession`` (the actor runtime, one rank);
- ``dist2``: a 2-rank ``_C.DistributedSession`` (hierarchy [2]) running data
  parallel: strategy ``_C.PlanSpec.deduce({...})`` with ids,
  labels and every activation and activation gradient whose axis 0 is the
  batch (16) or batch x sequence (2048) pinned to S(0) (not the parameter
  gradients: those stay partial sums and are all-reduced). Each rank
  computes on 8 samples with one kernel thread.
- ``dist4``: as ``dist2`` on 4 ranks (hierarchy [4]): 4 samples per rank,
  one kernel thread each, at most 2 kernels at once (runtime/kernel_slots.h:
  the ranks outnumber the 2 threads).
- ``dist2_ids``: as ``dist2``, with only ids and labels pinned. The deduction
  then broadcasts the batch after the embedding: ``reshape`` has no
  S(0) -> S(0) signature when it merges or splits axis 0 ([16, 128, 256] ->
  [2048, 256]; ops/array/reshape.cpp keeps a split only on leading axes the
  reshape leaves unchanged), so deduce picks B -> B there, every later op
  follows, and both ranks compute the whole batch. That is why dist2 pins
  the activations too: each of those reshapes still all-gathers its input
  (S(0) -> B) and the next op slices it again (B -> S(0), no bytes).

``dp2_speedup`` = dist2 samples/s / session samples/s (the plain Session is
the 1-device baseline), ``dp4_speedup`` the same for dist4;
``dp2_speedup_vs_dist1`` uses the 1-rank DistributedSession instead;
``dp2_ids_speedup`` is dist2_ids over session. ``cpu_ms_per_step`` is the
process's CPU time (user + system, every thread) per step and
``dp4_cpu_ratio`` session's over dist4's: on a shared machine a run with
more threads gets a larger share of the cores, so wall-clock ratios drift
with the load while CPU per step does not; ``cores_busy`` = CPU / wall. Every configuration runs in its own process (so
no thread pool or cache of one leaks into another), ``--rounds`` times in
turn (session, dist1, dist2, session, ...), each time ``--warmup`` untimed
steps then ``--steps`` timed ones on the same batches; a configuration's
figure is the median of all its timed steps. The first losses of the three
are reported: they must agree (same weights, same batches).

Prints one JSON object on stdout. Rerun: ``bench/run.sh runtime``, or
``PYTHONPATH=python .venv/bin/python bench/runtime_dp.py --threads 2``.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time

import numpy as np

CONFIG = dict(n_layer=4, n_embd=256, n_head=4, seq_len=128, vocab_size=2048)
BATCH = 16
HYPER = dict(lr=1e-3, weight_decay=0.01)
SEED = 0  # flow.manual_seed before building the model, as bench/ops_gpt.py
CONFIGS = ("session", "dist1", "dist2", "dist2_ids", "dist4")
RANKS = {"dist1": 1, "dist2": 2, "dist2_ids": 2, "dist4": 4}


def batches(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        ids = rng.integers(0, CONFIG["vocab_size"], size=(BATCH, CONFIG["seq_len"]), dtype=np.int64)
        out.append((ids, np.roll(ids, -1, axis=1)))
    return out


def batch_pins(program, g) -> dict:
    """S(0) for ids, labels and every op output whose axis 0 is the batch or
    batch x sequence, except parameter gradients; names come from the
    program's text form ("op = type(inputs) {attrs} -> (shape) dtype, ...")
    and the op schema's output names ("<op>/<output>_0")."""
    from oneflow_lite import _C

    batch_dims = {BATCH, BATCH * CONFIG["seq_len"]}
    param_grads = set(program.gradients().values())
    pins = {g.data: "S(0)", g.labels: "S(0)"}
    for line in str(program).splitlines():
        m = re.match(r"^(\S+) = (\w+)\(.*?\) \{.*?\} -> (.*)$", line)
        if not m:
            continue
        op, op_type, outs = m.groups()
        shapes = re.findall(r"\(([^)]*)\)", outs)
        for arg, shape in zip(_C.op_schema(op_type)["outputs"], shapes):
            tensor = f"{op}/{arg}_0"
            dims = [int(x) for x in shape.split(",") if x.strip()]
            program.shape(tensor)  # raises if the name is wrong
            if dims and dims[0] in batch_dims and tensor not in param_grads:
                pins[tensor] = "S(0)"
    return pins


def run_one(config: str, threads: int, warmup: int, steps: int) -> dict:
    """Runs one configuration in this process; returns its step times and losses."""
    import oneflow_lite as flow
    from oneflow_lite import _C
    from oneflow_lite.models import GPT, GPTConfig, trace_loss

    flow.manual_seed(SEED)
    g = trace_loss(GPT(GPTConfig(**CONFIG)), BATCH)
    g.builder.minimize(g.loss, "adamw", **HYPER)
    data_name, labels_name, loss = g.data, g.labels, g.loss
    if config == "session":
        sess = g.builder.session(threads)
        strategy = None
    else:
        ranks = list(range(RANKS[config]))
        if config in ("dist2", "dist4"):
            pinned = batch_pins(g.program, g)
        else:
            pinned = {data_name: "S(0)", labels_name: "S(0)"}
        spec = _C.PlanSpec.deduce(pinned)
        sess = _C.DistributedSession(g.program, ranks, [len(ranks)], spec, [loss],
                                     num_threads=threads)
        strategy = sess.strategy()
    times, cpu, losses = [], [], []
    for ids, labels in batches(warmup + steps):
        t0, c0 = time.perf_counter(), time.process_time()
        (value,) = sess.run({data_name: ids, labels_name: labels}, [loss])
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
        losses.append(float(value))
    out = {"step_s": times[warmup:], "cpu_s": cpu[warmup:], "losses": losses}
    if strategy is not None:
        lines = strategy.splitlines()
        ops = [ln for ln in lines if " = " in ln]
        out["ops_with_split_output"] = sum(1 for ln in ops if ln.rstrip().endswith("(S(0))"))
        out["ops"] = len(ops)
        out["pinned"] = len(spec["pinned"])
        out["bytes_sent"] = {str(k): v for k, v in sess.bytes_sent().items()}
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--one", choices=CONFIGS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(run_one(args.one, args.threads, args.warmup, args.steps)))
        return 0

    load_before = " ".join(f"{x:.2f}" for x in os.getloadavg())
    step_s = {c: [] for c in CONFIGS}
    cpu_s = {c: [] for c in CONFIGS}
    parts: dict = {}
    for _ in range(args.rounds):
        for c in CONFIGS:
            cmd = [sys.executable, os.path.abspath(__file__), "--one", c, "--threads",
                   str(args.threads), "--warmup", str(args.warmup), "--steps", str(args.steps)]
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
            if out.returncode != 0:
                err = out.stderr.strip().splitlines()
                print(json.dumps({"benchmark": "runtime_dp",
                                  "error": f"{c}: " + (err[-1] if err else "failed")}))
                return 2
            part = json.loads(out.stdout)
            step_s[c] += part["step_s"]
            cpu_s[c] += part["cpu_s"]
            parts.setdefault(c, part)
    med = {c: float(np.median(step_s[c])) for c in CONFIGS}
    cpu_med = {c: float(np.median(cpu_s[c])) for c in CONFIGS}
    sps = {c: BATCH / med[c] for c in CONFIGS}
    first = {c: parts[c]["losses"][0] for c in CONFIGS}
    agree = all(np.allclose(parts[c]["losses"], parts["session"]["losses"], rtol=1e-4, atol=1e-5)
                for c in CONFIGS)
    result = {
        "benchmark": "runtime_dp",
        "what": "samples/s of AdamW training steps of the GPT-style model, global batch 16, "
                "2 kernel threads in total: plain Session (1 device) vs DistributedSession "
                "on 1, 2 and 4 ranks (data parallel: ids, labels and batch-major "
                "activations pinned to S(0); dist2_ids: only ids and labels pinned)",
        "dp2_speedup": sps["dist2"] / sps["session"],
        "dp4_speedup": sps["dist4"] / sps["session"],
        "dp4_cpu_ratio": cpu_med["session"] / cpu_med["dist4"],
        "dp2_speedup_vs_dist1": sps["dist2"] / sps["dist1"],
        "dp2_ids_speedup": sps["dist2_ids"] / sps["session"],
        "samples_per_s": sps,
        "step_ms": {c: 1e3 * med[c] for c in CONFIGS},
        "step_ms_min": {c: 1e3 * min(step_s[c]) for c in CONFIGS},
        "cpu_ms_per_step": {c: 1e3 * cpu_med[c] for c in CONFIGS},
        "cores_busy": {c: cpu_med[c] / med[c] for c in CONFIGS},
        "baseline": "session (plain single-device Session, num_threads=2)",
        "config": dict(CONFIG, batch=BATCH, dtype="float32", optimizer="adamw"),
        "threads": args.threads, "warmup": args.warmup, "steps": args.steps,
        "rounds": args.rounds,
        "first_losses": first,
        "losses_agree": bool(agree),
        "strategies": {c: {k: parts[c][k] for k in ("pinned", "ops", "ops_with_split_output")}
                       for c in ("dist2", "dist2_ids", "dist4")},
        "bytes_sent_per_step": {c: {k: v // (args.warmup + args.steps)
                                    for k, v in parts[c]["bytes_sent"].items()}
                                for c in ("dist2", "dist2_ids", "dist4")},
        "loadavg_before": load_before,
        "loadavg_after": " ".join(f"{x:.2f}" for x in os.getloadavg()),
        "rerun": "bench/run.sh runtime, or PYTHONPATH=python .venv/bin/python "
                 "bench/runtime_dp.py --threads 2",
    }
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
