"""The SBP-rule check: every declared signature of every op, run on simulated ranks.

For every row of the op table (the rows of test_ops.py, plus a few rows
below whose shapes make the splits uneven or smaller than the group), every
1-D SBP signature the op declares on p = 2 and p = 3 ranks, every N-D
signature of the registry's expansion on the hierarchy [2, 2], and a
deterministic sample of those on [3, 2] and [2, 1, 3]:

1. each rank's inputs are cut from the row's float64 inputs, in numpy, by the
   nested rule of DESIGN.md section 3 (written here independently of
   oneflow_lite/core/slicing.cpp): hierarchy axes from outer to inner, S(a)
   takes the rank's numpy.array_split part along a of what the outer axes
   left, B keeps it, P replaces it by random addends that sum to it;
2. each output's physical shape comes the same way from its logical shape
   (op_info) and its Sbp (B and P keep the full extent);
3. _C.run_kernel runs the CPU kernel per rank (random ops get the logical
   shape and offset of output 0, so a shard draws the numbers of its slice;
   every input's logical shape and offset go too, as the runtime passes them:
   a vocabulary-split embedding looks up only the ids of its rows);
4. the outputs (and mutated inputs of update ops) are put back together from
   the inner hierarchy axis outwards: S concatenates, B requires every rank to
   hold the same value, P sums; the result must match _C.run_op on the full
   inputs (rtol 1e-9, atol 1e-12).

The 1-D signatures run once more in float32 on 3 ranks (rtol 1e-4, atol
1e-5), for the kernels with a float32 path of their own.

A P on an integer input or output (labels, ids, counters) is reported as a
wrong signature: integer addends are not a meaningful layout for an index.
"""
from __future__ import annotations

import importlib
import itertools
import pkgutil
import re

import numpy as np
import pytest

from oneflow_lite import _C
import op_cases
from op_table import OpCase

CASES: list[OpCase] = []
for _info in pkgutil.iter_modules(op_cases.__path__):
    CASES.extend(importlib.import_module(f"op_cases.{_info.name}").CASES)


def _extra(id, op, make, attrs=None):
    """A row for this check only: its reference is run_op, not numpy."""
    return OpCase(id=f"sbp_{id}", op=op, make_inputs=make, forward=None, attrs=attrs or {},
                  no_grad_reason="SBP-rule check only")


def _normal(*shapes):
    return lambda rng, dt: [rng.standard_normal(s).astype(dt) for s in shapes]


# Shapes chosen for the splits: 5 rows over 2 or 3 ranks are uneven, and an
# axis of 2 (or 1) over 3 ranks leaves a rank with an empty part.
EXTRA_CASES = [
    _extra("matmul_5x7x2", "matmul", _normal((5, 7), (7, 2))),
    _extra("matmul_tb_5x2x1", "matmul", _normal((5, 2), (1, 2)), {"transpose_b": True}),
    _extra("batch_matmul_5", "batch_matmul", _normal((5, 2, 3), (5, 3, 1))),
    _extra("add_bcast_5", "add", _normal((5, 1), (2,))),
    _extra("mul_bcast_5", "mul", _normal((2, 5, 1), (5, 2))),
    _extra("bias_add_5x2", "bias_add", _normal((5, 2), (2,))),
    _extra("reduce_sum_5x2", "reduce_sum", _normal((5, 2)), {"axes": [1]}),
    _extra("reduce_mean_5x2", "reduce_mean", _normal((5, 2)), {"axes": [1], "keepdims": True}),
    _extra("broadcast_to_5", "broadcast_to", _normal((5, 1)), {"shape": [2, 5, 2]}),
    _extra("sum_to_5", "sum_to", _normal((2, 5, 2)), {"shape": [5, 1]}),
    _extra("softmax_5x2", "softmax", _normal((5, 2)), {"axis": 1}),
    _extra("layer_norm_5x2x3", "layer_norm", _normal((5, 2, 3), (2, 3), (2, 3)),
           {"begin_norm_axis": 1}),
    _extra("xent_5", "sparse_softmax_cross_entropy",
           lambda rng, dt: [rng.standard_normal((5, 2)).astype(dt),
                            rng.integers(0, 2, size=(5,)).astype(np.int64)]),
    _extra("embedding_5x2", "embedding",
           lambda rng, dt: [rng.standard_normal((4, 2)).astype(dt),
                            rng.integers(0, 4, size=(5,)).astype(np.int32)]),
    _extra("dropout_5x2", "dropout", _normal((5, 2)), {"rate": 0.5, "seed": 3}),
    _extra("concat_5", "concat", _normal((5, 1), (5, 2)), {"axis": 1}),
    _extra("slice_5", "slice", _normal((5, 2)), {"start": [-5, 1], "stop": [5, 2]}),
    _extra("transpose_5x2", "transpose", _normal((5, 2)), {"perm": [1, 0]}),
    _extra("conv2d_5", "conv2d", _normal((5, 2, 4, 3), (2, 2, 3, 2)), {"padding": [1, 0]}),
    _extra("avg_pool2d_5", "avg_pool2d", _normal((5, 2, 4, 4)), {"kernel_size": [2, 2]}),
    _extra("sgd_update_5x2", "sgd_update", _normal((5, 2), (5, 2), (5, 2)),
           {"lr": 0.1, "momentum": 0.9, "weight_decay": 0.01}),
    # comparisons, selection and arg reductions (bool and index outputs)
    _extra("less_bcast_5", "less", _normal((5, 1), (2,))),
    _extra("where_5x2", "where", lambda rng, dt: [rng.random((5, 1)) < 0.5,
                                                   rng.standard_normal((5, 2)).astype(dt),
                                                   rng.standard_normal((2,)).astype(dt)]),
    _extra("gather_5x3", "gather", lambda rng, dt: [rng.standard_normal((5, 3)).astype(dt),
                                                     rng.integers(0, 3, (5, 4))], {"axis": 1}),
    _extra("argmax_5x2", "argmax", _normal((5, 2)), {"axis": 1}),
    _extra("reduce_any_5x2", "reduce_any", lambda rng, dt: [rng.random((5, 2)) < 0.3],
           {"axes": [1]}),
]
CASES = CASES + EXTRA_CASES
BY_ID = {c.id: c for c in CASES}
assert len(BY_ID) == len(CASES), "duplicate row ids"

