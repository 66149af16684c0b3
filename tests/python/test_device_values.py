"""The eager frontend's device-value path on the CPU: tensors whose values are
``_C.DeviceTensor``s (as CUDA tensors' are) rather than numpy arrays. Here
they are host DeviceTensors ("cpu:0"), so every Python path a CUDA tensor
takes (ops, the tape and backward, gradient accumulation, optimizer updates
in place, zero_grad, state dicts, deepcopy, dropout) runs without a GPU and
is held against numpy."""
import copy

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite import _C, _device
from oneflow_lite._dispatch import executor
from oneflow_lite._tensor import Tensor


def device_valued(array) -> Tensor:
    return Tensor._wrap(executor.to_device(np.array(array, order="C"), "cpu:0"))


def make_device_valued(module) -> None:
    for t in list(module.parameters()) + list(module.buffers()):
        t._value = executor.to_device(t._value, "cpu:0")
        t._device = "cpu:0"


def test_a_device_value_reads_back_as_a_copy():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = device_valued(x)
    assert isinstance(t._value, _C.DeviceTensor) and t.device == "cpu:0"
    assert t.shape == (2, 3) and t.dtype is flow.float32 and t._value.nbytes == 24
    got = t.numpy()
    got[0, 0] = 100.0
    np.testing.assert_array_equal(t.numpy(), x)
    with pytest.raises(ValueError, match="read-only"):
        np.copyto(t._array(), x)  # a write into a copy would be lost: it fails instead
    c = t.clone()
    assert _device.is_device_value(c._value) and c._value is not t._value
    np.testing.assert_array_equal(c.numpy(), x)
    np.testing.assert_array_equal(t.to("cpu").numpy(), x)
    assert isinstance(t.to("cpu")._value, np.ndarray)
    assert "device='cpu:0'" in repr(t)


def test_ops_on_device_values_give_device_values():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((4, 2))
    y = device_valued(a) @ device_valued(b)
    assert _device.is_device_value(y._value)
    np.testing.assert_allclose(y.numpy(), a @ b, rtol=1e-12, atol=1e-12)
    z = device_valued(a) + flow.tensor(a)  # numpy arrays are cpu:0 too: one device
    np.testing.assert_allclose(z.numpy(), 2 * a, rtol=0, atol=0)
    f = device_valued(a.astype(np.float32)).to(flow.float64)
    assert _device.is_device_value(f._value) and f.dtype is flow.float64


def test_backward_accumulates_device_gradients():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((3, 4))
    x = device_valued(a).requires_grad_(True)
    y = (x * x).sum() + (x * 3.0).sum()  # x is used twice: its gradients add up
    y.backward()
    assert _device.is_device_value(x.grad._value)
    np.testing.assert_allclose(x.grad.numpy(), 2 * a + 3, rtol=1e-12, atol=1e-12)
    (x * 2.0).sum().backward()  # accumulates into .grad
    np.testing.assert_allclose(x.grad.numpy(), 2 * a + 5, rtol=1e-12, atol=1e-12)


def numpy_mlp_losses(w1, b1, w2, b2, batches, lr):
    """Linear-ReLU-Linear, mean softmax cross-entropy, plain SGD: numpy."""
    losses = []
    for x, labels in batches:
        h = x @ w1.T + b1
        r = np.maximum(h, 0)
        logits = r @ w2.T + b2
        z = logits - logits.max(1, keepdims=True)
        p = np.exp(z) / np.exp(z).sum(1, keepdims=True)
        n = len(labels)
        losses.append(float(-np.log(p[np.arange(n), labels]).mean()))
        dlogits = p.copy()
        dlogits[np.arange(n), labels] -= 1
        dlogits /= n
        dw2, db2 = dlogits.T @ r, dlogits.sum(0)
        dh = (dlogits @ w2) * (h > 0)
        dw1, db1 = dh.T @ x, dh.sum(0)
        w1, b1, w2, b2 = w1 - lr * dw1, b1 - lr * db1, w2 - lr * dw2, b2 - lr * db2
    return losses, [w1, b1, w2, b2]


