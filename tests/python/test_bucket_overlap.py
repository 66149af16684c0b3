"""Gradient buckets overlap their all-reduces with the backward pass: a
bucket's collective starts once its last gradient exists, while backward
goes on. A run with one bucket that holds every gradient (it can start only
after the last one: nothing to overlap) is the non-overlapped reference:
the losses and parameters of runs with many small buckets, and with none
(each gradient alone), must be bitwise the same. Each group here has two
ranks, so every element's sum is a + b whichever rank owns it (the host
communicators add the owner's addend first, communicator.h; with 3+ ranks
another bucket size may move the owner and the bits). Data parallel on 2
devices and on [2, 2] (two levels of two), float32 and float64, MLP and GPT
of zero_cases.py (many small parameters)."""
from __future__ import annotations

import numpy as np
import pytest

import zero_cases as zc

ONE_BUCKET = 1 << 30  # every gradient in one bucket: the non-overlapped run
OVERLAPPED = (0, 256)  # each gradient alone; buckets of 256 bytes


def run(model: str, dtype: str, mesh: list, bucket_bytes: int):
    g, params = zc.build(model, dtype)
    devices = int(np.prod(mesh))
    s = zc.session(g, "data_parallel", devices, bucket_bytes, mesh=mesh)
    losses = zc.train(s, g, zc.batches(model, dtype))
    return np.array(losses), {p: np.array(s.get_variable(p)) for p in params}


@pytest.mark.parametrize("mesh", [[2], [2, 2]], ids=["2", "2x2"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("model", ["mlp", "gpt"])
def test_overlapped_buckets_are_bitwise_the_one_bucket_run(model, dtype, mesh):
    want_losses, want_params = run(model, dtype, mesh, ONE_BUCKET)
    assert np.all(np.isfinite(want_losses))
    for bucket in OVERLAPPED:
        losses, params = run(model, dtype, mesh, bucket)
        assert losses.tobytes() == want_losses.tobytes(), (bucket, losses, want_losses)
        for p, want in want_params.items():
            assert params[p].tobytes() == want.tobytes(), f"{p} with buckets of {bucket} bytes"