# (rtol, atol) per dtype. float64 is the check; float32 runs the 1-D
# signatures once more on 3 ranks for the kernels with their own float32 path
# (oneDNN pooling, BLAS), where P addends cost a few float32 roundings.
TOLERANCES = {np.float64: (1e-9, 1e-12), np.float32: (1e-4, 1e-5)}
GROUP_SIZES = (2, 3)
# N-D hierarchies and how many of a row's signatures each checks (None: all).
# [2, 2] gets every 2-D signature; [3, 2] nests uneven splits (5 rows: 2, 2, 1
# then 1, 1, 1, 1, 1, 0); [2, 1, 3] has an axis of one rank.
ND_HIERARCHIES = (((2, 2), None), ((3, 2), 20), ((2, 1, 3), 12))

CHECKED = {}  # "on [2, 2]" -> (row, signature) cases run, for the summary line


# ---------------------------------------------------------------- signatures

_SBP = re.compile(r"^(?:S\((\d+)\)|(B)|(P))$")


def parse_sbp(text: str) -> tuple:
    """'S(1)' -> ('S', 1); 'B' -> ('B',); 'P' -> ('P',)."""
    m = _SBP.match(text.strip())
    assert m, f"unknown Sbp '{text}'"
    return ("S", int(m.group(1))) if m.group(1) is not None else ((m.group(2) or m.group(3)),)


def _top_level_items(side: str) -> list:
    items, depth, start = [], 0, 0
    for i, ch in enumerate(side + ","):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            if side[start:i].strip():
                items.append(side[start:i].strip())
            start = i + 1
    return items


def parse_signature(text: str) -> tuple:
    """'(S(0), B), (B, S(1)) -> (S(0), S(1))' or the 1-D 'S(0), B -> S(0)'
    -> (inputs, outputs), each a list of NdSbp tuples (one Sbp per axis)."""
    lhs, rhs = text.split("->")

    def nd(item):
        if item.startswith("(") and item.endswith(")") and not item.startswith("S("):
            return tuple(parse_sbp(s) for s in _top_level_items(item[1:-1]))
        return (parse_sbp(item),)

    return [nd(i) for i in _top_level_items(lhs)], [nd(o) for o in _top_level_items(rhs)]


# ---------------------------------------------------------------- nested slicing

def ranks(hierarchy):
    """Every rank's hierarchy coordinates, row-major."""
    return list(itertools.product(*[range(h) for h in hierarchy]))


