"""Starting the processes of a multi-process test: one world of ``nproc``
processes on loopback (a free port, a job id of its own), each with the
launcher's variables, every one ended by its own pid, every wait bounded.

``run_world`` returns each process's exit code and output once all have
ended (or kills them all at the deadline and says so). Not thread-safe.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__)))))


def free_port(host: str = "127.0.0.1") -> int:
    """A port free now (the OS picks it; another process may take it before
    we bind it again, which the caller sees as a clear bind error)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


@dataclass
class Result:
    codes: List[Optional[int]]  # None: killed at the deadline
    outputs: List[str]
    seconds: float
    timed_out: bool


def world_env(rank: int, nproc: int, port: int, job: str, devices_per_process: int = 1,
              master: str = "127.0.0.1") -> Dict[str, str]:
    env = dict(os.environ)
    env.update(RANK=str(rank), WORLD_SIZE=str(nproc), LOCAL_RANK=str(rank),
               LOCAL_WORLD_SIZE=str(nproc), MASTER_ADDR=master, MASTER_PORT=str(port),
               OFL_JOB_ID=job, OFL_DEVICES_PER_PROCESS=str(devices_per_process))
    env["PYTHONPATH"] = os.pathsep.join(
        [os.path.join(REPO, "python"), os.path.join(REPO, "tests", "python")] +
        ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    return env


def start_world(args: Sequence[str], nproc: int, devices_per_process: int = 1,
                extra_env: Optional[Dict[str, str]] = None,
                prefix: Sequence[Sequence[str]] = (), master: str = "127.0.0.1",
                rank_env: Sequence[Dict[str, str]] = (), port: Optional[int] = None
                ) -> List[subprocess.Popen]:
    """Starts ``python args...`` in ``nproc`` processes (process r under
    ``prefix[r]`` when given, e.g. ``ip netns exec host1``, with
    ``rank_env[r]`` added to its environment)."""
    port = port or free_port(master)
    job = uuid.uuid4().hex[:12]
    procs = []
    for r in range(nproc):
        env = world_env(r, nproc, port, job, devices_per_process, master)
        env.update(extra_env or {})
        env.update(rank_env[r] if rank_env else {})
        cmd = list(prefix[r]) if prefix else []
        cmd += [sys.executable, *args]
        procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True,
                                      start_new_session=True))
    return procs


def wait_world(procs: List[subprocess.Popen], timeout: float) -> Result:
    start = time.monotonic()
    deadline = start + timeout
    timed_out = False
    outputs = []
    for p in procs:
        left = max(0.1, deadline - time.monotonic())
        try:
            out, _ = p.communicate(timeout=left)
        except subprocess.TimeoutExpired:
            timed_out = True
            kill(procs)
            out, _ = p.communicate(timeout=10)
        outputs.append(out)
    codes = [None if timed_out and p.returncode is not None and p.returncode < 0 and
             p.returncode == -signal.SIGKILL else p.returncode for p in procs]
    return Result(codes, outputs, time.monotonic() - start, timed_out)


def kill(procs: List[subprocess.Popen]) -> None:
    """SIGKILL to every process still running, by its own pid."""
    for p in procs:
        if p.poll() is None:
            try:
                os.kill(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def run_world(args: Sequence[str], nproc: int, timeout: float, **kw) -> Result:
    procs = start_world(args, nproc, **kw)
    try:
        return wait_world(procs, timeout)
    finally:
        kill(procs)


def children_by_rank(pid: int) -> Dict[int, int]:
    """RANK -> pid of the processes whose parent is ``pid``."""
    out = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            if ppid != pid:
                continue
            with open(f"/proc/{name}/environ", "rb") as f:
                env = dict(e.split(b"=", 1) for e in f.read().split(b"\0") if b"=" in e)
            out[int(env[b"RANK"])] = int(name)
        except (OSError, ValueError, KeyError, IndexError):
            continue
    return out
