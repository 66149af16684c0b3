"""nn losses and F.one_hot against numpy references written here, their
gradients against central finite differences (float64), and their errors."""
from __future__ import annotations

import re

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite import nn
from oneflow_lite.nn import functional as F
from fd_check import check_grads

RNG = np.random.default_rng(0)


def _reduce(loss, reduction):
    return {"mean": np.mean, "sum": np.sum, "none": lambda a: a}[reduction](loss)


def _log_softmax(x, axis):
    z = x - x.max(axis=axis, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=axis, keepdims=True))


# ---- mse and l1 ------------------------------------------------------------------------
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_mse_and_l1_match_numpy(reduction):
    x, y = RNG.standard_normal((3, 4)), RNG.standard_normal((3, 4))
    for module, ref in ((nn.MSELoss, (x - y) ** 2), (nn.L1Loss, np.abs(x - y))):
        got = module(reduction)(flow.tensor(x), flow.tensor(y)).numpy()
        np.testing.assert_allclose(got, _reduce(ref, reduction), rtol=1e-12, atol=1e-12)
    got32 = F.mse_loss(flow.tensor(x.astype(np.float32)), flow.tensor(y.astype(np.float32)),
                       reduction)
    assert got32.dtype is flow.float32
    np.testing.assert_allclose(got32.numpy(), _reduce((x - y) ** 2, reduction), rtol=1e-5,
                               atol=1e-6)


def test_mse_and_l1_gradients():
    x, y = RNG.standard_normal((2, 3)), RNG.standard_normal((2, 3))
    check_grads(lambda a, b: F.mse_loss(a, b), [x, y])
    check_grads(lambda a, b: F.l1_loss(a, b, "none"), [x, y])


def test_l1_gradient_is_zero_where_input_equals_target():
    x = flow.tensor([1.0, 2.0, 3.0], requires_grad=True)
    F.l1_loss(x, flow.tensor([1.0, 0.0, 5.0]), "sum").backward()
    assert x.grad.numpy().tolist() == [0.0, 1.0, -1.0]  # sign(x - y), 0 at 0 (PyTorch)


# ---- one_hot and nll -------------------------------------------------------------------
def test_one_hot_matches_numpy():
    ids = np.array([[0, 3], [2, 1]])
    got = F.one_hot(flow.tensor(ids), 5)
    assert got.dtype is flow.int64 and got.shape == (2, 2, 5)
    np.testing.assert_array_equal(got.numpy(), np.eye(5, dtype=np.int64)[ids])
    assert F.one_hot(flow.tensor([1, 0])).shape == (2, 2)  # num_classes from the largest id
    with pytest.raises(IndexError, match=re.escape("one_hot: class index 5 at [1] is outside "
                                                   "[0, 5)")):
        F.one_hot(flow.tensor([0, 5]), 5)
    with pytest.raises(TypeError, match="one_hot: expects an integer tensor, got dtype float32"):
        F.one_hot(flow.zeros(2))


def _nll_ref(logp, target, weight=None, ignore_index=-100, reduction="mean"):
    """Loops over the rows: -w[t] * logp[n, t], ignored rows 0 and uncounted."""
    classes = logp.shape[1]
    logp = np.moveaxis(logp, 1, -1).reshape(-1, classes)
    flat = target.reshape(-1)
    w = np.ones(classes) if weight is None else weight
    loss, denom = np.zeros(len(flat)), 0.0
    for n, t in enumerate(flat):
        if t == ignore_index:
            continue
        loss[n] = -w[t] * logp[n, t]
        denom += w[t]
    if reduction == "mean":
        return loss.sum() / denom
    return loss.sum() if reduction == "sum" else loss.reshape(target.shape)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_nll_loss_matches_numpy(reduction):
    logp = _log_softmax(RNG.standard_normal((5, 4)), 1)
    target = np.array([0, 3, 1, 1, 2])
    weight = np.array([0.5, 2.0, 1.0, 3.0])
    for kwargs in ({}, {"weight": weight}, {"ignore_index": 1}, {"weight": weight,
                                                                 "ignore_index": 3}):
        w = kwargs.get("weight")
        module = nn.NLLLoss(weight=None if w is None else flow.tensor(w),
                            ignore_index=kwargs.get("ignore_index", -100), reduction=reduction)
        got = module(flow.tensor(logp), flow.tensor(target)).numpy()
        np.testing.assert_allclose(got, _nll_ref(logp, target, reduction=reduction, **kwargs),
                                   rtol=1e-12, atol=1e-12, err_msg=str(kwargs))


