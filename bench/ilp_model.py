"""An independent optimum of a cost graph: the integer linear program of
``_C.CostModel.cost_graph()`` solved by HiGHS (``highspy``, a test and bench
dependency only), and a plain-Python evaluator that re-prices any choice.

Used by tests/python/test_ilp_crosscheck.py and bench/ilp_crosscheck.py to
check exact's proven optimum against a solver that shares no code with
search/: the graph is the one the searchers get, before dominance pruning.

The program (the standard local-marginal linearisation of a pairwise
min-sum problem, exact when the node variables are integral):

* x[u, i] in {0, 1}: node u takes candidate i; sum_i x[u, i] = 1.
* y[e, r, c] in [0, 1] for edge e = (u, v), r a class of u's candidates
  whose matrix rows are identical, c a class of v's whose columns are:
  sum_c y[e, r, c] = sum_{i in r} x[u, i] and sum_r y[e, r, c] =
  sum_{j in c} x[v, j], so with x integral y is 1 at the chosen pair of
  classes and 0 elsewhere (with one candidate per class: the textbook
  y[e, i, j]). The classes only merge equal costs; no candidate is dropped.
* memory: sum_{u, i} memory[u, i] x[u, i] <= limit (per device), scaled by
  the limit.
* minimise sum compute[u, i] x[u, i] + sum seconds[e][i][j] y[e, i, j], the
  costs divided by a feasible choice's total so the objective is O(1);
  ``mip_rel_gap`` = ``mip_abs_gap`` = 0.

The solver's objective is never trusted: the choice (argmax of x per node)
is re-priced by ``evaluate``.

    >>> g = {"nodes": [{"name": "a", "compute_s": [1.0, 2.0], "memory_bytes": [4, 1]},
    ...                {"name": "b", "compute_s": [1.0, 1.0], "memory_bytes": [0, 0]}],
    ...      "edges": [{"from": 0, "to": 1, "seconds": [[5.0, 0.0], [0.0, 5.0]]}],
    ...      "memory_limit": 2}
    >>> evaluate(g, [1, 1])
    (3.0, 1, True)
"""
from __future__ import annotations

import time
from typing import List, Optional, Sequence, Tuple

import numpy as np


def evaluate(graph: dict, choice: Sequence[int]) -> Tuple[float, int, bool]:
    """(total seconds, memory bytes per device, fits the limit) of ``choice``:
    the chosen compute times plus the chosen entry of every edge (parallel
    edges add up), the chosen memory summed."""
    nodes = graph["nodes"]
    if len(choice) != len(nodes):
        raise ValueError(f"evaluate: choice has {len(choice)} entries, graph {len(nodes)} nodes")
    total = 0.0
    memory = 0
    for node, c in zip(nodes, choice):
        total += node["compute_s"][c]
        memory += node["memory_bytes"][c]
    for edge in graph["edges"]:
        total += edge["seconds"][choice[edge["from"]]][choice[edge["to"]]]
    limit = graph["memory_limit"]
    return total, memory, limit is None or memory <= limit


def min_memory_choice(graph: dict) -> List[int]:
    """Every node's smallest-memory candidate (the cheapest of those): always
    within a feasible limit."""
    out = []
    for node in graph["nodes"]:
        mem = node["memory_bytes"]
        least = min(mem)
        out.append(min((i for i, m in enumerate(mem) if m == least),
                       key=lambda i: node["compute_s"][i]))
    return out


TOLERANCE = 1e-10  # HiGHS's feasibility tolerances; its defaults (1e-7, 1e-6) miss
# choices better by 1e-7 relative on VGG16


def _scale(graph: dict) -> float:
    """A divisor of the costs near the optimum: the trivial lower bound (each
    node's and edge's least entry), or a feasible total when that is 0."""
    bound = sum(min(n["compute_s"]) for n in graph["nodes"])
    bound += sum(min(min(r) for r in e["seconds"]) for e in graph["edges"])
    return bound if bound > 0 else (evaluate(graph, min_memory_choice(graph))[0] or 1.0)


