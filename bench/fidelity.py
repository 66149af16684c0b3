"""fidelity: does the cost model predict what the runtime does, on real parallel runs?

What it measures. Small GPT and VGG models (bench/fidelity_runner.py's
``MODELS``: GPT 2 layers x 128, 4 heads, T=64, V=1024, batch 8; VGG
16-32-64 channels on 32x32 images, FC 256, batch 8; float32, AdamW) are
planned under every strategy below on this machine's calibrated Cluster and
trained, in three settings reported apart:

- ``procs2`` (the headline): 2 processes of one world
  (``oneflow_lite.distributed.launch``), one rank and one kernel thread each
  (OMP/OpenBLAS threads 1; not pinned to cores: the launcher does not pin),
  mesh [2], Gloo between them;
- ``procs4``: 4 processes as above on the 2 x 2 mesh (4 processes on the
  machine's 2 cores);
- ``virtual4``: 4 virtual devices in one process, mesh [2, 2], ``--threads``
  kernel threads;
- ``emulated2``, ``emulated4`` (root; ``--modes emulated2,emulated4``): 2
  emulated nodes (the launcher's --emulate-nodes) of 1 and of 2 devices,
  mesh [2] and [2, 2], one process per node (its devices virtual), links
  shaped to bench/paper_emulated.py's rates for those shapes (860 and 80
  Mbit/s), each planned on its own calibration of that emulation.

Strategies per model: the rule-based presets (``data_parallel``,
``megatron``, ``2d``, ``zero``, ``vgg``; one that does not apply to the
model or mesh is listed under ``skipped``), ``autoddl``, ``exact`` (kept only
when it proves optimality within 20 s), ``replicated`` (every input and
trainable variable B: each rank computes the whole step, no parallelism),
and ``--randoms`` random valid
strategies (every input and trainable variable pinned to a seeded random
NdSbp, the rest deduced). Every strategy is planned once, in this process,
on the calibrated Cluster of that device count
(``bench/results/fidelity_cluster_<kind><N>.pbtxt``; ``oneflow_lite.calibrate`` microbenchmarks
only, with the main job's settings, never fitted to these runs); the
processes run those very strategy dicts, so their plans are identical.
Then (unless ``--no-shape-kernels``) every distinct compute kernel of those
plans is timed alone at its exact local shapes (``calibrate.shape_kernels``:
a split shard runs at its own FLOP rate, not the whole-tensor curve's) and
each plan simulated again on that Cluster: ``predicted_step_s`` is priced
from those times, ``curve_step_s`` from the curve alone. Those times are of
repeated runs, every input in the cache; unless ``--no-cache-model`` the
Cluster also gets this host's cache model (``calibrate.with_cache_model``,
graph/plan_cache_residency.h: a task's inputs its rank touched more than a
core's L2 and share of L3 since their last use are read from memory, their
bytes over one thread's measured read bandwidth), and ``hot_step_s`` keeps
the simulation without it.

``--rounds`` rounds, each in fresh processes, strategy order rotated per
round; per round every strategy runs ``--warmup`` untimed and ``--steps``
timed steps, untraced; one more round writes the runtime's traces (writing
a trace costs milliseconds inside session.run: its steps are kept apart, in
``traced_step_s``). ``autoddl`` is the plan ``_C.plan_by_simulation`` chooses (its
answer and the presets, by the simulated step; its ``candidates`` rows keep
both figures). Per strategy: ``predicted_step_s`` (``planned.simulate``: a
discrete-event simulation of the very Plan the children run, priced from
the calibrated Cluster), ``estimate_step_s`` (``planned.step_estimate``, the
former full model), ``proxy_step_s`` (the searchers' additive total),
``measured_step_s`` (median of every round's timed steps, pooled over the
strategies that are the same plan: ``same_plan_as`` names them, e.g. autoddl
choosing a preset's plan; ``own_step_s`` is the row's own median; ``spread``
half their interquartile range over the median, the noise under the
prediction, whose median per setting is the summary's ``median_spread``),
their ratio,
``predicted_memory_bytes`` (per rank, the liveness model
``planned.predicted_memory`` for the children's session options) beside
``peak_bytes`` (measured, per rank), ``predicted_bytes`` beside
``measured_bytes`` (per rank, one step). Bytes must be equal on every rank:
if not, the bench says so on stderr and exits 3. Every row also gets
``explain`` (bench/fidelity_explain.py: the runtime's trace of the traced
round's last step joined task by task with the simulation, per op type and boxing
kind, with the replay and critical paths) and ``trace_step_s`` (the
runtime's own span of that step); ``--traces-dir`` keeps the traces.
Per setting and per model (``summary``): Spearman (by hand), median and
worst |predicted / measured - 1|. Goals: Spearman >= 0.95 (together and
per model), median error <= 5 %, worst <= 15 %, autoddl measured <= 1.02 x
the fastest strategy measured (per model), bytes equal; memory within 10 %.

Prints one JSON object (``--out`` writes it to a file too). Rerun:
``bench/run.sh fidelity``, or ``PYTHONPATH=python .venv/bin/python
bench/fidelity.py --out bench/results/fidelity.json``.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fidelity_runner as fr  # noqa: E402

MODES = {"procs2": ("procs", [2]), "procs4": ("procs", [2, 2]), "virtual4": ("virtual", [2, 2]),
         "emulated2": ("emulated", [2]), "emulated4": ("emulated", [2, 2])}
# Emulated modes (root): nodes of the outer axis, a node's devices virtual
# devices of its process, links at bench/paper_emulated.py's rates for that shape.
EMULATION = {"emulated2": {"nodes": 2, "devices_per_process": 1, "rate": "860mbit"},
             "emulated4": {"nodes": 2, "devices_per_process": 2, "rate": "80mbit"}}
PRESETS = ("data_parallel", "megatron", "2d", "zero", "vgg")


def log(message: str) -> None:
    print(f"fidelity: {message}", file=sys.stderr, flush=True)


def calibrate(devices: int, path: str, reuse: bool, processes: int = 0, emulation=None):
    """This machine's Cluster for `devices` devices, with the main job's
    "local_kernels" settings (graph_compile._calibrated): the kernel table of
    every op type by size, contention, each collective's figures (over
    `processes` processes with Gloo when >= 2, else in one process; with
    `emulation` (EMULATION's form) across the nodes of that emulated
    cluster); written to `path`. Microbenchmarks only: nothing here sees the
    strategies run."""
    from oneflow_lite import _C, calibrate as full

    if reuse and os.path.exists(path):
        return _C.load_cluster(path), {"reused": path}
    layout = None if emulation is None else full.ProcessLayout(
        1, emulation["nodes"], emulation["devices_per_process"], emulation["rate"])
    cluster, figures = full.calibrate(devices=max(2, devices), threads=1, kernels=True,
                                      reps=3, name="local", processes=processes, layout=layout,
                                      memcpy_bytes=16 << 20, matmul_size=256,
                                      allreduce_bytes=4 << 20)
    with open(path, "w") as f:
        f.write(figures["text"])
    if not figures["steady"]:
        log(f"calibration of {path} not steady: matmul {figures['matmul_drift'] * 100:+.0f} % "
            "between its start and its end")
    return _C.load_cluster(path), {k: v for k, v in figures.items() if k != "text"}


def summary(rows, measured_key: str = "measured_step_s") -> dict:
    """Spearman, median and worst |predicted / measured - 1| of `rows`."""
    rows = [r for r in rows if r.get(measured_key)]
    if not rows:
        return {"strategies": 0}
    pred = np.array([r["predicted_step_s"] for r in rows])
    meas = np.array([r[measured_key] for r in rows])
    err = np.abs(pred / meas - 1)
    spread = [r["spread"] for r in rows if "spread" in r]
    return {"strategies": len(rows),
            "spearman": fr.spearman(pred, meas) if len(rows) >= 2 else float("nan"),
            "median_error": float(np.median(err)), "worst_error": float(err.max()),
            # the measurement's own noise: half the IQR of a plan's steps over their median
            "median_spread": float(np.median(spread)) if spread else float("nan"),
            "worst": rows[int(err.argmax())]["model"] + "/" + rows[int(err.argmax())]["strategy"]}


def goals(rows) -> dict:
    by = {}
    for r in rows:
        by.setdefault(r["model"], {})[r["strategy"]] = r
    autoddl_ok = []
    for table in by.values():
        fastest = min(r["measured_step_s"] for r in table.values())
        if "autoddl" in table:
            autoddl_ok.append(table["autoddl"]["measured_step_s"] <= 1.02 * fastest)
    together = summary(rows)
    per_model = [summary(list(t.values())) for t in by.values()]
    return {
        "bytes_equal": all(r["bytes_equal"] for r in rows),
        "strategies_at_least_16": len(rows) >= 16,
        "spearman_at_least_0.95": bool(rows) and all(
            s.get("spearman", 0) >= 0.95 for s in [together] + per_model),
        "median_error_at_most_5pct": bool(rows) and together["median_error"] <= 0.05,
        "worst_error_at_most_15pct": bool(rows) and together["worst_error"] <= 0.15,
        "memory_within_10pct": all(0.9 <= r["memory_predicted_over_measured"] <= 1.1
                                   for r in rows),
        "autoddl_within_1.02_of_fastest": bool(autoddl_ok) and all(autoddl_ok),
    }


def _cluster_key(mode: str):
    """Modes that share a calibration: processes or virtual devices by count;
    each emulated mode its own."""
    kind, hierarchy = MODES[mode]
    return mode if kind == "emulated" else (kind, int(np.prod(hierarchy)))


def run_mode(mode: str, args, clusters: dict) -> dict:
    kind, hierarchy = MODES[mode]
    devices = int(np.prod(hierarchy))
    threads = {"procs": 1, "virtual": args.threads}.get(kind) or EMULATION[mode][
        "devices_per_process"]
    names = args.strategies or (list(PRESETS) + ["autoddl", "exact", "replicated"]
                                + [f"random{i}" for i in range(1, args.randoms + 1)])
    out = {"kind": kind, "hierarchy": hierarchy, "threads_per_process": threads,
           "processes": {"procs": devices, "virtual": 1}.get(kind) or EMULATION[mode]["nodes"],
           "emulation": EMULATION.get(mode), "pinned_to_cores": False,
           "rows": [], "skipped": {}, "errors": {},
           "load_before": list(os.getloadavg())}
    for model in args.models:
        res = fr.measure(model, hierarchy, clusters[_cluster_key(mode)], names, kind,
                         args.rounds, args.warmup, args.steps, threads, args.timeout_s, log,
                         traces_out=args.traces_dir, emulate=EMULATION.get(mode),
                         shape_kernels=args.shape_kernels, cache_model=args.cache_model)
        out["rows"] += res["rows"]
        out["skipped"].update({f"{model}/{k}": v for k, v in res["skipped"].items()})
        out["errors"].update({f"{model}/{k}": v for k, v in res["errors"].items()})
        model_rows = res["rows"]
        if len(model_rows) >= 2:
            out.setdefault("spearman_per_model", {})[model] = fr.spearman(
                [r["predicted_step_s"] for r in model_rows],
                [r["measured_step_s"] for r in model_rows])
    rows = out["rows"]
    if len(rows) >= 2:
        out["spearman"] = fr.spearman([r["predicted_step_s"] for r in rows],
                                      [r["measured_step_s"] for r in rows])
    # against the wall clock around session.run, and against the runtime's own span
    out["summary"] = {"all": summary(rows), **{m: summary([r for r in rows if r["model"] == m])
                                               for m in args.models}}
    out["summary_trace_span"] = {
        "all": summary(rows, "trace_step_s"),
        **{m: summary([r for r in rows if r["model"] == m], "trace_step_s")
           for m in args.models}}
    out["goals"] = goals(rows)
    out["load_after"] = list(os.getloadavg())
    return out


def parse_args() -> argparse.Namespace:
    """The command line, checked (parser.error on a bad value)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modes", default="procs2,procs4,virtual4",
                        help="comma-separated: " + ", ".join(MODES))
    parser.add_argument("--models", default="gpt,vgg",
                        help="comma-separated: " + ", ".join(fr.MODELS))
    parser.add_argument("--strategies", default=None,
                        help="comma-separated (default: presets, autoddl, exact, randoms)")
    parser.add_argument("--randoms", type=int, default=10)
    parser.add_argument("--threads", type=int, default=2, help="virtual4's kernel threads")
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--steps", type=int, default=3, help="timed steps per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--timeout-s", type=float, default=600, help="per round")
    parser.add_argument("--cluster-dir", default="bench/results")
    parser.add_argument("--reuse-cluster", action="store_true")
    parser.add_argument("--out", default=None)
    parser.add_argument("--no-shape-kernels", dest="shape_kernels", action="store_false",
                        help="price compute by the FLOP curve only (no kernels timed at the "
                             "plans' own shapes)")
    parser.add_argument("--no-cache-model", dest="cache_model", action="store_false",
                        help="with shape kernels: no cache model (every input priced as in the "
                             "cache, as the kernels' repeated runs; kept as hot_step_s otherwise)")
    parser.add_argument("--traces-dir", default=None,
                        help="keep each plan's measured and predicted Chrome traces here")
    args = parser.parse_args()
    args.modes = args.modes.split(",")
    args.models = args.models.split(",")
    args.strategies = args.strategies.split(",") if args.strategies else None
    for m in args.modes:
        if m not in MODES:
            parser.error(f"--modes: unknown mode '{m}' (expected {', '.join(MODES)})")
    for m in args.models:
        if m not in fr.MODELS:
            parser.error(f"--models: unknown model '{m}' (expected {', '.join(fr.MODELS)})")
    if args.rounds < 1 or args.steps < 1 or args.warmup < 0 or args.randoms < 0:
        parser.error("need --rounds >= 1, --steps >= 1, --warmup >= 0, --randoms >= 0")
    return args


