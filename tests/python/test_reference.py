"""Checks the numpy reference models and optimizers (tests/python/reference/).

They are the oracle of test_models.py, so they are checked here on their
own, without oneflow_lite: every parameter's gradient against a central
finite difference in float64 (a few sampled coordinates per parameter), the
layers' forwards against direct loops or known values, GPT's causality, and
the optimizers against hand-worked steps.
"""
from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

from reference import common, numpy_gpt, numpy_mlp, numpy_optim, numpy_vgg

MLP = SimpleNamespace(in_features=5, hidden=(7, 6), num_classes=4)
GPT = SimpleNamespace(vocab_size=11, seq_len=5, n_layer=2, n_head=2, n_embd=8,
                      layer_norm_epsilon=1e-5)
VGG = SimpleNamespace(features=(3, "M", 4, 4, "M"), in_channels=2, image_size=8, fc=(10,),
                      num_classes=3)
MODELS = {"mlp": (numpy_mlp, MLP, 4), "gpt": (numpy_gpt, GPT, 3), "vgg": (numpy_vgg, VGG, 3)}

COORDS_PER_PARAM = 4
STEP = 1e-6


def _finite_difference(module, params, config, batch, name, index):
    saved = params[name][index]
    params[name][index] = saved + STEP
    plus = module.loss(params, config, batch)
    params[name][index] = saved - STEP
    minus = module.loss(params, config, batch)
    params[name][index] = saved
    return (plus - minus) / (2 * STEP)


@pytest.mark.parametrize("model", sorted(MODELS))
def test_gradients_match_finite_differences(model):
    module, config, batch_size = MODELS[model]
    rng = np.random.default_rng(7)
    params = module.random_params(config, rng)
    batch = module.random_batch(config, batch_size, rng)
    loss, grads = module.loss_and_grads(params, config, batch)
    assert np.isfinite(loss)
    assert sorted(grads) == sorted(params)
    for name, value in params.items():
        assert grads[name].shape == value.shape, name
        assert grads[name].dtype == np.float64, name
        flat = rng.choice(value.size, size=min(COORDS_PER_PARAM, value.size), replace=False)
        for f in flat:
            index = np.unravel_index(f, value.shape)
            numeric = _finite_difference(module, params, config, batch, name, index)
            assert abs(grads[name][index] - numeric) <= 1e-7 + 1e-5 * abs(numeric), (
                f"{model}: d loss / d {name}{list(index)}: analytic {grads[name][index]!r}, "
                f"finite difference {numeric!r}")


def test_gpt_embedding_gradients_cover_every_used_row():
    # wte's gradient is a scatter-add: check it on the rows a sample may miss.
    rng = np.random.default_rng(3)
    params = numpy_gpt.random_params(GPT, rng)
    ids, labels = numpy_gpt.random_batch(GPT, 2, rng)
    ids[0, :3] = 4  # a row used three times
    _, grads = numpy_gpt.loss_and_grads(params, GPT, (ids, labels))
    for row in (4, int(ids[1, 4])):
        for col in (0, GPT.n_embd - 1):
            numeric = _finite_difference(numpy_gpt, params, GPT, (ids, labels), "wte", (row, col))
            assert abs(grads["wte"][row, col] - numeric) <= 1e-7 + 1e-5 * abs(numeric)
    unused = sorted(set(range(GPT.vocab_size)) - set(ids.reshape(-1).tolist()))
    assert unused and np.all(grads["wte"][unused] == 0)


def test_gpt_key_bias_gradient_vanishes():
    # Softmax ignores a shift shared by a whole row of scores, and a key bias
    # shifts each query's row by q . b_k: the loss does not depend on it.
    rng = np.random.default_rng(6)
    params = numpy_gpt.random_params(GPT, rng)
    _, grads = numpy_gpt.loss_and_grads(params, GPT, numpy_gpt.random_batch(GPT, 2, rng))
    d = GPT.n_embd
    for i in range(GPT.n_layer):
        bias = grads[f"h{i}.attn.qkv.bias"]
        assert np.abs(bias[d:2 * d]).max() < 1e-12
        assert np.abs(bias[:d]).max() > 1e-4 and np.abs(bias[2 * d:]).max() > 1e-4


def test_gpt_is_causal():
    rng = np.random.default_rng(5)
    params = numpy_gpt.random_params(GPT, rng)
    ids, _ = numpy_gpt.random_batch(GPT, 2, rng)
    before = numpy_gpt.logits(params, GPT, ids)
    changed = ids.copy()
    changed[:, 3:] = (changed[:, 3:] + 1) % GPT.vocab_size
    after = numpy_gpt.logits(params, GPT, changed)
    np.testing.assert_array_equal(before[:, :3], after[:, :3])
    assert np.abs(before[:, 3:] - after[:, 3:]).max() > 1e-3


def test_conv2d_and_max_pool_match_direct_loops():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 5, 6))
    w = rng.standard_normal((4, 3, 3, 3))
    for stride, padding in ((1, 1), (2, 0), (2, 1)):
        y, _ = numpy_vgg.conv2d_forward(x, w, stride=stride, padding=padding)
        xp = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
        ho = (x.shape[2] + 2 * padding - 3) // stride + 1
        wo = (x.shape[3] + 2 * padding - 3) // stride + 1
        expect = np.zeros((2, 4, ho, wo))
        for n, o, i, j in np.ndindex(*expect.shape):
            patch = xp[n, :, i * stride:i * stride + 3, j * stride:j * stride + 3]
            expect[n, o, i, j] = (patch * w[o]).sum()
        np.testing.assert_allclose(y, expect, rtol=1e-12, atol=1e-12)
    y, _ = numpy_vgg.max_pool_forward(x[:, :, :4, :6])
    expect = x[:, :, :4, :6].reshape(2, 3, 2, 2, 3, 2).max(axis=(3, 5))
    np.testing.assert_array_equal(y, expect)


