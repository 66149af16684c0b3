"""Merges the C++ and Python parts of `bench/run.sh ops` into one JSON file.

The output has the headline fields first (matmul_gflops, reference_gflops,
onednn_gflops, openblas_gflops, the GPT step times, threads), then the
machine it ran on (uname, CPU model, cores, load average before and after:
the dev machine is shared, and a loaded machine gives lower figures), the
commit, how to rerun it, and each part's full output under its own key. A
part that failed or printed no JSON leaves its fields null and its error in
"errors".
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys

HOW_TO_RERUN = ("bench/run.sh ops  (sets up and builds first, makes .venv-torch once; "
                "OFL_BENCH_THREADS=2 by default). Parts alone: build/bench/ops_matmul "
                "--threads 2 --reps 20; PYTHONPATH=python .venv/bin/python bench/ops_gpt.py "
                "--threads 2 --torch-python .venv-torch/bin/python")


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def git_commit() -> str:
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, check=True).stdout.strip()
        return head + ("-dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def load_part(path: str, rc: int, name: str, errors: dict) -> dict:
    try:
        with open(path) as f:
            part = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        errors[name] = f"exit {rc}; no JSON output ({e})"
        return {}
    if rc != 0:
        errors[name] = f"exit {rc}: " + str(part.get("matmul_error") or part.get("error")
                                              or part.get("errors") or "")
    return part


# The goals, at every instruction set: (figure, limit, "le" = at most / "ge" = at least).
GOALS = {"graph_over_torch": (0.7, "le"), "eager_over_torch": (1.0, "le"),
         "step_flop_fraction": (0.6, "ge"), "peak_memory_over_torch": (1.0, "le")}


def goals(py: dict, reference_gflops) -> dict:
    """The headline ratios of the GPT step and whether each meets its goal.

    step_flop_fraction = (closed-form matmul FLOPs of the step, gpt_setup.
    step_flops, / our nn.Graph step time) / reference_gflops (the faster
    library on the 1024^3 matmul, same threads)."""
    flops = (py.get("step_flops") or {}).get("step")
    step = py.get("gpt_step_ms")
    gflops = flops / (step * 1e6) if flops and step else None
    mem = py.get("peak_rss_growth_mib") or {}
    ours_mem, torch_mem = mem.get("ours_graph"), mem.get("torch_eager")
    figures = {
        "graph_over_torch": py.get("graph_over_torch"),
        "eager_over_torch": py.get("eager_over_torch"),
        "step_flop_fraction": gflops / reference_gflops if gflops and reference_gflops else None,
        "peak_memory_over_torch": ours_mem / torch_mem if ours_mem and torch_mem else None,
    }
    out = {k: (None if v is None else round(v, 4)) for k, v in figures.items()}
    out["step_gflops"] = None if gflops is None else round(gflops, 2)
    out["step_gflop"] = None if not flops else round(flops / 1e9, 3)
    out["peak_rss_growth_mib"] = {k: None if v is None else round(v, 1) for k, v in mem.items()}
    out["met"] = {k: (None if figures[k] is None else
                      (figures[k] <= lim if how == "le" else figures[k] >= lim))
                  for k, (lim, how) in GOALS.items()}
    out["limits"] = {k: f"{'<=' if how == 'le' else '>='} {lim}" for k, (lim, how) in GOALS.items()}
    return out


def by_isa(py: dict, cpps: list) -> dict:
    """Per instruction set: the matmul figures, the step's and its goals."""
    matmul = {c.get("cpu_isa"): c for c in cpps if c.get("cpu_isa")}
    out = {}
    for isa in dict.fromkeys(list(matmul) + list(py.get("by_isa") or {})):
        level = (py.get("by_isa") or {}).get(isa) or {}
        mm = matmul.get(isa, {})
        out[isa] = {
            "forced": level.get("forced"),
            "matmul_gflops": None if mm.get("matmul_error") else mm.get("matmul_gflops"),
            "reference_gflops": mm.get("reference_gflops"),
            "onednn_gflops": mm.get("onednn_gflops"),
            "openblas_gflops": mm.get("openblas_gflops"),
            "session_over_onednn_by_round": mm.get("session_over_onednn_by_round"),
            "onednn_isa": mm.get("onednn_isa"),
            "gpt_step_ms": level.get("gpt_step_ms"),
            "eager_gpt_step_ms": level.get("eager_gpt_step_ms"),
            "torch_gpt_step_ms": level.get("torch_gpt_step_ms"),
            "ran": level.get("ran"),
            "goals": goals(dict(level, step_flops=py.get("step_flops")),
                           mm.get("reference_gflops")),
            "profile_top": profile_top((py.get("profile") if isa == py.get("cpu_isa")
                                        else level.get("profile")) or {}),
        }
    return out


