"""Table-driven op test: every registered op, every check (see op_table.py)."""
from __future__ import annotations

import importlib
import pkgutil

import numpy as np
import pytest

from oneflow_lite import _C
import op_cases
from op_table import OpCase, float_inputs

CASES: list[OpCase] = []
for info in pkgutil.iter_modules(op_cases.__path__):
    CASES.extend(importlib.import_module(f"op_cases.{info.name}").CASES)
BY_ID = {c.id: c for c in CASES}
assert len(BY_ID) == len(CASES), "duplicate row ids in the op table"

IDS = [c.id for c in CASES]
GRAD_IDS = [c.id for c in CASES if c.backward is not None]
COST_IDS = [c.id for c in CASES if c.flops is not None]
ERROR_IDS = [c.id for c in CASES if c.errors]


def _inputs(case: OpCase, dtype, seed: int = 0) -> list:
    return case.make_inputs(np.random.default_rng(seed), dtype)


def _cotangents(case: OpCase, outputs: list, seed: int = 1) -> list:
    rng = np.random.default_rng(seed)
    wanted = case.grad_outputs
    grads = []
    for i, y in enumerate(outputs):
        floating = np.issubdtype(y.dtype, np.floating)
        if floating and (wanted is None or i in wanted):
            grads.append(rng.standard_normal(y.shape).astype(y.dtype))
        else:
            grads.append(None)
    return grads


def _op_grad(case: OpCase, inputs: list, dys: list) -> list:
    """The op's input gradients; an input no gradient reaches gets zeros."""
    got = _C.op_grad(case.op, inputs, case.attrs, dys)
    return [np.zeros_like(x) if g is None and np.issubdtype(x.dtype, np.floating) else g
            for g, x in zip(got, inputs)]


def test_every_registered_op_has_a_row():
    missing = sorted(set(_C.list_ops()) - {c.op for c in CASES})
    assert not missing, f"ops without a row in the op table: {missing}"


def test_every_op_declares_sbp_signatures():
    for case in CASES:
        inputs = _inputs(case, np.float32)
        descs = [(list(x.shape), str(x.dtype)) for x in inputs]
        info = _C.op_info(case.op, descs, case.attrs)
        assert info["sbp_signatures"], f"{case.op} declares no SBP signature"


@pytest.mark.parametrize("case_id", IDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_forward_matches_numpy(case_id, dtype):
    case = BY_ID[case_id]
    inputs = _inputs(case, dtype)
    expected = case.forward([x.copy() for x in inputs], case.attrs)
    got = _C.run_op(case.op, inputs, case.attrs)
    assert len(got) == len(expected), f"{case.op}: {len(got)} outputs, reference has {len(expected)}"
    rtol, atol = (case.f32_rtol, case.f32_atol) if dtype == np.float32 else (1e-10, 1e-12)
    for k, (g, e) in enumerate(zip(got, expected)):
        e = np.asarray(e)
        assert g.shape == e.shape, f"{case.op} output {k}: shape {g.shape} != {e.shape}"
        assert g.dtype == e.dtype, f"{case.op} output {k}: dtype {g.dtype} != {e.dtype}"
        np.testing.assert_allclose(g, e, rtol=rtol, atol=atol, err_msg=f"{case.op} output {k}")


@pytest.mark.parametrize("case_id", GRAD_IDS)
def test_grad_matches_numpy_backward(case_id):
    case = BY_ID[case_id]
    inputs = _inputs(case, np.float32)
    outputs = case.forward([x.copy() for x in inputs], case.attrs)
    dys = _cotangents(case, [np.asarray(o) for o in outputs])
    expected = case.backward([x.copy() for x in inputs], case.attrs, dys)
    got = _op_grad(case, inputs, dys)
    for i in float_inputs(case, inputs):
        if expected[i] is None:
            continue
        np.testing.assert_allclose(got[i], expected[i], rtol=1e-4, atol=1e-5,
                                   err_msg=f"{case.op} grad of input {i}")


@pytest.mark.parametrize("case_id", GRAD_IDS)
def test_grad_matches_finite_difference(case_id):
    case = BY_ID[case_id]
    inputs = _inputs(case, np.float64)
    outputs = _C.run_op(case.op, inputs, case.attrs)
    dys = _cotangents(case, outputs)

    def objective(xs):
        outs = _C.run_op(case.op, xs, case.attrs)
        return sum(float(np.sum(o * d)) for o, d in zip(outs, dys) if d is not None)

    got = _op_grad(case, inputs, dys)
    rng = np.random.default_rng(2)
    for i in float_inputs(case, inputs):
        if case.backward([x.copy() for x in inputs], case.attrs, dys)[i] is None:
            continue
        flat = inputs[i].reshape(-1)
        coords = rng.choice(flat.size, size=min(flat.size, case.fd_max_coords), replace=False)
        for c in coords:
            plus = [x.copy() for x in inputs]
            minus = [x.copy() for x in inputs]
            plus[i].reshape(-1)[c] += case.fd_eps
            minus[i].reshape(-1)[c] -= case.fd_eps
            fd = (objective(plus) - objective(minus)) / (2 * case.fd_eps)
            np.testing.assert_allclose(got[i].reshape(-1)[c], fd, rtol=1e-4, atol=1e-6,
                                       err_msg=f"{case.op} input {i} coordinate {c}")


@pytest.mark.parametrize("case_id", COST_IDS)
def test_cost_matches_hand_value(case_id):
    case = BY_ID[case_id]
    attrs = case.attrs if case.cost_attrs is None else case.cost_attrs
    info = _C.op_info(case.op, [(list(s), d) for s, d in case.cost_inputs], attrs)
    assert info["flops"] == pytest.approx(case.flops, rel=1e-12, abs=0)
    assert info["memory_bytes"] == case.memory_bytes


@pytest.mark.parametrize("case_id", ERROR_IDS)
def test_bad_input_is_rejected_with_a_clear_message(case_id):
    case = BY_ID[case_id]
    for err in case.errors:
        with pytest.raises(ValueError) as info:
            _C.op_info(case.op, [(list(s), d) for s, d in err.inputs], err.attrs)
        for text in err.must_contain:
            assert text in str(info.value), f"'{text}' not in '{info.value}'"


def test_unknown_op_is_rejected():
    with pytest.raises(ValueError, match="unknown op 'no_such_op'"):
        _C.op_info("no_such_op", [([2], "float32")], {})
