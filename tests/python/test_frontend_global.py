"""Global tensors in eager mode: to_local(rank) against slices worked out by
hand (balanced splits, N-D hierarchies, partial sums held at coordinate 0),
printing, and every bad-input error."""
from __future__ import annotations

import numpy as np
import pytest

import oneflow_lite as flow

S, B, P = flow.sbp.split, flow.sbp.broadcast, flow.sbp.partial_sum


def test_balanced_split_on_a_flat_placement():
    x = flow.arange(10)
    g = x.to_global(flow.placement("cpu", [0, 1, 2]), S(0))
    assert g.is_global and g.shape == (10,)
    # 10 over 3: the first 10 % 3 = 1 rank gets one extra row.
    parts = [g.to_local(r).numpy().tolist() for r in range(3)]
    assert parts == [[0, 1, 2, 3], [4, 5, 6], [7, 8, 9]]


def test_two_dimensional_hierarchy():
    a = np.arange(24).reshape(4, 6)
    g = flow.tensor(a).to_global(flow.placement("cpu", [[0, 1], [2, 3]]), [S(0), S(1)])
    for rank in range(4):
        i, j = divmod(rank, 2)  # coordinates in the [2, 2] hierarchy
        np.testing.assert_array_equal(g.to_local(rank).numpy(),
                                      a[2 * i:2 * i + 2, 3 * j:3 * j + 3])
    # (S(0), S(0)): 5 rows cut in 3 + 2, then each half again: 2 + 1, 1 + 1.
    h = flow.tensor(np.arange(5)).to_global(flow.placement("cpu", [0, 1, 2, 3], [2, 2]),
                                            [S(0), S(0)])
    assert [h.to_local(r).numpy().tolist() for r in range(4)] == [[0, 1], [2], [3], [4]]


def test_partial_sum_is_held_by_the_ranks_at_coordinate_zero():
    a = np.arange(6.0).reshape(2, 3)
    placement = flow.placement("cpu", [[0, 1], [2, 3]])
    g = flow.tensor(a).to_global(placement, [P, B])
    for rank, holds in [(0, True), (1, True), (2, False), (3, False)]:
        np.testing.assert_array_equal(g.to_local(rank).numpy(), a if holds else np.zeros_like(a))
    g = flow.tensor(a).to_global(placement, [B, P])
    assert [bool(g.to_local(r).numpy().any()) for r in range(4)] == [True, False, True, False]
    total = sum(g.to_local(r).numpy() for r in (0, 1))  # the addends of one P group
    np.testing.assert_array_equal(total, a)


def test_ranks_are_named_not_positional_and_text_sbp_is_accepted():
    g = flow.arange(4).to_global(flow.placement("cpu", [4, 7]), "(S(0))")
    assert g.to_local(7).numpy().tolist() == [2, 3]
    assert g.sbp == (S(0),)
    with pytest.raises(ValueError, match=r"rank 0 is not in the placement's ranks \[4, 7\]"):
        g.to_local(0)


def test_repr_shows_placement_and_sbp():
    g = flow.zeros(2, 2).to_global(flow.placement("cpu", [[0, 1], [2, 3]]), [S(1), B])
    text = repr(g)
    assert 'placement=oneflow_lite.placement(type="cpu", ranks=[0, 1, 2, 3], hierarchy=[2, 2])' \
        in text
    assert "sbp=(S(1), B)" in text
    assert repr(S(0)) == "oneflow_lite.sbp.S(0)" and repr(P) == "oneflow_lite.sbp.partial_sum"


def test_eager_ops_on_global_tensors_point_to_nn_graph():
    g = flow.ones(4).to_global(flow.placement("cpu", [0, 1]), S(0))
    with pytest.raises(NotImplementedError, match=r"add: input 0 is a global tensor .*nn.Graph"):
        g + g
    local = g.to_local(1)
    np.testing.assert_array_equal((local + local).numpy(), [2.0, 2.0])


def test_bad_input_errors():
    with pytest.raises(ValueError, match=r"unknown SBP 'X'"):
        flow.ones(2).to_global(flow.placement("cpu", [0, 1]), "X")
    with pytest.raises(ValueError, match=r"unknown SBP 'split\(0\)'"):
        flow.ones(2).to_global(flow.placement("cpu", [0, 1]), ["split(0)"])
    with pytest.raises(ValueError, match="unknown SBP 3"):
        flow.ones(2).to_global(flow.placement("cpu", [0, 1]), [3])
    with pytest.raises(ValueError, match="sbp.split: axis must be a non-negative integer"):
        S(-1)
    with pytest.raises(ValueError, match=r"sbp \(S\(0\)\) has 1 entries but the placement's "
                                         r"hierarchy \[2, 2\] has 2 axes"):
        flow.ones(4).to_global(flow.placement("cpu", [[0, 1], [2, 3]]), S(0))
    with pytest.raises(ValueError, match="placement: rank 1 is repeated"):
        flow.placement("cpu", [0, 1, 1])
    with pytest.raises(ValueError, match=r"to_global of a tensor of shape \[4\]: S\(1\) splits"):
        flow.ones(4).to_global(flow.placement("cpu", [0, 1]), S(1))  # 1-d tensor
    with pytest.raises(ValueError, match="unknown device type 'tpu'"):
        flow.placement("tpu", [0])
    with pytest.raises(ValueError, match=r"hierarchy \(2, 2\) covers 4 ranks but 3"):
        flow.placement("cpu", [0, 1, 2], hierarchy=[2, 2])
    with pytest.raises(ValueError, match="not global"):
        flow.ones(2).to_local(0)
    with pytest.raises(TypeError, match="placement must be a flow.placement"):
        flow.ones(2).to_global("cpu", S(0))
