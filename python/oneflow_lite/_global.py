"""Global tensors in eager mode: ``flow.placement``, ``flow.sbp`` and the
``to_global`` / ``to_local`` conversions.

One process holds every virtual rank, so a global tensor simply keeps the
logical value with its placement and SBP; ``to_local(rank)`` cuts that
rank's part with the C++ slicing (``_C.local_slice``, the rule the boxing
planner and the runtime use: balanced splits; on a P axis the ranks at
coordinate 0 hold the value and the others zeros). Eager ops on global
tensors raise (``_dispatch``) and point to nn.Graph. Validation (repeated
ranks, unknown SBP, NdSbp length) is C++'s too. Immutable values.
"""
from __future__ import annotations

from typing import Optional, Sequence, Tuple, Union

import numpy as np

from oneflow_lite import _C, _device
from oneflow_lite._tensor import Tensor


class placement:  # noqa: N801 (OneFlow's spelling)
    """Device type, ranks and hierarchy: ``flow.placement("cpu", [0, 1, 2, 3],
    hierarchy=[2, 2])`` or, nested, ``flow.placement("cpu", [[0, 1], [2, 3]])``."""

    def __init__(self, type: str = "cpu", ranks=None, hierarchy: Optional[Sequence[int]] = None):
        if ranks is None:
            raise ValueError("placement: ranks are required, e.g. flow.placement('cpu', [0, 1])")
        try:
            array = np.asarray(ranks)
        except ValueError:  # ragged nesting, e.g. [[0, 1], [2]]
            raise ValueError(f"placement: ranks {ranks!r} are ragged; every row of a nested "
                             f"list must have the same length (it is the mesh)") from None
        if array.dtype.kind not in "iu" or array.ndim == 0:
            raise ValueError(f"placement: ranks must be a (nested) list of integers, got "
                             f"{ranks!r}")
        flat = [int(r) for r in array.reshape(-1)]
        if hierarchy is None:
            hierarchy = list(array.shape)
        hierarchy = [int(h) for h in hierarchy]
        self._text = _C.placement_string(type, flat, hierarchy)  # raises on repeated ranks
        self.type = type
        self.ranks = tuple(flat)
        self.hierarchy = tuple(hierarchy)

    def __eq__(self, other) -> bool:
        return (isinstance(other, placement) and self.type == other.type
                and self.ranks == other.ranks and self.hierarchy == other.hierarchy)

    def __hash__(self) -> int:
        return hash((self.type, self.ranks, self.hierarchy))

    def __repr__(self) -> str:
        return (f"oneflow_lite.placement(type=\"{self.type}\", ranks={list(self.ranks)}, "
                f"hierarchy={list(self.hierarchy)})")


class _SbpValue:
    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __eq__(self, other) -> bool:
        return isinstance(other, _SbpValue) and self.text == other.text

    def __hash__(self) -> int:
        return hash(self.text)

    def __repr__(self) -> str:
        return f"oneflow_lite.sbp.{_PY_NAME.get(self.text, self.text)}"


_PY_NAME = {"B": "broadcast", "P": "partial_sum"}


class _SbpNamespace:
    """``flow.sbp``: ``split(axis)``, ``broadcast``, ``partial_sum``."""

    broadcast = _SbpValue("B")
    partial_sum = _SbpValue("P")

    @staticmethod
    def split(axis: int) -> _SbpValue:
        if not isinstance(axis, (int, np.integer)) or axis < 0:
            raise ValueError(f"sbp.split: axis must be a non-negative integer, got {axis!r}")
        return _SbpValue(f"S({int(axis)})")

    @staticmethod
    def parse(text: str) -> Tuple[_SbpValue, ...]:
        """``"(S(0), B)"`` or ``"P"`` -> a tuple of sbp values."""
        canonical = _C.parse_nd_sbp(text)
        return tuple(_SbpValue(p.strip()) for p in _split_top(canonical[1:-1]))


sbp = _SbpNamespace()


