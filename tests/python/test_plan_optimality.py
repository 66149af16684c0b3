"""A plan states its distance to the optimum (plan(optimality_cap_s=...)):
exact runs from the plan within the cap; stats['optimality'], the report's
text and JSON give the gap to the proven optimum, or, unproved, at most the
gap to the named lower bound. Oracles: the optimum exact proves with a
larger table cap (itself cross-checked by HiGHS in test_ilp_crosscheck.py),
and totals re-priced by bench/ilp_model.evaluate."""
from __future__ import annotations

import json
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
from ilp_model import evaluate  # noqa: E402
from search_models import build_program  # noqa: E402

import oneflow_lite as flow  # noqa: E402
from oneflow_lite import _C  # noqa: E402


def _close(a, b):
    return np.allclose(a, b, rtol=1e-9, atol=0)


def test_a_preset_plan_states_its_proven_gap():
    program, _ = build_program("mlp", layers=3, batch=512, hidden=2048)
    model = _C.build_cost_model(program, [4], "h100_8gpu")
    optimum = model.plan("exact")
    assert optimum.stats["exact_proved"]
    dp = model.plan("data_parallel", optimality_cap_s=5.0)
    o = dp.stats["optimality"]
    assert o["proved"] and o["cap_s"] == 5.0 and o["bound"] == "elimination"
    assert _close(o["bound_s"], optimum.predicted_step_s)
    total = evaluate(model.cost_graph(), dp.choice)[0]
    assert total > optimum.predicted_step_s  # data parallel is not optimal here
    assert _close(o["gap"], total / optimum.predicted_step_s - 1)
    assert "above the proven optimum" in o["text"] and "cap 5 s" in o["text"]
    assert o["text"] in dp.report()
    assert json.loads(dp.report_json())["optimality"]["gap"] == pytest.approx(o["gap"], rel=1e-12)
    assert model.plan("data_parallel").stats["optimality"] is None  # not asked for
    assert json.loads(model.plan("data_parallel").report_json())["optimality"] is None


def test_an_unproved_plan_states_a_named_bound_below_the_optimum():
    program, _ = build_program("gpt", layers=1, batch=8, hidden=256, heads=4, seq=128,
                               vocab=1024)
    model = _C.build_cost_model(program, [2, 2], "h100_8gpu")
    # Tables capped at 2^22 entries (exact's default before 2^24): no proof.
    planned = model.plan("autoddl", optimality_cap_s=1.0, exact_max_table_entries=1 << 22)
    o = planned.stats["optimality"]
    assert not o["proved"]
    assert o["bound"].startswith(("branch-and-bound root bound", "Lagrangian bound on memory",
                                  "elimination without the memory limit")), o["bound"]
    optimum = model.plan("exact", exact_max_table_entries=1 << 24)
    assert optimum.stats["exact_proved"]
    assert o["bound_s"] <= optimum.predicted_step_s <= o["best_s"] <= planned.predicted_step_s
    assert _close(o["gap"], planned.predicted_step_s / o["bound_s"] - 1)
    assert f"({o['bound']})" in o["text"] and "not proved" in o["text"]
    assert "cap 1 s" in o["text"] and o["text"] in planned.report()


def test_exact_states_its_own_and_bad_caps_are_refused():
    program, _ = build_program("mlp", layers=2, batch=64, hidden=256)
    model = _C.build_cost_model(program, [2], "h100_8gpu")
    o = model.plan("exact").stats["optimality"]
    assert o["proved"] and o["gap"] == 0 and o["cap_s"] == 0 and "no time cap" in o["text"]
    for bad in (0.0, -1.0, float("nan")):
        with pytest.raises(ValueError, match="optimality_cap_s"):
            model.plan("autoddl", optimality_cap_s=bad)
    with pytest.raises(ValueError, match="optimality_cap_s=0 must be > 0"):
        flow.nn.Graph().config.auto_parallel(placement=flow.placement("cpu", [0, 1]),
                                             optimality_cap_s=0)
