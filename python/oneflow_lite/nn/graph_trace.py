"""Tracing: turns calls of Modules and functional ops into a logical graph
(a ``GraphBuilder`` over ``_C.Program``) instead of running them. nn.Graph
is built on it; ``trace(module, *inputs)`` is the one-call form.

While a ``Tracer`` is active (``with tracer:``), ``_dispatch.apply`` hands
every op to ``Tracer.apply``: inputs are graph tensors (``LazyTensor``:
shape, dtype and a graph tensor name, no value), ops are named after the
module path being called ("h.0.attn.qkv/matmul"). A real tensor met as an
op input becomes a graph variable once: a Parameter or buffer of a module
given to ``add_module`` is named by its state_dict key
("h.0.attn.qkv.weight"); a Parameter (trainable) of no registered module is
"_param<N>"; any other tensor is a non-trainable constant "_const<N>". A variable starts at the tensor's
current value; a meta tensor (no value) is declared by shape and dtype only
(``Program.add_variable_desc``). A tensor that is global, or a LazyTensor
passed through ``to_global``, records its NdSbp in ``pinned`` for the
searcher. ``loss.backward()`` on a LazyTensor records it as the loss
(``Tracer.loss``) that nn.Graph's optimizer minimizes. One tracer is
active at a time; not thread-safe.
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Set, Union

import numpy as np

from oneflow_lite import _device, _dispatch
from oneflow_lite import _dtype as dtypes
from oneflow_lite._tensor import Tensor
from oneflow_lite.graph_builder import GraphBuilder
from oneflow_lite.nn.module import Module, scope_path
from oneflow_lite.nn.parameter import Parameter


# Ops that mixed precision ("bf16") runs on bfloat16 inputs (autocast's
# matmul class); reductions, softmax, layer norm and losses stay float32.
_BF16_OPS = ("matmul", "batch_matmul")


class LazyTensor(Tensor):
    """A tensor of the graph being traced: shape, dtype and ``graph_name``."""

    @classmethod
    def _of(cls, tracer: "Tracer", name: str) -> "LazyTensor":
        builder = tracer.builder
        t = cls._wrap(None, builder.shape(name), builder.dtype(name), "lazy")
        t.graph_name = name
        t.tracer = tracer
        return t

    def __repr__(self) -> str:
        return (f"LazyTensor(name='{self.graph_name}', shape={list(self.shape)}, "
                f"dtype={self.dtype!r})")

    def backward(self, gradient=None, retain_graph: bool = False) -> None:
        """``loss.backward()`` inside ``nn.Graph.build``, as in OneFlow: this
        tensor is the loss the graph's optimizer minimizes (the backward and
        the update are appended when the graph compiles)."""
        self.tracer.mark_loss(self, gradient)


@dataclass(frozen=True)
class Spec:
    """An input described by shape and dtype only."""

    shape: Sequence[int]
    dtype: Union[str, dtypes.dtype] = "float32"


class Tracer:
    """Records ops into ``builder``; see the module docstring."""

    def __init__(self, builder: Optional[GraphBuilder] = None) -> None:
        self.builder = builder or GraphBuilder()
        self.variables: "OrderedDict[str, Tensor]" = OrderedDict()  # graph name -> tensor
        self.trainable: List[str] = []
        self.inputs: "OrderedDict[str, LazyTensor]" = OrderedDict()
        self.pinned: Dict[str, str] = {}    # graph tensor name -> "(S(0), B)"
        self.pinned_placements: Dict[str, object] = {}  # graph tensor name -> flow.placement
        self.non_persistent: Set[str] = set()  # buffers left out of state_dict (causal mask)
        self._names: Dict[int, str] = {}    # id(tensor) -> state_dict key
        self._keep: List[Tensor] = []       # keeps named tensors alive, so ids stay unique
        self._declared: Dict[int, str] = {}
        self._op_names: Dict[str, int] = {}
        self._prev = None
        # Mixed precision: "bf16" casts the float32 inputs of _BF16_OPS to
        # bfloat16 (see GraphConfig.mixed_precision); the ops so run are listed.
        self.autocast: Optional[str] = None
        self.autocast_ops: List[str] = []
        self.loss: Optional[str] = None  # the tensor backward() was called on, if any

    @property
    def program(self):
        return self.builder.program

    # ---- declarations --------------------------------------------------------------
    def add_module(self, module: Module, prefix: str = "") -> None:
        """Names ``module``'s parameters and buffers by their state_dict keys
        (prefixed with ``prefix + "."`` when given)."""
        for name, t in list(module.named_parameters(prefix)) + list(module.named_buffers(prefix)):
            self._names.setdefault(id(t), name)
            self._keep.append(t)
        persistent = {id(t) for _, t in module.named_buffers(prefix, persistent_only=True)}
        for name, t in module.named_buffers(prefix):
            if id(t) not in persistent and self._names.get(id(t)) == name:
                self.non_persistent.add(name)

    def input(self, name: str, shape: Sequence[int], dtype="float32") -> LazyTensor:
        """A graph input fed on every run."""
        self.builder.input(name, [int(d) for d in shape], dtypes.get(dtype).name)
        t = LazyTensor._of(self, name)
        self.inputs[name] = t
        return t

    def variable_name(self, t: Tensor) -> str:
        """The graph variable holding ``t``, declared on first use."""
        name = self._declared.get(id(t))
        if name is not None:
            return name
        trainable = isinstance(t, Parameter) and t.requires_grad
        name = self._names.get(id(t)) or (f"_param{len(self._declared)}" if trainable
                                          else f"_const{len(self._declared)}")
        if t._value is not None:
            self.builder.variable(name, _device.host_value(t._value), trainable=trainable)
        else:
            add_desc = getattr(self.program, "add_variable_desc", None)
            if add_desc is None:
                raise NotImplementedError(
                    f"tracing meta tensor '{name}' (shape {list(t.shape)}): the binding "
                    f"_C.Program.add_variable_desc(name, shape, dtype, trainable), which "
                    f"declares a variable without a value, does not exist in this build")
            add_desc(name, list(t.shape), t.dtype.name, trainable)
        self._declared[id(t)] = name
        self._keep.append(t)
        self.variables[name] = t
        if trainable:
            self.trainable.append(name)
        if t._placement is not None:
            from oneflow_lite import _global

            self.pinned[name] = _global.sbp_text(t._sbp)
            self.pinned_placements[name] = t._placement
        return name

    def mark_loss(self, t: LazyTensor, gradient=None) -> None:
        """Records ``t.backward()``: ``t`` is the loss to minimize."""
        if gradient is not None:
            raise NotImplementedError(f"backward: gradient= on graph tensor '{t.graph_name}' "
                                      f"(graph mode minimizes a scalar loss; call "
                                      f"loss.backward() on a scalar)")
        if t.numel() != 1:
            raise RuntimeError(f"backward: graph tensor '{t.graph_name}' has shape "
                               f"{tuple(t.shape)}; graph mode minimizes a scalar loss (reduce "
                               f"it first, e.g. loss.mean())")
        if not t.dtype.is_floating_point:
            raise RuntimeError(f"backward: graph tensor '{t.graph_name}' is {t.dtype.name}, "
                               f"not a floating loss")
        if self.loss is not None and self.loss != t.graph_name:
            raise RuntimeError(f"backward: called on '{t.graph_name}' after '{self.loss}' in "
                               f"the same build(); graph mode minimizes one loss (add them "
                               f"up and call backward() once)")
        self.loss = t.graph_name

    def pin(self, t: LazyTensor, placement, nd_sbp) -> LazyTensor:
        """Records the user's layout of a graph tensor (``x.to_global``)."""
        from oneflow_lite import _global

        self.pinned[t.graph_name] = _global.sbp_text(nd_sbp)
        self.pinned_placements[t.graph_name] = placement
        return t

    # ---- ops ---------------------------------------------------------------------
    def _op_name(self, op_type: str, name: Optional[str]) -> str:
        base = name or (f"{scope_path()}/{op_type}" if scope_path() else op_type)
        n = self._op_names.get(base, 0)
        self._op_names[base] = n + 1
        return base if n == 0 else f"{base}_{n}"

    def apply(self, op_type: str, inputs: list, attrs: dict, name: Optional[str]) -> list:
        names = []
        for i, t in enumerate(inputs):
            if isinstance(t, LazyTensor):
                if t.tracer is not self:
                    raise RuntimeError(f"{op_type}: input {i} ('{t.graph_name}') belongs to "
                                       f"another trace")
                names.append(t.graph_name)
            elif isinstance(t, Tensor):
                names.append(self.variable_name(t))
            else:
                raise TypeError(f"{op_type}: input {i} must be a flow.Tensor while tracing, "
                                f"got {type(t).__name__}")
        op_name = self._op_name(op_type, name)
        if self.autocast == "bf16" and op_type in _BF16_OPS:
            names = self._cast_inputs_bf16(op_name, names)
        outs = self.builder.program.add_op(op_type, names, attrs, op_name)
        return [LazyTensor._of(self, o) for o in outs]

    def _cast_inputs_bf16(self, op_name: str, names: List[str]) -> List[str]:
        """Casts ``names`` to bfloat16 when all are float32 (else unchanged)."""
        if any(self.builder.dtype(n) != "float32" for n in names):
            return names
        cast = [self.builder.program.add_op("cast", [n], {"dtype": "bfloat16"},
                                            self._op_name("cast", f"{op_name}/cast_bf16_{i}"))[0]
                for i, n in enumerate(names)]
        self.autocast_ops.append(op_name)
        return cast

    def autocast_report(self) -> str:
        """A line for plan_report: which ops run in bfloat16 ("" when off)."""
        if self.autocast is None:
            return ""
        shown = ", ".join(self.autocast_ops[:8])
        more = f", ... ({len(self.autocast_ops) - 8} more)" if len(self.autocast_ops) > 8 else ""
        return (f"\nmixed precision bf16: {len(self.autocast_ops)} ops with bfloat16 inputs and "
                f"float32 outputs ({shown}{more}); the rest, parameters and optimizer in float32")

    def __enter__(self) -> "Tracer":
        if _dispatch.active_tracer() is not None:
            raise RuntimeError("a trace is already active (nested nn.Graph tracing)")
        self._prev = _dispatch.set_tracer(self)
        return self

    def __exit__(self, *exc) -> bool:
        _dispatch.set_tracer(self._prev)
        return False


