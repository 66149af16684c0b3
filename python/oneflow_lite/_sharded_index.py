"""The index.json of a sharded checkpoint (format version 2): reading it and
checking every field before any byte of a shard is read.

    {"format": "oneflow_lite-sharded", "version": 2, "model": str,
     "fingerprint": str, "meta": {...}, "chunk_bytes": int,
     "random": {"iteration": int} (optional; oneflow_lite._random_stream),
     "world": {"processes": int, "ranks": [int]},
     "files": [{"file": "shards/process-00000.bin", "nbytes": int}],
     "tensors": [{"name", "shape", "dtype", "nd_sbp",
                  "placement": {"ranks": [int], "hierarchy": [int]},
                  "slices": [{"rank", "offset", "shape", "file", "byte_offset",
                              "nbytes", "sha256", "crc32": [int per chunk]}]}]}

Checked: every type and range; each file exists with its size; each slice
lies inside its tensor and its file, holds shape x itemsize bytes and one
crc32 per chunk; and the slices of a tensor tile it exactly (disjoint, their
sizes summing to the tensor's), so a load fills every element once.
Errors are CheckpointError naming the checkpoint, the tensor and the slice.
Pure (reads files only); thread-safe.
"""
from __future__ import annotations

import json
import math
import os
import re

import numpy as np

from oneflow_lite import _random_stream
from oneflow_lite.checkpoint import CheckpointError, _is_dtype, _is_inside

FORMAT = "oneflow_lite-sharded"
VERSION = 2
INDEX = "index.json"


def _int(v, low=0) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= low


def _ints(v, low=0) -> bool:
    return isinstance(v, list) and all(_int(x, low) for x in v)


def _hex64(v) -> bool:
    return isinstance(v, str) and re.fullmatch(r"[0-9a-f]{64}", v) is not None


