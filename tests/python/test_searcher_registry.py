"""Searchers behind one interface (graph/searcher.h): a toy searcher
registered from this file plans from Python (_C.register_searcher), and the
registry lists it. Hand-worked values on two linears x [4, 2] @ w1 [2, 2] @
w2 [2, 2], forward only, on 2 ranks of a test cluster (1 GFLOP/s, 1 GB/s,
latency 0), as in test_planning.py: the "replicate" toy takes every node's
all-B candidate, so each matmul does its 2*4*2*2 = 32 FLOPs whole on every
rank (32 ns each) and x is fed whole: its 32 bytes at 1 GB/s (32 ns) plus
the all-gather from its arrival S(0), 16 bytes per rank (16 ns); 112 ns in
all, and no bytes sent after feeding. The "cheapest compute" toy's total is
summed by this file from the cost graph it was given."""
from __future__ import annotations

import pytest

from oneflow_lite import _C
from test_planning import CLUSTER, NS, two_linears


@pytest.fixture()
def cluster_path(tmp_path):
    path = tmp_path / "test1d.pbtxt"
    path.write_text(CLUSTER)
    return str(path)


def replicate(problem):
    """Every node's first allowed candidate with no S and no P in its layout."""
    choice = []
    for node in problem["nodes"]:
        allowed = node["allowed"] or range(len(node["layouts"]))
        choice.append(next(c for c in allowed
                           if "S(" not in node["layouts"][c] and "P" not in node["layouts"][c]))
    return choice


@pytest.fixture()
def toy():
    """Registers toy searchers under their names for one test, then removes them."""
    names = []

    def register(name, fn, description="a toy searcher"):
        _C.register_searcher(name, fn, description)
        names.append(name)

    yield register
    for name in names:
        _C.unregister_searcher(name)


def test_a_toy_searcher_plans_from_python(cluster_path, toy):
    toy("toy_replicate", replicate, "replicates every tensor")
    b, _, _ = two_linears()
    planned = _C.plan(b.program, [2], cluster_path, searcher="toy_replicate")
    assert planned.searcher == "toy_replicate"
    assert planned.strategy.sources == {"x": "(B)", "w1": "(B)", "w2": "(B)"}
    assert planned.strategy.signatures == {"mm1": "(B), (B) -> (B)",
                                              "mm2": "(B), (B) -> (B)"}
    assert planned.predicted_step_s == pytest.approx(112 * NS, rel=1e-9)
    # Feeding is the input node's own cost; no edge boxes anything.
    assert planned.stats["compute_s"] == pytest.approx(112 * NS, rel=1e-9)
    assert planned.stats["communication_s"] == 0
    # A model built once serves it too.
    model = _C.build_cost_model(b.program, [2], cluster_path)
    assert model.plan("toy_replicate").predicted_step_s == pytest.approx(112 * NS, rel=1e-9)


def test_the_problem_carries_pins_and_the_total_adds_up(cluster_path, toy):
    seen = []

    def cheapest_compute(problem):
        seen.append(problem)
        choice = []
        for node in problem["nodes"]:
            allowed = node["allowed"] or range(len(node["layouts"]))
            choice.append(min(allowed, key=lambda c: (node["compute_s"][c], c)))
        return choice

    toy("toy_cheapest", cheapest_compute)
    b, _, _ = two_linears()
    planned = _C.plan(b.program, [2], cluster_path, searcher="toy_cheapest",
                      pinned={"w1": "(S(1))"})
    problem = seen[0]
    assert problem["searcher"] == "toy_cheapest"
    nodes = {n["name"]: n for n in problem["nodes"]}
    assert [nodes["w1"]["layouts"][c] for c in nodes["w1"]["allowed"]] == ["(S(1))"]
    assert nodes["x"]["kind"] == "input" and nodes["mm1"]["kind"] == "op"
    assert nodes["x"]["allowed"] == []
    choice = cheapest_compute(problem)
    total = sum(n["compute_s"][c] for n, c in zip(problem["nodes"], choice))
    total += sum(e["seconds"][choice[e["from"]]][choice[e["to"]]] for e in problem["edges"])
    assert planned.predicted_step_s == pytest.approx(total, rel=1e-12)
    assert planned.strategy.sources["w1"] == "(S(1))"
    for name, node in nodes.items():
        layout = node["layouts"][choice[list(nodes).index(name)]]
        got = planned.strategy.sources.get(name) or planned.strategy.signatures[name]
        assert got == layout


def test_the_registry_lists_what_is_registered(cluster_path, toy):
    built_in = list(_C.searchers())
    assert built_in[:2] == ["autoddl", "exact"] and "manual" in built_in
    toy("toy_listed", replicate, "a listed toy")
    assert list(_C.searchers()) == built_in + ["toy_listed"]
    info = _C.searcher_info()
    assert list(info) == built_in + ["toy_listed"]
    assert info["toy_listed"] == "a listed toy"
    assert all(info[name] for name in built_in)
    b, _, _ = two_linears()
    with pytest.raises(ValueError, match="unknown searcher 'nope'; valid: autoddl, exact, .*"
                                         "manual, toy_listed"):
        _C.plan(b.program, [2], cluster_path, searcher="nope")


def test_bad_toys_are_named(cluster_path, toy):
    b, _, _ = two_linears()
    toy("toy_short", lambda problem: [0])
    with pytest.raises(ValueError, match="searcher 'toy_short' chose 1 candidates for 5 cost nodes"):
        _C.plan(b.program, [2], cluster_path, searcher="toy_short")
    toy("toy_range", lambda problem: [99] * len(problem["nodes"]))
    with pytest.raises(ValueError, match=r"searcher 'toy_range': node 0 \('x'\) has no "
                                         r"candidate 99 \(it has 3\)"):
        _C.plan(b.program, [2], cluster_path, searcher="toy_range")

    def breaks_pin(problem):  # every node's first candidate the pins do not allow, else 0
        return [next((c for c in range(len(n["layouts"])) if c not in n["allowed"]), 0)
                if n["allowed"] else 0 for n in problem["nodes"]]

    toy("toy_pin", breaks_pin)
    with pytest.raises(ValueError, match=r"searcher 'toy_pin': node 0 \('x'\) candidate \d "
                                         r"\(S\(\d\)\) breaks a pin"):
        _C.plan(b.program, [2], cluster_path, searcher="toy_pin", pinned={"x": "(B)"})

    def raises(problem):
        raise RuntimeError("toy gave up")

    toy("toy_raises", raises)
    with pytest.raises(ValueError, match="searcher 'toy_raises' raised RuntimeError: toy gave up"):
        _C.plan(b.program, [2], cluster_path, searcher="toy_raises")
    toy("toy_text", lambda problem: "abc")
    with pytest.raises(ValueError, match="searcher 'toy_text' returned no sequence"):
        _C.plan(b.program, [2], cluster_path, searcher="toy_text")


def test_registration_errors():
    with pytest.raises(ValueError, match="'autoddl' is already registered"):
        _C.register_searcher("autoddl", replicate)
    with pytest.raises(ValueError, match="'exact' is built in"):
        _C.unregister_searcher("exact")
    with pytest.raises(ValueError, match="'nope' is not registered"):
        _C.unregister_searcher("nope")
