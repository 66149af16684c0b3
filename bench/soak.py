"""soak: does a long training run on 4 virtual devices hold its memory flat?

What it measures: ``--steps`` AdamW training steps (default 2,000) of the
ops benchmark's GPT (bench/ops_gpt.py: ``CONFIG``, ``BATCH``, ``HYPER``,
``make_model``) traced with its loss and run by one ``_C.DistributedSession``
on 4 virtual CPU devices (hierarchy [4], data parallel: ids and labels
pinned to S(0), the rest deduced), ``--threads`` kernel threads in total.
Every ``--every`` steps (and after the first step) it samples the process's
resident memory (VmRSS of /proc/self/status). Passes when the last sample
is less than ``--max-growth`` (5 %) above the sample after the first
``--every`` steps (the warm-up: allocator pools, oneDNN primitive caches).
Each step gets a fresh random batch (the data of a real run changes).

Writes ``--out`` (bench/results/soak.json): the samples, the growth, the
step times, the losses at each sample, what ran on which machine, and the
command to rerun; then draws ``--png`` (bench/results/soak.png). Exit
status 1 when the growth is at or over the limit or a loss is not finite.
Rerun: ``bench/run.sh soak`` (builds first; OFL_SOAK_STEPS=N for a shorter
run), or ``PYTHONPATH=python .venv/bin/python bench/soak.py --steps 2000``.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from ops_gpt import BATCH, CONFIG, HYPER, make_model  # noqa: E402
from oneflow_lite import _C  # noqa: E402
from oneflow_lite.models import trace_loss  # noqa: E402

RANKS = [0, 1, 2, 3]


def rss_bytes() -> int:
    """VmRSS of this process, in bytes (Linux /proc/self/status)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise OSError("/proc/self/status has no VmRSS line")


def make_session(threads: int):
    g = trace_loss(make_model(), BATCH)
    g.builder.minimize(g.loss, "adamw", **HYPER)
    spec = _C.PlanSpec.deduce({g.data: "S(0)", g.labels: "S(0)"})
    sess = _C.DistributedSession(g.program, RANKS, [len(RANKS)], spec, [g.loss],
                                 num_threads=threads)
    return g, sess


def soak(steps: int, every: int, threads: int):
    g, sess = make_session(threads)
    rng = np.random.default_rng(0)
    samples, losses, step_s = [], [], []
    for step in range(1, steps + 1):
        ids = rng.integers(0, CONFIG["vocab_size"], size=(BATCH, CONFIG["seq_len"]),
                           dtype=np.int64)
        t0 = time.perf_counter()
        (loss,) = sess.run({g.data: ids, g.labels: np.roll(ids, -1, axis=1)}, [g.loss])
        step_s.append(time.perf_counter() - t0)
        if step == 1 or step % every == 0 or step == steps:
            samples.append({"step": step, "rss_bytes": rss_bytes()})
            losses.append({"step": step, "loss": float(loss)})
            print(f"soak: step {step}/{steps} rss {samples[-1]['rss_bytes'] / 2**20:.1f} MiB "
                  f"loss {float(loss):.4f} {step_s[-1] * 1e3:.0f} ms/step", file=sys.stderr,
                  flush=True)
    return samples, losses, step_s


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--every", type=int, default=100)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--max-growth", type=float, default=0.05)
    parser.add_argument("--out", default=os.path.join(HERE, "results", "soak.json"))
    parser.add_argument("--png", default=os.path.join(HERE, "results", "soak.png"))
    args = parser.parse_args()
    if args.steps < 2 * args.every:
        parser.error(f"--steps {args.steps} must be at least 2 x --every ({args.every})")
    load_before = os.getloadavg()
    t0 = time.time()
    samples, losses, step_s = soak(args.steps, args.every, args.threads)
    wall = time.time() - t0
    base = next(s for s in samples if s["step"] == args.every)["rss_bytes"]
    last = samples[-1]["rss_bytes"]
    growth = (last - base) / base
    finite = all(math.isfinite(x["loss"]) for x in losses)
    result = {
        "benchmark": "soak",
        "what": f"resident memory (VmRSS, /proc/self/status) sampled every {args.every} "
                f"training steps of the ops benchmark's GPT on {len(RANKS)} virtual CPU devices "
                f"(one DistributedSession, data parallel); growth = last sample over the sample "
                f"after the first {args.every} steps",
        "config": dict(CONFIG, batch=BATCH, dtype="float32", optimizer="adamw", **HYPER),
        "devices": len(RANKS), "hierarchy": [len(RANKS)],
        "strategy": "deduce, ids and labels pinned to S(0)",
        "threads": args.threads, "steps": args.steps, "every": args.every,
        "samples": samples, "losses": losses,
        "baseline_step": args.every, "baseline_rss_bytes": base, "last_rss_bytes": last,
        "growth": growth, "max_growth": args.max_growth,
        "passed": bool(growth < args.max_growth and finite),
        "step_ms_median": 1e3 * float(np.median(step_s)),
        "step_ms_p99": 1e3 * float(np.percentile(step_s, 99)),
        "wall_s": wall,
        "commit": commit(),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                    "python": platform.python_version(), "load_before": list(load_before),
                    "load_after": list(os.getloadavg())},
        "rerun": "bench/run.sh soak   (or: PYTHONPATH=python .venv/bin/python bench/soak.py "
                 f"--steps {args.steps} --threads {args.threads})",
    }
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    plot(result, args.png)
    print(f"soak: growth {100 * growth:.2f} % after step {args.every} "
          f"({'passed' if result['passed'] else 'FAILED'}); wrote {args.out}, {args.png}",
          file=sys.stderr)
    return 0 if result["passed"] else 1


def commit() -> str:
    """The checked-out commit ("+ changes" when the tree differs), or "unknown"."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=HERE, text=True,
                              capture_output=True, timeout=30).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=HERE, text=True, capture_output=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return (head or "unknown") + (" + changes" if dirty.strip() else "")


def plot(result: dict, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = [s["step"] for s in result["samples"]]
    mib = [s["rss_bytes"] / 2**20 for s in result["samples"]]
    base = result["baseline_rss_bytes"] / 2**20
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(steps, mib, marker="o", label="VmRSS")
    ax.axhline(base * (1 + result["max_growth"]), color="tab:red", linestyle="--",
               label=f"limit: +{100 * result['max_growth']:.0f} % over step "
                     f"{result['baseline_step']}")
    ax.set_xlabel("training step")
    ax.set_ylabel("resident memory (MiB)")
    ax.set_ylim(0, max(max(mib), base * (1 + result["max_growth"])) * 1.1)
    ax.set_title(f"soak: GPT on {result['devices']} virtual devices, growth "
                 f"{100 * result['growth']:.2f} %")
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


if __name__ == "__main__":
    sys.exit(main())
