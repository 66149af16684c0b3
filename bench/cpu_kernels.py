"""cpu_kernels: the CPU kernels of the vector-math, optimizer, add_n and
cross-entropy paths, this tree against a baseline build, at one instruction
set, in interleaved rounds; optionally the whole GPT training step too.

Sides: ``after`` (this tree's ``python/``, or ``--after DIR``) and
``before`` (``--baseline DIR``: the package folder of another build, e.g.
a copy of the tree at an earlier commit built as scripts/lib/setup.sh
builds). Both run with ``OFL_CPU_ISA=--isa`` (default: the level the CPU
has), which each worker reports back (``cpu_isa_by_side``).

Every round starts one fresh worker process per side (``before`` first on
even rounds, ``after`` first on odd ones, so both see the same load). A
worker times each kernel ``--reps`` times after two warm-up calls and prints
the per-kernel medians. A figure is the median over rounds of each side's
round median; ``before_over_after`` is the median of the rounds' before /
after ratios (above 1: the change made it faster). Kernels run through
``_C.run_op`` (the output's allocation is in the time, on both sides) or,
for the optimizer updates, ``EagerExecutor.run_in_place``; kernel threads:
oneTBB's default (every core), OMP_NUM_THREADS = OPENBLAS_NUM_THREADS =
``--threads``. ``add`` changed in neither side: its ratio is the noise.

``--parts kernels,gpt,profile``: ``gpt`` is bench/gpt_worker.py's
graph-mode GPT AdamW training step (forward, backward, update; ``--threads``
threads) per side and round: the median of its 5 steps after 2 warm-up
ones. ``profile``: one profiled step of it per side and round (the runtime's
trace): ms of each op type in STEP_OPS, their sum and the step's busy ms.

Writes bench/results/cpu_kernels_<isa>.json (or ``--out``); a part not run
keeps the figures the file already holds (its own ``rounds``, ``date_utc``
and ``labels`` say when they were taken). Rerun:
``PYTHONPATH=python .venv/bin/python bench/cpu_kernels.py --baseline DIR
--isa avx2 --parts kernels,gpt`` (bench/README.md, "cpu_kernels").
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
ROOT = os.path.dirname(HERE)
N = 1 << 20  # elements of every pointwise case (4 MiB of float32)
# kernel -> what it runs (the README's table comes from here)
KERNELS = {
    "gelu": "gelu of 2^20 float32 (libmvec erfc on the vector lanes)",
    "gelu_grad": "gelu_grad of 2^20 float32 (erfc and exp)",
    "softmax": "softmax over 256 rows of 4096 float32 (row max, exp-sum, scale)",
    "softmax_grad": "softmax_grad over 256 rows of 4096 float32 (row dot)",
    "cross_entropy": "sparse_softmax_cross_entropy of 32 rows of 32768 classes",
    "cross_entropy_grad": "its gradient (softmax minus one-hot, times dy), same rows",
    "adamw_update": "adam_update with decoupled weight decay on 2^20 float32, in place",
    "adam_update_f64": "adam_update with coupled weight decay on 2^20 float64, in place",
    "sgd_update": "sgd_update with momentum 0.9 on 2^20 float32, in place",
    "add_n4": "add_n of 4 inputs of 2^20 float32",
    "add_n2_f64": "add_n of 2 inputs of 2^20 float64",
    "add": "add of two 2^20 float32 (unchanged on both sides: the noise)",
}
ADAM = dict(lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.01)


def cases() -> dict:
    """kernel -> a call with fixed inputs (the worker's side)."""
    from oneflow_lite import _C
    rng = np.random.default_rng(0)
    f32 = lambda *s: rng.standard_normal(s).astype(np.float32)  # noqa: E731
    x, dy = f32(N), f32(N)
    sm, sm_dy = f32(256, 4096) * 4, f32(256, 4096)
    probs = _C.run_op("softmax", [sm])[0]
    ce = f32(32, 32768) * 4
    labels = rng.integers(0, 32768, 32).astype(np.int64)
    ce_dy = f32(32)
    e = _C.EagerExecutor()
    opt32 = [f32(N), f32(N), f32(N) * 0.1, np.abs(f32(N)) * 0.01, np.zeros(1, np.int64)]
    opt64 = [a.astype(np.float64) for a in opt32[:4]] + [np.zeros(1, np.int64)]
    sgd = [a.copy() for a in opt32[:3]]
    addends = [f32(N) for _ in range(4)]
    f64 = [a.astype(np.float64) for a in addends[:2]]
    return {
        "gelu": lambda: _C.run_op("gelu", [x]),
        "gelu_grad": lambda: _C.run_op("gelu_grad", [x, dy]),
        "softmax": lambda: _C.run_op("softmax", [sm]),
        "softmax_grad": lambda: _C.run_op("softmax_grad", [probs, sm_dy]),
        "cross_entropy": lambda: _C.run_op("sparse_softmax_cross_entropy", [ce, labels]),
        "cross_entropy_grad": lambda: _C.run_op("sparse_softmax_cross_entropy_grad",
                                                [ce, labels, ce_dy]),
        "adamw_update": lambda: e.run_in_place("adam_update", opt32,
                                               dict(ADAM, decoupled_weight_decay=True)),
        "adam_update_f64": lambda: e.run_in_place("adam_update", opt64,
                                                  dict(ADAM, decoupled_weight_decay=False)),
        "sgd_update": lambda: e.run_in_place("sgd_update", sgd,
                                             dict(lr=1e-3, momentum=0.9, weight_decay=0.01)),
        "add_n4": lambda: _C.run_op("add_n", addends),
        "add_n2_f64": lambda: _C.run_op("add_n", f64),
        "add": lambda: _C.run_op("add", addends[:2]),
    }


def worker(reps: int) -> dict:
    """This process's median ms per kernel, and the level it ran."""
    from oneflow_lite import _C
    out = {}
    for name, call in cases().items():
        call(), call()
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            call()
            times.append(time.perf_counter() - t0)
        out[name] = 1e3 * float(np.median(times))
    return {"ms": out, "cpu_isa": _C.cpu_isa()}


def side_env(package: str, args) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("OFL_CPU_ISA", "ONEDNN_MAX_CPU_ISA", "PYTHONPATH")}
    env.update(PYTHONPATH=package, OFL_CPU_ISA=args.isa, OMP_NUM_THREADS=str(args.threads),
               OPENBLAS_NUM_THREADS=str(args.threads))
    return env


