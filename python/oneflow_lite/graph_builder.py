"""GraphBuilder: builds a logical graph over ``oneflow_lite._C.Program``.

Every registered C++ op is callable as a method, generated from the
registry (never written by hand per op)::

    >>> import numpy as np
    >>> from oneflow_lite.graph_builder import GraphBuilder
    >>> b = GraphBuilder()
    >>> x = b.input("x", [4, 3])
    >>> w = b.variable("w", np.ones((3, 2), np.float32))
    >>> y = b.matmul(x, w, transpose_b=False)
    >>> b.shape(y)
    [4, 2]

Tensors are referred to by name (str). An op with one output returns its
name, an op with several returns a tuple of names.
"""
from __future__ import annotations

from typing import Sequence, Union

import numpy as np

from oneflow_lite import _C
from oneflow_lite._tensor import check_shape

_OPS = frozenset(_C.list_ops())


class GraphBuilder:
    """A logical graph under construction; see the module docstring."""

    def __init__(self) -> None:
        self.program = _C.Program()

    def input(self, name: str, shape: Sequence[int], dtype: str = "float32") -> str:
        """Declares a tensor fed on every run."""
        shape = [int(d) for d in shape]
        check_shape(shape, dtype, f"input '{name}'")  # Python ints past int64 included
        self.program.add_input(name, shape, dtype)
        return name

    def variable(self, name: str, init: np.ndarray, trainable: bool = True) -> str:
        """Declares a tensor that persists across runs, starting at ``init``."""
        self.program.add_variable(name, np.ascontiguousarray(init), trainable)
        return name

    def op(self, op_type: str, *inputs: str, name: str = "", **attrs) -> Union[str, tuple]:
        """Adds one op; returns its output name, or a tuple of names."""
        outs = self.program.add_op(op_type, list(inputs), attrs, name)
        return outs[0] if len(outs) == 1 else tuple(outs)

    def __getattr__(self, op_type: str):
        if op_type not in _OPS:
            raise AttributeError(f"GraphBuilder has no attribute or op '{op_type}'")

        def call(*inputs: str, name: str = "", **attrs):
            return self.op(op_type, *inputs, name=name, **attrs)

        call.__name__ = op_type
        call.__doc__ = _C.op_schema(op_type)["doc"]
        return call

    def shape(self, tensor: str) -> list:
        return self.program.shape(tensor)

    def dtype(self, tensor: str) -> str:
        return self.program.dtype(tensor)

    def minimize(self, loss: str, optimizer: str = "sgd", **hyper) -> None:
        """Appends the backward of ``loss`` and the optimizer updates."""
        self.program.minimize(loss, optimizer, hyper)

    def session(self, num_threads: int = 0) -> "_C.Session":
        """Compiles the graph into a runnable session."""
        return _C.Session(self.program, num_threads)
