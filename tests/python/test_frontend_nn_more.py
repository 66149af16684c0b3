"""ModuleDict, ParameterList, Module.to_global (eager refusal, a graph
keeping the pinned layout), nn.init's xavier_* / kaiming_* (bounds exactly,
statistics within a tolerance, fans as PyTorch), SGD nesterov and
add_param_group against updates computed in numpy here; losses and
graph-traced functional losses."""
from __future__ import annotations

import math
import re

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite import nn
from oneflow_lite.nn import functional as F
from oneflow_lite.nn import init

MESH = flow.placement("cpu", [[0, 1], [2, 3]])


# ---- containers ----------------------------------------------------------------------
def test_module_dict_registers_children_by_key():
    md = nn.ModuleDict({"enc": nn.Linear(3, 4), "dec": nn.Linear(4, 2)})
    md["act"] = nn.ReLU()
    assert list(md) == ["enc", "dec", "act"] and len(md) == 3 and "dec" in md
    assert md["enc"] is md.enc
    assert [k for k, _ in md.named_parameters()] == ["enc.weight", "enc.bias", "dec.weight",
                                                     "dec.bias"]
    x = flow.randn(2, 3)
    np.testing.assert_allclose(md["dec"](md["act"](md["enc"](x))).numpy(),
                               np.maximum(x.numpy() @ md.enc.weight.numpy().T
                                          + md.enc.bias.numpy(), 0) @ md.dec.weight.numpy().T
                               + md.dec.bias.numpy(), rtol=1e-5, atol=1e-6)
    del md["act"]
    assert list(md.keys()) == ["enc", "dec"]
    with pytest.raises(TypeError, match="ModuleDict\\['x'\\]: expects a Module, got int"):
        md["x"] = 3


def test_parameter_list_in_state_dict_and_optimizer():
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.scales = nn.ParameterList([nn.Parameter(flow.ones(2)) for _ in range(2)])
            self.scales.append(nn.Parameter(flow.full([2], 3.0)))

        def forward(self, x):
            for s in self.scales:
                x = x * s
            return x

    m = Model()
    assert list(m.state_dict()) == ["scales.0", "scales.1", "scales.2"]
    assert len(m.scales) == 3 and m.scales[2].numpy().tolist() == [3.0, 3.0]
    opt = flow.optim.SGD(m.named_parameters(), lr=0.5)
    m(flow.tensor([1.0, 2.0])).sum().backward()
    opt.step()
    # d/ds0 of sum(x * s0 * s1 * s2) = x * s1 * s2 = [3, 6]
    np.testing.assert_allclose(m.scales[0].numpy(), [1 - 0.5 * 3, 1 - 0.5 * 6])
    with pytest.raises(TypeError, match="ParameterList.append: expects an nn.Parameter"):
        m.scales.append(flow.ones(2))


# ---- to_global -----------------------------------------------------------------------
class _Loss(nn.Graph):
    def __init__(self, model, opt):
        super().__init__()
        self.model = model
        self.add_optimizer(opt)

    def build(self, x, y):
        return F.mse_loss(self.model(x), y)


def test_module_to_global_pins_every_parameter_in_a_graph():
    flow.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 4))
    weight = model[0].weight
    assert model.to_global(MESH, [flow.sbp.split(0), flow.sbp.broadcast]) is model
    assert model[0].weight is weight and weight.placement == MESH
    with pytest.raises(NotImplementedError, match="is a global tensor"):
        model(flow.randn(2, 6))
    graph = _Loss(model, flow.optim.SGD(model.named_parameters(), lr=0.1))
    graph.config.auto_parallel(cluster="h100_8gpu", searcher="autoddl", placement=MESH)
    graph(flow.randn(8, 6), flow.randn(8, 4))
    strategy = graph.compiled.session.strategy()
    for key in ("0.weight", "0.bias", "2.weight", "2.bias"):
        assert f"{key}: (S(0), B)" in strategy, strategy


