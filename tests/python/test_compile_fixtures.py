"""Compiling and running is what it was, bit for bit: for a small float64 GPT
and MLP under several searchers and session specs (and one nn.Graph), the
strategy, the plan report and stats, the predicted bytes, the sha256 of the
lowered Plan, and the losses and parameters after two SGD steps equal the
fixtures recorded before the compile path was retyped
(tests/python/data/compile_fixtures.json, written by compile_fixtures.py on
the code of that time: the oracle is the earlier code, not this one). The
losses and parameters were recorded again when the cross-entropy gradient's
rounding changed (one exp pass); every compile key kept its recorded value.

Numbers are held bit for bit on the kind of CPU that recorded them
(`recorded_on`). On another (a CPU with AVX-512 where AVX2 recorded, say),
the kernels run other code paths (OpenBLAS's dgemm, the vector loops) whose
sums round differently, so there the losses and each variable's sum and sum
of magnitudes are compared with rtol 1e-10 and atol 1e-12, and the
variables' byte digests are skipped; everything else (strategies, plans,
reports, predictions) is still compared exactly."""
from __future__ import annotations

import json
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
import compile_fixtures as cf  # noqa: E402

with open(cf.PATH, encoding="utf-8") as f:
    FIXTURES = json.load(f)


def test_every_case_has_a_fixture():
    assert sorted(FIXTURES) == sorted(cf.RECORDERS)


NUMBERS = ("losses", "param_sums")  # float.hex values, compared within tolerance elsewhere
CPU_BYTES = ("params",)  # digests of the variables' bytes: held on the recording CPU only


def floats(value) -> np.ndarray:
    """The float.hex strings of a losses list or a param_sums map, in order."""
    if isinstance(value, dict):
        value = [x for k in sorted(value) for x in value[k]]
    return np.array([float.fromhex(x) for x in value], np.float64)


def numbers_close(got, want) -> bool:
    if isinstance(want, dict) and (not isinstance(got, dict) or sorted(got) != sorted(want)):
        return False
    a, b = floats(got), floats(want)
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=1e-10, atol=1e-12))


def test_every_case_records_its_cpu_and_sums():
    for name, want in FIXTURES.items():
        assert want.get("recorded_on"), name
        assert sorted(want["param_sums"]) == sorted(want["params"]), name


def test_numbers_close_tells_a_nudge_from_rounding():
    want = ["0x1.625caf396b24fp+1", "0x1.5df9aed4cd479p+1"]
    ulp = [(float.fromhex(x) + 2 * np.spacing(float.fromhex(x))).hex() for x in want]
    nudged = [(float.fromhex(x) * (1 + 1e-7)).hex() for x in want]
    assert numbers_close(ulp, want)
    assert not numbers_close(nudged, want)
    assert not numbers_close(want[:1], want)
    assert not numbers_close({"w": want}, {"v": want})


@pytest.mark.parametrize("name", sorted(cf.RECORDERS))
def test_compile_is_bitwise_as_recorded(name):
    got = cf.RECORDERS[name]()
    want = FIXTURES[name]
    same_cpu = got["recorded_on"] == want["recorded_on"]
    for key in sorted(want):
        if key == "recorded_on" or (key in CPU_BYTES and not same_cpu):
            continue
        if key in NUMBERS and not same_cpu:
            assert numbers_close(got.get(key), want[key]), \
                f"{name}: {key} differ beyond rounding: {got.get(key)} != {want[key]}"
        else:
            assert got.get(key) == want[key], f"{name}: {key} differs"
    assert sorted(got) == sorted(want)
