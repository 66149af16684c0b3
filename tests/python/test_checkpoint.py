"""The checkpoint format (oneflow_lite/checkpoint.py): round trip, atomic
writes, and the errors for a truncated, corrupted or foreign checkpoint.
Resuming training under another plan is tested in test_graph_checkpoint.py."""
import json
import os

import numpy as np
import pytest

from oneflow_lite import checkpoint as ckpt


def tensors():
    rng = np.random.default_rng(0)
    return {"fc1.weight": rng.standard_normal((4, 3)).astype(np.float32),
            "fc1.weight/m": rng.standard_normal((4, 3)).astype(np.float32),
            "fc1.weight/step": np.array(2, np.int64),
            "fc2.bias": rng.standard_normal(5)}


def test_round_trip_keeps_values_shapes_dtypes_and_order(tmp_path):
    want = tensors()
    d = str(tmp_path / "ck")
    ckpt.save(d, want, model="mlp", meta={"step": 2})
    got = ckpt.load(d, model="mlp")
    assert list(got.tensors) == list(want)
    for name, value in want.items():
        assert got.tensors[name].dtype == value.dtype
        assert got.tensors[name].shape == value.shape, name  # 0-d stays 0-d
        np.testing.assert_array_equal(got.tensors[name], value)
    assert got.meta == {"step": 2} and got.model == "mlp"
    index = json.load(open(os.path.join(d, "index.json")))
    entry = index["tensors"][0]
    assert entry["name"] == "fc1.weight" and entry["shape"] == [4, 3]
    assert entry["dtype"] == "float32" and entry["nbytes"] == os.path.getsize(
        os.path.join(d, entry["file"]))
    assert os.listdir(tmp_path) == ["ck"]  # no temporary left behind


def test_fingerprint_ignores_optimizer_state_and_sees_shapes():
    a = ckpt.fingerprint({"w": ((2, 3), "float32"), "w/m": ((2, 3), "float32")})
    assert a == ckpt.fingerprint({"w": ((2, 3), "float32")})
    assert a != ckpt.fingerprint({"w": ((3, 2), "float32")})


def test_overwrite_replaces_the_whole_directory(tmp_path):
    d = str(tmp_path / "ck")
    ckpt.save(d, tensors(), model="mlp")
    ckpt.save(d, {"only": np.zeros(2, np.float32)}, model="other")
    got = ckpt.load(d)
    assert list(got.tensors) == ["only"] and got.model == "other"
    assert sorted(os.listdir(tmp_path)) == ["ck"]


def test_crash_while_writing_keeps_the_old_checkpoint(tmp_path, monkeypatch):
    d = str(tmp_path / "ck")
    ckpt.save(d, tensors(), model="mlp")
    calls = {"n": 0}
    real_save = np.save

    def failing_save(f, a, **kw):
        calls["n"] += 1
        if calls["n"] == 2:
            raise OSError("disk full (simulated)")
        real_save(f, a, **kw)

    monkeypatch.setattr(np, "save", failing_save)
    with pytest.raises(OSError, match="disk full"):
        ckpt.save(d, {"a": np.ones(3), "b": np.ones(3)}, model="new")
    monkeypatch.undo()
    got = ckpt.load(d, model="mlp")
    np.testing.assert_array_equal(got.tensors["fc1.weight"], tensors()["fc1.weight"])
    assert os.listdir(tmp_path) == ["ck"]


def test_truncated_file_names_the_file_and_both_sizes(tmp_path):
    d = str(tmp_path / "ck")
    ckpt.save(d, tensors(), model="mlp")
    file = os.path.join(d, "tensors", "00001.npy")
    size = os.path.getsize(file)
    with open(file, "r+b") as f:
        f.truncate(size - 7)
    with pytest.raises(ckpt.CheckpointError) as e:
        ckpt.load(d)
    msg = str(e.value)
    assert "tensors/00001.npy" in msg and "fc1.weight/m" in msg
    assert f"{size - 7} bytes" in msg and f"index says {size}" in msg


def test_corrupted_file_fails_the_checksum(tmp_path):
    d = str(tmp_path / "ck")
    ckpt.save(d, tensors(), model="mlp")
    file = os.path.join(d, "tensors", "00000.npy")
    data = bytearray(open(file, "rb").read())
    data[-1] ^= 0xFF
    open(file, "wb").write(bytes(data))
    with pytest.raises(ckpt.CheckpointError, match=r"00000.npy of tensor 'fc1.weight' fails"):
        ckpt.load(d)


def test_checkpoint_of_another_model_names_the_differences(tmp_path):
    d = str(tmp_path / "ck")
    ckpt.save(d, tensors(), model="mlp")
    with pytest.raises(ckpt.CheckpointError, match="belongs to model 'mlp', not 'gpt'"):
        ckpt.load(d, model="gpt")
    expected = {"fc1.weight": ((3, 4), "float32"), "fc1.weight/m": ((4, 3), "float32"),
                "fc1.weight/step": ((), "int64"), "fc3.bias": ((5,), "float64")}
    with pytest.raises(ckpt.CheckpointError) as e:
        ckpt.load(d, expected=expected)
    msg = str(e.value)
    assert "missing 1: fc3.bias" in msg
    assert "unexpected 1: fc2.bias" in msg
    assert "fc1.weight: checkpoint float32[4, 3], model float32[3, 4]" in msg


def test_unparsable_index_and_missing_directory(tmp_path):
    d = str(tmp_path / "ck")
    ckpt.save(d, tensors(), model="mlp")
    with open(os.path.join(d, "index.json"), "w") as f:
        f.write("{not json")
    with pytest.raises(ckpt.CheckpointError, match="index.json does not parse"):
        ckpt.load(d)
    with pytest.raises(ckpt.CheckpointError, match="no such directory"):
        ckpt.load(str(tmp_path / "nowhere"))


def test_bad_input_to_save_changes_nothing(tmp_path):
    d = str(tmp_path / "ck")
    with pytest.raises(ckpt.CheckpointError, match="nothing to save"):
        ckpt.save(d, {})
    with pytest.raises(ckpt.CheckpointError, match="meta is not JSON"):
        ckpt.save(d, {"w": np.ones(2)}, meta={"f": object()})
    assert os.listdir(tmp_path) == []
