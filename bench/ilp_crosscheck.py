"""``bench/run.sh ilp``: exact and autoddl against an independent optimum,
the integer linear program of the same cost graph solved by HiGHS
(bench/ilp_model.py), on graphs of up to about 200 cost nodes.

One row per graph: model, layers, mesh, cluster, memory_limit_bytes (None:
the cluster's, which does not bind here; else a binding limit half-way from
the smallest need to autoddl's unconstrained answer's memory), nodes,
edges, candidates (all, before pruning), ilp_columns / ilp_rows; exact:
total, proved, lower bound, seconds, note; ilp: total, status, seconds, the
solver's own objective; autoddl: total, seconds; the relative gaps
exact/ilp - 1, autoddl/ilp - 1, autoddl/exact - 1. Every total is re-priced
from the exported graph by ilp_model.evaluate (plain Python), not taken
from a solver. ``agree``: exact proved and the ILP optimal and the two
totals within a relative 1e-9; where exact does not prove, the ILP's answer
stands beside it (``ilp_below_exact``: the ILP found a better answer, which
also bounds exact's gap).

Checks (the script exits 1 when one fails, after writing the file): a
proved exact equals an optimal ILP (rel 1e-9); exact <= autoddl (rel 1e-9);
an optimal ILP is no worse than exact or autoddl and no better than exact's
lower bound.

    PYTHONPATH=python .venv/bin/python bench/ilp_crosscheck.py --out bench/results/ilp.json
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ilp_model import evaluate, solve_ilp  # noqa: E402
from merge_results import cpu_model, git_commit  # noqa: E402
from search_models import build_branches, build_program  # noqa: E402

from oneflow_lite import _C  # noqa: E402

REL = 1e-9
EXACT_BUDGET_S = 60.0
EXACT_TABLE = 1 << 24
ILP_TIME_LIMIT_S = 300.0
GPT = dict(hidden=1024, heads=16, seq=512, vocab=32000, batch=8)


def _models():
    """key -> (model, layers, builder, cluster)."""
    return {
        "mlp": ("mlp", 4, lambda: build_program("mlp", layers=4, batch=64, hidden=8192), "h100_8gpu"),
        "residual": ("residual", 4, lambda: build_branches("residual", 4, 512, 4096), "h100_8gpu"),
        "two_branch": ("two_branch", 4, lambda: build_branches("two_branch", 4, 512, 4096),
                       "h100_8gpu"),
        "vgg16": ("vgg16", 16, lambda: build_program("vgg16", layers=16, batch=256), "v100_8gpu"),
        "gpt1": ("gpt", 1, lambda: build_program("gpt", layers=1, **GPT), "h100_8gpu"),
        "gpt2": ("gpt", 2, lambda: build_program("gpt", layers=2, **GPT), "h100_8gpu"),
    }


# (model key, mesh, binding memory limit?)
CONFIGS = [
    ("mlp", [4], False), ("mlp", [8], False), ("mlp", [2, 2], False), ("mlp", [2, 4], False),
    ("mlp", [4], True), ("mlp", [2, 4], True),
    ("residual", [4], False), ("residual", [2, 2], False), ("residual", [2, 4], False),
    ("residual", [2, 2], True),
    ("two_branch", [4], False), ("two_branch", [2, 4], False), ("two_branch", [2, 4], True),
    ("vgg16", [4], False), ("vgg16", [2, 2], False), ("vgg16", [4], True),
    ("gpt1", [4], False), ("gpt1", [2, 2], False), ("gpt1", [2, 4], False),
    ("gpt1", [2, 2], True), ("gpt2", [4], False), ("gpt2", [2, 4], False),
]


def _gap(a, b):
    return None if a is None or b is None or b == 0 else a / b - 1


def _binding_limit(program, mesh, cluster):
    """Half-way from the smallest need to autoddl's unconstrained answer's memory."""
    free = _C.build_cost_model(program, mesh, cluster, memory_limit=-1)
    planned = free.plan("autoddl")
    need = free.smallest_memory_need_bytes
    return need + (planned.stats["memory_bytes"] - need) // 2, planned.predicted_step_s


def _planned(model, graph, searcher, **extra):
    started = time.perf_counter()
    planned = model.plan(searcher, **extra)
    seconds = time.perf_counter() - started
    total, memory, fits = evaluate(graph, planned.choice)
    return planned, dict(total_s=total, seconds=round(seconds, 3), fits=fits,
                         reported_s=planned.predicted_step_s, memory_bytes=memory)


def run_one(key, mesh, binding, log) -> dict:
    name, layers, build, cluster = _models()[key]
    program, _ = build()
    row = dict(model=name, layers=layers, mesh=mesh, cluster=cluster, memory_limit_bytes=None)
    if binding:
        row["memory_limit_bytes"], row["free_autoddl_s"] = _binding_limit(program, mesh, cluster)
    model = _C.build_cost_model(program, mesh, cluster, memory_limit=row["memory_limit_bytes"])
    graph = model.cost_graph()
    row.update(nodes=len(graph["nodes"]), edges=len(graph["edges"]),
               candidates=sum(len(n["compute_s"]) for n in graph["nodes"]))
    exact, e = _planned(model, graph, "exact", exact_time_budget_s=EXACT_BUDGET_S,
                        exact_max_table_entries=EXACT_TABLE)
    _, a = _planned(model, graph, "autoddl")
    ilp = solve_ilp(graph, time_limit_s=ILP_TIME_LIMIT_S)
    row.update(exact_total_s=e["total_s"], exact_proved=bool(exact.stats["exact_proved"]),
               exact_lower_bound_s=exact.stats["lower_bound"], exact_seconds=e["seconds"],
               exact_note=exact.stats["note"], exact_fits=e["fits"],
               ilp_total_s=ilp["total_s"], ilp_status=ilp["status"],
               ilp_seconds=round(ilp["seconds"], 3), ilp_objective_s=ilp["objective_s"],
               ilp_fits=ilp["fits"], ilp_columns=ilp["columns"], ilp_rows=ilp["rows"],
               autoddl_total_s=a["total_s"], autoddl_seconds=a["seconds"], autoddl_fits=a["fits"],
               exact_vs_ilp=_gap(e["total_s"], ilp["total_s"]),
               autoddl_vs_ilp=_gap(a["total_s"], ilp["total_s"]),
               autoddl_vs_exact=_gap(a["total_s"], e["total_s"]))
    optimal = ilp["status"] == "Optimal" and ilp["fits"]
    row["agree"] = bool(row["exact_proved"] and optimal and abs(row["exact_vs_ilp"]) <= REL)
    row["ilp_below_exact"] = bool(ilp["total_s"] is not None and
                                  ilp["total_s"] < e["total_s"] * (1 - REL))
    failed = []
    if row["exact_proved"] and optimal and not row["agree"]:
        failed.append("proved exact != optimal ILP")
    if e["total_s"] > a["total_s"] * (1 + REL):
        failed.append("exact worse than autoddl")
    if optimal and (ilp["total_s"] > min(e["total_s"], a["total_s"]) * (1 + REL) or
                    ilp["total_s"] < row["exact_lower_bound_s"] * (1 - REL)):
        failed.append("optimal ILP outside [exact's lower bound, exact and autoddl]")
    if not (e["fits"] and a["fits"]):
        failed.append("a searcher's answer breaks the memory limit")
    row["failed"] = failed
    log(f"  {key} {mesh}{' (memory)' if binding else ''}: {row['nodes']} nodes; exact "
        f"{e['total_s']:.6g} s proved={row['exact_proved']} ({e['seconds']} s); ILP "
        f"{ilp['total_s']} {ilp['status']} ({row['ilp_seconds']} s); autoddl "
        f"{a['total_s']:.6g} s ({a['seconds']} s){'; FAILED ' + ', '.join(failed) if failed else ''}")
    return row


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--only", default="", help="comma-separated model keys (default: all)")
    parser.add_argument("--binding-only", action="store_true",
                        help="only the rows under a binding memory limit")
    parser.add_argument("--load-before", default="")
    args = parser.parse_args()
    only = set(filter(None, args.only.split(",")))
    started = time.perf_counter()
    rows, errors = [], []

    def log(text):
        print(text, file=sys.stderr, flush=True)

    def save(partial):
        with open("/proc/loadavg") as f:
            load_after = " ".join(f.read().split()[:3])
        result = dict(
            suite="ilp", rows=rows, errors=errors, partial=partial,
            wall_seconds=round(time.perf_counter() - started, 1),
            machine=dict(uname=" ".join(platform.uname()), cpu=cpu_model(), cores=os.cpu_count(),
                         affinity=sorted(os.sched_getaffinity(0)),
                         load_before=args.load_before, load_after=load_after),
            commit=git_commit(), date_utc=datetime.datetime.utcnow().isoformat(timespec="seconds"),
            how_to_rerun="bench/run.sh ilp", exact_time_budget_s=EXACT_BUDGET_S,
            exact_max_table_entries=EXACT_TABLE, ilp_time_limit_s=ILP_TIME_LIMIT_S,
            ilp="bench/ilp_model.py: HiGHS (highspy), one thread, mip_rel_gap = mip_abs_gap = 0",
            summary=dict(graphs=len(rows), agree=sum(r["agree"] for r in rows),
                         exact_proved=sum(r["exact_proved"] for r in rows),
                         ilp_optimal=sum(r["ilp_status"] == "Optimal" for r in rows),
                         failed=sum(bool(r["failed"]) for r in rows)))
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out + ".tmp", "w") as f:
            json.dump(result, f, indent=1)
            f.write("\n")
        os.replace(args.out + ".tmp", args.out)

    for key, mesh, binding in CONFIGS:
        if (only and key not in only) or (args.binding_only and not binding):
            continue
        try:
            rows.append(run_one(key, mesh, binding, log))
        except (ValueError, RuntimeError) as error:
            errors.append(dict(model=key, mesh=mesh, binding=binding, error=str(error)))
            log(f"  {key} {mesh}: ERROR {error}")
        save(partial=True)
    save(partial=False)
    return 1 if errors or any(r["failed"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
