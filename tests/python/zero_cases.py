"""Models, data and sessions shared by test_zero_update.py and the
multi-process worker's "zero" mode: a small MLP and GPT with AdamW, in
float64 or float32, planned by a rule-based preset ("zero" or
"data_parallel") on a flat mesh. Every build starts from the same weights
(flow.manual_seed), so runs under different presets are comparable."""
from __future__ import annotations

import numpy as np

import oneflow_lite as flow
from oneflow_lite import _C
from oneflow_lite.models import GPTConfig, MLPConfig, trace_loss

CLUSTER = "h100_8gpu"  # the rule-based presets choose nothing by cost
# eps well above float32 rounding noise: the attention's key bias has a
# gradient that is zero in exact arithmetic (softmax ignores a shift per
# query), and with eps 1e-8 Adam would blow its rounding noise up to steps
# of +-lr that differ between any two summation orders (one device vs 4).
ADAMW = {"lr": 0.01, "weight_decay": 0.05, "eps": 1e-3}
STEPS = 3
BATCH = 8
# Per dtype, the tolerance of the acceptance (numpy allclose).
TOL = {"float64": {"rtol": 1e-12, "atol": 1e-14}, "float32": {"rtol": 1e-5, "atol": 1e-6}}
# Many small parameters (biases, layer norms): the case buckets are for.
CONFIGS = {
    "mlp": MLPConfig(in_features=6, hidden=(10, 7, 5), num_classes=4, dropout=0.1),
    "gpt": GPTConfig(vocab_size=16, seq_len=4, n_layer=2, n_head=2, n_embd=8, dropout=0.1),
}


def build(model: str, dtype: str):
    """The model's loss with AdamW appended: (LossGraph, sorted trainables)."""
    flow.manual_seed(3)
    module = flow.models.create(model, CONFIGS[model])
    if dtype == "float64":
        module = module.double()
    g = trace_loss(module, BATCH)
    g.builder.minimize(g.loss, "adamw", **ADAMW)
    return g, sorted(g.trainable)


def batches(model: str, dtype: str, steps: int = STEPS, seed: int = 7) -> list:
    rng = np.random.default_rng(seed)
    cfg = CONFIGS[model]
    out = []
    for _ in range(steps):
        if isinstance(cfg, MLPConfig):
            x = rng.standard_normal((BATCH, cfg.in_features)).astype(dtype)
            y = rng.integers(0, cfg.num_classes, size=(BATCH,))
        else:
            x = rng.integers(0, cfg.vocab_size, size=(BATCH, cfg.seq_len))
            y = rng.integers(0, cfg.vocab_size, size=(BATCH, cfg.seq_len))
        out.append((x, y.astype(np.int64)))
    return out


def session(g, preset: str, devices: int, bucket_bytes: int, threads: int = 2, mesh=None,
            micro_batches: int = 1):
    """A DistributedSession of `preset` on `mesh` (default: flat, [devices])."""
    mesh = list(mesh or [devices])
    strategy = _C.plan(g.program, mesh, CLUSTER, preset).strategy
    return _C.DistributedSession(g.program, list(range(devices)), mesh, strategy, [g.loss],
                                 num_threads=threads, timeout_ms=30000,
                                 gradient_bucket_bytes=bucket_bytes, micro_batches=micro_batches)


def train(s, g, data) -> list:
    return [float(s.run({g.data: x, g.labels: y}, [g.loss])[0]) for x, y in data]
