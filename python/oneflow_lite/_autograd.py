"""Reverse-mode autograd for eager tensors: the tape and ``backward``.

Each eager op run while gradients are enabled and some input requires grad
records a ``Node`` on its outputs (``_dispatch.apply`` does it). The node
keeps the op type, the attributes and the input arrays; ``backward`` walks
the nodes in reverse topological order and asks the C++ op's own gradient
rule for the input gradients (``_dispatch.executor.grad``, the cached twin
of ``_C.op_grad``); no gradient is written here by hand. Leaf tensors
accumulate into ``.grad``.

Grad mode is a module-level flag (``no_grad``, ``enable_grad``): the eager
frontend is single-threaded, like the rest of the Python package.

Anomaly mode (``set_detect_anomaly``, ``detect_anomaly``; off by default, as
in PyTorch) makes every eager op, every backward step and every nn.Graph run
stop at the first op whose output holds a NaN or Inf, raising RuntimeError
naming the op and the element. Off, it costs one flag test per op.
"""
from __future__ import annotations

import contextlib
from typing import Dict, List, Optional

import numpy as np


_grad_enabled = True
_anomaly_enabled = False


def is_grad_enabled() -> bool:
    return _grad_enabled


class _GradMode(contextlib.ContextDecorator):
    def __init__(self, enabled: bool) -> None:
        self._enabled = enabled
        self._prev = True

    def __enter__(self):
        global _grad_enabled
        self._prev = _grad_enabled
        _grad_enabled = self._enabled
        return self

    def __exit__(self, *exc):
        global _grad_enabled
        _grad_enabled = self._prev
        return False


def no_grad() -> _GradMode:
    """Context manager and decorator: ops inside record no tape."""
    return _GradMode(False)


def enable_grad() -> _GradMode:
    return _GradMode(True)


def is_anomaly_enabled() -> bool:
    return _anomaly_enabled


def set_detect_anomaly(mode: bool) -> None:
    """Turns anomaly detection on or off (see the module docstring)::

        >>> import numpy as np
        >>> import oneflow_lite as flow
        >>> flow.set_detect_anomaly(True)
        >>> try:
        ...     flow.ops.relu(flow.tensor(np.array([np.nan])))
        ... except RuntimeError as e:
        ...     print(str(e).split(":")[1].strip())
        relu produced a non-finite value
        >>> flow.set_detect_anomaly(False)
    """
    global _anomaly_enabled
    _anomaly_enabled = bool(mode)


class detect_anomaly(contextlib.ContextDecorator):
    """Context manager and decorator: anomaly detection on inside (or
    ``mode``), the previous setting restored on exit."""

    def __init__(self, mode: bool = True) -> None:
        self._mode = bool(mode)
        self._prev = False

    def __enter__(self):
        self._prev = is_anomaly_enabled()
        set_detect_anomaly(self._mode)
        return self

    def __exit__(self, *exc):
        set_detect_anomaly(self._prev)
        return False


def check_finite(what: str, arrays) -> None:
    """Raises RuntimeError("anomaly: <what> produced a non-finite value:
    <name>[i, j]=nan ...") at the first floating array holding NaN or Inf;
    ``arrays`` is a list of (name, array or None)."""
    from oneflow_lite._device import host_value

    for name, a in arrays:
        a = host_value(a)
        if a is None or not np.issubdtype(a.dtype, np.floating):
            continue
        bad = ~np.isfinite(a)
        if bad.any():
            index = np.unravel_index(int(np.argmax(bad)), a.shape)
            value = a[index] if a.ndim else a[()]
            raise RuntimeError(f"anomaly: {what} produced a non-finite value: "
                               f"{name}[{', '.join(str(int(i)) for i in index)}]={value} "
                               f"(shape {list(a.shape)})")


class Node:
    """One recorded op: inputs (Tensors or None), their arrays, attrs, the
    number of outputs and the output arrays (a backward that reads them, as
    softmax's reads y, takes them instead of running the op again; most are
    kept alive anyway as the next op's saved inputs). Output Tensors point at
    the node, not the other way round."""

    __slots__ = ("op_type", "inputs", "arrays", "attrs", "num_outputs", "outputs", "freed")

    def __init__(self, op_type: str, inputs: list, arrays: list, attrs: dict,
                 num_outputs: int, outputs: Optional[list] = None) -> None:
        self.op_type = op_type
        self.inputs = inputs
        self.arrays = arrays
        self.attrs = attrs
        self.num_outputs = num_outputs
        self.outputs = outputs or []
        self.freed = False

    def __repr__(self) -> str:
        return f"<{self.op_type}Backward>"


