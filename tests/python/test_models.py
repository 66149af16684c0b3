"""The reference models of oneflow_lite.models trained through a session
against the numpy references (tests/python/reference/, checked on their own
by test_reference.py).

For each model (small, float32, dropout 0) and each optimizer (SGD with
momentum and weight decay, AdamW): 10 steps from the same initial weights on
the same batches; the losses must agree closely and the final parameters
loosely (float32 against the float64 reference).

One slice is compared differently: the key third of GPT's qkv bias. Adding
a vector to every key adds the same number to every score of a query's row,
which softmax ignores, so its gradient is zero in exact arithmetic (the
reference gets ~1e-17, see test_reference.py) and float32 rounding noise
(~1e-11) remains. Adam divides m by sqrt(v) + eps and turns that noise into
steps of ~1e-6 each, a trajectory of noise that no reference can match. It
is only checked to stay near its start, and it cannot change the loss.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

from oneflow_lite.graph_builder import GraphBuilder
from oneflow_lite.models import GPTConfig, MLPConfig, VGGConfig, gpt, mlp, vgg
from reference import numpy_gpt, numpy_mlp, numpy_optim, numpy_vgg

STEPS = 10
THREADS = 2

# name -> (model module, config, numpy reference, batch size)
CASES = {
    "mlp": (mlp, MLPConfig(in_features=12, hidden=(32, 24), num_classes=5), numpy_mlp, 8),
    "gpt": (gpt, GPTConfig(vocab_size=17, seq_len=8, n_layer=2, n_head=2, n_embd=16), numpy_gpt,
            3),
    "vgg": (vgg, VGGConfig(features=(4, "M", 8, "M"), in_channels=3, image_size=8, fc=(16,),
                           num_classes=5), numpy_vgg, 4),
}
OPTIMIZERS = {
    "sgd": {"lr": 0.1, "momentum": 0.9, "weight_decay": 0.01},
    "adamw": {"lr": 0.01, "weight_decay": 0.01},
}


def _batches(reference, config, batch_size, seed):
    """STEPS distinct batches; float data in float32, labels int64."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(STEPS):
        data, labels = reference.random_batch(config, batch_size, rng)
        if np.issubdtype(data.dtype, np.floating):
            data = data.astype(np.float32)
        out.append((data, labels))
    return out


def _loss_invariant(name, config, param):
    """Mask of the entries the loss does not depend on (see the module
    docstring), or None."""
    if name != "gpt" or not param.endswith(".attn.qkv.bias"):
        return None
    mask = np.zeros(3 * config.n_embd, bool)
    mask[config.n_embd:2 * config.n_embd] = True
    return mask


def _train_session(model, config, params, batch_size, batches, optimizer, hyper):
    builder = GraphBuilder()
    names = model.build(builder, config, params, batch_size, train=True)
    builder.minimize(names["loss"], optimizer, **hyper)
    session = builder.session(num_threads=THREADS)
    losses = []
    for data, labels in batches:
        (loss,) = session.run({names["data"]: data, names["labels"]: labels}, [names["loss"]])
        assert loss.shape == () and loss.dtype == np.float32
        losses.append(float(loss))
    return np.array(losses), {name: session.get_variable(name) for name in params}


@pytest.mark.parametrize("optimizer", sorted(OPTIMIZERS))
@pytest.mark.parametrize("name", sorted(CASES))
def test_training_matches_numpy_reference(name, optimizer):
    model, config, reference, batch_size = CASES[name]
    params = model.init_params(config, seed=0)
    batches = _batches(reference, config, batch_size, seed=1)
    hyper = OPTIMIZERS[optimizer]

    losses, final = _train_session(model, config, params, batch_size, batches, optimizer, hyper)
    start64 = {k: v.astype(np.float64) for k, v in params.items()}
    expect_losses, expect_final = numpy_optim.train(
        reference.loss_and_grads, start64, config, batches,
        numpy_optim.make_optimizer(optimizer, **hyper))

    np.testing.assert_allclose(losses, expect_losses, rtol=1e-4, atol=1e-6)
    for param in params:
        assert final[param].dtype == np.float32, param
        got, want = final[param], expect_final[param]
        invariant = _loss_invariant(name, config, param)
        if invariant is not None:
            np.testing.assert_allclose(got[invariant], params[param][invariant], atol=1e-4)
            got, want = got[~invariant], want[~invariant]
        np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-5,
                                   err_msg=f"{name}/{optimizer}: parameter {param}")
        # Every parameter must really have moved, so the check above has teeth.
        moved = np.abs(expect_final[param] - start64[param]).max()
        assert moved > 1e-4, f"{name}/{optimizer}: {param} moved only {moved}"


