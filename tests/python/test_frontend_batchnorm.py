"""nn.BatchNorm1d/2d against a numpy reference written here: training
(batch statistics, running statistics with the unbiased variance,
momentum and the cumulative average), eval (running statistics), gradients
against finite differences, state_dict keys, and errors."""
from __future__ import annotations

import re

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite import nn
from fd_check import check_grads


class NumpyBatchNorm:
    """PyTorch's documented BatchNorm, in numpy."""

    def __init__(self, c, eps=1e-5, momentum=0.1):
        self.mean, self.var, self.eps, self.momentum, self.n = np.zeros(c), np.ones(c), eps, \
            momentum, 0

    def __call__(self, x, gamma, beta, training):
        axes = (0,) + tuple(range(2, x.ndim))
        shape = [1, x.shape[1]] + [1] * (x.ndim - 2)
        if training:
            mean, var = x.mean(axis=axes), x.var(axis=axes)
            count = x.size // x.shape[1]
            self.n += 1
            m = 1.0 / self.n if self.momentum is None else self.momentum
            self.mean = (1 - m) * self.mean + m * mean
            self.var = (1 - m) * self.var + m * var * count / (count - 1)
        else:
            mean, var = self.mean, self.var
        xhat = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + self.eps)
        return xhat * gamma.reshape(shape) + beta.reshape(shape)


@pytest.mark.parametrize("module, shape", [(nn.BatchNorm1d, (6, 3)), (nn.BatchNorm1d, (4, 3, 5)),
                                           (nn.BatchNorm2d, (4, 3, 2, 5))])
@pytest.mark.parametrize("momentum", [0.1, 0.5, None])
def test_training_then_eval_matches_numpy(module, shape, momentum):
    rng = np.random.default_rng(0)
    bn = module(3, momentum=momentum, dtype=flow.float64)
    gamma, beta = rng.standard_normal(3), rng.standard_normal(3)
    with flow.no_grad():
        bn.weight.copy_(flow.tensor(gamma))
        bn.bias.copy_(flow.tensor(beta))
    ref = NumpyBatchNorm(3, momentum=momentum)
    for step in range(3):
        x = rng.standard_normal(shape) * (step + 1) + step
        got = bn(flow.tensor(x)).numpy()
        np.testing.assert_allclose(got, ref(x, gamma, beta, True), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(bn.running_mean.numpy(), ref.mean, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(bn.running_var.numpy(), ref.var, rtol=1e-12, atol=1e-14)
    assert bn.num_batches_tracked.item() == 3
    bn.eval()
    x = rng.standard_normal(shape)
    np.testing.assert_allclose(bn(flow.tensor(x)).numpy(), ref(x, gamma, beta, False),
                               rtol=1e-10, atol=1e-12)
    assert bn.num_batches_tracked.item() == 3  # eval leaves the statistics alone


def test_float32_and_hand_worked_value():
    bn = nn.BatchNorm1d(1)
    y = bn(flow.tensor([[1.0], [3.0]]))  # mean 2, biased var 1
    np.testing.assert_allclose(y.numpy().ravel(), [-1 / np.sqrt(1 + 1e-5), 1 / np.sqrt(1 + 1e-5)],
                               rtol=1e-6)
    # running: mean 0.9 * 0 + 0.1 * 2; var 0.9 * 1 + 0.1 * 2 (unbiased: 2 / 1)
    np.testing.assert_allclose(bn.running_mean.numpy(), [0.2], rtol=1e-6)
    np.testing.assert_allclose(bn.running_var.numpy(), [1.1], rtol=1e-6)
    assert bn.running_mean.dtype is flow.float32


def test_gradients_in_training_and_eval():
    rng = np.random.default_rng(1)
    bn = nn.BatchNorm2d(2, dtype=flow.float64)
    check_grads(lambda x: bn(x), [rng.standard_normal((3, 2, 2, 2))])
    bn.eval()
    check_grads(lambda x: bn(x), [rng.standard_normal((3, 2, 2, 2))])


def test_weight_and_bias_gradients():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((5, 3))
    dy = rng.standard_normal((5, 3))
    bn = nn.BatchNorm1d(3, dtype=flow.float64)
    (bn(flow.tensor(x)) * flow.tensor(dy)).sum().backward()
    xhat = (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-5)
    np.testing.assert_allclose(bn.weight.grad.numpy(), (dy * xhat).sum(0), rtol=1e-10)
    np.testing.assert_allclose(bn.bias.grad.numpy(), dy.sum(0), rtol=1e-10)


def test_no_affine_and_no_running_stats():
    x = np.random.default_rng(3).standard_normal((4, 2))
    bn = nn.BatchNorm1d(2, affine=False, track_running_stats=False).double()
    assert list(bn.state_dict()) == []
    bn.eval()  # no running statistics: the batch's, also in eval
    want = (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-5)
    np.testing.assert_allclose(bn(flow.tensor(x)).numpy(), want, rtol=1e-10)


def test_state_dict_keys_and_reset():
    bn = nn.BatchNorm2d(4)
    assert list(bn.state_dict()) == ["weight", "bias", "running_mean", "running_var",
                                     "num_batches_tracked"]
    bn(flow.randn(2, 4, 3, 3))
    bn.reset_running_stats()
    assert not bn.running_mean.numpy().any() and (bn.running_var.numpy() == 1).all()
    assert bn.num_batches_tracked.item() == 0


def test_errors():
    with pytest.raises(ValueError, match=re.escape("BatchNorm2d(3): expects a 4-d input with 3 "
                                                   "channels at axis 1, got shape [2, 3]")):
        nn.BatchNorm2d(3)(flow.zeros(2, 3))
    with pytest.raises(ValueError, match=re.escape("BatchNorm1d(3): expects a 2-d or 3-d input "
                                                   "with 3 channels at axis 1, got shape [2, 4]")):
        nn.BatchNorm1d(3)(flow.zeros(2, 4))
    with pytest.raises(ValueError, match="expected more than 1 value per channel when training"):
        nn.BatchNorm1d(3)(flow.zeros(1, 3))
    with pytest.raises(ValueError, match="BatchNorm1d: momentum=1.5 is outside"):
        nn.BatchNorm1d(3, momentum=1.5)


class _Forward(flow.nn.Graph):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def build(self, x):
        return self.model(x)


@pytest.mark.parametrize("training", [True, False])
def test_a_graph_gives_the_eager_output(training):
    flow.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(2, 3, 3, padding=1), nn.BatchNorm2d(3), nn.ReLU())
    model(flow.randn(4, 2, 5, 5))  # running statistics away from (0, 1)
    model.train(training)
    x = flow.randn(4, 2, 5, 5)
    stats = model[1].running_mean.numpy().copy()
    want = model(x).numpy()
    np.testing.assert_allclose(_Forward(model)(x).numpy(), want, rtol=1e-5, atol=1e-5)
    if training:  # the graph normalised by the batch but left the running statistics alone
        np.testing.assert_allclose(model[1].running_mean.numpy(),
                                   stats * 0.9 + 0.1 * _batch_mean(model, x), rtol=1e-5,
                                   atol=1e-6)


def _batch_mean(model, x):
    with flow.no_grad():
        return model[0](x).numpy().mean(axis=(0, 2, 3))
