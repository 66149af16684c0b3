"""Draws bench/results/ops.png from bench/results/ops.json: matmul GFLOP/s
(ours through a Session vs oneDNN and OpenBLAS called directly) and GPT
training-step milliseconds (ours vs numpy vs PyTorch), same run, same
threads. Run by bench/run.sh ops; rerun alone with
``.venv/bin/python bench/plot_ops.py``."""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def main() -> int:
    path = os.path.join(HERE, "results", "ops.json")
    with open(path) as f:
        r = json.load(f)
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    names = ["ours (Session)", "oneDNN", "OpenBLAS"]
    values = [r.get("matmul_gflops"), r.get("onednn_gflops"), r.get("openblas_gflops")]
    left.bar(names, [v or 0 for v in values], color=["tab:blue", "tab:gray", "tab:gray"])
    left.set_ylabel("GFLOP/s (higher is better)")
    left.set_title("matmul 1024^3 float32")
    names = ["ours", "numpy", "PyTorch"]
    values = [r.get("gpt_step_ms"), r.get("numpy_gpt_step_ms"), r.get("torch_gpt_step_ms")]
    right.bar(names, [v or 0 for v in values], color=["tab:blue", "tab:gray", "tab:gray"])
    right.set_ylabel("ms per step (lower is better)")
    right.set_title("GPT AdamW step (4 x 256, seq 128, batch 8)")
    fig.suptitle(f"{r.get('threads')} threads, {r['machine']['cpu']}, commit {r.get('commit')}")
    fig.tight_layout()
    out = os.path.join(HERE, "results", "ops.png")
    fig.savefig(out, dpi=100)
    print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
