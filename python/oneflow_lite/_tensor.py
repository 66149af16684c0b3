"""``flow.Tensor``: an eager tensor over a numpy array on one CPU device, or
over a ``_C.DeviceTensor`` on a CUDA device (``to("cuda")``; ``_device``).

Creation functions (``flow.tensor``, ``zeros``, ``randn``, ...) are in
``_creation``. A Tensor owns its array (``_value``), or holds none when it lives on the
"meta" device (shape and dtype only, for models too large to allocate) or is
a graph tensor met while tracing (``nn.graph_trace.LazyTensor``). Every
operator and method forwards to ``_dispatch.apply``, the one route of every
op, which runs it eagerly (recording the autograd tape) or adds it to the
graph being traced. A global tensor (``to_global``) holds the logical value
plus a placement and an SBP; eager ops refuse it (see ``_global``).

Not thread-safe: the eager frontend is single-threaded.
"""
from __future__ import annotations

import copy
from typing import Optional, Sequence, Tuple, Union

import numpy as np

from oneflow_lite import _autograd
from oneflow_lite import _device
from oneflow_lite import _dtype as dtypes
from oneflow_lite import _tensor_math_methods
from oneflow_lite._tensor_math_methods import MathMethods

Number = Union[int, float]


class Tensor(MathMethods):
    """An n-d array with autograd; see the module docstring. Comparisons,
    max/min, where, ... come from ``MathMethods`` (``_tensor_math_methods``)."""

    __array_priority__ = 1000  # numpy defers `ndarray + Tensor` to Tensor.__radd__

    def __init__(self, *args, **kwargs) -> None:
        raise TypeError("use flow.tensor(data), flow.from_numpy(array), flow.zeros(...) or "
                        "flow.randn(...) to create a Tensor")

    # ---- construction (internal) -------------------------------------------------
    @classmethod
    def _wrap(cls, array: Optional[np.ndarray], shape=None, dtype=None, device: str = "cpu",
              requires_grad: bool = False) -> "Tensor":
        t = object.__new__(cls)
        t._init(array, shape, dtype, device, requires_grad)
        return t

    def _init(self, array, shape, dtype, device, requires_grad) -> None:
        if _device.is_device_value(array):  # a _C.DeviceTensor: its device is the tensor's
            self._dtype = dtypes.get(array.dtype)
            self._shape = tuple(array.shape)
            device = array.device
        elif array is not None:
            array = np.asarray(array)
            self._dtype = dtypes.get(array.dtype)
            self._shape = tuple(int(d) for d in array.shape)
        else:
            self._dtype = dtypes.get(dtype)
            self._shape = tuple(int(d) for d in shape)
        self._value = array
        self._device = device
        self.requires_grad = bool(requires_grad)
        self.grad: Optional[Tensor] = None
        self._node = None          # (autograd Node, output index) or None for a leaf
        self._placement = None     # global tensors: flow.placement
        self._sbp = None           # global tensors: tuple of flow.sbp values

    # ---- metadata ----------------------------------------------------------------
    @property
    def shape(self) -> Tuple[int, ...]:
        return self._shape

    @property
    def dtype(self) -> dtypes.dtype:
        return self._dtype

    @property
    def device(self) -> str:
        return self._device

    @property
    def ndim(self) -> int:
        return len(self._shape)

    def dim(self) -> int:
        return len(self._shape)

    def size(self, dim: Optional[int] = None):
        return self._shape if dim is None else self._shape[dim]

    def numel(self) -> int:
        return int(np.prod(self._shape, dtype=np.int64))

    def __len__(self) -> int:
        if not self._shape:
            raise TypeError("len() of a 0-d tensor")
        return self._shape[0]

    @property
    def is_leaf(self) -> bool:
        return self._node is None

    @property
    def grad_fn(self):
        return None if self._node is None else self._node[0]

    @property
    def is_meta(self) -> bool:
        return self._device == "meta"

    @property
    def is_global(self) -> bool:
        return self._placement is not None

    @property
    def placement(self):
        return self._placement

    @property
    def sbp(self):
        return self._sbp

    # ---- values ------------------------------------------------------------------
    def _array(self) -> np.ndarray:
        """The value in host memory: the tensor's own array, or, on a CUDA
        device, a read-only copy (writing it would change nothing)."""
        if self._value is None:
            raise RuntimeError(f"tensor of shape {list(self._shape)} on device "
                               f"'{self._device}' has no value (meta or traced tensor)")
        if _device.is_device_value(self._value):
            copy = self._value.numpy()
            copy.flags.writeable = False
            return copy
        return self._value

    def numpy(self) -> np.ndarray:
        """The value as a numpy array: the tensor's own buffer (do not resize
        it), or a copy of a CUDA tensor's."""
        if _device.is_device_value(self._value):
            return self._value.numpy()
        return self._array()

    @property
    def is_cuda(self) -> bool:
        return self._device.startswith("cuda")

    def item(self) -> Number:
        if self.numel() != 1:
            raise ValueError(f"item(): tensor has {self.numel()} elements, not 1")
        return self._array().reshape(()).item()

    def tolist(self):
        return self._array().tolist()

    def detach(self) -> "Tensor":
        """The same value, cut from the tape (shares the array)."""
        out = Tensor._wrap(self._value, self._shape, self._dtype, self._device)
        out._placement, out._sbp = self._placement, self._sbp
        return out

    def clone(self) -> "Tensor":
        if self.requires_grad:
            return self * 1
        self._array()  # raises when there is no value
        return Tensor._wrap(_device.copy_value(self._value))

    def requires_grad_(self, requires_grad: bool = True) -> "Tensor":
        if requires_grad and not self._dtype.is_floating_point:
            raise ValueError(f"requires_grad_: only floating tensors can require grad, got "
                             f"dtype {self._dtype.name}")
        self.requires_grad = requires_grad
        return self

    def backward(self, gradient=None, retain_graph: bool = False) -> None:
        _autograd.backward(self, gradient, retain_graph)

    def to(self, dtype) -> "Tensor":
        """A copy in ``dtype``, or on a device ("cpu", "cuda", "cuda:1"; an
        unusable one raises naming it and why, see ``oneflow_lite._device``).
        Not differentiable: the copy is a leaf.

            >>> import oneflow_lite as flow
            >>> flow.tensor([1.0, 2.0]).to("cpu").numpy().tolist()
            [1.0, 2.0]
        """
        if _device.is_device_name(dtype):
            name = _device.canonical(dtype)
            self._array()  # raises when there is no value
            value = _device.move_value(self._value, name)
            if value is self._value:
                value = value.copy()
            return Tensor._wrap(value)
        if self._value is None and self._device == "lazy":  # traced: the cast op
            return self._op("cast", dtype=dtypes.get(dtype).name)
        converted = self._array().astype(dtypes.numpy_of(dtypes.get(dtype)))
        return Tensor._wrap(_device.like_value(converted, self._value))

    def cuda(self, device: Optional[int] = None) -> "Tensor":
        """``to("cuda")``, or ``to(f"cuda:{device}")``."""
        return self.to("cuda" if device is None else f"cuda:{int(device)}")

    def cpu(self) -> "Tensor":
        """``to("cpu")``."""
        return self.to("cpu")

    def float(self) -> "Tensor":
        return self.to(dtypes.float32)

    def double(self) -> "Tensor":
        return self.to(dtypes.float64)

    def long(self) -> "Tensor":
        return self.to(dtypes.int64)

    # ---- global tensors ----------------------------------------------------------
    def to_global(self, placement, sbp) -> "Tensor":
        from oneflow_lite import _global

        return _global.to_global(self, placement, sbp)

    def to_local(self, rank: int) -> "Tensor":
        from oneflow_lite import _global

        return _global.to_local(self, rank)

    # ---- ops ---------------------------------------------------------------------
    def _op(self, op_type: str, *others, **attrs):
        from oneflow_lite._dispatch import apply

        return apply(op_type, [self, *others], attrs)

    def __add__(self, other):
        other = _operand(other)
        if isinstance(other, Tensor):
            return self._op("add", other)
        return self._op("scalar_add", value=float(other))

    __radd__ = __add__

    def __sub__(self, other):
        other = _operand(other)
        if isinstance(other, Tensor):
            return self._op("sub", other)
        return self._op("scalar_add", value=-float(other))

    def __rsub__(self, other):
        return (-self)._op("scalar_add", value=float(other))

    def __mul__(self, other):
        other = _operand(other)
        if isinstance(other, Tensor):
            return self._op("mul", other)
        return self._op("scalar_mul", value=float(other))

    __rmul__ = __mul__

    def __truediv__(self, other):
        other = _operand(other)
        if isinstance(other, Tensor):
            return self._op("div", other)
        return self._op("scalar_mul", value=1.0 / float(other))

    def __rtruediv__(self, other):
        return self._op("scalar_pow", exponent=-1.0)._op("scalar_mul", value=float(other))

    def __neg__(self):
        return self._op("scalar_mul", value=-1.0)

    def __pow__(self, exponent: Number):
        if isinstance(exponent, Tensor):
            return _tensor_math_methods.math().pow(self, exponent)
        return self._op("scalar_pow", exponent=float(exponent))

    def __matmul__(self, other: "Tensor"):
        if self.ndim == 2 and other.ndim == 2:
            return self._op("matmul", other)
        return self._op("batch_matmul", other)

    def matmul(self, other: "Tensor"):
        return self @ other

    def reshape(self, *shape) -> "Tensor":
        shape = _shape_arg(shape)
        check_shape(shape, self._dtype, "reshape", infer=True)
        return self._op("reshape", shape=_resolve_shape(shape, self.numel(), "reshape"))

    view = reshape

    def flatten(self, start_dim: int = 0, end_dim: int = -1) -> "Tensor":
        return self._op("flatten", start_dim=start_dim, end_dim=end_dim)

    def permute(self, *perm) -> "Tensor":
        return self._op("transpose", perm=list(_shape_arg(perm)))

    def transpose(self, dim0: int, dim1: int) -> "Tensor":
        perm = list(range(self.ndim))
        perm[dim0], perm[dim1] = perm[dim1], perm[dim0]
        return self._op("transpose", perm=perm)

    @property
    def T(self) -> "Tensor":  # noqa: N802 (numpy's name)
        return self._op("transpose", perm=list(reversed(range(self.ndim))))

    def sum(self, dim=None, keepdim: bool = False) -> "Tensor":
        if not self._dtype.is_floating_point:  # bool or integer: int64, as PyTorch
            return _tensor_math_methods.math().sum_of_integers(self, dim, keepdim)
        return self._op("reduce_sum", axes=_axes(dim), keepdims=keepdim)

    def mean(self, dim=None, keepdim: bool = False) -> "Tensor":
        return self._op("reduce_mean", axes=_axes(dim), keepdims=keepdim)

    def relu(self) -> "Tensor":
        return self._op("relu")

    def tanh(self) -> "Tensor":
        return self._op("tanh")

    def sigmoid(self) -> "Tensor":
        return self._op("sigmoid")

    def softmax(self, dim: int = -1) -> "Tensor":
        return self._op("softmax", axis=dim)

    def __getitem__(self, index) -> "Tensor":
        if _tensor_math_methods.math().is_tensor_index(index):
            return _tensor_math_methods.math().index(self, index)
        start, stop, step, keep = _basic_index(index, self._shape)
        out = self._op("slice", start=start, stop=stop, step=step)
        if len(keep) != self.ndim:
            out = out.reshape([out.shape[a] for a in keep])
        return out

    # ---- printing ----------------------------------------------------------------
    def __repr__(self) -> str:
        extra = []
        if self._placement is not None:
            from oneflow_lite import _global

            extra.append(f"placement={self._placement!r}")
            extra.append(f"sbp={_global.sbp_text(self._sbp)}")
        if self._dtype is not dtypes.float32:
            extra.append(f"dtype={self._dtype!r}")
        if self._node is not None:
            extra.append(f"grad_fn={self._node[0]!r}")
        elif self.requires_grad:
            extra.append("requires_grad=True")
        if self._value is None:
            body = f"..., shape={list(self._shape)}, device='{self._device}'"
        else:
            body = np.array2string(self._array(), separator=", ", prefix="tensor(")
            if _device.is_device_value(self._value):
                extra.insert(0, f"device='{self._device}'")
        return f"tensor({body}{''.join(', ' + e for e in extra)})"

    def __bool__(self) -> bool:
        if self.numel() != 1:  # name the way out that exists in this version
            how = ("t.any() or t.all()" if hasattr(Tensor, "any") and hasattr(Tensor, "all")
                   else "t.numpy().any() or t.numpy().all()")
            raise ValueError(f"bool(tensor): a tensor of shape {tuple(self.shape)} has no single "
                             f"truth value; reduce it first with {how}")
        return bool(self._array())

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __array__(self, dtype=None):
        a = self._array()
        return a if dtype is None else a.astype(dtype)

    __hash__ = object.__hash__

    def __deepcopy__(self, memo) -> "Tensor":
        """A copy with its own array (and grad), off the tape; Modules
        deep-copy with their parameters this way."""
        out = object.__new__(type(self))
        memo[id(self)] = out
        for key, value in self.__dict__.items():
            if key == "_node":
                out.__dict__[key] = None
            elif _device.is_device_value(value):  # _value: a copy on its device
                out.__dict__[key] = _device.copy_value(value)
            else:
                out.__dict__[key] = copy.deepcopy(value, memo)
        return out


