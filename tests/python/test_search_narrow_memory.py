"""Never without an answer: when some plan fits device memory, autoddl and
exact return one, even where the only plans that fit are the narrowest (the
memory limit set to the smallest need any plan has, or just above it); when
none fits, the error names that smallest need. The answers are re-priced
from the exported cost graph in plain Python (bench/ilp_model.evaluate), and
their memory is summed there too, not taken from the searcher.
"""
from __future__ import annotations

import os
import re
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
from ilp_model import evaluate  # noqa: E402
from search_models import build_branches, build_program  # noqa: E402

from oneflow_lite import _C  # noqa: E402

CLUSTER = "h100_8gpu"

GRAPHS = {
    "gpt2_2x2": (lambda: build_program("gpt", layers=2, batch=8, hidden=256, heads=4, seq=128,
                                       vocab=1000), [2, 2]),
    "mlp_4": (lambda: build_program("mlp", layers=3, batch=64, hidden=512), [4]),
    "two_branch_2x2": (lambda: build_branches("two_branch", 3, 64, 512), [2, 2]),
}


def _memory(graph, choice):
    return sum(node["memory_bytes"][c] for node, c in zip(graph["nodes"], choice))


def _smallest_need(graph):
    return sum(min(node["memory_bytes"]) for node in graph["nodes"])


@pytest.mark.parametrize("key", sorted(GRAPHS))
def test_only_the_narrowest_plans_fit(key):
    build, mesh = GRAPHS[key]
    program, _ = build()
    free = _C.build_cost_model(program, mesh, CLUSTER, memory_limit=-1).cost_graph()
    need = _smallest_need(free)
    limit = need  # only plans of the smallest need fit
    model = _C.build_cost_model(program, mesh, CLUSTER, memory_limit=limit)
    graph = model.cost_graph()
    assert model.smallest_memory_need_bytes == need
    for searcher in ("autoddl", "exact"):
        planned = model.plan(searcher, exact_time_budget_s=2.0)
        choice = list(planned.choice)
        total, memory, fits = evaluate(graph, choice)
        assert memory == _memory(graph, choice) <= limit, (key, searcher)
        assert fits and total > 0, (key, searcher)


@pytest.mark.parametrize("key", sorted(GRAPHS))
def test_no_plan_fits_names_the_smallest_need(key):
    build, mesh = GRAPHS[key]
    program, _ = build()
    need = _smallest_need(_C.build_cost_model(program, mesh, CLUSTER, memory_limit=-1)
                          .cost_graph())
    with pytest.raises((ValueError, RuntimeError)) as error:
        _C.build_cost_model(program, mesh, CLUSTER, memory_limit=need - 1)
    message = str(error.value)
    assert "needs" in message or "need" in message, message
    # The smallest need appears in bytes or in the formatted unit.
    numbers = [float(x) for x in re.findall(r"[0-9]+(?:\.[0-9]+)?", message)]
    assert need in numbers or any(abs(x - need / 2**k) <= 0.05 * need / 2**k + 0.05
                                  for x in numbers for k in (10, 20, 30)), message
