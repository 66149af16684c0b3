"""``bench/run.sh search`` and ``bench/run.sh paper``: the AutoDDL search on
model graphs, every searcher, predicted step times (no training runs).

search: one row per (model, layers, mesh, searcher; searcher "ilp": the ILP
of bench/ilp_model.py by HiGHS on configurations of at most ILP_MAX_NODES
cost nodes, within ILP_TIME_LIMIT_S, ilp_status its status) with model, layers, mesh,
searcher, ops (forward, backward, optimizer), candidates (mean signatures
per op, folded optimizer updates included; node_candidates: per cost node,
sources included), seconds (wall time on one core from the in-memory graph to
the Strategy, cost-model building included: PlanStats.seconds),
predicted_step_s, exact_proved (exact rows), gap_to_exact (autoddl rows,
where exact proved its optimum: autoddl / optimum - 1), autoddl_starts
(autoddl rows: each start's total before and after descent), beaten_by
(autoddl rows: starts and preset rows better than autoddl's own answer;
empty), exact_start_s (exact rows: autoddl's answer it continued from when
elimination did not prove) and exact_vs_autoddl (exact rows: exact /
autoddl - 1, <= 0). The checks behind beaten_by and exact_vs_autoddl run
on every configuration; the script exits 1 when one fails (after writing
the file, its failures under checks_failed). A configuration
where nothing fits gives rows with fits=false, the error and the smallest
per-device need.

scale_rows (at the end of search; alone: ``search_bench.py scale``):
autoddl with its cost model on the 96-layer GPT on [128, 8] (1,024
devices) and 2 layers on [64, 64] and [512, 8] (4,096 devices = 512 nodes
of h100_8gpu, one sequence per device: 8 x 512; cluster_note and
batch_note say so), SCALE_RUNS runs each (seconds_runs wall,
cpu_seconds_runs, build_seconds_runs; seconds, cpu_seconds and
build_seconds their medians), and the whole ``python -m oneflow_lite.train
--plan-only`` command (start, trace, plan, report, presets) as a
subprocess: its default 96-layer model on [128, 8], and 2 layers on
[64, 64] and [512, 8] with --batch 4096.

paper: VGG16 (global batch 256) and a Transformer (12 layers, hidden 1024,
16 heads, sequence 512, vocabulary 32000, global batch 128) on 16
single-GPU nodes of p100_nodes (mesh [16]) and on 4 nodes of v100_8gpu
(mesh [4, 8]): the best rule-based expert preset and autoddl, reduction = 1
- autoddl / expert, beside the AutoDDL paper's reported reduction for that
pair; expert_notes: the count and the first of each preset's notes (ops
that could not follow its rule); reduction_vs_sources: the same against the best
source preset (sources by rule, ops chosen by cost).

Model graphs come from bench/search_models.py (declared-only variables).
Run on one core: bench/run.sh pins the process (taskset) and sets the
thread counts to 1.

    PYTHONPATH=python .venv/bin/python bench/search_bench.py search --out bench/results/search.json
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import resource
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from merge_results import cpu_model, git_commit  # noqa: E402
from ilp_model import solve_ilp  # noqa: E402
from search_models import build_program  # noqa: E402

from oneflow_lite import _C  # noqa: E402

EXACT_BUDGET_S = 120.0
# The peers' approach, as a column: the ILP of bench/ilp_model.py (HiGHS, one
# thread, zero MIP gap) on every configuration of at most ILP_MAX_NODES cost
# nodes, within ILP_TIME_LIMIT_S (its status says whether it proved).
ILP_MAX_NODES = 250
ILP_TIME_LIMIT_S = 60.0
EXACT_TABLE = 1 << 27  # elimination table cap for exact (default 2^22 entries)
EXPERTS = ("data_parallel", "megatron", "2d", "zero", "vgg")  # rule-based presets
SOURCE_EXPERTS = ("data_parallel_sources", "megatron_sources", "2d_sources", "vgg_sources")
ROUNDING = 1e-12  # the same sum in another order
EXACT_SLACK = 1e-9  # exact's proof tolerance
GPT = dict(hidden=4096, heads=32, seq=2048, vocab=51200)
GPT_MICRO_BATCH, GPT_GLOBAL_BATCH = 8, 512
TRANSFORMER_MICRO = 8  # paper suite: sequences per micro-batch
PAPER_REDUCTION = {("transformer", "p100_nodes"): 0.311, ("transformer", "v100_8gpu"): 0.10,
                   ("vgg16", "p100_nodes"): 0.177, ("vgg16", "v100_8gpu"): 0.715}


def _need_bytes(message: str):
    """The smallest per-device need from an infeasible-memory error, in bytes."""
    m = re.search(r"needs (?:at least |is )?([0-9.]+) ?(GiB|MiB|KiB|bytes|B)\b", message)
    if not m:
        return None
    scale = {"GiB": 2**30, "MiB": 2**20, "KiB": 2**10, "bytes": 1, "B": 1}[m.group(2)]
    return int(float(m.group(1)) * scale)


def plan_row(model, base: dict, searcher: str) -> dict:
    row = dict(base, searcher=searcher)
    extra = {}
    if searcher == "exact":
        extra = dict(exact_time_budget_s=EXACT_BUDGET_S, exact_max_table_entries=EXACT_TABLE)
    cpu = time.process_time()
    try:
        planned = model.plan(searcher, **extra)
    except (ValueError, RuntimeError) as error:
        message = str(error)
        row.update(predicted_step_s=None, error=message)
        if "not apply" in message or "needs a 2-D mesh" in message or "no Transformer" in message \
                or "needs a conv2d" in message:
            row["applicable"] = False
        else:
            row.update(fits=False, smallest_need_bytes=_need_bytes(message))
        return row
    stats = planned.stats
    row.update(ops=stats["ops"], cost_nodes=stats["cost_nodes"],
               candidates=round(stats["op_candidates"], 3),
               node_candidates=round(stats["candidates"], 3), pruned=stats["pruned"],
               seconds=round(stats["seconds"], 4), build_seconds=round(stats["build_seconds"], 4),
               search_seconds=round(stats["search_seconds"], 4),
               # CPU seconds of this process (one thread): the build's plus this search's;
               # unlike the wall figures, they hold on a loaded machine
               cpu_seconds=round(base["build_cpu_seconds"] + time.process_time() - cpu, 4),
               predicted_step_s=planned.predicted_step_s, memory_bytes=stats["memory_bytes"],
               compute_s=stats["compute_s"], communication_s=stats["communication_s"], fits=True)
    if searcher in EXPERTS and stats["note"]:  # the ops that could not follow the rule
        row["note"] = stats["note"]
    if searcher == "exact":
        row["exact_proved"] = bool(stats["exact_proved"])
        row["lower_bound_s"] = stats["lower_bound"]
        row["exact_start_s"] = stats["exact_start_s"]  # autoddl's answer it continued from
    if searcher == "autoddl":  # its own starts, before and after descent
        row["autoddl_starts"] = [dict(name=s["name"], start_s=s["start_s"], final_s=s["final_s"])
                                 for s in stats["autoddl_starts"]]
    if stats["note"]:
        row["note"] = stats["note"]
    if searcher == "autoddl" and stats["autoddl_start"]:
        row["autoddl_start"] = stats["autoddl_start"]
    return row


def run_config(program, base, mesh, cluster, searchers, log, **cost_args) -> list:
    """One cost model for the configuration, every searcher on it. Each row's
    seconds = the model's build seconds + that searcher's search seconds."""
    base = dict(base, mesh=list(mesh), cluster=cluster, **cpu_fields())
    started, cpu = time.perf_counter(), time.process_time()
    try:
        model = _C.build_cost_model(program, list(mesh), cluster, **cost_args)
    except (ValueError, RuntimeError) as error:
        message = str(error)
        log(f"  {base['model']} L={base['layers']} mesh={mesh}: nothing fits ({message[:160]})")
        return [dict(base, searcher=s, predicted_step_s=None, fits=False, error=message,
                     smallest_need_bytes=_need_bytes(message),
                     seconds=round(time.perf_counter() - started, 4)) for s in searchers]
    base["build_cpu_seconds"] = round(time.process_time() - cpu, 4)
    log(f"  {base['model']} L={base['layers']} mesh={mesh}: cost model built in "
        f"{model.build_seconds:.2f} s ({model.num_nodes} nodes)")
    rows = []
    if model.num_nodes <= ILP_MAX_NODES:
        rows.append(ilp_row(model, base))
        log(f"    ilp: {rows[-1]['predicted_step_s']} s predicted, {rows[-1]['seconds']} s "
            f"({rows[-1]['ilp_status']})")
    for searcher in searchers:
        row = plan_row(model, base, searcher)
        log(f"    {searcher}: {row.get('predicted_step_s')} s predicted, {row.get('seconds')} s"
            + (f" ({row['error'][:120]})" if "error" in row else "")
            + (f" proved={row.get('exact_proved')}" if searcher == "exact" else ""))
        if row.get("applicable") is False:
            continue
        rows.append(row)
    exact = next((r for r in rows if r["searcher"] == "exact"), None)
    for r in rows:
        if r["searcher"] in ("autoddl", "ilp") and exact and exact.get("exact_proved") and \
                r.get("predicted_step_s") and exact.get("predicted_step_s"):
            r["gap_to_exact"] = r["predicted_step_s"] / exact["predicted_step_s"] - 1
    check_never_beaten(rows, log)
    return rows


CHECKS_FAILED = []  # (configuration, what): bench exits 1 when not empty


def ilp_row(model, base) -> dict:
    """The ILP of the configuration's cost graph (before pruning): seconds =
    the model's build + writing and solving the program (one thread);
    predicted_step_s = its answer re-priced by ilp_model.evaluate (None when
    HiGHS found none within the limit); ilp_status = HiGHS's ("Optimal":
    proved at zero gap)."""
    graph = model.cost_graph()
    ilp = solve_ilp(graph, time_limit_s=ILP_TIME_LIMIT_S, threads=1)
    fits = bool(ilp["fits"]) if ilp["fits"] is not None else None
    return dict(base, searcher="ilp", cost_nodes=len(graph["nodes"]),
                seconds=round(model.build_seconds + ilp["seconds"], 4),
                search_seconds=round(ilp["seconds"], 4),
                predicted_step_s=ilp["total_s"] if fits else None, fits=fits,
                ilp_status=ilp["status"], ilp_time_limit_s=ILP_TIME_LIMIT_S,
                ilp_columns=ilp["columns"], ilp_rows=ilp["rows"])


def check_never_beaten(rows, log) -> None:
    """autoddl's own answer (its row, no minimum taken with other rows) is no
    worse than each of its starts, before and after descent, and each preset
    row; exact's is no worse than autoddl's. Sets autoddl's `beaten_by`
    (empty when it holds) and exact's `exact_vs_autoddl`."""
    auto = next((r for r in rows if r["searcher"] == "autoddl" and r.get("predicted_step_s")),
                None)
    if auto is None:
        return
    own = auto["predicted_step_s"]
    beaten = [f"start {s['name']}: {s[k]:.9g} s" for s in auto.get("autoddl_starts", [])
              for k in ("start_s", "final_s") if own > s[k] * (1 + ROUNDING)]
    beaten += [f"preset {r['searcher']}: {r['predicted_step_s']:.9g} s" for r in rows
               if r["searcher"] in EXPERTS and r.get("predicted_step_s")
               and own > r["predicted_step_s"] * (1 + ROUNDING)]
    auto["beaten_by"] = beaten
    failed = [f"autoddl {own:.9g} s beaten by {b}" for b in beaten]
    for r in rows:
        if r["searcher"] == "exact" and r.get("predicted_step_s"):
            r["exact_vs_autoddl"] = r["predicted_step_s"] / own - 1
            if r["exact_vs_autoddl"] > EXACT_SLACK:
                failed.append(f"exact {r['predicted_step_s']:.9g} s worse than autoddl")
    where = f"{auto['model']} L={auto['layers']} mesh={auto['mesh']}"
    for what in failed:
        log(f"    CHECK FAILED: {what}")
        CHECKS_FAILED.append((where, what))


