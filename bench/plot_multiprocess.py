"""Draws bench/results/multiprocess.png from bench/results/multiprocess.json:
all-reduce bus GB/s by process count (ours, the plain-socket ring, Gloo's two
rings, one TCP stream), every round as a dot over the median bar; and
data-parallel GPT samples/s on 1 and 2 processes with the speedup; and ours
beside PyTorch DDP on 1, 2 and 4 processes and 2 emulated nodes. Run by
bench/run.sh multiprocess; rerun alone with
``.venv/bin/python bench/plot_multiprocess.py``."""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
METHODS = [("ofl", "ours", "tab:blue"), ("socket_ring", "socket ring", "tab:green"),
           ("gloo_ring", "Gloo ring", "tab:orange"),
           ("gloo_ring_chunked", "Gloo ring chunked", "tab:red"),
           ("loopback", "1 TCP stream\n(payload GB/s)", "tab:gray")]


def allreduce_panel(ax, r):
    parts = r.get("multiprocess_allreduce") or {}
    counts = sorted((p for p in parts if parts[p]), key=int)
    width = 0.8 / len(METHODS)
    for i, (key, label, color) in enumerate(METHODS):
        xs = [c + (i - len(METHODS) / 2 + 0.5) * width for c in range(len(counts))]
        med = [parts[p]["median_gbps"][key] for p in counts]
        ax.bar(xs, med, width, color=color, label=label)
        for x, p in zip(xs, counts):
            dots = [rd["gbps"][key] for rd in parts[p].get("rounds_detail", [])]
            ax.plot([x] * len(dots), dots, "k.", ms=3)
        for x, v in zip(xs, med):
            ax.annotate(f"{v:.2f}", (x, v), ha="center", va="bottom", fontsize=7)
    ax.set_xticks(range(len(counts)))
    ax.set_xticklabels([f"{p} processes" + (" (2 per core)" if parts[p]["oversubscribed"]
                                             else "") for p in counts])
    ax.set_ylabel("bus GB/s (higher is better)")
    rounds = parts[counts[0]]["rounds"] if counts else 0
    ax.set_title(f"all-reduce 64 MiB float32 over TCP loopback\nmedian of {rounds} interleaved "
                 "rounds (dots: each round)")
    ax.legend(fontsize=7)


def dp_panel(ax, r):
    dp = r.get("multiprocess_dp") or {}
    sps = dp.get("samples_per_s") or {}
    med = dp.get("median_samples_per_s") or {}
    names = ["1 process\n1 thread", "2 processes\ndata_parallel\nplan", "2 processes\n"
             "batch pinned\nS(0)", "1 process\n8 samples\na step"]
    keys = ["single", "dp2", "dp2_pinned", "half"]
    ax.bar(names, [med.get(k, 0) for k in keys],
           color=["tab:gray", "tab:blue", "tab:cyan", "lightgray"])
    for i, k in enumerate(keys):
        ax.plot([i] * len(sps.get(k, [])), sps.get(k, []), "k.", ms=3)
        ax.annotate(f"{med.get(k, 0):.1f}", (i, med.get(k, 0)), ha="center", va="bottom",
                    fontsize=8)
    ax.tick_params(axis="x", labelsize=7)
    ax.set_ylabel("samples/s (higher is better)")
    speedup, pinned = dp.get("dp2_speedup") or 0, dp.get("dp2_pinned_speedup") or 0
    ax.set_title(f"GPT AdamW, global batch 16, 1 thread per process\nspeedup {speedup:.2f} / "
                 f"pinned {pinned:.2f} (goal >= 1.8), ceiling {dp.get('compute_ceiling') or 0:.2f}",
                 fontsize=9)


PEER_SETTINGS = [("1", "1 process", "single", "torch1"), ("2", "2 processes", "dp2", "ddp2"),
                 ("4", "4 processes\n(2 per core)", "dp4", "ddp4"),
                 ("emulated2", "2 emulated\nnodes", "emu2", "ddp_emu2")]


def peer_panel(ax, r):
    dp = r.get("multiprocess_dp") or {}
    sps, med = dp.get("samples_per_s") or {}, dp.get("median_samples_per_s") or {}
    ratio = dp.get("ours_over_peer") or {}
    rows = [s for s in PEER_SETTINGS if s[2] in med and s[3] in med]
    for j, (side, color, label) in enumerate(((2, "tab:blue", "ours"),
                                              (3, "tab:orange", "PyTorch DDP (torchrun, Gloo)"))):
        xs = [i + (j - 0.5) * 0.38 for i in range(len(rows))]
        ys = [med[row[side]] for row in rows]
        ax.bar(xs, ys, 0.38, color=color, label=label)
        for x, row in zip(xs, rows):
            ax.plot([x] * len(sps[row[side]]), sps[row[side]], "k.", ms=3)
    for i, row in enumerate(rows):
        top = max(med[row[2]], med[row[3]])
        if ratio.get(row[0]) is not None:
            ax.annotate(f"{ratio[row[0]]:.2f}x", (i, top), ha="center", va="bottom", fontsize=8)
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels([row[1] for row in rows], fontsize=7)
    ax.set_ylabel("samples/s (higher is better)")
    ax.set_title("GPT AdamW, global batch 16, 1 thread per process:\nours vs PyTorch DDP "
                 "(label: ours / DDP, median of rounds; goal >= 1)", fontsize=9)
    ax.legend(fontsize=7)


def main() -> int:
    path = os.path.join(HERE, "results", "multiprocess.json")
    with open(path) as f:
        r = json.load(f)
    fig, axes = plt.subplots(1, 3, figsize=(18, 4.8),
                             gridspec_kw={"width_ratios": [2, 1.2, 1.4]})
    allreduce_panel(axes[0], r)
    dp_panel(axes[1], r)
    peer_panel(axes[2], r)
    m = r.get("machine", {})
    fig.suptitle(f"{m.get('cpu')}, {m.get('cores')} cores, load {m.get('loadavg_before')} "
                 f"(before) / {m.get('loadavg_after')} (after), commit {r.get('commit')}",
                 fontsize=9)
    fig.tight_layout()
    out = os.path.join(HERE, "results", "multiprocess.png")
    fig.savefig(out, dpi=100)
    print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
