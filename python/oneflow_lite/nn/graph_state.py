"""An nn.Graph's state as a whole: ``state_dict`` / ``load_state_dict``,
mixed into ``Graph``; checkpoints (``save`` / ``load``) build on them in
nn/graph_checkpoint.py.

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
from typing import Dict

import numpy as np

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

    def _state_specs(self) -> Dict[str, tuple]:
        state = set(self._state_names())
        return {k: v for k, v in self._compiled.specs().items() if k in state}
