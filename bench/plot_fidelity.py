"""Draws bench/results/fidelity.png from bench/results/fidelity.json:
left, predicted against measured step time per strategy of the headline
setting (2 processes; log-log, spearman in the title, the y = x line);
middle, the same for every setting (procs2, procs4, virtual4) by marker;
right, predicted against measured peak memory per rank of the headline
setting. Run by bench/run.sh fidelity; rerun alone with
``.venv/bin/python bench/plot_fidelity.py [JSON [PNG]]``."""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
MARKERS = {"procs2": "o", "procs4": "s", "virtual4": "^", "emulated2": "D", "emulated4": "v"}


def diagonal(ax, values) -> None:
    lo, hi = min(values), max(values)
    ax.plot([lo, hi], [lo, hi], color="grey", linewidth=0.8, linestyle=":", label="y = x")


def main() -> int:
    source = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "results", "fidelity.json")
    target = sys.argv[2] if len(sys.argv) > 2 else os.path.join(HERE, "results", "fidelity.png")
    with open(source) as f:
        r = json.load(f)
    rows = r["rows"]
    if not rows:
        print("plot_fidelity: no rows", file=sys.stderr)
        return 1
    fig, (ax_time, ax_modes, ax_mem) = plt.subplots(1, 3, figsize=(16, 5))
    for model in sorted({row["model"] for row in rows}):
        sub = [row for row in rows if row["model"] == model]
        pred = np.array([row["predicted_step_s"] for row in sub])
        meas = np.array([row["measured_step_s"] for row in sub])
        ax_time.scatter(pred, meas, label=model)
        for row, x, y in zip(sub, pred, meas):
            ax_time.annotate(row["strategy"], (x, y), textcoords="offset points",
                             xytext=(3, 3), fontsize=7)
    every = [row["predicted_step_s"] for row in rows] + [row["measured_step_s"] for row in rows]
    diagonal(ax_time, every)
    head = r["modes"][r["headline"]]
    ax_time.set_title(f"{r['headline']} ({head['processes']} processes x "
                      f"{head['threads_per_process']} thread): spearman "
                      f"{r.get('spearman') or float('nan'):.2f}, bytes "
                      + ("equal" if r["goals"]["bytes_equal"] else "NOT equal"), fontsize=9)
    for name, mode in r["modes"].items():
        pred = [row["predicted_step_s"] for row in mode["rows"]]
        meas = [row["measured_step_s"] for row in mode["rows"]]
        ax_modes.scatter(pred, meas, marker=MARKERS.get(name, "x"),
                         label=f"{name} (spearman {mode.get('spearman') or float('nan'):.2f})")
    ax_modes.set_title("every setting", fontsize=9)
    pm = [max(row["predicted_memory_bytes"]) / 2**20 for row in rows]
    mm = [max(row["peak_bytes"]) / 2**20 for row in rows]
    ax_mem.scatter(pm, mm)
    diagonal(ax_mem, pm + mm)
    ax_mem.set_xlabel("predicted memory per rank (MiB)")
    ax_mem.set_ylabel("measured peak per rank (MiB, busiest rank)")
    ax_mem.set_title(f"{r['headline']}: peak memory", fontsize=9)
    for ax in (ax_time, ax_modes):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("predicted step time (s, full model)")
        ax.set_ylabel("measured step time (s, median)")
    for ax in (ax_time, ax_modes, ax_mem):
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=7)
    load = head.get("load_before")
    fig.suptitle(f"models {', '.join(r['models'])}; calibrated local cluster; "
                 f"{r['rounds']} rounds; load average before "
                 + (" ".join(f"{x:.1f}" for x in load) if load else "?"), fontsize=10)
    fig.tight_layout()
    fig.savefig(target, dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main())
