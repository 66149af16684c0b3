"""The processes of one node of a launched job: started, watched, sent the
launcher's signals, stopped, and summed up in one line.

A ``Supervisor`` owns its children (``subprocess.Popen``, each in its own
session, so a Ctrl-C in the terminal reaches the launcher alone and is
forwarded once), their log files and their output pumps. On Linux each child
asks the kernel for SIGKILL when the launcher dies (prctl
PR_SET_PDEATHSIG), so a launcher killed by SIGKILL leaves no child running. Nothing here
installs a signal handler: ``launch.py`` does, and calls ``forward``.

Bounds: ``wait`` returns at the first failure or signal, or once every child
has exited; while every child runs it has no time bound (a training job may
run for days). Everything after it is bounded: ``stop`` waits at most
grace_s + kill_after_s + 5 s, ``close`` at most 2 s per output pump.

Thread safety: one thread drives a Supervisor; ``forward`` may also run in a
signal handler of that thread (it only reads the child list and sends
signals). Pump threads touch only their own pipe and the launcher's fd 1.
"""
from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import threading
import time
from typing import Callable, Dict, IO, List, Mapping, Optional, Sequence

POLL_S = 0.05
_PR_SET_PDEATHSIG = 1
_REAP_AFTER_KILL_S = 5.0
_PUMP_JOIN_S = 2.0
_STDOUT = 1


@dataclasses.dataclass
class Child:
    rank: int
    process: subprocess.Popen
    log: Optional[IO[bytes]] = None
    pump: Optional[threading.Thread] = None
    stopped_by: Optional[int] = None  # the last signal stop() sent it

    @property
    def alive(self) -> bool:
        return self.process.poll() is None


def describe(returncode: int) -> str:
    """'exited with code 3' or 'was killed by SIGKILL'."""
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"was killed by {name}"
    return f"exited with code {returncode}"


def _ranks(children: Sequence[Child]) -> str:
    return ", ".join(str(c.rank) for c in children)


