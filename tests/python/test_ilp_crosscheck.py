"""exact's proven optimum against an independent one: the cost graph as the
searchers get it (CostModel.cost_graph(), before pruning) written as an
integer linear program and solved by HiGHS (bench/ilp_model.py), its answer
re-priced by a plain-Python evaluator, not by either solver. Graphs: an MLP
on [4], GPT (1 layer) on [2, 2], a residual and a two-branch graph on
[2, 2], and two MLPs under a binding memory limit (the one on [2, 4]
exact's older branch and bound could not prove within its 1M nodes; the
Lagrangian branch and bound does). The models are bench/'s
(search_models.py), built on the meta device."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

highspy = pytest.importorskip("highspy")  # requirements.txt installs it

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
from ilp_model import evaluate, solve_ilp  # noqa: E402
from search_models import build_branches, build_program  # noqa: E402

from oneflow_lite import _C  # noqa: E402

CLUSTER = "h100_8gpu"
REL = 1e-9


def _close(a, b):
    return np.allclose(a, b, rtol=REL, atol=0)


def _model(build, mesh, memory_limit=None):
    program, _ = build()
    return _C.build_cost_model(program, mesh, CLUSTER, memory_limit=memory_limit)


def _binding_limit(build, mesh):
    """Half-way between the smallest need and the unconstrained optimum's memory."""
    free = _model(build, mesh, memory_limit=-1)
    best = free.plan("exact")
    assert best.stats["exact_proved"]
    need = free.smallest_memory_need_bytes
    assert best.stats["memory_bytes"] > need
    return need + (best.stats["memory_bytes"] - need) // 2


CASES = {
    "mlp_4": (lambda: build_program("mlp", layers=3, batch=512, hidden=2048), [4], None),
    "gpt1_2x2": (lambda: build_program("gpt", layers=1, batch=8, hidden=256, heads=4, seq=128,
                                       vocab=1024), [2, 2], None),
    "residual_2x2": (lambda: build_branches("residual", 2, 512, 2048), [2, 2], None),
    "two_branch_2x2": (lambda: build_branches("two_branch", 3, 512, 2048), [2, 2], None),
    "mlp_4_memory": (lambda: build_program("mlp", layers=3, batch=512, hidden=2048), [4],
                     "binding"),
    "mlp_2x4_memory": (lambda: build_program("mlp", layers=3, batch=64, hidden=8192), [2, 4],
                       "binding"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_exact_optimum_equals_the_ilp_optimum(name):
    build, mesh, limit = CASES[name]
    if limit == "binding":
        limit = _binding_limit(build, mesh)
    model = _model(build, mesh, memory_limit=limit)
    graph = model.cost_graph()
    assert len(graph["nodes"]) == model.num_nodes and len(graph["edges"]) == model.num_edges
    exact = model.plan("exact", exact_max_table_entries=1 << 24)
    assert exact.stats["exact_proved"], exact.stats["note"]
    total, memory, fits = evaluate(graph, exact.choice)
    assert fits and memory == exact.stats["memory_bytes"]
    assert _close(total, exact.predicted_step_s)  # the export prices as search/ does
    ilp = solve_ilp(graph)
    assert ilp["status"] == "Optimal", ilp
    assert ilp["fits"], ilp
    assert _close(ilp["total_s"], exact.predicted_step_s), (ilp["total_s"], exact.predicted_step_s)
    if limit is not None:  # the limit binds: the free optimum does not fit
        free = solve_ilp(dict(graph, memory_limit=None))
        assert free["memory_bytes"] > limit and free["total_s"] < ilp["total_s"]


def test_evaluator_by_hand():
    # a: (1 s, 4 B) or (2 s, 1 B); b: 1 s either way; the edge costs 5 s
    # unless both pick the same index. Limit 2 B: a = 1, b = 1: 2 + 1 + 0 = 3.
    graph = {"nodes": [{"name": "a", "compute_s": [1.0, 2.0], "memory_bytes": [4, 1]},
                       {"name": "b", "compute_s": [1.0, 1.0], "memory_bytes": [0, 0]}],
             "edges": [{"from": 0, "to": 1, "seconds": [[0.0, 5.0], [5.0, 0.0]]}],
             "memory_limit": 2}
    assert evaluate(graph, [0, 0]) == (2.0, 4, False)
    assert evaluate(graph, [1, 0]) == (8.0, 1, True)
    ilp = solve_ilp(graph)
    assert ilp["status"] == "Optimal" and ilp["choice"] == [1, 1] and ilp["total_s"] == 3.0
    free = solve_ilp(dict(graph, memory_limit=None))
    assert free["choice"] == [0, 0] and free["total_s"] == 2.0
    with pytest.raises(ValueError, match="choice has 1 entries"):
        evaluate(graph, [0])
