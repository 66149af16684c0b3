"""``flow.save`` / ``flow.load`` for eager state dicts: one ``.npz`` file
(numpy's zip of .npy arrays, no pickle) holding name -> array in order.
The file is written under a temporary name and renamed, so a crash never
leaves a half-written file under the real name. Sharded checkpoints of
graphs are nn.Graph's own format. Stateless; thread-compatible.
"""
from __future__ import annotations

import os
import zipfile
from collections import OrderedDict
from typing import Dict

import numpy as np

from oneflow_lite._tensor import Tensor


def save(state_dict: Dict, path: str) -> None:
    """Writes ``state_dict`` (str -> Tensor or numpy array) to ``path``."""
    if not isinstance(state_dict, dict):
        raise TypeError(f"flow.save: expected a dict of tensors (a state_dict), got "
                        f"{type(state_dict).__name__}")
    arrays = OrderedDict()
    for key, value in state_dict.items():
        if not isinstance(key, str):
            raise TypeError(f"flow.save: key {key!r} is not a string")
        if isinstance(value, Tensor):
            arrays[key] = value.numpy()
        elif isinstance(value, (np.ndarray, np.generic, int, float)):
            arrays[key] = np.asarray(value)
        else:
            raise TypeError(f"flow.save: value of '{key}' is a {type(value).__name__}, not a "
                            f"tensor or array")
    tmp = f"{path}.tmp{os.getpid()}"
    try:
        with open(tmp, "wb") as f:
            np.savez(f, **arrays)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def load(path: str) -> "OrderedDict[str, Tensor]":
    """Reads a file written by ``flow.save``: name -> Tensor, in saved order."""
    if not os.path.exists(path):
        raise FileNotFoundError(f"flow.load: no file '{path}'")
    try:
        with np.load(path, allow_pickle=False) as data:
            return OrderedDict((k, Tensor._wrap(np.array(data[k]))) for k in data.files)
    except (zipfile.BadZipFile, ValueError, OSError, EOFError, KeyError) as e:
        raise ValueError(f"flow.load: '{path}' is not a complete flow.save file "
                         f"(truncated or of another format): {e}") from e
