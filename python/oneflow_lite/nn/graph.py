"""``flow.nn.Graph``: a model compiled as a whole, as in OneFlow.

Subclass it, keep the modules as attributes, write ``build()`` with the
forward (and the loss), optionally ``add_optimizer``; the first call traces
``build`` (``nn.graph_trace``), appends the backward and the optimizer
(graph/optimizer_pass.cpp: clipping and a fed learning rate included),
plans the layout when ``config.auto_parallel(...)`` was set, and compiles;
later calls run the cached plan::

    >>> import numpy as np
    >>> import oneflow_lite as flow
    >>> model = flow.models.MLP(flow.models.MLPConfig(in_features=8, hidden=(16,),
    ...                                               num_classes=3))
    >>> opt = flow.optim.SGD(model.named_parameters(), lr=0.1)
    >>> class Train(flow.nn.Graph):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.model = model
    ...         self.loss_fn = flow.nn.CrossEntropyLoss()
    ...         self.add_optimizer(opt, clip_grad_max_norm=1.0)
    ...     def build(self, x, y):
    ...         return self.loss_fn(self.model(x), y)
    >>> g = Train()
    >>> g.config.auto_parallel(cluster="h100_8gpu", searcher="data_parallel",
    ...                        placement=flow.placement("cpu", [[0, 1], [2, 3]]))
    >>> x, y = np.ones((8, 8), np.float32), np.zeros(8, np.int64)
    >>> float(g(x, y)) > float(g(x, y))  # two steps: the loss falls
    True

Names: the graph's variables are the modules' state_dict keys (with the
attribute name as prefix when the Graph holds several modules with
parameters), optimizer state "<param>/m", "/v", "/step", "/momentum".
After the first call the graph owns the training state: ``state_dict()``
reads it (logical tensors, whatever the layout), ``load_state_dict()``
writes it, ``save(dir)`` / ``load(dir)`` write and read checkpoints: sharded
(oneflow_lite.sharded_checkpoint: each process writes its ranks' slices,
each rank reads only its byte ranges) for a graph on a placement, logical
(oneflow_lite.checkpoint) on one device; ``load`` reads either format under
any plan. ``copy_to_modules()`` writes the parameters back into the eager modules.
The scheduler given to ``add_optimizer`` is stepped after every call; the
optimizer's current lr is fed each step (no recompile).

Threads: calls of one Graph from several threads are serialised (a lock:
one trace or step at a time, the others wait their turn); the rest of the
API (state_dict, load, save) is not thread-safe.

Bad values: an id or label out of range raises ValueError naming the op,
the tensor, the index, the value and [0, V), on any device count, and the
variables keep their values. ``config.detect_anomaly`` (None: follow
``flow.set_detect_anomaly``) stops a step at the first op that outputs a
NaN or Inf with a RuntimeError naming it.
"""
from __future__ import annotations

import os
import threading
from collections import OrderedDict
from typing import Dict, Optional

import numpy as np

from oneflow_lite import _C, _device, _global, _world
from oneflow_lite import _dtype as dtypes
from oneflow_lite import checkpoint, sharded_checkpoint
from oneflow_lite._autograd import is_anomaly_enabled
from oneflow_lite._tensor import Tensor
from oneflow_lite.nn.graph_compile import LR_INPUT, Compiled, ParallelConfig
from oneflow_lite.nn.graph_trace import LazyTensor, Tracer
from oneflow_lite.nn.module import Module

_OPTIMIZER_KINDS = {"SGD": "sgd", "Adam": "adam", "AdamW": "adamw"}


