"""Planning from Python (_C.plan and friends) on two linears, x [4, 2] @ w1
[2, 2] @ w2 [2, 2], forward only, on 2 ranks of a test cluster (1 GFLOP/s,
1 GB/s, latency 0), against values worked out by hand: each matmul does
2*4*2*2 = 32 FLOPs, 16 on the busiest rank when split in two: 16 ns; an
all-gather of the 4x2 float32 activation sends 16 bytes per rank: 16 ns;
feeding x split in two costs its 16-byte slice at 1 GB/s: 16 ns.
A planned strategy runs in DistributedSession and matches numpy."""
from __future__ import annotations

import json
import subprocess
import sys
import os

import numpy as np
import pytest

from oneflow_lite import _C
from oneflow_lite.graph_builder import GraphBuilder

CLUSTER = """name: "test1d"
levels { name: "link" size: 0 bandwidth_gbps: 1.0 latency_us: 0 }
device { name: "d" flops { key: "float32" value: 1e9 } memory_bytes: 1073741824 }
"""
NS = 1e-9


@pytest.fixture()
def cluster_path(tmp_path):
    path = tmp_path / "test1d.pbtxt"
    path.write_text(CLUSTER)
    return str(path)


def two_linears(declared_only=False):
    b = GraphBuilder()
    x = b.input("x", [4, 2])
    rng = np.random.default_rng(0)
    weights = {"w1": rng.standard_normal((2, 2)).astype(np.float32),
               "w2": rng.standard_normal((2, 2)).astype(np.float32)}
    for name, value in weights.items():
        if declared_only:
            b.program.add_variable_desc(name, [2, 2], "float32", True)
        else:
            b.variable(name, value)
    h = b.matmul(x, "w1", name="mm1")
    y = b.matmul(h, "w2", name="mm2")
    return b, weights, y


def test_data_parallel_costs_two_half_matmuls(cluster_path):
    b, _, _ = two_linears()
    planned = _C.plan(b.program, [2], cluster_path, "manual", pinned={"x": "S(0)"})
    assert planned.predicted_step_s == pytest.approx(48 * NS, rel=1e-9)
    assert planned.predicted_bytes == {0: 0, 1: 0}
    assert planned.strategy.signatures["mm2"] == "(S(0)), (B) -> (S(0))"
    stats = planned.stats
    assert stats["ops"] == 2 and stats["searcher"] == "manual"
    assert stats["predicted_step_s"] == planned.predicted_step_s


def test_a_pinned_column_split_gathers_the_weight(cluster_path):
    b, _, _ = two_linears()
    planned = _C.plan(b.program, [2], cluster_path, "autoddl",
                      pinned={"x": "S(0)", "w2": "S(1)"})
    # Gathering w2 (2x2 floats: 8 bytes per rank, 8 ns) beats gathering the
    # 4x2 activation (16 bytes): 16 (feed) + 16 + 16 + 8 ns, mm2 data parallel.
    assert planned.predicted_step_s == pytest.approx(56 * NS, rel=1e-9)
    assert planned.predicted_bytes == {0: 8, 1: 8}
    report = json.loads(planned.report_json())
    assert report["predicted_step_s"] == pytest.approx(56 * NS, rel=1e-9)
    (edge,) = report["edges"]
    assert edge["tensor"] == "w2" and edge["from"] == "(S(1))" and edge["to"] == "(B)"
    assert edge["bytes"] == 8 and [s["kind"] for s in edge["steps"]] == ["ALL_GATHER"]
    mm2 = next(op for op in report["ops"] if op["name"] == "mm2")
    # SPAA bound for m=4, k=2, n=2 on 2 ranks: 2 words = 8 bytes (1d case),
    # which this strategy meets.
    assert mm2["matmul"]["lower_bound_bytes"] == pytest.approx(8)
    assert mm2["matmul"]["bytes"] == 8
    text = planned.report(full=True)
    assert "predicted step 0.056 us" in text and "ALL_GATHER" in text
    dp = _C.plan(b.program, [2], cluster_path, "manual", pinned={"x": "S(0)"})
    diff = dp.diff(planned)
    assert diff.delta_s == pytest.approx(8 * NS, rel=1e-9)
    assert diff.num_changed_nodes() == 1 and diff.num_changed_edges() == 1
    assert "w2: (B)  =>  (S(1))" in diff.to_text()


def test_autoddl_finds_the_hand_worked_optimum(cluster_path):
    # Nothing beats 48 ns: each matmul needs 16 ns of compute on 2 ranks,
    # and x costs 16 ns to feed split (32 ns whole).
    b, _, _ = two_linears()
    planned = _C.plan(b.program, [2], cluster_path, "autoddl")
    assert planned.predicted_step_s == pytest.approx(48 * NS, rel=1e-9)
    exact = _C.plan(b.program, [2], cluster_path, "exact")
    assert exact.stats["exact_proved"]
    assert exact.predicted_step_s == pytest.approx(48 * NS, rel=1e-9)