def search_suite(args, log, save) -> dict:
    rows = []
    searchers = tuple(filter(None, args.searchers.split(","))) or ("autoddl", "exact") + EXPERTS
    gpt_args = dict(micro_batches=GPT_GLOBAL_BATCH // GPT_MICRO_BATCH, compute_dtype="bfloat16",
                    bytes_per_parameter=16.0)
    if not args.gpt_only:
        program, _ = build_program("mlp", layers=4, batch=64, hidden=8192)
        rows += run_config(program, dict(model="mlp", layers=4, batch=64), [2, 8], "h100_8gpu",
                           searchers, log)
        program, _ = build_program("vgg16", layers=16, batch=256)
        for mesh in ([4], [8], [4, 8]):
            rows += run_config(program, dict(model="vgg16", layers=16, batch=256), mesh,
                               "v100_8gpu", searchers, log)
        save({"rows": rows})
    # Small meshes first, so that a partial run still has every model.
    for mesh in args.meshes:
        for layers in args.layers:
            program, _ = build_program("gpt", layers=layers, batch=GPT_MICRO_BATCH, **GPT)
            base = dict(model="gpt", layers=layers, batch=GPT_GLOBAL_BATCH,
                        micro_batch=GPT_MICRO_BATCH)
            rows += run_config(program, base, mesh, "h100_8gpu", searchers, log, **gpt_args)
            save({"rows": rows, "partial": True})
    if args.gpt_only:
        return {"rows": rows}
    return {"rows": rows, "scale_rows": scale_rows(log)}


