"""The runnable examples in the docstrings of nn.Graph, the checkpoint
formats (logical and sharded, with the world of processes a sharded save
runs in), the save-target rule and flow.save run and print what they say."""
from __future__ import annotations

import doctest
import importlib

import pytest


@pytest.mark.parametrize("name", ["oneflow_lite.nn.graph", "oneflow_lite.checkpoint",
                                  "oneflow_lite.sharded_checkpoint", "oneflow_lite._thread_world",
                                  "oneflow_lite._save_paths", "oneflow_lite.serialization"])
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0, f"{name} has no example"
    assert result.failed == 0, f"{name}: {result.failed} failing examples"
