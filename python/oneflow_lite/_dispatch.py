"""The one route of every op of the frontend: ``apply(op_type, inputs,
attrs, name=None)``.

- Eager (the default): checks the inputs (no meta, global or traced tensor),
  runs the registered C++ op through ``executor`` (``_C.EagerExecutor``: its
  kernel called directly, with inference and the kernel lookup cached per op
  type, device, attributes and input shapes and dtypes; on the device of its
  inputs, CUDA tensors' values being ``_C.DeviceTensor``s) and, when grad mode is on and
  an input requires grad, records an autograd node (``_autograd``); backward
  then uses the op's own C++ gradient rule through the same executor.
- Tracing (a tracer installed by ``nn.graph_trace``): the op is added to the
  tracer's GraphBuilder and graph tensors (LazyTensors) come back.

``ops`` holds one wrapper per registered op, generated from the registry
(never written by hand): ``ops.matmul(a, b, transpose_b=True)``. Variadic ops
take a list: ``ops.concat([a, b], axis=0)``.

Module-level state (the active tracer, the schema cache, the eager
executor); single-threaded.
"""
from __future__ import annotations

from typing import List, Optional, Sequence

import numpy as np

from oneflow_lite import _C, _autograd, _device
from oneflow_lite._tensor import Tensor

_schemas = {}
_tracer = None  # the active nn.graph_trace.Tracer, or None
executor = _C.EagerExecutor()  # eager ops and their gradients (api/eager.h)


def schema(op_type: str) -> dict:
    s = _schemas.get(op_type)
    if s is None:
        s = _schemas[op_type] = _C.op_schema(op_type)  # raises naming an unknown op
    return s


def active_tracer():
    return _tracer


def set_tracer(tracer) -> object:
    """Installs ``tracer`` (None: eager); returns the previous one."""
    global _tracer
    prev, _tracer = _tracer, tracer
    return prev


def _describe(t: Tensor) -> str:
    return f"shape {list(t.shape)}, dtype {t.dtype.name}"


def _check_eager_input(op_type: str, i: int, t) -> Optional[np.ndarray]:
    if t is None:
        return None
    if not isinstance(t, Tensor):
        raise TypeError(f"{op_type}: input {i} must be a flow.Tensor, got {type(t).__name__}")
    if t._placement is not None:
        from oneflow_lite import _global

        raise NotImplementedError(
            f"{op_type}: input {i} is a global tensor (placement {t._placement!r}, sbp "
            f"{_global.sbp_text(t._sbp)}); eager ops on global tensors are not supported: run "
            f"the model inside a flow.nn.Graph (which compiles it for the placement), or take "
            f"one rank's part with .to_local(rank)")
    if t._value is None:
        if t._device == "meta":
            raise RuntimeError(f"{op_type}: input {i} ({_describe(t)}) is on the 'meta' "
                               f"device and has no value; meta tensors can only be traced by "
                               f"flow.nn.Graph, or given values with load_state_dict")
        raise RuntimeError(f"{op_type}: input {i} ({_describe(t)}) is a graph tensor of a "
                           f"finished trace; it has no value outside flow.nn.Graph")
    return t._value


def apply(op_type: str, inputs: Sequence, attrs: Optional[dict] = None,
          name: Optional[str] = None):
    """Runs or traces one op; returns a Tensor (one output) or a tuple.

    For ops that write inputs in place (optimizer updates) the eager result
    is the outputs followed by the updated inputs, as ``_C.run_op`` returns.
    """
    attrs = dict(attrs or {})
    s = schema(op_type)
    if _tracer is not None:
        outs = _tracer.apply(op_type, list(inputs), attrs, name)
    else:
        arrays = [_check_eager_input(op_type, i, t) for i, t in enumerate(inputs)]
        results = executor.run(op_type, arrays, attrs)
        for k, a in enumerate(results):
            if a is not None and str(a.dtype) in ("uint16", "bfloat16"):  # bfloat16 (cast)
                raise TypeError(f"{op_type}: output {k} is {attrs.get('dtype', 'bfloat16')}, "
                                f"which eager tensors cannot hold (float32, float64, int32, "
                                f"int64, bool); bfloat16 compute is nn.Graph's "
                                f"config.mixed_precision('bf16')")
        if _autograd._anomaly_enabled:
            where = op_type if name is None else f"{op_type} '{name}'"
            names = list(s["outputs"]) + [f"updated input {i}" for i in s["mutable_inputs"]]
            _autograd.check_finite(where, list(zip(names, results)))
        outs = [Tensor._wrap(a) for a in results]
        if (s["has_grad"] and _autograd.is_grad_enabled()
                and any(t is not None and t.requires_grad for t in inputs)):
            n = len(s["outputs"])
            node = _autograd.Node(op_type, list(inputs), arrays, attrs, n, results[:n])
            for k, out in enumerate(outs[:n]):
                if out.dtype.is_floating_point:
                    out.requires_grad = True
                    out._node = (node, k)
    return outs[0] if len(outs) == 1 else tuple(outs)


def run_random(op_type: str, inputs: Sequence[Tensor], attrs: dict,
               output_descs: List[tuple], iteration: int) -> List[np.ndarray]:
    """Eager only: runs a random op's CPU kernel at ``iteration`` (the
    stream graph runs use for their step) and returns its output arrays; no
    tape is recorded (callers compose differentiable ops on the result).
    Inputs on a CUDA device are read back and the outputs placed beside
    them (the counter-based stream draws the same numbers on every device)."""
    values = [_check_eager_input(op_type, i, t) for i, t in enumerate(inputs)]
    like = next((v for v in values if _device.is_device_value(v)), None)
    arrays = [_device.host_value(v) for v in values]
    descs = [(list(shape), dtype) for shape, dtype in output_descs]
    outs = _C.run_kernel(op_type, arrays, attrs, descs, iteration=int(iteration))
    return [_device.like_value(a, like) for a in outs]


class _Ops:
    """One generated wrapper per registered op (see the module docstring)."""

    def __getattr__(self, op_type: str):
        if op_type.startswith("__") or op_type not in _C.list_ops():
            raise AttributeError(f"flow has no op '{op_type}'")
        s = schema(op_type)

        def call(*inputs, name: Optional[str] = None, **attrs):
            if s["variadic"]:
                if len(inputs) != 1 or not isinstance(inputs[0], (list, tuple)):
                    raise TypeError(f"{op_type}: pass the inputs as one list")
                inputs = tuple(inputs[0])
            return apply(op_type, inputs, attrs, name)

        call.__name__ = op_type
        call.__doc__ = s["doc"]
        setattr(self, op_type, call)
        return call

    def __dir__(self):
        return list(_C.list_ops())


ops = _Ops()
