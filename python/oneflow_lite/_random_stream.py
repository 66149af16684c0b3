"""The random stream's position in a checkpoint, so that a resumed run draws
the dropout masks the uninterrupted one would.

Dropout draws from (seed, iteration, logical index) (ops/nn/dropout.cpp):
the seed is an attribute of the traced graph, the logical index is the same
under every plan, and the iteration is the session's count of micro-batches
run (``session.iteration``; a failed transactional step does not advance
it). So the iteration is all a checkpoint must add. Both formats store it in
index.json as ``"random": {"iteration": N}``, written from the saving
source (``SessionShards`` reads its session's; ``ArrayShards`` and
``checkpoint.save`` take it as an argument; eager state has none) and, on a
load into a session, set after every variable (a load that fails changes
neither). Every process of a sharded save must report the same position.

A checkpoint without the field (written before it existed, or from eager
state) still loads: the position is derived from the saved Adam/AdamW step
counter when there is one (``<param>/step`` x the session's micro-batches:
exact for a session that ran only training steps), else the session keeps
its own position and a ``RuntimeWarning`` says that dropout continues from
there (step 0's masks in a fresh session). Pure functions; thread-safe.
"""
from __future__ import annotations

import warnings
from typing import Mapping, Optional, Sequence

import numpy as np

KEY = "random"


def of(iteration: Optional[int]) -> Optional[dict]:
    """The index field for a source at ``iteration`` (None: no stream)."""
    return None if iteration is None else {"iteration": int(iteration)}


def check(index: dict, fail) -> None:
    """Raises ``fail(message)`` unless the index's field is absent or well formed."""
    if KEY not in index:
        return
    field = index[KEY]
    it = field.get("iteration") if isinstance(field, dict) else None
    if not isinstance(it, int) or isinstance(it, bool) or not 0 <= it < 2 ** 62:
        text = repr(field)
        text = text if len(text) <= 80 else text[:77] + "..."
        raise fail(f"index.json '{KEY}' is {text}, expected "
                   f"{{\"iteration\": an integer in [0, 2**62)}}")


def agreed(positions: Sequence[Optional[dict]]) -> Optional[dict]:
    """The one position every process of a save reports; ValueError otherwise."""
    if any(p != positions[0] for p in positions):
        raise ValueError(f"the processes' random stream positions differ: {list(positions)} "
                         f"(their sessions ran different numbers of micro-batches)")
    return positions[0]


def derived(tensors: Mapping[str, np.ndarray], micro_batches: int) -> Optional[int]:
    """The iteration an optimizer step counter implies, or None without one."""
    steps = {int(np.asarray(v).reshape(-1)[0]) for k, v in tensors.items()
             if k.endswith("/step") and np.asarray(v).size == 1}
    if len(steps) != 1:
        return None
    return steps.pop() * int(micro_batches)


def restore(path: str, position: Optional[dict], session,
            tensors: Mapping[str, np.ndarray]) -> None:
    """Sets ``session.iteration`` from a checkpoint's ``position`` (its index
    field, or None) or its loaded ``tensors`` (see the module docstring)."""
    if position is not None:
        session.iteration = position["iteration"]
        return
    guess = derived(tensors, session.micro_batches)
    if guess is not None:
        session.iteration = guess
        return
    warnings.warn(f"checkpoint {path} holds no random stream position (saved by an older "
                  f"oneflow_lite or from eager state) and no optimizer step counter: dropout "
                  f"continues from this session's iteration {session.iteration} (a fresh "
                  f"session draws step 0's masks again)", RuntimeWarning, stacklevel=3)
