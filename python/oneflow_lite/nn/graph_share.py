"""How an nn.Graph and its modules share parameters, buffers and optimizer
state, as in OneFlow, without copying them every step.

A compiled plan (one per input signature) keeps the training state in its
session. Each module tensor the plan holds as a variable is *shared*: its
class becomes a subclass of its own (``Parameter`` stays a ``Parameter``)
whose ``_value`` is a property, and it carries a ``Link``:

- ``version``: bumped whenever the value may have changed: after a graph
  step that trains it, and on every eager access of ``_value`` (reads and
  in-place writes both go through it, so any access counts as a write);
- ``holder``: the plan whose session holds a newer value than the module's
  array, or None when the array is the newest.

Reading ``_value`` (an eager op, ``numpy()``, ``state_dict()``, another
graph's trace) while a plan is the holder first copies every tensor that
plan holds back into the module (``Holder.release``). Before each step a
plan pushes each tensor whose version it has not seen (``Holder.acquire``);
after a training step it becomes the holder of what it trained. The
optimizer's state follows the same rule through ``Optimizer.state`` (a
property calling ``OptimizerLink.touch``): an eager ``opt.step()`` after
graph steps continues from the graph's moments and step counts, and a graph
step after eager steps from the eager ones. So the costs are one copy of
the state per hand-over between the eager module and a graph (or between
two graphs on one module), none per step.

Unlike OneFlow's shared memory, a view an access handed out (``numpy()``,
``detach()``, the tensors of ``state_dict()``) does not follow later graph
steps until the module tensor is accessed again (the host array is then
updated in place): take such views again after graph steps.

With several processes, a variable every process holds whole on a rank of
its own (data parallelism's replicated parameters and their optimizer
state) is read from there, so process 0 alone may read the module (log,
save); any other is read with a collective (DistributedSession.
get_variable): every process must then read the module (or call
``copy_to_modules``) at the same point, as with OneFlow's global tensors.
Meta tensors (no value) are not shared: their values live in the graph
only (carried from plan to plan). Not thread-safe (the frontend is not).
"""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

import numpy as np

from oneflow_lite import _device
from oneflow_lite._tensor import Tensor

_LINK = "_ofl_link"
_BASES: Dict[type, type] = {}    # shared class -> the class it was made from
_SHARED: Dict[type, type] = {}   # class -> its shared subclass


class Link:
    """The sharing record of one module tensor (module docstring)."""

    __slots__ = ("version", "holder")

    def __init__(self) -> None:
        self.version = 0
        self.holder: Optional["Holder"] = None

    def touch(self) -> None:
        """An eager access: the newest value into the module, then a new version."""
        if self.holder is not None:
            self.holder.release()
        self.version += 1


class _Shared:
    """Mixed into a shared tensor's class: ``_value`` syncs through the Link."""

    @property
    def _value(self):
        d = self.__dict__
        d[_LINK].touch()
        return d["_value"]

    @_value.setter
    def _value(self, value) -> None:
        d = self.__dict__
        link = d.get(_LINK)
        if link is not None:
            link.touch()
        d["_value"] = value

    def __deepcopy__(self, memo):
        """A copy of the newest value, as a plain (unshared) tensor."""
        link = self.__dict__[_LINK]
        link.touch()
        memo[id(link)] = None  # not copied: the copy has no graph
        out = super().__deepcopy__(memo)
        del out.__dict__[_LINK]
        out.__class__ = _BASES[type(self)]
        return out


def share(t: Tensor) -> Link:
    """Makes ``t`` shared (once) and returns its Link."""
    link = t.__dict__.get(_LINK)
    if link is not None:
        return link
    base = type(t)
    cls = _SHARED.get(base)
    if cls is None:
        cls = type(base.__name__, (_Shared, base), {"__module__": base.__module__,
                                                    "__qualname__": base.__qualname__})
        _SHARED[base], _BASES[cls] = cls, base
    link = t.__dict__[_LINK] = Link()
    t.__class__ = cls
    return link


def raw_value(t: Tensor):
    """``t``'s array (or device value) without syncing."""
    return t.__dict__["_value"]


def _store(t: Tensor, array: np.ndarray) -> None:
    """Writes the graph's ``array`` into ``t``'s own value (in place on the host)."""
    old = t.__dict__["_value"]
    if _device.is_device_value(old):
        t.__dict__["_value"] = _device.like_value(array, old)
    elif old.shape == array.shape and old.flags.writeable:
        np.copyto(old, array, casting="unsafe")
    else:
        t.__dict__["_value"] = array.astype(old.dtype)


class OptimizerLink:
    """The sharing record of one optimizer's state (module docstring)."""

    def __init__(self) -> None:
        self.version = 0
        self.holder: Optional["Holder"] = None

    def touch(self) -> None:
        if self.holder is not None:
            self.holder.release_optimizer()
        self.version += 1


