"""atheris target: a sharded checkpoint's index.json as the loaders read it.

The input is the index.json of a sharded checkpoint directory that also
holds two real shard files (a [6, 4] float32 tensor "w" split in rows over
two processes, and a scalar "w/step"; small crc32 chunks), so an index that
passes the checks goes on to the byte-range reads and their crc32 and
sha256 checks. Each input is loaded three ways: logically
(``checkpoint.load``, which assembles), into a two-rank column split
(partial reads, verified), and the same unverified. Expected:
CheckpointError (a ValueError) and other ValueError/TypeError/OSError with a
message (fuzz_common.py).
"""
from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fuzz_common  # noqa: E402

W = np.arange(24, dtype=np.float32).reshape(6, 4)
_checkpoint = None


class _Rows:
    """The saved layout: "w" in rows over ranks 0 and 1, one process each."""

    def __init__(self, rank):
        self.names, self.ranks = ["w", "w/step"], [rank]

    def layout(self, name):
        if name == "w/step":
            return {"shape": [], "dtype": "float32", "nd_sbp": "(B)", "ranks": [0, 1],
                    "hierarchy": [2], "slices": {r: {"offset": [], "shape": [],
                                                     "partial": False, "primary": r == 0}
                                                 for r in (0, 1)}}
        return {"shape": [6, 4], "dtype": "float32", "nd_sbp": "(S(0))", "ranks": [0, 1],
                "hierarchy": [2], "slices": {r: {"offset": [3 * r, 0], "shape": [3, 4],
                                                 "partial": False, "primary": True}
                                             for r in (0, 1)}}

    def get(self, name, rank):
        return np.array(7.0, np.float32) if name == "w/step" else W[3 * rank:3 * rank + 3]


class _Columns(_Rows):
    """The loading layout: "w" in columns over ranks 0 and 1 of one process."""

    def __init__(self):
        super().__init__(0)
        self.ranks, self.values = [0, 1], {}

    def layout(self, name):
        out = super().layout(name)
        if name == "w":
            for r in (0, 1):
                out["slices"][r].update(offset=[0, 2 * r], shape=[6, 2])
        return out

    def set(self, name, rank, value):
        self.values[name, rank] = value


def checkpoint_dir() -> str:
    """A saved sharded checkpoint whose index.json each input replaces."""
    global _checkpoint
    if _checkpoint is None:
        import threading

        from oneflow_lite import _thread_world, sharded_checkpoint

        path = os.path.join(fuzz_common.scratch_dir(), "sharded")
        worlds = _thread_world.thread_worlds(2)
        threads = [threading.Thread(target=sharded_checkpoint.save, args=(path, _Rows(i)),
                                    kwargs={"model": "toy", "world": worlds[i],
                                            "chunk_bytes": 16}) for i in (0, 1)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        _checkpoint = path
    return _checkpoint


def TestOneInput(data: bytes) -> None:
    from oneflow_lite import checkpoint, sharded_checkpoint

    path = checkpoint_dir()
    fuzz_common.write(os.path.join(path, "index.json"), data)
    with fuzz_common.expected_errors("checkpoint.load"):
        checkpoint.load(path)
    for verify in (True, False):
        with fuzz_common.expected_errors(f"sharded_checkpoint.load_into(verify={verify})"):
            sharded_checkpoint.load_into(path, _Columns(), verify=verify)


if __name__ == "__main__":
    fuzz_common.main(TestOneInput, ["oneflow_lite.checkpoint", "oneflow_lite.sharded_checkpoint",
                                    "oneflow_lite._sharded_index", "oneflow_lite._slice_io"])
