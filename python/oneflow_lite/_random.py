"""The frontend's random state: one numpy ``Generator`` over the Philox
counter-based bit generator, reset by ``flow.manual_seed(seed)``.

It draws initial parameter values (``randn``, ``nn.init``) and the seeds of
dropout modules. Dropout masks themselves come from the C++ dropout kernel
(Philox of the seed, the iteration and the element's logical index), so
eager and graph runs drop the same elements. Module-level state, not
thread-safe (the eager frontend is single-threaded).
"""
from __future__ import annotations

import numpy as np

_DEFAULT_SEED = 0
_generator = np.random.Generator(np.random.Philox(_DEFAULT_SEED))


def manual_seed(seed: int) -> None:
    """Makes every later draw (init, randn, dropout seeds) a function of ``seed``."""
    global _generator
    if not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"manual_seed: seed must be a non-negative integer, got {seed!r}")
    _generator = np.random.Generator(np.random.Philox(int(seed)))


def generator() -> np.random.Generator:
    return _generator


def next_seed() -> int:
    """A fresh 31-bit seed for a random op (e.g. a Dropout module)."""
    return int(_generator.integers(0, 2 ** 31 - 1))
