"""The typed strategy artifacts (_C.Placement, _C.Strategy, _C.PlanSpec,
_C.compile): a strategy written by hand is parsed in C++ and names a bad
layout; its views are read-only; save and load give it back; a file saved
by PlannedStrategy.save before strategies were typed (data/
legacy_saved_strategy.json, the older JSON form, for fuzz/python/
tiny_program.py on 2 ranks) still loads, with the layouts it holds, and
runs as they say; compile gives the session and the planned strategy of a
search at once, the same as planning and building the session apart."""
from __future__ import annotations

import json
import os
import sys

import numpy as np
import pytest

from oneflow_lite import _C
from oneflow_lite.graph_builder import GraphBuilder

DATA = os.path.join(os.path.dirname(__file__), "data")
sys.path.insert(0, os.path.dirname(__file__))
from compile_fixtures import plan_digest  # noqa: E402  the Plan's canonical digest


def two_linears():
    b = GraphBuilder()
    x = b.input("x", [4, 2])
    rng = np.random.default_rng(0)
    w1 = rng.standard_normal((2, 2)).astype(np.float32)
    w2 = rng.standard_normal((2, 2)).astype(np.float32)
    b.variable("w1", w1)
    b.variable("w2", w2)
    y = b.matmul(b.matmul(x, "w1", name="mm1"), "w2", name="mm2")
    return b, w1 @ w2, y


def test_placement_is_built_once_with_its_device_type():
    p = _C.Placement("cpu", [0, 1, 2, 3], [2, 2])
    assert (p.device_type, p.ranks, p.hierarchy) == ("cpu", [0, 1, 2, 3], [2, 2])
    assert p == _C.Placement("cpu", [0, 1, 2, 3], [2, 2])
    assert "hierarchy (2, 2)" in str(p)
    with pytest.raises(ValueError, match="gpu"):
        _C.Placement("gpu", [0, 1])
    with pytest.raises(ValueError):
        _C.Placement("cpu", [0, 0])


def test_a_hand_written_strategy_is_parsed_and_read_only():
    s = _C.Strategy({"x": "(S(0))"}, {"mm1": "(S(0)), (B) -> (S(0))"})
    assert s.placement is None
    assert dict(s.sources) == {"x": "(S(0))"}
    with pytest.raises(TypeError):
        s.sources["x"] = "(B)"
    with pytest.raises(ValueError, match="op 'mm1'"):
        _C.Strategy({}, {"mm1": "nonsense"})
    with pytest.raises(ValueError, match="tensor 'x'"):
        _C.Strategy({"x": "(Q)"})
    other = _C.Strategy({"x": "(B)"}, {"mm1": "(S(0)), (B) -> (S(0))"})
    assert s.diff(other) == "x: (S(0)) => (B)\n"
    assert s.diff(s) == "" and s == _C.Strategy({"x": "(S(0))"}, {"mm1": "(S(0)), (B) -> (S(0))"})


def test_planned_strategy_saves_and_loads_typed(tmp_path):
    b, _, _ = two_linears()
    planned = _C.plan(b.program, _C.Placement("cpu", [0, 1], [2]), "h100_8gpu", "autoddl")
    assert planned.strategy.placement == _C.Placement("cpu", [0, 1], [2])
    path = str(tmp_path / "s.json")
    planned.save(path)
    saved = json.load(open(path))  # protobuf JSON, written in C++
    assert saved["searcher"] == "autoddl" and saved["strategy"]["placement"]["ranks"] == ["0", "1"]
    loaded = _C.load_strategy(path)
    assert loaded == planned.strategy and _C.Strategy.load(path) == loaded
    loaded.save(path)
    assert _C.load_strategy(path) == loaded


def test_a_file_of_the_older_form_still_loads():
    path = os.path.join(DATA, "legacy_saved_strategy.json")
    with open(path, encoding="utf-8") as f:
        old = json.load(f)
    s = _C.load_strategy(path)
    assert s.placement is None  # the older form's placement was text: the session's
    assert dict(s.sources) == old["sources"] and dict(s.signatures) == old["signatures"]
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "fuzz", "python"))
    from tiny_program import tiny_program

    program, loss = tiny_program()
    loaded = _C.DistributedSession(program, [0, 1], [2], s, [loss], num_threads=1)
    by_text = _C.DistributedSession(program, [0, 1], [2],
                                    _C.Strategy(old["sources"], old["signatures"]), [loss],
                                    num_threads=1)
    assert plan_digest(loaded.plan_bytes()) == plan_digest(by_text.plan_bytes())
    assert loaded.strategy() == by_text.strategy()


def test_spec_files_and_bad_specs_are_named(tmp_path):
    path = tmp_path / "s.json"
    path.write_text('{"kind": "random", "seed": 3}')
    with pytest.raises(ValueError, match="holds kind 'random', not a strategy"):
        _C.load_strategy(str(path))
    with pytest.raises(ValueError, match="stages >= 1 and seed >= 0, got stages=-3 seed=1"):
        _C.PlanSpec.random(1, -3)
    b, _, y = two_linears()
    with pytest.raises(TypeError, match="must be a _C.Strategy, a _C.PlanSpec or None"):
        _C.DistributedSession(b.program, [0, 1], [2], {"kind": "deduce"}, [y])


def test_compile_searches_and_builds_the_session_in_one_call():
    b, want, y = two_linears()
    placement = _C.Placement("cpu", [0, 1], [2])
    c = _C.compile(b.program, placement, _C.PlanSpec.search("h100_8gpu", "autoddl"), [y],
                   num_threads=1)
    alone = _C.plan(b.program, [2], "h100_8gpu", "autoddl")
    assert c.strategy == alone.strategy == c.planned.strategy
    assert c.planned.predicted_step_s == alone.predicted_step_s
    by_hand = _C.DistributedSession(b.program, [0, 1], [2], alone.strategy, [y], num_threads=1)
    assert plan_digest(c.plan_bytes) == plan_digest(by_hand.plan_bytes())
    x = np.arange(8, dtype=np.float32).reshape(4, 2) / 8
    (out,) = c.session.run({"x": x}, [y])
    np.testing.assert_allclose(out, x @ want, rtol=1e-5, atol=1e-6)
    given = _C.compile(b.program, placement, _C.PlanSpec.given(alone.strategy), [y],
                       num_threads=1)
    assert given.planned is None and plan_digest(given.plan_bytes) == plan_digest(c.plan_bytes)
