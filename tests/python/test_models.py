"""The models of flow.models, traced with their loss (models.trace_loss)
and trained through a ``_C.Session``, against the numpy references
(tests/python/reference/, checked on their own by test_reference.py; the
Module's weights mapped onto the reference's names and [in, out] layout by
reference.state_dict).

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

The same amplification hits, under AdamW, any entry whose first gradient is
tiny by chance (GPT's h1.mlp.fc.weight[16, 12] gets -3.4e-8 from the
reference while its neighbours get ~1e-3): the first step is lr * g / (|g| +
eps) with eps 1e-8, so float32's ~1e-10 absolute error on g moves it by
~1e-5 (eager training, a different float32 computation, lands on the same
value as the session). Entries with a first gradient below 1e-6 in the
reference (not 0, which is exact in float32 too; asserted to be under 10%
of each parameter: at init the attention is nearly uniform, so the key
weights' gradients are all small) are compared with atol 1e-4 instead.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite.models import GPTConfig, MLPConfig, VGGConfig, trace_loss
from reference import numpy_gpt, numpy_mlp, numpy_optim, numpy_vgg
from reference.state_dict import from_state_dict

STEPS = 10
THREADS = 2

# name -> (config, numpy reference, batch size)
CASES = {
    "mlp": (MLPConfig(in_features=12, hidden=(32, 24), num_classes=5), numpy_mlp, 8),
    "gpt": (GPTConfig(vocab_size=17, seq_len=8, n_layer=2, n_head=2, n_embd=16), numpy_gpt, 3),
    "vgg": (VGGConfig(features=(4, "M", 8, "M"), in_channels=3, image_size=8, fc=(16,),
                      num_classes=5), numpy_vgg, 4),
}
OPTIMIZERS = {
    "sgd": {"lr": 0.1, "momentum": 0.9, "weight_decay": 0.01},
    "adamw": {"lr": 0.01, "weight_decay": 0.01},
}


def _model(name, config, seed=0, dtype=None):
    flow.manual_seed(seed)
    return flow.models.create(name, config, dtype)


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
    """Mask of the entries (reference name, reference layout) the loss does
    not depend on (see the module docstring), or None."""
    if name != "gpt" or not param.endswith(".attn.qkv.bias"):
        return None
    mask = np.zeros(3 * config.n_embd, bool)
    mask[config.n_embd:2 * config.n_embd] = True
    return mask


def _adam_sensitive(optimizer, reference, config, start64, batch):
    """Reference name -> mask of the entries whose first gradient is below
    1e-6 but not 0 (see the module docstring; exact zeros, as unused
    embedding rows or dead ReLUs, are exact in float32 too); empty for SGD."""
    if optimizer != "adamw":
        return {}
    _, grads = reference.loss_and_grads(start64, config, batch)
    return {k: (g != 0) & (np.abs(g) < 1e-6) for k, g in grads.items()}


def _train_session(name, model, batch_size, batches, optimizer, hyper):
    """Trains the traced model; returns the losses and the final variables
    as a reference params dict (in the session's dtype)."""
    g = trace_loss(model, batch_size)
    g.builder.minimize(g.loss, optimizer, **hyper)
    session = g.builder.session(num_threads=THREADS)
    losses = []
    for data, labels in batches:
        (loss,) = session.run({g.data: data, g.labels: labels}, [g.loss])
        losses.append(loss)
    final = {k: session.get_variable(k) for k in model.state_dict()}
    return losses, from_state_dict(name, final, dtype=None, config=model.config)


@pytest.mark.parametrize("optimizer", sorted(OPTIMIZERS))
@pytest.mark.parametrize("name", sorted(CASES))
def test_training_matches_numpy_reference(name, optimizer):
    config, reference, batch_size = CASES[name]
    model = _model(name, config)
    start64 = from_state_dict(name, model.state_dict(), config=config)
    batches = _batches(reference, config, batch_size, seed=1)
    hyper = OPTIMIZERS[optimizer]

    losses, final = _train_session(name, model, batch_size, batches, optimizer, hyper)
    assert all(loss.shape == () and loss.dtype == np.float32 for loss in losses)
    expect_losses, expect_final = numpy_optim.train(
        reference.loss_and_grads, start64, config, batches,
        numpy_optim.make_optimizer(optimizer, **hyper))

    np.testing.assert_allclose(np.array(losses, np.float64), expect_losses, rtol=1e-4,
                               atol=1e-6)
    assert sorted(final) == sorted(expect_final)
    sensitive = _adam_sensitive(optimizer, reference, config, start64, batches[0])
    for param in final:
        assert final[param].dtype == np.float32, param
        got, want = final[param], expect_final[param]
        invariant = _loss_invariant(name, config, param)
        if invariant is not None:
            np.testing.assert_allclose(got[invariant], start64[param][invariant], atol=1e-4)
            got, want = got[~invariant], want[~invariant]
        tiny = sensitive.get(param)
        if tiny is not None:
            if invariant is not None:
                tiny = tiny[~invariant]
            assert tiny.mean() < 0.1, f"{name}: {tiny.sum()} tiny gradients in {param}"
            np.testing.assert_allclose(got[tiny], want[tiny], atol=1e-4, err_msg=param)
            got, want = got[~tiny], want[~tiny]
        np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-5,
                                   err_msg=f"{name}/{optimizer}: parameter {param}")
        # Every parameter must really have moved, so the check above has teeth.
        moved = np.abs(expect_final[param] - start64[param]).max()
        assert moved > 1e-4, f"{name}/{optimizer}: {param} moved only {moved}"