def test_nll_loss_over_positions_and_with_log_softmax_equals_cross_entropy():
    logp = _log_softmax(RNG.standard_normal((2, 3, 4)), 1)  # [N, C, d]
    target = RNG.integers(0, 3, (2, 4))
    got = F.nll_loss(flow.tensor(logp), flow.tensor(target), reduction="none").numpy()
    np.testing.assert_allclose(got, _nll_ref(logp, target, reduction="none"), rtol=1e-12)
    logits = RNG.standard_normal((6, 5))
    labels = flow.tensor(RNG.integers(0, 5, 6))
    np.testing.assert_allclose(F.nll_loss(F.log_softmax(flow.tensor(logits), 1), labels).item(),
                               F.cross_entropy(flow.tensor(logits), labels).item(), rtol=1e-12)


def test_nll_loss_gradient():
    target = flow.tensor([2, 0, 1, 2])
    weight = flow.tensor(np.array([1.0, 2.0, 0.5]))
    check_grads(lambda x: F.nll_loss(x, target, weight, ignore_index=0), [RNG.standard_normal(
        (4, 3))])
    check_grads(lambda x: F.nll_loss(F.log_softmax(x, 1), target, reduction="none"),
                [RNG.standard_normal((4, 3))])


def test_nll_loss_errors():
    logp = flow.zeros(3, 4)
    with pytest.raises(IndexError, match=re.escape("nll_loss: class index 4 at [1] is outside "
                                                   "[0, 4)")):
        F.nll_loss(logp, flow.tensor([0, 4, 1]))
    with pytest.raises(ValueError, match=re.escape("nll_loss: target shape [2] does not match "
                                                   "input shape [3, 4] (expected [3])")):
        F.nll_loss(logp, flow.tensor([0, 1]))
    with pytest.raises(TypeError, match="nll_loss: expects floating input and integer target"):
        F.nll_loss(logp, flow.zeros(3))
    with pytest.raises(ValueError, match="NLLLoss: unknown reduction 'avg'"):
        nn.NLLLoss(reduction="avg")


# ---- binary cross-entropy with logits ----------------------------------------------------
def _bce_ref(x, y, weight=None, pos_weight=None):
    """PyTorch's documented form: -w [pw y log s(x) + (1 - y) log(1 - s(x))],
    with log s(x) = -log1p(exp(-x)) computed stably."""
    log_sig = -np.logaddexp(0, -x)
    log_one_minus = -np.logaddexp(0, x)
    pw = 1.0 if pos_weight is None else pos_weight
    loss = -(pw * y * log_sig + (1 - y) * log_one_minus)
    return loss if weight is None else loss * weight


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_bce_with_logits_matches_numpy(reduction):
    x, y = RNG.standard_normal((4, 3)) * 3, RNG.random((4, 3))
    w, pw = RNG.random((4, 3)), np.array([1.0, 2.0, 0.5])
    for weight, pos_weight in ((None, None), (w, None), (None, pw), (w, pw)):
        module = nn.BCEWithLogitsLoss(
            weight=None if weight is None else flow.tensor(weight), reduction=reduction,
            pos_weight=None if pos_weight is None else flow.tensor(pos_weight))
        got = module(flow.tensor(x), flow.tensor(y)).numpy()
        np.testing.assert_allclose(got, _reduce(_bce_ref(x, y, weight, pos_weight), reduction),
                                   rtol=1e-12, atol=1e-12)


def test_bce_with_logits_is_stable_at_large_logits():
    x = np.array([-200.0, -30.0, 0.0, 30.0, 200.0])
    y = np.array([1.0, 1.0, 1.0, 1.0, 0.0])
    got = F.binary_cross_entropy_with_logits(flow.tensor(x.astype(np.float32)),
                                             flow.tensor(y.astype(np.float32)), reduction="none")
    assert np.isfinite(got.numpy()).all()
    np.testing.assert_allclose(got.numpy(), [200.0, 30.0, np.log(2.0), 0.0, 200.0], rtol=1e-5,
                               atol=1e-6)


def test_bce_with_logits_gradient():
    x, y = RNG.standard_normal((3, 2)), RNG.random((3, 2))
    pw = flow.tensor(np.array([2.0, 0.5]))
    check_grads(lambda a, b: F.binary_cross_entropy_with_logits(a, b, pos_weight=pw), [x, y])


def test_loss_shape_errors():
    with pytest.raises(ValueError, match=re.escape("mse_loss: target shape [3] differs from "
                                                   "input shape [2, 3]")):
        nn.MSELoss()(flow.zeros(2, 3), flow.zeros(3))
    with pytest.raises(TypeError, match="l1_loss: target dtype float64 differs from input "
                                        "dtype float32"):
        nn.L1Loss()(flow.zeros(2), flow.zeros(2, dtype=flow.float64))
    with pytest.raises(ValueError, match="binary_cross_entropy_with_logits: target shape"):
        nn.BCEWithLogitsLoss()(flow.zeros(2, 3), flow.zeros(2))
