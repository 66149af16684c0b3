"""ops_gpt: one GPT training step, ours (nn.Graph and eager) against PyTorch.

The model: ``oneflow_lite.models.GPT`` with 4 layers, hidden 256, 4 heads,
sequence 128, vocabulary 2048, batch 8, float32, AdamW (bench/gpt_setup.py).
Three sides, each in a fresh process per round, run as its users run it:
- ``ours_graph``: ``flow.nn.Graph`` with ``add_optimizer`` (gpt_worker.py graph);
- ``ours_eager``: module forward, ``loss.backward()``, ``opt.step()``
  (gpt_worker.py eager);
- ``torch_eager``: PyTorch eager on CPU (torch_gpt.py) under ``--torch-python``,
  in an environment without any of our settings (``clean_env``),
  ``torch.set_num_threads(--threads)``.
Each side runs under every instruction set of ``--isas`` (default: the
CPU's own level and, on an AVX-512 CPU, AVX2 as well): a level below the
CPU's is forced, ours with ``OFL_CPU_ISA`` (which caps oneDNN too), PyTorch
with its own knobs (``TORCH_ISA_ENV``: ATEN_CPU_CAPABILITY,
ONEDNN_MAX_CPU_ISA, MKL_ENABLE_INSTRUCTIONS); the CPU's own level runs with
none of them, as users run it. Each run records the level it ran.
``--rounds`` rounds, the (level, side) runs' order rotated each round
(interleaved, so that a load change on the shared machine hits all); each run does
``--warmup`` untimed and ``--steps`` timed steps. A side's figure is the
median of its rounds' medians; the top-level figures are the first
level's, every level's are under ``by_isa``. Memory: each run's growth of ru_maxrss from
before its first step (parameters and optimizer object made) to after its
last one; the median over rounds. Then one profiling run per side (ours:
the runtime's trace of one step; PyTorch: torch.profiler of one step) per
level, and
the independent numpy GPT (tests/python/reference) once, in this process.

Prints one JSON object on stdout (merged by bench/merge_results.py, which
adds the FLOP rate against the matmul bench's reference_gflops).
Rerun: ``bench/run.sh ops`` (builds first and makes .venv-torch), or
``PYTHONPATH=python .venv/bin/python bench/ops_gpt.py --threads 2
--torch-python .venv-torch/bin/python``.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))

from gpt_setup import BATCH, CONFIG, HYPER, LAYER_NORM_EPS, SEED, batches, step_flops  # noqa: E402

# Variables that carry one framework's settings into another's process: the
# PyTorch peer gets none of them (oneflow_lite sets OMP_WAIT_POLICY=PASSIVE
# in its own process on import; bench/run.sh sets the thread counts).
OUR_SETTINGS = ("OMP_WAIT_POLICY", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                "OMP_PROC_BIND", "OMP_PLACES", "KMP_AFFINITY", "KMP_BLOCKTIME", "PYTHONPATH",
                "PYTHONHOME", "VIRTUAL_ENV", "LD_PRELOAD")
SIDES = ("ours_graph", "ours_eager", "torch_eager")
LEVELS = ("scalar", "avx2", "avx512")
# PyTorch's own variables that hold it to a level below the CPU's.
TORCH_ISA_ENV = {
    "avx2": {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2",
             "MKL_ENABLE_INSTRUCTIONS": "AVX2"},
    "scalar": {"ATEN_CPU_CAPABILITY": "default", "ONEDNN_MAX_CPU_ISA": "SSE41",
               "MKL_ENABLE_INSTRUCTIONS": "SSE4_2"},
}
WORKER_TIMEOUT_S = 300


def clean_env() -> dict:
    """This process's environment without OUR_SETTINGS and OFL_*."""
    return {k: v for k, v in os.environ.items()
            if k not in OUR_SETTINGS and not k.startswith("OFL_")}