def _topological(roots: list) -> List[Node]:
    """Nodes reachable from ``roots``, each after every node that uses it."""
    order, seen = [], set()
    stack = [(n, False) for n in roots]
    while stack:
        node, done = stack.pop()
        if done:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        for t in node.inputs:
            if t is not None and t._node is not None and id(t._node[0]) not in seen:
                stack.append((t._node[0], False))
    order.reverse()
    return order


def backward(tensor, grad=None, retain_graph: bool = False) -> None:
    """Accumulates d(tensor)/d(leaf) into every leaf's ``.grad``."""
    from oneflow_lite import _device
    from oneflow_lite._dispatch import executor  # cycle: _dispatch records nodes here
    from oneflow_lite._tensor import Tensor

    if not tensor.requires_grad:
        raise RuntimeError("backward: the tensor does not require grad (no input of the ops "
                           "that made it has requires_grad=True, or it was made under no_grad)")
    if grad is None:
        if tensor.numel() != 1:
            raise RuntimeError(f"backward: the gradient can be implicit only for a scalar "
                               f"output, got shape {tuple(tensor.shape)}; pass gradient= (a "
                               f"tensor of that shape, e.g. t.backward(gradient=flow.ones_like("
                               f"t))), or reduce it first (t.sum().backward())")
        seed = np.ones(tensor.shape, _numpy_dtype(tensor))
    else:
        seed = np.asarray(grad.numpy() if isinstance(grad, Tensor) else grad,
                          dtype=_numpy_dtype(tensor))
        if seed.shape != tuple(tensor.shape):
            raise ValueError(f"backward: gradient shape {seed.shape} != tensor shape "
                             f"{tuple(tensor.shape)}")
    seed = _device.like_value(seed, tensor._value)  # on the tensor's device
    if tensor._node is None:  # a leaf
        _accumulate_leaf(tensor, seed)
        return
    # Gradients per (node id, output index).
    pending: Dict[int, list] = {}
    node, index = tensor._node
    pending[id(node)] = [None] * node.num_outputs
    pending[id(node)][index] = seed
    with no_grad():
        for node in _topological([node]):
            out_grads = pending.pop(id(node), None)
            if out_grads is None or all(g is None for g in out_grads):
                continue
            if node.freed:
                raise RuntimeError(f"backward through {node!r} a second time: its saved inputs "
                                   f"were freed; pass retain_graph=True to the first backward")
            in_grads = executor.grad(node.op_type, node.arrays, node.attrs, out_grads,
                                     node.outputs)
            if _anomaly_enabled:
                check_finite(f"the backward of {node.op_type}",
                             [(f"grad of input {i}", g) for i, g in enumerate(in_grads)])
            for t, g in zip(node.inputs, in_grads):
                if t is None or g is None or not t.requires_grad:
                    continue
                if t._node is None:
                    _accumulate_leaf(t, g)
                else:
                    producer, k = t._node
                    slot = pending.setdefault(id(producer), [None] * producer.num_outputs)
                    slot[k] = g if slot[k] is None else _device.add_values(slot[k], g)
            if not retain_graph:
                node.arrays, node.outputs, node.freed = [], [], True


def _numpy_dtype(t) -> np.dtype:
    from oneflow_lite import _dtype

    if t._value is None:
        t._array()  # raises naming the tensor: it has no value
    return _dtype.numpy_of(t.dtype)


def _accumulate_leaf(t, g) -> None:
    """Adds ``g`` (an array, or a fresh device value on t's device) to t.grad."""
    from oneflow_lite import _device
    from oneflow_lite._tensor import Tensor

    if _device.is_device_value(g):
        if t.grad is None:
            t.grad = Tensor._wrap(g)
        else:
            t.grad._value = _device.add_values(t.grad._value, g)
        return
    g = np.asarray(g, dtype=_numpy_dtype(t))
    if t.grad is None:
        t.grad = Tensor._wrap(np.array(g, copy=True))
    else:
        t.grad._value = t.grad._value + g

