"""flow.models trained eagerly against the numpy references
(tests/python/reference/, checked on their own by test_reference.py), and
the tracer (nn.graph_trace) that nn.Graph builds on: names, pins, meta
parameters, and a traced GPT with dropout trained through a session giving
the eager losses.

The references use the GraphBuilder-era names and [in, out] Linear weights;
``to_reference`` maps a Module's state_dict onto them (reference.state_dict:
Linear weights transposed, LayerNorm weight/bias -> gamma/beta). The key third of GPT's
qkv bias is compared as in test_models.py (its gradient is zero in exact
arithmetic, so Adam turns float32 noise into steps).
"""
from __future__ import annotations

import numpy as np
import pytest

import oneflow_lite as flow
from reference import numpy_gpt, numpy_mlp, numpy_optim, numpy_vgg
from reference.state_dict import from_state_dict

nn = flow.nn
F = flow.nn.functional
STEPS = 6

CASES = {
    "mlp": (flow.models.MLPConfig(in_features=12, hidden=(32, 24), num_classes=5), numpy_mlp, 8),
    "gpt": (flow.models.GPTConfig(vocab_size=17, seq_len=8, n_layer=2, n_head=2, n_embd=16),
            numpy_gpt, 3),
    "vgg": (flow.models.VGGConfig(features=(4, "M", 8, "M"), in_channels=3, image_size=8,
                                  fc=(16,), num_classes=5), numpy_vgg, 4),
}
OPTIMIZERS = {
    "sgd": (flow.optim.SGD, {"lr": 0.1, "momentum": 0.9, "weight_decay": 0.01}),
    "adamw": (flow.optim.AdamW, {"lr": 0.01, "weight_decay": 0.01}),
}


def to_reference(name, model) -> dict:
    return from_state_dict(name, model.state_dict(), config=getattr(model, "config", None))


def make_batches(reference, config, batch_size, seed=1):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(STEPS):
        data, labels = reference.random_batch(config, batch_size, rng)
        out.append((data.astype(np.float32) if data.dtype.kind == "f" else data, labels))
    return out


def build(name, config, seed=0):
    flow.manual_seed(seed)
    return {"mlp": flow.models.MLP, "gpt": flow.models.GPT, "vgg": flow.models.VGG}[name](config)


@pytest.mark.parametrize("optimizer", sorted(OPTIMIZERS))
@pytest.mark.parametrize("name", sorted(CASES))
def test_eager_training_matches_numpy_reference(name, optimizer):
    config, reference, batch_size = CASES[name]
    model = build(name, config)
    start = to_reference(name, model)
    assert set(start) == set(reference.param_shapes(config))
    for k, v in start.items():
        assert v.shape == tuple(reference.param_shapes(config)[k]), k
    batches = make_batches(reference, config, batch_size)
    cls, hyper = OPTIMIZERS[optimizer]
    opt = cls(model.named_parameters(), **hyper)
    losses = []
    for data, labels in batches:
        loss = F.cross_entropy(model(flow.tensor(data)), flow.tensor(labels))
        opt.zero_grad()
        loss.backward()
        opt.step()
        assert loss.dtype is flow.float32
        losses.append(loss.item())
    want_losses, want = numpy_optim.train(reference.loss_and_grads, start, config, batches,
                                          numpy_optim.make_optimizer(optimizer, **hyper))
    np.testing.assert_allclose(losses, want_losses, rtol=1e-4, atol=1e-6)
    got = to_reference(name, model)
    for k in start:
        g, w = got[k], want[k]
        if name == "gpt" and k.endswith(".attn.qkv.bias"):
            d = config.n_embd
            np.testing.assert_allclose(g[d:2 * d], start[k][d:2 * d], atol=1e-4)
            g, w = np.delete(g, np.s_[d:2 * d]), np.delete(w, np.s_[d:2 * d])
        np.testing.assert_allclose(g, w, rtol=1e-3, atol=1e-5, err_msg=f"{name}/{optimizer} {k}")
        assert np.abs(want[k] - start[k]).max() > 1e-4, k  # really moved


def test_init_distributions_and_determinism():
    cfg = flow.models.GPTConfig(vocab_size=50, seq_len=16, n_layer=2, n_head=2, n_embd=64)
    a, b, c = build("gpt", cfg, 3), build("gpt", cfg, 3), build("gpt", cfg, 4)
    for (k, x), y, z in zip(a.state_dict().items(), b.state_dict().values(),
                            c.state_dict().values()):
        np.testing.assert_array_equal(x.numpy(), y.numpy(), err_msg=k)
    assert not np.array_equal(a.wte.weight.numpy(), c.wte.weight.numpy())
    sd = a.state_dict()
    assert abs(sd["wte.weight"].numpy().std() - 0.02) < 0.002
    assert abs(sd["h.1.mlp.proj.weight"].numpy().std() - 0.02 / np.sqrt(4)) < 0.001
    assert not sd["h.0.attn.qkv.bias"].numpy().any()
    assert (sd["ln_f.weight"].numpy() == 1).all()
    assert sd["head.weight"].shape == (50, 64) and "head.bias" not in sd
    small = build("vgg", flow.models.VGGConfig(features=(64, "M"), image_size=4, fc=(8,)))
    w = small.features[0].weight.numpy()
    assert w.shape == (64, 3, 3, 3) and abs(w.std() - np.sqrt(2 / (64 * 9))) < 0.01
    assert not small.features[0].bias.numpy().any()
    with flow.device("meta"):  # full size, no memory
        vgg16, vgg19 = flow.models.VGG16(), flow.models.VGG19()
    assert len([m for m in vgg16.modules() if isinstance(m, nn.Conv2d)]) == 13
    assert len([m for m in vgg19.modules() if isinstance(m, nn.Conv2d)]) == 16
    assert vgg16.classifier[0].weight.shape == (4096, 512 * 7 * 7)
    with pytest.raises(ValueError, match="unknown model 'resnet'"):
        flow.models.create("resnet")


