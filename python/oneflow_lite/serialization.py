"""``flow.save`` / ``flow.load`` for eager state dicts: one ``.npz`` file
(numpy's zip of .npy arrays, no pickle) holding name -> array in order.
The file is written under a fresh temporary name beside it and renamed, so
a crash never leaves a half-written file under the real name. ``flow.save``
replaces only a file that is itself a flow.save archive (see ``save``).
Checkpoints of graphs are nn.Graph's own formats (oneflow_lite.checkpoint,
logical; oneflow_lite.sharded_checkpoint, per rank). Stateless; thread-compatible.
"""
from __future__ import annotations

import os
import zipfile
from collections import OrderedDict
from typing import Dict

import numpy as np

from oneflow_lite import _save_paths, _umask
from oneflow_lite._tensor import Tensor

_NPY_MAGIC = b"\x93NUMPY"


def _arrays(state_dict: Dict) -> "OrderedDict[str, np.ndarray]":
    if not isinstance(state_dict, dict):
        raise TypeError(f"flow.save: expected a dict of tensors (a state_dict), got "
                        f"{type(state_dict).__name__}")
    arrays = OrderedDict()
    for key, value in state_dict.items():
        if not isinstance(key, str) or not key:
            raise TypeError(f"flow.save: key {key!r} is not a non-empty string")
        if isinstance(value, Tensor):
            arrays[key] = value.numpy()
        elif isinstance(value, (np.ndarray, np.generic, int, float)):
            arrays[key] = np.asarray(value)
        else:
            raise TypeError(f"flow.save: value of '{key}' is a {type(value).__name__}, not a "
                            f"tensor or array")
        if arrays[key].dtype == object:
            raise TypeError(f"flow.save: value of '{key}' is not numeric (dtype object)")
    return arrays


def is_archive(path: str) -> bool:
    """True for a flow.save file: a zip archive whose members are all .npy
    arrays (what numpy's ``savez`` writes and ``flow.load`` reads)."""
    if os.path.islink(path) or not os.path.isfile(path) or not zipfile.is_zipfile(path):
        return False
    try:
        with zipfile.ZipFile(path) as z:
            return all(n.endswith(".npy") for n in z.namelist())
    except (zipfile.BadZipFile, OSError):
        return False


def save(state_dict: Dict, path) -> None:
    """Writes ``state_dict`` (str -> Tensor or numpy array) to ``path``.

    ``path`` must be new or an earlier flow.save file (``is_archive``: a zip
    of .npy arrays, which is replaced atomically). Anything else there (a
    directory, any other file, a symlink) and the paths "" and "/" are
    refused with a ValueError that names the path, and left untouched.

        >>> import os, tempfile, numpy as np
        >>> import oneflow_lite as flow
        >>> f = os.path.join(tempfile.mkdtemp(), "model.npz")
        >>> flow.save({"w": np.ones(3, np.float32)}, f)
        >>> flow.save({"w": np.zeros(3, np.float32)}, f)   # replaces its own file
        >>> flow.load(f)["w"].numpy()
        array([0., 0., 0.], dtype=float32)
    """
    arrays = _arrays(state_dict)
    path = _save_paths.target_path(path, "flow.save")
    if os.path.islink(path) or os.path.isdir(path) or (os.path.lexists(path)
                                                       and not is_archive(path)):
        kind = ("a symbolic link" if os.path.islink(path) else "a directory"
                if os.path.isdir(path) else "an existing file that is not a flow.save archive")
        raise _save_paths.SaveTargetError(f"flow.save: '{path}' is {kind}; refusing to replace "
                                          f"it (remove it or choose another path)")
    parent, base = os.path.split(path)
    if not os.path.isdir(parent):
        raise FileNotFoundError(f"flow.save: the directory of '{path}' does not exist")
    fd, tmp = _umask.mkstemp(prefix=f"{base}.tmp-{os.getpid()}-", dir=parent)
    try:
        with os.fdopen(fd, "wb") as f:
            with zipfile.ZipFile(f, "w", zipfile.ZIP_STORED, allowZip64=True) as z:
                for key, array in arrays.items():  # as numpy's savez, without its arg names
                    with z.open(key + ".npy", "w", force_zip64=True) as member:
                        np.lib.format.write_array(member, array, allow_pickle=False)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


def load(path) -> "OrderedDict[str, Tensor]":
    """Reads a file written by ``flow.save``: name -> Tensor, in saved order."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"flow.load: no file '{path}'")
    if os.path.isdir(path):
        raise IsADirectoryError(f"flow.load: '{path}' is a directory, not a flow.save file (a "
                                f"checkpoint directory loads with nn.Graph.load or "
                                f"oneflow_lite.checkpoint.load)")
    if not zipfile.is_zipfile(path):
        with open(path, "rb") as f:
            head = f.read(len(_NPY_MAGIC))
        if head == _NPY_MAGIC:
            raise ValueError(f"flow.load: '{path}' is a single numpy .npy array, not a "
                             f"flow.save file (a .npz archive of a state dict); read it with "
                             f"numpy.load, or save a dict with flow.save")
        raise ValueError(f"flow.load: '{path}' is not a complete flow.save file (no zip "
                         f"archive: truncated or of another format)")
    try:
        with np.load(path, allow_pickle=False) as data:
            return OrderedDict((k, Tensor._wrap(np.array(data[k]))) for k in data.files)
    except (zipfile.BadZipFile, ValueError, OSError, EOFError, KeyError) as e:
        raise ValueError(f"flow.load: '{path}' is not a complete flow.save file "
                         f"(truncated or of another format): {e}") from e
