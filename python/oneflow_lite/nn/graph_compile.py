"""What ``nn.Graph`` compiles a trace into, and the auto-parallel setting.

``ParallelConfig`` names the cluster, the searcher, the placement and the
micro-batch count (``Graph.config.auto_parallel(...)``); ``Compiled.build``
compiles a program on it in one call, ``_C.compile`` (the placement built
once, then the search, or a loaded strategy, and the session, in C++);
``Compiled`` holds the runnable session (``_C.Session`` on one device, a
``_C.DistributedSession`` on a placement; both run their plan on the C++
actor runtime, the one executor of graphs) with the names it feeds and
fetches, runs one step, and reads and writes the logical variables
(parameters and optimizer state).

Clusters: a preset name (``_C.cluster_presets()``), a Cluster text file, or
"local": this machine, calibrated once per process and device count
(``_C.calibrate``; a few seconds). Not thread-safe.
"""
from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence

import numpy as np

from oneflow_lite import _C, _progress, _world

LR_INPUT = "_lr"  # the fed learning rate of graph-mode optimizers
_local_clusters: Dict[tuple, object] = {}
LOCAL_CLUSTERS = ("local", "local_kernels")  # this machine, calibrated (resolve_cluster)


def searcher_names() -> List[str]:
    """The valid searchers: the planner's (autoddl, exact, the expert presets,
    manual)."""
    return list(_C.searchers()) if hasattr(_C, "searchers") else []


def resolve_cluster(spec, devices: int):
    """A Cluster from a preset name, a file path, "local", "local_kernels" or
    a Cluster. "local": this machine's quick calibration (memcpy, one matmul
    FLOP/s, the in-process all-reduce); "local_kernels": the full one of
    ``oneflow_lite.calibrate`` (every op type's kernel time by size, the
    contention of devices running at once, each collective's figures: across
    the world's processes when it has several), about a minute more."""
    if not isinstance(spec, str):
        return spec
    if spec in LOCAL_CLUSTERS:
        key = (devices, spec)
        if key not in _local_clusters:
            _local_clusters[key] = _calibrated(devices, kernels=spec == "local_kernels")
        return _local_clusters[key]
    if spec in _C.cluster_presets():
        return _C.preset_cluster(spec)
    if os.path.exists(spec):
        return _C.load_cluster(spec)  # raises ValueError naming the file and the position
    raise ValueError(f"cluster '{spec}' is neither a preset ({', '.join(_C.cluster_presets())}), "
                     f"'local', 'local_kernels', nor an existing file")


def _calibrated(devices: int, kernels: bool = False):
    """This machine calibrated (``kernels``: with the kernel table, contention
    and each collective across the world's processes); with several
    processes, process 0 calibrates and the others take its Cluster (every
    process must plan on the same figures, or their plans differ)."""
    world = _world.info()
    text = None
    if world["process"] == 0:
        if kernels:
            from oneflow_lite import calibrate

            processes = int(world["num_processes"]) if world["distributed"] else 0
            cluster, _figures = calibrate.calibrate(
                devices=max(2, devices), threads=1, kernels=True, reps=3, name="local",
                processes=processes if processes >= 2 else 0, memcpy_bytes=16 << 20,
                matmul_size=256, allreduce_bytes=4 << 20)
        else:
            cluster, _figures = _C.calibrate(devices=max(2, devices), num_threads=1,
                                             memcpy_bytes=16 << 20, matmul_size=256,
                                             allreduce_bytes=4 << 20, reps=3, name="local",
                                             progress=_progress.progress_or_none("calibrate"))
        if not world["distributed"]:
            return cluster
        with tempfile.TemporaryDirectory() as d:
            cluster.save(os.path.join(d, "local.pbtxt"))
            with open(os.path.join(d, "local.pbtxt"), encoding="utf-8") as f:
                text = f.read()
    text = _world.broadcast(text)
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "local.pbtxt"), "w", encoding="utf-8") as f:
            f.write(text)
        return _C.load_cluster(os.path.join(d, "local.pbtxt"))


def simulation_candidates(choose_by_simulation) -> List[str]:
    """auto_parallel's choose_by_simulation as the searchers to simulate
    beside the search's answer: False -> none, True -> the rule-based
    presets (``_C.simulation_candidates()``), a list of searcher names ->
    those."""
    if choose_by_simulation is False or choose_by_simulation is None:
        return []
    if choose_by_simulation is True:
        return list(_C.simulation_candidates())
    if isinstance(choose_by_simulation, (list, tuple)) and choose_by_simulation and \
            all(isinstance(n, str) for n in choose_by_simulation):
        names = searcher_names()
        unknown = [n for n in choose_by_simulation if names and n not in names]
        if unknown:
            raise ValueError(f"auto_parallel: choose_by_simulation names unknown searcher "
                             f"'{unknown[0]}' (expected some of {', '.join(names)})")
        return list(choose_by_simulation)
    raise TypeError(f"auto_parallel: choose_by_simulation must be True, False or a non-empty "
                    f"list of searcher names, got {choose_by_simulation!r}")