class WithLoss(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, data, labels):
        return F.cross_entropy(self.model(data), labels)


def test_traced_gpt_with_dropout_trains_like_eager():
    cfg = flow.models.GPTConfig(vocab_size=11, seq_len=6, n_layer=2, n_head=2, n_embd=8,
                                dropout=0.2)
    eager = build("gpt", cfg)
    traced = build("gpt", cfg)
    spec = nn.graph_trace.Spec([3, 6], flow.int64)
    r = nn.graph_trace.trace(WithLoss(traced), spec, spec, input_names=["ids", "labels"])
    r.builder.minimize(r.output_names[0], "adamw", lr=0.01, weight_decay=0.01)
    session = r.builder.session(num_threads=2)
    opt = flow.optim.AdamW(eager.named_parameters(), lr=0.01, weight_decay=0.01)
    rng = np.random.default_rng(5)
    for _ in range(3):
        ids, labels = rng.integers(0, 11, (3, 6)), rng.integers(0, 11, (3, 6))
        (graph_loss,) = session.run({"ids": ids, "labels": labels}, r.output_names)
        loss = F.cross_entropy(eager(flow.tensor(ids)), flow.tensor(labels))
        opt.zero_grad()
        loss.backward()
        opt.step()
        np.testing.assert_allclose(float(graph_loss), loss.item(), rtol=1e-5, atol=1e-6)
    for key, p in eager.named_parameters():
        np.testing.assert_allclose(session.get_variable(f"model.{key}"), p.numpy(), rtol=1e-4,
                                   atol=1e-6, err_msg=key)
    program = str(r.program)
    assert "model.h.0.attn.qkv.weight" in program and "h.1.mlp.fc/matmul" in program
    assert program.count("= dropout(") == 1 + 3 * cfg.n_layer


def test_trace_names_variables_pins_and_constants():
    net = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    placement = flow.placement("cpu", [0, 1])
    net[2].weight = nn.Parameter(net[2].weight.to_global(placement, flow.sbp.split(0)))
    const = flow.ones(2)

    class Outer(nn.Module):
        def __init__(self):
            super().__init__()
            self.net = net

        def forward(self, x):
            x = x.to_global(placement, [flow.sbp.split(0)])
            return self.net(x) + const

    r = nn.graph_trace.trace(Outer(), np.zeros((5, 4), np.float32))
    assert r.input_names == ["input0"]
    assert list(r.variables) == ["net.0.weight", "net.0.bias", "net.2.weight", "net.2.bias",
                                 "_const4"]
    assert r.trainable == ["net.0.weight", "net.0.bias", "net.2.weight", "net.2.bias"]
    assert r.pinned == {"input0": "(S(0))", "net.2.weight": "(S(0))"}
    assert r.builder.shape(r.output_names[0]) == [5, 2]
    assert isinstance(r.outputs[0], nn.graph_trace.LazyTensor)
    assert "net.0/matmul" in str(r.program) and "net.1/relu" in str(r.program)
    loose = nn.Parameter(flow.ones(2))  # a parameter of no registered module
    tracer = nn.graph_trace.Tracer()
    with tracer:
        y = tracer.input("x", [2]) * loose + const
    assert list(tracer.variables) == ["_param0", "_const1"] and tracer.trainable == ["_param0"]
    assert y.shape == (2,) and tracer.builder.shape(y.graph_name) == [2]
    with pytest.raises(RuntimeError, match="graph tensor of a finished trace"):
        r.outputs[0] + r.outputs[0]
    with pytest.raises(TypeError, match="input 'input0' must be a Tensor, numpy array or Spec"):
        nn.graph_trace.trace(net, [1, 2])


def test_trace_of_meta_parameters_declares_them_without_values():
    with flow.device("meta"):
        model = nn.Linear(4, 3)
    if not hasattr(flow._C.Program, "add_variable_desc"):
        with pytest.raises(NotImplementedError, match="add_variable_desc"):
            nn.graph_trace.trace(model, nn.graph_trace.Spec([2, 4]))
        pytest.skip("_C.Program.add_variable_desc is not in this build")
    r = nn.graph_trace.trace(model, nn.graph_trace.Spec([2, 4]))
    assert r.builder.shape("weight") == [3, 4]
