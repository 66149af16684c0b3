"""Draws bench/results/fidelity.png from bench/results/fidelity.json:
predicted against measured step time per strategy (log-log, with the
spearman rank correlation), and predicted beside measured bytes per rank.
Run by bench/run.sh fidelity; rerun alone with
``.venv/bin/python bench/plot_fidelity.py``."""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def main() -> int:
    with open(os.path.join(HERE, "results", "fidelity.json")) as f:
        r = json.load(f)
    rows = r["rows"]
    if not rows:
        print("plot_fidelity: no rows", file=sys.stderr)
        return 1
    fig, (ax_time, ax_bytes) = plt.subplots(1, 2, figsize=(12, 4.5))
    pred = np.array([row["predicted_step_s"] for row in rows])
    meas = np.array([row["measured_step_s"] for row in rows])
    ax_time.scatter(pred, meas)
    for row, x, y in zip(rows, pred, meas):
        ax_time.annotate(row["strategy"], (x, y), textcoords="offset points", xytext=(4, 4),
                         fontsize=8)
    ax_time.set_xscale("log")
    ax_time.set_yscale("log")
    ax_time.set_xlabel("predicted step time (s)")
    ax_time.set_ylabel("measured step time (s, median)")
    ax_time.set_title(f"step time, spearman {r.get('spearman', float('nan')):.2f}")
    ax_time.grid(alpha=0.3, which="both")
    names = [row["strategy"] for row in rows]
    x = np.arange(len(rows))
    ax_bytes.bar(x - 0.2, [max(row["predicted_bytes"]) / 2**20 for row in rows], 0.4,
                 label="predicted")
    ax_bytes.bar(x + 0.2, [max(row["measured_bytes"]) / 2**20 for row in rows], 0.4,
                 label="measured")
    ax_bytes.set_xticks(x, names, rotation=20)
    ax_bytes.set_ylabel("MiB sent per step (busiest rank)")
    ax_bytes.set_title("bytes per rank: " + ("equal" if r["goals"]["bytes_equal"] else
                                              "NOT equal"))
    ax_bytes.legend()
    fig.suptitle(f"GPT {r['model']['n_layer']}x{r['model']['n_embd']}, batch "
                 f"{r['model']['batch']}, mesh {r['hierarchy']}, calibrated local cluster",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(os.path.join(HERE, "results", "fidelity.png"), dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main())
