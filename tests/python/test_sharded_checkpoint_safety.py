"""Sharded checkpoints lose nothing and trust nothing: a save onto a folder
holding other files, "" and "/" are refused with the files intact (by every
simulated process); leftover temporary folders of killed saves are removed
by the next save when they carry our marker, never by name alone; the two
formats replace each other; a failure in one process fails the save in all
and keeps the old checkpoint; a writer killed (SIGKILL) at random moments
leaves a loadable checkpoint; a corrupted or truncated shard is named (file,
tensor, slice) and changes no variable; a mangled index.json gives a
CheckpointError, never another exception."""
from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import threading

import numpy as np
import pytest

from oneflow_lite import _save_paths, _thread_world, checkpoint
from oneflow_lite import sharded_checkpoint as sc
from oneflow_lite.checkpoint import CheckpointError
from killed_writer import kill_at_random_moment
from test_hardening_save import PYTHON_DIR, snapshot, user_folder
from test_sharded_checkpoint import W, in_threads, w_session


def arrays(value=1.0):
    return {"w": np.full((4, 3), value, np.float32), "w/step": np.array(value, np.float32)}


def save_arrays(path, value=1.0, **kw):
    sc.save(path, sc.ArrayShards(arrays(value)), **kw)


def value_of(path):
    got = checkpoint.load(path).tensors
    return float(got["w"][0, 0])


def dead_pid():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait(timeout=30)
    return proc.pid


# ---- targets ------------------------------------------------------------------------

@pytest.mark.parametrize("processes", [1, 2])
def test_a_folder_with_other_files_is_refused_by_every_process(tmp_path, processes):
    target = str(tmp_path / "thesis")
    user_folder(target)
    before = snapshot(tmp_path)
    session = w_session("S(0)", [0, 1])
    ranks = [[0, 1]] if processes == 1 else [[0], [1]]

    def save(world):
        with pytest.raises(CheckpointError, match=rf"'{target}' is a directory that is not a "
                                                  rf"checkpoint of ours .*figures, thesis.tex"):
            sc.save(target, sc.SessionShards(session, ["w"], ranks[world.process]), world=world)

    in_threads(processes, save)
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("target,match", [("", "the path is empty"), ("/", "filesystem root"),
                                          ("//", "filesystem root")])
def test_empty_and_root_paths_are_refused(tmp_path, target, match):
    before = snapshot(tmp_path)
    with pytest.raises(ValueError, match=match):
        save_arrays(target)
    assert snapshot(tmp_path) == before


def test_a_user_file_inside_our_checkpoint_is_refused(tmp_path):
    target = str(tmp_path / "ck")
    save_arrays(target)
    (tmp_path / "ck" / "shards" / "mine.bin").write_bytes(b"my data")
    before = snapshot(tmp_path)
    with pytest.raises(CheckpointError, match=r"shards/ holds files that are not ours "
                                              r"\(mine.bin\)"):
        save_arrays(target, 2.0)
    with pytest.raises(CheckpointError, match=r"shards/ holds files that are not ours"):
        checkpoint.save(target, arrays(2.0))
    assert snapshot(tmp_path) == before


def test_the_two_formats_replace_each_other(tmp_path):
    target = str(tmp_path / "ck")
    checkpoint.save(target, arrays(1.0))
    save_arrays(target, 2.0)
    assert sorted(os.listdir(target)) == [_save_paths.MARKER, "index.json", "shards"]
    assert value_of(target) == 2.0
    checkpoint.save(target, arrays(3.0))
    assert sorted(os.listdir(target)) == [_save_paths.MARKER, "index.json", "tensors"]
    assert value_of(target) == 3.0 and sorted(os.listdir(tmp_path)) == ["ck"]


def test_leftover_temporaries_go_only_when_marked(tmp_path):
    pid = dead_pid()
    marked, unmarked = tmp_path / f"ck.tmp-{pid}-abc", tmp_path / f"ck.tmp-{pid}-xyz"
    os.makedirs(marked / "shards")
    (marked / _save_paths.MARKER).write_bytes(
        b"oneflow_lite checkpoint: a later save may replace this directory\n")
    (marked / "shards" / "process-00000.bin").write_bytes(b"half written")
    user_folder(str(unmarked))
    kept = snapshot(unmarked)
    save_arrays(str(tmp_path / "ck"))
    assert not marked.exists()
    assert snapshot(unmarked) == kept
    assert sorted(os.listdir(tmp_path)) == sorted(["ck", unmarked.name])


# ---- failures -------------------------------------------------------------------------

class Broken:
    """Process 1's source, which fails while its shard is written."""

    def __init__(self, inner):
        self.inner, self.names, self.ranks = inner, inner.names, inner.ranks

    def layout(self, name):
        return self.inner.layout(name)

    def get(self, name, rank):
        raise OSError("simulated disk failure")


