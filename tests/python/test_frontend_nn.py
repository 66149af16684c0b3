"""flow.nn layers in eager mode: each forward against a numpy formula and
each backward (input and parameters) against central finite differences,
in float64; Module bookkeeping (names, modes, state_dict, load errors),
flow.save / flow.load, and the shape-mismatch message naming the module."""
from __future__ import annotations

import copy
import math

import numpy as np
import pytest

import oneflow_lite as flow
from op_cases.nn import dropout_mask

nn = flow.nn
F = flow.nn.functional
_erf = np.vectorize(math.erf, otypes=[np.float64])


def _softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _conv2d(x, w, b, stride, pad):
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = (h + 2 * pad - kh) // stride + 1, (wd + 2 * pad - kw) // stride + 1
    y = np.zeros((n, o, oh, ow))
    for i in range(oh):
        for j in range(ow):
            patch = xp[:, :, i * stride:i * stride + kh, j * stride:j * stride + kw]
            y[:, :, i, j] = np.einsum("nckl,ockl->no", patch, w)
    return y + b[None, :, None, None]


def _pool(x, k, reduce):
    n, c, h, w = x.shape
    return reduce(x.reshape(n, c, h // k, k, w // k, k), axis=(3, 5))


def _attention(x, wqkv, bqkv, wp, bp, heads):
    b, t, d = x.shape
    qkv = (x.reshape(b * t, d) @ wqkv.T + bqkv).reshape(b, t, heads, 3, -1)  # head-major
    q, k, v = (qkv[:, :, :, i].transpose(0, 2, 1, 3)
               for i in range(3))
    mask = np.where(np.triu(np.ones((t, t), bool), 1), -1e9, 0.0)
    p = _softmax(q @ k.transpose(0, 1, 3, 2) / math.sqrt(d // heads) + mask)
    y = (p @ v).transpose(0, 2, 1, 3).reshape(b * t, d)
    return (y @ wp.T + bp).reshape(b, t, d)


def _numeric(f, array, eps=1e-6):
    g = np.zeros_like(array)
    for i in np.ndindex(array.shape):
        old = array[i]
        array[i] = old + eps
        hi = f()
        array[i] = old - eps
        lo = f()
        array[i] = old
        g[i] = (hi - lo) / (2 * eps)
    return g


def check_layer(module, x_array, expected, grad_x=True):
    """Forward vs ``expected`` and every gradient vs finite differences of
    sum(y * r) for a fixed random r."""
    module.double()
    x = flow.tensor(x_array, requires_grad=grad_x)
    y = module(x)
    np.testing.assert_allclose(y.numpy(), expected, rtol=1e-9, atol=1e-10)
    r = np.random.default_rng(7).standard_normal(y.shape)
    (y * flow.tensor(r)).sum().backward()

    def loss():
        with flow.no_grad():
            return float((module(flow.tensor(x_array)).numpy() * r).sum())

    if grad_x:
        np.testing.assert_allclose(x.grad.numpy(), _numeric(loss, x_array), rtol=1e-5, atol=1e-7)
    for name, p in module.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), _numeric(loss, p.numpy()), rtol=1e-5,
                                   atol=1e-7, err_msg=name)


RNG = np.random.default_rng(0)


def test_linear():
    m = nn.Linear(4, 3)
    x = RNG.standard_normal((5, 4))
    w, b = m.weight.numpy().astype(np.float64), m.bias.numpy().astype(np.float64)
    assert m.weight.shape == (3, 4)
    bound = 1 / math.sqrt(4)
    assert np.abs(w).max() <= bound and np.abs(b).max() <= bound
    check_layer(m, x, x @ w.T + b)


def test_linear_on_3d_input_and_without_bias():
    m = nn.Linear(4, 2, bias=False)
    x = RNG.standard_normal((2, 3, 4))
    check_layer(m, x, x @ m.weight.numpy().astype(np.float64).T)
    assert [n for n, _ in m.named_parameters()] == ["weight"]


def test_conv2d_and_pools():
    m = nn.Conv2d(2, 3, 3, stride=1, padding=1)
    x = RNG.standard_normal((2, 2, 4, 4))
    check_layer(m, x, _conv2d(x, m.weight.numpy().astype(np.float64),
                              m.bias.numpy().astype(np.float64), 1, 1))
    s = nn.Conv2d(2, 1, 2, stride=2, padding=0)
    check_layer(s, x, _conv2d(x, s.weight.numpy().astype(np.float64),
                              s.bias.numpy().astype(np.float64), 2, 0))
    check_layer(nn.MaxPool2d(2, 2), x, _pool(x, 2, np.max))
    check_layer(nn.AvgPool2d(2), x, _pool(x, 2, np.mean))


def test_activations_softmax_and_flatten():
    x = RNG.standard_normal((3, 5))
    x[np.abs(x) < 0.05] = 0.3  # keep ReLU away from its kink for differences
    check_layer(nn.ReLU(), x, np.maximum(x, 0))
    check_layer(nn.GELU(), x, 0.5 * x * (1 + _erf(x / math.sqrt(2))))
    check_layer(nn.Tanh(), x, np.tanh(x))
    check_layer(nn.Sigmoid(), x, 1 / (1 + np.exp(-x)))
    check_layer(nn.Softmax(dim=0), x, _softmax(x, 0))
    y = RNG.standard_normal((2, 3, 2))
    check_layer(nn.Flatten(), y, y.reshape(2, 6))


def test_layer_norm():
    m = nn.LayerNorm(5, eps=1e-5)
    m.weight._value[...] = RNG.standard_normal(5) + 1
    m.bias._value[...] = RNG.standard_normal(5)
    x = RNG.standard_normal((2, 3, 5))
    mean, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    want = (x - mean) / np.sqrt(var + 1e-5) * m.weight.numpy() + m.bias.numpy()
    check_layer(m, x, want)
    assert [n for n, _ in m.named_parameters()] == ["weight", "bias"]


def test_embedding():
    m = nn.Embedding(6, 3)
    ids = np.array([[0, 5, 2], [2, 2, 1]])
    m.double()
    y = m(flow.tensor(ids))
    np.testing.assert_array_equal(y.numpy(), m.weight.numpy()[ids])
    (y * 2).sum().backward()
    want = np.zeros((6, 3))
    np.add.at(want, ids.reshape(-1), 2.0)
    np.testing.assert_allclose(m.weight.grad.numpy(), want)
    with pytest.raises(TypeError, match="ids must be integer"):
        m(flow.tensor([0.5]))


def test_cross_entropy_loss():
    logits = RNG.standard_normal((4, 5))
    labels = np.array([0, 4, 2, 2])
    x = flow.tensor(logits, requires_grad=True)
    loss = nn.CrossEntropyLoss()(x, flow.tensor(labels))
    p = _softmax(logits)
    want = -np.log(p[np.arange(4), labels]).mean()
    np.testing.assert_allclose(loss.item(), want, rtol=1e-12)
    loss.backward()
    onehot = np.eye(5)[labels]
    np.testing.assert_allclose(x.grad.numpy(), (p - onehot) / 4, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(nn.CrossEntropyLoss("sum")(x, flow.tensor(labels)).item(),
                               want * 4, rtol=1e-12)
    with pytest.raises(ValueError, match="unknown reduction 'max'"):
        nn.CrossEntropyLoss("max")


def test_causal_self_attention():
    m = nn.CausalSelfAttention(n_embd=4, n_head=2, seq_len=3)
    x = RNG.standard_normal((2, 3, 4))
    m.double()
    p = {k: v.numpy() for k, v in m.state_dict().items()}
    want = _attention(x, p["qkv.weight"], p["qkv.bias"], p["proj.weight"], p["proj.bias"], 2)
    check_layer(m, x, want)
    assert "mask" not in m.state_dict()  # non-persistent buffer
    short = RNG.standard_normal((1, 2, 4))  # T < seq_len uses the mask's corner
    np.testing.assert_allclose(m(flow.tensor(short)).numpy(),
                               _attention(short, p["qkv.weight"], p["qkv.bias"],
                                          p["proj.weight"], p["proj.bias"], 2), rtol=1e-9)
    with pytest.raises(ValueError, match="n_embd=5 is not a multiple of n_head=2"):
        nn.CausalSelfAttention(5, 2, 3)


def test_dropout_uses_the_kernel_mask_per_iteration_and_only_in_train():
    m = nn.Dropout(0.3, seed=11)
    x = RNG.standard_normal((6, 7)).astype(np.float32)
    xt = flow.tensor(x, requires_grad=True)
    for iteration in range(2):
        y = m(xt)
        mask = dropout_mask(x.shape, np.float32, 0.3, 11, iteration)
        np.testing.assert_array_equal(y.numpy(), x * mask)
    y.sum().backward()
    np.testing.assert_array_equal(xt.grad.numpy(), mask)
    m.eval()
    assert m(xt) is xt
    flow.manual_seed(3)
    a = nn.Dropout(0.5).seed
    flow.manual_seed(3)
    assert nn.Dropout(0.5).seed == a
    with pytest.raises(ValueError, match="p=1.0 is outside"):
        nn.Dropout(1.0)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Dropout(0.1))
        self.blocks = nn.ModuleList([nn.Linear(4, 4), nn.LayerNorm(4)])
        self.register_buffer("scale", flow.ones(4))
        self.register_buffer("cache", flow.zeros(2), persistent=False)

    def forward(self, x):
        x = self.body(x)
        for b in self.blocks:
            x = b(x)
        return x * self.scale


def test_module_names_modes_and_state_dict():
    net = Net()
    names = [n for n, _ in net.named_parameters()]
    assert names == ["body.0.weight", "body.0.bias", "blocks.0.weight", "blocks.0.bias",
                     "blocks.1.weight", "blocks.1.bias"]
    assert list(net.state_dict()) == names + ["scale"]
    assert len(list(net.parameters())) == 6 and len(list(net.children())) == 2
    assert all(m.training for m in net.modules())
    net.eval()
    assert not any(m.training for m in net.modules())
    assert net(flow.ones(2, 3)).shape == (2, 4)
    assert "Linear(in_features=3, out_features=4, bias=True)" in repr(net)


def test_deepcopy_gives_an_independent_module():
    net = Net()
    twin = copy.deepcopy(net)
    for (k, a), b in zip(net.state_dict().items(), twin.state_dict().values()):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=k)
    twin.body[0].weight.numpy()[...] = 0
    assert net.body[0].weight.numpy().any()
    assert isinstance(twin.body[0].weight, nn.Parameter) and twin.body[0].weight.requires_grad
    x = flow.ones(2, 3)
    np.testing.assert_array_equal(net.eval()(x).numpy(), copy.deepcopy(net)(x).numpy())


def test_load_state_dict_checks_before_changing_anything():
    net, other = Net(), Net()
    before = {k: v.numpy().copy() for k, v in net.state_dict().items()}
    sd = dict(other.state_dict())
    bad = dict(sd)
    bad["blocks.0.weight"] = flow.zeros(4, 5)
    with pytest.raises(ValueError, match=r"'blocks.0.weight' has shape \[4, 5\].*\[4, 4\]"):
        net.load_state_dict(bad)
    missing = {k: v for k, v in sd.items() if k != "scale"}
    with pytest.raises(KeyError, match=r"missing keys \['scale'\]"):
        net.load_state_dict(missing)
    extra = dict(sd, bogus=flow.ones(1))
    with pytest.raises(KeyError, match=r"unexpected keys \['bogus'\]"):
        net.load_state_dict(extra)
    for k, v in net.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), before[k])  # unchanged
    assert net.load_state_dict(extra, strict=False) == ([], ["bogus"])
    for k, v in net.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), sd[k].numpy())