def test_module_to_global_checks_every_tensor_first():
    model = nn.Sequential(nn.Linear(4, 6), nn.Linear(6, 3))
    with pytest.raises(ValueError, match=re.escape("Sequential.to_global: '0.bias' of shape [6]: "
                                                   "S(1) splits an axis")):
        model.to_global(flow.placement("cpu", [0, 1]), flow.sbp.split(1))
    assert all(p.placement is None for p in model.parameters())
    with pytest.raises(TypeError, match="to_global: placement must be a flow.placement"):
        model.to_global("cpu", flow.sbp.broadcast)


# ---- init ----------------------------------------------------------------------------
def test_calculate_gain_as_pytorch():
    assert init.calculate_gain("linear") == 1.0 and init.calculate_gain("sigmoid") == 1.0
    assert init.calculate_gain("tanh") == 5.0 / 3.0
    assert init.calculate_gain("relu") == math.sqrt(2.0)
    assert init.calculate_gain("leaky_relu") == math.sqrt(2.0 / (1 + 0.01 ** 2))
    assert init.calculate_gain("leaky_relu", 0.2) == math.sqrt(2.0 / 1.04)
    with pytest.raises(ValueError, match="calculate_gain: unknown nonlinearity 'swish'"):
        init.calculate_gain("swish")


def _stats(fill, *shape):
    t = flow.empty(*shape, dtype=flow.float64)
    fill(t)
    a = t.numpy()
    return a, a.std()


def test_xavier_bounds_and_statistics():
    flow.manual_seed(0)
    # Linear weight [out=300, in=200]: fan_in 200, fan_out 300
    a, std = _stats(lambda t: init.xavier_uniform_(t, gain=2.0), 300, 200)
    bound = 2.0 * math.sqrt(6.0 / 500)
    assert np.abs(a).max() <= bound and np.abs(a).max() > 0.999 * bound
    assert abs(std - bound / math.sqrt(3)) < 0.01 * bound / math.sqrt(3)
    a, std = _stats(init.xavier_normal_, 300, 200)
    assert abs(std - math.sqrt(2.0 / 500)) < 0.01 * math.sqrt(2.0 / 500)
    assert abs(a.mean()) < 4 * math.sqrt(2.0 / 500) / math.sqrt(a.size)


def test_kaiming_bounds_and_statistics_use_conv_fans():
    flow.manual_seed(1)
    # conv weight [out=32, in=16, 5, 5]: fan_in 16 * 25 = 400, fan_out 32 * 25 = 800
    a, std = _stats(init.kaiming_uniform_, 32, 16, 5, 5)
    bound = math.sqrt(2.0) * math.sqrt(3.0 / 400)
    assert np.abs(a).max() <= bound and np.abs(a).max() > 0.999 * bound
    assert abs(std - bound / math.sqrt(3)) < 0.02 * bound / math.sqrt(3)
    a, _ = _stats(lambda t: init.kaiming_uniform_(t, a=math.sqrt(5)), 32, 16, 5, 5)
    assert np.abs(a).max() <= 1 / math.sqrt(400)  # PyTorch's Linear/Conv default: 1/sqrt(fan_in)
    assert np.abs(a).max() > 0.999 / math.sqrt(400)
    _, std = _stats(lambda t: init.kaiming_normal_(t, mode="fan_out", nonlinearity="relu"),
                    32, 16, 5, 5)
    assert abs(std - math.sqrt(2.0 / 800)) < 0.02 * math.sqrt(2.0 / 800)
    _, std = _stats(lambda t: init.kaiming_normal_(t, nonlinearity="tanh"), 32, 16, 5, 5)
    assert abs(std - (5.0 / 3.0) / math.sqrt(400)) < 0.02 * (5.0 / 3.0) / math.sqrt(400)
    with pytest.raises(ValueError, match="kaiming_uniform_: mode must be fan_in or fan_out"):
        init.kaiming_uniform_(flow.empty(3, 4), mode="fan_avg")
    with pytest.raises(ValueError, match=re.escape("fan in/out need a weight of 2 or more dims, "
                                                   "got shape [4]")):
        init.xavier_uniform_(flow.empty(4))


# ---- optim ---------------------------------------------------------------------------
def _grads(params, seed):
    rng = np.random.default_rng(seed)
    for p in params:
        p.grad = flow.tensor(rng.standard_normal(p.shape).astype(p.numpy().dtype))


