"""``DataLoader``: batches of a dataset's rows, collated into flow tensors
(``default_collate``), in the order of a sampler (sequential, shuffled
with a seed or numpy Generator, or any Sampler such as
DistributedSampler). Loads in the calling process (``num_workers=0``).
Not thread-safe."""
from __future__ import annotations

import numbers
from typing import Callable, Iterator, Optional

import numpy as np

from oneflow_lite import _device
from oneflow_lite import _dtype as dtypes
from oneflow_lite._tensor import Tensor
from oneflow_lite.utils.data.dataset import TensorDataset
from oneflow_lite.utils.data.sampler import (BatchSampler, RandomSampler, Sampler, Seed,
                                             SequentialSampler)


def default_collate(batch: list):
    """Samples -> one batch, as PyTorch's: tensors and arrays are stacked on
    a new first axis (a flow.Tensor), Python floats become float64 and ints
    int64 tensors; tuples, lists and dicts are collated field by field."""
    first = batch[0]
    if isinstance(first, (Tensor, np.ndarray)):
        arrays = [_device.host_value(s._array()) if isinstance(s, Tensor) else s for s in batch]
        shapes = {a.shape for a in arrays}
        if len(shapes) != 1:
            raise ValueError(f"default_collate: samples of different shapes {sorted(shapes)} "
                             f"cannot be stacked; pass a collate_fn")
        stacked = np.stack(arrays)
        dtypes.get(stacked.dtype)  # raises on a dtype flow tensors cannot hold
        return Tensor._wrap(stacked)
    if isinstance(first, bool) or not isinstance(first, numbers.Number):
        if isinstance(first, dict):
            return {k: default_collate([s[k] for s in batch]) for k in first}
        if isinstance(first, (tuple, list)):
            if len({len(s) for s in batch}) != 1:
                raise ValueError("default_collate: samples have different numbers of fields")
            fields = [default_collate(list(f)) for f in zip(*batch)]
            return tuple(fields) if isinstance(first, tuple) else fields
        if isinstance(first, (str, bytes)):
            return list(batch)
        raise TypeError(f"default_collate: cannot collate a {type(first).__name__}; pass a "
                        f"collate_fn")
    kind = np.int64 if isinstance(first, numbers.Integral) else np.float64
    return Tensor._wrap(np.array(batch, dtype=kind))


class DataLoader:
    """``for x, y in DataLoader(dataset, batch_size=32, shuffle=True,
    generator=0): ...``. ``shuffle``: a new permutation per pass from
    ``generator`` (a numpy Generator, an int seed, or None: a seed drawn
    from the generator ``flow.manual_seed`` resets); ``sampler`` (e.g. a
    DistributedSampler) instead of ``shuffle``; ``drop_last`` drops a
    short last batch; ``collate_fn`` turns a list of samples into a batch."""

    def __init__(self, dataset, batch_size: Optional[int] = 1, shuffle: bool = False,
                 sampler: Optional[Sampler] = None, batch_sampler=None,
                 num_workers: int = 0, collate_fn: Optional[Callable] = None,
                 drop_last: bool = False, generator: Seed = None) -> None:
        if num_workers != 0:
            raise NotImplementedError(f"DataLoader: num_workers={num_workers}; batches are "
                                      f"loaded in the calling process (num_workers=0)")
        if sampler is not None and shuffle:
            raise ValueError("DataLoader: give either sampler or shuffle=True, not both")
        if batch_sampler is not None and (batch_size != 1 or shuffle or sampler is not None
                                          or drop_last):
            raise ValueError("DataLoader: batch_sampler excludes batch_size, shuffle, sampler "
                             "and drop_last")
        if sampler is None:
            sampler = RandomSampler(dataset, generator) if shuffle else \
                SequentialSampler(dataset)
        if batch_sampler is None and batch_size is not None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.dataset, self.sampler, self.batch_sampler = dataset, sampler, batch_sampler
        self.batch_size, self.drop_last = batch_size, drop_last
        self.collate_fn = collate_fn

    def __iter__(self) -> Iterator:
        if self.batch_sampler is None:  # batch_size=None: one sample at a time
            for i in self.sampler:
                yield self.dataset[i]
            return
        fast = self.collate_fn is None and type(self.dataset) is TensorDataset
        collate = self.collate_fn or default_collate
        for indices in self.batch_sampler:
            if fast:  # the same batch default_collate would make, in one gather
                yield self.dataset.rows(indices)
            else:
                yield collate([self.dataset[i] for i in indices])

    def __len__(self) -> int:
        return len(self.batch_sampler if self.batch_sampler is not None else self.sampler)