class _Checker:
    def __init__(self, path: str):
        self.path = path

    def fail(self, message: str) -> CheckpointError:
        return CheckpointError(f"sharded checkpoint {self.path}: {message}")

    def need(self, obj: dict, key: str, ok, what: str, where: str):
        if not isinstance(obj, dict) or key not in obj:
            raise self.fail(f"{INDEX} {where} lacks '{key}'")
        if not ok(obj[key]):
            raise self.fail(f"{INDEX} {where} has {key}={_short(obj[key])}, expected {what}")
        return obj[key]


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def parse(path: str) -> dict:
    """index.json of ``path`` as JSON, or CheckpointError."""
    file = os.path.join(path, INDEX)
    if not os.path.isdir(path):
        raise CheckpointError(f"checkpoint {path}: no such directory")
    try:
        with open(file, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        raise CheckpointError(f"checkpoint {path}: {INDEX} is missing") from None
    except (ValueError, UnicodeDecodeError, RecursionError) as e:
        raise CheckpointError(f"checkpoint {path}: {INDEX} does not parse: {e}") from None


def check(path: str, index: dict) -> dict:
    """Checks a parsed version-2 index (see the module docstring); returns it."""
    c = _Checker(path)
    if not isinstance(index, dict) or index.get("format") != FORMAT:
        raise c.fail(f"{INDEX} is not a {FORMAT} index")
    c.need(index, "version", lambda v: v == VERSION, f"{VERSION}", "")
    c.need(index, "model", lambda v: isinstance(v, str), "a string", "")
    c.need(index, "fingerprint", lambda v: isinstance(v, str), "a string", "")
    if not isinstance(index.get("meta", {}), dict):
        raise c.fail(f"{INDEX} 'meta' is not an object")
    _random_stream.check(index, c.fail)
    c.need(index, "chunk_bytes", lambda v: _int(v, 1) and v < 2 ** 62,
           "a positive integer below 2**62", "")
    world = c.need(index, "world", lambda v: isinstance(v, dict), "an object", "")
    c.need(world, "processes", lambda v: _int(v, 1), "a positive integer", "world")
    c.need(world, "ranks", _ints, "a list of ranks", "world")
    files = {}
    for i, entry in enumerate(c.need(index, "files", lambda v: isinstance(v, list), "a list",
                                     "")):
        rel = c.need(entry, "file", lambda v: isinstance(v, str) and _is_inside(v)
                     and v.startswith("shards/"), "a path inside shards/", f"files[{i}]")
        files[rel] = c.need(entry, "nbytes", _int, "a non-negative integer", f"files[{i}]")
        full = os.path.join(path, rel)
        if not os.path.isfile(full):
            raise c.fail(f"file {rel} is missing")
        if os.path.getsize(full) != files[rel]:
            raise c.fail(f"file {rel} has {os.path.getsize(full)} bytes, the index says "
                         f"{files[rel]} (truncated or overwritten)")
    names = set()
    tensors = c.need(index, "tensors", lambda v: isinstance(v, list), "a list", "")
    for i, tensor in enumerate(tensors):
        _check_tensor(c, i, tensor, files, index["chunk_bytes"])
        if tensor["name"] in names:
            raise c.fail(f"{INDEX} names tensor '{tensor['name']}' twice")
        names.add(tensor["name"])
    return index


def _check_tensor(c: _Checker, i: int, t, files: dict, chunk_bytes: int) -> None:
    where = f"tensors[{i}]"
    name = c.need(t, "name", lambda v: isinstance(v, str) and v != "", "a non-empty string",
                  where)
    where = f"tensor '{name}'"
    shape = c.need(t, "shape", _ints, "a list of non-negative integers", where)
    dtype = c.need(t, "dtype", lambda v: isinstance(v, str) and _is_dtype(v)
                   and np.dtype(v).kind in "biufc", "a numeric numpy dtype name", where)
    c.need(t, "nd_sbp", lambda v: isinstance(v, str), "a string", where)
    placement = c.need(t, "placement", lambda v: isinstance(v, dict), "an object", where)
    c.need(placement, "ranks", _ints, "a list of ranks", f"{where} placement")
    c.need(placement, "hierarchy", lambda v: _ints(v, 1), "a list of positive integers",
           f"{where} placement")
    slices = c.need(t, "slices", lambda v: isinstance(v, list), "a list", where)
    item, total = np.dtype(dtype).itemsize, 0
    for j, s in enumerate(slices):
        total += _check_slice(c, f"{where} slices[{j}]", s, shape, item, files, chunk_bytes)
    if total != math.prod(shape):
        raise c.fail(f"{where}: its slices hold {total} elements, the tensor "
                     f"{math.prod(shape)} (a slice is missing)")
    if shape:  # a 0-d tensor's one slice passed the count check
        _check_disjoint(c, where, slices)


def _check_slice(c: _Checker, where: str, s, shape: list, item: int, files: dict,
                 chunk_bytes: int) -> int:
    """Checks one slice; returns its element count."""
    c.need(s, "rank", _int, "a rank", where)
    where = f"{where} (rank {s['rank']})"
    offset = c.need(s, "offset", lambda v: _ints(v) and len(v) == len(shape),
                    f"{len(shape)} non-negative integers", where)
    box = c.need(s, "shape", lambda v: _ints(v) and len(v) == len(shape),
                 f"{len(shape)} non-negative integers", where)
    if any(o + n > d for o, n, d in zip(offset, box, shape)):
        raise c.fail(f"{INDEX} {where}: offset {offset} + shape {box} lies outside the tensor's "
                     f"shape {shape}")
    file = c.need(s, "file", lambda v: v in files, "a file of 'files'", where)
    start = c.need(s, "byte_offset", _int, "a non-negative integer", where)
    count = math.prod(box)
    nbytes = c.need(s, "nbytes", lambda v: v == count * item,
                    f"{count * item} (shape {box} x {item} bytes)", where)
    if start + nbytes > files[file]:
        raise c.fail(f"{INDEX} {where}: bytes {start}..{start + nbytes} lie outside {file} "
                     f"({files[file]} bytes)")
    c.need(s, "sha256", _hex64, "64 lowercase hex digits", where)
    chunks = -(-nbytes // chunk_bytes)
    c.need(s, "crc32", lambda v: _ints(v) and len(v) == chunks and all(x < 1 << 32 for x in v),
           f"{chunks} crc32 values (one per {chunk_bytes}-byte chunk)", where)
    return count


def _check_disjoint(c: _Checker, where: str, slices: list) -> None:
    slices = [s for s in slices if math.prod(s["shape"])]
    if len(slices) < 2:
        return
    # int64 holds them: a non-empty slice lies in a tensor of at most the
    # elements its files' bytes hold (the count check came first)
    lo = np.array([s["offset"] for s in slices], dtype=np.int64)
    hi = lo + np.array([s["shape"] for s in slices], dtype=np.int64)
    for i in range(len(slices)):
        meet = np.all((lo[i] < hi) & (lo < hi[i]), axis=1)
        meet[i] = False
        if meet.any():
            j = int(np.flatnonzero(meet)[0])
            raise c.fail(f"{INDEX} {where}: the slices of ranks {slices[i]['rank']} and "
                         f"{slices[j]['rank']} overlap")
