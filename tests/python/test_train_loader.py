"""The main job reads its batches through flow.utils.data (train_data.
step_loader): the loader yields exactly the batches the synthetic generator
draws, and training on it gives the same losses, bit for bit, as training
on the generator's numpy batches directly (the job's earlier path)."""
from __future__ import annotations

import numpy as np
import pytest

from oneflow_lite import train, train_data
from oneflow_lite.nn.graph_compile import resolve_cluster

ARGV = {"mlp": ["--model", "mlp", "--batch", "6"],
        "gpt": ["--model", "gpt", "--layers", "1", "--hidden", "16", "--heads", "2", "--seq",
                "8", "--vocab", "11", "--batch", "4"]}


def test_step_loader_yields_the_generators_batches_on_every_pass():
    draw = lambda: train_data.teacher_batches(5, 3, 4, np.random.default_rng(0))  # noqa: E731
    want = [next(b) for b in [draw()] for _ in range(3)]
    loader = train_data.step_loader(draw(), 3, 4)
    for _ in range(2):
        got = [(x.numpy(), y.numpy()) for x, y in loader]
        assert len(got) == 3
        for (gx, gy), (wx, wy) in zip(got, want):
            assert gx.dtype == wx.dtype and gy.dtype == wy.dtype
            np.testing.assert_array_equal(gx, wx)
            np.testing.assert_array_equal(gy, wy)


@pytest.mark.parametrize("model", ["mlp", "gpt"])
def test_losses_equal_those_of_the_numpy_batches(model):
    args = train.parse_args(ARGV[model] + ["--devices", "2", "--hierarchy", "2", "--steps", "3",
                                           "--cluster", "h100_8gpu", "--seed", "3"])
    batches, config, _ = train.setup(args)
    raw = [next(batches) for _ in range(args.steps)]
    cluster = resolve_cluster(args.cluster, args.devices)
    before = train.train_run(args, config, raw, args.searcher, "numpy", cluster)["losses"]
    batches, config, _ = train.setup(args)  # the same seed: the same draws
    loader = train_data.step_loader(batches, args.steps, args.batch)
    after = train.train_run(args, config, loader, args.searcher, "loader", cluster)["losses"]
    assert after == before and len(after) == 3