def profile_top(profile: dict, n: int = 10) -> dict:
    """The first n op types of each side's one-step profile, with the step."""
    out = {}
    for side in ("ours_graph", "torch_eager"):
        p = profile.get(side)
        if p:
            out[side] = {"step_ms": p["step_ms"], "top": p["top"][:n],
                         "by_category_ms": p["by_category_ms"]}
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--threads", type=int, required=True)
    p.add_argument("--load-before", required=True)
    p.add_argument("--cpp", action="append", required=True,
                   help="ops_matmul's JSON, once per instruction set (the first: the headline)")
    p.add_argument("--cpp-rc", type=int, action="append", required=True)
    p.add_argument("--python", required=True)
    p.add_argument("--python-rc", type=int, required=True)
    a = p.parse_args()

    errors: dict = {}
    if len(a.cpp) != len(a.cpp_rc):
        p.error("one --cpp-rc per --cpp")
    cpps = [load_part(path, rc, f"ops_matmul[{i}]", errors)
            for i, (path, rc) in enumerate(zip(a.cpp, a.cpp_rc))]
    cpp = cpps[0]
    py = load_part(a.python, a.python_rc, "ops_gpt", errors)
    uname = platform.uname()
    result = {
        "what": "bench/run.sh ops: GFLOP/s of one 1024^3 float32 matmul run through "
                "ofl::Session (one-op graph, variable inputs, no fetches) vs oneDNN and OpenBLAS "
                "called directly (reference = the faster), median of >= 10 calls after warm-up; "
                "and ms per GPT training step (ours nn.Graph and eager vs PyTorch eager, "
                "interleaved rounds in fresh processes), its per-op profile, peak memory and "
                "FLOP rate (bench/ops_gpt.py)",
        # A product that failed its check is no figure (details under ops_matmul).
        "matmul_gflops": None if cpp.get("matmul_error") else cpp.get("matmul_gflops"),
        "reference_gflops": cpp.get("reference_gflops"),
        "onednn_gflops": cpp.get("onednn_gflops"),
        "openblas_gflops": cpp.get("openblas_gflops"),
        "gpt_step_ms": py.get("gpt_step_ms"),
        "eager_gpt_step_ms": py.get("eager_gpt_step_ms"),
        "torch_gpt_step_ms": py.get("torch_gpt_step_ms"),
        "numpy_gpt_step_ms": py.get("numpy_gpt_step_ms"),
        "goals": goals(py, cpp.get("reference_gflops")),
        "cpu_isa": py.get("cpu_isa") or cpp.get("cpu_isa"),
        "cpu_isa_detected": py.get("cpu_isa_detected") or cpp.get("cpu_isa_detected"),
        "by_isa": by_isa(py, cpps),
        "profile_top": profile_top(py.get("profile") or {}),
        "threads": a.threads,
        "machine": {
            "uname": f"{uname.system} {uname.release} {uname.machine}",
            "cpu": cpu_model(),
            "cores": os.cpu_count(),
            "loadavg_before": a.load_before,
            "loadavg_after": " ".join(f"{x:.2f}" for x in os.getloadavg()),
        },
        "commit": git_commit(),
        "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "how_to_rerun": HOW_TO_RERUN,
        "errors": errors,
        "ops_matmul": cpp,
        "ops_gpt": py,
    }
    with open(a.out, "w") as f:
        json.dump(result, f, indent=2)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