def test_conv2d_backward_with_stride_matches_finite_differences():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 2, 5, 5))
    w = rng.standard_normal((3, 2, 3, 3))
    dy = rng.standard_normal((1, 3, 3, 3))
    y, cache = numpy_vgg.conv2d_forward(x, w, stride=2, padding=1)
    dx, dw = numpy_vgg.conv2d_backward(cache, dy)

    def f(x_, w_):
        return (numpy_vgg.conv2d_forward(x_, w_, stride=2, padding=1)[0] * dy).sum()

    for arr, grad, other in ((x, dx, "x"), (w, dw, "w")):
        for flat in (0, arr.size // 2, arr.size - 1):
            index = np.unravel_index(flat, arr.shape)
            plus, minus = arr.copy(), arr.copy()
            plus[index] += STEP
            minus[index] -= STEP
            args_p = (plus, w) if other == "x" else (x, plus)
            args_m = (minus, w) if other == "x" else (x, minus)
            numeric = (f(*args_p) - f(*args_m)) / (2 * STEP)
            assert abs(grad[index] - numeric) <= 1e-7 + 1e-6 * abs(numeric)


def test_layer_known_values():
    assert common.gelu_forward(np.array([1.0]))[0][0] == pytest.approx(0.8413447460685429,
                                                                       abs=1e-15)
    assert common.gelu_forward(np.array([-2.0]))[0][0] == pytest.approx(-0.04550026389635842,
                                                                        abs=1e-15)
    x = np.random.default_rng(2).standard_normal((3, 16)) * 5 + 2
    y, _ = common.layer_norm_forward(x, np.ones(16), np.zeros(16), 1e-5)
    np.testing.assert_allclose(y.mean(axis=-1), 0, atol=1e-12)
    np.testing.assert_allclose(y.var(axis=-1), 1, rtol=1e-5)
    logits = np.log(np.array([[1.0, 1.0, 2.0]]))
    loss, dlogits = common.cross_entropy(logits, np.array([2]))
    assert loss == pytest.approx(math.log(2.0), abs=1e-15)
    np.testing.assert_allclose(dlogits, [[0.25, 0.25, -0.5]], atol=1e-15)


def _two_steps(optimizer, p0=1.0, g=2.0):
    params, trace = {"p": np.array([p0])}, []
    for _ in range(2):
        optimizer.step(params, {"p": np.array([g])})
        trace.append(float(params["p"][0]))
    return trace


def test_sgd_hand_worked():
    # g' = g + wd p; buf = 0.9 buf + g'; p -= lr buf
    trace = _two_steps(numpy_optim.SGD(lr=0.1, momentum=0.9, weight_decay=0.01))
    assert trace[0] == pytest.approx(1 - 0.1 * 2.01, abs=1e-15)           # 0.799
    buf2 = 0.9 * 2.01 + (2 + 0.01 * 0.799)
    assert trace[1] == pytest.approx(0.799 - 0.1 * buf2, abs=1e-15)        # 0.417301
    assert _two_steps(numpy_optim.SGD(lr=0.5))[1] == pytest.approx(-1.0, abs=1e-15)


def test_adamw_and_adam_hand_worked():
    # A constant gradient makes m_hat = g and v_hat = g^2 at every step.
    step = 0.1 * 2.0 / (2.0 + 1e-8)
    trace = _two_steps(numpy_optim.AdamW(lr=0.1, weight_decay=0.01))
    assert trace[0] == pytest.approx(1.0 * (1 - 0.001) - step, abs=1e-15)
    assert trace[1] == pytest.approx(trace[0] * (1 - 0.001) - step, abs=1e-15)
    # Adam folds the decay into the gradient: first step is lr * sign(g').
    adam = numpy_optim.Adam(lr=0.1, weight_decay=0.01)
    first = _two_steps(adam)[0]
    assert first == pytest.approx(1.0 - 0.1 * 2.01 / (2.01 + 1e-8), abs=1e-15)
    # Second step of Adam with g1 = 2.01, g2 = 2 + 0.01 * first.
    g1, g2 = 2.01, 2.0 + 0.01 * first
    m = 0.9 * 0.1 * g1 + 0.1 * g2
    v = 0.999 * 0.001 * g1 ** 2 + 0.001 * g2 ** 2
    expect = first - 0.1 * (m / (1 - 0.9 ** 2)) / (math.sqrt(v / (1 - 0.999 ** 2)) + 1e-8)
    assert float(adam.t["p"]) == 2
    params = {"p": np.array([1.0])}
    adam2 = numpy_optim.Adam(lr=0.1, weight_decay=0.01)
    adam2.step(params, {"p": np.array([2.0])})
    adam2.step(params, {"p": np.array([2.0])})
    assert params["p"][0] == pytest.approx(expect, abs=1e-14)


def test_train_loop_copies_params_and_reports_losses_before_each_step():
    rng = np.random.default_rng(4)
    params = numpy_mlp.random_params(MLP, rng)
    batches = [numpy_mlp.random_batch(MLP, 8, rng)] * 20
    original = {k: v.copy() for k, v in params.items()}
    losses, final = numpy_optim.train(numpy_mlp.loss_and_grads, params, MLP, batches,
                                      numpy_optim.SGD(lr=0.1, momentum=0.9))
    assert losses[0] == pytest.approx(numpy_mlp.loss(original, MLP, batches[0]), abs=1e-15)
    assert losses[-1] < 0.5 * losses[0]  # one repeated batch is easy to fit
    for name in params:
        np.testing.assert_array_equal(params[name], original[name])
        assert not np.array_equal(final[name], original[name])
