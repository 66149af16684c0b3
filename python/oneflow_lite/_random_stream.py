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
there (step 0's masks in a fresh session).

Eager models have no session: each ``nn.Dropout`` counts its own train-mode
calls (``Dropout.iteration``). ``checkpoint.save_eager`` stores these
counters in index.json as ``"dropout": {qualified module name: N}`` (apart
from ``"random"``, which stays a session's position) and ``load_eager``
sets them after the parameters. A graph's checkpoint has none but a
session position: every counter is set to it (exact when the graph ran one
micro-batch per step and each Dropout runs once per step: the masks are
then the graph's). A checkpoint with neither (an older one) still loads,
with a ``RuntimeWarning`` that dropout continues from the modules' own counters (step 0's masks in a fresh
model); so does one whose names differ from the model's Dropout modules
(those it names are set). Functions over their arguments, thread-safe
except against a model that trains meanwhile.
"""
from __future__ import annotations

import warnings
from typing import Mapping, Optional, Sequence

import numpy as np

KEY = "random"
MODULES = "dropout"  # an eager checkpoint's per-module counters


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


def _dropouts(model) -> dict:
    from oneflow_lite.nn.modules.activation import Dropout

    return {n: m for n, m in model.named_modules() if isinstance(m, Dropout)}


def eager_counters(model) -> dict:
    """The index field of ``model``'s Dropout counters: qualified name -> count."""
    return {n: int(m.iteration) for n, m in _dropouts(model).items()}


def check_counters(index: dict, fail) -> None:
    """Raises ``fail(message)`` unless the index's counters are absent or well formed."""
    if MODULES not in index:
        return
    field = index[MODULES]
    if not isinstance(field, dict) or not all(
            isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool)
            and 0 <= v < 2 ** 62 for k, v in field.items()):
        text = repr(field)
        text = text if len(text) <= 80 else text[:77] + "..."
        raise fail(f"index.json '{MODULES}' is {text}, expected {{module name: an integer "
                   f"in [0, 2**62)}}")


def restore_eager(path: str, counters: Optional[Mapping[str, int]], model,
                  position: Optional[dict] = None) -> None:
    """Sets ``model``'s Dropout counters from a checkpoint's ``counters`` (its
    index field, or None), else from a graph's ``position``; warns for the
    modules it leaves (module docstring)."""
    modules = _dropouts(model)
    if counters is None and position is not None:  # a graph's: one draw per step
        counters = {n: position["iteration"] for n in modules}
    counters = {} if counters is None else counters
    for name, count in counters.items():
        if name in modules:
            modules[name].iteration = int(count)
    missing = [n for n in modules if n not in counters]
    unexpected = [n for n in counters if n not in modules]
    if not missing and not unexpected:
        return
    parts = []
    if missing:
        parts.append(f"no counter for Dropout {_names(missing)}")
    if unexpected:
        parts.append(f"counters for {_names(unexpected)}, not Dropout modules of this model")
    warnings.warn(f"checkpoint {path}: {'; '.join(parts)} (an older oneflow_lite's, or another model's): "
                  f"those modules' dropout continues from their own counters "
                  f"(a fresh model draws step 0's masks again)", RuntimeWarning, stacklevel=3)


def _names(names: Sequence[str]) -> str:
    return ", ".join(names[:4]) + (" ..." if len(names) > 4 else "")
