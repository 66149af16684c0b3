"""fidelity_runner: plan strategies once, run them for real, collect per rank.

Shared by bench/fidelity.py (the fidelity suite) and bench/paper_measured.py
(the paper table's measured column). Three parts:

- ``build(model)``: the training program of a small GPT or VGG
  (``MODELS``; ``flow.models`` traced with its cross-entropy loss by
  ``models.trace_loss``, AdamW), seeded: every process builds the same
  weights, and ``feeds(model, step)`` the same batches.
- ``plan_all(model, hierarchy, cluster, names)``: plans every strategy in
  *this* (the parent) process on one Cluster and returns, per strategy,
  what the model predicts (``planned.step_estimate``'s full step time,
  the searchers' additive proxy total, bytes per rank, memory) and the
  strategy itself as a JSON-able dict. The children run exactly these
  dicts, so every process's plan is identical by construction.
- ``run_round(job, mode, ...)``: one round in fresh processes. ``mode``
  "procs": ``len(ranks)`` processes of one world started by
  ``python -m oneflow_lite.distributed.launch`` (one rank and one kernel
  thread each, OMP/OpenBLAS threads 1; the launcher does not pin processes
  to cores, and neither does this: the machine is shared), or "virtual":
  one process driving every rank as a virtual device, or "emulated": one
  process per node of an emulated cluster (the launcher's --emulate-nodes,
  ``job["emulate"]``: nodes, devices_per_process, rate), each node's
  devices virtual devices of its process. Each child runs the
  strategies in the job's order, each in a new ``DistributedSession``
  (``--warmup`` untimed, ``--steps`` timed steps), then the processes
  exchange their per-rank figures through the job's store
  (``_world.all_gather``; with each rank's hash of its session's strategy
  text, which must agree) and process 0 writes them. The launcher is
  started with ``subprocess.Popen`` and, past ``timeout_s``, ended by its
  own pid (SIGTERM, which it forwards to its children, then SIGKILL).

A step's time is process 0's wall clock around ``session.run``; a step ends
only when every rank's has (the loss is fetched). Measured bytes: each
rank's communicator count over the last timed step; peak memory: each
rank's ``session.peak_bytes()``. Spearman: ``spearman`` (average ranks for
ties, then Pearson), by hand.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from typing import Dict, List, Optional, Sequence

import numpy as np

import fidelity_explain as fe

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
HYPER = dict(lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.01)
SEED = 0
# Small sizes: a step well under a second on one core (bench/README.md).
MODELS = {
    "gpt": ("gpt", dict(n_layer=2, n_embd=128, n_head=4, seq_len=64, vocab_size=1024), 8),
    "vgg": ("vgg", dict(features=(16, "M", 32, "M", 64, "M"), in_channels=3, image_size=32,
                        fc=(256,), num_classes=10), 8),
    "gpt_tiny": ("gpt", dict(n_layer=1, n_embd=32, n_head=2, seq_len=16, vocab_size=64), 4),
    "vgg_tiny": ("vgg", dict(features=(4, "M"), in_channels=3, image_size=8, fc=(16,),
                             num_classes=10), 4),
    # bench/paper_measured.py: scaled-down VGG16 and Transformer of the paper table
    "vgg_paper": ("vgg", dict(features=(16, 16, "M", 32, 32, "M", 64, 64, "M"), in_channels=3,
                              image_size=32, fc=(512, 512), num_classes=100), 16),
    "transformer_paper": ("gpt", dict(n_layer=4, n_embd=256, n_head=8, seq_len=64,
                                      vocab_size=2048), 8),
}
RULE_BASED = ("data_parallel", "megatron", "2d", "zero", "vgg")


def describe(model: str) -> dict:
    kind, config, batch = MODELS[model]
    return dict(kind=kind, batch=batch, dtype="float32", optimizer="adamw",
                **{k: list(v) if isinstance(v, tuple) else v for k, v in config.items()})


def build(model: str):
    """(LossGraph) the training program of `model` (seeded weights, AdamW)."""
    import oneflow_lite as flow
    from oneflow_lite.models import GPT, VGG, GPTConfig, VGGConfig, trace_loss

    kind, config, batch = MODELS[model]
    flow.manual_seed(SEED)
    net = GPT(GPTConfig(**config)) if kind == "gpt" else VGG(VGGConfig(**config))
    g = trace_loss(net, batch)
    g.builder.minimize(g.loss, "adamw", **HYPER)
    return g


def feeds(model: str, g, step: int) -> dict:
    """The batch of `step` (the same in every process and run)."""
    kind, config, batch = MODELS[model]
    rng = np.random.default_rng(1000 + step)
    if kind == "gpt":
        ids = rng.integers(0, config["vocab_size"], (batch, config["seq_len"]))
        return {g.data: ids, g.labels: np.roll(ids, -1, axis=1)}
    s = config["image_size"]
    images = rng.standard_normal((batch, config["in_channels"], s, s)).astype(np.float32)
    return {g.data: images, g.labels: rng.integers(0, config["num_classes"], batch)}


# ---------------------------------------------------------------- planning

def random_pins(prog, inputs: Sequence[str], hierarchy: Sequence[int], seed: int) -> dict:
    """A random NdSbp per fed input and trainable variable: per mesh axis B or
    S(d) of a dimension at least as large as the axis (seeded)."""
    rng = np.random.default_rng(seed)
    grads = prog.gradients()
    pins = {}
    for name in list(inputs) + [v for v in prog.variables() if v in grads]:
        shape = prog.shape(name)
        parts = []
        for size in hierarchy:
            choices = ["B"] + [f"S({d})" for d, n in enumerate(shape) if n >= size]
            parts.append(choices[rng.integers(len(choices))])
        pins[name] = "(" + ", ".join(parts) + ")"
    return pins


def plan_one(g, name: str, hierarchy: Sequence[int], cluster):
    """(planned, candidates): `name` planned on `cluster`; for autoddl, the
    plan chosen among its answer and the presets by the simulated step
    (``_C.plan_by_simulation``) and the candidates' rows, else None."""
    from oneflow_lite import _C

    if name == "autoddl":
        planned, rows, _text = _C.plan_by_simulation(g.program, list(hierarchy), cluster,
                                                      fetches=[g.loss], num_slots=1)
        return planned, rows
    return plan_one_alone(g, name, hierarchy, cluster), None


