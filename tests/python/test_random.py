"""Counter-based randomness: the test table's numpy Philox4x32-10 against the
Random123 known-answer vectors, and dropout's draws across iterations and
large tensors against that numpy implementation."""
from __future__ import annotations

import numpy as np
import pytest

from oneflow_lite.graph_builder import GraphBuilder
from op_cases.nn import dropout_mask, philox4x32, uniform_float

# Random123's kat_vectors for philox4x32_10: (counter, key, expected output).
KNOWN_ANSWERS = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 4, (0xFFFFFFFF, 0xFFFFFFFF), (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
]


@pytest.mark.parametrize("counter,key,expected", KNOWN_ANSWERS)
def test_numpy_philox_matches_random123_known_answers(counter, key, expected):
    got = philox4x32(np.array(counter, np.uint32), np.array(key, np.uint32))
    assert [int(w) for w in got] == list(expected)


def test_numpy_philox_is_vectorised():
    counters = np.array([c for c, _, _ in KNOWN_ANSWERS], np.uint32)
    keys = np.array([k for _, k, _ in KNOWN_ANSWERS], np.uint32)
    expected = np.array([e for _, _, e in KNOWN_ANSWERS], np.uint32)
    np.testing.assert_array_equal(philox4x32(counters, keys), expected)


def test_uniform_is_in_unit_interval_and_roughly_uniform():
    u = uniform_float(seed=5, stream=0, index=np.arange(100000))
    assert u.min() >= 0.0 and u.max() < 1.0
    assert abs(u.mean() - 0.5) < 0.01
    # Words differ with the stream and the seed's high half.
    assert not np.array_equal(u[:64], uniform_float(5, 1, np.arange(64)))
    assert not np.array_equal(u[:64], uniform_float(5 + (1 << 32), 0, np.arange(64)))


def _dropout_session(shape, rate, seed):
    b = GraphBuilder()
    x = b.input("x", list(shape))
    y, mask = b.dropout(x, rate=rate, seed=seed)
    return b.session(num_threads=2), y, mask


def test_dropout_draws_a_new_mask_each_iteration():
    shape, rate, seed = (300, 200), 0.25, 42   # 60000 elements: ParallelFor splits the rows
    session, y, mask = _dropout_session(shape, rate, seed)
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    masks = []
    for iteration in range(3):
        got_y, got_mask = session.run({"x": x}, [y, mask])
        want = dropout_mask(shape, np.float32, rate, seed, iteration)
        np.testing.assert_array_equal(got_mask, want)
        np.testing.assert_array_equal(got_y, x * want)
        masks.append(got_mask)
    assert not np.array_equal(masks[0], masks[1])
    kept = np.mean(masks[0] != 0)
    assert abs(kept - (1 - rate)) < 0.01