def test_sgd_nesterov_matches_numpy():
    rng = np.random.default_rng(0)
    start = rng.standard_normal((3, 2))
    p = nn.Parameter(flow.tensor(start))
    opt = flow.optim.SGD([p], lr=0.1, momentum=0.9, weight_decay=0.01, nesterov=True)
    want, buf = start.copy(), np.zeros_like(start)
    for step in range(3):
        _grads([p], step)
        g = p.grad.numpy() + 0.01 * want
        buf = 0.9 * buf + g
        want = want - 0.1 * (g + 0.9 * buf)
        opt.step()
        np.testing.assert_allclose(p.numpy(), want, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(opt.state_dict()["0/momentum"].numpy(), buf, rtol=1e-12)
    with pytest.raises(ValueError, match="SGD: nesterov=True needs a positive momentum, got 0"):
        flow.optim.SGD([p], lr=0.1, nesterov=True)


def test_add_param_group_takes_defaults_and_its_own_settings():
    rng = np.random.default_rng(1)
    a0, b0 = rng.standard_normal(3), rng.standard_normal(2)
    a, b = nn.Parameter(flow.tensor(a0)), nn.Parameter(flow.tensor(b0))
    opt = flow.optim.SGD([("a", a)], lr=0.1, momentum=0.5)
    opt.add_param_group({"params": [("b", b)], "lr": 0.01})
    assert [g["lr"] for g in opt.param_groups] == [0.1, 0.01]
    assert opt.param_groups[1]["momentum"] == 0.5
    want_a, want_b, buf_a, buf_b = a0.copy(), b0.copy(), np.zeros(3), np.zeros(2)
    for step in range(2):
        _grads([a, b], step)
        buf_a = 0.5 * buf_a + a.grad.numpy()
        buf_b = 0.5 * buf_b + b.grad.numpy()
        want_a, want_b = want_a - 0.1 * buf_a, want_b - 0.01 * buf_b
        opt.step()
    np.testing.assert_allclose(a.numpy(), want_a, rtol=1e-12)
    np.testing.assert_allclose(b.numpy(), want_b, rtol=1e-12)
    assert sorted(opt.state_dict()) == ["a/momentum", "b/momentum"]
    with pytest.raises(ValueError, match="SGD: parameter 'b' appears twice"):
        opt.add_param_group({"params": [("b", b)]})
    with pytest.raises(ValueError, match="SGD: lr=-1 is negative"):
        opt.add_param_group({"params": [nn.Parameter(flow.zeros(1))], "lr": -1})
    with pytest.raises(TypeError, match="add_param_group: expects a dict with 'params'"):
        opt.add_param_group([b])
    assert len(opt.param_groups) == 2


def test_adam_add_param_group_positions_continue():
    p, q = nn.Parameter(flow.zeros(2)), nn.Parameter(flow.zeros(3))
    opt = flow.optim.Adam([p], lr=1e-3)
    opt.add_param_group({"params": q, "lr": 1e-2})
    _grads([p, q], 0)
    opt.step()
    assert sorted(opt.state_dict()) == ["0/m", "0/step", "0/v", "1/m", "1/step", "1/v"]
    # Adam's first step moves every element by lr (bias-corrected m / sqrt(v) = sign(g))
    np.testing.assert_allclose(np.abs(q.numpy()), 1e-2, rtol=1e-5)


# ---- functional losses under nn.Graph -------------------------------------------------
class _LossGraph(nn.Graph):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def build(self, x, y):
        return self.fn(x, y)


@pytest.mark.parametrize("fn", [
    lambda x, y: F.mse_loss(x, x * 0.5) + F.l1_loss(x, x * 0.25),
    lambda x, y: F.nll_loss(F.log_softmax(x, 1), y),
    lambda x, y: F.binary_cross_entropy_with_logits(x, F.sigmoid(x * 0.5)),
], ids=["mse_l1", "nll", "bce"])
def test_functional_losses_trace_into_a_graph(fn):
    x = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    y = np.array([0, 3, 1, 2, 1])
    eager = fn(flow.tensor(x), flow.tensor(y)).item()
    graph = _LossGraph(fn)
    got = float(graph(flow.tensor(x), flow.tensor(y)).numpy())
    assert abs(got - eager) <= 1e-5 * abs(eager) + 1e-6
