"""Reading parts of saved slices: box geometry and verified byte-range reads.

A saved slice is a C-order block of ``nbytes`` bytes at ``byte_offset`` in a
shard file. A rank that needs a sub-box of it reads only the byte ranges of
that sub-box: one run per index of the axes before the last partial axis
(``runs``). Verification: every slice carries its sha256 and one crc32 per
``chunk_bytes`` chunk (aligned to the slice's first byte). A verified read
widens its ranges to whole chunks and checks the crc32 of each chunk it
read, and the sha256 as well when it read the whole slice; an unverified
read reads the exact ranges. The bytes land in a buffer the size of the
saved slice made with ``np.empty``, whose untouched pages the OS does not
back with memory, so a partial read costs memory for what it read.

``SliceReader`` counts every byte it reads (``stats``), per file. Not
thread-safe (one reader per load).
"""
from __future__ import annotations

import dataclasses
import hashlib
import math
import os
import zlib
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

Box = Tuple[List[int], List[int]]  # (offset, shape)


def overlap(offset_a: Sequence[int], shape_a: Sequence[int], offset_b: Sequence[int],
            shape_b: Sequence[int]) -> Optional[Box]:
    """The intersection of two boxes (offset, shape), or None when empty."""
    lo = [max(a, b) for a, b in zip(offset_a, offset_b)]
    hi = [min(a + n, b + m) for a, n, b, m in zip(offset_a, shape_a, offset_b, shape_b)]
    if any(h <= l for l, h in zip(lo, hi)):
        return None
    return lo, [h - l for l, h in zip(lo, hi)]


def runs(shape: Sequence[int], offset: Sequence[int], box: Sequence[int]) -> Tuple[np.ndarray, int]:
    """The contiguous element runs of the sub-box (``offset``, ``box``) of a
    C-order array of ``shape``: (start of each run, in elements, ascending;
    the run length)."""
    d = len(shape)
    j = d - 1  # the innermost axis the box does not cover whole
    while j >= 0 and offset[j] == 0 and box[j] == shape[j]:
        j -= 1
    if j < 0:
        return np.zeros(1, np.int64), int(math.prod(shape))
    strides = [int(math.prod(shape[k + 1:])) for k in range(d)]
    starts = np.array(offset[j] * strides[j], np.int64)
    for k in range(j):
        axis = np.arange(offset[k], offset[k] + box[k], dtype=np.int64) * strides[k]
        starts = np.add.outer(starts, axis) if k else axis + starts
    return np.ravel(starts), int(box[j] * strides[j])


def _merged(begin: np.ndarray, end: np.ndarray) -> List[Tuple[int, int]]:
    """The union of the byte ranges [begin, end) as sorted disjoint ranges
    (touching ones joined)."""
    order = np.argsort(begin, kind="stable")
    begin, end = begin[order], end[order]
    reach = np.maximum.accumulate(end)
    first = np.ones(len(begin), bool)
    first[1:] = begin[1:] > reach[:-1]
    last = np.append(np.flatnonzero(first)[1:] - 1, len(begin) - 1)
    return list(zip(begin[first].tolist(), reach[last].tolist()))


@dataclasses.dataclass
class ReadStats:
    bytes_read: int = 0      # bytes read from the shard files
    reads: int = 0           # read calls
    files: Dict[str, int] = dataclasses.field(default_factory=dict)  # file -> bytes read
    sha256_checked: int = 0  # whole slices verified by sha256
    crc32_checked: int = 0   # chunks verified by crc32


class SliceReader:
    """Reads parts of the saved slices of one checkpoint directory.
    ``fail(message)`` returns the exception to raise (it names the checkpoint)."""

    def __init__(self, root: str, chunk_bytes: int, verify: bool,
                 fail: Callable[[str], Exception]):
        self.root, self.chunk_bytes, self.verify, self.fail = root, chunk_bytes, verify, fail
        self.stats = ReadStats()
        self._fds: Dict[str, int] = {}

    def close(self) -> None:
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()

    def read(self, tensor: str, dtype: np.dtype, saved: dict, parts: List[Box]) -> np.ndarray:
        """The saved slice ``saved`` (an index entry) as an array of its shape
        in which at least the boxes ``parts`` (relative to the slice) hold the
        file's bytes, verified as the module docstring says."""
        nbytes, item = saved["nbytes"], dtype.itemsize
        begin, end = [], []
        for offset, box in parts:
            starts, length = runs(saved["shape"], offset, box)
            begin.append(starts * item)
            end.append(starts * item + length * item)
        begin, end = np.concatenate(begin), np.concatenate(end)
        chunks = None
        if self.verify:  # whole chunks: those any range touches
            c = self.chunk_bytes
            count = -(-nbytes // c)
            edges = np.zeros(count + 1, np.int64)
            np.add.at(edges, begin // c, 1)
            np.add.at(edges, (end - 1) // c + 1, -1)
            chunks = np.flatnonzero(np.cumsum(edges)[:count] > 0).tolist()
            begin = np.array(chunks, np.int64) * c
            end = np.minimum(begin + c, nbytes)
        buf = np.empty(nbytes, np.uint8)
        for a, b in _merged(begin, end):
            self._pread(saved["file"], saved["byte_offset"] + a, memoryview(buf)[a:b])
        if self.verify:
            self._check(tensor, saved, buf, chunks)
        return buf.view(dtype).reshape(saved["shape"])

    def _check(self, tensor: str, saved: dict, buf: np.ndarray, chunks: List[int]) -> None:
        c, where = self.chunk_bytes, (f"tensor '{tensor}' slice of rank {saved['rank']} "
                                      f"(file {saved['file']}, bytes {saved['byte_offset']}.."
                                      f"{saved['byte_offset'] + saved['nbytes']})")
        for k in chunks:
            if zlib.crc32(memoryview(buf)[k * c:(k + 1) * c]) != saved["crc32"][k]:
                raise self.fail(f"{where} fails its crc32 check in chunk {k} (bytes "
                                f"{k * c}..{min(saved['nbytes'], (k + 1) * c)} of the slice; "
                                f"corrupted)")
            self.stats.crc32_checked += 1
        if len(chunks) == len(saved["crc32"]):
            if hashlib.sha256(memoryview(buf)).hexdigest() != saved["sha256"]:
                raise self.fail(f"{where} fails its sha256 check (corrupted)")
            self.stats.sha256_checked += 1

    def _pread(self, rel: str, offset: int, out: memoryview) -> None:
        fd = self._fds.get(rel)
        if fd is None:
            try:
                fd = self._fds[rel] = os.open(os.path.join(self.root, rel), os.O_RDONLY)
            except OSError as e:
                raise self.fail(f"file {rel} cannot be opened: {e.strerror}") from None
        done = 0
        while done < len(out):
            n = os.preadv(fd, [out[done:]], offset + done)
            self.stats.reads += 1
            if n == 0:
                raise self.fail(f"file {rel} ends at byte {offset + done}, before "
                                f"{offset + len(out)} (truncated)")
            done += n
        self.stats.bytes_read += len(out)
        self.stats.files[rel] = self.stats.files.get(rel, 0) + len(out)