@pytest.mark.parametrize("name", sorted(CASES))
def test_float64_training_matches_numpy_reference_to_rounding(name):
    # The same in float64: no float32 noise left, so agreement to ~1e-15.
    model, config, reference, batch_size = CASES[name]
    params = model.init_params(config, seed=0, dtype=np.float64)
    batches = [(d.astype(np.float64) if d.dtype.kind == "f" else d, labels)
               for d, labels in _batches(reference, config, batch_size, seed=1)]
    hyper = OPTIMIZERS["adamw"]
    builder = GraphBuilder()
    names = model.build(builder, config, params, batch_size, train=True)
    builder.minimize(names["loss"], "adamw", **hyper)
    session = builder.session(num_threads=THREADS)
    losses = [float(session.run({names["data"]: d, names["labels"]: y}, [names["loss"]])[0])
              for d, y in batches]
    expect_losses, expect_final = numpy_optim.train(
        reference.loss_and_grads, params, config, batches,
        numpy_optim.make_optimizer("adamw", **hyper))
    np.testing.assert_allclose(losses, expect_losses, rtol=1e-12)
    for param in params:
        np.testing.assert_allclose(session.get_variable(param), expect_final[param], rtol=1e-9,
                                   atol=1e-11, err_msg=f"{name}: parameter {param}")


@pytest.mark.parametrize("name", sorted(CASES))
def test_init_params_match_reference_names_and_are_deterministic(name):
    model, config, reference, _ = CASES[name]
    params = model.init_params(config, seed=3)
    shapes = reference.param_shapes(config)
    assert list(params) == list(shapes)
    for key, value in params.items():
        assert value.shape == tuple(shapes[key]) and value.dtype == np.float32, key
    again = model.init_params(config, seed=3)
    other = model.init_params(config, seed=4)
    assert all(np.array_equal(params[k], again[k]) for k in params)
    assert any(not np.array_equal(params[k], other[k]) for k in params)
    as64 = model.init_params(config, seed=3, dtype=np.float64)
    assert all(as64[k].dtype == np.float64 for k in params)
    np.testing.assert_allclose(as64["fc0.weight" if name != "gpt" else "wte"],
                               params["fc0.weight" if name != "gpt" else "wte"], rtol=1e-6)


@pytest.mark.parametrize("name", sorted(CASES))
def test_build_declares_inputs_and_scalar_loss(name):
    model, config, _, batch_size = CASES[name]
    builder = GraphBuilder()
    names = model.build(builder, config, model.init_params(config, seed=0), batch_size)
    assert builder.shape(names["loss"]) == []
    assert builder.shape(names["labels"])[0] == batch_size
    assert builder.dtype(names["labels"]) == "int64"
    logits = builder.shape(names["logits"])
    assert logits[0] == batch_size
    assert logits[-1] == getattr(config, "num_classes", getattr(config, "vocab_size", None))


def test_gpt_dropout_ops_get_distinct_seeds():
    config = GPTConfig(vocab_size=11, seq_len=4, n_layer=2, n_head=2, n_embd=8, dropout=0.1)
    params = gpt.init_params(config, seed=0)
    builder = GraphBuilder()
    names = gpt.build(builder, config, params, batch_size=2, train=True)
    ops = [line for line in str(builder.program).splitlines() if "= dropout(" in line]
    # embedding + per block (attention probabilities, two residual branches)
    assert len(ops) == 1 + 3 * config.n_layer
    seeds = [int(re.search(r"seed=(\d+)", line).group(1)) for line in ops]
    assert len(set(seeds)) == len(seeds), ops
    assert all("rate=0.1" in line for line in ops), ops
    eval_builder = GraphBuilder()
    gpt.build(eval_builder, config, params, batch_size=2, train=False)
    assert "dropout" not in str(eval_builder.program)

    builder.minimize(names["loss"], "sgd", lr=0.1)
    session = builder.session(num_threads=THREADS)
    ids = np.arange(8, dtype=np.int64).reshape(2, 4)
    loss = [float(session.run({names["data"]: ids, names["labels"]: ids}, [names["loss"]])[0])
            for _ in range(3)]
    assert np.all(np.isfinite(loss))
