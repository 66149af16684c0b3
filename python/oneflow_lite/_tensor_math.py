"""Comparisons, logical and arg reductions, elementwise math, selection,
joining and indexing of tensors: the top-level functions ``flow.eq``, ``lt``,
..., ``any``, ``all``, ``argmax``, ``max``, ``min``, ``abs``, ``exp``,
``log``, ``pow``, ``clamp``, ``std``, ``where``, ``masked_fill``, ``cat``,
``stack``, ``gather``, and the work behind the matching Tensor methods and
operators (``a == b``, ``a < b``, ``x[mask]``, ``x[index]``).

Every result comes from registered C++ ops through ``_dispatch.apply`` (so it
runs eagerly with autograd, or is traced into an nn.Graph): ``equal``,
``less``, ... (bool outputs), ``reduce_any``/``reduce_all``,
``argmax``/``argmin``, ``gather``, ``where``, ``exp``, ``log``, ``abs``, ``pow``,
``concat``. The rest composes them: ``max(dim)`` gathers at ``argmax``
(its gradient reaches the first largest element, as PyTorch's does with
``dim``; without ``dim`` PyTorch splits it among ties), ``clamp`` and
``masked_fill`` are ``where``, ``std`` is a mean of squares.

Python numbers join tensors as 0-d constants of the tensor's dtype (an int
tensor against a fractional number is compared in float64, as numpy does).
Two tensors of different dtypes are compared in numpy's common dtype.
Indexing by a bool mask has a data-dependent shape: eager only.
Single-threaded, as the frontend.

    >>> import oneflow_lite as flow
    >>> a = flow.tensor([1.0, 2.0, 3.0])
    >>> (a == a.clone()).all().item(), (a > 1.5).tolist()
    (True, [False, True, True])
    >>> flow.tensor([[1.0, 5.0], [7.0, 2.0]]).max(dim=1).indices.tolist()
    [1, 0]
    >>> a[a > 1.5].tolist(), flow.where(a > 2, a, 0.0).tolist()
    ([2.0, 3.0], [0.0, 0.0, 3.0])
"""
from __future__ import annotations

import builtins
import collections
import numbers
from typing import Optional, Sequence, Union

import numpy as np

from oneflow_lite import _dtype as dtypes
from oneflow_lite._tensor import Tensor

Number = Union[int, float, bool]

__all__ = ["eq", "ne", "lt", "le", "gt", "ge", "equal", "logical_not", "logical_and",
           "logical_or", "logical_xor", "any", "all", "argmax", "argmin", "max", "min",
           "maximum", "minimum", "abs", "exp", "log", "sign", "pow", "clamp", "clip", "var",
           "std", "where", "masked_fill", "gather", "cat", "concat", "stack"]

# (values, indices) of max/min along a dim, as torch.return_types.max.
MaxResult = collections.namedtuple("max", ["values", "indices"])
MinResult = collections.namedtuple("min", ["values", "indices"])

_COMPARE_OPS = ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal")


def _apply(op_type: str, inputs: list, **attrs):
    from oneflow_lite._dispatch import apply

    return apply(op_type, inputs, attrs)


def _has_value(t: Tensor) -> bool:
    return t._value is not None


def _constant(value, dtype: dtypes.dtype) -> Tensor:
    """A 0-d tensor holding ``value`` in ``dtype``."""
    return Tensor._wrap(np.array(value, dtype=dtypes.numpy_of(dtype)))


def _cast(t: Tensor, dtype: dtypes.dtype, what: str) -> Tensor:
    """``t`` in ``dtype`` (no gradient: used on compared operands only)."""
    if t.dtype is dtype:
        return t
    if _has_value(t):
        return Tensor._wrap(t._array().astype(dtypes.numpy_of(dtype)))
    return _apply("cast", [t], dtype=dtype.name)


def _common_dtype(a: dtypes.dtype, b: dtypes.dtype) -> dtypes.dtype:
    return dtypes.get(np.result_type(dtypes.numpy_of(a), dtypes.numpy_of(b)))