@dataclass
class ParallelConfig:
    """The auto-parallel setting of one nn.Graph (see ``GraphConfig.auto_parallel``)."""

    ranks: List[int]
    hierarchy: List[int]
    cluster: object = "local"
    searcher: str = "autoddl"
    micro_batches: int = 1
    strategy_path: Optional[str] = None   # a saved strategy: skips the search
    memory_limit: Optional[int] = None    # bytes per device; None: the cluster's; -1: none
    num_threads: int = 0
    timeout_ms: int = 120000
    optimality_cap_s: Optional[float] = None  # exact from the plan: its distance to the optimum
    transactional: bool = True  # a failed step restores variables (GraphConfig.transactional_steps)
    device_type: str = "cpu"    # the placement's: "cuda" runs the plan on cuda:<rank>
    simulate_candidates: List[str] = field(default_factory=list)  # chosen by simulated step

    def __post_init__(self) -> None:
        names = searcher_names()
        if names and self.searcher not in names:
            raise ValueError(f"auto_parallel: unknown searcher '{self.searcher}' (expected one "
                             f"of {', '.join(names)})")
        if int(self.micro_batches) < 1:
            raise ValueError(f"auto_parallel: micro_batches={self.micro_batches} must be >= 1")
        if self.optimality_cap_s is not None and not float(self.optimality_cap_s) > 0:
            raise ValueError(f"auto_parallel: optimality_cap_s={self.optimality_cap_s} must be "
                             f"> 0 seconds (None: not measured)")
        if int(np.prod(self.hierarchy)) != len(self.ranks):
            raise ValueError(f"auto_parallel: hierarchy {self.hierarchy} holds "
                             f"{int(np.prod(self.hierarchy))} ranks, the placement has "
                             f"{len(self.ranks)}")

    @property
    def devices(self) -> int:
        return len(self.ranks)

    def placement(self):
        """The ``_C.Placement`` of the user's ranks, hierarchy and device type."""
        return _C.Placement(self.device_type, list(self.ranks), list(self.hierarchy))

    def spec(self, pinned: Dict[str, str]):
        """How the strategy is obtained: the saved one, else the search."""
        if self.strategy_path is not None:
            return _C.PlanSpec.given(_C.load_strategy(self.strategy_path))
        cluster = resolve_cluster(self.cluster, self.devices)
        return _C.PlanSpec.search(cluster, self.searcher, pinned=dict(pinned),
                                  memory_limit=self.memory_limit,
                                  optimality_cap_s=self.optimality_cap_s,
                                  simulate_candidates=list(self.simulate_candidates))


