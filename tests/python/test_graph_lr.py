"""nn.Graph's learning rate has one source of truth: the optimizer's
``param_groups[0]["lr"]``, read at every call and fed to the program
(nn/graph_run.py), never the rate the program was compiled with. Oracles
worked out by hand: lr 0 leaves every parameter as it was; plain SGD
(no momentum, no weight decay) moves a parameter by exactly -lr * grad, so
the step taken at lr 2a is twice the step at lr a on the same batch and
the same parameters; on one device and on four virtual devices."""
from __future__ import annotations

import numpy as np
import pytest

import oneflow_lite as flow

MESH = flow.placement("cpu", [[0, 1], [2, 3]])


class Regression(flow.nn.Graph):
    def __init__(self, model, opt):
        super().__init__()
        self.model = model
        self.add_optimizer(opt)

    def build(self, x, y):
        return ((self.model(x) - y) ** 2).mean()


def make(placement):
    flow.manual_seed(0)
    model = flow.nn.Linear(6, 3)
    opt = flow.optim.SGD(model.named_parameters(), lr=0.5)
    graph = Regression(model, opt)
    if placement is not None:
        graph.config.auto_parallel(cluster="h100_8gpu", searcher="data_parallel",
                                   placement=placement)
    return model, opt, graph


def weights(model):
    return {k: v.numpy().copy() for k, v in model.state_dict().items()}


@pytest.mark.parametrize("placement", [None, MESH], ids=["one_device", "four_devices"])
def test_the_fed_rate_is_the_one_the_step_uses(placement):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 6)).astype(np.float32)
    y = rng.standard_normal((8, 3)).astype(np.float32)
    model, opt, graph = make(placement)
    graph(x, y)  # compiled with lr 0.5
    opt.param_groups[0]["lr"] = 0.0
    before = weights(model)
    graph(x, y)
    for k, v in weights(model).items():
        np.testing.assert_array_equal(v, before[k], err_msg=k)  # lr 0: nothing moves

    opt.param_groups[0]["lr"] = 0.01
    start = weights(model)
    graph(x, y)
    small = {k: v - start[k] for k, v in weights(model).items()}
    graph.load_state_dict(start)  # the same parameters again
    opt.param_groups[0]["lr"] = 0.02
    graph(x, y)
    large = {k: v - start[k] for k, v in weights(model).items()}
    for k in start:
        assert np.abs(small[k]).max() > 0, k
        np.testing.assert_allclose(large[k], 2 * small[k], rtol=1e-4, atol=1e-7, err_msg=k)
