"""The runnable examples in the frontend's docstrings (the package's
20-line example that the README shows, the tracer, the model zoo) run and
print what they say."""
from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["oneflow_lite", "oneflow_lite.nn.graph_trace", "oneflow_lite.models",
           "oneflow_lite.models.mlp", "oneflow_lite.models.gpt", "oneflow_lite.models.vgg",
           "oneflow_lite.models.trace", "oneflow_lite.autograd", "oneflow_lite._autograd",
           "oneflow_lite._tensor_math",
           "oneflow_lite.distributed", "oneflow_lite.distributed.launch",
           "oneflow_lite.periodic_checkpoint"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0, f"{name} has no example"
    assert result.failed == 0, f"{name}: {result.failed} failing examples"
