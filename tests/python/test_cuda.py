"""CUDA from Python: device names in Tensor.to and Module.to, cuda placements,
and, with a GPU, tensors and eager layers on CUDA. Tests that need a GPU skip
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
