"""gpu_gpt: one GPT-2-small training step on one GPU, ours against PyTorch.

Model: 12 layers, hidden 768, 12 heads, sequence 1024, batch 8, vocabulary
50257, pre-LayerNorm, GELU, tied nothing; AdamW (lr 1e-4). Both sides run
with bfloat16 autocast over float32 master weights, TF32 off. PyTorch runs
eager with its default attention (F.scaled_dot_product_attention, causal).
Timing: mean wall time of ``--steps`` steps after ``--warmup`` steps, each
step ended by torch.cuda.synchronize() (ours: the runtime's Run returns after
the step's streams finished).

Prints one JSON object: {"torch_step_ms", "ours_step_ms", "speedup",
"torch_first_loss", "ours_first_loss", "ours_autocast_bf16", "torch_error",
"ours_error", "device"}; a side that cannot run gives null and its error.
Ours is an nn.Graph on flow.placement("cuda", [0]); it runs in float32 until
the graph config offers bfloat16 autocast (ours_autocast_bf16 says which). Run by ``bench/run.sh gpu``.
"""
from __future__ import annotations

import argparse
import json
import time

CFG = dict(n_layer=12, n_embd=768, n_head=12, seq=1024, batch=8, vocab=50257)


def torch_step_ms(warmup: int, steps: int):
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(0)
    d, h = CFG["n_embd"], CFG["n_head"]

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

        def forward(self, x):
            b, t, _ = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
            q, k, v = (z.view(b, t, h, d // h).transpose(1, 2) for z in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))
            return x + self.out(F.gelu(self.fc(self.ln2(x))))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(CFG["vocab"], d)
            self.wpe = nn.Embedding(CFG["seq"], d)
            self.blocks = nn.ModuleList(Block() for _ in range(CFG["n_layer"]))
            self.ln = nn.LayerNorm(d)
            self.head = nn.Linear(d, CFG["vocab"], bias=False)

        def forward(self, ids, labels):
            x = self.wte(ids) + self.wpe(torch.arange(ids.shape[1], device=ids.device))
            for blk in self.blocks:
                x = blk(x)
            logits = self.head(self.ln(x))
            return F.cross_entropy(logits.float().view(-1, logits.shape[-1]), labels.view(-1))

    dev = torch.device("cuda")
    model = GPT().to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    gen = torch.Generator(device="cpu").manual_seed(0)
    ids = torch.randint(0, CFG["vocab"], (CFG["batch"], CFG["seq"]), generator=gen).to(dev)
    labels = torch.randint(0, CFG["vocab"], (CFG["batch"], CFG["seq"]), generator=gen).to(dev)

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(ids, labels)
        loss.backward()
        opt.step()
        return loss

    first = float(step())
    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / steps * 1e3, first, torch.cuda.get_device_name()


def ours_step_ms(warmup: int, steps: int):
    """Our GPT in an nn.Graph on flow.placement("cuda", [0]); bfloat16 autocast
    when the graph config offers it (``set_autocast``), else float32 (the
    JSON says which). Raises what stops it."""
    import numpy as np
    import oneflow_lite as flow
    from oneflow_lite.models import GPTConfig

    cfg = GPTConfig(vocab_size=CFG["vocab"], seq_len=CFG["seq"], n_embd=CFG["n_embd"],
                    n_layer=CFG["n_layer"], n_head=CFG["n_head"])
    flow.manual_seed(0)
    model = flow.models.create("gpt", cfg)

    class Step(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model
            self.add_optimizer(flow.optim.AdamW(model.named_parameters(), lr=1e-4))

        def build(self, ids, labels):
            return flow.nn.functional.cross_entropy(self.model(ids), labels)

    graph = Step()
    graph.config.auto_parallel(cluster="h100_8gpu", searcher="data_parallel",
                               placement=flow.placement("cuda", [0]))
    autocast = hasattr(graph.config, "set_autocast")
    if autocast:
        graph.config.set_autocast("bfloat16")
    rng = np.random.default_rng(0)
    ids = rng.integers(0, CFG["vocab"], (CFG["batch"], CFG["seq"]))
    labels = rng.integers(0, CFG["vocab"], (CFG["batch"], CFG["seq"]))
    first = float(graph(ids, labels).numpy())
    for _ in range(warmup):
        graph(ids, labels)
    start = time.perf_counter()
    for _ in range(steps):
        graph(ids, labels).numpy()
    return (time.perf_counter() - start) / steps * 1e3, first, autocast


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--steps", type=int, default=10)
    args = parser.parse_args()
    out = {"config": CFG, "torch_step_ms": None, "ours_step_ms": None, "speedup": None,
           "torch_first_loss": None, "ours_first_loss": None, "torch_error": None,
           "ours_error": None, "ours_autocast_bf16": None, "device": None}
    try:
        out["torch_step_ms"], out["torch_first_loss"], out["device"] = torch_step_ms(
            args.warmup, args.steps)
    except Exception as e:  # noqa: BLE001 - the bench reports any failure in its JSON
        out["torch_error"] = f"{type(e).__name__}: {e}"
    try:
        out["ours_step_ms"], out["ours_first_loss"], out["ours_autocast_bf16"] = ours_step_ms(
            args.warmup, args.steps)
    except Exception as e:  # noqa: BLE001
        out["ours_error"] = f"{type(e).__name__}: {e}"
    if out["torch_step_ms"] and out["ours_step_ms"]:
        out["speedup"] = out["torch_step_ms"] / out["ours_step_ms"]
    print(json.dumps(out))
    return 0 if out["ours_error"] is None and out["torch_error"] is None else 1


if __name__ == "__main__":
    raise SystemExit(main())