def _scalar_operand(t: Tensor, value, what: str):
    """(t, constant): ``value`` as a 0-d tensor of t's dtype, or both in
    float64 when t holds integers and ``value`` is fractional."""
    if isinstance(value, (bool, np.bool_)):
        if t.dtype is dtypes.bool_:
            return t, _constant(bool(value), t.dtype)
        return t, _constant(int(value), t.dtype)
    if not isinstance(value, numbers.Real):
        raise TypeError(f"{what}: expected a flow.Tensor or a number, got "
                        f"{type(value).__name__}")
    if t.dtype.is_floating_point:
        return t, _constant(value, t.dtype)
    if float(value).is_integer():
        return t, _constant(int(value), t.dtype if t.dtype is not dtypes.bool_ else dtypes.int64)
    return _cast(t, dtypes.float64, what), _constant(value, dtypes.float64)


def _operands(a, b, what: str):
    """``a`` and ``b`` as two tensors of one dtype; numbers become constants."""
    if isinstance(a, np.ndarray):
        a = Tensor._wrap(a)
    if isinstance(b, np.ndarray):
        b = Tensor._wrap(b)
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        if a.dtype is not b.dtype:
            common = _common_dtype(a.dtype, b.dtype)
            a, b = _cast(a, common, what), _cast(b, common, what)
        if a.dtype is dtypes.bool_ and b.dtype is not dtypes.bool_:
            a = _cast(a, b.dtype, what)
        return a, b
    if isinstance(a, Tensor):
        a2, b2 = _scalar_operand(a, b, what)
        if a2.dtype is dtypes.bool_ and b2.dtype is not dtypes.bool_:
            a2 = _cast(a2, b2.dtype, what)
        return a2, b2
    if isinstance(b, Tensor):
        b2, a2 = _scalar_operand(b, a, what)
        if b2.dtype is dtypes.bool_ and a2.dtype is not dtypes.bool_:
            b2 = _cast(b2, a2.dtype, what)
        return a2, b2
    raise TypeError(f"{what}: at least one operand must be a flow.Tensor")


# ---- comparisons ---------------------------------------------------------------------

def compare(op_type: str, a, b) -> Tensor:
    """``a <op> b`` elementwise with broadcasting: a bool tensor."""
    a, b = _operands(a, b, op_type)
    return _apply(op_type, [a, b])


def compare_or_not_implemented(op_type: str, a: Tensor, b):
    """``compare`` for Tensor's operators: NotImplemented for an operand that
    is no tensor, array or number (so ``t == None`` is False, as in PyTorch)."""
    if not isinstance(b, (Tensor, np.ndarray, numbers.Real, np.bool_)):
        return NotImplemented
    return compare(op_type, a, b)


def eq(a, b) -> Tensor:
    """``a == b`` elementwise: ``flow.eq(flow.tensor([1, 2]), 2).tolist() == [False, True]``."""
    return compare("equal", a, b)


def ne(a, b) -> Tensor:
    return compare("not_equal", a, b)


def lt(a, b) -> Tensor:
    return compare("less", a, b)


def le(a, b) -> Tensor:
    return compare("less_equal", a, b)


def gt(a, b) -> Tensor:
    return compare("greater", a, b)


def ge(a, b) -> Tensor:
    return compare("greater_equal", a, b)


def equal(a: Tensor, b: Tensor) -> bool:
    """Whether ``a`` and ``b`` have one shape and equal elements (torch.equal)."""
    if tuple(a.shape) != tuple(b.shape):
        return False
    return bool(eq(a, b).all())


def logical_not(x: Tensor) -> Tensor:
    return compare("equal", _as_bool(x, "logical_not"), False)


def logical_and(a: Tensor, b: Tensor) -> Tensor:
    a, b = _as_bool(a, "logical_and"), _as_bool(b, "logical_and")
    return where(a, b, False)


def logical_or(a: Tensor, b: Tensor) -> Tensor:
    a, b = _as_bool(a, "logical_or"), _as_bool(b, "logical_or")
    return where(a, True, b)


def logical_xor(a: Tensor, b: Tensor) -> Tensor:
    return compare("not_equal", _as_bool(a, "logical_xor"), _as_bool(b, "logical_xor"))


def _as_bool(x, what: str) -> Tensor:
    if isinstance(x, (bool, np.bool_)):
        return _constant(bool(x), dtypes.bool_)
    if not isinstance(x, Tensor):
        raise TypeError(f"{what}: expected a flow.Tensor, got {type(x).__name__}")
    return x if x.dtype is dtypes.bool_ else compare("not_equal", x, 0)


