"""atheris target: a checkpoint's index.json as checkpoint.load reads it.

The input is the index.json of a checkpoint directory that also holds two
real tensor files (tensors/00000.npy, 00001.npy: what a valid index of the
seed corpus names), so an index that passes read_index goes on to the file,
size, checksum, shape and dtype checks. Each input is loaded three ways:
plain, with the model's expected names/shapes/dtypes, and with
allow_missing_state. Expected: CheckpointError (a ValueError) and other
ValueError/TypeError/OSError with a message (fuzz_common.py).
"""
from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fuzz_common  # noqa: E402

EXPECTED_TENSORS = {"w": ([2, 3], "float32"), "w/m": ([2, 3], "float32")}
_checkpoint = None


def checkpoint_dir() -> str:
    """A saved checkpoint whose index.json each input replaces."""
    global _checkpoint
    if _checkpoint is None:
        from oneflow_lite import checkpoint

        path = os.path.join(fuzz_common.scratch_dir(), "ckpt")
        checkpoint.save(path, {"w": np.arange(6, dtype=np.float32).reshape(2, 3),
                               "w/m": np.ones((2, 3), np.float32)}, model="toy")
        _checkpoint = path
    return _checkpoint


def TestOneInput(data: bytes) -> None:
    from oneflow_lite import checkpoint

    path = checkpoint_dir()
    fuzz_common.write(os.path.join(path, checkpoint.INDEX), data)
    with fuzz_common.expected_errors("checkpoint.load"):
        checkpoint.load(path)
    with fuzz_common.expected_errors("checkpoint.load(expected)"):
        checkpoint.load(path, expected=EXPECTED_TENSORS, model="toy")
    with fuzz_common.expected_errors("checkpoint.load(allow_missing_state)"):
        checkpoint.load(path, expected={"w": EXPECTED_TENSORS["w"]}, verify=False,
                        allow_missing_state=True)


if __name__ == "__main__":
    fuzz_common.main(TestOneInput, ["oneflow_lite.checkpoint"])