def main() -> int:
    args = parse_args()
    started = time.time()
    clusters, calibration = {}, {}
    # one calibration per (kind, devices): processes measure their collectives
    # over Gloo between that many processes, virtual devices in one process
    for key in sorted({_cluster_key(m) for m in args.modes}, key=str):
        if isinstance(key, str):  # an emulated mode
            kind, devices, name = "emulated", int(np.prod(MODES[key][1])), key
        else:
            (kind, devices), name = key, f"{key[0]}{key[1]}"
        path = os.path.join(args.cluster_dir, f"fidelity_cluster_{name}.pbtxt")
        log(f"calibrating {devices} {kind} devices -> {path}")
        clusters[key], calibration[name] = calibrate(
            devices, path, args.reuse_cluster, processes=devices if kind == "procs" else 0,
            emulation=EMULATION.get(name))
    modes = {m: run_mode(m, args, clusters) for m in args.modes}
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from merge_results import cpu_model, git_commit  # noqa: E402

    headline = modes.get("procs2") or modes[args.modes[0]]
    result = {
        "headline": "procs2" if "procs2" in modes else args.modes[0],
        "rows": headline["rows"], "spearman": headline.get("spearman"),
        "goals": headline["goals"], "modes": modes, "calibration": calibration,
        "models": {m: fr.describe(m) for m in args.models},
        "machine": {"cpu": cpu_model(), "cores": os.cpu_count()},
        "commit": git_commit(), "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "seconds": round(time.time() - started, 1),
        "how_to_rerun": "bench/run.sh fidelity",
        "warmup": args.warmup, "steps": args.steps, "rounds": args.rounds,
    }
    text = json.dumps(result, indent=1)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    print(text)
    status = 0
    for name, mode in modes.items():
        for r in mode["rows"]:
            if not r["bytes_equal"]:
                log(f"BYTES DIFFER: {name} {r['model']}/{r['strategy']}: predicted "
                    f"{r['predicted_bytes']} measured {r['measured_bytes']}")
                status = 3
        if mode["errors"] and status == 0:
            log(f"{name}: errors: {mode['errors']}")
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
