"""Several processes of one job simulated as threads of this one, for tests
of collective Python code (sharded checkpoints): ``thread_worlds(n)`` gives
n world objects with the interface of ``_world.World`` (``process``,
``num_processes``, ``barrier(name)``, ``broadcast_str(value)``,
``all_gather_obj(obj)``, ``publish_str(name, value)``, ``await_str(name)``), one per thread, sharing a ``threading.Barrier``
with a timeout, so a missing peer fails with an error instead of hanging.

One world object per thread; its calls are not re-entrant.

    >>> import threading
    >>> worlds, out = thread_worlds(2), [None, None]
    >>> def body(w): out[w.process] = w.all_gather_obj(w.process * 10)
    >>> threads = [threading.Thread(target=body, args=(w,)) for w in worlds]
    >>> _ = [t.start() for t in threads] + [t.join() for t in threads]
    >>> out
    [[0, 10], [0, 10]]
"""
from __future__ import annotations

import threading
from typing import Any, List, Optional


class ThreadWorld:
    """Process ``process`` of ``num_processes`` simulated ones (a thread)."""

    def __init__(self, process: int, num_processes: int, barrier: threading.Barrier,
                 slots: list, board: Optional[dict] = None, timeout_s: float = 60.0):
        self.process, self.num_processes = process, num_processes
        self._barrier, self._slots = barrier, slots
        self._board = board if board is not None else {"cv": threading.Condition()}
        self._timeout_s = timeout_s

    def barrier(self, name: str = "") -> None:
        try:
            self._barrier.wait()
        except threading.BrokenBarrierError:
            raise RuntimeError(f"world: barrier '{name}' broken in process {self.process} of "
                               f"{self.num_processes} (a peer failed or timed out)") from None

    def broadcast_str(self, value: str) -> str:
        return self.all_gather_obj(value if self.process == 0 else None)[0]

    def publish_str(self, name: str, value: str) -> None:
        with self._board["cv"]:
            self._board[name] = value
            self._board["cv"].notify_all()

    def await_str(self, name: str) -> Optional[str]:
        with self._board["cv"]:
            if not self._board["cv"].wait_for(lambda: name in self._board, self._timeout_s):
                raise RuntimeError(f"world: '{name}' was not published within "
                                   f"{self._timeout_s:g} s (process {self.process})")
            return self._board[name]

    def all_gather_obj(self, obj: Any) -> List[Any]:
        self._slots[self.process] = obj
        self.barrier("all_gather_obj")
        out = list(self._slots)
        self.barrier("all_gather_obj read")  # nobody overwrites a slot before all read it
        return out


def thread_worlds(count: int, timeout_s: float = 60.0) -> List[ThreadWorld]:
    """``count`` worlds sharing one barrier: give one to each of ``count``
    threads, which then act as the processes of one job."""
    if count < 1:
        raise ValueError(f"thread_worlds: count={count} must be >= 1")
    barrier = threading.Barrier(count, timeout=timeout_s)
    slots: list = [None] * count
    board = {"cv": threading.Condition()}  # publish_str / await_str
    return [ThreadWorld(i, count, barrier, slots, board, timeout_s) for i in range(count)]
