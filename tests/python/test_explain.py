"""The per-task join of a predicted step with the runtime's trace
(python/oneflow_lite/explain.py, oneflow_lite/api/step_simulation.h) on a
real run of a small plan: a 1-layer GPT on 2 virtual devices (data parallel)
and on 1 device. Every task of the plan is found in the trace on every rank
with the act count the simulation predicts; the measured times summed per
task and per category equal the trace's own sums (read from the JSON here);
a replay of one device's compute thread with its measured times (boxing
free) is exactly the sum of its acts; and the CLI prints the breakdown. Nothing here asserts a
timing figure of the machine."""
from __future__ import annotations

import json
import os
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import fidelity_runner  # noqa: E402

from oneflow_lite import _C, explain  # noqa: E402

CLUSTER = "h100_8gpu"  # any Cluster serves the join; times are not asserted


def _run(tmp_path, hierarchy, searcher, buckets=1 << 20):
    g = fidelity_runner.build("gpt_tiny")
    planned = _C.plan(g.program, hierarchy, CLUSTER, searcher)
    ranks = list(range(int(np.prod(hierarchy))))
    sim = planned.simulate([g.loss], num_slots=1, gradient_bucket_bytes=buckets)
    measured = str(tmp_path / "measured.json")
    session = _C.DistributedSession(g.program, ranks, hierarchy, planned.strategy, [g.loss],
                                    num_threads=1, num_slots=1, trace_path=measured,
                                    gradient_bucket_bytes=buckets)
    session.run(fidelity_runner.feeds("gpt_tiny", g, 0), [g.loss])
    predicted = str(tmp_path / "predicted.json")
    explain.write_prediction(sim, predicted)
    with open(measured) as f:
        events = [e for e in json.load(f)["traceEvents"] if e["ph"] == "X"]
    return sim, predicted, measured, events


def test_every_task_found_and_times_summed(tmp_path):
    sim, predicted, measured, events = _run(tmp_path, [2], "data_parallel")
    prediction = explain.load_prediction(predicted)
    joined = explain.join(prediction, explain.load_events([measured]))
    assert joined["ranks"] == [0, 1]
    assert joined["missing"] == [] and joined["extra"] == []
    tasks = sim["tasks"]
    assert len(joined["rows"]) == len(tasks) == len({e["args"]["task"] for e in events})
    # every task of the plan acted once (one iteration) on its rank, in both
    for row, task in zip(joined["rows"], tasks):
        assert row["measured_acts"] == row["predicted_acts"] == 1, row
        assert row["rank"] == task["rank"]
    # the runtime's names are the simulation's
    names = {e["args"]["task"]: e["name"] for e in events}
    assert all(names[t["task"]] == t["name"] for t in tasks)
    # per task, the trace's own durations
    by_task = {}
    for e in events:
        by_task[e["args"]["task"]] = by_task.get(e["args"]["task"], 0.0) + e["dur"] * 1e-6
    for row in joined["rows"]:
        assert np.isclose(row["measured_s"], by_task[row["task"]], rtol=1e-12, atol=1e-12)
    total = sum(e["dur"] for e in events) * 1e-6
    step = max(e["ts"] + e["dur"] for e in events) * 1e-6
    assert np.isclose(joined["measured_step_s"], step, rtol=1e-12, atol=1e-12)
    b = explain.breakdown(prediction, joined)
    assert np.isclose(sum(c["measured_s"] for c in b["categories"]), total, rtol=1e-9, atol=1e-12)
    predicted_busy = sum(end - start for _t, _a, start, end, _w in sim["acts"])
    assert np.isclose(sum(c["predicted_s"] for c in b["categories"]), predicted_busy,
                      rtol=1e-9, atol=1e-12)
    # op types and boxing kinds are categories; data parallel all-reduces its gradients
    cats = {c["category"] for c in b["categories"]}
    assert "matmul" in cats and "boxing all_reduce" in cats
    assert b["predicted_step_s"] == sim["step_s"] and b["missing_tasks"] == 0
    # the predicted trace opens like the measured one: an X event per act, named alike
    with open(predicted) as f:
        trace = json.load(f)
    xs = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert len(xs) == len(sim["acts"]) == len(events)
    assert {e["name"] for e in xs} == {e["name"] for e in events}


