"""CUDA from Python: device names in Tensor.to and Module.to, cuda placements,
and, with a GPU, CUDA tensors, eager ops and their gradients, an eager MLP
trained on CUDA against the CPU, and nn.Graph on cuda placements. Tests that need a GPU skip
with "no CUDA device" (or fail with OFL_REQUIRE_CUDA=1, as gpu_check.sh sets)."""
import os

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite import _device

# Without a GPU these skip with "no CUDA device", or run (and fail) when
# OFL_REQUIRE_CUDA=1: scripts/gpu_check.sh must not pass by skipping.
needs_cuda = pytest.mark.skipif(
    _device.cuda_device_count() == 0 and os.environ.get("OFL_REQUIRE_CUDA") != "1",
    reason="no CUDA device")
NO_CUDA = r"^cuda:1: (no CUDA device|this build has no cuda backend)$"


def test_to_cpu_copies_the_values():
    x = flow.tensor(np.arange(6.0).reshape(2, 3))
    y = x.to("cpu")
    np.testing.assert_allclose(y.numpy(), np.arange(6.0).reshape(2, 3), rtol=0, atol=0)
    assert y.to("cpu:0").numpy().dtype == np.float64


def test_to_cuda_without_a_device_names_the_device():
    if _device.cuda_device_count() > 0:
        pytest.skip("a CUDA device exists here")
    x = flow.tensor(np.ones(3))
    with pytest.raises(NotImplementedError, match=NO_CUDA):
        x.to("cuda:1")
    with pytest.raises(NotImplementedError, match=NO_CUDA):
        flow.nn.Linear(2, 2).to("cuda:1")


def test_a_malformed_device_is_a_value_error_naming_it():
    x = flow.tensor(np.ones(3))
    with pytest.raises(ValueError, match=r"device 'cuda:x': index 'x' is not an integer"):
        x.to("cuda:x")


def test_module_to_cpu_keeps_its_parameters():
    layer = flow.nn.Linear(2, 3)
    before = layer.weight.numpy().copy()
    assert layer.to("cpu") is layer
    np.testing.assert_allclose(layer.weight.numpy(), before, rtol=0, atol=0)


def test_a_cuda_placement_is_accepted():
    p = flow.placement("cuda", [[0, 1], [2, 3]])
    assert p.type == "cuda" and p.hierarchy == (2, 2)


@needs_cuda
def test_a_tensor_round_trips_through_cuda():
    x = np.random.default_rng(0).standard_normal((4, 5)).astype(np.float32)
    y = flow.tensor(x).to("cuda").to("cpu").numpy()
    np.testing.assert_allclose(y, x, rtol=0, atol=0)


@needs_cuda
def test_an_eager_linear_on_cuda_matches_numpy():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((8, 4)).astype(np.float32)
    layer = flow.nn.Linear(4, 3)
    w, b = layer.weight.numpy().copy(), layer.bias.numpy().copy()
    y = layer.to("cuda")(flow.tensor(x).to("cuda")).to("cpu").numpy()
    np.testing.assert_allclose(y, x @ w.T + b, rtol=1e-5, atol=1e-6)


class LossGraph(flow.nn.Graph):
    def __init__(self, model, optimizer):
        super().__init__()
        self.model = model
        self.add_optimizer(optimizer)

    def build(self, data, labels):
        return flow.nn.functional.cross_entropy(self.model(data), labels)


def mlp_graph_losses(placement, steps=3):
    """Losses of an MLP trained by SGD in an nn.Graph on ``placement``."""
    flow.manual_seed(0)
    model = flow.models.create(
        "mlp", flow.models.MLPConfig(in_features=12, hidden=(32, 24), num_classes=5))
    graph = LossGraph(model, flow.optim.SGD(model.named_parameters(), lr=0.1))
    graph.config.auto_parallel(cluster="h100_8gpu", searcher="data_parallel",
                               placement=placement)
    rng = np.random.default_rng(1)
    losses = []
    for _ in range(steps):
        x = rng.standard_normal((8, 12)).astype(np.float32)
        losses.append(float(graph(x, rng.integers(0, 5, 8)).numpy()))
    return losses


def test_a_graph_on_a_cuda_placement_without_a_device_names_the_device():
    if _device.cuda_device_count() > 0:
        pytest.skip("a CUDA device exists here")
    with pytest.raises(NotImplementedError,
                       match=r"rank 0: cuda:0: (no CUDA device|this build has no cuda backend)"):
        mlp_graph_losses(flow.placement("cuda", [0, 1]), steps=1)


@needs_cuda
def test_a_graph_on_two_virtual_cuda_devices_matches_the_cpu_run():
    want = mlp_graph_losses(flow.placement("cpu", [0, 1]))
    got = mlp_graph_losses(flow.placement("cuda", [0, 1]))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_cuda_methods_without_a_device_name_the_device():
    if _device.cuda_device_count() > 0:
        pytest.skip("a CUDA device exists here")
    with pytest.raises(NotImplementedError, match=NO_CUDA):
        flow.tensor(np.ones(3)).cuda(1)
    with pytest.raises(NotImplementedError, match=NO_CUDA):
        flow.nn.Linear(2, 2).cuda(1)


