"""The graph-mode optimizer pass (graph/optimizer_pass.cpp): global-norm
gradient clipping and the fed learning rate, against numpy; on one device
and on 4 virtual devices under a strategy whose gradients are S- and
P-sharded. Also the DOT export of a strategy.

The model: y = (x @ W1) @ W2, loss = mean((y - t)^2). Its gradients are
written out in numpy below (the oracle), independently of the autodiff.
"""
import numpy as np
import pytest

from oneflow_lite import _C
from oneflow_lite.graph_builder import GraphBuilder

N, D_IN, D_H, D_OUT = 8, 6, 5, 4
LR, MOMENTUM = 0.1, 0.9
PINNED = {"x": "(S(0), B)", "t": "(S(0), B)", "w2": "(B, S(1))"}


def init():
    rng = np.random.default_rng(3)
    return {"w1": rng.standard_normal((D_IN, D_H)), "w2": rng.standard_normal((D_H, D_OUT))}


def data(steps):
    rng = np.random.default_rng(4)
    return [(rng.standard_normal((N, D_IN)), rng.standard_normal((N, D_OUT)))
            for _ in range(steps)]


def build(**hyper):
    b = GraphBuilder()
    x, t = b.input("x", [N, D_IN], "float64"), b.input("t", [N, D_OUT], "float64")
    params = init()
    w1, w2 = b.variable("w1", params["w1"]), b.variable("w2", params["w2"])
    d = b.sub(b.matmul(b.matmul(x, w1), w2), t)
    loss = b.reduce_mean(b.mul(d, d))
    b.minimize(loss, "sgd", lr=LR, momentum=MOMENTUM, **hyper)
    return b, loss


def numpy_grads(p, x, t):
    h = x @ p["w1"]
    dy = 2 * (h @ p["w2"] - t) / (N * D_OUT)
    return {"w1": x.T @ (dy @ p["w2"].T), "w2": h.T @ dy}, float(np.mean((h @ p["w2"] - t) ** 2))


def numpy_train(batches, max_norm=None, lrs=None):
    """Losses, global norms and final parameters of SGD with momentum."""
    p, buf = init(), {k: 0.0 for k in ("w1", "w2")}
    losses, norms = [], []
    for step, (x, t) in enumerate(batches):
        g, loss = numpy_grads(p, x, t)
        norm = np.sqrt(sum(np.sum(v ** 2) for v in g.values()))
        scale = min(1.0, max_norm / (norm + 1e-6)) if max_norm else 1.0
        lr = lrs[step] if lrs is not None else LR
        for k in p:
            buf[k] = MOMENTUM * buf[k] + scale * g[k]
            p[k] = p[k] - lr * buf[k]
        losses.append(loss)
        norms.append(norm)
    return losses, norms, p


def distributed(b, fetches, strategy=None):
    return _C.DistributedSession(b.program, [0, 1, 2, 3], [2, 2],
                                 strategy or _C.PlanSpec.deduce(PINNED), fetches,
                                 num_threads=2, timeout_ms=30000)


def sessions_with_sharded_grads(b, fetches, count):
    """Sessions under the first `count` random strategies (seeds 0, 1, ...)
    in which one gradient is produced partial-sum and another split."""
    grads = b.program.gradients()
    found = []
    for seed in range(200):
        dist = distributed(b, fetches, _C.PlanSpec.random(seed))
        sbps = [produced_sbp(dist.strategy(), grads[v]) for v in ("w1", "w2")]
        if any("P" in s for s in sbps) and any("S(" in s for s in sbps):
            found.append(dist)
            if len(found) == count:
                return found
    raise AssertionError("no random strategy with both S and P gradients in 200 seeds")


def produced_sbp(strategy_text, tensor):
    """The NdSbp the strategy gives `tensor`, read from Strategy::ToString."""
    op, out = tensor.rsplit("/", 1)
    index = int(out.rsplit("_", 1)[1])
    for line in strategy_text.splitlines():
        if line.startswith(op + " = "):
            outputs = line.split("->", 1)[1].strip()
            return outputs.split("), (")[index].strip("() ")
    raise AssertionError(f"no op {op} in the strategy")


