"""Sharded checkpoints (oneflow_lite.sharded_checkpoint) under training: GPT
trained 3 AdamW steps on 4 virtual devices under Megatron (weights split),
saved sharded by one process, by 4 simulated processes (threads, one rank
each) and by 2 (two ranks each); loaded into 2 devices (data parallel), 1
device, 4 devices under another plan, the same plan, and eagerly. Parameters
and optimizer state must equal the saving session's bitwise (its
get_variable, itself checked against numpy in test_distributed.py), and the
next step's loss that of the run that did not stop: exactly under the same
plan; under another plan or eagerly the reduction order differs, so float32
allclose with rtol 1e-5, atol 1e-6.

Bytes read are counted (``Checkpoint.stats``): a weight split in two halves
loaded by two processes of one rank each: each reads exactly its half;
by one process: every byte once; partial reads read whole crc32 chunks.
The binding's per-rank view (variable_layout, get/set_variable_slice) is
held against numpy's array_split and slicing of the logical tensor."""
from __future__ import annotations

import os
import threading

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite import _C, _thread_world, checkpoint
from oneflow_lite import sharded_checkpoint as sc
from oneflow_lite.graph_builder import GraphBuilder
from test_graph import CLUSTER, MESH, TrainGraph, batches, eager_losses, make_model

STEPS = 3
FLAT2 = flow.placement("cpu", [0, 1])
FLAT4 = flow.placement("cpu", [0, 1, 2, 3])


def gpt_graph(placement, searcher, seed=0):
    model = make_model("gpt", seed)
    graph = TrainGraph(model, flow.optim.AdamW(model.named_parameters(), lr=0.01))
    if placement is not None:
        graph.config.auto_parallel(cluster=CLUSTER, searcher=searcher, placement=placement)
    return graph


