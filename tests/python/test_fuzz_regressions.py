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

TARGETS = ["strategy", "checkpoint_index", "cli_data", "cli_cluster"]


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
