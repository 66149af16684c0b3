"""The search's final choice by the simulated step (oneflow_lite/api/
simulated_choice.h, ``_C.plan_by_simulation``): autoddl's answer and the
presets planned on one cost model, each simulated as the session would run
it, the shortest simulated step chosen. Checked against the same plans made
one by one with ``_C.plan`` and ``PlannedStrategy.simulate``."""
from __future__ import annotations

import json
import os
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import fidelity_runner  # noqa: E402

from oneflow_lite import _C  # noqa: E402

CLUSTER = "h100_8gpu"


def test_choice_is_the_shortest_simulated_step():
    g = fidelity_runner.build("gpt_tiny")
    planned, rows, text = _C.plan_by_simulation(g.program, [2], CLUSTER, fetches=[g.loss],
                                                num_slots=1)
    names = [r["name"] for r in rows]
    assert names == ["autoddl", "data_parallel", "megatron", "2d", "zero", "vgg"]
    skipped = {r["name"]: r["skipped"] for r in rows if r["skipped"]}
    assert set(skipped) == {"2d", "vgg"}  # a 1-D mesh; no conv2d
    assert "2-D mesh" in skipped["2d"] and "does not apply" in text
    for r in rows:
        if r["skipped"]:
            continue
        # each row's figures are those of the plan made on its own
        alone = _C.plan(g.program, [2], CLUSTER, r["name"])
        assert np.isclose(r["additive_s"], alone.predicted_step_s, rtol=1e-9, atol=0)
        sim = alone.simulate([g.loss], num_slots=1)
        assert np.isclose(r["simulated_s"], sim["step_s"], rtol=1e-9, atol=0)
        assert f"{r['name']}: additive" in text
    planned_rows = [r for r in rows if not r["skipped"]]
    best = min(r["simulated_s"] for r in planned_rows)
    chosen = [r for r in rows if r["chosen"]]
    assert len(chosen) == 1 and chosen[0]["simulated_s"] == best
    assert planned.searcher == chosen[0]["name"]
    assert np.isclose(planned.simulate([g.loss], num_slots=1)["step_s"], best, rtol=1e-9, atol=0)


def test_searcher_errors_are_raised():
    g = fidelity_runner.build("gpt_tiny")
    with pytest.raises(ValueError, match="no_such_searcher"):
        _C.plan_by_simulation(g.program, [2], CLUSTER, searcher="no_such_searcher")


def test_report_time_column_is_the_simulation():
    g = fidelity_runner.build("gpt_tiny")
    planned = _C.plan(g.program, [2], CLUSTER, "data_parallel")
    sim = planned.simulate()  # the report's session: its defaults
    report = json.loads(planned.report_json())
    assert report["simulated_step_s"] == pytest.approx(sim["step_s"], rel=1e-12)
    # the additive figure stays beside it
    assert report["predicted_step_s"] == pytest.approx(planned.predicted_step_s, rel=1e-12)
    text = planned.report(full=True)
    assert "simulated step" in text and "predicted step" in text
    header = next(line for line in text.splitlines() if "signature" in line)
    assert header.split()[0] == "simulated"
    # an op's simulated seconds: its compute acts on its busiest rank, summed here by hand
    tasks = {t["task"]: t for t in sim["tasks"]}
    per_rank = {}
    for task, _act, start, end, _wait in sim["acts"]:
        t = tasks[task]
        if t["kind"] == "COMPUTE" and t["category"] == "sparse_softmax_cross_entropy":
            per_rank[t["rank"]] = per_rank.get(t["rank"], 0.0) + end - start
    row = next(line for line in text.splitlines()
               if " sparse_softmax_cross_entropy " in line and "grad" not in line)
    shown = row.split()[0:2]
    value = float(shown[0]) * {"s": 1, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}[shown[1]]
    assert value == pytest.approx(max(per_rank.values()), rel=5e-3)
