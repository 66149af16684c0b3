"""Draws bench/results/ops.png from bench/results/ops.json: matmul GFLOP/s
(ours through a Session vs oneDNN and OpenBLAS called directly), GPT
training-step milliseconds (our nn.Graph and eager vs PyTorch eager vs
numpy, same run, same threads) and the one-step profiles of our graph and
PyTorch by coarse op group (bench/op_profile.category). Run by bench/run.sh
ops; rerun alone with ``.venv/bin/python bench/plot_ops.py``."""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def bars(ax, names, values, colors, ylabel, title):
    ax.bar(names, [v or 0 for v in values], color=colors)
    for i, v in enumerate(values):
        if v:
            ax.text(i, v, f"{v:.0f}", ha="center", va="bottom", fontsize=8)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)


def profile_panel(ax, r):
    prof = r.get("profile_top") or {}
    ours = (prof.get("ours_graph") or {}).get("by_category_ms", {})
    torch = (prof.get("torch_eager") or {}).get("by_category_ms", {})
    groups = sorted(set(ours) | set(torch), key=lambda g: -max(ours.get(g, 0), torch.get(g, 0)))
    y = range(len(groups))
    ax.barh([i - 0.2 for i in y], [ours.get(g, 0) for g in groups], 0.4, label="ours (graph)",
            color="tab:blue")
    ax.barh([i + 0.2 for i in y], [torch.get(g, 0) for g in groups], 0.4, label="PyTorch",
            color="tab:gray")
    ax.set_yticks(list(y), groups, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("ms in one profiled step")
    ax.set_title("where the step's time goes (by op group)", fontsize=10)
    ax.legend(fontsize=8)


def main() -> int:
    path = os.path.join(HERE, "results", "ops.json")
    with open(path) as f:
        r = json.load(f)
    fig, (left, mid, right) = plt.subplots(1, 3, figsize=(15, 4.5))
    bars(left, ["ours (Session)", "oneDNN", "OpenBLAS"],
         [r.get("matmul_gflops"), r.get("onednn_gflops"), r.get("openblas_gflops")],
         ["tab:blue", "tab:gray", "tab:gray"], "GFLOP/s (higher is better)",
         "matmul 1024^3 float32")
    bars(mid, ["ours graph", "ours eager", "PyTorch", "numpy"],
         [r.get("gpt_step_ms"), r.get("eager_gpt_step_ms"), r.get("torch_gpt_step_ms"),
          r.get("numpy_gpt_step_ms")],
         ["tab:blue", "tab:cyan", "tab:gray", "tab:gray"], "ms per step (lower is better)",
         "GPT AdamW step (4 x 256, seq 128, batch 8)")
    profile_panel(right, r)
    m = r["machine"]
    fig.suptitle(f"{r.get('threads')} threads, {m['cpu']}, load {m['loadavg_before']} -> "
                 f"{m['loadavg_after']} (shared machine), commit {r.get('commit')}", fontsize=10)
    fig.tight_layout()
    out = os.path.join(HERE, "results", "ops.png")
    fig.savefig(out, dpi=100)
    print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