def ours_env(threads: int) -> dict:
    """A oneflow_lite user's process: the package on the path; eager kernels'
    pools bounded by the usual variables (graphs bound them themselves)."""
    env = clean_env()
    env.update(PYTHONPATH=os.path.join(ROOT, "python"), OMP_NUM_THREADS=str(threads),
               OPENBLAS_NUM_THREADS=str(threads))
    if "OFL_EXTENSION_DIR" in os.environ:
        env["OFL_EXTENSION_DIR"] = os.environ["OFL_EXTENSION_DIR"]
    return env


def run_json(cmd, env) -> dict:
    """Runs one worker; its JSON, or {"error": ...}."""
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=WORKER_TIMEOUT_S,
                             env=env, cwd=ROOT)
    except (OSError, subprocess.TimeoutExpired) as e:
        return {"error": f"{cmd[1]}: {e}"}
    if out.returncode != 0:
        tail = out.stderr.strip().splitlines()[-3:] if out.stderr else ["no stderr"]
        return {"error": f"{os.path.basename(cmd[1])} exit {out.returncode}: " + " | ".join(tail)}
    try:
        return json.loads(out.stdout.strip().splitlines()[-1])
    except (json.JSONDecodeError, IndexError) as e:
        return {"error": f"{os.path.basename(cmd[1])}: no JSON on stdout ({e})"}


def isa_env(side: str, isa: str, native: str) -> dict:
    """The variables that hold `side` to level `isa` (none at the CPU's own)."""
    if isa == native:
        return {}
    if side == "torch_eager":
        return dict(TORCH_ISA_ENV[isa])
    return {"OFL_CPU_ISA": isa}


def side_cmd(side: str, args, weights: str, isa: str, profile: str = "") -> tuple:
    """The worker's command line and environment; a profiling run times only
    1 + 1 steps before its profiled one."""
    warmup, steps = (1, 1) if profile else (args.warmup, args.steps)
    common = ["--threads", str(args.threads), "--warmup", str(warmup), "--steps", str(steps)]
    if side == "torch_eager":
        cmd = [args.torch_python, os.path.join(HERE, "torch_gpt.py"), "--weights", weights]
        env = dict(clean_env(), **isa_env(side, isa, args.native_isa))
        return cmd + common + (["--profile"] if profile else []), env
    cmd = [sys.executable, os.path.join(HERE, "gpt_worker.py"), side.split("_")[1]] + common
    env = dict(ours_env(args.threads), **isa_env(side, isa, args.native_isa))
    return cmd + (["--profile", profile] if profile else []), env


def write_weights(path: str) -> None:
    """The model's initial state_dict (flow.manual_seed(SEED)) as .npz."""
    import oneflow_lite as flow
    from oneflow_lite.models import GPT, GPTConfig
    cfg = GPTConfig(**CONFIG)
    if cfg.layer_norm_epsilon != LAYER_NORM_EPS:
        raise SystemExit(f"ops_gpt: GPTConfig eps {cfg.layer_norm_epsilon} != gpt_setup's "
                         f"{LAYER_NORM_EPS}")
    flow.manual_seed(SEED)
    state = GPT(cfg).state_dict()
    np.savez(path, **{k: v.numpy() for k, v in state.items()})


def time_numpy(weights: str, threads: int, steps: int = 3) -> dict:
    """The independent numpy GPT (tests/python/reference), one warm-up step."""
    from reference import numpy_gpt, numpy_optim
    from reference.state_dict import from_state_dict
    from oneflow_lite.models import GPTConfig
    try:
        from threadpoolctl import threadpool_limits
        limiter = threadpool_limits(threads)
    except ImportError:
        limiter = None
    config = GPTConfig(**CONFIG)
    with np.load(weights) as w:
        params = from_state_dict("gpt", {k: w[k] for k in w.files}, dtype=np.float32,
                                 config=config)
    opt = numpy_optim.AdamW(**HYPER)
    times, losses = [], []
    for batch in batches(1 + steps):
        t0 = time.perf_counter()
        loss, grads = numpy_gpt.loss_and_grads(params, config, batch)
        opt.step(params, grads)
        times.append(1e3 * (time.perf_counter() - t0))
        losses.append(float(loss))
    del limiter
    return {"step_ms": statistics.median(times[1:]), "first_loss": losses[0]}