@pytest.mark.parametrize("name", sorted(CASES))
def test_float64_training_matches_numpy_reference_to_rounding(name):
    # The same in float64: no float32 noise left, so agreement to ~1e-15.
    config, reference, batch_size = CASES[name]
    model = _model(name, config, dtype=flow.float64)
    params = from_state_dict(name, model.state_dict(), config=config)
    batches = [(d.astype(np.float64) if d.dtype.kind == "f" else d, labels)
               for d, labels in _batches(reference, config, batch_size, seed=1)]
    hyper = OPTIMIZERS["adamw"]
    losses, final = _train_session(name, model, batch_size, batches, "adamw", hyper)
    expect_losses, expect_final = numpy_optim.train(
        reference.loss_and_grads, params, config, batches,
        numpy_optim.make_optimizer("adamw", **hyper))
    np.testing.assert_allclose([float(x) for x in losses], expect_losses, rtol=1e-12)
    for param in params:
        assert final[param].dtype == np.float64, param
        np.testing.assert_allclose(final[param], expect_final[param], rtol=1e-9, atol=1e-11,
                                   err_msg=f"{name}: parameter {param}")


@pytest.mark.parametrize("name", sorted(CASES))
def test_state_dict_maps_onto_reference_and_init_is_deterministic(name):
    config, reference, _ = CASES[name]
    params = from_state_dict(name, _model(name, config, seed=3).state_dict(), dtype=None, config=config)
    shapes = reference.param_shapes(config)
    assert sorted(params) == sorted(shapes)
    for key, value in params.items():
        assert value.shape == tuple(shapes[key]) and value.dtype == np.float32, key
    again = from_state_dict(name, _model(name, config, seed=3).state_dict(), dtype=None, config=config)
    other = from_state_dict(name, _model(name, config, seed=4).state_dict(), dtype=None, config=config)
    assert all(np.array_equal(params[k], again[k]) for k in params)
    assert any(not np.array_equal(params[k], other[k]) for k in params)
    as64 = from_state_dict(name, _model(name, config, 3, flow.float64).state_dict(), dtype=None, config=config)
    assert all(as64[k].dtype == np.float64 for k in params)
    first = "fc0.weight" if name != "gpt" else "wte"
    np.testing.assert_allclose(as64[first], params[first], rtol=1e-6)
    assert np.abs(params[first]).max() > 0


@pytest.mark.parametrize("name", sorted(CASES))
def test_trace_declares_inputs_and_scalar_loss(name):
    config, _, batch_size = CASES[name]
    model = _model(name, config)
    g = trace_loss(model, batch_size)
    assert g.builder.shape(g.loss) == []
    assert g.builder.shape(g.labels)[0] == batch_size
    assert g.builder.dtype(g.labels) == "int64"
    logits = g.builder.shape(g.logits)
    assert logits[0] == batch_size
    assert logits[-1] == getattr(config, "num_classes", getattr(config, "vocab_size", None))
    assert g.trainable == [k for k, _ in model.named_parameters()]
    with pytest.raises(ValueError, match="batch_size=0"):
        trace_loss(model, 0)
    with pytest.raises(TypeError, match="Linear is not a flow.models model"):
        trace_loss(flow.nn.Linear(2, 2), 1)


def test_gpt_dropout_ops_get_distinct_seeds():
    config = GPTConfig(vocab_size=11, seq_len=4, n_layer=2, n_head=2, n_embd=8, dropout=0.1)
    model = _model("gpt", config)
    g = trace_loss(model, batch_size=2, train=True)
    ops = [line for line in str(g.program).splitlines() if "= dropout(" in line]
    # embedding + per block (attention probabilities, two residual branches)
    assert len(ops) == 1 + 3 * config.n_layer
    seeds = [int(re.search(r"seed=(\d+)", line).group(1)) for line in ops]
    assert len(set(seeds)) == len(seeds), ops
    assert all("rate=0.1" in line for line in ops), ops
    assert "dropout" not in str(trace_loss(model, batch_size=2, train=False).program)
    assert not model.training

    g.builder.minimize(g.loss, "sgd", lr=0.1)
    session = g.builder.session(num_threads=THREADS)
    ids = np.arange(8, dtype=np.int64).reshape(2, 4)
    loss = [float(session.run({g.data: ids, g.labels: ids}, [g.loss])[0]) for _ in range(3)]
    assert np.all(np.isfinite(loss))
