"""Megatron's vocabulary-parallel embedding run by the distributed runtime.

The token table wte [V, D] is stored split on the vocabulary, S(0), the ids
broadcast: each rank looks up the ids of its rows and writes zeros for the
others, so the embedding's output is a partial sum (ops/nn/embedding.cpp);
its gradient is each rank's own rows, scatter-added from the replicated ids
and output gradient. On [2], [4] (V = 10 rows split 3, 3, 2, 2: uneven) and
[2, 2], one SGD step (lr 1, no momentum) of loss = sum(embedding(wte, ids) * c)
must give numpy's embedding, loss and gradient (the gradient read back as
wte before - wte after). The same holds when the table is stored B and
sliced to S(0) by a boxing step in front of the lookup (the boxed register
carries its place). An id outside [0, V) is an error naming the value and
the logical vocabulary size, not a shard's.
"""
from __future__ import annotations

import numpy as np
import pytest

from oneflow_lite import _C
from oneflow_lite.graph_builder import GraphBuilder

V, D, IDS = 10, 3, (2, 5)


def build(wte: np.ndarray):
    b = GraphBuilder()
    ids = b.input("ids", list(IDS), "int64")
    c = b.input("c", list(IDS) + [D], "float64")
    b.variable("wte", wte)
    out = b.embedding("wte", ids, name="wte_lookup")
    loss = b.reduce_sum(b.mul(out, c))
    b.minimize(loss, "sgd", lr=1.0)
    return b, out, loss


def session(b, fetches, mesh):
    ranks = list(range(int(np.prod(mesh))))
    split = "(" + ", ".join(["S(0)"] * len(mesh)) + ")"
    whole = "(" + ", ".join(["B"] * len(mesh)) + ")"
    # The gradient pinned too: deduction would otherwise split the batch.
    pinned = {"wte": split, "ids": whole, "c": whole, b.program.gradients()["wte"]: split}
    spec = _C.PlanSpec.deduce(pinned)
    return _C.DistributedSession(b.program, ranks, mesh, spec, fetches, num_threads=2,
                                 timeout_ms=30000)


def data(rng):
    wte = rng.standard_normal((V, D))
    ids = rng.integers(0, V, size=IDS).astype(np.int64)
    ids.reshape(-1)[:3] = [0, V - 1, 0]  # both ends of the table, one id twice
    return wte, ids, rng.standard_normal(IDS + (D,))


@pytest.mark.parametrize("mesh", [[2], [4], [2, 2]], ids=["2", "4", "2x2"])
def test_vocab_split_embedding_and_gradient_equal_numpy(mesh):
    wte, ids, c = data(np.random.default_rng(5))
    b, out, loss = build(wte)
    dist = session(b, [out, loss], mesh)
    strategy = dist.strategy()
    split = ", ".join(["S(0)"] * len(mesh))
    whole = ", ".join(["B"] * len(mesh))
    assert f"embedding: ({split}), ({whole}) -> ({', '.join(['P'] * len(mesh))})" in strategy, \
        strategy
    assert f"embedding_grad: ({whole}), ({whole}) -> ({split})" in strategy, strategy
    got_out, got_loss = dist.run({"ids": ids, "c": c}, [out, loss])
    want_out = wte[ids]
    np.testing.assert_allclose(got_out, want_out, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got_loss, np.sum(want_out * c), rtol=1e-12, atol=1e-12)
    want_grad = np.zeros((V, D))
    np.add.at(want_grad, ids.reshape(-1), c.reshape(-1, D))
    np.testing.assert_allclose(wte - dist.get_variable("wte"), want_grad, rtol=1e-12,
                               atol=1e-12)
    # Each rank holds its own rows of the updated table, no more.
    layout = dist.variable_layout("wte")
    assert layout["nd_sbp"] == f"({split})"
    rows = sorted((s["offset"][0], s["shape"][0]) for s in layout["slices"].values())
    assert sum(n for _, n in set(rows)) == V


def test_out_of_range_id_names_the_logical_vocabulary():
    wte, ids, c = data(np.random.default_rng(6))
    b, out, loss = build(wte)
    dist = session(b, [out, loss], [4])
    ids.reshape(-1)[4] = V + 2
    with pytest.raises(ValueError, match=rf"ids\[0, 4\]={V + 2} is out of range \[0, {V}\) "
                                         rf"\(weight.shape\[0\]={V}\)"):
        dist.run({"ids": ids, "c": c}, [out, loss])
    np.testing.assert_array_equal(dist.get_variable("wte"), wte)  # the step changed nothing


# Per op type, a strategy whose table is stored B and sliced to S(0) by a
# boxing step for the lookup (the kernel reads the boxed slice's place), the
# gradient made S(0) and all-gathered into the replicated update.
BOXED = {"embedding": "(S(0)), (B) -> (P)", "mul": "(P), (B) -> (P)",
         "reduce_sum": "(P) -> (P)", "ones_like": "(B) -> (B)", "broadcast_to": "(B) -> (B)",
         "embedding_grad": "(B), (B) -> (S(0))", "sgd_update": "(B), (B), (B) -> "}


@pytest.mark.parametrize("mesh", [[2], [4]], ids=["2", "4"])
def test_a_table_sliced_by_boxing_looks_up_its_own_rows(mesh):
    wte, ids, c = data(np.random.default_rng(8))
    b, out, loss = build(wte)
    signatures = {}
    for line in session(b, [out, loss], mesh).strategy().splitlines():
        if " = " in line:  # "name = type: signature"
            name, rest = line.split(" = ", 1)
            op_type = rest.split(":", 1)[0]
            backward_mul = name.startswith("grad/") and op_type == "mul"
            signatures[name] = "(B), (B) -> (B)" if backward_mul else BOXED[op_type]
    sources = {"wte": "(B)", "wte/momentum": "(B)", "ids": "(B)", "c": "(B)"}
    dist = _C.DistributedSession(b.program, list(range(mesh[0])), mesh,
                                 _C.Strategy(sources, signatures),
                                 [out, loss], num_threads=2, timeout_ms=30000)
    got_out, got_loss = dist.run({"ids": ids, "c": c}, [out, loss])
    np.testing.assert_allclose(got_out, wte[ids], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got_loss, np.sum(wte[ids] * c), rtol=1e-12, atol=1e-12)
    want_grad = np.zeros((V, D))
    np.add.at(want_grad, ids.reshape(-1), c.reshape(-1, D))
    np.testing.assert_allclose(wte - dist.get_variable("wte"), want_grad, rtol=1e-12,
                               atol=1e-12)