def distribute(x: np.ndarray, nd_sbp: tuple, hierarchy, rng) -> dict:
    """Each rank's local tensor of the logical x: {coords: array}."""
    parts = {(): x}
    for axis, (size, sbp) in enumerate(zip(hierarchy, nd_sbp)):
        nxt = {}
        for prefix, value in parts.items():
            if sbp[0] == "S":
                pieces = np.array_split(value, size, axis=sbp[1])
            elif sbp[0] == "B":
                pieces = [value] * size
            else:
                addends = [rng.standard_normal(value.shape).astype(x.dtype)
                           for _ in range(size - 1)]
                pieces = addends + [value - sum(addends)]
            for i, piece in enumerate(pieces):
                nxt[prefix + (i,)] = np.array(piece, dtype=x.dtype, order="C")
        parts = nxt
    return parts


def local_place(shape, nd_sbp: tuple, hierarchy, coords) -> tuple:
    """(physical shape, offset in the logical tensor) of one rank: a split of
    n over p gives the first n % p parts one extra row."""
    shape, offset = list(shape), [0] * len(shape)
    for size, sbp, c in zip(hierarchy, nd_sbp, coords):
        if sbp[0] != "S":
            continue
        n, a = shape[sbp[1]], sbp[1]
        base, extra = divmod(n, size)
        offset[a] += c * base + min(c, extra)
        shape[a] = base + (1 if c < extra else 0)
    return shape, offset


def assemble(parts: dict, nd_sbp: tuple, hierarchy, what: str, rtol: float,
             atol: float) -> np.ndarray:
    """The logical tensor from every rank's part, inner hierarchy axis first."""
    for axis in reversed(range(len(hierarchy))):
        sbp = nd_sbp[axis]
        groups = {}
        for coords, value in parts.items():
            groups.setdefault(coords[:axis], []).append((coords[axis], value))
        nxt = {}
        for prefix, members in groups.items():
            values = [v for _, v in sorted(members, key=lambda m: m[0])]
            if sbp[0] == "S":
                nxt[prefix] = np.concatenate(values, axis=sbp[1])
            elif sbp[0] == "B":
                for k, v in enumerate(values[1:], start=1):
                    np.testing.assert_allclose(
                        v, values[0], rtol=rtol, atol=atol,
                        err_msg=f"{what}: B on hierarchy axis {axis}, rank {prefix + (k,)} "
                                f"differs from rank {prefix + (0,)}")
                nxt[prefix] = values[0]
            else:
                nxt[prefix] = sum(values[1:], values[0].copy())
        parts = nxt
    return parts[()]


# ---------------------------------------------------------------- the check

class RowContext:
    """What every signature of one row shares: inputs, references, metadata."""

    def __init__(self, case: OpCase, dtype=np.float64):
        self.case = case
        self.tolerance = TOLERANCES[dtype]
        self.inputs = case.make_inputs(np.random.default_rng(0), dtype)
        self.descs = [(list(x.shape), str(x.dtype)) for x in self.inputs]
        info = _C.op_info(case.op, self.descs, case.attrs)
        self.out_descs = [(list(s), d) for s, d in info["outputs"]]
        self.one_d = info["sbp_signatures"]
        self.mutable = _C.op_schema(case.op)["mutable_inputs"]
        self.expected = _C.run_op(case.op, [x.copy() for x in self.inputs], case.attrs)

    def check(self, signature: str, hierarchy) -> list:
        """Problems of one signature on one hierarchy (empty when it holds)."""
        ins, outs = parse_signature(signature)
        where = f"{self.case.id} [{signature}] on {list(hierarchy)}"
        if len(ins) != len(self.inputs) or len(outs) != len(self.out_descs):
            return [f"{where}: names {len(ins)} inputs and {len(outs)} outputs, the op has "
                    f"{len(self.inputs)} and {len(self.out_descs)}"]
        problems = []
        for i, (x, sbp) in enumerate(zip(self.inputs, ins)):
            if not np.issubdtype(x.dtype, np.floating) and any(s[0] == "P" for s in sbp):
                problems.append(f"{where}: P on integer input {i} ({x.dtype})")
            for s in sbp:
                if s[0] == "S" and not 0 <= s[1] < x.ndim:
                    problems.append(f"{where}: input {i} of shape {x.shape} has no axis {s[1]}")
        for k, ((shape, dtype), sbp) in enumerate(zip(self.out_descs, outs)):
            if not dtype.startswith("float") and any(s[0] == "P" for s in sbp):
                problems.append(f"{where}: P on integer output {k} ({dtype})")
            for s in sbp:
                if s[0] == "S" and not 0 <= s[1] < len(shape):
                    problems.append(f"{where}: output {k} of shape {shape} has no axis {s[1]}")
        if problems:
            return problems

        rng = np.random.default_rng(1)
        local_inputs = [distribute(x, sbp, hierarchy, rng) for x, sbp in zip(self.inputs, ins)]
        results = {}
        for coords in ranks(hierarchy):
            descs = [(local_place(shape, sbp, hierarchy, coords)[0], dtype)
                     for (shape, dtype), sbp in zip(self.out_descs, outs)]
            kwargs = {}
            if self.out_descs:
                shape0 = self.out_descs[0][0]
                kwargs = dict(logical_shape=shape0,
                              logical_offset=local_place(shape0, outs[0], hierarchy, coords)[1])
            # Every input's place too (a vocabulary-split embedding reads its weight's).
            kwargs["input_places"] = [
                (list(x.shape), local_place(x.shape, sbp, hierarchy, coords)[1])
                for x, sbp in zip(self.inputs, ins)]
            results[coords] = _C.run_kernel(self.case.op, [x[coords] for x in local_inputs],
                                            self.case.attrs, descs, **kwargs)
        # Outputs, then mutated inputs (which keep their input layout).
        result_sbps = list(outs) + [ins[i] for i in self.mutable]
        if len(self.expected) != len(result_sbps):
            return [f"{where}: run_op gave {len(self.expected)} results, expected "
                    f"{len(result_sbps)}"]
        for k, (sbp, expected) in enumerate(zip(result_sbps, self.expected)):
            what = f"{where}, result {k}"
            parts = {coords: r[k] for coords, r in results.items()}
            try:
                got = assemble(parts, sbp, hierarchy, what, *self.tolerance)
                assert got.shape == expected.shape, \
                    f"{what}: shape {got.shape} != {expected.shape}"
                rtol, atol = self.tolerance
                np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol, err_msg=what)
            except AssertionError as e:
                problems.append(_summary_of(e))
        return problems