def summarize(runs: list, warmup: int) -> dict:
    """One side's rounds -> median of round medians, memory, first loss."""
    ok = [r for r in runs if "error" not in r]
    out = {"rounds": len(runs), "errors": [r["error"] for r in runs if "error" in r]}
    if not ok:
        out["step_ms"] = None
        return out
    medians = [statistics.median(r["step_ms"][warmup:]) for r in ok]
    growth = [(r["maxrss_after_kb"] - r["maxrss_before_kb"]) / 1024 for r in ok]
    out.update(step_ms=statistics.median(medians), round_medians_ms=[round(m, 2) for m in medians],
               min_step_ms=min(min(r["step_ms"][warmup:]) for r in ok),
               first_step_ms=statistics.median(r["step_ms"][0] for r in ok),
               peak_rss_growth_mib=statistics.median(growth),
               rss_growth_by_round_mib=[round(g, 1) for g in growth],
               maxrss_before_mib=statistics.median(r["maxrss_before_kb"] / 1024 for r in ok),
               first_loss=ok[0]["losses"][0], env=ok[0].get("env"),
               loadavg_1min_by_round=[r.get("loadavg_1min") for r in runs])
    for key in ("torch_version", "torch_threads", "cpu_isa", "cpu_capability"):
        if key in ok[0]:
            out[key] = ok[0][key]
    return out


def ratio(a, b):
    return None if a is None or b is None else a / b


def default_isas(native: str) -> list:
    """The CPU's own level, then AVX2 when the CPU has more."""
    return [native] + (["avx2"] if native == "avx512" else [])


def level_result(summary: dict, sides: list, profiles: dict, isa: str, native: str) -> dict:
    """One level's figures: step times, ratios to PyTorch, what each side ran."""
    step = lambda s: summary.get(s, {}).get("step_ms")  # noqa: E731
    return {
        "forced": isa != native,
        "gpt_step_ms": step("ours_graph"),
        "eager_gpt_step_ms": step("ours_eager"),
        "torch_gpt_step_ms": step("torch_eager"),
        "graph_over_torch": ratio(step("ours_graph"), step("torch_eager")),
        "eager_over_torch": ratio(step("ours_eager"), step("torch_eager")),
        "ran": {s: summary[s].get("cpu_isa") or summary[s].get("cpu_capability") for s in sides},
        "env": {s: isa_env(s, isa, native) for s in sides},
        "peak_rss_growth_mib": {s: summary.get(s, {}).get("peak_rss_growth_mib") for s in sides},
        "sides": summary,
        "profile": profiles,
    }


