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
``--rounds`` rounds, the sides' order rotated each round (interleaved, so
that a load change on the shared machine hits all sides); each run does
``--warmup`` untimed and ``--steps`` timed steps. A side's figure is the
median of its rounds' medians. Memory: each run's growth of ru_maxrss from
before its first step (parameters and optimizer object made) to after its
last one; the median over rounds. Then one profiling run per side (ours:
the runtime's trace of one step; PyTorch: torch.profiler of one step), and
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


def side_cmd(side: str, args, weights: str, profile: str = "") -> tuple:
    """The worker's command line and environment; a profiling run times only
    1 + 1 steps before its profiled one."""
    warmup, steps = (1, 1) if profile else (args.warmup, args.steps)
    common = ["--threads", str(args.threads), "--warmup", str(warmup), "--steps", str(steps)]
    if side == "torch_eager":
        cmd = [args.torch_python, os.path.join(HERE, "torch_gpt.py"), "--weights", weights]
        return cmd + common + (["--profile"] if profile else []), clean_env()
    cmd = [sys.executable, os.path.join(HERE, "gpt_worker.py"), side.split("_")[1]] + common
    return cmd + (["--profile", profile] if profile else []), ours_env(args.threads)


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
    for key in ("torch_version", "torch_threads"):
        if key in ok[0]:
            out[key] = ok[0][key]
    return out


def ratio(a, b):
    return None if a is None or b is None else a / b


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--torch-python", default="",
                    help="an interpreter that imports torch (empty: no PyTorch peer)")
    args = ap.parse_args()
    sides = [s for s in SIDES if s != "torch_eager" or args.torch_python]
    with tempfile.TemporaryDirectory(prefix="ops_gpt_") as tmp:
        weights = os.path.join(tmp, "weights.npz")
        write_weights(weights)
        runs = {s: [] for s in sides}
        for r in range(args.rounds):
            for s in sides[r % len(sides):] + sides[:r % len(sides)]:
                load = os.getloadavg()[0]
                runs[s].append(dict(run_json(*side_cmd(s, args, weights)), loadavg_1min=load))
                print(f"ops_gpt: round {r + 1}/{args.rounds} {s}: "
                      f"{runs[s][-1].get('error') or 'ok'}", file=sys.stderr)
        ours_prof = run_json(*side_cmd("ours_graph", args, weights,
                                       os.path.join(tmp, "trace.json")))
        torch_prof = (run_json(*side_cmd("torch_eager", args, weights, "yes"))
                      if args.torch_python else {"error": "no --torch-python"})
        numpy_ref = time_numpy(weights, args.threads)
    summary = {s: summarize(runs[s], args.warmup) for s in sides}
    step = lambda s: summary.get(s, {}).get("step_ms")  # noqa: E731
    mem = lambda s: summary.get(s, {}).get("peak_rss_growth_mib")  # noqa: E731
    result = {
        "benchmark": "ops_gpt",
        "what": "ms per AdamW training step (forward+backward+update) of the GPT-style model: "
                "ours through nn.Graph and eager vs PyTorch CPU eager, each in fresh processes, "
                "median of the rounds' medians over interleaved rounds",
        "config": dict(CONFIG, batch=BATCH, dtype="float32", optimizer="adamw", **HYPER),
        "threads": args.threads, "rounds": args.rounds, "warmup": args.warmup,
        "steps": args.steps,
        "gpt_step_ms": step("ours_graph"),
        "eager_gpt_step_ms": step("ours_eager"),
        "torch_gpt_step_ms": step("torch_eager"),
        "numpy_gpt_step_ms": numpy_ref["step_ms"],
        "graph_over_torch": ratio(step("ours_graph"), step("torch_eager")),
        "eager_over_torch": ratio(step("ours_eager"), step("torch_eager")),
        "step_flops": step_flops(),
        "peak_rss_growth_mib": {s: mem(s) for s in sides},
        "first_losses": dict({s: summary[s].get("first_loss") for s in sides},
                             numpy=numpy_ref["first_loss"]),
        "sides": summary,
        "profile": {"ours_graph": ours_prof.get("profile"),
                    "ours_profiled_step_ms": ours_prof.get("profiled_step_ms"),
                    "torch_eager": torch_prof.get("profile"),
                    "torch_profiled_step_ms": torch_prof.get("profiled_step_ms"),
                    "errors": {k: v["error"] for k, v in
                               (("ours_graph", ours_prof), ("torch_eager", torch_prof))
                               if "error" in v}},
        "torch_env_removed": list(OUR_SETTINGS) + ["OFL_*"],
        "rerun": "bench/run.sh ops",
    }
    errors = {s: summary[s]["errors"] for s in sides if summary[s]["errors"]}
    if not args.torch_python:
        errors["torch_eager"] = ["no --torch-python: the PyTorch peer was not run"]
    if errors:
        result["errors"] = errors
    print(json.dumps(result, indent=2))
    return 0 if all(step(s) is not None for s in sides) else 1


if __name__ == "__main__":
    sys.exit(main())