def test_a_failure_in_one_process_fails_all_and_keeps_the_old_checkpoint(tmp_path):
    target = str(tmp_path / "ck")
    session = w_session("S(0)", [0, 1])
    sc.save(target, sc.SessionShards(session, ["w"]))
    session.set_variable("w", W + 1)
    errors = []

    def save(world):
        source = sc.SessionShards(session, ["w"], [world.process])
        try:
            sc.save(target, source if world.process == 0 else Broken(source), world=world)
        except (OSError, CheckpointError) as e:
            errors.append((world.process, str(e)))

    in_threads(2, save)
    assert sorted(errors) == [(0, "sharded checkpoint save failed in another process: "
                                  "process 1: OSError: simulated disk failure"),
                              (1, "simulated disk failure")]
    np.testing.assert_array_equal(checkpoint.load(target).tensors["w"], W)
    assert sorted(os.listdir(tmp_path)) == ["ck"]  # the temporary folder is gone


def test_ranks_no_process_holds_are_refused(tmp_path):
    session = w_session("S(0)", [0, 1])
    with pytest.raises(CheckpointError, match=r"tensor 'w': no process holds the slices of "
                                              r"ranks \[1\]"):
        sc.save(str(tmp_path / "ck"), sc.SessionShards(session, ["w"], [0]))
    assert os.listdir(tmp_path) == []


def test_a_partial_sum_variable_is_refused(tmp_path):
    source = sc.ArrayShards(arrays())
    layout = source.layout("w")
    layout["slices"][0]["partial"], layout["nd_sbp"] = True, "(P)"
    source.layout = lambda name: layout
    with pytest.raises(CheckpointError, match=r"variable 'w' is laid out as \(P\) "
                                              r"\(partial sum\)"):
        sc.save(str(tmp_path / "ck"), source)
    assert os.listdir(tmp_path) == []


# ---- corruption ---------------------------------------------------------------------

def flip_byte(path, offset):
    with open(path, "r+b") as f:
        f.seek(offset)
        b = f.read(1)
        f.seek(offset)
        f.write(bytes([b[0] ^ 0xFF]))


@pytest.mark.parametrize("sbp,ranks,what", [
    ("S(0)", [0, 1], "fails its crc32 check in chunk 1"),  # whole slice: crc32 first
    ("S(0)", [0, 1, 2, 3], "fails its crc32 check in chunk 1")])  # partial read
def test_a_corrupted_byte_is_named_and_changes_nothing(tmp_path, sbp, ranks, what):
    path = str(tmp_path / "ck")
    sc.save(path, sc.SessionShards(w_session("S(0)", [0, 1]), ["w"]), chunk_bytes=1024)
    flip_byte(os.path.join(path, sc.shard_file(0)), 4096 + 1500)  # rank 1's slice, chunk 1
    session = w_session(sbp, ranks)
    session.set_variable("w", np.zeros_like(W))
    with pytest.raises(CheckpointError, match=rf"tensor 'w' slice of rank 1 \(file "
                                              rf"shards/process-00000.bin, bytes 4096..8192\) "
                                              rf"{what}"):
        sc.load_into(path, sc.SessionShards(session, ["w"]))
    np.testing.assert_array_equal(session.get_variable("w"), np.zeros_like(W))
    sc.load_into(path, sc.SessionShards(session, ["w"], [0]))  # rank 0's part is sound


def test_a_corruption_within_a_chunk_is_caught_by_sha256(tmp_path, monkeypatch):
    path = str(tmp_path / "ck")
    sc.save(path, sc.SessionShards(w_session("S(0)", [0, 1]), ["w"]))
    flip_byte(os.path.join(path, sc.shard_file(0)), 10)
    monkeypatch.setattr("zlib.crc32", lambda data: 0)  # a crc32 collision, simulated
    index = json.loads((tmp_path / "ck" / "index.json").read_text())
    for s in index["tensors"][0]["slices"]:
        s["crc32"] = [0] * len(s["crc32"])
    (tmp_path / "ck" / "index.json").write_text(json.dumps(index))
    with pytest.raises(CheckpointError, match=r"slice of rank 0 .* fails its sha256 check"):
        checkpoint.load(path)


def test_a_truncated_shard_is_named(tmp_path):
    path = str(tmp_path / "ck")
    save_arrays(path)
    file = os.path.join(path, sc.shard_file(0))
    size = os.path.getsize(file)
    with open(file, "r+b") as f:
        f.truncate(size - 1)
    with pytest.raises(CheckpointError, match=rf"file shards/process-00000.bin has {size - 1} "
                                              rf"bytes, the index says {size}"):
        checkpoint.load(path)


