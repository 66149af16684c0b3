"""One nn.Graph call turned into a compiled ``Plan``: the inputs named after
``build()``'s arguments, the signature that selects a plan (each input's
shape, dtype and layout), the trace of ``build`` (graph_trace), the loss
(the tensor ``backward()`` was called on inside ``build``, as in OneFlow,
else the first output when an optimizer was added), the optimizer appended
(graph/optimizer_pass.cpp), the compile (graph_compile) and the plan's side
of the state shared with the modules (graph_share.Holder). Not thread-safe.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import List, Optional, Sequence

import numpy as np

from oneflow_lite import _dtype as dtypes
from oneflow_lite._tensor import Tensor
from oneflow_lite.nn.graph_compile import LR_INPUT, Compiled
from oneflow_lite.nn.graph_share import Holder
from oneflow_lite.nn.graph_trace import LazyTensor, Tracer

OPTIMIZER_KINDS = {"SGD": "sgd", "Adam": "adam", "AdamW": "adamw"}


@dataclass
class Plan:
    """A compiled graph for one input signature, with what it was traced from."""

    signature: tuple
    compiled: Compiled
    tracer: Tracer
    holder: Holder
    unshared: List[str] = field(default_factory=list)  # state kept only in the session


def argument_names(graph, count: int) -> List[str]:
    """``build``'s argument names for ``count`` inputs: ``build(self, x, y)``
    gives "x", "y"; ``*args`` gives "args0", "args1", ..."""
    names, rest = [], None
    for p in inspect.signature(graph.build).parameters.values():
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            names.append(p.name)
        elif p.kind == p.VAR_POSITIONAL:
            rest = p.name
    if count > len(names):
        if rest is None:
            raise TypeError(f"{type(graph).__name__}.build takes {len(names)} inputs "
                            f"({', '.join(names)}), got {count}")
        names += [f"{rest}{i}" for i in range(count - len(names))]
    return names[:count]


def input_arrays(args) -> List[np.ndarray]:
    return [a._array() if isinstance(a, Tensor) else np.asarray(a) for a in args]


def signature(args, arrays: Sequence[np.ndarray]) -> tuple:
    """What selects a plan: per input its shape, dtype and (global) layout."""
    out = []
    for a, array in zip(args, arrays):
        layout = (repr(a._placement), repr(a._sbp)) if isinstance(a, Tensor) and \
            a._placement is not None else None
        out.append((tuple(array.shape), array.dtype.str, layout))
    return tuple(out)


def describe_change(names: Sequence[str], old: tuple, new: tuple) -> str:
    """The inputs that differ from ``old``, e.g. "'x' (6, 20) float32 (was (4, 20) float32)"."""
    parts = []
    for name, (shape, dtype, layout), (was_shape, was_dtype, was_layout) in zip(names, new, old):
        if (shape, dtype, layout) != (was_shape, was_dtype, was_layout):
            moved = "" if layout == was_layout else ", another layout"
            parts.append(f"'{name}' {shape} {np.dtype(dtype).name} (was {was_shape} "
                         f"{np.dtype(was_dtype).name}{moved})")
    return ", ".join(parts)


def trace(graph, args, arrays: Sequence[np.ndarray], names: Sequence[str]) -> Tracer:
    """Traces ``graph.build`` on inputs shaped like ``arrays``."""
    tracer = Tracer()
    tracer.autocast = graph.config.amp
    modules = graph._modules()
    with_params = [k for k, m in modules.items() if any(True for _ in m.parameters())]
    for name, m in modules.items():
        tracer.add_module(m, name if len(with_params) > 1 else "")
    reserved = set(tracer._names.values()) | {LR_INPUT}
    k = graph.config.parallel.micro_batches if graph.config.parallel is not None else 1
    graph_names = []
    with tracer:
        lazy = []
        for name, a, array in zip(names, args, arrays):
            shape = list(array.shape)
            if k > 1:  # the graph is traced for one micro-batch
                if not shape or shape[0] % k != 0:
                    raise ValueError(f"nn.Graph {type(graph).__name__}: input '{name}' of shape "
                                     f"{shape} does not split into {k} equal micro-batches "
                                     f"along axis 0")
                shape[0] //= k
            graph_name = name if name not in reserved else f"input_{name}"
            t = tracer.input(graph_name, shape, dtypes.get(array.dtype))
            if isinstance(a, Tensor) and a._placement is not None:
                t = t.to_global(a._placement, a._sbp)
            lazy.append(t)
            graph_names.append(graph_name)
        result = _run_build(graph, lazy, names, arrays)
    returns_none = result is None and tracer.loss is not None
    outs = [] if returns_none else list(result) if isinstance(result, (tuple, list)) else [result]
    for i, o in enumerate(outs):
        if not isinstance(o, LazyTensor):
            raise TypeError(f"{type(graph).__name__}.build: output {i} is "
                            f"{type(o).__name__}, not a tensor computed from the inputs")
    tracer._input_names = graph_names
    tracer._outputs = [o.graph_name for o in outs] or [tracer.loss]
    tracer._single = not isinstance(result, (tuple, list))
    tracer._returns_none = returns_none
    return tracer


def _run_build(graph, lazy, names, arrays):
    """``graph.build(*lazy)``; a failure with a float64 input beside float32
    parameters says to cast it (numpy's default dtype is float64)."""
    try:
        return graph.build(*lazy)
    except (ValueError, TypeError, RuntimeError) as e:
        doubles = [n for n, a in zip(names, arrays) if a.dtype == np.float64]
        singles = any(p.dtype is dtypes.float32 for m in graph._modules().values()
                      for p in m.parameters())
        if not doubles or not singles:
            raise
        raise type(e)(f"{e}\n(hint: input {', '.join(repr(n) for n in doubles)} is float64 "
                      f"while the parameters are float32; pass float32 arrays, e.g. "
                      f"{doubles[0]}.astype(np.float32))") from e


def compile_plan(graph, args, arrays, names, sig: tuple) -> Plan:
    """Traces and compiles ``graph`` for inputs like ``arrays``."""
    tracer = trace(graph, args, arrays, names)
    graph._check_pins(tracer)
    program, optimizer = tracer.program, graph._optimizer
    if tracer.loss is not None and optimizer is None:
        raise ValueError(f"{type(graph).__name__}.build: loss.backward() needs an optimizer "
                         f"to train with: call self.add_optimizer(opt) in __init__")
    lr_input = None
    if optimizer is not None:
        missing = [n for n in tracer.trainable if id(tracer.variables[n]) not in optimizer._names]
        if missing:
            raise ValueError(f"add_optimizer: the optimizer does not hold the trained "
                             f"parameters {', '.join(missing[:6])}")
        group = optimizer.param_groups[0]
        hyper = {k: float(group[k]) for k in type(optimizer)._HYPER}
        if graph._clip is not None:
            hyper["clip_grad_max_norm"] = float(graph._clip)
        hyper["lr_input"] = lr_input = LR_INPUT
        loss = tracer.loss if tracer.loss is not None else tracer._outputs[0]
        program.minimize(loss, OPTIMIZER_KINDS[type(optimizer).__name__], hyper)
    config = graph.config
    compiled = Compiled.build(program, tracer._input_names, tracer._outputs, config.parallel,
                              tracer.pinned, lr_input, config.num_threads, config.transactional,
                              trace_path=config.trace_path)
    holder = Holder(compiled, tracer.variables,
                    tracer.trainable if optimizer is not None else [], optimizer)
    shared = set(holder.tensors) | {name for name, _, _ in holder.opt_state}
    unshared = [v for v in compiled.variables if not v.startswith("_const") and v not in shared]
    return Plan(sig, compiled, tracer, holder, unshared)


def carry_unshared(old: Optional[Plan], new: Plan) -> None:
    """Copies the state that lives only in sessions (meta parameters, their
    optimizer state) from the plan used last into the one used next."""
    if old is None or old is new:
        return
    for name in new.unshared:
        if name in old.unshared:
            new.compiled.set(name, old.compiled.get(name))
