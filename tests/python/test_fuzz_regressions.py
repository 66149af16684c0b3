"""Replays the atheris targets' seed corpora and committed regression inputs
(fuzz/corpus/TARGET, fuzz/regressions/TARGET; fuzz/README.md) through the
targets' TestOneInput, without atheris: an input that once made a reader
raise an unexpected exception (or none with a message) must now raise only
ValueError/TypeError/OSError with a message. The C++ targets' inputs are
replayed by ctest (fuzz_replay_*)."""
import importlib
import os
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "fuzz", "python"))

TARGETS = ["strategy", "checkpoint_index", "sharded_index", "cli_data", "cli_cluster"]


def inputs(target):
    for kind in ("corpus", "regressions"):
        folder = os.path.join(ROOT, "fuzz", kind, target)
        for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
            if not name.startswith(".") and name != "README.md":
                yield f"{kind}/{target}/{name}"


CASES = [(t, p) for t in TARGETS for p in inputs(t)]


def test_every_target_has_seeds():
    for target in TARGETS:
        assert any(p.startswith(f"corpus/{target}/") for _, p in CASES), target


@pytest.mark.parametrize("target,path", CASES, ids=[p for _, p in CASES])
def test_input_raises_only_expected_errors(target, path):
    module = importlib.import_module(f"fuzz_{target}")
    with open(os.path.join(ROOT, "fuzz", path), "rb") as f:
        module.TestOneInput(f.read())


def test_unexpected_errors_are_findings():
    import fuzz_common

    with fuzz_common.expected_errors("x"):
        raise ValueError("bad value 3")
    with pytest.raises(KeyError):
        with fuzz_common.expected_errors("x"):
            raise KeyError("name")
    with pytest.raises(AssertionError, match="without a message"):
        with fuzz_common.expected_errors("x"):
            raise ValueError("")


@pytest.mark.parametrize("change,message", [
    (lambda e: e.update(file="../../etc/passwd"), "expected a relative path inside the checkpoint"),
    (lambda e: e.update(file="/etc/passwd"), "expected a relative path inside the checkpoint"),
    (lambda e: e.update(shape=[2, -3]), "expected a list of non-negative integers"),
    (lambda e: e.update(shape=[True, 3]), "expected a list of non-negative integers"),
    (lambda e: e.update(dtype="floaty"), "dtype='floaty', expected a numpy dtype name"),
    (lambda e: e.pop("file"), "lacks 'file'"),
    (lambda e: e.update(nbytes="12"), "nbytes='12', expected a non-negative integer"),
], ids=["parent", "absolute", "negative", "bool", "dtype", "no_file", "nbytes_str"])
def test_checkpoint_index_entries_are_checked_before_any_file_is_read(tmp_path, change, message):
    import json

    import numpy as np

    from oneflow_lite import checkpoint

    path = str(tmp_path / "ckpt")
    checkpoint.save(path, {"w": np.ones((2, 3), np.float32)}, model="toy")
    with open(f"{path}/index.json") as f:
        index = json.load(f)
    change(index["tensors"][0])
    with open(f"{path}/index.json", "w") as f:
        json.dump(index, f)
    with pytest.raises(checkpoint.CheckpointError, match=message):
        checkpoint.load(path)


def test_checkpoint_index_refuses_a_name_twice(tmp_path):
    import json

    import numpy as np

    from oneflow_lite import checkpoint

    path = str(tmp_path / "ckpt")
    checkpoint.save(path, {"w": np.ones(2, np.float32), "v": np.ones(2, np.float32)})
    with open(f"{path}/index.json") as f:
        index = json.load(f)
    index["tensors"][1]["name"] = "w"
    with open(f"{path}/index.json", "w") as f:
        json.dump(index, f)
    with pytest.raises(checkpoint.CheckpointError, match="names tensor 'w' twice"):
        checkpoint.load(path)


@pytest.mark.parametrize("spec,message", [
    ({"kind": 5, "signatures": {}}, "is not a saved strategy: "),
    ({"kind": "random", "seed": 1}, "holds kind 'random', not a strategy"),
    ({"kind": "manual", "signatures": [1]}, "is not a saved strategy: "),
    ({"kind": "manual", "signatures": {"fc1": "nonsense"}}, "op 'fc1': "),
    ({"strategy": {"sources": [{"tensor": "x", "nd_sbp": "(Q)"}]}}, "tensor 'x': "),
], ids=["kind_int", "random_spec", "signatures_list", "bad_signature", "bad_sbp"])
def test_strategy_files_are_checked_when_read(tmp_path, spec, message):
    import json

    from oneflow_lite import _C

    path = tmp_path / "strategy.json"
    path.write_text(json.dumps(spec))
    with pytest.raises(ValueError, match=message):
        _C.load_strategy(str(path))


def test_plan_spec_arguments_are_type_checked():
    from oneflow_lite import _C

    with pytest.raises(ValueError, match="stages >= 1 and seed >= 0, got stages=-3 seed=1"):
        _C.PlanSpec.random(1, -3)
    with pytest.raises(ValueError, match="seed >= 0, got stages=1 seed=-1"):
        _C.PlanSpec.random(-1)
    with pytest.raises(TypeError):
        _C.PlanSpec.random("a")
    with pytest.raises(TypeError):
        _C.PlanSpec.random(2**64)
