"""Samplers: which dataset rows, in which order. ``SequentialSampler``,
``RandomSampler`` (a numpy Generator or seed; by default a seed drawn from
the generator ``flow.manual_seed`` resets, once per pass),
``BatchSampler`` and ``DistributedSampler`` (PyTorch's: each of
``num_replicas`` processes takes every num_replicas-th index of one
permutation that all of them draw alike from ``seed + epoch``; padded by
repeating the first indices, or cut with ``drop_last``, so every process
gets as many). Not thread-safe."""
from __future__ import annotations

import math
from typing import Iterator, List, Optional, Sequence, Union

import numpy as np

from oneflow_lite import _random

Seed = Union[None, int, np.random.Generator]


class Sampler:
    """Subclasses define ``__iter__`` (indices) and ``__len__``."""

    def __iter__(self) -> Iterator[int]:
        raise NotImplementedError

    def __len__(self) -> int:
        raise NotImplementedError


class SequentialSampler(Sampler):
    def __init__(self, data_source: Sequence) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


def _generator(generator: Seed) -> np.random.Generator:
    if isinstance(generator, np.random.Generator):
        return generator
    if generator is None:
        generator = _random.next_seed()
    if not isinstance(generator, (int, np.integer)) or generator < 0:
        raise ValueError(f"generator must be a numpy Generator or a non-negative int seed, got "
                         f"{generator!r}")
    return np.random.Generator(np.random.Philox(int(generator)))


class RandomSampler(Sampler):
    """A fresh permutation per pass. ``generator``: a numpy Generator (its
    state carries across passes), an int seed (the same permutations every
    run), or None (a seed from the generator ``flow.manual_seed`` resets)."""

    def __init__(self, data_source: Sequence, generator: Seed = None) -> None:
        self.data_source = data_source
        self._rng = _generator(generator)

    def __iter__(self) -> Iterator[int]:
        return iter(self._rng.permutation(len(self.data_source)).tolist())

    def __len__(self) -> int:
        return len(self.data_source)


class BatchSampler(Sampler):
    """Lists of ``batch_size`` indices from ``sampler``; the last shorter
    one kept unless ``drop_last``."""

    def __init__(self, sampler, batch_size: int, drop_last: bool) -> None:
        if not isinstance(batch_size, (int, np.integer)) or isinstance(batch_size, bool) \
                or batch_size <= 0:
            raise ValueError(f"BatchSampler: batch_size must be a positive int, got "
                             f"{batch_size!r}")
        self.sampler, self.batch_size, self.drop_last = sampler, int(batch_size), drop_last

    def __iter__(self) -> Iterator[List[int]]:
        batch: List[int] = []
        for i in self.sampler:
            batch.append(int(i))
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self) -> int:
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)


class DistributedSampler(Sampler):
    """Process ``rank`` of ``num_replicas`` gets indices rank, rank +
    num_replicas, ... of one shared order (a permutation from ``seed +
    epoch`` when ``shuffle``; call ``set_epoch`` before each pass for a new
    one). Without ``drop_last`` the order is padded with its own first
    indices to a multiple of num_replicas; with it, cut to one. Defaults:
    the job's process count and this process's index."""

    def __init__(self, dataset: Sequence, num_replicas: Optional[int] = None,
                 rank: Optional[int] = None, shuffle: bool = True, seed: int = 0,
                 drop_last: bool = False) -> None:
        if num_replicas is None or rank is None:
            from oneflow_lite import _world

            world = _world.info()
            num_replicas = world["num_processes"] if num_replicas is None else num_replicas
            rank = world["process"] if rank is None else rank
        if num_replicas < 1 or not 0 <= rank < num_replicas:
            raise ValueError(f"DistributedSampler: rank {rank} is outside [0, num_replicas="
                             f"{num_replicas})")
        self.dataset, self.num_replicas, self.rank = dataset, int(num_replicas), int(rank)
        self.shuffle, self.seed, self.drop_last, self.epoch = shuffle, int(seed), drop_last, 0
        n = len(dataset)
        if drop_last and n % self.num_replicas:
            self.num_samples = math.ceil((n - self.num_replicas) / self.num_replicas)
        else:
            self.num_samples = math.ceil(n / self.num_replicas)
        self.total_size = self.num_samples * self.num_replicas

    def set_epoch(self, epoch: int) -> None:
        """The pass number: with ``shuffle``, a new order for every epoch."""
        self.epoch = int(epoch)

    def __iter__(self) -> Iterator[int]:
        n = len(self.dataset)
        if self.shuffle:
            rng = np.random.Generator(np.random.Philox(self.seed + self.epoch))
            order = rng.permutation(n).tolist()
        else:
            order = list(range(n))
        if self.drop_last:
            order = order[:self.total_size]
        elif self.total_size > n and n:
            pad = self.total_size - n
            order += (order * math.ceil(pad / n))[:pad]
        return iter(order[self.rank:self.total_size:self.num_replicas])

    def __len__(self) -> int:
        return self.num_samples