def plan_one_alone(g, name: str, hierarchy: Sequence[int], cluster):
    from oneflow_lite import _C

    if name == "replicated":  # every input and trainable variable B: each rank computes it all
        pins = {n: "(" + ", ".join(["B"] * len(hierarchy)) + ")"
                for n in random_pins(g.program, [g.data, g.labels], hierarchy, seed=0)}
        return _C.plan(g.program, list(hierarchy), cluster, "manual", pinned=pins)
    if name.startswith("random"):
        pins = random_pins(g.program, [g.data, g.labels], hierarchy,
                           seed=1000 + int(name[len("random"):]))
        return _C.plan(g.program, list(hierarchy), cluster, "manual", pinned=pins)
    if name == "exact":
        return _C.plan(g.program, list(hierarchy), cluster, "exact", exact_time_budget_s=20.0)
    return _C.plan(g.program, list(hierarchy), cluster, name)


def plan_all(model: str, hierarchy: Sequence[int], cluster, names: Sequence[str],
             shape_kernels: bool = False, log=lambda s: None, cache_model: bool = True):
    """(rows, skipped): per strategy that plans, its predictions and its
    strategy dict; skipped: name -> why not (a preset that does not apply,
    exact that does not prove optimality within its budget).
    predicted_step_s: the simulated step of the session the children run
    (``PlannedStrategy.simulate``: fetch the loss, one slot); estimate_step_s:
    the former full model (``step_estimate``); proxy_step_s: the searchers'
    additive total. ``_prediction`` and ``_trace_json`` (the simulation, for
    the explain breakdown) and ``_strategy`` are popped by measure().
    With ``shape_kernels``, every distinct compute kernel of the planned
    plans is then timed alone at its exact local shapes
    (``calibrate.shape_kernels``) and each plan simulated again on that
    Cluster: predicted_step_s is that simulation, ``curve_step_s`` the one
    priced by the FLOP curve alone. With ``cache_model`` (``calibrate.shape_kernels``'s
    default: this host's cache per core) a task's cold inputs also cost their
    bytes over the memory bandwidth, and ``hot_step_s`` keeps the simulation
    without that model (every input in the cache: ``cache_bytes=0``)."""
    from oneflow_lite import explain

    g = build(model)
    ranks = list(range(int(np.prod(hierarchy))))
    rows, skipped, planned_by = [], {}, {}
    for name in names:
        try:
            planned, candidates = plan_one(g, name, hierarchy, cluster)
        except ValueError as e:
            skipped[name] = str(e).splitlines()[0][:200]
            continue
        stats = planned.stats
        if name == "exact" and not stats.get("exact_proved"):
            skipped[name] = "exact did not prove optimality within its budget"
            continue
        estimate = planned.step_estimate
        by_rank = dict(planned.predicted_bytes)
        sim = planned.simulate([g.loss], num_slots=1)
        rows.append({"model": model, "strategy": name, "searcher": planned.searcher,
                     "predicted_step_s": float(sim["step_s"]),
                     "estimate_step_s": float(estimate["total_s"]),
                     "proxy_step_s": float(planned.predicted_step_s),
                     "gradient_s": float(estimate["gradient_s"]),
                     "exposed_gradient_s": float(estimate["exposed_gradient_s"]),
                     "predicted_bytes": [int(by_rank.get(r, 0)) for r in ranks],
                     # the liveness model for the children's session options (fetch the
                     # loss, one slot, default buckets, transactional): per rank
                     "predicted_memory_bytes": [int(b) for b in planned.predicted_memory(
                         [g.loss], num_slots=1).peak_bytes],
                     "proxy_memory_bytes": int(stats["memory_bytes"]),
                     "compute_s": float(stats["compute_s"]),
                     "communication_s": float(stats["communication_s"]),
                     "_strategy": {"sources": dict(planned.strategy.sources),
                                   "signatures": dict(planned.strategy.signatures)},
                     "_prediction": explain.prediction_of(sim), "_trace_json": sim["trace_json"]})
        if candidates is not None:
            rows[-1]["candidates"] = candidates
        planned_by[name] = (planned, sim["plan"])
    if shape_kernels and rows:
        from oneflow_lite import calibrate

        plans = [plan for _, plan in planned_by.values()]
        hot, figures = calibrate.shape_kernels(cluster, plans, reps=3)
        shaped = calibrate.with_cache_model(hot) if cache_model else hot
        log(f"{model}: {len(figures['entries'])} kernels timed at their plans' shapes"
            + (f", cache model {shaped.cache_bytes / 2**20:.1f} MiB and "
               f"{shaped.memory_read_bytes_per_s / 1e9:.1f} GB/s" if cache_model else "")
            + (f", {len(figures['skipped'])} skipped" if figures["skipped"] else ""))
        if not cache_model:
            hot = None
        for row in rows:
            planned = planned_by[row["strategy"]][0]
            sim = planned.simulate([g.loss], num_slots=1, cluster=shaped)
            row.update(curve_step_s=row["predicted_step_s"], predicted_step_s=float(sim["step_s"]),
                       _prediction=explain.prediction_of(sim), _trace_json=sim["trace_json"])
            if hot is not None:
                row["hot_step_s"] = float(
                    planned.simulate([g.loss], num_slots=1, cluster=hot)["step_s"])
    return rows, skipped


