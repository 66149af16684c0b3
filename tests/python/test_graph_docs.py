"""The runnable examples in the docstrings of nn.Graph and the checkpoint
format run and print what they say."""
from __future__ import annotations

import doctest
import importlib

import pytest


@pytest.mark.parametrize("name", ["oneflow_lite.nn.graph", "oneflow_lite.checkpoint"])
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0, f"{name} has no example"
    assert result.failed == 0, f"{name}: {result.failed} failing examples"
