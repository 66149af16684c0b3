"""Periodic checkpoints written in the background (periodic_checkpoint.py):
the checkpoint holds the state as it was at the step boundary where the
copy was taken, although training changed every variable while the writer
ran; it equals, tensor by tensor, a synchronous save of that same state and
resumes to the losses of the uninterrupted run. Errors of a background
save surface at the next save or wait. Also the trainer's step folders:
only complete ones count, the newest is resumed, ``keep`` prunes.
"""
from __future__ import annotations

import os

import numpy as np
import pytest

from oneflow_lite import periodic_checkpoint, sharded_checkpoint, train_elastic
from oneflow_lite.checkpoint import CheckpointError
from test_graph import MESH, batches, graph_losses
from test_graph_checkpoint import graph_for


def _state(graph) -> dict:
    return {k: v.numpy().copy() for k, v in graph.state_dict().items()}


@pytest.mark.parametrize("placement", [MESH, None], ids=["mesh_2x2", "one_device"])
def test_a_background_save_holds_the_state_of_its_step(tmp_path, placement):
    data = batches("gpt", steps=6)
    want = graph_losses(graph_for("gpt", placement, "megatron"), data)
    graph = graph_for("gpt", placement, "megatron")
    graph_losses(graph, data[:2])
    at_two = _state(graph)
    saver = periodic_checkpoint.PeriodicSaver(background=True)
    saver.save(graph, str(tmp_path / "bg"), model="gpt", meta={"step": 2})
    graph_losses(graph, data[2:4])  # training goes on while the writer runs
    saver.wait()
    assert any(not np.array_equal(at_two[k], v) for k, v in _state(graph).items())
    got = sharded_checkpoint.load_logical(str(tmp_path / "bg"), model="gpt").tensors
    assert set(got) == set(at_two)
    for k, v in at_two.items():
        assert np.array_equal(got[k], v), k
    assert sharded_checkpoint.read_index(str(tmp_path / "bg"))["meta"]["step"] == 2
    resumed = graph_for("gpt", placement, "megatron", seed=9)
    resumed.load(str(tmp_path / "bg"), model="gpt")
    np.testing.assert_allclose(graph_losses(resumed, data[2:]), want[2:], rtol=1e-5, atol=1e-6)


def test_a_failed_background_save_is_raised_by_the_next_wait(tmp_path):
    graph = graph_for("mlp", None, "megatron")
    graph_losses(graph, batches("mlp", steps=1))
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "user_file").write_text("not ours")
    saver = periodic_checkpoint.PeriodicSaver(background=True)
    saver.save(graph, str(tmp_path / "taken"))
    with pytest.raises(CheckpointError, match="taken"):
        saver.wait()
    assert (tmp_path / "taken" / "user_file").read_text() == "not ours"
    saver.wait()  # reported once


def test_step_folders_resume_the_newest_complete_one_and_keep_prunes(tmp_path):
    data = batches("mlp", steps=8)
    graph = graph_for("mlp", MESH, "data_parallel")
    saves = train_elastic.Checkpoints(str(tmp_path), every=2, keep=2)
    for step, (x, y) in enumerate(data[:6], start=1):
        graph(x, y)
        saves.after_step(graph, step, {"processes": 1, "mesh": [2, 2]})
    saves.close()
    assert sorted(os.listdir(tmp_path)) == ["step-00000004", "step-00000006"]
    os.makedirs(tmp_path / "step-00000008")  # a save that died before publishing
    assert train_elastic.complete_steps(str(tmp_path)) == [4, 6]
    resumed = graph_for("mlp", MESH, "data_parallel", seed=4)
    assert train_elastic.Checkpoints(str(tmp_path), every=2).resume(resumed) == 6
    want = graph_losses(graph, data[6:])
    np.testing.assert_allclose(graph_losses(resumed, data[6:]), want, rtol=1e-5, atol=1e-6)
