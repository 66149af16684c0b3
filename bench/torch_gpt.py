"""torch_gpt: the GPT step of bench/ops_gpt.py in PyTorch on CPU, one fresh
process per call, as a PyTorch user runs it.

Run by ops_gpt.py with the peer's own interpreter (bench/run.sh makes
``.venv-torch``) in an environment that carries none of oneflow_lite's
settings (ops_gpt.clean_env: no OMP_WAIT_POLICY, no thread-count variables,
no PYTHONPATH); it imports numpy, torch and bench/gpt_setup.py only, never
oneflow_lite. ``torch.set_num_threads(--threads)``.

Same model as ``oneflow_lite.models.GPT`` (pre-LayerNorm, exact GELU,
causal attention with the additive -1e9 mask, head without bias), written
with torch.nn.functional over the parameters of its state_dict: the same
names, the same [out, in] Linear layout and the same initial values (read
from ``--weights``, an .npz ops_gpt.py writes from the model); same batches
(gpt_setup.batches) and AdamW hyper-parameters.

Prints one JSON object: ``step_ms`` (every step, warm-up first), ``losses``,
``maxrss_before_kb`` (ru_maxrss once the parameters and the optimizer
exist, before any step), ``maxrss_after_kb`` (after the last step), and with
``--profile``: ``profile``, torch.profiler's self CPU time per op over one
more step (bench/op_profile.py's shape) and ``profiled_step_ms``.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import resource
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import op_profile  # noqa: E402
from gpt_setup import BATCH, CONFIG, HYPER, LAYER_NORM_EPS, batches  # noqa: E402


def forward(p, ids, labels):
    """Mean cross-entropy of the GPT with parameters ``p`` (state_dict keys)."""
    b, t = ids.shape
    d, h, eps = CONFIG["n_embd"], CONFIG["n_head"], LAYER_NORM_EPS
    x = p["wte.weight"][ids] + p["wpe.weight"][:t]                       # [B, T, D]
    mask = torch.triu(torch.full((t, t), -1e9), diagonal=1)
    for i in range(CONFIG["n_layer"]):
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


def train_step(p, opt, ids, labels):
    opt.zero_grad()
    loss = forward(p, torch.from_numpy(ids), torch.from_numpy(labels))
    loss.backward()
    opt.step()
    return loss


def under_optimizer(event) -> bool:
    """Whether a profiler event ran inside ``Optimizer.step`` (its record_function)."""
    parent = event.cpu_parent
    while parent is not None:
        if parent.name.startswith("Optimizer.step"):
            return True
        parent = parent.cpu_parent
    return False


def profile_step(p, opt, ids, labels) -> dict:
    """One step under torch.profiler (CPU): self CPU time per op name; the
    ops AdamW runs (single-tensor CPU path: mul_, lerp_, addcdiv_, ...) are
    named "optimizer: aten::..." so that they count as the optimizer."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        t0 = time.perf_counter()
        train_step(p, opt, ids, labels)
        wall_ms = 1e3 * (time.perf_counter() - t0)
    rows = [(("optimizer: " if under_optimizer(e) else "") + e.name,
             e.self_cpu_time_total / 1e3, 1) for e in prof.events()]
    rows = [r for r in rows if r[1] > 0]
    prof_json = op_profile.from_rows(rows, wall_ms).to_json(top=40)
    return {"profile": prof_json, "profiled_step_ms": wall_ms}


# PyTorch's own knobs that cap the instruction set (bench/ops_gpt.py sets
# them when it measures a level below the CPU's); recorded with the run.
ISA_VARIABLES = ("ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA", "MKL_ENABLE_INSTRUCTIONS")


def cpu_capability() -> str:
    """The level PyTorch's own kernels run ("AVX512", "AVX2", "DEFAULT")."""
    try:
        return torch.backends.cpu.get_cpu_capability()
    except AttributeError:  # PyTorch before 2.0
        return "unknown"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--weights", required=True, help=".npz of the model's state_dict")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    data = list(batches(args.warmup + args.steps + 1))
    with np.load(args.weights) as w:
        p = {k: torch.tensor(w[k], requires_grad=True) for k in w.files}
    opt = torch.optim.AdamW(p.values(), **HYPER)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    times, losses = [], []
    for ids, labels in data[:-1]:
        t0 = time.perf_counter()
        loss = train_step(p, opt, ids, labels)
        times.append(1e3 * (time.perf_counter() - t0))
        losses.append(loss.item())
    out = {"side": "torch_eager", "step_ms": times, "losses": losses,
           "maxrss_before_kb": before,
           "maxrss_after_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
           "torch_version": torch.__version__, "torch_threads": torch.get_num_threads(),
           "batch": BATCH, "cpu_capability": cpu_capability(),
           "env": {k: os.environ.get(k) for k in ("OMP_WAIT_POLICY", "OMP_NUM_THREADS",
                                                  "OPENBLAS_NUM_THREADS", "PYTHONPATH")
                   + ISA_VARIABLES}}
    if args.profile:
        out.update(profile_step(p, opt, *data[-1]))
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