SCALE_RUNS = 3  # timings per scale row: the median is the figure
# (layers, mesh, micro-batches): the 96-layer GPT on 1,024 devices (global
# batch 512, as the rows above) and 2 layers on 4,096 devices with one
# sample per device (8 x 512 = 4,096 sequences).
SCALE_CONFIGS = ((96, [128, 8], 64, {}), (2, [64, 64], 512, {}), (2, [512, 8], 512, {}),
                 (32, [8, 8], 64, dict(vocab=128256)))
# The 8B-class row (32 layers, hidden 4096, LLaMA 3's vocabulary of 128,256 on
# 64 devices) beside the public figure the issue gives for PyTorch's autoparallel.
PUBLIC_8B = dict(tool="PyTorch autoparallel", model="LLaMA 8B", devices=64, seconds=46.8,
                 source="as quoted in the search issue: plans an 8B LLaMA on 64 GPUs in 46.8 s, "
                        "0.00 % off its ILP on 2-D meshes (machine not stated)")
# The whole `python -m oneflow_lite.train --plan-only` command: its default
# 96-layer GPT on [128, 8], and 2 layers on 4,096 devices with one sequence
# per device (--batch 4096 as 512 micro-batches of 8).
PLAN_ONLY_ARGVS = (
    ["--plan-only", "--cluster", "h100_8gpu", "--mesh", "128,8"],
    ["--plan-only", "--cluster", "h100_8gpu", "--mesh", "64,64", "--layers", "2", "--batch",
     "4096", "--micro-batches", "512"],
    ["--plan-only", "--cluster", "h100_8gpu", "--mesh", "512,8", "--layers", "2", "--batch",
     "4096", "--micro-batches", "512"],
)
CLUSTER_NOTE = ("h100_8gpu: nodes of 8 H100 (NVLink 450 GB/s), InfiniBand 50 GB/s per GPU "
                "between nodes, the outer level unbounded (devices / 8 nodes)")