class Supervisor:
    """Starts one child per rank with ``command`` and that rank's environment
    (``envs[rank]``). Output: inherited (default), one ``rank_<r>.log`` per
    child in ``log_dir``, or ``tee_prefix``: each line on the launcher's
    stdout after "[rank r] ". ``prefixes[rank]``, when given, goes before that
    rank's command (``ip netns exec NS``: an exec, so the child's pid stays the
    command's)."""

    def __init__(self, command: Sequence[str], envs: Mapping[int, Mapping[str, str]],
                 log_dir: Optional[str] = None, tee_prefix: bool = False,
                 prefixes: Optional[Mapping[int, Sequence[str]]] = None):
        self._command = list(command)
        self._prefixes = dict(prefixes or {})
        self._envs = envs
        self._log_dir = log_dir
        self._tee_prefix = tee_prefix
        self._stdout_lock = threading.Lock()
        self.children: List[Child] = []

    def start(self, should_stop: Callable[[], bool]) -> None:
        """Starts the children in rank order, fewer if ``should_stop`` turns
        true (a signal came). On an OSError the started ones are killed."""
        for rank, env in self._envs.items():
            if should_stop():
                return
            try:
                self.children.append(self._start_one(rank, env))
            except OSError:
                self.stop(grace_s=0.0, kill_after_s=0.0)
                self.close()
                raise

    def _start_one(self, rank: int, env: Mapping[str, str]) -> Child:
        log = None
        stdout = None
        if self._log_dir is not None:
            log = open(os.path.join(self._log_dir, f"rank_{rank}.log"), "wb")
            stdout = log
        elif self._tee_prefix:
            stdout = subprocess.PIPE
        try:
            command = [*self._prefixes.get(rank, ()), *self._command]
            process = subprocess.Popen(command, env=dict(env), stdout=stdout,
                                       stderr=None if stdout is None else subprocess.STDOUT,
                                       start_new_session=True, preexec_fn=_die_with(os.getpid()))
        except OSError:
            if log is not None:
                log.close()
            raise
        child = Child(rank, process, log)
        if self._tee_prefix:
            child.pump = threading.Thread(target=self._pump, args=(child,), daemon=True,
                                          name=f"launch-pump-{rank}")
            child.pump.start()
        return child

    def _pump(self, child: Child) -> None:
        prefix = f"[rank {child.rank}] ".encode()
        for line in iter(child.process.stdout.readline, b""):
            if not line.endswith(b"\n"):
                line += b"\n"
            with self._stdout_lock:
                _write_all(_STDOUT, prefix + line)

    def forward(self, signum: int) -> List[int]:
        """Sends ``signum`` to every live child, by its pid; returns their ranks."""
        sent = []
        for child in list(self.children):
            if child.process.returncode is None:
                try:
                    os.kill(child.process.pid, signum)
                    sent.append(child.rank)
                except ProcessLookupError:
                    pass
        return sent

    def wait(self, should_stop: Callable[[], bool]) -> Optional[Child]:
        """Polls until a child fails (returned: the first one seen; within one
        poll one killed by a signal, the likelier cause, before one that
        exited, then the lowest rank), every child has exited (None), or
        ``should_stop`` turns true (None)."""
        while not should_stop():
            failed = [c for c in self.children if not c.alive and c.process.returncode != 0]
            if failed:
                return min(failed, key=lambda c: c.process.returncode > 0)
            if all(c.process.returncode is not None for c in self.children):
                return None
            time.sleep(POLL_S)
        return None

    def stop(self, grace_s: float, kill_after_s: float) -> None:
        """Gives the live children ``grace_s`` to exit on their own, then
        SIGTERM, then after ``kill_after_s`` SIGKILL, each to the child's
        process group (the child's own pid: its session), so what the child
        started goes too."""
        self._wait_all(grace_s)
        for signum, wait_s in ((signal.SIGTERM, kill_after_s),
                               (signal.SIGKILL, _REAP_AFTER_KILL_S)):
            live = [c for c in self.children if c.alive]
            if not live:
                return
            for child in live:
                child.stopped_by = signum
                try:
                    os.killpg(child.process.pid, signum)
                except ProcessLookupError:
                    pass
            self._wait_all(wait_s)

    def _wait_all(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while any(c.alive for c in self.children) and time.monotonic() < deadline:
            time.sleep(min(POLL_S, max(0.0, deadline - time.monotonic())))

    def close(self) -> None:
        """Joins the output pumps (bounded) and closes pipes and log files."""
        for child in self.children:
            if child.pump is not None:
                child.pump.join(_PUMP_JOIN_S)
            if child.process.stdout is not None and (child.pump is None
                                                     or not child.pump.is_alive()):
                child.process.stdout.close()
            if child.log is not None:
                child.log.close()

    def returncodes(self) -> Dict[int, Optional[int]]:
        return {c.rank: c.process.poll() for c in self.children}

    def summary(self, first: Child, others: Sequence[Child], grace_s: float,
                kill_after_s: float) -> str:
        """One line: the first failure, then what became of ``others`` (the
        children alive when it was seen)."""
        parts = [f"rank {first.rank} (pid {first.process.pid}) "
                 f"{describe(first.process.returncode)}"]
        parts += self.fates(others, grace_s, kill_after_s)
        return "; ".join(parts)

    @staticmethod
    def fates(others: Sequence[Child], grace_s: float, kill_after_s: float) -> List[str]:
        own = [c for c in others if c.stopped_by is None and not c.alive]
        term = [c for c in others if c.stopped_by == signal.SIGTERM and not c.alive]
        kill = [c for c in others if c.stopped_by == signal.SIGKILL and not c.alive]
        stuck = [c for c in others if c.alive]
        parts = []
        if own:
            parts.append(f"ranks {_ranks(own)} exited on their own")
        if term:
            parts.append(f"stopped ranks {_ranks(term)} with SIGTERM after {grace_s:g} s")
        if kill:
            parts.append(f"stopped ranks {_ranks(kill)} with SIGKILL after {kill_after_s:g} s "
                         "more")
        if stuck:
            parts.append(f"ranks {_ranks(stuck)} still run after SIGKILL (pids "
                         f"{', '.join(str(c.process.pid) for c in stuck)})")
        return parts


def _die_with(parent: int) -> Optional[Callable[[], None]]:
    """A preexec_fn: the child gets SIGKILL when ``parent`` (the launcher)
    dies, and exits at once if it died already. None where prctl is absent."""
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        prctl = libc.prctl
    except (OSError, AttributeError):
        return None

    def arm() -> None:  # runs in the forked child: async-signal-safe calls only
        prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        if os.getppid() != parent:
            os._exit(1)

    return arm


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        try:
            written = os.write(fd, view)
        except OSError:
            return  # the launcher's stdout is gone: drop the line
        view = view[written:]