def test_save_and_load_round_trip_and_truncation(tmp_path):
    net = Net()
    path = str(tmp_path / "net.npz")
    flow.save(net.state_dict(), path)
    loaded = flow.load(path)
    assert list(loaded) == list(net.state_dict())
    fresh = Net()
    fresh.load_state_dict(loaded)
    for k, v in fresh.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), net.state_dict()[k].numpy())
    data = open(path, "rb").read()
    cut = str(tmp_path / "cut.npz")
    with open(cut, "wb") as f:
        f.write(data[:len(data) // 2])
    with pytest.raises(ValueError, match="cut.npz' is not a complete flow.save file"):
        flow.load(cut)
    with pytest.raises(TypeError, match="value of 'x' is a str"):
        flow.save({"x": "nope"}, path)
    with pytest.raises(FileNotFoundError, match="no file"):
        flow.load(str(tmp_path / "missing.npz"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cut.npz", "net.npz"]  # no temp left


def test_shape_mismatch_inside_a_module_names_module_and_shapes():
    net = Net()
    with pytest.raises(ValueError, match=r"in module body.0 \(Linear\): input shape \[2, 5\]: "
                                         r"shape\[-1\]=5 != in_features=3"):
        net(flow.ones(2, 5))
    model = flow.models.GPT(flow.models.GPTConfig(vocab_size=5, seq_len=4, n_layer=1, n_head=1,
                                                  n_embd=4))
    model.h[0].mlp.proj = nn.Linear(16, 5)
    with pytest.raises(ValueError, match=r"in module h.0 \(Block\): add: a.shape=\(1, 4, 4\) "
                                         r"and b.shape=\(1, 4, 5\)"):
        model(flow.zeros(1, 4, dtype=flow.int64))
    with pytest.raises(ValueError, match=r"in module <top> \(GPT\): ids shape \[1, 5\]"):
        model(flow.zeros(1, 5, dtype=flow.int64))


def test_meta_module_declares_without_allocating_and_loads_values():
    with flow.device("meta"):
        big = nn.Linear(100000, 100000)
    assert big.weight.is_meta and big.weight.shape == (100000, 100000)
    with pytest.raises(RuntimeError,
                       match=r"in module <top> \(Linear\): matmul: input 1 .*'meta'"):
        big(flow.ones(1, 100000))
    with flow.device("meta"):
        small = nn.Linear(2, 3)
    small.load_state_dict({"weight": np.ones((3, 2)), "bias": np.zeros(3)})
    np.testing.assert_array_equal(small(flow.ones(1, 2)).numpy(), [[2, 2, 2]])
