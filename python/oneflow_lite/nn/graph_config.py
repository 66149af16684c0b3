"""``graph.config``: how an nn.Graph compiles (``auto_parallel``, mixed
precision, transactional steps, anomaly detection). Plain settings, read at
the first call (and at each recompilation for a new input signature).
Not thread-safe.
"""
from __future__ import annotations

import os
from typing import Optional

from oneflow_lite import _global
from oneflow_lite.nn.graph_compile import ParallelConfig, simulation_candidates


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
        the cost of one undo copy of them per device (on CPU devices it lies
        mostly over memory the step no longer uses when the update runs, so
        the peak grows by far less); off: no copy, and a
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
                      optimality_cap_s: Optional[float] = None,
                      choose_by_simulation=False) -> None:
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
        lower bound (named) when there is no proof (None: not measured).
        ``choose_by_simulation``: True, or a list of searcher names: the
        searcher's answer and the presets (True: data_parallel, megatron, 2d,
        zero, vgg) are each simulated as the session would run them (tasks,
        threads, waits) and the shortest simulated step is chosen
        (``graph.compiled.planned.searcher`` names which; ``_C.plan_by_simulation``
        prints every candidate's two figures). False: the searcher's answer,
        as its additive model prices it."""
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
            device_type=placement.type,
            simulate_candidates=simulation_candidates(choose_by_simulation))
        self.placement = placement
        self.num_threads = num_threads