def test_replay_of_one_thread_is_the_sum_of_its_acts(tmp_path):
    # one device: its compute thread (stream 0) and its boxing thread (stream 1)
    sim, predicted, measured, events = _run(tmp_path, [1], "data_parallel")
    assert {(e["pid"], e["tid"]) for e in events} <= {(0, 0), (0, 1)}
    seconds = [0.0] * len(sim["tasks"])
    for e in events:
        if e["tid"] == 0:
            seconds[e["args"]["task"]] += e["dur"] * 1e-6
    compute = [e for e in events if e["tid"] == 0]
    # Boxing free and instant messages: the compute thread never idles, so
    # the replayed step is the sum of its measured acts.
    replay = _C.simulate_plan(sim["plan"], seconds)
    assert np.isclose(replay["step_s"], sum(seconds), rtol=1e-12, atol=1e-12)
    # with 2 us of thread time per act: that much more per compute act (a
    # boxing act's 2 us on the other thread overlaps, but the last one's)
    replay = _C.simulate_plan(sim["plan"], seconds, act_overhead_s=2e-6)
    assert sum(seconds) + 2e-6 * len(compute) <= replay["step_s"] + 1e-12
    assert replay["step_s"] <= sum(seconds) + 2e-6 * len(events) + 1e-12


def test_cli_prints_the_breakdown(tmp_path, capsys):
    _sim, predicted, measured, _events = _run(tmp_path, [2], "data_parallel")
    out = str(tmp_path / "b.json")
    assert explain.main(["--predicted", predicted, "--measured", measured, "--json", out]) == 0
    text = capsys.readouterr().out
    assert "step: predicted" in text and "critical path (predicted" in text
    assert "boxing all_reduce" in text
    with open(out) as f:
        assert json.load(f)["categories"]
    # a measured trace given as the prediction: a clear error, exit 2
    assert explain.main(["--predicted", measured, "--measured", measured]) == 2
    assert "no predicted trace" in capsys.readouterr().err


def test_simulate_plan_rejects_bad_input():
    with pytest.raises(ValueError, match="no serialized Plan"):
        _C.simulate_plan(b"\xff\xff", [])


def test_memory_bandwidth_comes_from_the_cluster(tmp_path):
    g = fidelity_runner.build("gpt_tiny")
    # a preset without a kernel table: its float32 FLOP/s over 20 FLOP per byte
    sim = _C.plan(g.program, [2], "h100_8gpu", "data_parallel").simulate()
    assert sim["options"]["memory_bandwidth"] == pytest.approx(67e12 / 20, rel=1e-12)
    # a calibrated cluster: relu's bandwidth at its largest measured size (8 bytes per
    # element: read and written), read here from the cluster's text
    text = ('name: "t" levels { name: "l" size: 2 bandwidth_gbps: 1 latency_us: 1 }\n'
            'device { name: "d" flops { key: "float32" value: 1e11 } memory_bytes: 1000000000\n'
            '  compute { op_type: "relu" dtype: "float32" flops: 1000 seconds: 1e-6 }\n'
            '  compute { op_type: "relu" dtype: "float32" flops: 1000000 seconds: 2e-4 } }\n')
    path = tmp_path / "c.pbtxt"
    path.write_text(text)
    sim = _C.plan(g.program, [2], str(path), "data_parallel").simulate()
    assert sim["options"]["memory_bandwidth"] == pytest.approx(8 * 1e6 / 2e-4, rel=1e-12)
    # a copy kernel is priced by it: 2 x its output bytes, plus 1 us
    t = next(t for t in sim["tasks"] if t["category"] == "transpose")
    assert t["seconds"] == pytest.approx(t["bytes"] / 4e10 + 1e-6, rel=1e-9)
