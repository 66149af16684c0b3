"""Checkpoints: logical tensors (parameters and optimizer state) on disk.

One family, two formats, each kept for one job. Format 2, sharded
(oneflow_lite.sharded_checkpoint), is what a graph on a placement writes
(``nn.Graph.save``, the periodic saver, elastic restarts): every process
writes its ranks' slices, nothing is gathered, and a load under any plan
reads only its byte ranges. Format 1, logical (this module), is what one
device and eager models write (``save_eager``, a one-device graph, or
``save(sharded=False)``): one plain ``.npy`` file per tensor, which numpy
alone reads, so a checkpoint leaves the framework as ordinary arrays. The
family shares the loader (``load`` and ``nn.Graph.load`` read both), the
variable names, the fingerprint and the save-target rule (_save_paths).

A checkpoint is a directory::

    ckpt/
      index.json        format, version, model name, fingerprint, meta, the
                        random stream position or an eager model's Dropout
                        counters (oneflow_lite._random_stream),
                        and per tensor: name, shape, dtype, file, nbytes, sha256
      tensors/00000.npy one numpy .npy file per logical tensor, in index order

Tensors are *logical* (the global view, never a rank's shard), so a
checkpoint saved under one plan loads under any other plan or device count.
Names are the graph's variable names: parameters by their state_dict keys,
optimizer state as ``<param>/m``, ``<param>/v``, ``<param>/step`` (Adam,
AdamW) or ``<param>/momentum`` (SGD), as graph/optimizer_pass.cpp names them.
``fingerprint`` hashes the sorted (name, shape, dtype) triples of the
parameters alone, so two checkpoints of one model agree on it whatever
optimizer state they carry.

Writing loses nothing of the user's and is atomic (the rule lives in
oneflow_lite._save_paths): ``<dir>`` must be new, an empty directory, or an
earlier checkpoint of ours (a directory holding the marker file
``.oneflow_lite-checkpoint``, ``index.json`` and ``tensors/NNNNN.npy`` or
``shards/process-NNNNN.bin`` and nothing else; or such a checkpoint written
before markers); "" and
"/", a regular file, a symlink and a directory with other files are refused.
Everything goes into a fresh marked folder ``<dir>.tmp-<pid>-<random>``
first (files flushed and fsync'ed), which is then swapped with ``<dir>``
atomically (Linux ``renameat2``), so a crash at any moment leaves the old
checkpoint or the new one loadable, never a mix.

Sharded checkpoints (oneflow_lite.sharded_checkpoint, format version 2:
slices per rank) load here too: ``read_index`` and ``load`` recognise them,
and ``load`` assembles their logical tensors.

Loading checks everything it reads: a missing or truncated file, a wrong
checksum, a shape or dtype that differs from the index, and, when the
caller says what it expects, missing, unexpected and mismatched tensors,
each by name. Errors are ``CheckpointError`` (a ``ValueError``) and change
nothing.

    >>> import numpy as np, tempfile, os
    >>> d = os.path.join(tempfile.mkdtemp(), "ckpt")
    >>> save(d, {"w": np.ones((2, 3), np.float32)}, model="toy")
    >>> load(d, model="toy").tensors["w"].shape
    (2, 3)
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple

import numpy as np

from oneflow_lite import _random_stream, _save_paths

FORMAT = "oneflow_lite-checkpoint"
VERSION = 1
INDEX = "index.json"
TENSORS = "tensors"
ENTRIES = (INDEX, TENSORS)  # a checkpoint directory's top level, besides the marker
STATE_SUFFIXES = ("/m", "/v", "/step", "/momentum")


class CheckpointError(ValueError):
    """A checkpoint that cannot be written or read as asked; names the culprit."""


@dataclasses.dataclass
class Checkpoint:
    tensors: Dict[str, np.ndarray]  # logical tensors by name, in index order
    model: str
    fingerprint: str
    meta: Dict[str, Any]
    stats: Any = None  # a sharded load's _slice_io.ReadStats (bytes read per file)
    random: Optional[Dict[str, int]] = None  # {"iteration": N}; None: not saved (_random_stream)
    dropout: Optional[Dict[str, int]] = None  # eager Dropout counters by module; None: not saved


def is_state(name: str) -> bool:
    """True for optimizer state (``<param>/m`` and the like), False for parameters."""
    return name.endswith(STATE_SUFFIXES)


def fingerprint(specs: Mapping[str, Tuple[Sequence[int], str]]) -> str:
    """sha256 (16 hex digits) of the sorted (name, shape, dtype) of the parameters
    in ``specs`` (optimizer state is left out)."""
    h = hashlib.sha256()
    for name in sorted(specs):
        if is_state(name):
            continue
        shape, dtype = specs[name]
        h.update(f"{name}|{list(map(int, shape))}|{np.dtype(dtype).name}\n".encode())
    return h.hexdigest()[:16]


def _sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _write_file(path: str, write) -> None:
    with open(path, "wb") as f:
        write(f)
        f.flush()
        os.fsync(f.fileno())


def save(path: str, tensors: Mapping[str, Any], model: str = "",
         meta: Optional[Mapping[str, Any]] = None, iteration: Optional[int] = None,
         dropout: Optional[Mapping[str, int]] = None) -> None:
    """Writes ``tensors`` (name -> array-like, logical) as a checkpoint at ``path``,
    atomically (see the module docstring). ``meta`` must be JSON-serialisable.
    ``iteration``: the session's random stream position; ``dropout``: an eager
    model's Dropout counters by module name (both oneflow_lite._random_stream).
    Refuses (CheckpointError) a ``path`` that is not new, an empty directory
    or an earlier checkpoint of ours, leaving it untouched."""
    path = _save_paths.target_path(path, "checkpoint.save")
    if not tensors:
        raise CheckpointError(f"checkpoint {path}: nothing to save (no tensors)")
    arrays = {}
    for name, value in tensors.items():
        if not isinstance(name, str) or not name:
            raise CheckpointError(f"checkpoint {path}: tensor name {name!r} is not a non-empty str")
        arrays[name] = np.require(np.asarray(value), requirements="C")  # keeps 0-d as 0-d
        if arrays[name].dtype == object:
            raise CheckpointError(f"checkpoint {path}: tensor '{name}' is not numeric "
                                  f"(dtype object)")
    try:
        meta_json = json.loads(json.dumps(dict(meta or {})))
    except (TypeError, ValueError) as e:
        raise CheckpointError(f"checkpoint {path}: meta is not JSON-serialisable: {e}") from None
    try:
        replace = _save_paths.check_checkpoint_target(path, f"checkpoint {path}",
                                                      legacy=_is_unmarked_checkpoint)
    except _save_paths.SaveTargetError as e:
        raise CheckpointError(str(e)) from None
    tmp = _save_paths.make_temp_dir(path)
    try:
        os.makedirs(os.path.join(tmp, TENSORS))
        entries = []
        for i, (name, array) in enumerate(arrays.items()):
            rel = f"{TENSORS}/{i:05d}.npy"
            file = os.path.join(tmp, rel)
            _write_file(file, lambda f, a=array: np.save(f, a, allow_pickle=False))
            entries.append({"name": name, "shape": list(array.shape), "dtype": array.dtype.name,
                            "file": rel, "nbytes": os.path.getsize(file), "sha256": _sha256(file)})
        index = {"format": FORMAT, "version": VERSION, "model": model,
                 "fingerprint": fingerprint({n: (a.shape, a.dtype) for n, a in arrays.items()}),
                 "meta": meta_json, "tensors": entries}
        if iteration is not None:
            index[_random_stream.KEY] = _random_stream.of(iteration)
        if dropout is not None:
            index[_random_stream.MODULES] = {str(k): int(v) for k, v in dropout.items()}
        _write_file(os.path.join(tmp, INDEX),
                    lambda f: f.write(json.dumps(index, indent=1).encode()))
        _save_paths.publish(tmp, path, replace)
    except BaseException:
        _save_paths.remove_ours(tmp)
        raise


def _is_unmarked_checkpoint(path: str) -> bool:
    """A checkpoint of ours written before the marker file: exactly index.json
    (of our format) and tensors/."""
    if sorted(os.listdir(path)) != sorted(ENTRIES):
        return False
    try:
        with open(os.path.join(path, INDEX), encoding="utf-8") as f:
            index = json.load(f)
    except (OSError, ValueError):
        return False
    return isinstance(index, dict) and index.get("format") == FORMAT


def read_index(path: str) -> dict:
    """The parsed and checked index.json of the checkpoint at ``path``
    (either format: a sharded one's is checked by sharded_checkpoint)."""
    file = os.path.join(path, INDEX)
    if not os.path.isdir(path):
        raise CheckpointError(f"checkpoint {path}: no such directory")
    try:
        with open(file, encoding="utf-8") as f:
            index = json.load(f)
    except FileNotFoundError:
        raise CheckpointError(f"checkpoint {path}: {INDEX} is missing") from None
    except (ValueError, UnicodeDecodeError) as e:
        raise CheckpointError(f"checkpoint {path}: {INDEX} does not parse: {e}") from None
    if isinstance(index, dict) and index.get("format") == _sharded_format():
        from oneflow_lite import _sharded_index

        return _sharded_index.check(path, index)
    if not isinstance(index, dict) or index.get("format") != FORMAT:
        raise CheckpointError(f"checkpoint {path}: {INDEX} is not a {FORMAT} index "
                              f"(format={index.get('format') if isinstance(index, dict) else None!r})")
    if index.get("version") != VERSION:
        raise CheckpointError(f"checkpoint {path}: version {index.get('version')!r}, this reader "
                              f"knows {VERSION}")
    for key in ("model", "fingerprint", "tensors"):
        if key not in index:
            raise CheckpointError(f"checkpoint {path}: {INDEX} lacks '{key}'")
    for key in ("model", "fingerprint"):
        if not isinstance(index[key], str):
            raise CheckpointError(f"checkpoint {path}: {INDEX} '{key}' is a "
                                  f"{type(index[key]).__name__}, not a string")
    if not isinstance(index["tensors"], list):
        raise CheckpointError(f"checkpoint {path}: {INDEX} 'tensors' is a "
                              f"{type(index['tensors']).__name__}, not a list of entries")
    if not isinstance(index.get("meta", {}), dict):
        raise CheckpointError(f"checkpoint {path}: {INDEX} 'meta' is a "
                              f"{type(index['meta']).__name__}, not an object")
    _random_stream.check(index, lambda m: CheckpointError(f"checkpoint {path}: {m}"))
    _random_stream.check_counters(index, lambda m: CheckpointError(f"checkpoint {path}: {m}"))
    names = set()
    for i, entry in enumerate(index["tensors"]):
        _check_entry(path, i, entry)
        if entry["name"] in names:
            raise CheckpointError(f"checkpoint {path}: {INDEX} names tensor '{entry['name']}' "
                                  f"twice")
        names.add(entry["name"])
    return index


# key -> (test, what it must be) of one entry of index.json's "tensors"
_ENTRY_KEYS = {
    "name": (lambda v: isinstance(v, str) and v != "", "a non-empty string"),
    "shape": (lambda v: isinstance(v, list) and all(
        isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in v),
        "a list of non-negative integers"),
    "dtype": (lambda v: isinstance(v, str) and _is_dtype(v), "a numpy dtype name"),
    "file": (lambda v: isinstance(v, str) and _is_inside(v), "a relative path inside the "
             "checkpoint"),
    "nbytes": (lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0,
               "a non-negative integer"),
    "sha256": (lambda v: isinstance(v, str) and len(v) == 64
               and all(c in "0123456789abcdef" for c in v), "64 lowercase hex digits"),
}


def _is_dtype(name: str) -> bool:
    """True for a name numpy gives a dtype (``float32``, ``int64``, ``bool``),
    as save writes them. Only plain names reach np.dtype: it parses strings
    with commas or brackets as record types and can raise SyntaxError."""
    if not re.fullmatch(r"[a-z]+[0-9]*", name):
        return False
    try:
        return np.dtype(name).name == name and np.dtype(name) != object
    except TypeError:
        return False


def _is_inside(rel: str) -> bool:
    return (rel != "" and not os.path.isabs(rel)
            and not os.path.normpath(rel).startswith(os.pardir))


def _check_entry(path: str, i: int, entry) -> None:
    """Raises CheckpointError naming the entry (by index and name) and the key
    that is missing or malformed."""
    if not isinstance(entry, dict):
        raise CheckpointError(f"checkpoint {path}: {INDEX} tensors[{i}] is a "
                              f"{type(entry).__name__}, not an object")
    label = f"tensors[{i}]" + (f" ('{entry['name']}')" if isinstance(entry.get("name"), str)
                               else "")
    for key, (ok, what) in _ENTRY_KEYS.items():
        if key not in entry:
            raise CheckpointError(f"checkpoint {path}: {INDEX} {label} lacks '{key}'")
        if not ok(entry[key]):
            raise CheckpointError(f"checkpoint {path}: {INDEX} {label} has {key}="
                                  f"{entry[key]!r}, expected {what}")


def _read_tensor(path: str, entry: dict, verify: bool) -> np.ndarray:
    name, file = entry["name"], os.path.join(path, entry["file"])
    if not os.path.isfile(file):
        raise CheckpointError(f"checkpoint {path}: file {entry['file']} of tensor '{name}' "
                              f"is missing")
    size = os.path.getsize(file)
    if size != entry["nbytes"]:
        raise CheckpointError(f"checkpoint {path}: file {entry['file']} of tensor '{name}' has "
                              f"{size} bytes, the index says {entry['nbytes']} (truncated or "
                              f"overwritten)")
    if verify and _sha256(file) != entry["sha256"]:
        raise CheckpointError(f"checkpoint {path}: file {entry['file']} of tensor '{name}' fails "
                              f"its sha256 check (corrupted)")
    try:
        array = np.load(file, allow_pickle=False)
    except (ValueError, OSError) as e:
        raise CheckpointError(f"checkpoint {path}: file {entry['file']} of tensor '{name}' does "
                              f"not load: {e}") from None
    if list(array.shape) != list(entry["shape"]) or array.dtype.name != entry["dtype"]:
        raise CheckpointError(f"checkpoint {path}: tensor '{name}' in {entry['file']} is "
                              f"{array.dtype.name}{list(array.shape)}, the index says "
                              f"{entry['dtype']}{list(entry['shape'])}")
    return array


def check_compatible(path: str, index: dict,
                     expected: Mapping[str, Tuple[Sequence[int], str]],
                     allow_missing_state: bool = False) -> None:
    """Raises CheckpointError naming every missing, unexpected and mismatched
    tensor between the index and ``expected`` (name -> (shape, dtype))."""
    have = {e["name"]: (list(e["shape"]), e["dtype"]) for e in index["tensors"]}
    want = {n: (list(map(int, s)), np.dtype(d).name) for n, (s, d) in expected.items()}
    missing = [n for n in want if n not in have and not (allow_missing_state and is_state(n))]
    unexpected = [n for n in have if n not in want]
    mismatched = [f"{n}: checkpoint {have[n][1]}{have[n][0]}, model {want[n][1]}{want[n][0]}"
                  for n in want if n in have and have[n] != want[n]]
    if missing or unexpected or mismatched:
        parts = []
        if missing:
            parts.append(f"missing {len(missing)}: {', '.join(missing[:8])}"
                         + (" ..." if len(missing) > 8 else ""))
        if unexpected:
            parts.append(f"unexpected {len(unexpected)}: {', '.join(unexpected[:8])}"
                         + (" ..." if len(unexpected) > 8 else ""))
        if mismatched:
            parts.append(f"mismatched {len(mismatched)}: {'; '.join(mismatched[:8])}"
                         + (" ..." if len(mismatched) > 8 else ""))
        raise CheckpointError(f"checkpoint {path} (model '{index['model']}') does not fit this "
                              f"model: " + " | ".join(parts))


def load(path: str, expected: Optional[Mapping[str, Tuple[Sequence[int], str]]] = None,
         model: Optional[str] = None, verify: bool = True,
         allow_missing_state: bool = False) -> Checkpoint:
    """Reads the checkpoint at ``path``. ``model``: the model name it must carry.
    ``expected``: name -> (shape, dtype) it must hold exactly (optimizer state
    may be absent when ``allow_missing_state``). ``verify``: check every
    file's sha256."""
    path = os.path.abspath(path.rstrip("/"))
    index = read_index(path)
    if index["format"] == _sharded_format():
        from oneflow_lite import sharded_checkpoint

        return sharded_checkpoint.load_logical(path, model, expected, verify, allow_missing_state)
    if model is not None and index["model"] != model:
        raise CheckpointError(f"checkpoint {path} belongs to model '{index['model']}', "
                              f"not '{model}'")
    if expected is not None:
        check_compatible(path, index, expected, allow_missing_state)
    tensors = {e["name"]: _read_tensor(path, e, verify) for e in index["tensors"]}
    return Checkpoint(tensors=tensors, model=index["model"], fingerprint=index["fingerprint"],
                      meta=index.get("meta", {}), random=index.get(_random_stream.KEY),
                      dropout=index.get(_random_stream.MODULES))


def _sharded_format() -> str:
    return "oneflow_lite-sharded"  # sharded_checkpoint.FORMAT (that module imports this one)


def eager_tensors(model, optimizer=None) -> Dict[str, np.ndarray]:
    """An eager model's state_dict plus its optimizer's state (names as the
    graph's: the optimizer must have been given ``model.named_parameters()``)."""
    out = {k: np.asarray(v.numpy()) for k, v in model.state_dict().items()}
    if optimizer is not None:
        out.update({k: np.asarray(v.numpy()) for k, v in optimizer.state_dict().items()})
    return out


def save_eager(path: str, model, optimizer=None, model_name: str = "",
               meta: Optional[Mapping[str, Any]] = None) -> None:
    """A checkpoint of an eager model (and optimizer) that nn.Graph.load reads,
    with the model's Dropout counters (oneflow_lite._random_stream)."""
    save(path, eager_tensors(model, optimizer), model_name, meta,
         dropout=_random_stream.eager_counters(model))


def load_eager(path: str, model, optimizer=None, model_name: Optional[str] = None) -> Checkpoint:
    """Loads a checkpoint (from eager or from any nn.Graph plan) into an
    eager model and optimizer; checks names, shapes and dtypes first. Sets
    the model's Dropout counters last (warns when the checkpoint lacks some)."""
    specs = {k: (list(v.shape), v.dtype.name) for k, v in model.state_dict().items()}
    ck = load(path, model=model_name)
    state = {k: v for k, v in ck.tensors.items() if is_state(k)}
    params = {k: v for k, v in ck.tensors.items() if not is_state(k)}
    check_compatible(path, {"model": ck.model, "tensors": [
        {"name": k, "shape": list(v.shape), "dtype": v.dtype.name} for k, v in params.items()]},
        specs)
    model.load_state_dict({k: _tensor(v) for k, v in params.items()})
    if optimizer is not None and state:
        optimizer.load_state_dict({k: _tensor(v) for k, v in state.items()})
    _random_stream.restore_eager(path, ck.dropout, model, ck.random)
    return ck


def _tensor(array: np.ndarray):
    from oneflow_lite._tensor import Tensor

    return Tensor._wrap(np.array(array, copy=True))
