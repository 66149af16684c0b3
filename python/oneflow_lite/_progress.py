"""Progress of the slow steps before training (calibration, the optimality
check of a plan), with the time elapsed: a tqdm bar on a terminal, plain
lines otherwise (a log file, a test), on stderr (stdout may carry a
program's results, e.g. a bench worker's JSON). Only process 0 of a launched
job reports (every process plans; process 0 calibrates). ``OFL_PROGRESS=0``
silences it.

    >>> steps = Steps("calibrate", stream=sys.stdout, tty=False)
    >>> steps("memcpy", 1, 2)  # doctest: +ELLIPSIS
    [calibrate] 1/2 memcpy (... s)
"""
from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from typing import Iterator, Optional, TextIO


def enabled() -> bool:
    return os.environ.get("OFL_PROGRESS", "1") != "0" and os.environ.get("RANK", "0") in ("0", "")


def _bar(stream: TextIO, tty: Optional[bool], **kwargs):
    """A tqdm bar on ``stream`` when it is a terminal (and tqdm is there), else None."""
    if not (stream.isatty() if tty is None else tty):
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(file=stream, dynamic_ncols=True, leave=True, **kwargs)


class Steps:
    """A progress callback ``(what, done, total)``: one bar step or one line
    per measurement, with the seconds since the first call began."""

    def __init__(self, name: str, stream: Optional[TextIO] = None,
                 tty: Optional[bool] = None) -> None:
        self.name, self.stream, self.tty = name, stream or sys.stderr, tty
        self.start = time.monotonic()
        self.bar = None

    def __call__(self, what: str, done: int, total: int) -> None:
        elapsed = time.monotonic() - self.start
        if self.bar is None:
            self.bar = _bar(self.stream, self.tty, total=total, desc=self.name, unit="step")
        if self.bar is not None:
            self.bar.set_postfix_str(what)
            self.bar.update(done - self.bar.n)
            return
        print(f"[{self.name}] {done}/{total} {what} ({elapsed:.1f} s)", file=self.stream,
              flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


@contextlib.contextmanager
def ticking(name: str, what: str, cap_s: Optional[float] = None,
            stream: Optional[TextIO] = None, tty: Optional[bool] = None) -> Iterator[None]:
    """Around a blocking call (which releases the GIL): on a terminal a bar
    of the seconds elapsed against ``cap_s``, refreshed twice a second by a
    thread; otherwise one line when it starts and one with the time it took."""
    stream = stream or sys.stderr
    cap = f", cap {cap_s:g} s" if cap_s else ""
    start = time.monotonic()
    bar = _bar(stream, tty, total=cap_s, desc=name, unit="s",
               bar_format=("{desc}: {bar}| " if cap_s else "{desc}: ") + "{elapsed} elapsed" + cap
               + " {postfix}")
    stop = threading.Event()
    if bar is None:
        print(f"[{name}] {what}{cap} ...", file=stream, flush=True)
        thread = None
    else:
        bar.set_postfix_str(what)

        def tick() -> None:
            while not stop.wait(0.5):
                bar.n = min(time.monotonic() - start, cap_s or float("inf"))
                bar.refresh()

        thread = threading.Thread(target=tick, name="ofl-progress", daemon=True)
        thread.start()
    try:
        yield
    finally:
        stop.set()
        if thread is not None:
            thread.join(timeout=2)
            bar.close()
    if thread is None:  # done (an error says so itself)
        print(f"[{name}] {what}: {time.monotonic() - start:.1f} s", file=stream, flush=True)


def progress_or_none(name: str) -> Optional[Steps]:
    """A ``Steps`` callback when progress is shown here (``enabled``), else None."""
    return Steps(name) if enabled() else None


def optimality_check(searcher: str, cap_s: Optional[float]):
    """``ticking`` around a plan that measures its distance to the optimum
    (``cap_s`` set, the searcher not exact itself); a no-op otherwise."""
    if not cap_s or searcher == "exact" or not enabled():
        return contextlib.nullcontext()
    return ticking("plan", f"{searcher}, then the optimality check (exact from the plan)",
                   cap_s)
