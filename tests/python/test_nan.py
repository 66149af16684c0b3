"""NaN and Inf: propagation as numpy does it, and the anomaly check.

Every op that selects by comparison is run with NaN placed in its input and
compared, NaN positions included (assert_array_equal / allclose with
equal_nan), with numpy: relu (np.maximum(x, 0)), relu's backward (PyTorch's
threshold_backward: where(y <= 0, 0, dy)), max pooling (np.max of each
window, float32 through oneDNN and float64 through the loops) and its
backward (dy to np.argmax of each window: the first NaN), softmax and
log_softmax (a NaN row is all NaN, the other rows unchanged), cross
entropy's log-sum-exp, the clip factor and eager clip_grad_norm_ (a NaN norm
makes every gradient NaN, as PyTorch's). End to end: one NaN input row makes
the graph's loss NaN instead of a normal-looking loss over NaN weights.

The anomaly check (flow.set_detect_anomaly, flow.autograd.detect_anomaly,
graph.config.detect_anomaly) raises RuntimeError naming the op and the
element in eager (forward and backward) and in nn.Graph on 1 and 4 virtual
devices; off, the NaN flows on without an error.
"""
from __future__ import annotations

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite import _C

nn = flow.nn
F = flow.nn.functional
NAN = np.nan
MESH = flow.placement("cpu", [[0, 1], [2, 3]])
DTYPES = [np.float32, np.float64]


def with_nans(shape, dtype, positions, seed=0):
    x = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    for p in positions:
        x[p] = NAN
    return x


@pytest.mark.parametrize("dtype", DTYPES)
def test_relu_and_its_backward_keep_nan_as_numpy_and_pytorch(dtype):
    x = np.array([NAN, -1.0, 0.0, 2.0, -np.inf, np.inf], dtype)
    (y,) = _C.run_op("relu", [x], {})
    np.testing.assert_array_equal(y, np.maximum(x, 0))
    dy = np.arange(1, 7, dtype=dtype)
    (dx,) = _C.run_op("relu_grad", [y, dy], {})
    np.testing.assert_array_equal(dx, np.where(y <= 0, 0, dy))  # NaN <= 0 is False
    assert dx[0] == 1  # threshold_backward passes dy where y is NaN


@pytest.mark.parametrize("op, grad_op, f", [
    ("gelu", "gelu_grad", None), ("tanh", "tanh_grad", np.tanh),
    ("sigmoid", "sigmoid_grad", lambda x: 1 / (1 + np.exp(-x)))])
def test_smooth_activations_and_their_backward_keep_nan(op, grad_op, f):
    x = np.array([NAN, -1.5, 0.0, 2.0])
    (y,) = _C.run_op(op, [x], {})
    assert np.isnan(y[0]) and not np.isnan(y[1:]).any()
    if f is not None:
        np.testing.assert_allclose(y, f(x), rtol=1e-12, equal_nan=True)
    # gelu_grad reads x, tanh_grad and sigmoid_grad read y.
    (dx,) = _C.run_op(grad_op, [x if op == "gelu" else y, np.ones(4)], {})
    assert np.isnan(dx[0]) and not np.isnan(dx[1:]).any()


def pool_windows(x, k, s, pad):
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)), constant_values=-np.inf)
    w = np.lib.stride_tricks.sliding_window_view(xp, (k, k), axis=(2, 3))
    return w[:, :, ::s, ::s]  # [N, C, OH, OW, k, k]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("k,s,pad", [(2, 2, 0), (3, 1, 1)])