def _operand(other):
    """numpy arrays take part in operators as tensors; numbers stay numbers."""
    return Tensor._wrap(other) if isinstance(other, np.ndarray) else other


def _shape_arg(shape) -> list:
    if len(shape) == 1 and isinstance(shape[0], (list, tuple)):
        shape = shape[0]
    return [int(d) for d in shape]


INT64_MAX = 2**63 - 1
# The largest single buffer an eager tensor may ask for (oneflow_lite/core/shape.h).
MAX_ALLOCATION_BYTES = 2**48


def shape_text(shape) -> str:
    """``(2, 3)``, as the C++ core prints shapes (``()`` for a scalar)."""
    return "(" + ", ".join(str(d) for d in shape) + ")"


def check_shape(shape: Sequence[int], dtype, what: str, allocate: bool = False,
                infer: bool = False) -> int:
    """The element count of ``shape``; a ValueError naming ``what`` and the
    shape when an extent is negative, or the elements or bytes (at
    ``dtype``'s item size) are more than int64 can hold, or, when
    ``allocate``, more than ``MAX_ALLOCATION_BYTES``. ``infer``: a reshape
    target, whose -1 extents are left out of the count."""
    text = shape_text(shape)
    count = 1
    for axis, d in enumerate(shape):
        if d < 0 and not (infer and d == -1):
            raise ValueError(f"{what}: shape {text} has the negative extent {d} at axis {axis}")
        count *= max(d, 1) if infer and d == -1 else d  # Python ints: exact at any size
    if count > INT64_MAX:  # the same words as the C++ checks (core/shape.h, reshape)
        counted = (f"known extents whose product is {count}" if infer and -1 in shape
                   else f"{count} elements")
        raise ValueError(f"{what}: shape {text} has {counted}, more than int64 can hold")
    d = dtypes.get(dtype)
    if count * d.itemsize > INT64_MAX:
        raise ValueError(f"{what}: shape {text} of {d.name} takes {count * d.itemsize} bytes, "
                         f"more than int64 can hold")
    if allocate and count * d.itemsize > MAX_ALLOCATION_BYTES:
        raise ValueError(f"{what}: shape {text} of {d.name} takes {count * d.itemsize} bytes, "
                         f"more than the largest allocation ({MAX_ALLOCATION_BYTES} bytes = "
                         f"256 TiB)")
    return count


