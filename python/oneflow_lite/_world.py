"""This process's place in a multi-process job, for the Python side.

The C++ world (runtime/process_world.h) is made from the launcher's
variables the first time it is needed; this module adds what Python code
exchanges with the other processes outside tensor traffic: picklable
objects gathered through the job's store (``all_gather``, ``broadcast``,
``barrier``), each call numbered (the store drops a call's keys two calls
later) so that every process must make the same calls in the same order
(as with collectives). ``World`` bundles them for
code that takes a world object (sharded checkpoints). In a process started
without WORLD_SIZE (or with 1) everything is local and nothing is sent.
Not thread-safe: one thread makes the calls.
"""
from __future__ import annotations

import atexit
import os
import pickle
import sys
from typing import Any, List, Optional

from oneflow_lite import _C

_started = False


def _distributed_env() -> bool:
    return int(os.environ.get("WORLD_SIZE", "1") or "1") > 1


def info() -> dict:
    """process, num_processes, devices_per_process, distributed."""
    global _started
    if not _distributed_env():
        return {"process": 0, "num_processes": 1, "devices_per_process": int(
            os.environ.get("OFL_DEVICES_PER_PROCESS", "1") or "1"), "distributed": False}
    d = dict(_C.world_info())
    if not _started:
        _started = True
        atexit.register(_C.world_shutdown)  # process 0 hosts the store: it leaves last
    return d


class WorldMismatch(ValueError):
    """A placement that does not fit the launched world: the same mistake on
    every process, so, uncaught, process 0 prints its one line and the
    others nothing (no traceback anywhere)."""


def check_placement(ranks) -> None:
    """In a launched job (WORLD_SIZE > 1), raises WorldMismatch naming what
    to pass when a placement's ranks go past the world's devices (processes
    x OFL_DEVICES_PER_PROCESS); nothing otherwise (one process: the ranks are
    virtual devices, as many as asked)."""
    world = info()  # what the C++ world reads (it needs no GROUP_RANK)
    if not world["distributed"] or not ranks:
        return
    nproc, per_process = world["num_processes"], world["devices_per_process"]
    devices, need = nproc * per_process, max(ranks) + 1
    if need <= devices:
        return
    procs = -(-need // per_process)
    per = -(-need // nproc)
    _install_hook()
    raise WorldMismatch(
        f"the placement uses rank {need - 1} but the job has {devices} device(s) "
        f"({nproc} processes x {per_process} per process): launch "
        f"{procs} processes (--nproc-per-node {procs}; the main job: --nproc {procs}) or give "
        f"each process {per} devices (--devices-per-process {per})")


_hooked = False


def _install_hook() -> None:
    global _hooked
    if _hooked:
        return
    _hooked = True
    previous = sys.excepthook

    def hook(kind, value, tb):
        if not isinstance(value, WorldMismatch):
            return previous(kind, value, tb)
        if os.environ.get("RANK", "0") == "0":
            print(f"error: {value}", file=sys.stderr, flush=True)
        return None

    sys.excepthook = hook


def trace_path(path) -> str:
    """Where this process writes a Chrome trace asked for at ``path``:
    ``path`` itself in a single process, ``.process<p>`` before its
    extension in a launched job (its own ranks' events: t.json ->
    t.process1.json); "" when ``path`` is None (no trace). Its folder is
    created."""
    if not path:
        return ""
    path = os.fspath(path)
    if _distributed_env():
        stem, ext = os.path.splitext(path)
        path = f"{stem}.process{int(os.environ.get('RANK', '0') or '0')}{ext}"
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    return path


def all_gather(obj: Any, owner: str = "py") -> List[Any]:
    """Every process's ``obj``, by process index. Calls of one ``owner`` are
    numbered together: another thread uses another owner."""
    if not info()["distributed"]:
        return [obj]
    parts = _C.world_all_gather(pickle.dumps(obj), owner)
    return [pickle.loads(p) for p in parts]


def broadcast(obj: Any, owner: str = "py") -> Any:
    """Process 0's ``obj`` on every process."""
    return all_gather(obj if info()["process"] == 0 else None, owner)[0]


def barrier(owner: str = "py") -> None:
    all_gather(None, owner)


def publish(name: str, value: str) -> None:
    """Sets the job's key ``name`` (once; not a collective: a lost peer does
    not stop it). Nothing in a process started alone."""
    if info()["distributed"]:
        _C.world_publish(name, value.encode())


def await_published(name: str) -> Optional[str]:
    """The value of ``name`` once ``publish`` set it (bounded by the world's
    timeout: RuntimeError), or None when the store no longer answers: its
    host, process 0, is gone."""
    got = _C.world_await(name)
    return None if got is None else got.decode()


class World:
    """The world object sharded checkpoints take: process index, count, and
    the store collectives above, numbered under ``owner`` (a thread of its
    own, e.g. a background checkpoint writer, takes an owner of its own)."""

    def __init__(self, owner: str = "py"):
        self.owner = owner

    @property
    def process(self) -> int:
        return info()["process"]

    @property
    def num_processes(self) -> int:
        return info()["num_processes"]

    def barrier(self, name: str = "") -> None:  # noqa: ARG002 - names are for readers
        barrier(self.owner)

    def broadcast_str(self, value: str) -> str:
        return broadcast(value, self.owner)

    def all_gather_obj(self, obj: Any) -> List[Any]:
        return all_gather(obj, self.owner)

    def publish_str(self, name: str, value: str) -> None:
        publish(name, value)

    def await_str(self, name: str) -> Optional[str]:
        return await_published(name)