def test_max_pool_propagates_nan_and_routes_its_gradient_to_the_first_nan(dtype, k, s, pad):
    x = with_nans((2, 3, 6, 6), dtype, [(0, 0, 1, 1), (0, 0, 1, 2), (1, 2, 5, 5)])
    attrs = {"kernel_size": [k, k], "stride": [s, s], "padding": [pad, pad]}
    (y,) = _C.run_op("max_pool2d", [x], attrs)
    windows = pool_windows(x, k, s, pad)
    np.testing.assert_array_equal(y, windows.max(axis=(4, 5)))
    assert np.isnan(y).any()
    dy = np.random.default_rng(1).standard_normal(y.shape).astype(dtype)
    (dx,) = _C.run_op("max_pool2d_grad", [x, y, dy], attrs)
    want = np.zeros((2, 3, 6 + 2 * pad, 6 + 2 * pad), np.float64)
    flat = windows.reshape(*windows.shape[:4], k * k)
    first = np.argmax(flat, axis=-1)  # np.argmax: the first NaN, else the first maximum
    for n, c, oh, ow in np.ndindex(*first.shape):
        r, q = divmod(int(first[n, c, oh, ow]), k)
        want[n, c, oh * s + r, ow * s + q] += dy[n, c, oh, ow]
    want = want[:, :, pad:pad + 6, pad:pad + 6]
    np.testing.assert_allclose(dx, want, rtol=1e-6, atol=1e-6)


def np_softmax(x, log):
    m = np.max(x, axis=-1, keepdims=True)
    e = np.exp(x - m)
    s = e.sum(axis=-1, keepdims=True)
    return x - m - np.log(s) if log else e / s


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_softmax_row_with_nan_is_nan_and_other_rows_unchanged(dtype, op):
    x = with_nans((4, 5), dtype, [(1, 3)])
    (y,) = _C.run_op(op, [x], {"axis": -1})
    want = np_softmax(x.astype(np.float64), op == "log_softmax")
    assert np.isnan(y[1]).all()
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6, equal_nan=True)


@pytest.mark.parametrize("dtype", DTYPES)
def test_cross_entropy_of_a_nan_row_is_nan(dtype):
    logits = with_nans((3, 4), dtype, [(2, 0)])
    labels = np.array([1, 0, 3])
    (loss,) = _C.run_op("sparse_softmax_cross_entropy", [logits, labels], {})
    x = logits.astype(np.float64)
    want = -np_softmax(x, True)[np.arange(3), labels]
    np.testing.assert_allclose(loss, want, rtol=1e-5, atol=1e-6, equal_nan=True)
    assert np.isnan(loss[2]) and not np.isnan(loss[:2]).any()


@pytest.mark.parametrize("norm", [NAN, np.inf, 4.0, 0.5])
def test_clip_factor_is_numpys_minimum(norm):
    (f,) = _C.run_op("clip_factor", [np.array(norm)], {"max_norm": 1.0})
    np.testing.assert_array_equal(f, np.minimum(1.0, 1.0 / (norm + 1e-6)))


@pytest.mark.parametrize("norm_type", [2.0, float("inf")])
def test_eager_clip_grad_norm_spreads_a_nan_to_every_gradient(norm_type):
    a, b = flow.tensor(np.ones(3)), flow.tensor(np.ones(2))
    a.grad = flow.tensor(np.array([1.0, NAN, 2.0]))
    b.grad = flow.tensor(np.array([3.0, 4.0]))
    total = nn.utils.clip_grad_norm_([a, b], 1.0, norm_type=norm_type)
    assert np.isnan(total.numpy())
    assert np.isnan(a.grad.numpy()).all() and np.isnan(b.grad.numpy()).all()


class TrainGraph(nn.Graph):
    def __init__(self, model, opt=None, clip=None):
        super().__init__()
        self.model = model
        if opt is not None:
            self.add_optimizer(opt, clip_grad_max_norm=clip)

    def build(self, x, y):
        return F.cross_entropy(self.model(x), y)


def mlp():
    flow.manual_seed(0)
    return flow.models.create("mlp", flow.models.MLPConfig(in_features=6, hidden=(8,),
                                                           num_classes=3))


def data(nan_row=None):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 6)).astype(np.float32)
    if nan_row is not None:
        x[nan_row, 2] = NAN
    return x, rng.integers(0, 3, 8)