def parse_args():
    """The command line, with the CPU's own level (native_isa) and the levels
    to measure (isas)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--isas", default="",
                    help="comma-separated levels (avx512, avx2, scalar); the first gives the "
                         "top-level figures (default: the CPU's own, then avx2 below avx512)")
    ap.add_argument("--torch-python", default="",
                    help="an interpreter that imports torch (empty: no PyTorch peer)")
    args = ap.parse_args()
    from oneflow_lite import _C
    args.native_isa = _C.cpu_isa_info()["detected"]
    isas = args.isas.split(",") if args.isas else default_isas(args.native_isa)
    for isa in isas:
        if isa not in LEVELS or LEVELS.index(isa) > LEVELS.index(args.native_isa):
            allowed = ", ".join(LEVELS[:LEVELS.index(args.native_isa) + 1])
            raise SystemExit(f"ops_gpt: --isas {isa}: this CPU runs {allowed}")
    return args, isas


def measure(args, isas, sides):
    """Interleaved rounds of every (isa, side) in fresh processes, then one
    profiled run per level and the numpy reference: (runs, profiles, numpy_ref)."""
    runs_order = [(isa, s) for isa in isas for s in sides]
    with tempfile.TemporaryDirectory(prefix="ops_gpt_") as tmp:
        weights = os.path.join(tmp, "weights.npz")
        write_weights(weights)
        runs = {key: [] for key in runs_order}
        for r in range(args.rounds):
            k = r % len(runs_order)
            for isa, s in runs_order[k:] + runs_order[:k]:
                load = os.getloadavg()[0]
                runs[isa, s].append(dict(run_json(*side_cmd(s, args, weights, isa)),
                                         loadavg_1min=load))
                print(f"ops_gpt: round {r + 1}/{args.rounds} {isa} {s}: "
                      f"{runs[isa, s][-1].get('error') or 'ok'}", file=sys.stderr)
        profiles = {}
        for isa in isas:
            ours_prof = run_json(*side_cmd("ours_graph", args, weights, isa,
                                           os.path.join(tmp, f"trace_{isa}.json")))
            torch_prof = (run_json(*side_cmd("torch_eager", args, weights, isa, "yes"))
                          if args.torch_python else {"error": "no --torch-python"})
            profiles[isa] = {
                "ours_graph": ours_prof.get("profile"),
                "ours_profiled_step_ms": ours_prof.get("profiled_step_ms"),
                "torch_eager": torch_prof.get("profile"),
                "torch_profiled_step_ms": torch_prof.get("profiled_step_ms"),
                "errors": {k: v["error"] for k, v in
                           (("ours_graph", ours_prof), ("torch_eager", torch_prof))
                           if "error" in v}}
        numpy_ref = time_numpy(weights, args.threads)
    return runs, profiles, numpy_ref


def main() -> int:
    args, isas = parse_args()
    sides = [s for s in SIDES if s != "torch_eager" or args.torch_python]
    runs, profiles, numpy_ref = measure(args, isas, sides)
    by_isa = {}
    for isa in isas:
        summary = {s: summarize(runs[isa, s], args.warmup) for s in sides}
        by_isa[isa] = level_result(summary, sides, profiles[isa], isa, args.native_isa)
    head = by_isa[isas[0]]
    summary = head["sides"]
    result = {
        "benchmark": "ops_gpt",
        "what": "ms per AdamW training step (forward+backward+update) of the GPT-style model: "
                "ours through nn.Graph and eager vs PyTorch CPU eager, each in fresh processes, "
                "median of the rounds' medians over interleaved rounds, under each CPU "
                "instruction set of by_isa (the top-level figures are cpu_isa's)",
        "config": dict(CONFIG, batch=BATCH, dtype="float32", optimizer="adamw", **HYPER),
        "threads": args.threads, "rounds": args.rounds, "warmup": args.warmup,
        "steps": args.steps,
        "cpu_isa": isas[0], "cpu_isa_detected": args.native_isa, "isas": isas,
        "gpt_step_ms": head["gpt_step_ms"],
        "eager_gpt_step_ms": head["eager_gpt_step_ms"],
        "torch_gpt_step_ms": head["torch_gpt_step_ms"],
        "numpy_gpt_step_ms": numpy_ref["step_ms"],
        "graph_over_torch": head["graph_over_torch"],
        "eager_over_torch": head["eager_over_torch"],
        "step_flops": step_flops(),
        "peak_rss_growth_mib": head["peak_rss_growth_mib"],
        "first_losses": dict({s: summary[s].get("first_loss") for s in sides},
                             numpy=numpy_ref["first_loss"]),
        "sides": summary,
        "profile": head["profile"],
        "by_isa": {isa: {k: v for k, v in level.items() if k != "profile" or isa != isas[0]}
                   for isa, level in by_isa.items()},
        "torch_env_removed": list(OUR_SETTINGS) + ["OFL_*"],
        "rerun": "bench/run.sh ops",
    }
    errors = {f"{isa} {s}": level["sides"][s]["errors"] for isa, level in by_isa.items()
              for s in sides if level["sides"][s]["errors"]}
    if not args.torch_python:
        errors["torch_eager"] = ["no --torch-python: the PyTorch peer was not run"]
    if errors:
        result["errors"] = errors
    print(json.dumps(result, indent=2))
    return 0 if all(level["sides"][s].get("step_ms") is not None
                    for level in by_isa.values() for s in sides) else 1


if __name__ == "__main__":
    sys.exit(main())
