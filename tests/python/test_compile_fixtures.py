"""Compiling and running is what it was, bit for bit: for a small float64 GPT
and MLP under several searchers and session specs (and one nn.Graph), the
strategy, the plan report and stats, the predicted bytes, the sha256 of the
lowered Plan, and the losses and parameters after two SGD steps equal the
fixtures recorded before the compile path was retyped
(tests/python/data/compile_fixtures.json, written by compile_fixtures.py on
the code of that time: the oracle is the earlier code, not this one). The
losses and parameters were recorded again when the cross-entropy gradient's
rounding changed (one exp pass); every compile key kept its recorded value."""
from __future__ import annotations

import json
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
import compile_fixtures as cf  # noqa: E402

with open(cf.PATH, encoding="utf-8") as f:
    FIXTURES = json.load(f)


def test_every_case_has_a_fixture():
    assert sorted(FIXTURES) == sorted(cf.RECORDERS)


@pytest.mark.parametrize("name", sorted(cf.RECORDERS))
def test_compile_is_bitwise_as_recorded(name):
    got = cf.RECORDERS[name]()
    want = FIXTURES[name]
    for key in sorted(want):
        assert got.get(key) == want[key], f"{name}: {key} differs"
    assert sorted(got) == sorted(want)