@dataclass
class TraceResult:
    """What ``trace`` returns: the builder (and its program), the graph names
    of the inputs and outputs, the output LazyTensors, every variable
    declared (graph name -> the Module's tensor) and the pinned layouts."""

    builder: GraphBuilder
    input_names: List[str]
    output_names: List[str]
    outputs: list
    variables: "OrderedDict[str, Tensor]" = field(default_factory=OrderedDict)
    trainable: List[str] = field(default_factory=list)
    pinned: Dict[str, str] = field(default_factory=dict)

    @property
    def program(self):
        return self.builder.program


def _flatten_outputs(result) -> list:
    if isinstance(result, Tensor):
        return [result]
    if isinstance(result, dict):
        return [v for v in result.values()]
    if isinstance(result, (list, tuple)):
        return list(result)
    raise TypeError(f"trace: the module returned {type(result).__name__}, expected a tensor "
                    f"or a tuple, list or dict of tensors")


def trace(module: Module, *inputs, input_names: Optional[Sequence[str]] = None,
          builder: Optional[GraphBuilder] = None) -> TraceResult:
    """Traces ``module(*inputs)``. Each input is a Tensor or numpy array
    (its shape and dtype are used, not its value) or a ``Spec``; graph
    inputs are named ``input_names`` or "input0", "input1", ...

        >>> import oneflow_lite as flow
        >>> r = flow.nn.graph_trace.trace(flow.nn.Linear(3, 2), flow.nn.graph_trace.Spec([4, 3]))
        >>> r.output_names, r.trainable, r.builder.shape(r.output_names[0])
        (['bias_add/out_0'], ['weight', 'bias'], [4, 2])
    """
    names = list(input_names) if input_names is not None else [f"input{i}"
                                                               for i in range(len(inputs))]
    if len(names) != len(inputs):
        raise ValueError(f"trace: {len(inputs)} inputs but {len(names)} input_names")
    tracer = Tracer(builder)
    tracer.add_module(module)
    with tracer:
        lazy = []
        for name, x in zip(names, inputs):
            if isinstance(x, Spec):
                lazy.append(tracer.input(name, x.shape, x.dtype))
            elif isinstance(x, (Tensor, np.ndarray)):
                lazy.append(tracer.input(name, x.shape, dtypes.get(x.dtype)))
            else:
                raise TypeError(f"trace: input '{name}' must be a Tensor, numpy array or Spec, "
                                f"got {type(x).__name__}")
        outputs = _flatten_outputs(module(*lazy))
    for i, o in enumerate(outputs):
        if not isinstance(o, LazyTensor):
            raise TypeError(f"trace: output {i} does not depend on the inputs or parameters "
                            f"(got {type(o).__name__})")
    return TraceResult(tracer.builder, names, [o.graph_name for o in outputs], outputs,
                       tracer.variables, tracer.trainable, tracer.pinned)
