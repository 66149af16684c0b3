"""bench/op_profile.py, the per-op profile of bench/run.sh ops: a hand-made
trace whose rows are worked out by hand; a small graph's real trace
(_C.Session(trace_path=...)), whose rows must name registered op types and
add up to the traced step, which fits inside the step's wall time; the
coarse groups of both frameworks' op names; and gpt_setup.step_flops
against the products of the model listed one by one. No torch."""
from __future__ import annotations

import json
import os
import sys
import time

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
import op_profile  # noqa: E402
from gpt_setup import step_flops  # noqa: E402

import oneflow_lite as flow  # noqa: E402
from oneflow_lite import _C  # noqa: E402


def _act(name, ts, dur, iteration, tid=0):
    return {"name": name, "ph": "X", "pid": 0, "tid": tid, "ts": ts, "dur": dur,
            "args": {"task": 0, "iteration": iteration}}


def test_hand_made_trace_rows_by_hand():
    trace = {"traceEvents": [
        {"name": "process_name", "ph": "M", "pid": 0, "args": {"name": "rank 0"}},
        _act("matmul 'a'", 0.0, 500.0, 0),          # iteration 0: ignored
        _act("matmul 'a'", 1000.0, 100.0, 1),
        _act("relu 'b'", 1110.0, 40.0, 1),          # 10 us gap before it
        _act("matmul 'c'", 1150.0, 200.0, 1),
        _act("adamw_update 'w'", 1360.0, 40.0, 1),  # 10 us gap before it
    ]}
    p = op_profile.from_chrome_trace(trace)
    rows = {r.op: (r.ms, r.count) for r in p.rows}
    assert p.step_ms == pytest.approx(0.4, rel=1e-12, abs=1e-12)   # 1000 .. 1400 us
    assert rows == {"matmul": (pytest.approx(0.3), 2), "relu": (pytest.approx(0.04), 1),
                    "adamw_update": (pytest.approx(0.04), 1),
                    op_profile.IDLE: (pytest.approx(0.02), 0)}
    assert [r.op for r in p.rows][0] == "matmul"
    assert np.allclose(sum(r.share for r in p.rows), 1.0, rtol=1e-12, atol=1e-12)
    assert np.allclose(p.busy_ms(), 0.38, rtol=1e-12, atol=1e-12)
    first = op_profile.from_chrome_trace(trace, iteration=0)
    assert [(r.op, r.count) for r in first.rows] == [("matmul", 1)]


def test_empty_or_missing_iteration_is_refused():
    with pytest.raises(ValueError, match="no acts"):
        op_profile.from_chrome_trace({"traceEvents": []})
    with pytest.raises(ValueError, match="iteration 7"):
        op_profile.from_chrome_trace({"traceEvents": [_act("relu 'x'", 0, 1, 0)]}, iteration=7)
    with pytest.raises(ValueError, match="step_ms"):
        op_profile.from_rows([("a", 1.0, 1)], 0.0)


def _mlp_program():
    cfg = flow.models.MLPConfig(in_features=64, hidden=(256, 256), num_classes=10)
    flow.manual_seed(0)
    g = flow.models.trace_loss(flow.models.MLP(cfg), batch_size=128)
    g.builder.minimize(g.loss, "adamw", lr=1e-3, weight_decay=0.01)
    return g


def test_real_trace_sums_to_the_step_and_names_op_types(tmp_path):
    g = _mlp_program()
    path = str(tmp_path / "trace.json")
    sess = _C.Session(g.program, 1, trace_path=path)
    rng = np.random.default_rng(0)
    for _ in range(3):
        feeds = {g.data: rng.standard_normal((128, 64)).astype(np.float32),
                 g.labels: rng.integers(0, 10, 128)}
        t0 = time.perf_counter()
        sess.run(feeds, [g.loss])
        wall_ms = 1e3 * (time.perf_counter() - t0)
    with open(path) as f:
        trace = json.load(f)
    iterations = {e["args"]["iteration"] for e in trace["traceEvents"] if e["ph"] == "X"}
    assert len(iterations) == 1  # each run writes its own trace
    p = op_profile.from_chrome_trace(trace)
    total = sum(r.ms for r in p.rows)
    assert np.allclose(total, p.step_ms, rtol=1e-9, atol=1e-6)       # one stream: rows = span
    assert 0 < p.step_ms <= wall_ms                                   # the span is inside the run
    assert p.busy_ms() > 0.5 * p.step_ms                              # acts, not gaps, dominate
    known = set(_C.list_ops())
    kernels = {r.op for r in p.rows if r.op in known}
    # the MLP's forward, backward and AdamW (the adam_update op with weight decay); one device
    # runs each forward matmul with its bias_add as one matmul_bias (graph/matmul_bias_fusion.h)
    assert {"matmul", "matmul_bias", "relu", "relu_grad", "sparse_softmax_cross_entropy",
            "adam_update"} <= kernels, kernels
    assert "bias_add" not in kernels, kernels
    # 3 layers: 3 forward matmul_bias, 5 backward matmuls (the data needs no gradient)
    assert next(r for r in p.rows if r.op == "matmul_bias").count == 3
    assert next(r for r in p.rows if r.op == "matmul").count == 5
    others = [r for r in p.rows if r.op not in known and r.op != op_profile.IDLE]
    assert sum(r.ms for r in others) < 0.2 * p.step_ms, others        # non-kernel tasks are small
    assert p.to_json()["op_types"] == len([r for r in p.rows if r.op != op_profile.IDLE])


@pytest.mark.parametrize("name,group", [
    ("matmul", "matmul"), ("aten::addmm", "matmul"), ("aten::mm", "matmul"),
    ("aten::bmm", "matmul"), ("layer_norm_grad", "layer_norm"),
    ("aten::native_layer_norm_backward", "layer_norm"), ("aten::_softmax", "softmax"),
    ("autograd::engine::evaluate_function: NativeLayerNormBackward0", "layer_norm"),
    ("sparse_softmax_cross_entropy", "loss"), ("aten::nll_loss_forward", "loss"),
    ("adam_update", "optimizer"), ("aten::_foreach_mul_", "optimizer"),
    ("optimizer: aten::mul_", "optimizer"), ("optimizer: aten::copy_", "optimizer"),
    ("aten::gelu_backward", "gelu"), ("aten::embedding_dense_backward", "embedding"),
    ("aten::copy_", "copy/layout"), ("aten::add", "elementwise"), (op_profile.IDLE, "idle"),
    ("aten::empty", "other"),
])
def test_category(name, group):
    assert op_profile.category(name) == group


def test_step_flops_against_the_products_one_by_one():
    cfg = dict(n_layer=2, n_embd=8, n_head=2, seq_len=4, vocab_size=16)
    b, t, d, h, v = 3, 4, 8, 2, 16
    n = b * t
    per_layer = [(n, 3 * d, d), (n, d, d), (n, 4 * d, d), (n, d, 4 * d)]    # (m, n, k)
    per_layer += [(t, t, d // h)] * (b * h) + [(t, d // h, t)] * (b * h)     # QK^T, AV
    products = per_layer * 2 + [(n, v, d)]
    forward = sum(2 * m * nn * k for m, nn, k in products)
    f = step_flops(cfg, batch=b)
    assert f["forward"] == forward
    assert f["step"] == 3 * forward
