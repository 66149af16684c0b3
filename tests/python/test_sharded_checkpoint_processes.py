"""Sharded checkpoints across real processes (sharded_worker.py, meeting
through ``FileWorld``): GPT trained 3 steps under Megatron on 4 virtual
devices in each of 4 processes, each saving only its own rank; the result
equals bitwise the state of the same training in this process. Then 2
processes load it under data parallelism on 2 devices, one rank each, and
1 process under the 2d preset on 4 devices: every slice arrives bitwise
(sha256 of each rank's slice against numpy slicing of the state), and each
process reads exactly the chunks that overlap its ranks' slices (worked
out here with numpy masks, not with the loader's run arithmetic).

One process holds every virtual rank today, so each process builds the
whole session and is told its ranks; with the multi-process runtime the
same calls take the session's local ranks. Every process is started with a
timeout and killed by its pid if it overruns."""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from oneflow_lite import checkpoint
from oneflow_lite import sharded_checkpoint as sc
from sharded_worker import graph_for
from test_graph import batches

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "sharded_worker.py")
MESH = [[0, 1], [2, 3]]
CHUNK = 256  # small crc32 chunks, so partial reads stay partial on small weights


def run_processes(tmp_path, tag, common, ranks):
    """Starts one worker per entry of ``ranks``; returns their JSON replies."""
    rendezvous = tmp_path / f"rendezvous-{tag}"
    rendezvous.mkdir()
    procs = []
    for i, mine in enumerate(ranks):
        args = dict(common, index=i, count=len(ranks), rendezvous=str(rendezvous), ranks=mine)
        procs.append(subprocess.Popen([sys.executable, WORKER, json.dumps(args)],
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    replies = []
    for p in procs:
        try:
            out, err = p.communicate(timeout=240)
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()  # each by its own handle (pid)
                q.wait(timeout=30)
            pytest.fail(f"sharded_worker ({tag}) overran 240 s")
        assert p.returncode == 0, f"worker ({tag}) failed:\n{err[-3000:]}"
        replies.append(json.loads(out.strip().splitlines()[-1]))
    return replies


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("procs")
    path = str(tmp / "ck")
    run_processes(tmp, "save", {"mode": "save", "path": path, "placement": MESH,
                                "searcher": "megatron", "chunk_bytes": CHUNK},
                  [[0], [1], [2], [3]])
    graph = graph_for(MESH, "megatron")
    for x, y in batches("gpt", steps=3):
        graph(x, y)
    state = {k: v.numpy() for k, v in graph.state_dict().items()}
    return {"tmp": tmp, "path": path, "state": state}


def test_four_processes_save_the_state_bitwise(saved):
    index = sc.read_index(saved["path"])
    assert index["world"] == {"processes": 4, "ranks": [0, 1, 2, 3]}
    assert len(index["files"]) == 4 and all(f["nbytes"] > 0 for f in index["files"][:1])
    got = checkpoint.load(saved["path"]).tensors
    assert sorted(got) == sorted(saved["state"])
    for k, v in saved["state"].items():
        assert got[k].dtype == v.dtype and got[k].tobytes() == v.tobytes(), k
    assert sorted(os.listdir(os.path.dirname(saved["path"]))) == ["ck", "rendezvous-save"]


def expected_reads(index, layouts, ranks):
    """Bytes a process holding ``ranks`` must read: per saved slice, the
    crc32 chunks holding an element that one of its ranks' slices covers."""
    total = 0
    for t in index["tensors"]:
        item = np.dtype(t["dtype"]).itemsize
        for s in t["slices"]:
            need = np.zeros(s["shape"], bool)
            for r in ranks:
                box = layouts[t["name"]]["slices"].get(r)
                if box is None:
                    continue
                lo = [max(a, b) - b for a, b in zip(box["offset"], s["offset"])]
                hi = [min(a + n, b + m) - b for a, n, b, m in zip(
                    box["offset"], box["shape"], s["offset"], s["shape"])]
                if all(h > l for l, h in zip(lo, hi)):
                    need[tuple(slice(l, h) for l, h in zip(lo, hi))] = True
            byte_need = np.repeat(need.ravel(), item)
            for k in range(0, len(byte_need), index["chunk_bytes"]):
                chunk = byte_need[k:k + index["chunk_bytes"]]
                total += len(chunk) if chunk.any() else 0
    return total


@pytest.mark.parametrize("placement,searcher,ranks", [
    ([0, 1], "megatron", [[0], [1]]),
    (MESH, "2d", [[0, 1, 2, 3]])], ids=["2_processes", "1_process_4_devices"])
def test_processes_load_their_ranks_bitwise_reading_only_their_chunks(saved, placement,
                                                                      searcher, ranks):
    replies = run_processes(saved["tmp"], f"load-{len(ranks)}", {
        "mode": "load", "path": saved["path"], "placement": placement, "searcher": searcher,
        "chunk_bytes": CHUNK}, ranks)
    graph = graph_for(placement, searcher)
    graph(*batches("gpt", steps=1, seed=9)[0])
    session = graph.compiled.session
    layouts = {n: session.variable_layout(n) for n in saved["state"]}
    index = sc.read_index(saved["path"])
    for mine, reply in zip(ranks, replies):
        for name, value in saved["state"].items():
            for r in mine:
                box = layouts[name]["slices"][r]
                want = value[tuple(slice(o, o + n) for o, n in zip(box["offset"], box["shape"]))]
                assert reply["slices"][name][str(r)] == hashlib.sha256(
                    np.ascontiguousarray(want).tobytes()).hexdigest(), (name, r)
        assert reply["bytes_read"] == expected_reads(index, layouts, mine)
    if len(ranks) == 1:  # one process: every byte of the checkpoint once
        assert replies[0]["bytes_read"] == sum(f["nbytes"] for f in index["files"])