class GraphConfig:
    """``graph.config``: ``auto_parallel(...)``; without it the graph runs on
    one device."""

    def __init__(self) -> None:
        self.parallel: Optional[ParallelConfig] = None
        self.placement = None  # the flow.placement given to auto_parallel
        self.num_threads = 0
        # NaN/Inf check after every op of a step: True, False, or None to
        # follow flow.set_detect_anomaly / flow.autograd.detect_anomaly.
        self.detect_anomaly: Optional[bool] = None
        self.transactional = True  # see transactional_steps
        self.amp: Optional[str] = None  # see mixed_precision
        self.trace_path: Optional[str] = None  # see chrome_trace

    def chrome_trace(self, path: Optional[str]) -> None:
        """Writes a Chrome trace (chrome://tracing or ui.perfetto.dev: one
        event per task, per rank and thread) of each step to ``path``, which
        the next step overwrites; in a job of several processes, process p
        writes its own ranks' to ``.process<p>`` before the extension
        (t.json -> t.process1.json). None: off. Set it before the first call.

        >>> graph.config.chrome_trace("out/step.json")  # doctest: +SKIP
        """
        if path is not None and not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"chrome_trace: expected a path or None, got "
                            f"{type(path).__name__} {path!r}")
        self.trace_path = None if path is None else os.fspath(path)

    def mixed_precision(self, mode: Optional[str] = "bf16") -> None:
        """``"bf16"``: matmul and batch_matmul take bfloat16 inputs (casts
        inserted while tracing, round to nearest even) and give float32
        outputs (float32 accumulation); everything else (softmax, layer norm,
        reductions, the loss, the optimizer) stays float32, as do the
        parameters (master weights): their gradients come back through the
        casts in float32. ``None``: all float32 (the default). Set it before
        the first call; ``plan_report()`` lists the ops that run in bfloat16.

        >>> graph.config.mixed_precision("bf16")  # doctest: +SKIP
        """
        if mode is not None and not isinstance(mode, str):
            raise TypeError(f"mixed_precision: expected 'bf16' or None, got "
                            f"{type(mode).__name__} {mode!r}")
        if mode not in (None, "bf16", "bfloat16"):
            raise ValueError(f"mixed_precision: unknown mode {mode!r} (expected 'bf16' or None)")
        self.amp = None if mode is None else "bf16"

    def transactional_steps(self, on: bool = True) -> None:
        """On (the default): a step that fails on any rank (a kernel error, a
        timeout) leaves every parameter and optimizer state as before it, at
        the cost of one undo copy of them per device; off: no copy, and a
        failed step may leave some of them updated. Applies to one-device and
        auto_parallel graphs alike; set it before the first call.

        >>> graph.config.transactional_steps(False)  # doctest: +SKIP
        """
        if not isinstance(on, bool):
            raise TypeError(f"transactional_steps: expected a bool, got {type(on).__name__} {on!r}")
        self.transactional = on
        if self.parallel is not None:
            self.parallel.transactional = on

    def auto_parallel(self, cluster="local", searcher: str = "autoddl", placement=None,
                      micro_batches: int = 1, memory_limit: Optional[int] = None,
                      num_threads: int = 0, timeout_ms: int = 120000,
                      optimality_cap_s: Optional[float] = None) -> None:
        """Plans the layout on ``placement`` (a flow.placement; its hierarchy
        is the mesh) for ``cluster`` (a preset name, a Cluster file, "local"
        or a _C.Cluster) with ``searcher`` (``_C.searchers()``: autoddl, exact,
        the rule-based presets data_parallel, megatron, 2d, zero, vgg, the
        source presets data_parallel_sources, megatron_sources, 2d_sources,
        vgg_sources, manual). SBP the user pins with
        ``to_global`` on inputs or parameters is honoured by every searcher;
        such a pin must use this same placement. ``optimality_cap_s``: exact
        then runs from the plan for at most that many seconds and the plan
        report states its distance to the proven optimum, or to the best
        lower bound (named) when there is no proof (None: not measured)."""
        if placement is None:
            raise ValueError("auto_parallel: placement is required, e.g. "
                             "flow.placement('cpu', [[0, 1], [2, 3]])")
        if not isinstance(placement, _global.placement):
            raise TypeError(f"auto_parallel: placement must be a flow.placement, got "
                            f"{type(placement).__name__} {placement!r} (write "
                            f"flow.placement('cpu', {placement!r}))")
        keep = self.parallel.strategy_path if self.parallel is not None else None
        self.parallel = ParallelConfig(
            ranks=list(placement.ranks), hierarchy=list(placement.hierarchy), cluster=cluster,
            searcher=searcher, micro_batches=int(micro_batches), strategy_path=keep,
            memory_limit=memory_limit, num_threads=num_threads, timeout_ms=timeout_ms,
            optimality_cap_s=optimality_cap_s, transactional=self.transactional,
            device_type=placement.type)
        self.placement = placement
        self.num_threads = num_threads