def _isa() -> str:
    """The widest x86 vector extensions the CPU reports (the search figures
    depend on them: the same machine kind without AVX-512 is about 2x slower)."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line.split(":", 1)[1].split() for line in f
                          if line.startswith("flags")), [])
    except OSError:
        return "unknown"
    wanted = ("avx512f", "avx512bw", "avx512vl", "avx2", "fma", "avx")
    return " ".join(flag for flag in wanted if flag in flags) or "none of avx/avx2/avx512"


def cpu_fields() -> dict:
    """The CPU model (lscpu's model name) and vector ISA recorded beside every
    search figure: the same machine kind without AVX-512 is about 2x slower."""
    isa = _isa()
    return dict(cpu=cpu_model(), cpu_isa="avx512" if "avx512f" in isa else
                ("avx2" if "avx2" in isa else "neither avx2 nor avx512"))


def median(values):
    values = sorted(values)
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


def scale_rows(log) -> list:
    """autoddl at 1,024 and 4,096 devices, SCALE_RUNS times each (cost model
    included: each run builds it anew), and the whole `--plan-only` command
    of train.py's default 96-layer model on [128, 8] as a subprocess."""
    rows = []
    for layers, mesh, micro_batches, sizes in SCALE_CONFIGS:
        program, _ = build_program("gpt", layers=layers, batch=GPT_MICRO_BATCH,
                                   **dict(GPT, **sizes))
        devices = mesh[0] * mesh[1]
        batch = GPT_MICRO_BATCH * micro_batches
        row = dict(model="gpt", layers=layers, mesh=mesh, devices=devices,
                   cluster="h100_8gpu", cluster_note=CLUSTER_NOTE, nodes=devices // 8,
                   searcher="autoddl", micro_batch=GPT_MICRO_BATCH, batch=batch,
                   batch_note=f"global batch {batch} sequences of 2048 = {batch / devices:g} "
                              f"per device ({micro_batches} micro-batches of {GPT_MICRO_BATCH})",
                   build_seconds_runs=[], seconds_runs=[], cpu_seconds_runs=[],
                   hidden=GPT["hidden"], vocab=sizes.get("vocab", GPT["vocab"]), **cpu_fields())
        if sizes.get("vocab") == 128256:
            row["public_figure"] = PUBLIC_8B
        for _ in range(SCALE_RUNS):
            started, cpu = time.perf_counter(), time.process_time()
            model = _C.build_cost_model(program, mesh, "h100_8gpu", micro_batches=micro_batches,
                                        compute_dtype="bfloat16", bytes_per_parameter=16.0)
            planned = model.plan("autoddl")
            row["seconds_runs"].append(round(time.perf_counter() - started, 4))
            row["cpu_seconds_runs"].append(round(time.process_time() - cpu, 4))
            row["build_seconds_runs"].append(round(model.build_seconds, 4))
        row.update(seconds=median(row["seconds_runs"]),
                   cpu_seconds=median(row["cpu_seconds_runs"]),
                   build_seconds=median(row["build_seconds_runs"]),
                   ops=planned.stats["ops"], cost_nodes=planned.stats["cost_nodes"],
                   predicted_step_s=planned.predicted_step_s)
        log(f"  scale gpt L={layers} mesh={mesh}: autoddl {row['seconds']} s median "
            f"(build {row['build_seconds']} s), runs {row['seconds_runs']}")
        rows.append(row)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    for argv in PLAN_ONLY_ARGVS:
        runs, cpu_runs = [], []
        for _ in range(SCALE_RUNS):
            started = time.perf_counter()
            children = resource.getrusage(resource.RUSAGE_CHILDREN)
            proc = subprocess.run([sys.executable, "-m", "oneflow_lite.train"] + argv,
                                  env=env, capture_output=True, text=True, timeout=1800)
            runs.append(round(time.perf_counter() - started, 2))
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu_runs.append(round(after.ru_utime + after.ru_stime - children.ru_utime
                                  - children.ru_stime, 2))
            if proc.returncode != 0:
                CHECKS_FAILED.append(("plan-only " + " ".join(argv), proc.stderr.strip()[-300:]))
                break
        command = "python -m oneflow_lite.train " + " ".join(argv)
        rows.append(dict(command=command, cluster_note=CLUSTER_NOTE,
                         what="the whole command: start, trace, plan, report (with its "
                              "optimality cap), expert presets",
                         seconds_runs=runs, seconds=median(runs), cpu_seconds_runs=cpu_runs,
                         cpu_seconds=median(cpu_runs), **cpu_fields()))
        log(f"  {command}: {median(runs)} s median, runs {runs}, CPU {cpu_runs}")
    return rows


def paper_suite(args, log, save) -> dict:
    rows = []
    models = [("vgg16", lambda: build_program("vgg16", layers=16, batch=256), 256),
              ("transformer", lambda: build_program("gpt", layers=12, batch=TRANSFORMER_MICRO,
                                                    hidden=1024, heads=16, seq=512, vocab=32000),
               128)]
    for model, build, batch in models:
        program, _ = build()
        cost_args = {}
        if model == "transformer":  # 128 sequences as 16 micro-batches of 8
            cost_args = dict(micro_batches=128 // TRANSFORMER_MICRO)
        for cluster, mesh in (("p100_nodes", [16]), ("v100_8gpu", [4, 8])):
            base = dict(model=model, layers=12 if model == "transformer" else 16, batch=batch)
            found = run_config(program, base, mesh, cluster,
                               ("autoddl",) + EXPERTS + SOURCE_EXPERTS, log, **cost_args)
            auto = next((r for r in found if r["searcher"] == "autoddl"), None)
            experts = [r for r in found if r["searcher"] in EXPERTS and r.get("predicted_step_s")]
            best = min(experts, key=lambda r: r["predicted_step_s"]) if experts else None
            row = dict(model=model, cluster=cluster, mesh=mesh, batch=batch,
                       micro_batches=cost_args.get("micro_batches", 1),
                       nodes=mesh[0], gpus_per_node=mesh[1] if len(mesh) > 1 else 1,
                       autoddl_step_s=auto.get("predicted_step_s") if auto else None,
                       autoddl_seconds=auto.get("seconds") if auto else None,
                       expert=best["searcher"] if best else None,
                       expert_step_s=best["predicted_step_s"] if best else None,
                       experts={r["searcher"]: r.get("predicted_step_s") for r in found
                                if r["searcher"] in EXPERTS},
                       expert_notes={r["searcher"]: " ".join(line.strip() for line in
                                                             r["note"].splitlines()[:2])
                                     for r in found if r["searcher"] in EXPERTS and r.get("note")},
                       source_experts={r["searcher"]: r.get("predicted_step_s") for r in found
                                       if r["searcher"] in SOURCE_EXPERTS},
                       paper_reduction=PAPER_REDUCTION[(model, cluster)])
            sources = [r for r in found
                       if r["searcher"] in SOURCE_EXPERTS and r.get("predicted_step_s")]
            if sources and auto and auto.get("predicted_step_s"):
                best_sources = min(sources, key=lambda r: r["predicted_step_s"])
                row.update(best_source_expert=best_sources["searcher"],
                           reduction_vs_sources=1 - auto["predicted_step_s"]
                           / best_sources["predicted_step_s"])
            if best and auto and auto.get("predicted_step_s"):
                row["reduction"] = 1 - auto["predicted_step_s"] / best["predicted_step_s"]
            else:
                row["reduction"] = None
                row["error"] = (auto or {}).get("error") or "no expert preset fits"
            rows.append(row)
            save({"rows": rows, "partial": True})
    return {"rows": rows}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("suite", choices=["search", "paper", "scale"],
                        help="scale: only the scale rows (also run at the end of search)")
    parser.add_argument("--out", required=True)
    parser.add_argument("--layers", type=int, nargs="*", default=[2, 8, 24, 48, 96])
    parser.add_argument("--meshes", type=json.loads, default=[[8], [2, 8], [16, 8], [128, 8]],
                        help="JSON list of meshes")
    parser.add_argument("--searchers", default="",
                        help="search suite: comma-separated searchers (default: all)")
    parser.add_argument("--gpt-only", action="store_true",
                        help="search suite: only the GPT rows (no MLP, VGG16 or scale rows)")
    parser.add_argument("--load-before", default="")
    args = parser.parse_args()

    def log(text):
        print(text, file=sys.stderr, flush=True)

    started = time.perf_counter()

    def save(result):
        with open("/proc/loadavg") as f:
            load_after = " ".join(f.read().split()[:3])
        result.update(
        suite=args.suite, wall_seconds=round(time.perf_counter() - started, 1),
        machine=dict(uname=" ".join(platform.uname()), cpu=cpu_model(), isa=_isa(),
                     cores=os.cpu_count(),
                     affinity=sorted(os.sched_getaffinity(0)), load_before=args.load_before,
                     load_after=load_after),
        commit=git_commit(), date_utc=datetime.datetime.utcnow().isoformat(timespec="seconds"),
        how_to_rerun=f"bench/run.sh {args.suite}",
        exact_time_budget_s=EXACT_BUDGET_S, exact_max_table_entries=EXACT_TABLE,
        seconds_note="seconds = the configuration's cost-model build (done once, shared by "
                     "its searchers) + the searcher's own time, on one core")
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out + ".tmp", "w") as f:
            json.dump(result, f, indent=1)
            f.write("\n")
        os.replace(args.out + ".tmp", args.out)

    suite = {"search": search_suite, "paper": paper_suite,
             "scale": lambda args, log, save: {"scale_rows": scale_rows(log)}}[args.suite]
    result = suite(args, log, save)
    result["checks_failed"] = [dict(configuration=w, what=what) for w, what in CHECKS_FAILED]
    save(result)
    return 1 if CHECKS_FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