def _program(graph: dict, scale: float):
    """Column costs, bounds, integrality and row-wise constraints."""
    nodes, edges = graph["nodes"], graph["edges"]
    x_offset = np.cumsum([0] + [len(n["compute_s"]) for n in nodes])
    num_x = int(x_offset[-1])
    costs = [np.asarray(n["compute_s"], dtype=np.float64) for n in nodes]
    rows_idx: List[np.ndarray] = []
    rows_val: List[np.ndarray] = []
    lower: List[float] = []
    upper: List[float] = []

    def row(idx, val, lo, hi):
        rows_idx.append(np.asarray(idx, dtype=np.int32))
        rows_val.append(np.asarray(val, dtype=np.float64))
        lower.append(lo)
        upper.append(hi)

    for u in range(len(nodes)):  # one candidate per node
        k = x_offset[u + 1] - x_offset[u]
        row(np.arange(x_offset[u], x_offset[u + 1]), np.ones(k), 1.0, 1.0)
    offset = num_x
    for edge in edges:
        m = np.asarray(edge["seconds"], dtype=np.float64)
        u, v = edge["from"], edge["to"]
        if m.shape != (x_offset[u + 1] - x_offset[u], x_offset[v + 1] - x_offset[v]):
            raise ValueError(f"ilp: edge {u}->{v} matrix {m.shape} does not match its nodes")
        # Identical rows (columns) form one class: y per pair of classes.
        rows, row_class = np.unique(m, axis=0, return_inverse=True)
        cols, col_class = np.unique(rows, axis=1, return_inverse=True)
        row_class, col_class = row_class.reshape(-1), col_class.reshape(-1)
        kr, kc = cols.shape
        block = offset + np.arange(kr * kc).reshape(kr, kc)
        for r in range(kr):  # sum_c y[r, c] = sum of x[u, i] over row class r
            members = x_offset[u] + np.nonzero(row_class == r)[0]
            row(np.concatenate([block[r], members]),
                np.concatenate([np.ones(kc), -np.ones(len(members))]), 0.0, 0.0)
        for c in range(kc):  # sum_r y[r, c] = sum of x[v, j] over column class c
            members = x_offset[v] + np.nonzero(col_class == c)[0]
            row(np.concatenate([block[:, c], members]),
                np.concatenate([np.ones(kr), -np.ones(len(members))]), 0.0, 0.0)
        costs.append(cols.reshape(-1))
        offset += kr * kc
    limit = graph["memory_limit"]
    if limit is not None:
        mem = np.concatenate([np.asarray(n["memory_bytes"], dtype=np.float64) for n in nodes])
        nz = np.nonzero(mem)[0]
        row(nz, mem[nz] / float(limit), -np.inf, 1.0)
    cost = np.concatenate(costs) / scale
    return num_x, x_offset, cost, offset, (rows_idx, rows_val, lower, upper)


def solve_ilp(graph: dict, time_limit_s: Optional[float] = None, threads: int = 1) -> dict:
    """Solves the program above with HiGHS. Returns status (HiGHS's model
    status text, "Optimal" when proved), choice (None when HiGHS found no
    solution), total_s (``evaluate``'s, not the solver's), memory_bytes,
    fits, objective_s (the solver's, unscaled, for comparison), mip_gap,
    seconds, columns and rows."""
    import highspy

    started = time.perf_counter()
    scale = _scale(graph)
    num_x, x_offset, cost, num_cols, (ridx, rval, rlo, rhi) = _program(graph, scale)
    lp = highspy.HighsLp()
    lp.num_col_ = num_cols
    lp.num_row_ = len(ridx)
    lp.col_cost_ = cost
    lp.col_lower_ = np.zeros(num_cols)
    lp.col_upper_ = np.ones(num_cols)
    lp.row_lower_ = np.asarray(rlo, dtype=np.float64)
    lp.row_upper_ = np.asarray(rhi, dtype=np.float64)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
    lp.a_matrix_.num_col_ = num_cols
    lp.a_matrix_.num_row_ = len(ridx)
    lp.a_matrix_.start_ = np.concatenate([[0], np.cumsum([len(r) for r in ridx])]).astype(np.int32)
    lp.a_matrix_.index_ = np.concatenate(ridx).astype(np.int32)
    lp.a_matrix_.value_ = np.concatenate(rval)
    lp.integrality_ = [highspy.HighsVarType.kInteger] * num_x + \
        [highspy.HighsVarType.kContinuous] * (num_cols - num_x)
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("mip_rel_gap", 0.0)
    h.setOptionValue("mip_abs_gap", 0.0)
    h.setOptionValue("threads", threads)
    h.setOptionValue("random_seed", 0)
    for tolerance in ("primal_feasibility_tolerance", "dual_feasibility_tolerance",
                      "mip_feasibility_tolerance"):
        h.setOptionValue(tolerance, TOLERANCE)
    if time_limit_s is not None:
        h.setOptionValue("time_limit", float(time_limit_s))
    h.passModel(lp)
    h.run()
    status = h.modelStatusToString(h.getModelStatus())
    info = h.getInfo()
    out = dict(status=status, choice=None, total_s=None, memory_bytes=None, fits=None,
               objective_s=None, mip_gap=None, columns=num_cols, rows=len(ridx))
    values = np.asarray(h.getSolution().col_value)
    if info.primal_solution_status == 2 and len(values) == num_cols:  # kSolutionStatusFeasible
        x = values[:num_x]
        choice = [int(np.argmax(x[x_offset[u]:x_offset[u + 1]])) for u in range(len(x_offset) - 1)]
        total, memory, fits = evaluate(graph, choice)
        out.update(choice=choice, total_s=total, memory_bytes=memory, fits=fits,
                   objective_s=info.objective_function_value * scale, mip_gap=info.mip_gap)
    out["seconds"] = time.perf_counter() - started
    return out
