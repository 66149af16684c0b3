"""Clear errors, naming the file, tensor or value, for inputs that used to
raise a bare KeyError, TypeError, AttributeError or a raw numpy or JSON
error: a malformed checkpoint index, a strategy file that is not a JSON
object, flow.load of a .npy, a cluster path that is a directory, a binary
--data file, a ragged placement, a list where a placement is expected, and
a pin on a placement other than the graph's."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite import _C, checkpoint, train_data
from oneflow_lite.nn.graph_compile import resolve_cluster

MESH = flow.placement("cpu", [[0, 1], [2, 3]])


def saved(tmp_path):
    path = str(tmp_path / "ck")
    checkpoint.save(path, {"w": np.ones((2, 3), np.float32), "b": np.zeros(3, np.float32)})
    return path


def edit_index(path, edit):
    file = os.path.join(path, "index.json")
    index = json.load(open(file))
    edit(index)
    with open(file, "w") as f:
        json.dump(index, f)


@pytest.mark.parametrize("key", ["sha256", "file", "nbytes", "shape", "dtype", "name"])
def test_an_index_entry_without_a_key_names_the_entry_and_key(tmp_path, key):
    path = saved(tmp_path)
    edit_index(path, lambda index: index["tensors"][1].pop(key))
    label = r"tensors\[1\] \('b'\)" if key != "name" else r"tensors\[1\]"
    with pytest.raises(checkpoint.CheckpointError,
                       match=rf"checkpoint {path}: index.json {label} lacks '{key}'"):
        checkpoint.load(path)


@pytest.mark.parametrize("key, value, what", [
    ("file", "../../etc/passwd", "a relative path inside the checkpoint"),
    ("sha256", 12, "64 lowercase hex digits"),
    ("shape", [2, -3], "a list of non-negative integers"),
    ("dtype", "float33", "a numpy dtype name"),
    ("nbytes", "many", "a non-negative integer")])
def test_a_malformed_index_entry_names_the_value(tmp_path, key, value, what):
    path = saved(tmp_path)
    edit_index(path, lambda index: index["tensors"][0].update({key: value}))
    with pytest.raises(checkpoint.CheckpointError) as e:
        checkpoint.load(path)
    assert f"checkpoint {path}: index.json tensors[0] ('w') has {key}={value!r}, expected " \
           f"{what}" == str(e.value)


@pytest.mark.parametrize("tensors, kind", [({"w": 1}, "dict"), ("w", "str"), (None, "NoneType")])
def test_tensors_of_the_wrong_type_are_named(tmp_path, tensors, kind):
    path = saved(tmp_path)
    edit_index(path, lambda index: index.update(tensors=tensors))
    with pytest.raises(checkpoint.CheckpointError,
                       match=rf"{path}: index.json 'tensors' is a {kind}, not a list"):
        checkpoint.load(path)
    edit_index(path, lambda index: index.update(tensors=[["w"]]))
    with pytest.raises(checkpoint.CheckpointError, match=r"tensors\[0\] is a list, not an "
                                                         r"object"):
        checkpoint.load(path)


class Net(flow.nn.Graph):
    def __init__(self):
        super().__init__()
        flow.manual_seed(0)
        self.model = flow.nn.Linear(4, 2)

    def build(self, x):
        return self.model(x)


@pytest.mark.parametrize("content, match", [
    (b"{not json", r"strategy file '{p}' is not a saved strategy: "),
    (b"\xff\x00\x13binary", r"strategy file '{p}' is not a JSON object"),
    (b"[1, 2]", r"strategy file '{p}' is not a JSON object"),
    (b'{"kind": "x"}', r"strategy file '{p}' holds kind 'x', not a strategy")])
def test_a_strategy_file_that_is_not_a_json_object_is_named(tmp_path, content, match):
    path = tmp_path / "strategy.json"
    path.write_bytes(content)
    g = Net()
    g.config.auto_parallel(cluster="h100_8gpu", placement=MESH)
    with pytest.raises(ValueError, match=match.format(p=path)):
        g.load_strategy(str(path))
    assert g.config.parallel.strategy_path is None  # nothing changed
    with pytest.raises(ValueError, match=f"strategy file '{tmp_path}' is a directory"):
        g.load_strategy(str(tmp_path))


def test_flow_load_of_a_npy_file_says_what_it_is(tmp_path):
    path = str(tmp_path / "w.npy")
    np.save(path, np.ones(3))
    with pytest.raises(ValueError, match=rf"flow.load: '{path}' is a single numpy .npy array, "
                                         rf"not a flow.save file"):
        flow.load(path)
    with pytest.raises(IsADirectoryError, match=rf"flow.load: '{tmp_path}' is a directory"):
        flow.load(str(tmp_path))
    (tmp_path / "t.txt").write_text("hello")
    with pytest.raises(ValueError, match="is not a complete flow.save file \\(no zip archive"):
        flow.load(str(tmp_path / "t.txt"))


def test_a_cluster_path_that_is_a_directory_is_named(tmp_path):
    want = f"cluster file {tmp_path}: is a directory, not a Cluster text file"
    with pytest.raises(ValueError, match=want):
        _C.load_cluster(str(tmp_path))
    with pytest.raises(ValueError, match=want):
        resolve_cluster(str(tmp_path), 4)


def test_binary_data_file_is_named(tmp_path):
    path = tmp_path / "weights.bin"
    path.write_bytes(b"abc" + bytes(range(128, 256)) * 4)
    with pytest.raises(ValueError, match=rf"--data {path}: not UTF-8 text \(byte 0x80 at "
                                         rf"offset 3\)"):
        train_data.text_batches(str(path), 8, 2, np.random.default_rng(0))


@pytest.mark.parametrize("ranks", [[[0, 1], [2]], [0, [1, 2]]])
def test_a_ragged_placement_is_named(ranks):
    with pytest.raises(ValueError) as e:
        flow.placement("cpu", ranks)
    assert str(e.value).startswith(f"placement: ranks {ranks!r} are ragged")


def test_a_list_where_a_placement_is_expected():
    g = Net()
    with pytest.raises(TypeError, match=r"auto_parallel: placement must be a flow.placement, "
                                        r"got list \[0, 1\]"):
        g.config.auto_parallel(cluster="h100_8gpu", placement=[0, 1])
    assert g.config.parallel is None
    with pytest.raises(TypeError, match="to_global: placement must be a flow.placement, got "
                                        "list"):
        flow.ones(4, 2).to_global([0, 1], flow.sbp.split(0))


@pytest.mark.parametrize("pin", [flow.placement("cpu", [4, 5, 6, 7]),
                                 flow.placement("cpu", [0, 1, 2, 3])])
def test_a_pin_on_another_placement_names_both(pin):
    g = Net()
    g.config.auto_parallel(cluster="h100_8gpu", searcher="data_parallel", placement=MESH)
    x = flow.tensor(np.ones((8, 4), np.float32)).to_global(pin, flow.sbp.split(0))
    with pytest.raises(ValueError) as e:
        g(x)
    msg = str(e.value)
    assert "'x' is pinned (to_global) on " + repr(pin) in msg  # build()'s argument name
    assert "the graph is planned on " + repr(MESH) in msg
    one_device = Net()
    with pytest.raises(ValueError, match="the graph runs on one device"):
        one_device(x)