def link_optimizer(opt) -> OptimizerLink:
    link = opt.__dict__.get("_graph_link")
    if link is None:
        link = opt.__dict__["_graph_link"] = OptimizerLink()
    return link


class Holder:
    """One compiled plan's side of the sharing: the module tensors it holds
    as variables (graph name -> tensor), the versions its session has, what
    a step writes, and the optimizer state it trains ("<name>/<part>")."""

    def __init__(self, compiled, variables: Dict[str, Tensor], trained: List[str],
                 optimizer=None) -> None:
        self.compiled = compiled
        self.tensors = {n: t for n, t in variables.items()
                        if not n.startswith("_const") and t.__dict__.get("_value") is not None}
        self.links = {n: share(t) for n, t in self.tensors.items()}
        self.trained = [n for n in trained if n in self.tensors]
        self.optimizer = optimizer
        self.opt_link = link_optimizer(optimizer) if optimizer is not None else None
        # (graph variable, parameter, state part) for every trained parameter
        self.opt_state: List[Tuple[str, Tensor, str]] = [
            (f"{n}/{part}", variables[n], part) for n in trained
            for part in (type(optimizer)._STATE if optimizer is not None else ())
            if f"{n}/{part}" in compiled.variables]
        compiled.find_whole_copies(list(self.tensors) + [n for n, _, _ in self.opt_state])
        # The session starts from the module's values (the trace read them).
        self.seen = {n: link.version for n, link in self.links.items()}
        self.opt_seen: Optional[int] = None  # pushed at the first step

    # ---- before and after a step ---------------------------------------------------
    def acquire(self) -> None:
        """Makes the session hold the newest value of everything it shares."""
        for n, link in self.links.items():
            if link.holder is self or (link.holder is None and self.seen[n] == link.version):
                continue
            if link.holder is not None:
                link.holder.release()
            self._push(n)
            self.seen[n] = link.version
        if self.opt_link is not None:
            self._acquire_optimizer()

    def _push(self, name: str) -> None:
        """The module tensor's value into the session; the module must not
        have changed its shape or dtype since the plan was compiled."""
        value = np.asarray(_device.host_value(raw_value(self.tensors[name])))
        shape, dtype = self.compiled.program.shape(name), self.compiled.program.dtype(name)
        if list(value.shape) != list(shape) or value.dtype.name != dtype:
            raise ValueError(f"nn.Graph: the module's '{name}' is now {value.dtype.name} "
                             f"{list(value.shape)}, the graph was compiled for {dtype} "
                             f"{list(shape)}; build a new Graph after changing the model")
        self.compiled.set(name, value)

    def _acquire_optimizer(self) -> None:
        link = self.opt_link
        if link.holder is self or (link.holder is None and self.opt_seen == link.version):
            return
        if link.holder is not None:
            link.holder.release_optimizer()
        state = self.optimizer.__dict__["_state"]
        for name, p, part in self.opt_state:
            value = state.get(id(p), {}).get(part)
            array = (np.asarray(_device.host_value(value)) if value is not None
                     else type(self.optimizer)._initial(part, p))
            self.compiled.set(name, array)
        self.opt_seen = link.version

    def stepped(self) -> None:
        """After a successful step: the session now holds what it trained."""
        self.mark_written(self.trained)

    def mark_written(self, names) -> None:
        """``names`` (and the optimizer state, when a step trains) changed in
        the session: it is their holder until an eager access."""
        for n in names:
            link = self.links.get(n)
            if link is None:
                continue
            if link.holder is not None and link.holder is not self:
                link.holder.release()
            link.version += 1
            link.holder = self
            self.seen[n] = link.version
        if self.opt_link is not None and self.opt_state:
            link = self.opt_link
            if link.holder is not None and link.holder is not self:
                link.holder.release_optimizer()
            link.version += 1
            link.holder = self
            self.opt_seen = link.version

    # ---- back into the modules ----------------------------------------------------------
    def release(self) -> None:
        """Copies every tensor this plan holds into its module."""
        for n, link in self.links.items():
            if link.holder is self:
                link.holder = None  # first: _store must not come back here
                _store(self.tensors[n], self.compiled.read(n))

    def release_optimizer(self) -> None:
        """Copies the optimizer state this plan holds into the optimizer."""
        if self.opt_link is None or self.opt_link.holder is not self:
            return
        self.opt_link.holder = None
        state = self.optimizer.__dict__["_state"]
        for name, p, part in self.opt_state:
            array = self.compiled.read(name).astype(type(self.optimizer)._initial(part, p).dtype)
            state.setdefault(id(p), {})[part] = _device.like_value(array, raw_value(p))

    def release_all(self) -> None:
        self.release()
        self.release_optimizer()