def test_module_to_an_unusable_device_moves_nothing():
    if _device.cuda_device_count() > 0:
        pytest.skip("a CUDA device exists here")
    layer = flow.nn.Linear(2, 3)
    with pytest.raises(NotImplementedError, match=NO_CUDA):
        layer.to("cuda:1")
    assert isinstance(layer.weight._value, np.ndarray) and layer.weight.device == "cpu"


def _pair(rng, shape, dtype=np.float32):
    """The same values as a CPU tensor and a CUDA tensor."""
    x = rng.standard_normal(shape).astype(dtype)
    return flow.tensor(x), flow.tensor(x).to("cuda")


@needs_cuda
def test_a_cuda_tensor_knows_its_device_and_copies_back():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = flow.tensor(x).cuda()
    assert t.device == "cuda:0" and t.is_cuda and t.shape == (2, 3) and t.dtype is flow.float32
    got = t.numpy()
    got[0, 0] = 100.0  # a copy: the device value stays
    np.testing.assert_allclose(t.numpy(), x, rtol=0, atol=0)
    np.testing.assert_allclose(t.cpu().numpy(), x, rtol=0, atol=0)
    assert t.to("cuda:0").numpy().tolist() == x.tolist()


@needs_cuda
@pytest.mark.parametrize("op", ["relu", "tanh", "softmax", "sum", "matmul", "add", "layer_norm"])
def test_an_eager_op_on_cuda_matches_the_cpu_forward_and_backward(op):
    rng = np.random.default_rng(2)
    a_cpu, a_cuda = _pair(rng, (4, 6))
    b_cpu, b_cuda = _pair(rng, (6, 5) if op == "matmul" else (4, 6))
    results = []
    for a, b in ((a_cpu, b_cpu), (a_cuda, b_cuda)):
        a.requires_grad_(True)
        b.requires_grad_(True)
        if op == "matmul":
            y = a @ b
        elif op == "add":
            y = a + b
        elif op == "softmax":
            y = a.softmax(-1)
        elif op == "layer_norm":
            w = flow.tensor(np.linspace(0.5, 1.5, 6).astype(np.float32)).to(a.device)
            y = flow.nn.functional.layer_norm(a, (6,), w, w * 0.5)
        elif op == "sum":
            y = a.sum(1)
        else:
            y = getattr(a, op)()
        (y * y).sum().backward()
        results.append((y.numpy(), a.grad.numpy(), None if b.grad is None else b.grad.numpy()))
    for want, got in zip(results[0], results[1]):
        if want is not None:
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert a_cuda.grad.device == "cuda:0"


@needs_cuda
def test_an_op_on_two_devices_names_the_op_and_both_devices():
    rng = np.random.default_rng(3)
    a_cpu, a_cuda = _pair(rng, (2, 3))
    with pytest.raises(ValueError, match=r"^add: input 'b' is on cpu:0 but input 'a' is on "
                                         r"cuda:0; every tensor of one op must be on one device"):
        a_cuda + a_cpu


@needs_cuda
def test_an_embedding_id_out_of_range_on_cuda_is_the_cpus_error():
    weight = flow.tensor(np.ones((4, 3), np.float32))
    ids = flow.tensor(np.array([1, 7], np.int64))
    with pytest.raises(Exception) as cpu:
        flow.ops.embedding(weight, ids)
    with pytest.raises(Exception) as cuda:
        flow.ops.embedding(weight.cuda(), ids.cuda())
    assert type(cuda.value) is type(cpu.value) and str(cuda.value) == str(cpu.value)
    # The device is fine afterwards (no sticky fault).
    np.testing.assert_allclose(flow.ops.relu(weight.cuda()).numpy(), np.ones((4, 3)))


def eager_mlp_losses(device, optimizer, steps=3):
    """Losses and final weights of an MLP trained eagerly on ``device``."""
    flow.manual_seed(0)
    model = flow.models.create(
        "mlp", flow.models.MLPConfig(in_features=12, hidden=(32, 24), num_classes=5))
    model.to(device)
    params = list(model.parameters())
    opt = (flow.optim.SGD(params, lr=0.1, momentum=0.9) if optimizer == "sgd"
           else flow.optim.Adam(params, lr=1e-2))
    rng = np.random.default_rng(1)
    losses = []
    for _ in range(steps):
        x = flow.tensor(rng.standard_normal((8, 12)).astype(np.float32)).to(device)
        labels = flow.tensor(rng.integers(0, 5, 8)).to(device)
        loss = flow.nn.functional.cross_entropy(model(x), labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.numpy()))
    return losses, [p.numpy() for p in params], [p.device for p in params]


@needs_cuda
@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_an_eager_mlp_trains_on_cuda_as_on_the_cpu(optimizer):
    want, want_params, _ = eager_mlp_losses("cpu", optimizer)
    got, got_params, devices = eager_mlp_losses("cuda", optimizer)
    assert set(devices) == {"cuda:0"}  # the updates stayed on the device
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    for g, w in zip(got_params, want_params):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)
