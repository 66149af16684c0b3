"""Prints the Markdown tables of bench/README.md and README.md from
bench/results/search.json and paper.json (so the figures there are copied
from the results, not typed): search time and predicted step per
configuration, gap_to_exact on the proved rows, and the paper comparison.

    .venv/bin/python bench/summarize_search.py
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from search_bench import _need_bytes  # noqa: E402


def fmt(v, digits=4):
    return "-" if v is None else f"{v:.{digits}g}"


def search_tables(rows):
    configs = []
    for r in rows:
        key = (r["model"], r["layers"], tuple(r["mesh"]))
        if key not in configs:
            configs.append(key)
    print("| model | layers | mesh | ops | candidates | autoddl s | exact s (proved) | ILP s "
          "(status) | predicted step s: autoddl / exact / best expert (which) | gap_to_exact |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for key in configs:
        group = {r["searcher"]: r for r in rows
                 if (r["model"], r["layers"], tuple(r["mesh"])) == key}
        a, e, i = group.get("autoddl", {}), group.get("exact", {}), group.get("ilp")
        if a.get("fits") is False and not a.get("predicted_step_s"):
            need = a.get("smallest_need_bytes") or _need_bytes(a.get("error", ""))
            print(f"| {key[0]} | {key[1]} | {list(key[2])} | - | - | - | - | - | nothing fits: "
                  f"needs {need / 2**30:.1f} GiB per device | - |" if need else
                  f"| {key[0]} | {key[1]} | {list(key[2])} | - | - | - | - | - | nothing fits | - |")
            continue
        experts = [r for s, r in group.items() if s not in ("autoddl", "exact", "ilp")
                   and r.get("predicted_step_s")]
        best = min(experts, key=lambda r: r["predicted_step_s"]) if experts else None
        best_text = f"{fmt(best['predicted_step_s'])} ({best['searcher']})" if best else \
            "none fits"
        proved = "yes" if e.get("exact_proved") else "no"
        gap = a.get("gap_to_exact")
        print(f"| {key[0]} | {key[1]} | {list(key[2])} | {a.get('ops', '-')} | "
              f"{fmt(a.get('candidates'), 3)} | {fmt(a.get('seconds'), 3)} | "
              f"{fmt(e.get('seconds'), 3)} ({proved}) | "
              f"{fmt(i.get('search_seconds'), 3) + ' (' + i['ilp_status'] + ')' if i else '-'} | "
              f"{fmt(a.get('predicted_step_s'))} / "
              f"{fmt(e.get('predicted_step_s'))} / {best_text} | "
              f"{'-' if gap is None else f'{gap:.4f}'} |")


def scale_table(rows):
    print("| what | devices | seconds (median of runs) | CPU s | predicted step s |")
    print("|---|---|---|---|---|")
    for r in rows:
        if "command" in r:
            print(f"| `{r['command'].replace('python -m oneflow_lite.train ', 'train ')}` | - | "
                  f"{fmt(r['seconds'], 3)} {r['seconds_runs']} | - | - |")
        else:
            print(f"| autoddl + cost model, gpt {r['layers']} layers {r['mesh']}, "
                  f"{r.get('batch_note', '')} | {r['devices']} | {fmt(r['seconds'], 3)} "
                  f"{r['seconds_runs']} | {fmt(r.get('cpu_seconds'), 3)} | "
                  f"{fmt(r['predicted_step_s'])} |")


def paper_table(rows):
    print("| model | cluster, mesh | best expert (step s) | autoddl step s | reduction | "
          "paper's reduction |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        red = r.get("reduction")
        print(f"| {r['model']} (batch {r['batch']}) | {r['cluster']} {r['mesh']} | "
              f"{r.get('expert')} ({fmt(r.get('expert_step_s'))}) | {fmt(r.get('autoddl_step_s'))} | "
              f"{'-' if red is None else f'{100 * red:.1f} %'} | "
              f"{100 * r['paper_reduction']:.1f} % |")


def main() -> int:
    for name, fn in (("search.json", search_tables), ("paper.json", paper_table)):
        path = os.path.join(HERE, "results", name)
        if os.path.exists(path):
            with open(path) as f:
                result = json.load(f)
            fn(result["rows"])
            print()
            if result.get("scale_rows"):
                scale_table(result["scale_rows"])
                print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