def test_an_mlp_trains_on_device_values_as_numpy_does():
    flow.manual_seed(0)
    model = flow.nn.Sequential(flow.nn.Linear(6, 8), flow.nn.ReLU(), flow.nn.Linear(8, 3))
    start = [p.numpy().astype(np.float64) for p in model.parameters()]
    make_device_valued(model)
    opt = flow.optim.SGD(model.parameters(), lr=0.2)
    rng = np.random.default_rng(2)
    batches = [(rng.standard_normal((5, 6)).astype(np.float32), rng.integers(0, 3, 5))
               for _ in range(3)]
    losses = []
    for x, labels in batches:
        loss = flow.nn.functional.cross_entropy(model(device_valued(x)), device_valued(labels))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.numpy()))
    want_losses, want_params = numpy_mlp_losses(
        *start, [(x.astype(np.float64), l) for x, l in batches], 0.2)
    np.testing.assert_allclose(losses, want_losses, rtol=1e-5, atol=1e-6)
    for p, w in zip(model.parameters(), want_params):
        assert _device.is_device_value(p._value)  # updated in place on the device
        np.testing.assert_allclose(p.numpy(), w, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("kind", ["sgd", "adam"])
def test_optimizer_state_and_updates_stay_device_values(kind):
    rng = np.random.default_rng(3)
    w0, g = rng.standard_normal(4), rng.standard_normal(4)
    p = flow.nn.Parameter(device_valued(w0))
    opt = (flow.optim.SGD([p], lr=0.1, momentum=0.5) if kind == "sgd"
           else flow.optim.Adam([p], lr=0.1))
    for _ in range(2):
        p.grad = device_valued(g)
        opt.step()
    if kind == "sgd":  # buf = g, then 0.5 g + g
        want = w0 - 0.1 * g - 0.1 * 1.5 * g
    else:  # Adam with a constant gradient: each step moves by about lr * sign(g)
        m1, v1 = 0.1 * g, 0.001 * g * g
        step1 = 0.1 * (m1 / 0.1) / (np.sqrt(v1 / 0.001) + 1e-8)
        m2, v2 = 0.9 * m1 + 0.1 * g, 0.999 * v1 + 0.001 * g * g
        step2 = 0.1 * (m2 / (1 - 0.81)) / (np.sqrt(v2 / (1 - 0.999 ** 2)) + 1e-8)
        want = w0 - step1 - step2
    assert _device.is_device_value(p._value)
    np.testing.assert_allclose(p.numpy(), want, rtol=1e-6, atol=1e-9)
    state = opt.state_dict()
    assert all(_device.is_device_value(t._value) for t in state.values())
    opt.zero_grad(set_to_none=False)
    assert _device.is_device_value(p.grad._value)
    np.testing.assert_array_equal(p.grad.numpy(), np.zeros(4))


def test_a_module_of_device_values_deep_copies_and_loads_state():
    layer = flow.nn.Linear(3, 2)
    make_device_valued(layer)
    twin = copy.deepcopy(layer)
    assert _device.is_device_value(twin.weight._value)
    assert twin.weight._value is not layer.weight._value
    np.testing.assert_array_equal(twin.weight.numpy(), layer.weight.numpy())
    new = {"weight": np.ones((2, 3), np.float32), "bias": np.zeros(2, np.float32)}
    layer.load_state_dict(new)
    assert _device.is_device_value(layer.weight._value)
    np.testing.assert_array_equal(layer.weight.numpy(), np.ones((2, 3)))
    assert layer.to("cpu") is layer and isinstance(layer.weight._value, np.ndarray)
    np.testing.assert_array_equal(layer.weight.numpy(), np.ones((2, 3)))


def test_dropout_on_device_values_draws_the_numpy_paths_mask():
    x = np.ones((4, 5), np.float32)
    want = flow.nn.functional.dropout(flow.tensor(x), 0.5, seed=3, iteration=2).numpy()
    got = flow.nn.functional.dropout(device_valued(x), 0.5, seed=3, iteration=2)
    assert _device.is_device_value(got._value)
    np.testing.assert_array_equal(got.numpy(), want)
    assert set(np.unique(want)) <= {0.0, 2.0}