def test_a_mangled_index_gives_a_checkpoint_error(tmp_path):
    path = str(tmp_path / "ck")
    save_arrays(path)
    good = json.loads((tmp_path / "ck" / "index.json").read_text())
    rng = random.Random(5)
    junk = [None, -1, 0, 2 ** 70, "x", [], {}, [1, 2], True, 1.5, "shards/process-00000.bin"]

    def mangle(node):
        if isinstance(node, dict) and node:
            key = rng.choice(sorted(node))
            if rng.random() < 0.3:
                node.pop(key)
            elif rng.random() < 0.5 or not isinstance(node[key], (dict, list)):
                node[key] = json.loads(json.dumps(rng.choice(junk)))
            else:
                mangle(node[key])
        elif isinstance(node, list) and node:
            i = rng.randrange(len(node))
            if isinstance(node[i], (dict, list)) and rng.random() < 0.7:
                mangle(node[i])
            else:
                node[i] = json.loads(json.dumps(rng.choice(junk)))

    for _ in range(300):
        index = json.loads(json.dumps(good))
        for _ in range(rng.randint(1, 3)):
            mangle(index)
        (tmp_path / "ck" / "index.json").write_text(json.dumps(index))
        try:
            got = checkpoint.load(path).tensors
        except CheckpointError:
            continue
        for name, value in got.items():  # a harmless change (meta, a rank's label, ...)
            assert value.tobytes() == arrays()[name].tobytes(), name


# ---- kill -9 --------------------------------------------------------------------------

WRITER = """
import sys, numpy as np
from oneflow_lite import sharded_checkpoint as sc
path = sys.argv[1]
big = {f"t{i}": np.full((50, 400), 0.0, np.float32) for i in range(8)}
value = 1.0
sc.save(path, sc.ArrayShards({k: v + value for k, v in big.items()}))
print("ready", flush=True)
while True:
    value += 1.0
    sc.save(path, sc.ArrayShards({k: v + value for k, v in big.items()}))
"""


def test_a_writer_killed_at_random_moments_leaves_a_loadable_checkpoint(tmp_path):
    target = str(tmp_path / "ck")
    rng = np.random.default_rng(0)
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR)
    for _ in range(4):
        kill_at_random_moment(WRITER, target, env, rng)
        got = checkpoint.load(target).tensors
        values = {float(a[0, 0]) for a in got.values()}
        assert len(values) == 1 and all((a == a[0, 0]).all() for a in got.values())
    save_arrays(target)  # removes the dead writers' marked temporaries
    for name in os.listdir(tmp_path):  # at most one killed before marking its folder
        left = os.listdir(tmp_path / name) if name != "ck" else []
        assert name == "ck" or (name.startswith("ck.tmp-") and left in ([], [
            _save_paths.MARKER]) and not _save_paths.has_marker(str(tmp_path / name)))


@pytest.mark.parametrize("vanishes_after", [0, 1])
def test_a_vanished_peer_fails_the_save_and_leaves_nothing(tmp_path, vanishes_after):
    """Process 1 never arrives (0) or dies after the first collective (1):
    process 0's collective times out, and its temporary folder goes."""
    target = str(tmp_path / "ck")
    save_arrays(target, 1.0)
    worlds = _thread_world.thread_worlds(2, timeout_s=1.0)
    if vanishes_after:
        threading.Thread(target=worlds[1].broadcast_str, args=("",)).start()
    with pytest.raises(RuntimeError, match="barrier .* broken in process 0 of 2"):
        save_arrays(target, 2.0, world=worlds[0])
    assert value_of(target) == 1.0 and sorted(os.listdir(tmp_path)) == ["ck"]


def test_a_logical_graph_save_in_several_processes_is_written_once(tmp_path):
    from test_sharded_checkpoint import gpt_graph
    from test_graph import MESH, batches

    graph = gpt_graph(MESH, "megatron")
    graph(*batches("gpt", steps=1)[0])
    state = {k: v.numpy() for k, v in graph.state_dict().items()}
    target = str(tmp_path / "ck")
    in_threads(2, lambda w: graph.save(target, model="gpt", sharded=False, world=w))
    got = checkpoint.load(target).tensors
    assert all(got[k].tobytes() == v.tobytes() for k, v in state.items())
    assert sorted(os.listdir(tmp_path)) == ["ck"]
    user_folder(str(tmp_path / "thesis"))
    errors = []

    def refused(w):
        try:
            graph.save(str(tmp_path / "thesis"), sharded=False, world=w)
        except CheckpointError as e:
            errors.append((w.process, str(e)))

    in_threads(2, refused)
    assert [p for p, _ in sorted(errors)] == [0, 1]
    assert "checkpoint save failed on process 0: CheckpointError: " in sorted(errors)[1][1]
    assert "is a directory that is not a checkpoint of ours" in sorted(errors)[0][1]