def run_json(cmd: list, env: dict) -> dict:
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, env=env)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:3])}: {out.stderr.strip()[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def kernel_round(package: str, args) -> dict:
    return run_json([sys.executable, os.path.abspath(__file__), "--worker", "--reps",
                     str(args.reps)], side_env(package, args))


def gpt_round(package: str, args) -> dict:
    got = run_json([sys.executable, os.path.join(HERE, "gpt_worker.py"), "graph", "--threads",
                    str(args.threads), "--warmup", "2", "--steps", "5"],
                   side_env(package, args))
    return {"ms": {"gpt_step": float(np.median(got["step_ms"][2:]))}, "cpu_isa": got["cpu_isa"],
            "losses": got["losses"]}


# The step's op types whose CPU kernels differ between the sides' trees.
STEP_OPS = ("gelu", "gelu_grad", "softmax", "softmax_grad", "sparse_softmax_cross_entropy",
            "sparse_softmax_cross_entropy_grad", "adam_update", "add_n")


def profile_round(package: str, args) -> dict:
    """One profiled graph step (bench/gpt_worker.py --profile): ms per STEP_OPS
    op type, their sum and the whole step's busy ms."""
    trace = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"cpu_kernels_{os.getpid()}.json")
    got = run_json([sys.executable, os.path.join(HERE, "gpt_worker.py"), "graph", "--threads",
                    str(args.threads), "--profile", trace], side_env(package, args))
    if os.path.exists(trace):
        os.remove(trace)
    by_op = {row["op"]: row["ms"] for row in got["profile"]["top"]}
    ms = {op: by_op.get(op, 0.0) for op in STEP_OPS}
    ms["changed_ops_total"] = sum(ms.values())
    ms["step_busy"] = got["profile"]["busy_ms"]
    return {"ms": ms, "cpu_isa": got["cpu_isa"]}


def interleave(run, packages: dict, args) -> list:
    """Every round's result per side, the order alternating by round."""
    rounds = []
    for r in range(args.rounds):
        order = ("before", "after") if r % 2 == 0 else ("after", "before")
        rounds.append({side: run(packages[side], args) for side in order})
    return rounds


def summarize(rounds: list) -> dict:
    """name -> before/after ms (median of round medians), the ratio, the rounds."""
    out = {}
    for name in rounds[0]["after"]["ms"]:
        per = {s: [rd[s]["ms"][name] for rd in rounds] for s in ("before", "after")}
        ratios = [b / a for b, a in zip(per["before"], per["after"])]
        out[name] = {"before_ms": float(np.median(per["before"])),
                     "after_ms": float(np.median(per["after"])),
                     "before_over_after": float(np.median(ratios)),
                     "ratio_range": [float(min(ratios)), float(max(ratios))],
                     "rounds_ms": per}
    return out


def machine() -> dict:
    model = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            model = next(ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return {"cpu": model, "cores": os.cpu_count(),
            "loadavg": " ".join(f"{x:.2f}" for x in os.getloadavg())}


def git_commit() -> str:
    try:
        return subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--baseline", help="package folder of the baseline build (python/)")
    p.add_argument("--after", default=os.path.join(ROOT, "python"),
                   help="package folder measured against it (default: this tree's)")
    p.add_argument("--label", nargs=2, metavar=("BEFORE", "AFTER"),
                   help="what the two packages are (e.g. their commits), recorded as is")
    p.add_argument("--isa", default="", help="OFL_CPU_ISA for both sides (default: the CPU's)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--reps", type=int, default=15)
    p.add_argument("--parts", default="kernels", help="comma-separated: kernels, gpt, profile")
    p.add_argument("--out", default="", help="default bench/results/cpu_kernels_<isa>.json")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    return p, p.parse_args()


def measure(part: str, packages: dict, args) -> dict:
    """One part's figures: {"kernels": ...} or {"gpt_step": ...}, with when and how."""
    start = machine()
    run = {"kernels": kernel_round, "gpt": gpt_round, "profile": profile_round}[part]
    rounds = interleave(run, packages, args)
    figures = summarize(rounds)
    out = figures["gpt_step"] if part == "gpt" else figures
    if part == "gpt":
        out["first_losses"] = {s: rounds[0][s]["losses"][:3] for s in packages}
    out["run"] = {
        "rounds": args.rounds, "reps": args.reps, "threads": args.threads,
        "cpu_isa_by_side": {s: sorted({rd[s]["cpu_isa"] for rd in rounds}) for s in packages},
        "labels": dict(zip(("before", "after"), args.label or ("", git_commit()))),
        "baseline": packages["before"], "after": packages["after"],
        "machine_before": start, "machine_after": machine(),
        "date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
    }
    return {{"kernels": "kernels", "gpt": "gpt_step", "profile": "gpt_step_profile"}[part]: out}


def main() -> int:
    parser, args = parse_args()
    if args.worker:
        print(json.dumps(worker(args.reps)))
        return 0
    if not args.baseline:
        parser.error("--baseline is required")
    if not args.isa:
        sys.path.insert(0, args.after)
        from oneflow_lite import _C
        args.isa = _C.cpu_isa_info()["detected"]
    packages = {"before": os.path.abspath(args.baseline), "after": os.path.abspath(args.after)}
    out = args.out or os.path.join(HERE, "results", f"cpu_kernels_{args.isa}.json")
    result = {}
    if os.path.exists(out):
        with open(out) as f:
            result = json.load(f)
    result.update({
        "benchmark": "cpu_kernels",
        "what": "CPU kernels and the graph GPT AdamW step (and its op profile): this tree "
                "(after) vs a baseline build (before) at one instruction set, interleaved "
                "rounds of fresh processes; before_over_after > 1: after is faster",
        "isa": args.isa, "kernel_cases": KERNELS,
        "how_to_rerun": "PYTHONPATH=python .venv/bin/python bench/cpu_kernels.py --baseline DIR "
                        f"--isa {args.isa} --rounds N --parts kernels,gpt,profile",
    })
    for part in args.parts.split(","):
        result.update(measure(part, packages, args))
    with open(out, "w") as f:
        json.dump(result, f, indent=2)
    rows = list(result.get("kernels", {}).items()) + [("gpt_step", result.get("gpt_step"))]
    rows += list(result.get("gpt_step_profile", {}).items())
    for name, k in rows:
        if k and name != "run":
            print(f"{name:20s} before {k['before_ms']:9.3f} ms  after {k['after_ms']:9.3f} ms  "
                  f"before/after {k['before_over_after']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
