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


def mlp_graph(flow, placement, **parallel):
    """An nn.Graph training a float64 MLP (no dropout) with SGD on `placement`."""
    from oneflow_lite.models import MLPConfig
    nn = flow.nn
    flow.manual_seed(3)
    model = flow.models.create("mlp", MLPConfig(in_features=8, hidden=(16,), num_classes=4,
                                                dropout=0.0), dtype=flow.float64)
    opt = flow.optim.SGD(model.named_parameters(), lr=0.05)

    class TrainGraph(nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model
            self.add_optimizer(opt)

        def build(self, x, y):
            loss = nn.functional.cross_entropy(self.model(x), y)
            loss.backward()
            return loss

    graph = TrainGraph()
    graph.config.auto_parallel(cluster=CLUSTER, placement=placement, **parallel)
    return model, graph


def test_nn_graph_compiles_the_simulated_choice():
    """auto_parallel(choose_by_simulation=True): nn.Graph's one compile call
    runs the plan _C.plan_by_simulation (checked above) chooses for the
    graph's program, and its first loss is eager's forward of the same
    parameters."""
    import oneflow_lite as flow
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 8))
    y = rng.integers(0, 4, size=8)
    model, graph = mlp_graph(flow, flow.placement("cpu", [0, 1]), choose_by_simulation=True)
    eager = float(flow.nn.functional.cross_entropy(model(flow.tensor(x)), flow.tensor(y)).numpy())
    loss = float(graph(flow.tensor(x), flow.tensor(y)).numpy())
    np.testing.assert_allclose(loss, eager, rtol=1e-12, atol=1e-12)
    c = graph.compiled
    planned, rows, _ = _C.plan_by_simulation(c.program, [2], CLUSTER, fetches=list(c.outputs))
    assert c.planned.searcher == planned.searcher
    assert str(c.strategy) == str(planned.strategy)
    assert [r["name"] for r in rows][0] == "autoddl"


def test_choose_by_simulation_bad_values_name_them_and_change_nothing():
    import oneflow_lite as flow
    _, graph = mlp_graph(flow, flow.placement("cpu", [0, 1]))
    before = graph.config.parallel
    with pytest.raises(TypeError, match="choose_by_simulation"):
        graph.config.auto_parallel(cluster=CLUSTER, placement=flow.placement("cpu", [0, 1]),
                                   choose_by_simulation="yes")
    with pytest.raises(ValueError, match="no_such_preset"):
        graph.config.auto_parallel(cluster=CLUSTER, placement=flow.placement("cpu", [0, 1]),
                                   choose_by_simulation=["megatron", "no_such_preset"])
    assert graph.config.parallel is before
    with pytest.raises(ValueError, match="no_such_preset"):
        _C.PlanSpec.search(CLUSTER, simulate_candidates=["no_such_preset"])
