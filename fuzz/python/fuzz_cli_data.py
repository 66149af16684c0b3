"""atheris target: the training CLI's --data text file (oneflow_lite.train
--model gpt --data FILE): train_data.text_batches reads it, one token per
character, and the first batch is drawn, as make_data does. The first input
byte picks --seq (1..16) so short files meet the length check; --batch is 2.
Expected: ValueError/TypeError/OSError with a message (UnicodeDecodeError is
a ValueError) (fuzz_common.py).
"""
from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fuzz_common  # noqa: E402


def TestOneInput(data: bytes) -> None:
    from oneflow_lite import train_data

    if not data:
        return
    seq = 1 + data[0] % 16
    path = fuzz_common.write(os.path.join(fuzz_common.scratch_dir(), "data.txt"), data[1:])
    with fuzz_common.expected_errors("--data"):
        batches, chars = train_data.text_batches(path, seq, 2, np.random.default_rng(0))
        ids, labels = next(batches)
        if ids.shape != (2, seq) or labels.shape != (2, seq) or ids.max() >= len(chars):
            raise AssertionError(f"--data: batch {ids.shape} over {len(chars)} characters")


if __name__ == "__main__":
    fuzz_common.main(TestOneInput, ["oneflow_lite.train_data"])
