"""Training data of the main job (oneflow_lite.train): synthetic data with
learnable structure, so the loss clearly falls, and character-level text.

- gpt: sequences from a fixed random Markov (bigram) table, whose entropy is
  the floor the loss can reach (``markov_batches``); or random windows of a
  text file, one token per character (``text_batches``);
- mlp: labels of a fixed random linear teacher (``teacher_batches``);
- vgg: a fixed noisy image template per class (``template_batches``).

Each returns an endless iterator of (data, labels) numpy batches drawn from
the given Generator. ``step_loader`` turns the first ``steps`` of them into
a ``flow.utils.data.DataLoader`` over their rows, which yields the same
batches in the same order as flow tensors (the job's graph takes the
logical batch: every process reads the same rows, so the loader's sampler
is sequential; a DistributedSampler is for eager loops in which each
process computes on its own rows). Pure functions; the iterators are not
thread-safe.
"""
from __future__ import annotations

from typing import Iterator, List, Tuple

import numpy as np

from oneflow_lite.utils.data import DataLoader, TensorDataset

Batch = Tuple[np.ndarray, np.ndarray]


def markov_batches(vocab: int, seq: int, batch: int, rng: np.random.Generator
                   ) -> Tuple[Iterator[Batch], float]:
    """Sequences from a fixed random bigram table (each row Dirichlet(0.1),
    so a few successors dominate). Returns the batches and the table's
    entropy rate in nats, the loss a perfect model reaches."""
    table = rng.dirichlet(np.full(vocab, 0.1), size=vocab)
    stationary = np.full(vocab, 1.0 / vocab)
    for _ in range(200):
        stationary = stationary @ table
    row_entropy = -(table * np.log(np.maximum(table, 1e-30))).sum(axis=1)
    cumulative = np.cumsum(table, axis=1)

    def gen() -> Iterator[Batch]:
        while True:
            tokens = np.empty((batch, seq + 1), np.int64)
            tokens[:, 0] = rng.choice(vocab, size=batch, p=stationary / stationary.sum())
            for t in range(seq):
                u = rng.random(batch)[:, None]
                nxt = (u > cumulative[tokens[:, t]]).sum(axis=1)
                tokens[:, t + 1] = np.minimum(nxt, vocab - 1)
            yield tokens[:, :-1], tokens[:, 1:]

    return gen(), float(stationary @ row_entropy)


def text_batches(path: str, seq: int, batch: int, rng: np.random.Generator
                 ) -> Tuple[Iterator[Batch], List[str]]:
    """Random windows of a UTF-8 text file, one token per character. A file
    that is not UTF-8 text (a binary file) raises a ValueError naming it."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except UnicodeDecodeError as e:
        raise ValueError(f"--data {path}: not UTF-8 text (byte 0x{e.object[e.start]:02x} at "
                         f"offset {e.start}); give a text file") from None
    if len(text) < seq + 2:
        raise ValueError(f"--data {path}: {len(text)} characters, need more than --seq + 1 = "
                         f"{seq + 1}")
    chars = sorted(set(text))
    index = {c: i for i, c in enumerate(chars)}
    data = np.fromiter((index[c] for c in text), np.int64, len(text))

    def gen() -> Iterator[Batch]:
        while True:
            starts = rng.integers(0, len(data) - seq - 1, batch)
            window = np.stack([data[s:s + seq + 1] for s in starts])
            yield window[:, :-1], window[:, 1:]

    return gen(), chars


def teacher_batches(features: int, classes: int, batch: int, rng: np.random.Generator
                    ) -> Iterator[Batch]:
    """x ~ N(0, 1), label = argmax(x @ W) of a fixed random linear teacher."""
    teacher = rng.standard_normal((features, classes))
    while True:
        x = rng.standard_normal((batch, features))
        yield x.astype(np.float32), np.argmax(x @ teacher, axis=1).astype(np.int64)


def template_batches(channels: int, size: int, classes: int, batch: int,
                     rng: np.random.Generator) -> Iterator[Batch]:
    """A fixed random template image per class plus as much noise."""
    templates = rng.standard_normal((classes, channels, size, size))
    while True:
        labels = rng.integers(0, classes, batch)
        noise = rng.standard_normal((batch, channels, size, size))
        yield (templates[labels] + noise).astype(np.float32), labels.astype(np.int64)


def step_loader(batches: Iterator[Batch], steps: int, batch: int) -> DataLoader:
    """The first ``steps`` batches of ``batches`` (each ``batch`` rows) as a
    DataLoader over one TensorDataset of their rows: re-iterable, the same
    batches in the same order."""
    drawn = [next(batches) for _ in range(steps)]
    data = np.concatenate([d for d, _ in drawn])
    labels = np.concatenate([y for _, y in drawn])
    return DataLoader(TensorDataset(data, labels), batch_size=batch)
