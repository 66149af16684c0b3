"""Memory planning of registers (runtime/memory_plan.h) on a GPT training step.

The single-device Session plans its registers into one arena by default
(``plan_memory=True``); with ``plan_memory=False`` every register has its own
buffer. Both must train bitwise alike (float32 losses and every variable after
three AdamW steps, compared through their bit patterns), and the planned
session's peak bytes must be smaller. The numpy reference comparison of the
same model (test_reference.py) runs with planning on, the default.
"""
import numpy as np

from oneflow_lite import _C
from oneflow_lite.models import GPT, GPTConfig, trace_loss
import oneflow_lite as flow

CONFIG = dict(vocab_size=256, seq_len=32, n_layer=2, n_head=4, n_embd=64)
BATCH, STEPS = 4, 3


def bits(a):
    a = np.ascontiguousarray(a)
    return a.view({4: np.uint32, 8: np.uint64}[a.dtype.itemsize])


def train(plan_memory: bool):
    flow.manual_seed(0)
    g = trace_loss(GPT(GPTConfig(**CONFIG)), BATCH)
    g.builder.minimize(g.loss, "adamw", lr=3e-3, weight_decay=0.01)
    session = _C.Session(g.builder.program, 2, plan_memory=plan_memory)
    rng = np.random.default_rng(3)
    losses = []
    for _ in range(STEPS):
        ids = rng.integers(0, CONFIG["vocab_size"], size=(BATCH, CONFIG["seq_len"]))
        (loss,) = session.run({g.data: ids, g.labels: np.roll(ids, -1, axis=1)}, [g.loss])
        losses.append(np.asarray(loss, np.float32))
    variables = {v: session.get_variable(v) for v in g.builder.program.variables()}
    return np.array(losses).reshape(-1), variables, session.peak_bytes()


def test_planned_arena_trains_bitwise_like_own_buffers_in_fewer_bytes():
    loss_on, vars_on, peak_on = train(True)
    loss_off, vars_off, peak_off = train(False)
    assert np.all(np.isfinite(loss_on))
    assert np.array_equal(bits(loss_on), bits(loss_off)), (loss_on, loss_off)
    assert vars_on.keys() == vars_off.keys()
    differ = [k for k in vars_on if not np.array_equal(bits(vars_on[k]), bits(vars_off[k]))]
    assert not differ, f"variables differ bitwise: {differ}"
    assert peak_on < 0.7 * peak_off, (peak_on, peak_off)
