"""Calibration with kernel probes, through the Python API: the compute table
covers the op types of GPT and VGG training (forward, backward, updates),
is monotone in FLOPs, carries a contention factor, and plans price from it.
Timing asserts are sanity only (positive, finite)."""
import json

import numpy as np
import pytest

from oneflow_lite import _C, calibrate_probes


@pytest.fixture(scope="module")
def calibrated():
    probes = calibrate_probes.probes(scale=0.125, gpt_widths=(64, 128), vgg_widths=(4, 8))
    return _C.calibrate(devices=2, matmul_size=16, allreduce_bytes=1 << 16,
                        memcpy_bytes=1 << 16, reps=1, kernel_probes=probes,
                        contention_devices=2)


def test_the_table_covers_the_models_op_types(calibrated):
    cluster, figures = calibrated
    types = set(cluster.compute_table_op_types())
    assert figures["compute_entries"] > 0
    for op in ("matmul", "batch_matmul", "conv2d", "layer_norm", "softmax", "gelu", "relu",
               "sparse_softmax_cross_entropy"):
        assert op in types, (op, sorted(types))
    assert any(t.endswith("_grad") for t in types), sorted(types)
    assert any("adam" in t for t in types) and any("sgd" in t for t in types), sorted(types)


def test_the_table_is_monotone_and_positive(calibrated):
    cluster, _ = calibrated
    flops = np.logspace(3, 10, 15)
    for op in cluster.compute_table_op_types():
        seconds = [cluster.compute_seconds(op, "float32", f) for f in flops]
        assert all(np.isfinite(s) and s > 0 for s in seconds), (op, seconds)
        assert all(b >= a for a, b in zip(seconds, seconds[1:])), (op, seconds)
    assert cluster.compute_seconds("no_such_op", "float32", 1e6) is None


def test_contention_and_collectives_are_measured(calibrated):
    cluster, figures = calibrated
    ((devices, factor),) = figures["contention"]
    assert devices == 2 and np.isfinite(factor) and factor > 0
    assert cluster.contention(2) == pytest.approx(factor, rel=1e-12)
    assert cluster.contention(1) == 1.0
    text = figures["text"]
    for kind in ("all_reduce", "reduce_scatter", "all_gather", "all_to_all"):
        assert f"kind: \"{kind}\"" in text


def test_plans_price_from_the_table(calibrated, tmp_path):
    cluster, figures = calibrated
    path = tmp_path / "local.pbtxt"
    path.write_text(figures["text"])
    program = calibrate_probes.gpt_probe(64, batch=2, seq_len=8)
    planned = _C.plan(program, [2], str(path), "autoddl")
    report = json.loads(planned.report_json())
    assert report["compute_table"] is True
    assert planned.predicted_step_s > 0
    assert "measured kernel times" in planned.report()


def test_kernels_timed_at_a_plans_shapes_price_its_tasks(calibrated):
    from oneflow_lite import calibrate

    cluster, _ = calibrated
    program = calibrate_probes.gpt_probe(64, batch=2, seq_len=8)
    planned = _C.plan(program, [2], cluster, "megatron")
    fetches = []  # the training step: every op runs, whatever is fetched
    curve = planned.simulate(fetches, num_slots=1)
    shaped, figures = calibrate.shape_kernels(cluster, [curve["plan"]], reps=1)
    entries = figures["entries"]
    assert entries and not figures["skipped"], figures["skipped"]
    assert len({(op, shape) for op, shape, _, _ in entries}) == len(entries)  # one per kernel
    assert all(shape and f > 0 and s > 0 for _, shape, f, s in entries)
    sim = planned.simulate(fetches, num_slots=1, cluster=shaped)
    factor = shaped.contention(2)  # both ranks compute
    timed = {}
    for op, _, f, s in entries:
        timed.setdefault((op, f), []).append(s)
    priced = [t for t in sim["tasks"] if t["kind"] == "COMPUTE" and t["flops"] > 0]
    assert priced and all(t["exact"] for t in priced), [t for t in priced if not t["exact"]][:3]
    for t in priced:  # its own kernel's time x contention, not the curve's
        own = timed[(t["category"], t["flops"])]
        assert any(np.isclose(t["seconds"], s * factor, rtol=1e-9, atol=0) for s in own), t
    assert not any(t.get("exact") for t in curve["tasks"])
    with pytest.raises(ValueError, match="threads=0"):
        calibrate.shape_kernels(cluster, [curve["plan"]], threads=0)


