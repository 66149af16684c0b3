"""The processes of a job, as a sharded checkpoint sees them: this process's
index and the process count, and three collectives every process calls in
the same order: ``barrier(name)``, ``broadcast_str(value)`` (process 0's
value, returned to all) and ``all_gather_obj(obj)`` (every process's
JSON-serialisable object, in process order).

``World`` is that interface. ``SingleProcess`` is the world of one process
(every collective is local). ``thread_worlds(n)`` simulates n processes as
n threads of this one (a shared ``threading.Barrier`` with a timeout, so a
missing peer fails instead of hanging): tests run one save per thread. A
real multi-process world implements the same four members over the job's
TCP store.

One World object per process (per thread for ``thread_worlds``); its
collectives are not re-entrant.

    >>> w = SingleProcess()
    >>> w.index, w.count, w.broadcast_str("x"), w.all_gather_obj({"a": 1})
    (0, 1, 'x', [{'a': 1}])
"""
from __future__ import annotations

import threading
from typing import Any, List


class World:
    """Interface: ``index`` (0-based) and ``count`` of the processes, and the
    collectives of the module docstring."""

    index: int = 0
    count: int = 1

    def barrier(self, name: str) -> None:
        raise NotImplementedError

    def broadcast_str(self, value: str) -> str:
        raise NotImplementedError

    def all_gather_obj(self, obj: Any) -> List[Any]:
        raise NotImplementedError


class SingleProcess(World):
    """The world of one process."""

    def barrier(self, name: str) -> None:
        pass

    def broadcast_str(self, value: str) -> str:
        return value

    def all_gather_obj(self, obj: Any) -> List[Any]:
        return [obj]


class _ThreadWorld(World):
    def __init__(self, index: int, count: int, barrier: threading.Barrier, slots: list):
        self.index, self.count = index, count
        self._barrier, self._slots = barrier, slots

    def barrier(self, name: str) -> None:
        try:
            self._barrier.wait()
        except threading.BrokenBarrierError:
            raise RuntimeError(f"world: barrier '{name}' broken in process {self.index} of "
                               f"{self.count} (a peer failed or timed out)") from None

    def broadcast_str(self, value: str) -> str:
        if self.index == 0:
            self._slots[0] = value
        self.barrier("broadcast_str")
        out = self._slots[0]
        self.barrier("broadcast_str read")  # nobody overwrites the slot before all read it
        return out

    def all_gather_obj(self, obj: Any) -> List[Any]:
        self._slots[self.index] = obj
        self.barrier("all_gather_obj")
        out = list(self._slots)
        self.barrier("all_gather_obj read")
        return out


def thread_worlds(count: int, timeout_s: float = 60.0) -> List[World]:
    """``count`` worlds sharing one barrier: give one to each of ``count``
    threads, which then act as the processes of one job."""
    if count < 1:
        raise ValueError(f"thread_worlds: count={count} must be >= 1")
    barrier = threading.Barrier(count, timeout=timeout_s)
    slots: list = [None] * count
    return [_ThreadWorld(i, count, barrier, slots) for i in range(count)]