def _resolve_shape(shape: Sequence[int], numel: int, what: str) -> list:
    """Replaces one -1 by the size that keeps ``numel``."""
    shape = list(shape)
    if shape.count(-1) > 1:
        raise ValueError(f"{what}: at most one -1 in shape {shape}")
    if -1 in shape:
        known = int(np.prod([d for d in shape if d != -1], dtype=np.int64))
        if known == 0 or numel % known != 0:
            raise ValueError(f"{what}: cannot reshape {numel} elements into {shape}")
        shape[shape.index(-1)] = numel // known
    return shape


def _axes(dim) -> list:
    if dim is None:
        return []
    return [int(dim)] if isinstance(dim, (int, np.integer)) else [int(d) for d in dim]


def _basic_index(index, shape) -> tuple:
    """(start, stop, step, kept axes) of a basic index: ints, slices, Ellipsis."""
    if not isinstance(index, tuple):
        index = (index,)
    if sum(1 for i in index if i is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis")
    if Ellipsis in index:
        at = index.index(Ellipsis)
        fill = len(shape) - (len(index) - 1)
        index = index[:at] + (slice(None),) * fill + index[at + 1:]
    if len(index) > len(shape):
        raise IndexError(f"too many indices ({len(index)}) for a tensor of {len(shape)} dims")
    index = index + (slice(None),) * (len(shape) - len(index))
    start, stop, step, keep = [], [], [], []
    for axis, (i, n) in enumerate(zip(index, shape)):
        if isinstance(i, (int, np.integer)):
            j = int(i) + n if i < 0 else int(i)
            if not 0 <= j < n:
                raise IndexError(f"index {int(i)} is out of bounds for axis {axis} of size {n}")
            start.append(j), stop.append(j + 1), step.append(1)
        elif isinstance(i, slice):
            b, e, s = i.indices(n)
            if s <= 0:
                raise IndexError(f"slice step must be positive, got {s} on axis {axis}")
            start.append(b), stop.append(max(e, b)), step.append(s)
            keep.append(axis)
        else:
            raise IndexError(f"unsupported index {i!r} on axis {axis} (ints, slices and ... "
                             f"only)")
    return start, stop, step, keep


# ---- composed methods (squeeze, unsqueeze, expand, repeat, chunk, split, t, contiguous,
# new_zeros/ones/full, add_, zero_, fill_, copy_): written in _tensor_methods, bound here.
from oneflow_lite import _tensor_methods  # noqa: E402 (needs Tensor defined)

_tensor_methods.install(Tensor)