def test_a_cache_model_adds_the_cold_inputs_bytes_over_memory_bandwidth(calibrated):
    """With a cache model a compute task with FLOPs costs its kernel's time
    plus its cold inputs' bytes over the model's read bandwidth (x the
    contention factor, as the kernel's time): with 1 byte of cache every
    input is cold, with 1 TiB none is, without a model nothing is added."""
    from oneflow_lite import calibrate

    cluster, _ = calibrated
    program = calibrate_probes.gpt_probe(64, batch=2, seq_len=8)
    planned = _C.plan(program, [2], cluster, "megatron")
    plan = planned.simulate([], num_slots=1)["plan"]
    shaped, _ = calibrate.shape_kernels(cluster, [plan], reps=1)
    assert shaped.cache_bytes == 0
    bandwidth, factor = 2e9, shaped.contention(2)  # both ranks compute

    def tasks(c):
        return [t for t in planned.simulate([], num_slots=1, cluster=c)["tasks"]
                if t["kind"] == "COMPUTE" and t["flops"] > 0]

    tiny = calibrate.with_cache_model(shaped, 1, bandwidth)
    assert tiny.cache_bytes == 1 and tiny.memory_read_bytes_per_s == bandwidth
    plain, cold = tasks(shaped), tasks(tiny)
    roomy = tasks(calibrate.with_cache_model(shaped, 2**40, bandwidth))
    assert plain and all(t["cold_bytes"] == 0 for t in plain + roomy)
    assert all(t["cold_bytes"] > 0 for t in cold)
    for p, c, r in zip(plain, cold, roomy):
        assert p["task"] == c["task"] == r["task"]
        assert np.isclose(c["seconds"], p["seconds"] + c["cold_bytes"] / bandwidth * factor,
                          rtol=1e-9, atol=1e-15), (p, c)
        assert np.isclose(r["seconds"], p["seconds"], rtol=1e-12, atol=0)
    host = calibrate.with_cache_model(shaped)  # this host's, measured
    assert host.cache_bytes > 0 and host.memory_read_bytes_per_s > 1e8
    for bad in ({"cache_bytes": 0}, {"memory_read_bytes_per_s": -1.0}):
        with pytest.raises(ValueError, match="needs .* > 0"):
            calibrate.with_cache_model(shaped, **bad)


def test_the_command_line_adds_a_plans_kernels_to_a_cluster_file(calibrated, tmp_path):
    from oneflow_lite import calibrate

    cluster, figures = calibrated
    base, plan, out = tmp_path / "base.pbtxt", tmp_path / "p.bin", tmp_path / "shaped.pbtxt"
    base.write_text(figures["text"])
    program = calibrate_probes.gpt_probe(64, batch=2, seq_len=8)
    plan.write_bytes(_C.plan(program, [2], cluster, "data_parallel").simulate([])["plan"])
    assert calibrate.main(["--out", str(out), "--shapes-of", str(base), "--plan", str(plan),
                           "--reps", "1", "--cache-model"]) == 0
    shaped = _C.load_cluster(str(out))
    sim = _C.plan(program, [2], cluster, "data_parallel").simulate([], cluster=shaped)
    assert all(t["exact"] for t in sim["tasks"] if t["kind"] == "COMPUTE" and t["flops"] > 0)
    with pytest.raises(SystemExit):  # --shapes-of without --plan
        calibrate.main(["--out", str(out), "--shapes-of", str(base)])


def test_the_reference_matmul_is_measured_again_at_the_end(calibrated):
    """Steadiness: the drift is the two measurements' ratio less one, steady
    when it stays within 10 %, and the text says both."""
    _, figures = calibrated
    before, after = figures["matmul_flops"], figures["matmul_flops_after"]
    assert np.isfinite(after) and after > 0
    assert figures["matmul_drift"] == pytest.approx(after / before - 1, rel=1e-12, abs=1e-12)
    assert figures["steady"] == (abs(after / before - 1) <= 0.10)
    assert f"# steadiness: the matmul again at the end: {after / 1e9:.6g} GFLOP/s" \
        in figures["text"]


