"""Periodic sharded checkpoints of an ``nn.Graph`` that cost the training
loop little: ``PeriodicSaver.save(graph, path, meta)`` takes a copy of this
process's shards at the step boundary (each local rank's slice of every
state variable: memory for one more copy of the state this process holds)
and writes it as a sharded checkpoint (oneflow_lite.sharded_checkpoint:
atomic, old-or-new on any kill) from a background thread, while the next
steps run. One save is in flight at a time: the next ``save`` (or
``wait``) first waits for it and raises what it raised.

The background save's store collectives go under their own key owner
("ckpt"), so they never interleave with the training thread's.
``background=False`` writes in the caller's thread (the same bytes).

    >>> import oneflow_lite as flow, tempfile, os
    >>> class G(flow.nn.Graph):
    ...     def __init__(self, m):
    ...         super().__init__()
    ...         self.m = m
    ...     def build(self, x):
    ...         return self.m(x)
    >>> g = G(flow.nn.Linear(2, 2))
    >>> _ = g(flow.ones(1, 2))
    >>> saver = PeriodicSaver()
    >>> path = os.path.join(tempfile.mkdtemp(), "step-1")
    >>> saver.save(g, path, meta={"step": 1}); saver.wait()
    >>> sorted(os.listdir(path))[-1]
    'shards'

Thread safety: one training thread calls save and wait.
"""
from __future__ import annotations

import threading
import time
from typing import Callable, Dict, Optional, Tuple

import numpy as np

from oneflow_lite import _world, sharded_checkpoint


class _Snapshot:
    """A copy of a session's local slices, seen as ``SessionShards`` is."""

    def __init__(self, shards: sharded_checkpoint.SessionShards):
        self.names, self.ranks = shards.names, shards.ranks
        self.iteration = shards.iteration  # the stream position at the copy
        self._layouts = {n: shards.layout(n) for n in self.names}
        self._slices: Dict[Tuple[str, int], np.ndarray] = {}
        for name in self.names:
            for rank in self.ranks:
                s = self._layouts[name]["slices"].get(rank)
                if s is not None and s["primary"]:
                    self._slices[(name, rank)] = np.array(shards.get(name, rank), copy=True)

    def layout(self, name: str) -> dict:
        return self._layouts[name]

    def get(self, name: str, rank: int) -> np.ndarray:
        return self._slices[(name, rank)]


class PeriodicSaver:
    """Writes snapshots of a graph's state (module docstring)."""

    def __init__(self, background: bool = True):
        self.background = background
        self._thread: Optional[threading.Thread] = None
        self._error: Optional[BaseException] = None
        self.copy_seconds: list = []  # time the training thread spent per save (copy)
        self.write_seconds: list = []  # time the writer spent per save

    def save(self, graph, path: str, model: str = "", meta: Optional[dict] = None,
             on_done: Optional[Callable[[], None]] = None) -> None:
        """Copies the state of ``graph`` now and writes it to ``path``."""
        self.wait()
        start = time.perf_counter()
        c = graph.compiled
        names = graph._state_names()  # noqa: SLF001 - the graph's notion of its state
        meta = dict(meta or {}, steps=c.steps)
        if graph._scheduler is not None:  # noqa: SLF001
            meta["lr_scheduler"] = graph._scheduler.state_dict()  # noqa: SLF001
        if c.parallel is not None:
            source = _Snapshot(sharded_checkpoint.SessionShards(c.session, names))
        else:
            source = sharded_checkpoint.ArrayShards({k: np.array(c.get(k)) for k in names},
                                                    iteration=c.session.iteration)
        self.copy_seconds.append(time.perf_counter() - start)

        def write() -> None:
            began = time.perf_counter()
            try:
                world = _world.World(owner="ckpt" if self.background else "py")
                sharded_checkpoint.save(path, source, model, meta, world)
                if on_done is not None:
                    on_done()
            except BaseException as e:  # noqa: BLE001 - raised by the next save or wait
                self._error = e
            self.write_seconds.append(time.perf_counter() - began)

        if not self.background:
            write()
            self.wait()
            return
        self._thread = threading.Thread(target=write, name="checkpoint-writer", daemon=True)
        self._thread.start()

    def wait(self, raise_errors: bool = True) -> None:
        """Waits for the save in flight; raises what it raised (or, when
        ``raise_errors`` is False, drops it: the caller is failing already)."""
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._error is not None:
            error, self._error = self._error, None
            if raise_errors:
                raise error
