"""Sharded checkpoints (format version 2): each process writes the slices its
ranks hold, and a load reads only the byte ranges its ranks need. Which
format is written when, and why two: oneflow_lite.checkpoint's opening.

A checkpoint is a directory::

    ckpt/
      .oneflow_lite-checkpoint   our marker (oneflow_lite._save_paths)
      index.json                 per tensor: logical shape, dtype, NdSbp,
                                 placement, and its slices: rank, offset,
                                 shape, file, byte_offset, nbytes, sha256,
                                 crc32 per chunk (oneflow_lite._sharded_index);
                                 the random stream position, so that a
                                 resumed session draws the dropout masks of
                                 an uninterrupted one (_random_stream)
      shards/process-00000.bin   raw C-order bytes of process 0's slices,
                                 back to back; one file per process

Only one copy of each distinct slice is written: the rank at coordinate 0 of
every B axis of the placement (``primary`` in the layout) writes it, so the
files hold each byte once and nothing is gathered into one process.
Variables are never P (a strategy refuses it), and a P layout is refused.

Saving (``save``) is collective over the job's processes (a world object:
``_world.World``, or ``_thread_world`` threads in tests):
process 0 checks the target with _save_paths' rule (a new path, an empty
folder or an earlier checkpoint of ours, either format; anything else, ""
and "/" are refused and left untouched) and makes the marked temporary
folder, whose name it broadcasts; every process writes and fsyncs its shard
file; the slice lists are gathered; process 0 checks that every slice was
written exactly once, writes index.json and swaps the folder in atomically
(renameat2). A kill -9 at any moment leaves the previous checkpoint (or
none) loadable; the next save removes the marked leftovers (named after
process 0's pid, removed once no process of that pid lives on the host of
the next save's process 0). Every process
sees one outcome: an error on any process raises on all. Process 0 decides it
and publishes it outside the collectives, so a peer lost after every shard
was gathered changes nothing: the checkpoint is published and every save
that lives on returns; when process 0 itself is lost, the others read the
outcome from the disk (the index names the save that wrote it). A save
reports exactly what is on disk.
Multi-host saves assume one filesystem shared by the hosts, mounted at the
same path (every process writes into process 0's temporary folder).

Loading (``load_into``) reads, for each local rank of the target layout
(any plan, world size or process count), the parts of the saved slices that
overlap its slice, verifying them (``_slice_io``: crc32 of every chunk
read, sha256 of every slice read whole); everything is read and checked
before any variable is set, so an error changes nothing. ``load_logical``
assembles logical tensors (eager models, one device). Errors are
``CheckpointError`` naming the file, the tensor and the slice.

Threads: the processes of a World may be threads of one process (tests),
each calling ``save`` or ``load_into`` with its own source; two saves of
one target race as two ``mv`` would.

    >>> import numpy as np, tempfile, os
    >>> d = os.path.join(tempfile.mkdtemp(), "ck")
    >>> save(d, ArrayShards({"w": np.arange(6, dtype=np.float32).reshape(2, 3)}), model="toy")
    >>> ck = load_logical(d, model="toy")
    >>> ck.tensors["w"].tolist(), ck.stats.bytes_read
    ([[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]], 24)
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import zlib
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from oneflow_lite import (_random_stream, _save_paths, _sharded_index, _slice_io, _world,
                          checkpoint)
from oneflow_lite._sharded_index import FORMAT, INDEX, VERSION  # noqa: F401 (re-exported)
from oneflow_lite.checkpoint import CheckpointError

SHARDS = "shards"
CHUNK_BYTES = 1 << 20  # crc32 granularity of partial reads


def shard_file(process: int) -> str:
    return f"{SHARDS}/process-{process:05d}.bin"


class SessionShards:
    """A ``_C.DistributedSession`` seen per rank, for ``save`` and
    ``load_into``: the variables ``names`` on the ranks ``ranks`` (default:
    the session's ``local_ranks()``)."""

    def __init__(self, session, names: Sequence[str], ranks: Optional[Sequence[int]] = None):
        self.session, self.names = session, list(names)
        local = list(session.local_ranks())
        self.ranks = local if ranks is None else [int(r) for r in ranks]
        if not set(self.ranks) <= set(local):
            raise ValueError(f"SessionShards: ranks {sorted(set(self.ranks) - set(local))} are "
                             f"not held by this process (it holds {local})")
        self._layouts: Dict[str, dict] = {}

    @property
    def iteration(self) -> int:
        """The session's random stream position (oneflow_lite._random_stream)."""
        return self.session.iteration

    def layout(self, name: str) -> dict:
        if name not in self._layouts:
            self._layouts[name] = self.session.variable_layout(name)
        return self._layouts[name]

    def get(self, name: str, rank: int) -> np.ndarray:
        return np.asarray(self.session.get_variable_slice(name, rank))

    def set(self, name: str, rank: int, value: np.ndarray) -> None:
        self.session.set_variable_slice(name, rank, np.require(value, requirements="C"))


class ArrayShards:
    """Logical arrays as held by one rank (0): an eager model's state or a
    one-device session's, saved or loaded (``arrays`` receives the loads).
    ``iteration``: the random stream position to save (a one-device
    session's ``iteration``; None: none, as eager state); a load sets it."""

    def __init__(self, arrays: Mapping[str, Any], iteration: Optional[int] = None):
        self.arrays = {k: np.require(np.asarray(v), requirements="C") for k, v in arrays.items()}
        self.names, self.ranks = list(self.arrays), [0]
        self.iteration = iteration

    def layout(self, name: str) -> dict:
        a = self.arrays[name]
        return {"shape": list(a.shape), "dtype": a.dtype.name, "nd_sbp": "(B)", "ranks": [0],
                "hierarchy": [1], "slices": {0: {"offset": [0] * a.ndim, "shape": list(a.shape),
                                                 "partial": False, "primary": True}}}

    def get(self, name: str, rank: int) -> np.ndarray:
        return self.arrays[name]

    def set(self, name: str, rank: int, value: np.ndarray) -> None:
        self.arrays[name] = value


# ---- save -------------------------------------------------------------------------

def save(path, source, model: str = "", meta: Optional[Mapping[str, Any]] = None,
         world: Optional[_world.World] = None, chunk_bytes: int = CHUNK_BYTES) -> None:
    """Writes ``source``'s slices (``SessionShards`` or ``ArrayShards``) as a
    sharded checkpoint at ``path``; every process of ``world`` (default: the
    job's, from the launcher's environment; this process alone without one)
    calls it with its own source. See the module docstring."""
    world = world or _world.World()
    tmp, replace = _prepare(path, model, meta, chunk_bytes, world)
    try:
        _write_and_publish(tmp, path, replace, source, model, meta, chunk_bytes, world)
    except BaseException:
        if world.process == 0:  # also when a peer vanished inside a collective
            _save_paths.remove_ours(tmp)  # gone already once published
        raise


def _write_and_publish(tmp: str, path, replace: bool, source, model: str, meta,
                       chunk_bytes: int, world) -> None:
    error, payload = None, None
    try:
        payload = _write_shard(tmp, source, world.process, chunk_bytes)
    except Exception as e:  # the others must hear of it, not wait for us
        error, payload = e, {"error": f"{type(e).__name__}: {e}"}
    save_id = os.path.basename(tmp)
    try:
        gathered = world.all_gather_obj(payload)
    except Exception as e:  # a peer was lost: process 0 still decides what is on disk
        if world.process == 0:
            world.publish_str(f"save/{save_id}", f"process 0: {e}")
        elif _outcome(world, path, save_id) == "":
            return  # the checkpoint was published complete: say so
        raise
    failed = [f"process {i}: {g['error']}" for i, g in enumerate(gathered) if "error" in g]
    status = "; ".join(failed)
    if world.process == 0:
        if not failed:
            try:
                _publish(tmp, path, replace, model, meta, chunk_bytes, gathered, save_id)
            except Exception as e:
                error, status = e, f"process 0: {type(e).__name__}: {e}"
        world.publish_str(f"save/{save_id}", status)  # not a collective: a lost peer is no stop
    else:
        status = _outcome(world, path, save_id)
    if error is not None:
        raise error
    if status:
        raise CheckpointError(f"sharded checkpoint save failed in another process: {status}")


def _outcome(world, path, save_id: str) -> str:
    """Process 0's word on the save ("" = published), or, when process 0 is
    gone, what the disk says: published when the index there is this save's."""
    status = world.await_str(f"save/{save_id}")
    if status is not None:
        return status
    try:
        published = read_index(_save_paths.target_path(path, "sharded_checkpoint.save")).get(
            "save_id") == save_id
    except (CheckpointError, OSError):
        published = False
    return "" if published else "lost process 0 before it published the checkpoint"


def _prepare(path, model: str, meta, chunk_bytes: int, world) -> Tuple[str, bool]:
    """Process 0 checks the target and makes the marked temporary folder;
    every process gets (its path, whether a checkpoint is replaced)."""
    mine, error = {}, None
    if world.process == 0:
        try:
            mine = _make_temp(path, model, meta, chunk_bytes)
        except Exception as e:
            error, mine = e, {"error": str(e)}
    try:
        reply = json.loads(world.broadcast_str(json.dumps(mine)))
    except BaseException:
        if "tmp" in mine:  # process 0, whose peers did not answer
            _save_paths.remove_ours(mine["tmp"])
        raise
    if error is not None:
        raise error
    if "error" in reply:
        raise CheckpointError(f"{reply['error']} (refused by process 0)")
    return reply["tmp"], reply["replace"]


def _make_temp(path, model: str, meta, chunk_bytes: int) -> dict:
    full = _save_paths.target_path(path, "sharded_checkpoint.save")
    what = f"checkpoint {full}"
    if not isinstance(model, str):
        raise CheckpointError(f"{what}: model must be a str, got {type(model).__name__}")
    if isinstance(chunk_bytes, bool) or not (isinstance(chunk_bytes, int) and chunk_bytes > 0):
        raise CheckpointError(f"{what}: chunk_bytes={chunk_bytes!r} must be a positive integer")
    try:
        json.dumps(dict(meta or {}))
    except (TypeError, ValueError) as e:
        raise CheckpointError(f"{what}: meta is not JSON-serialisable: {e}") from None
    try:
        replace = _save_paths.check_checkpoint_target(full, what,
                                                      legacy=checkpoint._is_unmarked_checkpoint)
    except _save_paths.SaveTargetError as e:
        raise CheckpointError(str(e)) from None
    tmp = _save_paths.make_temp_dir(full)
    try:
        os.mkdir(os.path.join(tmp, SHARDS))
    except BaseException:
        _save_paths.remove_ours(tmp)
        raise
    return {"tmp": tmp, "replace": replace}


def _check_layout(name: str, layout: dict) -> np.dtype:
    if any(s["partial"] for s in layout["slices"].values()):
        raise CheckpointError(f"sharded checkpoint: variable '{name}' is laid out as "
                              f"{layout['nd_sbp']} (partial sum); variables are S or B under a "
                              f"valid strategy, and a P variable cannot be saved")
    if not checkpoint._is_dtype(layout["dtype"]):
        raise CheckpointError(f"sharded checkpoint: variable '{name}' has dtype "
                              f"{layout['dtype']}, which has no numpy dtype to store")
    return np.dtype(layout["dtype"])


def _write_shard(tmp: str, source, process: int, chunk_bytes: int) -> dict:
    """Writes and fsyncs this process's shard file; returns its slice list."""
    rel = shard_file(process)
    tensors, pos = [], 0
    if not source.names:
        raise CheckpointError("sharded checkpoint: nothing to save (no tensors)")
    with open(os.path.join(tmp, rel), "wb") as f:
        for name in source.names:
            layout = source.layout(name)
            dtype = _check_layout(name, layout)
            slices = []
            for rank in source.ranks:
                s = layout["slices"].get(rank)
                if s is None or not s["primary"] or math.prod(s["shape"]) == 0:
                    continue
                a = np.require(source.get(name, rank), requirements="C")
                if list(a.shape) != list(s["shape"]) or a.dtype != dtype:
                    raise CheckpointError(f"sharded checkpoint: variable '{name}' rank {rank} "
                                          f"is {a.dtype.name}{list(a.shape)}, its layout says "
                                          f"{dtype.name}{list(s['shape'])}")
                data = memoryview(a.reshape(-1).view(np.uint8))
                f.write(data)
                slices.append({"rank": int(rank), "offset": list(s["offset"]),
                               "shape": list(s["shape"]), "file": rel, "byte_offset": pos,
                               "nbytes": len(data), "sha256": hashlib.sha256(data).hexdigest(),
                               "crc32": [zlib.crc32(data[k:k + chunk_bytes])
                                         for k in range(0, len(data), chunk_bytes)]})
                pos += len(data)
            tensors.append({"name": name, "shape": list(layout["shape"]), "dtype": dtype.name,
                            "nd_sbp": layout["nd_sbp"],
                            "placement": {"ranks": list(layout["ranks"]),
                                          "hierarchy": list(layout["hierarchy"])},
                            "slices": slices, "expect": _primary_ranks(layout)})
        f.flush()
        os.fsync(f.fileno())
    return {"file": rel, "nbytes": pos, "ranks": [int(r) for r in source.ranks],
            "tensors": tensors, "random": _random_stream.of(getattr(source, "iteration", None))}


def _primary_ranks(layout: dict) -> List[int]:
    return sorted(int(r) for r, s in layout["slices"].items()
                  if s["primary"] and math.prod(s["shape"]))


def _merge(gathered: List[dict]) -> List[dict]:
    """One entry per tensor with every process's slices; checks that the
    processes agree on the tensors and that each slice was written once."""
    first = gathered[0]["tensors"]
    merged = []
    for i, entry in enumerate(first):
        slices, writer = [], {}
        for p, g in enumerate(gathered):
            mine = g["tensors"][i] if i < len(g["tensors"]) else None
            same = ("name", "shape", "dtype", "nd_sbp", "placement")
            if len(g["tensors"]) != len(first) or any(mine[k] != entry[k] for k in same):
                raise CheckpointError(f"sharded checkpoint: process {p} saves other tensors or "
                                      f"layouts than process 0 (tensor {i}: "
                                      f"'{entry['name']}')")
            for s in mine["slices"]:
                if s["rank"] in writer:
                    raise CheckpointError(f"sharded checkpoint: tensor '{entry['name']}': the "
                                          f"slice of rank {s['rank']} is written by processes "
                                          f"{writer[s['rank']]} and {p} (their ranks overlap)")
                writer[s["rank"]] = p
                slices.append(s)
        missing = sorted(set(entry["expect"]) - set(writer))
        if missing:
            raise CheckpointError(f"sharded checkpoint: tensor '{entry['name']}': no process "
                                  f"holds the slices of ranks {missing} (the processes hold "
                                  f"ranks {[g['ranks'] for g in gathered]})")
        merged.append({k: v for k, v in entry.items() if k != "expect"})
        merged[-1]["slices"] = sorted(slices, key=lambda s: s["rank"])
    return merged


def _publish(tmp: str, path, replace: bool, model: str, meta, chunk_bytes: int,
             gathered: List[dict], save_id: str = "") -> None:
    tensors = _merge(gathered)
    try:
        random = _random_stream.agreed([g.get("random") for g in gathered])
    except ValueError as e:
        raise CheckpointError(f"sharded checkpoint: {e}") from None
    full = _save_paths.target_path(path, "sharded_checkpoint.save")
    index = {"format": FORMAT, "version": VERSION, "model": model,
             "fingerprint": checkpoint.fingerprint({t["name"]: (t["shape"], t["dtype"])
                                                    for t in tensors}),
             "meta": json.loads(json.dumps(dict(meta or {}))), "chunk_bytes": chunk_bytes,
             "world": {"processes": len(gathered),
                       "ranks": sorted({r for g in gathered for r in g["ranks"]})},
             "files": [{"file": g["file"], "nbytes": g["nbytes"]} for g in gathered],
             "tensors": tensors, "save_id": save_id}
    if random is not None:
        index[_random_stream.KEY] = random
    _sharded_index.check(tmp, index)  # what a load will check, before anything is replaced
    _save_paths._fsync_dir(os.path.join(tmp, SHARDS))  # the shard files' names, too
    checkpoint._write_file(os.path.join(tmp, INDEX),
                           lambda f: f.write(json.dumps(index, indent=1).encode()))
    _save_paths.publish(tmp, full, replace)


# ---- load -------------------------------------------------------------------------

def read_index(path) -> dict:
    """The parsed and checked index.json of the sharded checkpoint at ``path``."""
    path = os.path.abspath(os.fspath(path).rstrip("/") or "/")
    return _sharded_index.check(path, _sharded_index.parse(path))


def is_sharded(path) -> bool:
    """True when ``path`` holds an index.json of this format (not checked further)."""
    try:
        index = _sharded_index.parse(os.path.abspath(os.fspath(path)))
    except (CheckpointError, TypeError):
        return False
    return isinstance(index, dict) and index.get("format") == FORMAT


def load_into(path, target, model: Optional[str] = None,
              expected: Optional[Mapping[str, Tuple[Sequence[int], str]]] = None,
              verify: bool = True, allow_missing_state: bool = False) -> checkpoint.Checkpoint:
    """Loads the checkpoint at ``path`` into ``target`` (``SessionShards`` or
    ``ArrayShards``): for each of its ranks and each saved tensor it holds,
    reads the overlapping byte ranges, checks them, and sets the slices once
    all are read. ``expected`` (name -> (shape, dtype)): what the checkpoint
    must hold (optimizer state may be absent when ``allow_missing_state``);
    without it, every saved tensor must be one of the target's. Returns the
    checkpoint's model, fingerprint, meta and the read ``stats``
    (``_slice_io.ReadStats``); ``tensors`` is empty."""
    path = os.path.abspath(os.fspath(path).rstrip("/") or "/")
    index = read_index(path)
    if model is not None and index["model"] != model:
        raise CheckpointError(f"checkpoint {path} belongs to model '{index['model']}', "
                              f"not '{model}'")
    if expected is None:
        expected = {n: (target.layout(n)["shape"], target.layout(n)["dtype"])
                    for n in target.names}
        allow_missing_state = True
    checkpoint.check_compatible(path, index, expected, allow_missing_state)
    names = set(target.names)
    reader = _slice_io.SliceReader(path, index["chunk_bytes"], verify, lambda m: CheckpointError(
        f"sharded checkpoint {path}: {m}"))
    pieces = {}
    try:
        for entry in index["tensors"]:
            if entry["name"] not in names:
                raise CheckpointError(f"checkpoint {path}: tensor '{entry['name']}' is not a "
                                      f"variable of the target")
            layout = target.layout(entry["name"])
            boxes = {r: (layout["slices"][r]["offset"], layout["slices"][r]["shape"])
                     for r in target.ranks if r in layout["slices"]}
            pieces.update(_read_boxes(reader, entry, boxes))
    finally:
        reader.close()
    for (name, rank), value in pieces.items():
        target.set(name, rank, value)
    if isinstance(target, SessionShards):  # the stream moves with the variables
        _random_stream.restore(path, index.get(_random_stream.KEY), target.session,
                               {n: v for (n, _), v in pieces.items()})
    elif index.get(_random_stream.KEY) is not None and hasattr(target, "iteration"):
        target.iteration = index[_random_stream.KEY]["iteration"]  # ArrayShards
    return checkpoint.Checkpoint(tensors={}, model=index["model"],
                                 fingerprint=index["fingerprint"], meta=index.get("meta", {}),
                                 stats=reader.stats, random=index.get(_random_stream.KEY))


def _read_boxes(reader: _slice_io.SliceReader, entry: dict,
                boxes: Dict[int, Tuple[list, list]]) -> Dict[Tuple[str, int], np.ndarray]:
    """Each rank's box of tensor ``entry`` from the saved slices overlapping
    it; each saved slice is read once for all the boxes that need it."""
    name, dtype = entry["name"], np.dtype(entry["dtype"])
    out = {r: np.empty(box, dtype) for r, (_, box) in boxes.items() if math.prod(box)}
    filled = dict.fromkeys(out, 0)
    for saved in entry["slices"]:
        needs = []  # (rank, box in the rank's slice, box in the saved slice)
        for r in out:
            offset, box = boxes[r]
            hit = _slice_io.overlap(offset, box, saved["offset"], saved["shape"])
            if hit is not None:
                lo, shape = hit
                needs.append((r, [a - b for a, b in zip(lo, offset)],
                              [a - b for a, b in zip(lo, saved["offset"])], shape))
        if not needs:
            continue
        data = reader.read(name, dtype, saved, [(src, shape) for _, _, src, shape in needs])
        for r, dst, src, shape in needs:
            out[r][_box(dst, shape)] = data[_box(src, shape)]
            filled[r] += math.prod(shape)
    for r, n in filled.items():
        if n != out[r].size:  # the index tiles the tensor (checked): a bug if reached
            raise CheckpointError(f"checkpoint: tensor '{name}' rank {r}: {n} of {out[r].size} "
                                  f"elements found in the saved slices")
    return {(name, r): a for r, a in out.items()}


def _box(offset: Sequence[int], shape: Sequence[int]) -> tuple:
    return tuple(slice(o, o + n) for o, n in zip(offset, shape))


def load_logical(path, model: Optional[str] = None,
                 expected: Optional[Mapping[str, Tuple[Sequence[int], str]]] = None,
                 verify: bool = True, allow_missing_state: bool = False) -> checkpoint.Checkpoint:
    """The checkpoint's logical tensors, assembled from all slices (for an
    eager model or a one-device graph); as ``checkpoint.load`` returns them."""
    path = os.path.abspath(os.fspath(path).rstrip("/") or "/")
    index = read_index(path)
    # np.zeros: pages the OS backs only when written
    target = ArrayShards({t["name"]: np.zeros(t["shape"], t["dtype"]) for t in index["tensors"]})
    ck = load_into(path, target, model, expected or {t["name"]: (t["shape"], t["dtype"])
                                                    for t in index["tensors"]},
                   verify, allow_missing_state)
    ck.tensors = {t["name"]: target.arrays[t["name"]] for t in index["tensors"]}
    return ck

