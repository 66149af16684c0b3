"""flow.utils.data: TensorDataset, the samplers and DataLoader against
hand-worked index lists and numpy; DistributedSampler as PyTorch's
(padding, drop_last, set_epoch, every process its own rows)."""
from __future__ import annotations

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite.utils.data import (BatchSampler, DataLoader, Dataset, DistributedSampler,
                                     RandomSampler, SequentialSampler, TensorDataset,
                                     default_collate)


def _dataset(n=10):
    x = np.arange(n * 2, dtype=np.float32).reshape(n, 2)
    return TensorDataset(flow.tensor(x), flow.arange(n)), x


def test_tensor_dataset_rows():
    ds, x = _dataset()
    assert len(ds) == 10
    row, label = ds[3]
    assert row.numpy().tolist() == x[3].tolist() and label.item() == 3
    with pytest.raises(ValueError, match=r"first extents differ: \[3, 2\]"):
        TensorDataset(flow.zeros(3), flow.zeros(2))
    with pytest.raises(TypeError, match="tensor 1 is a list"):
        TensorDataset(flow.zeros(3), [1, 2, 3])


def test_sequential_batches_and_drop_last():
    ds, x = _dataset()
    batches = list(DataLoader(ds, batch_size=4))
    assert [b[1].numpy().tolist() for b in batches] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    np.testing.assert_array_equal(batches[1][0].numpy(), x[4:8])
    assert batches[0][0].dtype is flow.float32 and batches[0][1].dtype is flow.int64
    loader = DataLoader(ds, batch_size=4, drop_last=True)
    assert len(loader) == 2 and [b[1].numpy().tolist() for b in loader] == [[0, 1, 2, 3],
                                                                          [4, 5, 6, 7]]
    assert len(DataLoader(ds, batch_size=4)) == 3


def test_shuffle_with_a_seed_or_generator_is_a_permutation_per_pass():
    ds, _ = _dataset()
    order = lambda loader: [i for _, y in loader for i in y.numpy().tolist()]  # noqa: E731
    a = DataLoader(ds, batch_size=3, shuffle=True, generator=5)
    first, second = order(a), order(a)
    assert sorted(first) == list(range(10)) and sorted(second) == list(range(10))
    assert first != second  # a new permutation per pass
    b = DataLoader(ds, batch_size=3, shuffle=True, generator=5)
    assert order(b) == first  # the same seed, the same order
    rng = np.random.Generator(np.random.Philox(5))
    assert first == rng.permutation(10).tolist()  # the draw is numpy's Philox permutation
    flow.manual_seed(1)
    c = order(DataLoader(ds, batch_size=3, shuffle=True))
    flow.manual_seed(1)
    assert order(DataLoader(ds, batch_size=3, shuffle=True)) == c  # flow.manual_seed governs


class Squares(Dataset):
    def __len__(self):
        return 5

    def __getitem__(self, i):
        return {"x": np.array([i, i * i], np.float64), "i": i, "name": f"s{i}"}


def test_default_collate_of_a_custom_dataset():
    batch = next(iter(DataLoader(Squares(), batch_size=3)))
    assert batch["x"].dtype is flow.float64
    np.testing.assert_array_equal(batch["x"].numpy(), [[0, 0], [1, 1], [2, 4]])
    assert batch["i"].dtype is flow.int64 and batch["i"].numpy().tolist() == [0, 1, 2]
    assert batch["name"] == ["s0", "s1", "s2"]
    assert default_collate([1.5, 2.5]).dtype is flow.float64
    assert default_collate([(1, 2.0), (3, 4.0)])[0].numpy().tolist() == [1, 3]
    with pytest.raises(ValueError, match="samples of different shapes"):
        default_collate([np.zeros(2), np.zeros(3)])
    with pytest.raises(TypeError, match="cannot collate a object"):
        default_collate([object()])


def test_custom_collate_and_batch_sampler():
    ds, _ = _dataset(6)
    loader = DataLoader(ds, batch_sampler=[[5, 0], [2]], collate_fn=lambda rows: len(rows))
    assert list(loader) == [2, 1]
    assert list(BatchSampler(SequentialSampler(range(5)), 2, drop_last=False)) == [[0, 1], [2, 3],
                                                                                  [4]]
    assert sorted(RandomSampler(range(7), generator=0)) == list(range(7))
    with pytest.raises(ValueError, match="batch_size must be a positive int, got 0"):
        DataLoader(ds, batch_size=0)
    with pytest.raises(ValueError, match="either sampler or shuffle=True"):
        DataLoader(ds, shuffle=True, sampler=SequentialSampler(ds))
    with pytest.raises(NotImplementedError, match="num_workers=2"):
        DataLoader(ds, num_workers=2)


def test_distributed_sampler_pads_by_repeating_the_first_indices():
    # 10 rows over 3 processes: 4 each, order 0..9 then 0, 1 (PyTorch's padding)
    got = [list(DistributedSampler(range(10), 3, r, shuffle=False)) for r in range(3)]
    assert got == [[0, 3, 6, 9], [1, 4, 7, 0], [2, 5, 8, 1]]
    assert all(len(DistributedSampler(range(10), 3, r)) == 4 for r in range(3))
    # drop_last: 3 each, the tail (9) dropped
    got = [list(DistributedSampler(range(10), 3, r, shuffle=False, drop_last=True))
           for r in range(3)]
    assert got == [[0, 3, 6], [1, 4, 7], [2, 5, 8]]
    # fewer rows than processes: padded past one repeat
    assert [list(DistributedSampler(range(2), 5, r, shuffle=False)) for r in range(5)] == \
        [[0], [1], [0], [1], [0]]


def test_distributed_sampler_shuffles_alike_on_every_process_and_per_epoch():
    samplers = [DistributedSampler(range(12), 4, r, shuffle=True, seed=3) for r in range(4)]
    epoch0 = [list(s) for s in samplers]
    assert sorted(i for part in epoch0 for i in part) == list(range(12))  # disjoint, complete
    perm = np.random.Generator(np.random.Philox(3)).permutation(12).tolist()
    assert epoch0 == [perm[r::4] for r in range(4)]
    assert [list(s) for s in samplers] == epoch0  # same epoch, same order
    for s in samplers:
        s.set_epoch(1)
    epoch1 = [list(s) for s in samplers]
    assert epoch1 != epoch0 and sorted(i for p in epoch1 for i in p) == list(range(12))


def test_distributed_sampler_in_a_loader_and_from_the_world(monkeypatch):
    ds, x = _dataset(8)
    parts = []
    for rank in range(2):
        loader = DataLoader(ds, batch_size=2, sampler=DistributedSampler(ds, 2, rank,
                                                                         shuffle=False))
        parts.append([y.numpy().tolist() for _, y in loader])
    assert parts == [[[0, 2], [4, 6]], [[1, 3], [5, 7]]]
    from oneflow_lite import _world

    monkeypatch.setattr(_world, "info", lambda: {"process": 1, "num_processes": 4,
                                                 "devices_per_process": 1,
                                                 "distributed": True})
    s = DistributedSampler(ds, shuffle=False)
    assert (s.num_replicas, s.rank, list(s)) == (4, 1, [1, 5])
    with pytest.raises(ValueError, match=r"rank 4 is outside \[0, num_replicas=4\)"):
        DistributedSampler(ds, rank=4)
