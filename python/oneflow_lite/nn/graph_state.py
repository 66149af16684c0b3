"""An nn.Graph's state as a whole: ``state_dict`` / ``load_state_dict`` and
checkpoints (``save`` / ``load``), mixed into ``Graph``.

The names are the graph's variables: the modules' state_dict keys (prefixed
by the attribute name when the Graph holds several modules with
parameters) and the optimizer state "<param>/m", "/v", "/step",
"/momentum". Everything here works on the plan of the last call, after
handing it the newest values (``Holder.acquire``: the module's, when eager
code changed them since), and whatever it writes the modules and the
optimizer see at their next access (``Holder.mark_written``,
nn/graph_share.py). Not thread-safe.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Dict, Optional

import numpy as np

from oneflow_lite import _world, checkpoint, sharded_checkpoint
from oneflow_lite._tensor import Tensor


class GraphState:
    """The state methods of ``nn.Graph`` (see the module docstring)."""

    def _state_names(self) -> list:
        """The variables that are state: all but constants and the modules'
        non-persistent buffers (``register_buffer(..., persistent=False)``)."""
        skip = self._tracer.non_persistent
        return [v for v in self.compiled.variables if not v.startswith("_const") and v not in skip]

    def state_dict(self) -> "OrderedDict[str, Tensor]":
        """Logical parameters, persistent buffers and optimizer state, by graph
        name; as in eager, non-persistent buffers (GPT's causal mask) are left out."""
        c = self.compiled
        self._holder.acquire()
        return OrderedDict((v, Tensor._wrap(c.get(v))) for v in self._state_names())

    def load_state_dict(self, state: Dict) -> None:
        """Sets variables by name; every name and shape is checked before
        anything changes. Before the first call it is kept and applied after
        compiling."""
        arrays = {k: (v._array() if isinstance(v, Tensor) else np.asarray(v))
                  for k, v in state.items()}
        if self._compiled is None:
            self._pending_state = arrays
            return
        specs = self._compiled.specs()
        state = set(self._state_names())
        unknown = [k for k in arrays if k not in state]
        if unknown:
            raise KeyError(f"{type(self).__name__}.load_state_dict: unknown variables "
                           f"{', '.join(unknown[:8])}")
        for k, a in arrays.items():
            shape, dtype = specs[k]
            if list(a.shape) != shape:
                raise ValueError(f"{type(self).__name__}.load_state_dict: '{k}' has shape "
                                 f"{list(a.shape)}, the graph's is {shape}")
        self._holder.acquire()
        for k, a in arrays.items():
            self._compiled.set(k, a.astype(specs[k][1]))
        self._holder.mark_written(arrays)

    def save(self, path: str, model: str = "", meta: Optional[dict] = None,
             sharded: Optional[bool] = None, world=None) -> None:
        """A checkpoint of every variable. ``sharded`` (default: whether the
        graph runs on a placement): each process writes the slices of its
        ranks (sharded_checkpoint); otherwise one logical checkpoint
        (checkpoint), written by process 0. ``world``: the job's processes
        (default: from the launcher's environment; this one alone without)."""
        c = self.compiled
        self._holder.acquire()
        meta = dict(meta or {}, steps=c.steps)
        if self._scheduler is not None:
            meta["lr_scheduler"] = self._scheduler.state_dict()
        if sharded is None:
            sharded = c.parallel is not None
        if not sharded:  # every process reads the state (collective); process 0 writes
            arrays = {k: v._array() for k, v in self.state_dict().items()}
            _on_process0(world or _world.World(),
                         lambda: checkpoint.save(path, arrays, model, meta))
            return
        source = (sharded_checkpoint.SessionShards(c.session, self._state_names())
                  if c.parallel is not None else
                  sharded_checkpoint.ArrayShards({k: c.get(k) for k in self._state_names()}))
        sharded_checkpoint.save(path, source, model, meta, world)

    def load(self, path: str, model: Optional[str] = None) -> checkpoint.Checkpoint:
        """Loads a checkpoint saved by ``save`` (either format, any plan, any
        device or process count) or from an eager model and optimizer
        (``checkpoint.save_eager``). Files (and a sharded checkpoint's index)
        are checked now; names, shapes and dtypes against the graph's
        variables now, or at the first call when the graph is not compiled
        yet. A sharded checkpoint loads into a graph on a placement rank by
        rank, reading only the byte ranges of this process's ranks; the
        returned Checkpoint then has no tensors and its ``stats`` count the
        bytes read."""
        if sharded_checkpoint.is_sharded(path):
            index = sharded_checkpoint.read_index(path)
            if model is not None and index["model"] != model:
                raise checkpoint.CheckpointError(f"checkpoint {path} belongs to model "
                                                 f"'{index['model']}', not '{model}'")
            if self._compiled is None:
                self._pending_checkpoint = (path, None, model)
                return checkpoint.Checkpoint({}, index["model"], index["fingerprint"],
                                             index.get("meta", {}))
            return self._apply_sharded(path, model)
        ck = checkpoint.load(path, model=model)
        if self._compiled is None:
            self._pending_checkpoint = (path, ck, model)
        else:
            self._apply_checkpoint(path, ck)
        return ck

    def _state_specs(self) -> Dict[str, tuple]:
        state = set(self._state_names())
        return {k: v for k, v in self._compiled.specs().items() if k in state}

    def _apply_checkpoint(self, path: str, ck: checkpoint.Checkpoint) -> None:
        index = {"model": ck.model, "tensors": [
            {"name": k, "shape": list(v.shape), "dtype": v.dtype.name}
            for k, v in ck.tensors.items()]}
        checkpoint.check_compatible(path, index, self._state_specs(),
                                    allow_missing_state=self._optimizer is None)
        self.load_state_dict(ck.tensors)
        self._apply_meta(ck)

    def _apply_sharded(self, path: str, model: Optional[str]) -> checkpoint.Checkpoint:
        c, missing_ok = self._compiled, self._optimizer is None
        if c.parallel is None:
            ck = sharded_checkpoint.load_logical(path, model, self._state_specs(),
                                                 allow_missing_state=missing_ok)
            self._apply_checkpoint(path, ck)
            return ck
        target = sharded_checkpoint.SessionShards(c.session, self._state_names())
        self._holder.acquire()
        ck = sharded_checkpoint.load_into(path, target, model, self._state_specs(),
                                          allow_missing_state=missing_ok)
        self._holder.mark_written(self._state_names())
        self._apply_meta(ck)
        return ck

    def _apply_meta(self, ck: checkpoint.Checkpoint) -> None:
        if self._scheduler is not None and "lr_scheduler" in ck.meta:
            self._scheduler.load_state_dict(ck.meta["lr_scheduler"])



def _on_process0(world, write) -> None:
    """Runs ``write`` on process 0 only; every process raises if it failed."""
    error, status = None, ""
    if world.process == 0:
        try:
            write()
        except Exception as e:
            error, status = e, f"{type(e).__name__}: {e}"
    status = world.broadcast_str(status)
    if error is not None:
        raise error
    if status:
        raise checkpoint.CheckpointError(f"checkpoint save failed on process 0: {status}")