def _split_top(body: str) -> list:
    parts, depth, start = [], 0, 0
    for i, c in enumerate(body):
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(body[start:i])
            start = i + 1
    parts.append(body[start:])
    return parts


def as_nd_sbp(value) -> Tuple[_SbpValue, ...]:
    """One sbp, a list of them, or the text form -> a tuple of sbp values."""
    if isinstance(value, str):
        return sbp.parse(value)
    if isinstance(value, _SbpValue):
        return (value,)
    if isinstance(value, (list, tuple)) and value:
        out = []
        for v in value:
            if isinstance(v, str):
                out.extend(sbp.parse(v))
            elif isinstance(v, _SbpValue):
                out.append(v)
            else:
                raise ValueError(f"unknown SBP {v!r} (expected flow.sbp.split(axis), "
                                 f"flow.sbp.broadcast or flow.sbp.partial_sum)")
        return tuple(out)
    raise ValueError(f"unknown SBP {value!r} (expected flow.sbp.split(axis), "
                     f"flow.sbp.broadcast, flow.sbp.partial_sum or a list of them)")


def sbp_text(nd_sbp) -> str:
    """``(S(0), B)``: the C++ NdSbp text form."""
    return "(" + ", ".join(v.text for v in nd_sbp) + ")"


def check_fits(shape, place: placement, nd_sbp, what: str) -> None:
    if len(nd_sbp) != len(place.hierarchy):
        raise ValueError(f"{what}: sbp {sbp_text(nd_sbp)} has {len(nd_sbp)} entries but the "
                         f"placement's hierarchy {list(place.hierarchy)} has "
                         f"{len(place.hierarchy)} axes")
    _C.local_slice(list(shape), list(place.hierarchy), sbp_text(nd_sbp), 0, what)


def to_global(t: Tensor, place: placement, nd_sbp) -> Tensor:
    """The same logical value, described as laid out by ``nd_sbp`` on
    ``place``. A lazy (traced) tensor gets the layout as a pin for the
    searcher; an eager one keeps its value (a detached view when global)."""
    if not isinstance(place, placement):
        raise TypeError(f"to_global: placement must be a flow.placement, got "
                        f"{type(place).__name__}")
    nd = as_nd_sbp(nd_sbp)
    check_fits(t.shape, place, nd, f"to_global of a tensor of shape {list(t.shape)}")
    from oneflow_lite._dispatch import active_tracer

    tracer = active_tracer()
    if tracer is not None and hasattr(t, "graph_name"):
        return tracer.pin(t, place, nd)
    out = t.detach()
    out.requires_grad = t.requires_grad
    out._placement, out._sbp = place, nd
    return out


def to_local(t: Tensor, rank: int) -> Tensor:
    """Rank ``rank``'s part of the global tensor ``t`` (a new local tensor)."""
    if t._placement is None:
        raise ValueError("to_local: the tensor is not global (call to_global first)")
    place = t._placement
    if rank not in place.ranks:
        raise ValueError(f"to_local: rank {rank} is not in the placement's ranks "
                         f"{list(place.ranks)}")
    index = place.ranks.index(rank)
    shape, offset, partial = _C.local_slice(list(t.shape), list(place.hierarchy),
                                            sbp_text(t._sbp), index, "to_local")
    if t._value is None:
        return Tensor._wrap(None, shape, t.dtype, t.device)
    region = tuple(slice(o, o + n) for o, n in zip(offset, shape))
    part = np.array(_device.host_value(t._value)[region], copy=True)
    if partial and not _holds_partial_value(place, t._sbp, index):
        part[...] = 0
    return Tensor._wrap(part)


def _holds_partial_value(place: placement, nd_sbp, index: int) -> bool:
    """On every P axis, is the rank at coordinate 0? (the boxing planner's
    convention for making P from a full value)."""
    coords, rest = [], index
    for size in reversed(place.hierarchy):
        coords.append(rest % size)
        rest //= size
    coords.reverse()
    return all(c == 0 for c, v in zip(coords, nd_sbp) if v.text == "P")


Sbp = Union[_SbpValue, Sequence[_SbpValue]]
