"""torch_gpt: the GPT step of bench/ops_gpt.py in PyTorch on CPU.

Same model as ``oneflow_lite.models.GPT`` (pre-LayerNorm, exact GELU,
causal attention with the additive -1e9 mask, head without bias, tied
nothing), written with torch.nn.functional over the parameters of its
state_dict: the same names, the same [out, in] Linear layout and the same
initial values (ops_gpt.make_model, so seed ``ops_gpt.SEED``); same batches
and AdamW hyper-parameters. Prints {"torch_gpt_step_ms", "first_loss"}.
Run by ops_gpt.py; needs torch importable by the interpreter that runs it
(and oneflow_lite, for the initial weights).
"""
from __future__ import annotations

import argparse
import json
import math
import time

import numpy as np
import torch
import torch.nn.functional as F

from ops_gpt import HYPER, batches, make_model


def forward(p, ids, labels, cfg):
    """Mean cross-entropy of the GPT with parameters ``p`` (state_dict keys)."""
    b, t = ids.shape
    d, h, eps = cfg.n_embd, cfg.n_head, cfg.layer_norm_epsilon
    x = p["wte.weight"][ids] + p["wpe.weight"][:t]                       # [B, T, D]
    mask = torch.triu(torch.full((t, t), -1e9), diagonal=1)
    for i in range(cfg.n_layer):
        q = f"h.{i}."
        a = F.layer_norm(x, (d,), p[q + "ln1.weight"], p[q + "ln1.bias"], eps)
        qkv = F.linear(a, p[q + "attn.qkv.weight"], p[q + "attn.qkv.bias"])
        qkv = qkv.reshape(b, t, h, 3, d // h)          # head-major, as nn.CausalSelfAttention
        qh, kh, vh = (qkv[:, :, :, j].transpose(1, 2) for j in range(3))
        att = torch.softmax(qh @ kh.transpose(-1, -2) / math.sqrt(d // h) + mask, dim=-1)
        y = (att @ vh).transpose(1, 2).reshape(b, t, d)
        x = x + F.linear(y, p[q + "attn.proj.weight"], p[q + "attn.proj.bias"])
        m = F.layer_norm(x, (d,), p[q + "ln2.weight"], p[q + "ln2.bias"], eps)
        m = F.gelu(F.linear(m, p[q + "mlp.fc.weight"], p[q + "mlp.fc.bias"]))
        x = x + F.linear(m, p[q + "mlp.proj.weight"], p[q + "mlp.proj.bias"])
    x = F.layer_norm(x, (d,), p["ln_f.weight"], p["ln_f.bias"], eps)
    logits = F.linear(x, p["head.weight"])                              # [B, T, V]
    return F.cross_entropy(logits.reshape(b * t, -1), labels.reshape(-1))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--steps", type=int, default=7)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    model = make_model()
    cfg = model.config
    p = {k: torch.tensor(v.numpy(), requires_grad=True) for k, v in model.state_dict().items()}
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