def in_threads(count, fn):
    """Runs fn(world) in ``count`` threads (simulated processes); returns
    their results, or raises the first exception."""
    worlds, results, errors = _thread_world.thread_worlds(count, timeout_s=60), [None] * count, []

    def body(i):
        try:
            results[i] = fn(worlds[i])
        except BaseException as e:  # noqa: B902 (reported below)
            errors.append((i, e))

    threads = [threading.Thread(target=body, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
        assert not t.is_alive(), "a simulated process hangs"
    if errors:
        raise sorted(errors, key=lambda e: e[0])[0][1]
    return results


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """Saves after STEPS steps (1, 4 and 2 processes), then the next loss."""
    root = tmp_path_factory.mktemp("sharded")
    data = batches("gpt", steps=STEPS + 1)
    graph = gpt_graph(MESH, "megatron")
    for x, y in data[:STEPS]:
        graph(x, y)
    state = {k: v.numpy().copy() for k, v in graph.state_dict().items()}
    paths = {n: str(root / f"ck{n}") for n in (1, 2, 4)}
    graph.save(paths[1], model="gpt")
    session, names = graph.compiled.session, graph._state_names()
    for n in (2, 4):
        per = 4 // n
        in_threads(n, lambda w, n=n, per=per: sc.save(
            paths[n], sc.SessionShards(session, names, range(w.process * per, (w.process + 1) * per)),
            model="gpt", meta={"steps": STEPS}, world=w))
    next_loss = float(graph(*data[STEPS]).numpy())  # the run that did not stop
    return {"paths": paths, "state": state, "next_loss": next_loss, "data": data}


def assert_bitwise(got, want):
    assert sorted(got) == sorted(want)
    for k in want:
        a, b = np.asarray(got[k]), np.asarray(want[k])
        assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes(), k


def test_index_holds_each_byte_once_and_the_layouts(trained):
    for n, path in trained["paths"].items():
        index = sc.read_index(path)
        assert index["format"] == "oneflow_lite-sharded" and index["version"] == 2
        assert index["world"] == {"processes": n, "ranks": [0, 1, 2, 3]}
        assert [f["file"] for f in index["files"]] == [sc.shard_file(i) for i in range(n)]
        assert index["fingerprint"] == checkpoint.fingerprint(
            {k: (v.shape, v.dtype) for k, v in trained["state"].items()})
        by_name = {t["name"]: t for t in index["tensors"]}
        assert set(by_name) == set(trained["state"])
        for name, value in trained["state"].items():
            t = by_name[name]
            assert (t["shape"], t["dtype"]) == (list(value.shape), value.dtype.name)
            assert sum(s["nbytes"] for s in t["slices"]) == value.nbytes, name  # no duplicates
            assert t["placement"] == {"ranks": [0, 1, 2, 3], "hierarchy": [2, 2]}
        split = [t for t in index["tensors"] if "S(" in t["nd_sbp"] and len(t["slices"]) > 1]
        assert split, "megatron splits no weight: the test would not test sharding"
        assert sum(f["nbytes"] for f in index["files"]) == sum(
            v.nbytes for v in trained["state"].values())


@pytest.mark.parametrize("saved_by", [1, 2, 4])
@pytest.mark.parametrize("target", ["same", "flat2_dp", "one_device", "flat4_autoddl"])
def test_loads_bitwise_under_another_plan_and_resumes(trained, saved_by, target):
    placement, searcher = {"same": (MESH, "megatron"), "flat2_dp": (FLAT2, "data_parallel"),
                           "one_device": (None, None),
                           "flat4_autoddl": (FLAT4, "autoddl")}[target]
    graph = gpt_graph(placement, searcher, seed=7)  # other values: the load must replace them
    graph(*batches("gpt", steps=1, seed=9)[0])
    ck = graph.load(trained["paths"][saved_by], model="gpt")
    assert ck.stats.bytes_read == sum(v.nbytes for v in trained["state"].values())
    assert_bitwise({k: v.numpy() for k, v in graph.state_dict().items()}, trained["state"])
    loss = float(graph(*trained["data"][STEPS]).numpy())
    if target == "same":
        assert loss == trained["next_loss"]
    else:
        np.testing.assert_allclose(loss, trained["next_loss"], rtol=1e-5, atol=1e-6)


def test_loads_before_the_first_call(trained):
    graph = gpt_graph(FLAT2, "data_parallel", seed=7)
    graph.load(trained["paths"][4], model="gpt")  # applied when the graph compiles
    loss = float(graph(*trained["data"][STEPS]).numpy())
    np.testing.assert_allclose(loss, trained["next_loss"], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("saved_by", [1, 4])
def test_loads_eagerly(trained, saved_by):
    model = make_model("gpt", seed=7)
    opt = flow.optim.AdamW(model.named_parameters(), lr=0.01)
    eager_losses(model, opt, batches("gpt", steps=1, seed=9))  # optimizer state exists
    checkpoint.load_eager(trained["paths"][saved_by], model, opt, "gpt")
    assert_bitwise(checkpoint.eager_tensors(model, opt), trained["state"])
    (loss,) = eager_losses(model, opt, trained["data"][STEPS:])
    np.testing.assert_allclose(loss, trained["next_loss"], rtol=1e-5, atol=1e-6)


def test_two_processes_load_their_own_ranks(trained):
    graph = gpt_graph(FLAT2, "data_parallel", seed=7)
    graph(*batches("gpt", steps=1, seed=9)[0])
    session, names = graph.compiled.session, graph._state_names()
    stats = in_threads(2, lambda w: sc.load_into(
        trained["paths"][4], sc.SessionShards(session, names, [w.process]), model="gpt").stats)
    total = sum(v.nbytes for v in trained["state"].values())
    assert [s.bytes_read for s in stats] == [total, total]  # data parallel: both need all
    assert_bitwise({k: v.numpy() for k, v in graph.state_dict().items()}, trained["state"])


# ---- bytes read ---------------------------------------------------------------------

W = np.arange(64 * 32, dtype=np.float32).reshape(64, 32)  # 8 KiB


def w_session(sbp, ranks):
    b = GraphBuilder()
    x = b.input("x", [4, 64])
    b.variable("w", W)
    y = b.matmul(x, "w")
    return _C.DistributedSession(b.program, list(ranks), [len(ranks)],
                                 _C.PlanSpec.deduce({"w": f"({sbp})"}), [y])


@pytest.fixture
def halves(tmp_path):
    """W saved as S(0) over 2 ranks, crc32 chunks of 1 KiB."""
    path = str(tmp_path / "w")
    sc.save(path, sc.SessionShards(w_session("S(0)", [0, 1]), ["w"]), chunk_bytes=1024)
    return path


def load_per_process(path, sbp, ranks, verify=True):
    """Loads W laid out as ``sbp`` over ``ranks``, one simulated process
    per rank; returns (bytes read per process, the session)."""
    session = w_session(sbp, ranks)
    session.set_variable("w", np.zeros_like(W))
    stats = in_threads(len(ranks), lambda w: sc.load_into(
        path, sc.SessionShards(session, ["w"], [ranks[w.process]]), verify=verify).stats)
    np.testing.assert_array_equal(session.get_variable("w"), W)
    return stats


def test_each_of_two_processes_reads_exactly_its_half(halves):
    stats = load_per_process(halves, "S(0)", [0, 1])
    assert [s.bytes_read for s in stats] == [W.nbytes // 2, W.nbytes // 2]
    assert [s.sha256_checked for s in stats] == [1, 1]  # each read its saved slice whole
    one = sc.load_into(halves, sc.SessionShards(w_session("S(0)", [0, 1]), ["w"])).stats
    assert one.bytes_read == W.nbytes and one.files == {sc.shard_file(0): W.nbytes}
    assert checkpoint.load(halves).stats.bytes_read == W.nbytes


def test_partial_reads_read_their_ranges_or_whole_chunks(halves):
    quarters = load_per_process(halves, "S(0)", [0, 1, 2, 3])  # 2 KiB each: 2 whole chunks
    assert [s.bytes_read for s in quarters] == [W.nbytes // 4] * 4
    assert [(s.crc32_checked, s.sha256_checked) for s in quarters] == [(2, 0)] * 4
    columns = load_per_process(halves, "S(1)", [0, 1], verify=False)  # 64-byte runs
    assert [s.bytes_read for s in columns] == [W.nbytes // 2] * 2
    assert [s.reads for s in columns] == [64, 64]
    columns = load_per_process(halves, "S(1)", [0, 1])  # each run touches every chunk
    assert [s.bytes_read for s in columns] == [W.nbytes] * 2


def test_replicated_slices_are_written_once(tmp_path):
    session = w_session("B", [0, 1, 2])
    sc.save(str(tmp_path / "b"), sc.SessionShards(session, ["w"]))
    (t,) = sc.read_index(str(tmp_path / "b"))["tensors"]
    assert [s["rank"] for s in t["slices"]] == [0] and t["nd_sbp"] == "(B)"
    assert load_per_process(str(tmp_path / "b"), "S(1)", [0, 1])[0].bytes_read == W.nbytes


# ---- the binding's per-rank view ----------------------------------------------------

def test_layout_and_slices_match_numpy():
    b = GraphBuilder()
    x = b.input("x", [4, 7])
    w = np.arange(7 * 5, dtype=np.float32).reshape(7, 5)
    b.variable("w", w)
    y = b.matmul(x, "w")
    s = _C.DistributedSession(b.program, [0, 1, 2, 3], [2, 2],
                              _C.PlanSpec.deduce({"w": "(S(0), B)"}), [y])
    assert s.local_ranks() == [0, 1, 2, 3]
    layout = s.variable_layout("w")
    assert (layout["shape"], layout["dtype"], layout["nd_sbp"]) == ([7, 5], "float32",
                                                                   "(S(0), B)")
    assert (layout["ranks"], layout["hierarchy"]) == ([0, 1, 2, 3], [2, 2])
    rows = np.array_split(np.arange(7), 2)  # balanced: 4 + 3 rows over the outer axis
    for rank in range(4):
        got = layout["slices"][rank]
        part = rows[rank // 2]
        assert got == {"offset": [int(part[0]), 0], "shape": [len(part), 5],
                       "partial": False, "primary": rank % 2 == 0}
        np.testing.assert_array_equal(s.get_variable_slice("w", rank), w[part])
    s.set_variable_slice("w", 3, np.full((3, 5), 9.0, np.float32))
    np.testing.assert_array_equal(s.get_variable_slice("w", 3), np.full((3, 5), 9.0))
    with pytest.raises(ValueError, match=r"variable 'w' on rank 1 expects float32 \(4, 5\), "
                                         r"got float64 \(3, 5\)"):
        s.set_variable_slice("w", 1, np.zeros((3, 5)))
    with pytest.raises(ValueError, match=r"variable 'w' has no slice on rank 7"):
        s.get_variable_slice("w", 7)
    with pytest.raises(ValueError, match="unknown variable 'v'"):
        s.variable_layout("v")


# ---- nn.Graph's choice of format, and refusals -------------------------------------

def test_graph_format_follows_the_placement_unless_told(trained, tmp_path):
    one = gpt_graph(None, None, seed=7)
    one.load(trained["paths"][4], model="gpt")
    one(*batches("gpt", steps=1, seed=9)[0])
    state = {k: v.numpy() for k, v in one.state_dict().items()}
    one.save(str(tmp_path / "logical"), model="gpt")
    one.save(str(tmp_path / "sharded"), model="gpt", sharded=True)
    assert checkpoint.read_index(str(tmp_path / "logical"))["version"] == 1
    assert checkpoint.read_index(str(tmp_path / "sharded"))["version"] == 2
    mesh = gpt_graph(MESH, "megatron", seed=3)
    mesh(*batches("gpt", steps=1, seed=9)[0])
    for kind in ("logical", "sharded"):
        mesh.load(str(tmp_path / kind), model="gpt")
        assert_bitwise({k: v.numpy() for k, v in mesh.state_dict().items()}, state)
    mesh.save(str(tmp_path / "from_mesh"), sharded=False)
    assert checkpoint.read_index(str(tmp_path / "from_mesh"))["version"] == 1


def test_another_models_sharded_checkpoint_is_refused_and_changes_nothing(trained, tmp_path):
    mlp = TrainGraph(make_model("mlp"), None)
    mlp.config.auto_parallel(cluster=CLUSTER, searcher="data_parallel", placement=MESH)
    mlp(*batches("mlp", steps=1)[0])
    before = {k: v.numpy() for k, v in mlp.state_dict().items()}
    with pytest.raises(checkpoint.CheckpointError, match="belongs to model 'gpt', not 'mlp'"):
        mlp.load(trained["paths"][4], model="mlp")
    with pytest.raises(checkpoint.CheckpointError, match=r"missing \d+: .*unexpected \d+: "):
        mlp.load(trained["paths"][4])
    assert_bitwise({k: v.numpy() for k, v in mlp.state_dict().items()}, before)
    target = tmp_path / "thesis"
    target.mkdir()
    (target / "thesis.tex").write_bytes(b"four years")
    with pytest.raises(checkpoint.CheckpointError, match="not a checkpoint of ours"):
        mlp.save(str(target))
    assert os.listdir(target) == ["thesis.tex"]
    assert (target / "thesis.tex").read_bytes() == b"four years"
