"""``flow.nn.Graph``: a model compiled as a whole, as in OneFlow.

Subclass it, keep the modules as attributes, write ``build()`` with the
forward and the loss, ``add_optimizer`` in ``__init__``, and either call
``loss.backward()`` in ``build`` (OneFlow's way) or return the loss first
(both train the same program); the first call traces ``build``
(``nn.graph_build``), appends the backward and the optimizer
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
    ...         loss = self.loss_fn(self.model(x), y)
    ...         loss.backward()
    ...         return loss
    >>> g = Train()
    >>> g.config.auto_parallel(cluster="h100_8gpu", searcher="data_parallel",
    ...                        placement=flow.placement("cpu", [[0, 1], [2, 3]]))
    >>> x, y = np.ones((8, 8), np.float32), np.zeros(8, np.int64)
    >>> float(g(x, y)) > float(g(x, y))  # two steps: the loss falls
    True
    >>> eager = float(flow.nn.functional.cross_entropy(model(flow.tensor(x)), flow.tensor(y)))
    >>> abs(eager - float(g(x, y))) < 1e-5  # the module holds the trained values
    True

The graph and its modules share parameters and buffers, and the graph and
its optimizer share the optimizer state (nn/graph_share.py): after graph
steps eager calls, ``model.state_dict()``, ``opt.step()`` and other graphs
built on the same modules (an eval graph) see the trained values; eager
changes reach the graph at its next call. The values move once per
hand-over between eager code and a graph, never per step.
``copy_to_modules()`` is kept: it moves them now (with several processes,
a collective point every process reaches alike).

Names: the graph's variables are the modules' state_dict keys (with the
attribute name as prefix when the Graph holds several modules with
parameters), optimizer state "<param>/m", "/v", "/step", "/momentum".
``state_dict()``, ``load_state_dict()`` (graph_state.py), ``save(dir)`` and
``load(dir)`` (graph_checkpoint.py) read and write the state of the last call's plan:
sharded checkpoints (oneflow_lite.sharded_checkpoint) for a graph on a
placement, logical ones (oneflow_lite.checkpoint) on one device; ``load``
reads either format under any plan.

By concern: configuration (nn/graph_config.py), tracing (graph_trace.py),
trace to plan (graph_build.py), compilation (graph_compile.py), running:
calls, plans per input signature, the fed learning rate, threads, bad
values (graph_run.py), sharing with the modules (graph_share.py), state
(graph_state.py), checkpoints (graph_checkpoint.py); this file holds the class, the optimizer
and strategy settings, and the reports. Calls are serialised
(graph_run.py); the rest of the API (state_dict, load, save) and the eager
side of the sharing are not thread-safe.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Dict, Optional

import numpy as np

from oneflow_lite import _C
from oneflow_lite.nn.graph_build import OPTIMIZER_KINDS, Plan
from oneflow_lite.nn.graph_checkpoint import GraphCheckpoint
from oneflow_lite.nn.graph_compile import Compiled
from oneflow_lite.nn.graph_config import GraphConfig
from oneflow_lite.nn.graph_run import GraphRun
from oneflow_lite.nn.graph_state import GraphState
from oneflow_lite.nn.graph_trace import Tracer
from oneflow_lite.nn.module import Module
from oneflow_lite.optim.lr_scheduler import LRScheduler

__all__ = ["Graph", "GraphConfig"]

MAX_PLANS = 8  # plans kept per Graph (input signatures); the least recently used goes

class Graph(GraphRun, GraphCheckpoint, GraphState):
    """Base class; see the module docstring."""

    def __init__(self) -> None:
        self.config = GraphConfig()
        self._optimizer = None
        self._scheduler = None
        self._clip: Optional[float] = None
        self._plans: "OrderedDict[tuple, Plan]" = OrderedDict()  # signature -> plan, LRU last
        self._plan: Optional[Plan] = None  # the last call's
        self._compiled: Optional[Compiled] = None  # self._plan's, for the state methods
        self._tracer: Optional[Tracer] = None
        self._pending_state: Optional[Dict[str, np.ndarray]] = None
        self._pending_checkpoint = None
        self._call_lock = threading.Lock()  # serialises __call__ (graph_run.py)

    def build(self, *args):
        raise NotImplementedError(f"{type(self).__name__}: define build(self, ...) with the "
                                  f"forward (returning the loss when an optimizer is added)")

    def add_optimizer(self, optimizer, lr_sch=None, clip_grad_max_norm: Optional[float] = None,
                      *, lr_scheduler=None) -> None:
        """Trains with ``optimizer`` (flow.optim SGD, Adam or AdamW: its
        hyper-parameters and state names) the loss ``build`` called
        ``backward()`` on, else its first output; steps the scheduler
        ``lr_sch`` (OneFlow's keyword; ``lr_scheduler`` is the same) after
        every call; clips the gradients to the global L2 norm
        ``clip_grad_max_norm`` when given."""
        kind = OPTIMIZER_KINDS.get(type(optimizer).__name__)
        if kind is None:
            raise TypeError(f"add_optimizer: {type(optimizer).__name__} is not supported in "
                            f"graph mode (expected flow.optim.SGD, Adam or AdamW)")
        if len(optimizer.param_groups) != 1:
            raise NotImplementedError(f"add_optimizer: {len(optimizer.param_groups)} param "
                                      f"groups; graph mode takes one")
        if optimizer.param_groups[0].get("nesterov"):
            raise NotImplementedError("add_optimizer: SGD(nesterov=True) is eager only; the "
                                      "graph's sgd_update has plain momentum")
        if lr_sch is not None and lr_scheduler is not None:
            raise TypeError("add_optimizer: pass the scheduler once, as lr_sch= or "
                            "lr_scheduler=, not both")
        scheduler = lr_sch if lr_sch is not None else lr_scheduler
        if scheduler is not None and (not isinstance(scheduler, LRScheduler)
                                      or scheduler.optimizer is not optimizer):
            raise ValueError(f"add_optimizer: lr_sch must be a flow.optim.lr_scheduler "
                             f"scheduler of this optimizer, got {type(scheduler).__name__}")
        if clip_grad_max_norm is not None and not clip_grad_max_norm > 0:
            raise ValueError(f"add_optimizer: clip_grad_max_norm={clip_grad_max_norm} must be "
                             f"positive")
        if self._plans:
            raise RuntimeError("add_optimizer: the graph is already compiled")
        self._optimizer, self._scheduler, self._clip = optimizer, scheduler, clip_grad_max_norm

    def load_strategy(self, path: str) -> None:
        """Uses the strategy saved at ``path`` (``save_strategy``) instead of
        searching; call before the first step, after ``config.auto_parallel``."""
        if self.config.parallel is None:
            raise ValueError("load_strategy: call config.auto_parallel(...) first (the strategy "
                             "is for a placement)")
        if self._plans:
            raise RuntimeError("load_strategy: the graph is already compiled")
        _C.load_strategy(path)  # raises now, naming the file, if it is not a strategy
        self.config.parallel.strategy_path = path

    def _max_plans(self) -> int:
        return MAX_PLANS  # read at every call (a test lowers it)

    def _modules(self) -> "OrderedDict[str, Module]":
        return OrderedDict((k, v) for k, v in vars(self).items() if isinstance(v, Module))

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
            c.strategy.save(path)
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