# ---- logical and arg reductions -------------------------------------------------------

def _axes(dim) -> list:
    if dim is None:
        return []
    return [int(dim)] if isinstance(dim, (int, np.integer)) else [int(d) for d in dim]


def any(x: Tensor, dim=None, keepdim: bool = False) -> Tensor:  # noqa: A001 (torch's name)
    """Whether any element (along ``dim``) is nonzero: a bool tensor."""
    return _apply("reduce_any", [x], axes=_axes(dim), keepdims=bool(keepdim))


def all(x: Tensor, dim=None, keepdim: bool = False) -> Tensor:  # noqa: A001 (torch's name)
    """Whether every element (along ``dim``) is nonzero: a bool tensor."""
    return _apply("reduce_all", [x], axes=_axes(dim), keepdims=bool(keepdim))


def _arg(op_type: str, x: Tensor, dim, keepdim: bool) -> Tensor:
    if dim is None:
        out = _apply(op_type, [x.reshape(-1)], axis=0)
        return out.reshape([1] * x.ndim) if keepdim else out
    return _apply(op_type, [x], axis=int(dim), keepdims=bool(keepdim))


def argmax(x: Tensor, dim: Optional[int] = None, keepdim: bool = False) -> Tensor:
    """The int64 index of the first largest element (of the flattened tensor
    when ``dim`` is None)."""
    return _arg("argmax", x, dim, keepdim)


def argmin(x: Tensor, dim: Optional[int] = None, keepdim: bool = False) -> Tensor:
    """The int64 index of the first smallest element (see ``argmax``)."""
    return _arg("argmin", x, dim, keepdim)


def _drop_axis(shape, dim: int) -> list:
    dim = dim % len(shape)
    return [d for a, d in enumerate(shape) if a != dim]


def _extreme(arg_op: str, result, x: Tensor, dim, keepdim: bool, other):
    if isinstance(dim, (Tensor, np.ndarray)) or other is not None:
        other = dim if other is None else other
        return maximum(x, other) if arg_op == "argmax" else minimum(x, other)
    if dim is None:
        flat = x.reshape(-1)
        if flat.shape[0] == 0:
            raise ValueError(f"{arg_op[3:]}(): the tensor is empty; it has no "
                             f"{'largest' if arg_op == 'argmax' else 'smallest'} element")
        index = _apply(arg_op, [flat], axis=0, keepdims=True)
        return gather(flat, 0, index).reshape([])
    dim = int(dim)
    index = _apply(arg_op, [x], axis=dim, keepdims=True)
    values = gather(x, dim, index)
    if not keepdim:
        kept = _drop_axis(x.shape, dim)
        values, index = values.reshape(kept), index.reshape(kept)
    return result(values, index)


def max(x: Tensor, dim=None, keepdim: bool = False, other=None):  # noqa: A001
    """The largest element (``dim`` None), or ``(values, indices)`` along
    ``dim``, or the elementwise maximum with a tensor (``max(x, y)``)."""
    return _extreme("argmax", MaxResult, x, dim, keepdim, other)


def min(x: Tensor, dim=None, keepdim: bool = False, other=None):  # noqa: A001
    """The smallest element, or ``(values, indices)`` along ``dim``, or the
    elementwise minimum with a tensor (see ``max``)."""
    return _extreme("argmin", MinResult, x, dim, keepdim, other)


def maximum(a: Tensor, b) -> Tensor:
    """The elementwise maximum; NaN wins, as in PyTorch."""
    a, b = _operands(a, b, "maximum")
    return where(logical_or(compare("greater", a, b), compare("not_equal", a, a)), a, b)


def minimum(a: Tensor, b) -> Tensor:
    """The elementwise minimum; NaN wins, as in PyTorch."""
    a, b = _operands(a, b, "minimum")
    return where(logical_or(compare("less", a, b), compare("not_equal", a, a)), a, b)


