"""torch_gpt: the GPT step of bench/ops_gpt.py in PyTorch on CPU.

Same model (pre-LayerNorm, exact GELU, causal attention, tied nothing), same
initial weights (oneflow_lite.models.gpt.init_params, seed 0), same batches
and AdamW hyper-parameters. Prints {"torch_gpt_step_ms", "first_loss"}.
Run by ops_gpt.py; needs torch importable by the interpreter that runs it.
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np
import torch

from oneflow_lite.models import gpt
from ops_gpt import BATCH, CONFIG, HYPER, batches


def forward(p, ids, labels, cfg):
    b, t = ids.shape
    d, h = cfg.n_embd, cfg.n_head
    x = (p["wte"][ids] + p["wpe"][:t]).reshape(b * t, d)
    mask = torch.triu(torch.full((t, t), -1e9), diagonal=1)
    for i in range(cfg.n_layer):
        a = torch.nn.functional.layer_norm(x, (d,), p[f"h{i}.ln1.gamma"], p[f"h{i}.ln1.beta"], 1e-5)
        qkv = a @ p[f"h{i}.attn.qkv.weight"] + p[f"h{i}.attn.qkv.bias"]
        q, k, v = (qkv[:, j * d:(j + 1) * d].reshape(b, t, h, d // h).transpose(1, 2) for j in range(3))
        att = torch.softmax(q @ k.transpose(-1, -2) / (d // h) ** 0.5 + mask, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b * t, d)
        x = x + y @ p[f"h{i}.attn.proj.weight"] + p[f"h{i}.attn.proj.bias"]
        m = torch.nn.functional.layer_norm(x, (d,), p[f"h{i}.ln2.gamma"], p[f"h{i}.ln2.beta"], 1e-5)
        m = torch.nn.functional.gelu(m @ p[f"h{i}.mlp.fc.weight"] + p[f"h{i}.mlp.fc.bias"])
        x = x + m @ p[f"h{i}.mlp.proj.weight"] + p[f"h{i}.mlp.proj.bias"]
    x = torch.nn.functional.layer_norm(x, (d,), p["ln_f.gamma"], p["ln_f.beta"], 1e-5)
    logits = x @ p["head.weight"]
    return torch.nn.functional.cross_entropy(logits, labels.reshape(-1))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--steps", type=int, default=7)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    cfg = gpt.GPTConfig(**CONFIG)
    init = gpt.init_params(cfg, seed=0)
    p = {k: torch.tensor(v, requires_grad=True) for k, v in init.items() if k != gpt.CAUSAL_MASK}
    opt = torch.optim.AdamW(p.values(), **HYPER)
    times, losses = [], []
    for ids, labels in batches(args.warmup + args.steps):
        t0 = time.perf_counter()
        opt.zero_grad()
        loss = forward(p, torch.tensor(ids), torch.tensor(labels), cfg)
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
        losses.append(float(loss))
    print(json.dumps({"torch_gpt_step_ms": 1e3 * float(np.median(times[args.warmup:])),
                      "first_loss": losses[0]}))


if __name__ == "__main__":
    main()
