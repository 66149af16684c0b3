"""The CPU matmul kernel cuts each product's output into tiles by its sizes
alone (ops/math/matmul_tiles.h) and runs each tile as one single-threaded
oneDNN call over the whole contraction. So:

- matmul, batch_matmul and matmul_bias, with every transpose, agree with
  numpy (float64 products as the oracle), including sizes that leave uneven
  edge tiles, column tiles and packed row tiles of a transposed a;
- their float32 results are bitwise the same with 1, 2, 3 and 4 kernel
  threads. The shapes include long contractions over small outputs, which
  oneDNN's own threading splits by thread count on AVX2 CPUs (there the
  last bits changed with the thread count before the tiling).
"""
from __future__ import annotations

import gc

import numpy as np
import pytest

from oneflow_lite.graph_builder import GraphBuilder

# (batch or None, m, n, k): long contractions, uneven edges, several row
# tiles (1600 rows: 4; 800 x 200 matrices: 2 each), many small matrices,
# column tiles (333 x 1031, 100 x 600, 200 x 900 matrices: fewer rows than
# two row tiles), and row tiles of a transposed a of 1024 columns (packed
# before the call).
SHAPES = [
    (None, 32, 48, 20000),
    (None, 128, 128, 4096),
    (None, 100, 600, 128),
    (None, 333, 1031, 257),
    (None, 1, 700, 3000),
    (None, 1600, 96, 700),
    (6, 33, 17, 2048),
    (40, 16, 16, 64),
    (3, 800, 200, 64),
    (None, 1024, 40, 96),
    (3, 200, 900, 64),
    (2, 1024, 48, 80),
]


def program(shape, ta, tb, bias, dtype=np.float32):
    batch, m, n, k = shape
    lead = [] if batch is None else [batch]
    b = GraphBuilder()
    a = b.input("a", lead + ([k, m] if ta else [m, k]), dtype=np.dtype(dtype).name)
    w = b.input("b", lead + ([n, k] if tb else [k, n]), dtype=np.dtype(dtype).name)
    if batch is not None:
        out = b.op("batch_matmul", a, w, transpose_a=ta, transpose_b=tb)
    else:
        out = b.op("matmul", a, w, transpose_a=ta, transpose_b=tb)
    c = None
    if bias:
        c = b.input("c", [n], dtype=np.dtype(dtype).name)
        out = b.op("bias_add", out, c, axis=1)
    return b, a, w, c, out


def inputs(shape, ta, tb, dtype=np.float32):
    batch, m, n, k = shape
    lead = () if batch is None else (batch,)
    rng = np.random.default_rng(m * 7 + n * 3 + k)
    a = rng.standard_normal(lead + ((k, m) if ta else (m, k))).astype(dtype)
    w = rng.standard_normal(lead + ((n, k) if tb else (k, n))).astype(dtype)
    c = rng.standard_normal(n).astype(dtype)
    return a, w, c


def numpy_product(a, w, c, ta, tb, bias):
    a64, w64 = a.astype(np.float64), w.astype(np.float64)
    if ta:
        a64 = np.swapaxes(a64, -1, -2)
    if tb:
        w64 = np.swapaxes(w64, -1, -2)
    out = a64 @ w64
    return out + c.astype(np.float64) if bias else out


def run(shape, ta, tb, bias, threads, dtype=np.float32):
    b, a_name, w_name, c_name, out = program(shape, ta, tb, bias, dtype)
    a, w, c = inputs(shape, ta, tb, dtype)
    feed = {a_name: a, w_name: w}
    if bias:
        feed[c_name] = c
    session = b.session(num_threads=threads)
    got = np.array(session.run(feed, [out])[0])
    del session  # one session's thread bound at a time
    gc.collect()
    return got, (a, w, c)


CASES = [(shape, ta, tb) for shape in SHAPES for ta in (False, True) for tb in (False, True)]


@pytest.mark.parametrize("shape,ta,tb", CASES)
def test_matmul_matches_numpy(shape, ta, tb):
    bias = shape[0] is None and not ta  # matmul_bias: the one lowering fuses matmul + bias_add
    got, (a, w, c) = run(shape, ta, tb, bias, threads=2)
    want = numpy_product(a, w, c, ta, tb, bias)
    k = shape[3]
    # float32 sums of k products of standard normals: error grows like sqrt(k).
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=2e-6 * k ** 0.5 * 10)


def test_float64_matmul_matches_numpy():
    shape = (None, 70, 90, 300)
    got, (a, w, c) = run(shape, True, False, False, threads=2, dtype=np.float64)
    np.testing.assert_allclose(got, numpy_product(a, w, c, True, False, False),
                               rtol=1e-12, atol=1e-12)


def bits(x):
    return np.ascontiguousarray(x, np.float32).view(np.uint32)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("ta,tb", [(False, False), (True, True)])
def test_matmul_bitwise_same_for_any_thread_count(shape, ta, tb):
    bias = shape[0] is None
    one, _ = run(shape, ta, tb, bias, threads=1)
    for threads in (2, 3, 4):
        other, _ = run(shape, ta, tb, bias, threads=threads)
        differ = int(np.count_nonzero(bits(one) != bits(other)))
        assert differ == 0, f"{shape} ta={ta} tb={tb}: {differ} elements differ " \
                            f"between 1 and {threads} threads"