def test_clipping_under_s_and_p_sharded_gradients_matches_numpy():
    batches = data(3)
    want_losses, want_norms, want = numpy_train(batches, max_norm=0.5)
    assert max(want_norms) > 0.5  # the clip really scales
    b, loss = build(clip_grad_max_norm=0.5)
    norm = "clip/global_norm/out_0"
    single = b.session(num_threads=1)
    for session in [single] + sessions_with_sharded_grads(b, [loss, norm], 3):
        losses, norms = [], []
        for x, t in batches:
            got_loss, got_norm = session.run({"x": x, "t": t}, [loss, norm])
            losses.append(float(got_loss))
            norms.append(float(got_norm))
        np.testing.assert_allclose(norms, want_norms, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(losses, want_losses, rtol=1e-9, atol=1e-12)
        for k in want:
            np.testing.assert_allclose(session.get_variable(k), want[k], rtol=1e-9, atol=1e-12)


def test_clipping_leaves_small_gradients_alone():
    batches = data(2)
    want_losses, want_norms, want = numpy_train(batches, max_norm=1e6)
    b, loss = build(clip_grad_max_norm=1e6)
    session = b.session(num_threads=1)
    for x, t in batches:
        session.run({"x": x, "t": t}, [loss])
    for k in want:
        np.testing.assert_allclose(session.get_variable(k), want[k], rtol=1e-9, atol=1e-12)


def test_fed_learning_rate_changes_every_step():
    # The model is float64, so is the fed lr: rates not exact in float32 give
    # numpy's float64 steps to 1e-12 (through float32 they differed by 1e-9).
    batches, lrs = data(3), [0.3, 0.07, 0.011]
    want_losses, _, want = numpy_train(batches, lrs=lrs)
    b, loss = build(lr_input="lr")
    assert b.program.dtype("lr") == "float64"
    for session in (b.session(num_threads=1), distributed(b, [loss])):
        losses = [float(session.run({"x": x, "t": t, "lr": np.array(lr, np.float64)}, [loss])[0])
                  for (x, t), lr in zip(batches, lrs)]
        np.testing.assert_allclose(losses, want_losses, rtol=1e-12, atol=1e-14)
        for k in want:
            np.testing.assert_allclose(session.get_variable(k), want[k], rtol=1e-12, atol=1e-14)


def test_fed_learning_rate_of_a_float32_model_is_float32():
    b = GraphBuilder()
    w = b.variable("w", np.ones(3, np.float32))
    b.minimize(b.reduce_sum(b.mul(w, w)), "sgd", lr_input="lr")
    assert b.program.dtype("lr") == "float32"


def test_bad_clip_and_lr_settings_name_the_value():
    b = GraphBuilder()
    w = b.variable("w", np.ones(3))
    loss = b.reduce_sum(b.mul(w, w))
    with pytest.raises(ValueError, match="clip_grad_max_norm=-1"):
        b.minimize(loss, "sgd", clip_grad_max_norm=-1.0)
    b.input("lr", [], "float32")
    with pytest.raises(ValueError, match="lr"):
        b.minimize(loss, "sgd", lr_input="lr")  # the name is taken
    b.minimize(loss, "sgd")  # a failed minimize changed nothing


def test_dot_export_shows_every_op_and_the_boxings():
    b, loss = build(clip_grad_max_norm=0.5)
    dist = distributed(b, [loss])
    dot = dist.to_dot()
    assert dot.startswith("digraph strategy {") and dot.rstrip().endswith("}")
    for line in dist.strategy().splitlines()[1:]:
        name = line.split(" = ")[0].split(":")[0]
        assert f'"op:{name}"' in dot or f'"src:{name}"' in dot, name
    assert "boxing (" in dot and "color=red" in dot
    assert dot.count("{") == dot.count("}")