@dataclass
class Compiled:
    """A compiled graph: its session and the names it feeds and fetches."""

    program: object
    session: object
    inputs: List[str]
    outputs: List[str]
    variables: List[str]
    parallel: Optional[ParallelConfig] = None
    planned: object = None               # _C.PlannedStrategy, or None (loaded / one device)
    strategy: object = None              # the _C.Strategy the DistributedSession runs
    lr_input: Optional[str] = None       # fed every step when the graph trains
    steps: int = 0
    whole_on: Dict[str, int] = field(default_factory=dict)  # variable -> a local rank holding it
    bytes_history: List[List[int]] = field(default_factory=list)

    @staticmethod
    def build(program, inputs: Sequence[str], outputs: Sequence[str],
              parallel: Optional[ParallelConfig], pinned: Dict[str, str],
              lr_input: Optional[str], num_threads: int = 0,
              transactional: bool = True, trace_path: Optional[str] = None) -> "Compiled":
        variables = list(program.variables())
        trace = _world.trace_path(trace_path)
        if parallel is None:
            session = _C.Session(program, num_threads, transactional=transactional,
                                 trace_path=trace)
            return Compiled(program, session, list(inputs), list(outputs), variables,
                            lr_input=lr_input)
        _world.check_placement(parallel.ranks)  # before planning: one line, what to pass
        spec = parallel.spec(pinned)
        searching = parallel.strategy_path is None
        with _progress.optimality_check(parallel.searcher if searching else "",
                                        parallel.optimality_cap_s if searching else None):
            c = _C.compile(program, parallel.placement(), spec, list(outputs),
                           num_threads=parallel.num_threads, timeout_ms=parallel.timeout_ms,
                           micro_batches=int(parallel.micro_batches),
                           transactional=parallel.transactional, trace_path=trace)
        return Compiled(program, c.session, list(inputs), list(outputs), variables, parallel,
                        c.planned, c.strategy, lr_input)

    def predicted_memory(self):
        """The predicted peak bytes per rank of this graph's session
        (``_C.MemoryEstimate``: the runtime's arena with liveness, every buffer
        kept apart, the undo copy; oneflow_lite/api/memory_estimate.h), for
        the options the session was built with; None without a plan."""
        if self.planned is None or self.parallel is None:
            return None
        return self.planned.predicted_memory(list(self.outputs),
                                             micro_batches=self.micro_batches,
                                             transactional=self.parallel.transactional)

    @property
    def micro_batches(self) -> int:
        return int(self.parallel.micro_batches) if self.parallel is not None else 1

    def run(self, arrays: Sequence[np.ndarray], lr: Optional[float]) -> List[np.ndarray]:
        """One step on the global batch ``arrays`` (one per input). With k
        micro-batches each input is cut into k equal parts along axis 0 and
        the fetched outputs are joined back: scalars averaged (a mean loss
        over equal parts), others concatenated along axis 0."""
        if len(arrays) != len(self.inputs):
            raise ValueError(f"nn.Graph: {len(arrays)} inputs given, the graph was traced with "
                             f"{len(self.inputs)}")
        extra = {}
        if self.lr_input is not None:
            # In the dtype the program declares (float64 for a float64 model),
            # so the update's lr equals eager's.
            extra[self.lr_input] = np.array(lr, self.program.dtype(self.lr_input))
        k = self.micro_batches
        if k == 1:
            feeds = dict(zip(self.inputs, arrays), **extra)
            out = self.session.run(feeds, self.outputs)
        else:
            for name, a in zip(self.inputs, arrays):
                if a.ndim == 0 or a.shape[0] % k != 0:
                    raise ValueError(f"nn.Graph: input '{name}' of shape {list(a.shape)} does "
                                     f"not split into {k} equal micro-batches along axis 0")
            parts = [np.split(a, k) for a in arrays]
            feeds = [dict({n: p[i] for n, p in zip(self.inputs, parts)}, **extra)
                     for i in range(k)]
            per_micro = self.session.run(feeds, self.outputs)
            out = []
            for j in range(len(self.outputs)):
                values = [m[j] for m in per_micro]
                if values[0] is None:
                    out.append(None)
                elif np.ndim(values[0]) == 0:
                    out.append(np.mean(np.stack(values), axis=0).astype(values[0].dtype))
                else:
                    out.append(np.concatenate(values, axis=0))
        self.steps += 1
        if self.parallel is not None:  # cumulative counters, rank -> bytes
            sent = dict(self.session.bytes_sent())
            self.bytes_history.append([int(sent.get(r, 0)) for r in self.parallel.ranks])
        return out

    # ---- state --------------------------------------------------------------------
    def get(self, name: str) -> np.ndarray:
        return np.asarray(self.session.get_variable(name))

    def find_whole_copies(self, names: Sequence[str]) -> None:
        """Notes, for ``read``, the variables of which every process holds a
        whole copy on a rank of its own (replicated: data parallelism's
        parameters). Collective when the world has several processes (the
        processes agree, so ``read`` is then collective for all or none)."""
        world = _world.info()
        if self.parallel is None or not world["distributed"]:
            return
        local, mine = set(self.session.local_ranks()), {}
        for name in names:
            layout = self.session.variable_layout(name)
            whole = [int(r) for r, part in layout["slices"].items() if int(r) in local and
                     not part["partial"] and list(part["shape"]) == list(layout["shape"])]
            if whole:
                mine[name] = whole[0]
        everyone = _world.all_gather(sorted(mine))
        agreed = set(mine).intersection(*map(set, everyone))
        self.whole_on = {n: r for n, r in mine.items() if n in agreed}

    def read(self, name: str) -> np.ndarray:
        """The logical value of ``name``: from a rank of this process when
        every process holds it whole (no collective, see
        ``find_whole_copies``), else ``get`` (collective across processes)."""
        rank = self.whole_on.get(name)
        if rank is None:
            return self.get(name)
        return np.asarray(self.session.get_variable_slice(name, rank))

    def set(self, name: str, value: np.ndarray) -> None:
        self.session.set_variable(name, np.require(value, requirements="C"))  # 0-d stays 0-d

    def specs(self) -> Dict[str, tuple]:
        """name -> (shape, dtype) of every variable."""
        return {v: (list(self.program.shape(v)), self.program.dtype(v)) for v in self.variables}

    def step_bytes(self) -> Optional[List[int]]:
        """Bytes each rank (in placement order) sent in the last step."""
        if not self.bytes_history:
            return None
        last = self.bytes_history[-1]
        prev = self.bytes_history[-2] if len(self.bytes_history) > 1 else [0] * len(last)
        return [a - b for a, b in zip(last, prev)]