class Graph:
    """Base class; see the module docstring."""

    def __init__(self) -> None:
        self.config = GraphConfig()
        self._optimizer = None
        self._scheduler = None
        self._clip: Optional[float] = None
        self._compiled: Optional[Compiled] = None
        self._tracer: Optional[Tracer] = None
        self._pending_state: Optional[Dict[str, np.ndarray]] = None
        self._pending_checkpoint = None
        self._call_lock = threading.Lock()  # serialises __call__ (module docstring)

    def build(self, *args):
        raise NotImplementedError(f"{type(self).__name__}: define build(self, ...) with the "
                                  f"forward (returning the loss when an optimizer is added)")

    def add_optimizer(self, optimizer, lr_scheduler=None,
                      clip_grad_max_norm: Optional[float] = None) -> None:
        """Trains the first output of ``build`` with ``optimizer`` (flow.optim
        SGD, Adam or AdamW: its hyper-parameters and state names), stepping
        ``lr_scheduler`` after every call, clipping the gradients to the
        global L2 norm ``clip_grad_max_norm`` when given."""
        kind = _OPTIMIZER_KINDS.get(type(optimizer).__name__)
        if kind is None:
            raise TypeError(f"add_optimizer: {type(optimizer).__name__} is not supported in "
                            f"graph mode (expected flow.optim.SGD, Adam or AdamW)")
        if len(optimizer.param_groups) != 1:
            raise NotImplementedError(f"add_optimizer: {len(optimizer.param_groups)} param "
                                      f"groups; graph mode takes one")
        if clip_grad_max_norm is not None and not clip_grad_max_norm > 0:
            raise ValueError(f"add_optimizer: clip_grad_max_norm={clip_grad_max_norm} must be "
                             f"positive")
        if self._compiled is not None:
            raise RuntimeError("add_optimizer: the graph is already compiled")
        self._optimizer, self._scheduler, self._clip = optimizer, lr_scheduler, clip_grad_max_norm

    def load_strategy(self, path: str) -> None:
        """Uses the strategy saved at ``path`` (``save_strategy``) instead of
        searching; call before the first step, after ``config.auto_parallel``."""
        if self.config.parallel is None:
            raise ValueError("load_strategy: call config.auto_parallel(...) first (the strategy "
                             "is for a placement)")
        if self._compiled is not None:
            raise RuntimeError("load_strategy: the graph is already compiled")
        _C.load_strategy(path)  # raises now, naming the file, if it is not a strategy
        self.config.parallel.strategy_path = path

    # ---- modules ------------------------------------------------------------------
    def _modules(self) -> "OrderedDict[str, Module]":
        return OrderedDict((k, v) for k, v in vars(self).items() if isinstance(v, Module))

    def _trace(self, args) -> Tracer:
        tracer = Tracer()
        tracer.autocast = self.config.amp
        modules = self._modules()
        with_params = [k for k, m in modules.items() if any(True for _ in m.parameters())]
        for name, m in modules.items():
            tracer.add_module(m, name if len(with_params) > 1 else "")
        names = []
        k = self.config.parallel.micro_batches if self.config.parallel is not None else 1
        with tracer:
            lazy = []
            for i, a in enumerate(args):
                array = a._array() if isinstance(a, Tensor) else np.asarray(a)
                shape = list(array.shape)
                if k > 1:  # the graph is traced for one micro-batch
                    if not shape or shape[0] % k != 0:
                        raise ValueError(f"nn.Graph: input {i} of shape {shape} does not split "
                                         f"into {k} equal micro-batches along axis 0")
                    shape[0] //= k
                t = tracer.input(f"input{i}", shape, dtypes.get(array.dtype))
                if isinstance(a, Tensor) and a._placement is not None:
                    t = t.to_global(a._placement, a._sbp)
                lazy.append(t)
                names.append(f"input{i}")
            result = self.build(*lazy)
        outs = list(result) if isinstance(result, (tuple, list)) else [result]
        for i, o in enumerate(outs):
            if not isinstance(o, LazyTensor):
                raise TypeError(f"{type(self).__name__}.build: output {i} is "
                                f"{type(o).__name__}, not a tensor computed from the inputs")
        tracer._input_names = names
        tracer._outputs = [o.graph_name for o in outs]
        tracer._single = not isinstance(result, (tuple, list))
        return tracer

    def _check_pins(self, tracer: Tracer) -> None:
        """Every to_global inside the graph must use the graph's placement."""
        own = self.config.placement
        for name, pin in tracer.pinned_placements.items():
            if own is None:
                raise ValueError(f"{type(self).__name__}: '{name}' is pinned (to_global) on "
                                 f"{pin!r}, but the graph runs on one device; call "
                                 f"config.auto_parallel(placement=...) with that placement")
            if pin != own:
                raise ValueError(f"{type(self).__name__}: '{name}' is pinned (to_global) on "
                                 f"{pin!r}, but the graph is planned on {own!r} "
                                 f"(config.auto_parallel); use the graph's placement in "
                                 f"every to_global inside it")

    def _compile(self, args) -> None:
        tracer = self._trace(args)
        self._check_pins(tracer)
        program = tracer.program
        lr_input = None
        if self._optimizer is not None:
            missing = [n for n in tracer.trainable
                       if id(tracer.variables[n]) not in self._optimizer._names]
            if missing:
                raise ValueError(f"add_optimizer: the optimizer does not hold the trained "
                                 f"parameters {', '.join(missing[:6])}")
            group = self._optimizer.param_groups[0]
            hyper = {k: float(group[k]) for k in type(self._optimizer)._HYPER}
            if self._clip is not None:
                hyper["clip_grad_max_norm"] = float(self._clip)
            hyper["lr_input"] = lr_input = LR_INPUT
            program.minimize(tracer._outputs[0], _OPTIMIZER_KINDS[type(self._optimizer).__name__],
                             hyper)
        self._compiled = Compiled.build(program, tracer._input_names, tracer._outputs,
                                        self.config.parallel, tracer.pinned, lr_input,
                                        self.config.num_threads, self.config.transactional,
                                        trace_path=self.config.trace_path)
        self._tracer = tracer
        if self._pending_state is not None:
            state, self._pending_state = self._pending_state, None
            self.load_state_dict(state)
        if self._pending_checkpoint is not None:
            (path, ck, model), self._pending_checkpoint = self._pending_checkpoint, None
            if ck is None:
                self._apply_sharded(path, model)
            else:
                self._apply_checkpoint(path, ck)

    # ---- running ------------------------------------------------------------------
    def __call__(self, *args):
        with self._call_lock:
            return self._call(args)

    def _call(self, args):
        if self._compiled is None:
            self._compile(args)
        arrays = [a._array() if isinstance(a, Tensor) else np.asarray(a) for a in args]
        lr = self._optimizer.param_groups[0]["lr"] if self._optimizer is not None else None
        anomaly = self.config.detect_anomaly
        self._compiled.session.set_detect_anomaly(
            is_anomaly_enabled() if anomaly is None else bool(anomaly))
        outs = self._compiled.run(arrays, lr)
        if self._scheduler is not None:
            self._scheduler.step()
        tensors = [Tensor._wrap(o) if o is not None else None for o in outs]
        return tensors[0] if self._tracer._single else tuple(tensors)

    @property
    def compiled(self) -> Compiled:
        if self._compiled is None:
            raise RuntimeError(f"{type(self).__name__}: not compiled yet (call it once)")
        return self._compiled

    # ---- the plan -----------------------------------------------------------------
    def plan_report(self, full: bool = False, max_rows: int = 20) -> str:
        """The chosen layout: SBP per op, boxing, predicted cost."""
        c = self.compiled
        amp = self._tracer.autocast_report()
        if c.parallel is None:
            return "one device (no auto_parallel): no layout to report" + amp
        if c.planned is None:
            return (f"strategy loaded from {c.parallel.strategy_path} (not searched, not "
                    f"costed):\n{c.session.strategy()}{amp}")
        return c.planned.report(full=full, max_rows=max_rows, memory=c.predicted_memory()) + amp

    def __repr__(self) -> str:
        if self._compiled is None:
            return f"{type(self).__name__}(not compiled; modules: {list(self._modules())})"
        return f"{type(self).__name__}:\n{self.plan_report()}"

    def save_plan(self, path: str) -> None:
        """The compiled physical plan (Plan protobuf, binary)."""
        with open(path, "wb") as f:
            f.write(self.compiled.session.plan_bytes())

    def save_strategy(self, path: str) -> None:
        """The chosen strategy (JSON), loadable by ``load_strategy``."""
        c = self.compiled
        if c.planned is not None:
            c.planned.save(path)
        elif c.strategy is not None:
            import json

            with open(path, "w", encoding="utf-8") as f:
                json.dump(c.strategy, f, indent=1)
        else:
            raise ValueError("save_strategy: a one-device graph has no strategy")

    def to_dot(self, path: Optional[str] = None) -> str:
        """The strategy as Graphviz DOT; written to ``path`` when given."""
        c = self.compiled
        if c.parallel is None:
            raise ValueError("to_dot: a one-device graph has no layout (set "
                             "config.auto_parallel)")
        dot = c.session.to_dot()
        if path is not None:
            with open(path, "w", encoding="utf-8") as f:
                f.write(dot)
        return dot

    # ---- state --------------------------------------------------------------------
    def _state_names(self) -> list:
        """The variables that are state: all but constants and the modules'
        non-persistent buffers (``register_buffer(..., persistent=False)``)."""
        skip = self._tracer.non_persistent
        return [v for v in self.compiled.variables if not v.startswith("_const") and v not in skip]

    def state_dict(self) -> "OrderedDict[str, Tensor]":
        """Logical parameters, persistent buffers and optimizer state, by graph
        name; as in eager, non-persistent buffers (GPT's causal mask) are left out."""
        c = self.compiled
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
        for k, a in arrays.items():
            self._compiled.set(k, a.astype(specs[k][1]))

    def save(self, path: str, model: str = "", meta: Optional[dict] = None,
             sharded: Optional[bool] = None, world=None) -> None:
        """A checkpoint of every variable. ``sharded`` (default: whether the
        graph runs on a placement): each process writes the slices of its
        ranks (sharded_checkpoint); otherwise one logical checkpoint
        (checkpoint), written by process 0. ``world``: the job's processes
        (default: from the launcher's environment; this one alone without)."""
        c = self.compiled
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
        ck = sharded_checkpoint.load_into(path, target, model, self._state_specs(),
                                          allow_missing_state=missing_ok)
        self._apply_meta(ck)
        return ck

    def _apply_meta(self, ck: checkpoint.Checkpoint) -> None:
        if self._scheduler is not None and "lr_scheduler" in ck.meta:
            self._scheduler.load_state_dict(ck.meta["lr_scheduler"])

    def copy_to_modules(self) -> None:
        """Writes the graph's parameters and buffers back into the modules."""
        c = self.compiled
        for name, t in self._tracer.variables.items():
            if _device.is_device_value(t._value) and not name.startswith("_const"):
                t._value = _device.like_value(c.get(name), t._value)
            elif not name.startswith("_const") and t._value is not None:
                np.copyto(t._value, c.get(name))


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
