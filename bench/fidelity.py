"""fidelity: does the cost model predict what the runtime does?

What it measures. On this machine's calibrated Cluster (``_C.calibrate``,
4 virtual devices; written to bench/results/fidelity_cluster.pbtxt), a
GPT-style model (4 layers, hidden 512, 8 heads, sequence 128, vocabulary
4096, global batch 16, float32, AdamW) is planned and trained on 4 virtual
CPU devices as a 2 x 2 mesh under six strategies:

- ``data_parallel``, ``megatron``, ``2d``: the expert presets
  (graph/expert_presets.h), ``autoddl``: the searcher;
- ``random1``, ``random2``: random valid strategies from the planner: every
  fed input and trainable variable pinned to a random NdSbp (per mesh axis
  B or S(d) of a dimension at least as large as the axis; seeded), the ops
  then deduced from them (searcher "manual"), and costed like the others.

Registers have one slot (``num_slots=1``): steps run one at a time here, and
two slots would double the activations' memory (about 4.4 GB per rank with
two under autoddl, too much for four ranks on the 24 GiB machine).
Every strategy runs in its own process (no thread pool or allocator state
leaks between them), ``--warmup`` untimed steps then ``--steps`` timed
ones on fixed batches, and ``--rounds`` times over (every strategy once per
round, so a load change of the shared machine hits all of them alike).
Per strategy: ``predicted_step_s`` (the full model of the chosen plan,
``planned.step_estimate``: gradient collectives in buckets, overlapped with
backward; ``proxy_step_s`` is the searchers' additive total),
``predicted_over_measured``,
``measured_step_s`` (median of every round's timed steps), ``predicted_bytes``
and ``measured_bytes`` (per rank, one step: the boxing planner's count and
the communicators' own count of the last timed step), ``predicted_memory_bytes``
(per rank, ``planned.predicted_memory`` for this session's options) and
``peak_bytes`` (per rank, the allocators' peak: session.peak_bytes(), not
RSS; ``proxy_memory_bytes`` is the searchers' proxy), the first loss (equal
across strategies: same weights, same batch). ``spearman``: the rank
correlation of predicted and measured step times, computed here by hand
(average ranks for ties, then Pearson). Goals (issues 5 and 12): bytes
equal exactly; spearman >= 0.9; every predicted/measured in [0.75, 1.33];
autoddl measured <= 1.05 x the fastest expert preset measured.

Prints one JSON object on stdout. Rerun: ``bench/run.sh fidelity``, or
``PYTHONPATH=python .venv/bin/python bench/fidelity.py --threads 2``.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

CONFIG = dict(n_layer=4, n_embd=512, n_head=8, seq_len=128, vocab_size=4096)
BATCH, HIERARCHY = 16, [2, 2]
STRATEGIES = ("data_parallel", "megatron", "2d", "autoddl", "random1", "random2")
EXPERTS = ("data_parallel", "megatron", "2d")
HYPER = dict(lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.01)


def program():
    """The training program (trace of flow.models.GPT + cross-entropy, AdamW)."""
    import oneflow_lite as flow

    flow.manual_seed(0)
    model = flow.models.GPT(flow.models.GPTConfig(**CONFIG))

    class WithLoss(flow.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, ids, labels):
            return flow.nn.functional.cross_entropy(self.model(ids), labels)

    spec = flow.nn.graph_trace.Spec([BATCH, CONFIG["seq_len"]], flow.int64)
    r = flow.nn.graph_trace.trace(WithLoss(), spec, spec, input_names=["ids", "labels"])
    r.builder.minimize(r.output_names[0], "adamw", **HYPER)
    return r.program, r.output_names[0]


def random_pins(prog, seed: int) -> dict:
    """A random NdSbp per fed input and trainable variable (see the docstring)."""
    rng = np.random.default_rng(seed)
    grads = prog.gradients()
    pins = {}
    for name in ["ids", "labels"] + [v for v in prog.variables() if v in grads]:
        shape = prog.shape(name)
        parts = []
        for size in HIERARCHY:
            choices = ["B"] + [f"S({d})" for d, n in enumerate(shape) if n >= size]
            parts.append(choices[rng.integers(len(choices))])
        pins[name] = "(" + ", ".join(parts) + ")"
    return pins


def plan(prog, name: str, cluster):
    from oneflow_lite import _C

    if name.startswith("random"):
        pins = random_pins(prog, seed=1000 + int(name[len("random"):]))
        return _C.plan(prog, HIERARCHY, cluster, "manual", pinned=pins)
    return _C.plan(prog, HIERARCHY, cluster, name)


def run_one(name: str, cluster_path: str, threads: int, warmup: int, steps: int) -> dict:
    from oneflow_lite import _C

    prog, loss = program()
    planned = plan(prog, name, _C.load_cluster(cluster_path))
    ranks = list(range(int(np.prod(HIERARCHY))))
    session = _C.DistributedSession(prog, ranks, HIERARCHY, planned.strategy, [loss],
                                    num_threads=threads, timeout_ms=600000, num_slots=1)
    rng = np.random.default_rng(0)
    ids = rng.integers(0, CONFIG["vocab_size"], (BATCH, CONFIG["seq_len"]))
    feeds = {"ids": ids, "labels": np.roll(ids, -1, axis=1)}
    times, losses, before = [], [], dict(session.bytes_sent())
    for _ in range(warmup + steps):
        before = dict(session.bytes_sent())
        start = time.perf_counter()
        (value,) = session.run(feeds, [loss])
        times.append(time.perf_counter() - start)
        losses.append(float(value))
    after = dict(session.bytes_sent())
    predicted = dict(planned.predicted_bytes)
    estimate = planned.step_estimate  # the full model: gradient buckets, overlap
    return {"strategy": name, "predicted_step_s": estimate["total_s"],
            "proxy_step_s": planned.predicted_step_s,
            "exposed_gradient_s": estimate["exposed_gradient_s"],
            "gradient_s": estimate["gradient_s"], "buckets": len(estimate["buckets"]),
            "measured_step_s": float(np.median(times[warmup:])),
            "step_s": times[warmup:],
            "predicted_bytes": [int(predicted.get(r, 0)) for r in ranks],
            "measured_bytes": [int(after.get(r, 0) - before.get(r, 0)) for r in ranks],
            "first_loss": losses[0], "peak_bytes": list(session.peak_bytes()),
            "predicted_memory_bytes": list(
                planned.predicted_memory([loss], num_slots=1).peak_bytes),
            "proxy_memory_bytes": planned.stats["memory_bytes"],
            "compute_s": planned.stats["compute_s"],
            "communication_s": planned.stats["communication_s"]}


def average_ranks(values) -> np.ndarray:
    values = np.asarray(values, float)
    order = np.argsort(values, kind="stable")
    ranks = np.empty(len(values))
    i = 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and values[order[j + 1]] == values[order[i]]:
            j += 1
        ranks[order[i:j + 1]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def spearman(a, b) -> float:
    ra, rb = average_ranks(a), average_ranks(b)
    ra, rb = ra - ra.mean(), rb - rb.mean()
    denominator = np.sqrt((ra ** 2).sum() * (rb ** 2).sum())
    return float((ra * rb).sum() / denominator) if denominator > 0 else float("nan")


def calibrate(path: str, threads: int) -> dict:
    from oneflow_lite import _C

    _cluster, figures = _C.calibrate(devices=int(np.prod(HIERARCHY)), num_threads=threads,
                                     name="local")
    with open(path, "w") as f:
        f.write(figures["text"])
    return {k: v for k, v in figures.items() if k != "text"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--steps", type=int, default=3, help="timed steps per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cluster", default="bench/results/fidelity_cluster.pbtxt",
                        help="written by calibrating first unless --reuse-cluster")
    parser.add_argument("--reuse-cluster", action="store_true")
    parser.add_argument("--only", choices=STRATEGIES, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.only:
        print(json.dumps(run_one(args.only, args.cluster, args.threads, args.warmup, args.steps)))
        return 0
    calibration = None
    if not (args.reuse_cluster and os.path.exists(args.cluster)):
        calibration = calibrate(args.cluster, threads=1)
    # Rounds: every strategy once per round, so that a change of the shared
    # machine's load during the run spreads over all strategies instead of
    # favouring the ones measured last; the median runs over every round's
    # timed steps.
    by_name, errors = {}, {}
    for round_index in range(args.rounds):
        for name in STRATEGIES:
            if name in errors:
                continue
            print(f"fidelity: round {round_index + 1}/{args.rounds}: {name}", file=sys.stderr,
                  flush=True)
            cmd = [sys.executable, __file__, "--only", name, "--cluster", args.cluster,
                   "--threads", str(args.threads), "--warmup", str(args.warmup),
                   "--steps", str(args.steps)]
            done = subprocess.run(cmd, capture_output=True, text=True)
            if done.returncode != 0:
                errors[name] = (done.stderr.strip().splitlines()[-1:]
                                or [f"exit {done.returncode}"])
                by_name.pop(name, None)
                continue
            row = json.loads(done.stdout.strip().splitlines()[-1])
            if name in by_name:
                first = by_name[name]
                first["step_s"] += row["step_s"]
                if row["measured_bytes"] != first["measured_bytes"]:
                    errors[name] = [f"bytes differ between rounds: {first['measured_bytes']} "
                                    f"vs {row['measured_bytes']}"]
            else:
                by_name[name] = row
    rows = [by_name[n] for n in STRATEGIES if n in by_name]
    for row in rows:
        row["measured_step_s"] = float(np.median(row["step_s"]))
        row["predicted_over_measured"] = row["predicted_step_s"] / row["measured_step_s"]
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from merge_results import cpu_model, git_commit  # noqa: E402

    result = {"rows": rows, "errors": errors, "calibration": calibration,
              "machine": {"cpu": cpu_model(), "cores": os.cpu_count(),
                          "load_after": list(os.getloadavg())},
              "commit": git_commit(),
              "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "how_to_rerun": "bench/run.sh fidelity",
              "model": dict(CONFIG, batch=BATCH, dtype="float32", optimizer="adamw"),
              "hierarchy": HIERARCHY, "threads": args.threads, "warmup": args.warmup,
              "steps": args.steps, "rounds": args.rounds}
    if len(rows) >= 2:
        result["spearman"] = spearman([r["predicted_step_s"] for r in rows],
                                      [r["measured_step_s"] for r in rows])
    by = {r["strategy"]: r for r in rows}
    experts = [by[e]["measured_step_s"] for e in EXPERTS if e in by]
    result["goals"] = {
        "bytes_equal": all(r["predicted_bytes"] == r["measured_bytes"] for r in rows),
        "spearman_at_least_0.9": result.get("spearman", float("nan")) >= 0.9,
        "memory_within_10pct": all(abs(p / m - 1) <= 0.10 for r in rows
                                   for p, m in zip(r["predicted_memory_bytes"], r["peak_bytes"])
                                   if m > 0),
        "ratios_within_0.75_1.33": all(0.75 <= r["predicted_over_measured"] <= 1.33
                                       for r in rows),
        "autoddl_within_1.05_of_best_expert": ("autoddl" in by and bool(experts) and
                                               by["autoddl"]["measured_step_s"]
                                               <= 1.05 * min(experts)),
    }
    print(json.dumps(result, indent=1))
    return 0 if not errors else 1


if __name__ == "__main__":
    sys.exit(main())