def test_collectives_across_two_processes():
    from oneflow_lite.calibrate import process_collectives

    figures = process_collectives(2, nbytes=1 << 14, reps=1, timeout_s=120)
    assert sorted(f["kind"] for f in figures) == ["all_gather", "all_reduce", "all_to_all",
                                                   "reduce_scatter"]
    for f in figures:
        assert np.isfinite(f["bandwidth_gbps"]) and f["bandwidth_gbps"] > 0
        assert np.isfinite(f["latency_us"]) and f["latency_us"] > 0
    cluster, result = _C.calibrate(devices=2, matmul_size=16, allreduce_bytes=1 << 16,
                                   memcpy_bytes=1 << 16, reps=1, collectives=figures,
                                   collectives_source="two processes")
    (level,) = cluster.levels()
    reduce = next(f for f in figures if f["kind"] == "all_reduce")
    assert level["bandwidth_bytes_per_s"] == pytest.approx(reduce["bandwidth_gbps"] * 1e9)
    assert "# collectives: two processes" in result["text"]
    with pytest.raises(ValueError, match="processes=1"):
        process_collectives(1)


def test_a_calibration_across_processes_writes_its_measured_points(tmp_path):
    """python -m oneflow_lite.calibrate --processes 2: every collective's
    figure carries the sizes it measured as points (bytes sent, the median
    seconds, 2 ranks), the header says so, and the cost model's
    CollectiveSeconds at a measured size on 2 ranks gives that size's
    measured seconds; on another group size, the latency-bandwidth fit."""
    from oneflow_lite import calibrate

    _, figures = calibrate.calibrate(devices=2, kernels=False, processes=2, reps=1,
                                     matmul_size=16, memcpy_bytes=1 << 16,
                                     allreduce_bytes=1 << 16)
    path = tmp_path / "two.pbtxt"
    path.write_text(figures["text"])
    text = path.read_text()
    assert "every size's median also written as the collective's points" in text
    assert text.count("points {") == 4 * len(calibrate.message_sizes(1 << 16, 2))
    cluster = _C.load_cluster(str(path))
    (level,) = cluster.levels()
    assert (level["name"], level["size"]) == ("node", 2)
    measured = {m["kind"]: m for m in figures["levels"]}
    assert sorted(level["collectives"]) == sorted(measured) == [
        "all_gather", "all_reduce", "all_to_all", "reduce_scatter"]
    for kind, m in measured.items():
        figure = level["collectives"][kind]
        want = sorted((sent, seconds) for _buffer, sent, seconds in m["points"])
        assert figure["points"] == {2: want}, kind
        for sent, seconds in want:
            got = cluster.collective_seconds(kind, sent, 2, 0)
            assert got == pytest.approx(seconds, rel=1e-12, abs=0), (kind, sent)
        # 3 ranks were not measured: steps x latency + bytes / bandwidth.
        steps = 4 if kind == "all_reduce" else 2
        sent = want[-1][0]
        fit = steps * figure["latency_s"] + sent / figure["bandwidth_bytes_per_s"]
        assert cluster.collective_seconds(kind, sent, 3, 0) == pytest.approx(fit, rel=1e-12)


def test_table_points_share_a_process_bytes_among_its_devices():
    """A process of 2 devices that sent 4096 B per call: each device's share
    is 2048 B in the same seconds (as levels_of halves the bandwidth); the
    group is the processes measured; fewer than two usable sizes: no table."""
    from oneflow_lite.calibrate import ProcessLayout, levels_of, table_points

    m = {"level": "network", "processes": 2, "kind": "all_reduce", "bandwidth_gbps": 1.0,
         "latency_us": 50.0, "points": [(8, 8.0, 1e-4), (4096, 4096.0, 2e-4)]}
    assert table_points(m, 2) == [{"bytes": 4.0, "seconds": 1e-4, "group_size": 2},
                                  {"bytes": 2048.0, "seconds": 2e-4, "group_size": 2}]
    (level,) = levels_of(ProcessLayout(1, 2, 2, "80mbit"), [m])
    assert level["collectives"][0]["points"] == table_points(m, 2)
    assert table_points(dict(m, points=[(8, 0.0, 1e-4), (4096, 4096.0, 2e-4)])) == []