def test_one_nan_row_makes_the_graph_loss_nan_not_normal_looking():
    model = mlp()
    g = TrainGraph(model, flow.optim.SGD(model.named_parameters(), lr=0.1), clip=1.0)
    loss = float(g(*data(nan_row=5)).numpy())
    assert np.isnan(loss)
    params = {k: v.numpy() for k, v in g.state_dict().items() if "/" not in k}
    assert params and all(np.isnan(v).all() for v in params.values())  # clipping spread it


# ---------------------------------------------------------------- anomaly check
def test_eager_anomaly_check_names_the_forward_op_and_the_element():
    x = flow.tensor(np.array([1.0, 0.0, -2.0]))
    with flow.autograd.detect_anomaly():
        assert flow.is_anomaly_enabled()
        with pytest.raises(RuntimeError) as info:
            flow.ops.div(flow.tensor(np.ones(3)), x)
    assert str(info.value) == ("anomaly: div produced a non-finite value: out[1]=inf "
                               "(shape [3])")
    assert not flow.is_anomaly_enabled()
    y = flow.ops.div(flow.tensor(np.ones(3)), x)  # off: the Inf flows on
    assert np.isinf(y.numpy()[1])


def test_eager_anomaly_check_names_the_backward_op():
    x = flow.tensor(np.array([0.0, 4.0]))
    x.requires_grad = True
    flow.set_detect_anomaly(True)
    try:
        y = flow.ops.scalar_pow(x, exponent=0.5)  # finite forward, Inf gradient at 0
        with pytest.raises(RuntimeError, match=r"anomaly: the backward of scalar_pow produced "
                                               r"a non-finite value: grad of input 0\[0\]=inf"):
            y.backward(flow.tensor(np.ones(2)))
    finally:
        flow.set_detect_anomaly(False)


@pytest.mark.parametrize("devices", [1, 4])
@pytest.mark.parametrize("how", ["config", "global"])
def test_graph_anomaly_check_names_the_first_op_with_nan(devices, how):
    model = mlp()
    g = TrainGraph(model, flow.optim.SGD(model.named_parameters(), lr=0.1))
    if devices > 1:
        g.config.auto_parallel(cluster="h100_8gpu", searcher="data_parallel", placement=MESH,
                               timeout_ms=30000)
    assert np.isfinite(float(g(*data()).numpy()))
    assert np.isnan(float(g(*data(nan_row=5)).numpy()))  # off: no error, NaN loss
    model2 = mlp()
    g = TrainGraph(model2, flow.optim.SGD(model2.named_parameters(), lr=0.1))
    if devices > 1:
        g.config.auto_parallel(cluster="h100_8gpu", searcher="data_parallel", placement=MESH,
                               timeout_ms=30000)
    if how == "config":
        g.config.detect_anomaly = True
    g(*data())
    before = {k: v.numpy().copy() for k, v in g.state_dict().items()}
    with flow.autograd.detect_anomaly(how == "global"):
        with pytest.raises(RuntimeError) as info:
            g(*data(nan_row=5))
    message = str(info.value)
    assert "anomaly: matmul" in message and "produced a non-finite value" in message
    assert "/out_0[" in message and "]=nan" in message  # the output tensor and element
    # The first op is the input layer's matmul: nothing after it ran.
    after = {k: v.numpy() for k, v in g.state_dict().items()}
    assert all(np.array_equal(before[k], after[k]) for k in before)


def test_eager_anomaly_check_is_not_run_when_off(monkeypatch):
    # Off costs one flag test per op: the scan itself is never called.
    from oneflow_lite import _autograd

    def scan(*args):
        raise AssertionError("check_finite ran with anomaly detection off")

    monkeypatch.setattr(_autograd, "check_finite", scan)
    x = flow.tensor(np.array([NAN, 1.0]))
    x.requires_grad = True
    flow.ops.relu(x).backward(flow.tensor(np.ones(2)))
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 1.0])  # threshold_backward at NaN
