"""Draws bench/results/runtime.png from bench/results/runtime.json: the
actor runtime's cost per act and per hop, all-reduce efficiency by device
count, the loader/compute pipeline's step times with 1 and 2 slots, and
data-parallel GPT throughput; goals as dashed lines. Run by
bench/run.sh runtime; rerun alone with ``.venv/bin/python bench/plot_runtime.py``."""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def bars(ax, names, values, colors, fmt):
    values = [v if v is not None else 0 for v in values]
    rects = ax.bar(names, values, color=colors)
    for rect, v in zip(rects, values):
        ax.annotate(fmt.format(v), (rect.get_x() + rect.get_width() / 2, rect.get_height()),
                    ha="center", va="bottom", fontsize=8)


def main() -> int:
    path = os.path.join(HERE, "results", "runtime.json")
    with open(path) as f:
        r = json.load(f)
    fig, axes = plt.subplots(1, 4, figsize=(16, 4))

    ax = axes[0]
    actor = r.get("runtime_actor") or {}
    bars(ax, ["per act", "per hop\n(block)", "per hop\n(spin 50us)"],
         [r.get("actor_us_per_act"), r.get("actor_us_per_hop"),
          actor.get("actor_us_per_hop_spin")], ["tab:blue", "tab:gray", "tab:gray"], "{:.2f}")
    ax.axhline(2.0, color="tab:red", ls="--", lw=1, label="goal per act <= 2")
    ax.set_ylabel("microseconds (lower is better)")
    ax.set_title("actor runtime overhead")
    ax.legend(fontsize=8)

    ax = axes[1]
    eff = r.get("allreduce_efficiency") or {}
    keys = sorted(eff, key=int)
    bars(ax, [f"{k} devices" for k in keys], [eff[k] for k in keys], "tab:blue", "{:.2f}")
    ax.axhline(0.7, color="tab:red", ls="--", lw=1, label="goal >= 0.7")
    ax.set_ylim(0, 1.1)
    ax.set_ylabel("memcpy bound / measured (higher is better)")
    ax.set_title(f"all-reduce 64 MiB float32\n(memcpy {r.get('memcpy_gbps') or 0:.1f} GB/s, "
                 "2 threads)")
    ax.legend(fontsize=8)

    ax = axes[2]
    steps = r.get("pipeline_step_ms") or {}
    bars(ax, ["load\nalone", "compute\nalone", "1 slot", "2 slots"],
         [steps.get("load"), steps.get("compute"), steps.get("1slot"), steps.get("2slots")],
         ["tab:gray", "tab:gray", "tab:orange", "tab:blue"], "{:.1f}")
    ax.set_ylabel("ms per step (lower is better)")
    ax.set_title(f"loader + matmul chain, 1 core each\n"
                 f"pipeline_ratio {r.get('pipeline_ratio') or 0:.2f} (goal <= 1.1)")

    ax = axes[3]
    sps = r.get("dp_samples_per_s") or {}
    bars(ax, ["Session\n1 device", "Dist.\n1 rank", "Dist.\n2 (DP)", "Dist. 2,\nids S(0)",
              "Dist.\n4 (DP)"],
         [sps.get("session"), sps.get("dist1"), sps.get("dist2"), sps.get("dist2_ids"),
          sps.get("dist4")],
         ["tab:gray", "tab:gray", "tab:blue", "tab:gray", "tab:blue"], "{:.1f}")
    ax.set_ylabel("samples/s (higher is better)")
    ax.set_title(f"GPT AdamW, batch 16, 2 threads in total\n"
                 f"dp2_speedup {r.get('dp2_speedup') or 0:.2f}, "
                 f"dp4_speedup {r.get('dp4_speedup') or 0:.2f}")

    m = r.get("machine", {})
    reused = r.get("reused_parts") or {}
    note = "".join(f"; {k.replace('runtime_', '')} from {v.get('commit')}"
                   for k, v in reused.items())
    fig.suptitle(f"{m.get('cpu')}, {m.get('cores')} cores, load {m.get('loadavg_before')} "
                 f"(before), commit {r.get('commit')}{note}", fontsize=10)
    fig.tight_layout()
    out = os.path.join(HERE, "results", "runtime.png")
    fig.savefig(out, dpi=100)
    print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
