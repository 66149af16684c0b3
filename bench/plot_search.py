"""Draws bench/results/search_time.png (search seconds against graph size,
per searcher, with the 1 s goal) and bench/results/search_step.png
(predicted step time per searcher, per model/layers/mesh, relative to the
best searcher of that configuration) from bench/results/search.json; and
bench/results/paper.png (expert vs autoddl, ours beside the paper's
reduction) from bench/results/paper.json when it exists. Run by
bench/run.sh search / paper; rerun alone with
``.venv/bin/python bench/plot_search.py``."""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
COLORS = {"autoddl": "tab:blue", "exact": "tab:green", "data_parallel": "tab:gray",
          "megatron": "tab:orange", "2d": "tab:purple", "zero": "tab:olive",
          "vgg": "tab:brown"}


def plot_time(rows, out):
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for searcher, color in COLORS.items():
        pts = [(r["ops"], r["seconds"]) for r in rows
               if r["searcher"] == searcher and r.get("ops") and r.get("seconds")]
        if pts:
            xs, ys = zip(*sorted(pts))
            ax.scatter(xs, ys, label=searcher, color=color, s=18)
    ax.axhline(1.0, color="tab:red", ls="--", lw=1, label="goal: autoddl <= 1 s")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("ops in the graph (forward, backward, optimizer)")
    ax.set_ylabel("seconds, graph to Strategy (one core)")
    ax.set_title("search time against graph size")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def plot_step(rows, out):
    configs = []
    for r in rows:
        key = (r["model"], r["layers"], tuple(r["mesh"]))
        if key not in configs:
            configs.append(key)
    searchers = [s for s in COLORS if any(r["searcher"] == s for r in rows)]
    fig, ax = plt.subplots(figsize=(max(8, 0.55 * len(configs) * 1.2), 5))
    width = 0.8 / max(1, len(searchers))
    for i, s in enumerate(searchers):
        xs, ys = [], []
        for j, key in enumerate(configs):
            group = [r for r in rows if (r["model"], r["layers"], tuple(r["mesh"])) == key]
            best = min((r["predicted_step_s"] for r in group if r.get("predicted_step_s")),
                       default=None)
            mine = next((r.get("predicted_step_s") for r in group if r["searcher"] == s), None)
            if best and mine:
                xs.append(j + (i - len(searchers) / 2 + 0.5) * width)
                ys.append(mine / best)
        ax.bar(xs, ys, width=width, color=COLORS[s], label=s)
    ax.set_xticks(range(len(configs)))
    ax.set_xticklabels([f"{m} L{l}\n{list(mesh)}" for m, l, mesh in configs], fontsize=7,
                       rotation=60)
    ax.set_yscale("log")
    ax.set_ylabel("predicted step / best of the configuration")
    ax.set_title("predicted step time per searcher (lower is better; 1 = best)")
    ax.legend(fontsize=8, ncol=3)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def plot_paper(rows, out):
    fig, ax = plt.subplots(figsize=(7, 4))
    names = [f"{r['model']}\n{r['cluster']} {r['mesh']}" for r in rows]
    ours = [100 * (r.get("reduction") or 0) for r in rows]
    sources = [100 * (r.get("reduction_vs_sources") or 0) for r in rows]
    paper = [100 * r["paper_reduction"] for r in rows]
    xs = range(len(rows))
    ax.bar([x - 0.27 for x in xs], ours, width=0.27, label="ours vs rule-based presets (predicted)",
           color="tab:blue")
    ax.bar(list(xs), sources, width=0.27, label="ours vs source presets (predicted)",
           color="tab:cyan")
    ax.bar([x + 0.27 for x in xs], paper, width=0.27, label="AutoDDL paper (measured)",
           color="tab:gray")
    ax.set_xticks(list(xs))
    ax.set_xticklabels(names, fontsize=8)
    ax.set_ylabel("step time reduction over the best expert, %")
    ax.set_title("autoddl against the best expert preset")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def main() -> int:
    results = os.path.join(HERE, "results")
    search = os.path.join(results, "search.json")
    if os.path.exists(search):
        with open(search) as f:
            rows = json.load(f)["rows"]
        plot_time(rows, os.path.join(results, "search_time.png"))
        plot_step(rows, os.path.join(results, "search_step.png"))
    paper = os.path.join(results, "paper.json")
    if os.path.exists(paper):
        with open(paper) as f:
            plot_paper(json.load(f)["rows"], os.path.join(results, "paper.png"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