def _summary_of(error: AssertionError) -> str:
    """numpy's message without the arrays: what failed, where, how far off."""
    lines = []
    for line in str(error).strip().splitlines():
        if line.lstrip().startswith(("x:", "y:")):
            break
        lines.append(line.strip())
    return "; ".join(l for l in lines if l)


def sample(signatures: list, n: int, k: int, limit) -> list:
    """A deterministic sample of at most `limit` of the n^k signatures on k
    axes (all when limit is None): first the diagonal (one 1-D signature on
    every axis, e.g. (S(0), S(0)): the same tensor axis split twice), then
    signatures that mix P and S, then an even stride through the rest."""
    if limit is None or len(signatures) <= limit:
        return list(signatures)
    diagonal = [i * sum(n ** j for j in range(k)) for i in range(n)]
    mixed = [i for i, s in enumerate(signatures) if "P" in s and "S(" in s and i not in diagonal]
    rest = [i for i in range(len(signatures)) if i not in diagonal and i not in mixed]
    chosen = diagonal[:limit]
    room = limit - len(chosen)
    for pool, share in ((mixed, (room + 1) // 2), (rest, None)):
        share = limit - len(chosen) if share is None else share
        if share > 0 and pool:
            step = max(1, -(-len(pool) // share))
            chosen += pool[::step][:share]
    return [signatures[i] for i in sorted(chosen)]


def _count(label: str, n: int = 1):
    CHECKED[label] = CHECKED.get(label, 0) + n


@pytest.fixture(scope="module", autouse=True)
def _summary(request):
    yield
    counts = ", ".join(f"{n} {label}" for label, n in CHECKED.items())
    line = f"\nSBP-rule check: (row, signature) cases checked: {counts}"
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    if capture is None:
        print(line)
        return
    with capture.global_and_fixture_disabled():  # shown even without -s
        print(line)


def _one_d(nd_signature: str) -> str:
    """'(S(0)), (B) -> (S(0))' (one axis) as the 1-D 'S(0), B -> S(0)'."""
    ins, outs = parse_signature(nd_signature)
    text = lambda sbps: ", ".join("B" if s[0][0] == "B" else "P" if s[0][0] == "P"
                                  else f"S({s[0][1]})" for s in sbps)
    return f"{text(ins)} -> {text(outs)}"


@pytest.mark.parametrize("case_id", [c.id for c in CASES])
def test_every_signature_reassembles_to_the_full_op(case_id):
    row = RowContext(BY_ID[case_id])
    assert row.one_d, f"{row.case.op} declares no SBP signature"
    problems = []
    # Asked with the mesh's sizes: signatures that need divisibility (reshape's
    # merges) join the unconditional ones, so each mesh may have more.
    hierarchies = []
    for p in GROUP_SIZES:
        one_d = _C.op_nd_sbp_signatures(row.case.op, row.descs, row.case.attrs, [p])
        assert set(row.one_d) <= {_one_d(s) for s in one_d}
        hierarchies.append(((p,), one_d))
    for hierarchy, limit in ND_HIERARCHIES:
        nd = _C.op_nd_sbp_signatures(row.case.op, row.descs, row.case.attrs, list(hierarchy))
        # The unconditional signatures' every combination, plus sound
        # combinations of the conditional ones (the op's N-D filter).
        n = len(set(row.one_d))
        assert len(nd) >= n ** len(hierarchy)
        hierarchies.append((hierarchy, sample(nd, n, len(hierarchy), limit)))
    for hierarchy, signatures in hierarchies:
        for signature in signatures:
            problems += row.check(signature, hierarchy)
            _count(f"on {list(hierarchy)}")
    assert not problems, "wrong SBP signatures:\n" + "\n".join(problems)


@pytest.mark.parametrize("case_id", [c.id for c in CASES])
def test_float32_kernels_reassemble_on_three_ranks(case_id):
    row = RowContext(BY_ID[case_id], np.float32)
    problems = [p for signature in row.one_d for p in row.check(signature, (3,))]
    _count("in float32 on [3]", len(row.one_d))
    assert not problems, "wrong SBP signatures in float32:\n" + "\n".join(problems)


def test_the_seed_of_backward_takes_a_partial_sum():
    # ones_like seeds backward: a loss held as P (sum over ranks) gets the
    # seed B with no all-reduce. The reassembly check above covers it with
    # every other signature; here it is named, on 2, 3 and [2, 2] ranks.
    row = RowContext(BY_ID["ones_like"])
    assert "P -> B" in row.one_d
    problems = row.check("(P) -> (B)", (2,)) + row.check("(P) -> (B)", (3,))
    problems += row.check("(P, P) -> (B, B)", (2, 2)) + row.check("(P, B) -> (B, B)", (2, 2))
    assert not problems, problems
    zeros = RowContext(BY_ID["zeros_like"])
    assert "P -> B" not in zeros.one_d  # only the seed needs it


# ---------------------------------------------------------------- the tools themselves

def test_nd_signatures_on_one_axis_are_the_declared_ones():
    descs = [([3, 4], "float64"), ([4, 5], "float64")]
    one_d = _C.op_info("matmul", descs, {})["sbp_signatures"]
    nd = _C.op_nd_sbp_signatures("matmul", descs, {}, 1)
    assert [parse_signature(s) for s in nd] == [parse_signature(s) for s in one_d]
    assert nd[:2] == ["(S(1)), (S(0)) -> (P)", "(S(0)), (B) -> (S(0))"]


def test_nd_signatures_count_and_order():
    descs = [([3, 4], "float64"), ([4, 5], "float64")]
    one_d = [parse_signature(s) for s in _C.op_info("matmul", descs, {})["sbp_signatures"]]
    nd = [parse_signature(s) for s in _C.op_nd_sbp_signatures("matmul", descs, {}, 3)]
    assert len(nd) == len(one_d) ** 3
    n = len(one_d)
    for index, (ins, outs) in enumerate(nd):  # axis 0 outermost: index = i0 n^2 + i1 n + i2
        picks = (index // (n * n), index // n % n, index % n)
        for axis, pick in enumerate(picks):
            assert [s[axis] for s in ins] == [s[0] for s in one_d[pick][0]]
            assert [s[axis] for s in outs] == [s[0] for s in one_d[pick][1]]


def test_nd_signatures_reject_bad_calls():
    with pytest.raises(ValueError, match="matmul: a hierarchy needs at least one axis"):
        _C.op_nd_sbp_signatures("matmul", [([3, 4], "float32"), ([4, 5], "float32")], {}, 0)
    with pytest.raises(ValueError, match=r"matmul: a.shape\[1\]=4 != b.shape\[0\]=3"):
        _C.op_nd_sbp_signatures("matmul", [([3, 4], "float32"), ([3, 5], "float32")], {}, 2)


def test_run_kernel_skips_inference_for_a_shard_and_fills_defaults():
    # Rank 1's shard (S(0) of 4) of reshape (4, 3, 4) -> [4, -1]: the kernel
    # runs on the local (1, 3, 4) -> (1, 12) although (1, 3, 4) itself
    # reshapes to (4, 3); transpose_a/transpose_b default to false.
    x = np.arange(12.0).reshape(1, 3, 4)
    (y,) = _C.run_kernel("reshape", [x], {"shape": [4, -1]}, [([1, 12], "float64")],
                         logical_shape=[4, 12], logical_offset=[1, 0])
    np.testing.assert_array_equal(y, x.reshape(1, 12))
    a, b = np.ones((2, 3)), np.ones((3, 4))
    (c,) = _C.run_kernel("matmul", [a, b], {}, [([2, 4], "float64")])
    np.testing.assert_array_equal(c, a @ b)


def test_run_kernel_returns_mutated_inputs_and_leaves_the_callers_alone():
    p, g, buf = np.ones(3), np.full(3, 2.0), np.zeros(3)
    new_p, new_buf = _C.run_kernel("sgd_update", [p, g, buf], {"lr": 0.5}, [])
    np.testing.assert_array_equal(new_p, np.zeros(3))
    np.testing.assert_array_equal(new_buf, np.zeros(3))  # momentum 0 leaves it
    np.testing.assert_array_equal(p, np.ones(3))


def test_run_kernel_reads_logical_place_and_iteration():
    x = np.ones((4, 5))
    attrs = {"rate": 0.5, "seed": 11}
    full = _C.run_op("dropout", [x], attrs)
    out = [([2, 5], "float64")] * 2
    shard = _C.run_kernel("dropout", [x[2:]], attrs, out, logical_shape=[4, 5],
                          logical_offset=[2, 0])
    np.testing.assert_array_equal(shard[1], full[1][2:])
    later = _C.run_kernel("dropout", [x[2:]], attrs, out, logical_shape=[4, 5],
                          logical_offset=[2, 0], iteration=1)
    assert not np.array_equal(later[1], shard[1])


def test_run_kernel_reads_input_places():
    # Rows 3..4 of a 5-row table: ids 3 and 4 found there, the others zero.
    table = np.arange(10.0).reshape(5, 2)
    ids = np.array([4, 0, 3], np.int64)
    out = [([3, 2], "float64")]
    (part,) = _C.run_kernel("embedding", [table[3:], ids], {}, out, logical_shape=[3, 2],
                            logical_offset=[0, 0], input_places=[([5, 2], [3, 0]), ([3], [0])])
    np.testing.assert_array_equal(part, [[8, 9], [0, 0], [6, 7]])
    # Checked against the logical 5 rows, not the shard's 2.
    with pytest.raises(ValueError, match=r"ids\[0\]=5 is out of range \[0, 5\)"):
        _C.run_kernel("embedding", [table[3:], np.array([5], np.int64)], {}, [([1, 2], "float64")],
                      logical_shape=[1, 2], logical_offset=[0, 0],
                      input_places=[([5, 2], [3, 0]), ([1], [0])])


@pytest.mark.parametrize("kwargs, message", [
    (dict(output_descs=[]), "relu: 0 output descs given for 1 outputs"),
    (dict(output_descs=[([2, -1], "float64")]), "relu: output y shape=(2, -1)"),
    (dict(output_descs=[([1, 2, 3], "float64")]),
     "relu: output y shape=(1, 2, 3) float64 but the op makes (2, 3) float64"),
    (dict(output_descs=[([2, 3], "float32")]), "relu: output y shape=(2, 3) float32"),
    (dict(attrs={"alpha": 1.0}), "relu: unknown attribute 'alpha'"),
    (dict(logical_shape=[4, 3], logical_offset=[3, 0]),
     "relu: output 0 shape=(2, 3) at logical_offset[0]=3 does not fit in logical_shape=(4, 3)"),
    (dict(logical_shape=[4, 3], logical_offset=[0]), "relu: logical_offset has 1 entries"),
    (dict(op_type="no_such_op"), "unknown op 'no_such_op'"),
    (dict(input_places=[([2, 3], [0, 0])] * 2), "relu: 2 input places given for 1 inputs"),
    (dict(input_places=[([3, 3], [2, 0])]),
     "relu: input x shape=(2, 3) at logical_offset[0]=2 does not fit in logical_shape=(3, 3)"),
])
def test_run_kernel_rejects_bad_calls(kwargs, message):
    call = dict(op_type="relu", inputs=[np.ones((2, 3))], attrs={},
                output_descs=[([2, 3], "float64")])
    call.update(kwargs)
    with pytest.raises(ValueError) as info:
        _C.run_kernel(**call)
    assert message in str(info.value)
