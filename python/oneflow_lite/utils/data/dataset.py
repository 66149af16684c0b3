"""``Dataset`` (the map-style protocol: ``__getitem__`` and ``__len__``) and
``TensorDataset`` (rows of equally long tensors or arrays). Not
thread-safe."""
from __future__ import annotations

from typing import Tuple

import numpy as np

from oneflow_lite import _device
from oneflow_lite._tensor import Tensor


class Dataset:
    """Subclasses define ``__getitem__(index)`` and ``__len__()``."""

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} does not define __getitem__")

    def __len__(self) -> int:
        raise NotImplementedError(f"{type(self).__name__} does not define __len__")


class TensorDataset(Dataset):
    """Row i is ``(t[i] for t in tensors)``; the tensors (flow tensors or
    numpy arrays) share their first extent. Rows are read from the host
    values (no op is recorded: a dataset is data, not part of a model)."""

    def __init__(self, *tensors) -> None:
        if not tensors:
            raise ValueError("TensorDataset: give at least one tensor")
        arrays = []
        for i, t in enumerate(tensors):
            if isinstance(t, Tensor):
                a = _device.host_value(t._array())
            elif isinstance(t, np.ndarray):
                a = t
            else:
                raise TypeError(f"TensorDataset: tensor {i} is a {type(t).__name__}, not a "
                                f"flow.Tensor or numpy array")
            if a.ndim == 0:
                raise ValueError(f"TensorDataset: tensor {i} is 0-d; rows need a first axis")
            arrays.append(a)
        lengths = [len(a) for a in arrays]
        if len(set(lengths)) != 1:
            raise ValueError(f"TensorDataset: the tensors' first extents differ: {lengths}")
        self.tensors = tuple(tensors)
        self._arrays = arrays

    def __len__(self) -> int:
        return len(self._arrays[0])

    def __getitem__(self, index) -> Tuple[Tensor, ...]:
        return tuple(Tensor._wrap(np.array(a[index])) for a in self._arrays)

    def rows(self, indices) -> Tuple[Tensor, ...]:
        """The rows at ``indices`` at once, as one tensor per field (what
        ``DataLoader`` collates from ``__getitem__`` row by row)."""
        indices = np.asarray(indices, np.int64)
        return tuple(Tensor._wrap(np.ascontiguousarray(a[indices])) for a in self._arrays)