# ---------------------------------------------------------------- the children

def child(job_path: str, out_path: str) -> int:
    """Runs a job file's strategies in order (this process's ranks)."""
    from oneflow_lite import _C, _world

    with open(job_path) as f:
        job = json.load(f)
    world = _world.info()
    g = build(job["model"])
    hierarchy, ranks = job["hierarchy"], list(range(int(np.prod(job["hierarchy"]))))
    batches = [feeds(job["model"], g, i) for i in range(job["warmup"] + job["steps"])]
    results = {}
    for name in job["order"]:
        # the runtime's trace of each run (the last timed step's stays): per process
        trace = (os.path.join(job["trace_dir"], f"{name}_p{world['process']}.json")
                 if job.get("trace_dir") else "")
        strategy = _C.Strategy(**job["strategies"][name])  # the layouts' text, parsed
        session = _C.DistributedSession(g.program, ranks, hierarchy, strategy,
                                        [g.loss], num_threads=job["threads"],
                                        timeout_ms=job["timeout_ms"], num_slots=1,
                                        trace_path=trace)
        times, losses, before = [], [], {}
        for i, batch in enumerate(batches):
            before = dict(session.bytes_sent())
            start = time.perf_counter()
            (value,) = session.run(batch, [g.loss])
            if i >= job["warmup"]:
                times.append(time.perf_counter() - start)
            losses.append(float(value))
        after, peak = dict(session.bytes_sent()), list(session.peak_bytes())  # peak: by rank
        plan = hashlib.sha256(session.strategy().encode()).hexdigest()
        local = {r: {"bytes": int(after.get(r, 0) - before.get(r, 0)), "peak": int(peak[r]),
                     "plan": plan} for r in session.local_ranks()}
        results[name] = {"step_s": times, "losses": losses, "local": local}
        del session
    parts = _world.all_gather({n: r["local"] for n, r in results.items()})
    if world["process"] == 0:
        for name, row in results.items():
            merged = {}
            for part in parts:
                merged.update(part[name])
            if len({merged[r]["plan"] for r in ranks}) != 1:
                raise RuntimeError(f"{name}: the processes' plans differ (strategy hashes "
                                   f"{[merged[r]['plan'][:12] for r in ranks]})")
            row["plans_identical"] = True
            row["measured_bytes"] = [merged[r]["bytes"] for r in ranks]
            row["peak_bytes"] = [merged[r]["peak"] for r in ranks]
            del row["local"]
        with open(out_path, "w") as f:
            json.dump(results, f)
    return 0


