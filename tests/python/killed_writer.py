"""Test helper: a checkpoint writer (Python source that saves in a loop and
prints "ready" once) started in a subprocess and killed by SIGKILL at a
random moment, so a test can check that the target always stays loadable.
Every process it starts is ended by its own pid, every wait bounded."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import numpy as np


def kill_at_random_moment(writer: str, target: str, env: dict, rng: np.random.Generator) -> None:
    """Runs ``python -c writer target``, waits for its "ready", lets it write
    for up to 0.15 s, then SIGKILLs it."""
    proc = subprocess.Popen([sys.executable, "-c", writer, target], env=env,
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(float(rng.uniform(0.0, 0.15)))
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        proc.stdout.close()