def sum_of_integers(x: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    """The int64 sum of a bool or integer tensor (``(pred == y).sum()``), as
    PyTorch gives. Traced, it is summed in float64 (reduce_sum takes floats;
    exact below 2**53) and cast back."""
    if not _has_value(x):
        wide = _apply("cast", [x], dtype="float64")
        total = _apply("reduce_sum", [wide], axes=_axes(dim), keepdims=bool(keepdim))
        return _apply("cast", [total], dtype="int64")
    axis = tuple(_axes(dim)) or None
    total = np.sum(x._array(), axis=axis, keepdims=keepdim, dtype=np.int64)
    return Tensor._wrap(np.asarray(total, dtype=np.int64))


# ---- elementwise math ----------------------------------------------------------------

def abs(x: Tensor) -> Tensor:  # noqa: A001 (torch's name)
    return _apply("abs", [x])


def exp(x: Tensor) -> Tensor:
    return _apply("exp", [x])


def log(x: Tensor) -> Tensor:
    return _apply("log", [x])


def sign(x: Tensor) -> Tensor:
    return _apply("sign", [x])


def pow(x, exponent) -> Tensor:  # noqa: A001 (torch's name)
    """``x ** exponent``: a number exponent is scalar_pow; a tensor exponent
    (or a number base) the pow op, broadcast, in the tensors' one dtype."""
    if isinstance(x, Tensor) and not isinstance(exponent, Tensor):
        return _apply("scalar_pow", [x], exponent=float(exponent))
    if isinstance(exponent, Tensor) and not isinstance(x, Tensor):
        x = _constant(x, exponent.dtype)
    return _apply("pow", [x, exponent])


def clamp(x: Tensor, min=None, max=None) -> Tensor:  # noqa: A002 (torch's names)
    """``x`` limited to [min, max] (either may be None); the gradient flows
    where ``x`` was kept, as in PyTorch."""
    if min is None and max is None:
        raise ValueError("clamp: at least one of min and max must be given")
    out = x
    if min is not None:
        out = where(compare("less", out, min), min, out)
    if max is not None:
        out = where(compare("greater", out, max), max, out)
    return out


clip = clamp


def var(x: Tensor, dim=None, unbiased: bool = True, keepdim: bool = False) -> Tensor:
    """The variance (``unbiased``: divided by n - 1)."""
    axes = _axes(dim)
    count = 1
    for a in (axes or range(x.ndim)):
        count *= x.shape[a]
    centred = x - x.mean(dim=axes or None, keepdim=True)
    total = (centred * centred).sum(dim=axes or None, keepdim=keepdim)
    divisor = count - 1 if unbiased else count
    return total * (1.0 / divisor if divisor > 0 else float("nan"))  # torch: nan for n <= ddof


def std(x: Tensor, dim=None, unbiased: bool = True, keepdim: bool = False) -> Tensor:
    """The standard deviation (``unbiased``: divided by n - 1)."""
    return var(x, dim, unbiased, keepdim) ** 0.5


# ---- selection -----------------------------------------------------------------------

def where(condition: Tensor, x, y) -> Tensor:
    """``x`` where ``condition`` is true, else ``y``, broadcast together;
    numbers take the dtype of the other operand."""
    if not isinstance(condition, Tensor) or condition.dtype is not dtypes.bool_:
        raise TypeError(f"where: condition must be a bool flow.Tensor (e.g. x > 0), got "
                        f"{_describe(condition)}")
    if not isinstance(x, Tensor) and not isinstance(y, Tensor):
        kind = dtypes.bool_ if all_bools(x, y) else dtypes.float32
        x, y = _constant(x, kind), _constant(y, kind)
    elif not isinstance(x, Tensor):
        x = _constant(x, y.dtype)
    elif not isinstance(y, Tensor):
        y = _constant(y, x.dtype)
    return _apply("where", [condition, x, y])


def all_bools(*values) -> bool:
    return builtins.all(isinstance(v, (bool, np.bool_)) for v in values)


def masked_fill(x: Tensor, mask: Tensor, value) -> Tensor:
    """``x`` with ``value`` where ``mask`` (bool, broadcast to x) is true."""
    return where(mask, value, x)


def gather(x: Tensor, dim: int, index: Tensor) -> Tensor:
    """``out[i][j] = x[index[i][j]][j]`` for dim 0 (torch.gather)."""
    return _apply("gather", [x, index], axis=int(dim))


# ---- joining -------------------------------------------------------------------------

def cat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """The tensors joined along ``dim`` (their other extents equal)."""
    tensors = list(tensors)
    if not tensors:
        raise ValueError("cat: expected a non-empty list of tensors")
    ndim = tensors[0].ndim
    if not -ndim <= dim < ndim:
        raise IndexError(f"cat: dim {dim} is out of range for {ndim}-d tensors")
    return _apply("concat", tensors, axis=dim % ndim)


concat = cat


def stack(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """The tensors (of one shape) joined along a new axis ``dim``."""
    tensors = list(tensors)
    if not tensors:
        raise ValueError("stack: expected a non-empty list of tensors")
    shape = list(tensors[0].shape)
    if not -len(shape) - 1 <= dim <= len(shape):
        raise IndexError(f"stack: dim {dim} is out of range for {len(shape)}-d tensors")
    dim = dim % (len(shape) + 1)
    for i, t in enumerate(tensors):
        if list(t.shape) != shape:
            raise ValueError(f"stack: tensors[{i}].shape={tuple(t.shape)} != "
                             f"tensors[0].shape={tuple(shape)}")
    new_shape = shape[:dim] + [1] + shape[dim:]
    return cat([t.reshape(new_shape) for t in tensors], dim)


# ---- indexing by a tensor ------------------------------------------------------------

def is_tensor_index(index) -> bool:
    """Whether ``x[index]`` indexes by an integer or bool tensor (or list)."""
    if isinstance(index, (Tensor, np.ndarray)):
        return True
    return isinstance(index, list) and builtins.all(
        isinstance(i, (bool, numbers.Integral)) for i in index)


def index(x: Tensor, index) -> Tensor:
    """``x[index]``: rows of ``x`` picked by an integer tensor (the result
    has shape index.shape + x.shape[1:]) or by a bool mask over x's leading
    axes (eager only; one row per true element)."""
    if isinstance(index, list):
        index = np.array(index)
    if isinstance(index, np.ndarray):
        index = Tensor._wrap(index if index.dtype == np.bool_ else index.astype(np.int64))
    if index.dtype is dtypes.bool_:
        return _mask_index(x, index)
    if index.dtype.is_floating_point:
        raise IndexError(f"tensors used as indices must be integer or bool, got "
                         f"{index.dtype.name}")
    if x.ndim == 0:
        raise IndexError("a 0-d tensor cannot be indexed by a tensor")
    if not _has_value(index):
        raise NotImplementedError(
            "indexing by a graph tensor inside nn.Graph: use flow.gather(x, dim, index) with "
            "an index of x's extents on the other axes")
    rows = np.asarray(index._array(), dtype=np.int64)
    n = x.shape[0]
    bad = (rows < -n) | (rows >= n)
    if bad.any():
        at = tuple(int(i) for i in np.argwhere(bad)[0])
        raise IndexError(f"index {int(rows[at])} (at {list(at)} of the index) is out of bounds "
                         f"for axis 0 of size {n}")
    rows = np.where(rows < 0, rows + n, rows)
    return _take_rows(x, rows.reshape(-1)).reshape(list(rows.shape) + list(x.shape[1:]))


def _take_rows(x: Tensor, rows: np.ndarray) -> Tensor:
    """x's rows ``rows`` (1-D int64): a gather along axis 0."""
    rest = list(x.shape[1:])
    full = np.broadcast_to(rows.reshape([-1] + [1] * len(rest)), [rows.size] + rest)
    return gather(x, 0, Tensor._wrap(np.ascontiguousarray(full)))


def _mask_index(x: Tensor, mask: Tensor) -> Tensor:
    if not _has_value(mask):
        raise NotImplementedError(
            "indexing by a bool mask inside nn.Graph: its result's shape depends on the "
            "values; use flow.where(mask, x, 0) or masked_fill instead")
    m = mask._array()
    if tuple(m.shape) != tuple(x.shape[:m.ndim]):
        raise IndexError(f"the mask's shape {tuple(m.shape)} does not match the indexed "
                         f"tensor's leading shape {tuple(x.shape[:m.ndim])}")
    rest = list(x.shape[m.ndim:])
    flat = x.reshape([int(np.prod(m.shape, dtype=np.int64))] + rest)
    return _take_rows(flat, np.flatnonzero(m).astype(np.int64))


def _describe(v) -> str:
    if isinstance(v, Tensor):
        return f"a tensor of dtype {v.dtype.name}"
    return type(v).__name__