def child_env(threads: int) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads))
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(ROOT, "python"), HERE] + (
        [env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    return env


def _end(proc: subprocess.Popen) -> None:
    """Ends `proc` by its own pid: SIGTERM (the launcher forwards it to its
    children and stops them: their --timeout-s 10 then SIGKILL 3 s later),
    then SIGKILL after 30 s, past the launcher's own grace."""
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


def run_round(job: dict, mode: str, timeout_s: float) -> dict:
    """One round of `job` (model, hierarchy, strategies, order, warmup,
    steps, threads) in fresh processes; process 0's results by strategy.
    Raises RuntimeError on a failed or timed-out round."""
    nranks = int(np.prod(job["hierarchy"]))
    job = dict(job, timeout_ms=int(timeout_s * 1000))
    with tempfile.TemporaryDirectory() as tmp:
        job_path, out_path = os.path.join(tmp, "job.json"), os.path.join(tmp, "out.json")
        with open(job_path, "w") as f:
            json.dump(job, f)
        me = [os.path.abspath(__file__), "--child", job_path, "--out", out_path]
        if mode == "procs":
            cmd = [sys.executable, "-m", "oneflow_lite.distributed.launch", "--nproc-per-node",
                   str(nranks), "--timeout-s", "10", *me]
        elif mode == "emulated":  # one process per emulated node, its devices virtual
            e = job["emulate"]
            cmd = [sys.executable, "-m", "oneflow_lite.distributed.launch", "--emulate-nodes",
                   str(e["nodes"]), "--devices-per-process", str(e["devices_per_process"]),
                   "--emulate-rate", e["rate"], "--timeout-s", "10", *me]
        elif mode == "virtual":
            cmd = [sys.executable, "-u", *me]
        else:
            raise ValueError(f"run_round: mode '{mode}' is not 'procs', 'virtual' or 'emulated'")
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                env=child_env(job["threads"]), cwd=ROOT)
        try:
            output, _ = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            _end(proc)
            raise RuntimeError(f"{mode} round of {job['model']} timed out after {timeout_s:g} s")
        if proc.returncode != 0 or not os.path.exists(out_path):
            tail = " | ".join(output.strip().splitlines()[-6:])
            raise RuntimeError(f"{mode} round of {job['model']} exited {proc.returncode}: {tail}")
        with open(out_path) as f:
            return json.load(f)


# ---------------------------------------------------------------- statistics

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
    """Spearman rank correlation, by hand: average ranks, then Pearson."""
    ra, rb = average_ranks(a), average_ranks(b)
    ra, rb = ra - ra.mean(), rb - rb.mean()
    denominator = np.sqrt((ra ** 2).sum() * (rb ** 2).sum())
    return float((ra * rb).sum() / denominator) if denominator > 0 else float("nan")


def relative_spread(samples: Sequence[float]) -> float:
    """Half the interquartile range over the median: how far a typical step
    of one plan lies from its median (the noise under any prediction)."""
    q25, q50, q75 = np.percentile(samples, [25, 50, 75])
    return float((q75 - q25) / 2 / q50) if q50 > 0 else float("nan")


def same_plans(strategies: Dict[str, dict]) -> Dict[str, List[str]]:
    """Per strategy name, every name (itself included, in the given order)
    whose strategy dict is the same plan: equal JSON with sorted keys."""
    digest = {n: json.dumps(s, sort_keys=True) for n, s in strategies.items()}
    return {n: [o for o in strategies if digest[o] == digest[n]] for n in strategies}


def measure(model: str, hierarchy: List[int], cluster, names: Sequence[str], mode: str,
            rounds: int, warmup: int, steps: int, threads: int, timeout_s: float,
            log=lambda s: None, traces_out: Optional[str] = None,
            emulate: Optional[dict] = None, shape_kernels: bool = False,
            cache_model: bool = True) -> dict:
    """Plans `names` on `cluster`, runs them `rounds` times (order rotated
    per round; one more round, traced, for the explain) and returns {"rows",
    "skipped", "errors"}: per row the
    predictions, the median measured step over every round's timed steps
    (pooled over the strategies that are the same plan, ``same_plans``;
    ``own_step_s`` its own samples' median),
    the ratio, measured bytes and peak per rank (from the first round;
    bytes must be the same every round)."""
    rows, skipped = plan_all(model, hierarchy, cluster, names, shape_kernels, log, cache_model)
    strategies = {r["strategy"]: r.pop("_strategy") for r in rows}
    trace_dir = tempfile.mkdtemp(prefix="ofl_fidelity_traces_")
    order = [r["strategy"] for r in rows]
    errors: Dict[str, str] = {}
    steps_by: Dict[str, list] = {n: [] for n in order}
    first: Dict[str, dict] = {}
    # Writing a run's trace costs milliseconds inside session.run that an
    # untraced run does not pay: the timed rounds run untraced, and one more
    # round (its steps in traced_step_s, not in the measured step) writes the
    # traces the explain joins.
    traced_by: Dict[str, list] = {n: [] for n in order}
    for k in range(rounds + 1):
        traced = k == rounds
        rotated = order[k % len(order):] + order[:k % len(order)] if order else []
        log(f"{mode} {model} {'traced round' if traced else f'round {k + 1}/{rounds}'}: "
            f"{', '.join(rotated)}")
        job = dict(model=model, hierarchy=hierarchy, strategies=strategies, order=rotated,
                   warmup=warmup, steps=steps, threads=threads,
                   trace_dir=trace_dir if traced else "", emulate=emulate)
        try:
            out = run_round(job, mode, timeout_s)
        except RuntimeError as e:
            errors[f"round {k + 1}"] = str(e)
            log(f"  FAILED: {e}")
            continue
        for name, res in out.items():
            (traced_by if traced else steps_by)[name] += res["step_s"]
            if name not in first:
                first[name] = res
            elif res["measured_bytes"] != first[name]["measured_bytes"]:
                errors[name] = (f"bytes differ between rounds: {first[name]['measured_bytes']}"
                                f" vs {res['measured_bytes']}")
    same = same_plans(strategies)
    for row in rows:
        name = row["strategy"]
        if name not in first or not steps_by[name]:  # no timed round ran it
            continue
        res = first[name]
        # One plan under several names (autoddl's answer is often a preset's) is
        # one experiment: its step is the median of all their samples.
        pooled = [s for other in same[name] for s in steps_by.get(other, [])]
        row.update(measured_step_s=float(np.median(pooled)),
                   own_step_s=float(np.median(steps_by[name])),
                   same_plan_as=[o for o in same[name] if o != name],
                   traced_step_s=[round(s, 6) for s in traced_by[name]],
                   spread=relative_spread(pooled),
                   step_s=[round(s, 6) for s in steps_by[name]],
                   measured_bytes=res["measured_bytes"], peak_bytes=res["peak_bytes"],
                   first_loss=res["losses"][0], plans_identical=res["plans_identical"])
        row["predicted_over_measured"] = row["predicted_step_s"] / row["measured_step_s"]
        # the busiest rank's peak, predicted over measured (per rank they are alike)
        row["memory_predicted_over_measured"] = (max(row["predicted_memory_bytes"])
                                                 / max(1, max(row["peak_bytes"])))
        row["bytes_equal"] = row["predicted_bytes"] == row["measured_bytes"]
    for row in rows:
        prediction, trace_json = row.pop("_prediction"), row.pop("_trace_json")
        if "measured_step_s" in row:
            fe.attach(row, prediction, trace_json, trace_dir, mode, traces_out)
    shutil.rmtree(trace_dir, ignore_errors=True)
    rows = [r for r in rows if "measured_step_s" in r]
    return {"rows": rows, "skipped": skipped, "errors": errors}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", required=True, help="the job file (JSON)")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    return child(args.child, args.out)


if __name__ == "__main__":
    sys.exit(main())