def test_a_planned_strategy_runs_and_matches_numpy(cluster_path, tmp_path):
    b, weights, y = two_linears()
    planned = _C.plan(b.program, [2], cluster_path, "manual", pinned={"x": "S(0)", "w2": "S(1)"})
    path = str(tmp_path / "strategy.json")
    planned.save(path)
    loaded = _C.load_strategy(path)
    assert loaded.signatures == planned.strategy.signatures
    assert loaded.sources == planned.strategy.sources
    session = _C.DistributedSession(b.program, ranks=[0, 1], hierarchy=[2], strategy=loaded,
                                    fetches=[y], num_threads=1)
    x = np.arange(8, dtype=np.float32).reshape(4, 2) / 8
    (out,) = session.run({"x": x}, [y])
    np.testing.assert_allclose(out, x @ weights["w1"] @ weights["w2"], rtol=1e-5, atol=1e-6)


def test_bad_input_names_the_culprit(cluster_path, tmp_path):
    b, _, _ = two_linears()
    with pytest.raises(ValueError, match="nosuch"):
        _C.plan(b.program, [2], cluster_path, "nosuch")
    with pytest.raises(ValueError, match="no_such_cluster"):
        _C.plan(b.program, [2], "no_such_cluster")
    bad = tmp_path / "bad.pbtxt"
    bad.write_text("name: \"x\" levels { size: oops }")
    with pytest.raises(ValueError, match="bad.pbtxt"):
        _C.load_cluster(str(bad))
    with pytest.raises(ValueError, match="micro_batches=0"):
        _C.plan(b.program, [2], cluster_path, micro_batches=0)
    with pytest.raises(ValueError, match="w2"):
        _C.plan(b.program, [2], cluster_path, pinned={"w2": "S(7)"})
    with pytest.raises(ValueError):
        _C.preset_cluster("no_such_preset")


def test_infeasible_memory_gives_the_smallest_need(cluster_path):
    b, _, _ = two_linears()
    with pytest.raises(ValueError, match="needs"):
        _C.plan(b.program, [2], cluster_path, memory_limit=1)


def test_declared_only_variables_plan_but_do_not_run(cluster_path):
    b, _, y = two_linears(declared_only=True)
    planned = _C.plan(b.program, [2], cluster_path, "autoddl")
    assert planned.predicted_step_s == pytest.approx(48 * NS, rel=1e-9)
    with pytest.raises(Exception, match="w1"):
        _C.Session(b.program, 1)


def test_presets_load():
    names = _C.cluster_presets()
    assert "h100_8gpu" in names and "p100_nodes" in names
    h100 = _C.preset_cluster("h100_8gpu")
    assert h100.name == "h100_8gpu" and h100.flops("bfloat16") > h100.flops("float32")


def test_calibrate_writes_a_cluster_that_loads(tmp_path):
    out = tmp_path / "local.pbtxt"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    subprocess.run([sys.executable, "-m", "oneflow_lite.calibrate", "--out", str(out),
                    "--devices", "2", "--matmul-size", "16", "--allreduce-mb", "0.0625",
                    "--memcpy-mb", "0.0625", "--reps", "1", "--no-kernels"],
                   check=True, env=env,
                   capture_output=True)
    cluster = _C.load_cluster(str(out))
    assert "measured on this machine" in out.read_text()
    (level,) = cluster.levels()
    assert level["size"] == 2
    for value in (level["bandwidth_bytes_per_s"], level["latency_s"], cluster.flops("float32"),
                  cluster.memory_bytes):
        assert np.isfinite(value) and value > 0


def test_one_cost_model_serves_several_searchers(cluster_path):
    b, _, _ = two_linears()
    model = _C.build_cost_model(b.program, [2], cluster_path)
    assert model.num_nodes == 5  # x, w1, w2, mm1, mm2
    assert model.num_edges == 4
    for searcher in ("autoddl", "exact", "data_parallel"):
        planned = model.plan(searcher)
        assert planned.predicted_step_s == pytest.approx(48 * NS, rel=1e-9)
        assert planned.stats["seconds"] >= model.build_seconds
    with pytest.raises(ValueError, match="megatron_sources: no Transformer block weights"):
        model.plan("megatron_sources")
    # The rule-based megatron pairs the two matmuls: column, then row.
    signatures = model.plan("megatron").strategy.signatures
    assert sorted(signatures.values()) == ["(B), (S(1)) -> (S(1))", "(S(1)), (S(0)) -> (P)"]
