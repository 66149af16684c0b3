"""``nn.Module``: the base class of layers and models, as in PyTorch.

A Module owns its Parameters, buffers and child Modules (registered by
attribute assignment), names them by dotted path (``h.0.attn.qkv.weight``,
the keys of ``state_dict`` and of graph variables), switches train/eval and
calls ``forward`` through ``__call__``. ``__call__`` keeps a stack of the
modules being called: the tracer names ops after it, and an error raised
inside ``forward`` is re-raised (same type) prefixed with the path and class
of the innermost module, e.g. "h.0.mlp.fc (Linear): ...". Not thread-safe.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Dict, Iterator, List, Optional, Tuple

import numpy as np

from oneflow_lite import _device
from oneflow_lite import _dtype as dtypes
from oneflow_lite._tensor import Tensor
from oneflow_lite.nn.parameter import Parameter

_call_stack: List["Module"] = []
_paths: Dict[int, str] = {}  # id(module) -> path under _call_stack[0], while it runs


def scope_path() -> str:
    """Dotted path of the module being called under the outermost one on the
    stack ("" for the outermost itself, "?" for a module outside it)."""
    if not _call_stack:
        return ""
    if not _paths:
        _paths.update((id(m), name) for name, m in _call_stack[0].named_modules())
    return _paths.get(id(_call_stack[-1]), "?")


class Module:
    """Base class; subclasses set attributes in ``__init__`` and define
    ``forward``."""

    def __init__(self) -> None:
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_non_persistent", set())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "training", True)

    # ---- registration ------------------------------------------------------------
    def __setattr__(self, name: str, value) -> None:
        if "_parameters" not in self.__dict__:
            raise AttributeError(f"{type(self).__name__}: call super().__init__() before "
                                 f"assigning attributes")
        if name in self._buffers and (value is None or isinstance(value, Tensor)) \
                and not isinstance(value, Parameter):
            self._buffers[name] = value
            return
        for table in (self._parameters, self._buffers, self._modules):
            table.pop(name, None)
        if isinstance(value, Parameter):
            self._parameters[name] = value
        elif isinstance(value, Module):
            self._modules[name] = value
        else:
            object.__setattr__(self, name, value)
            return
        self.__dict__.pop(name, None)

    def __getattr__(self, name: str):
        d = self.__dict__
        for table in ("_parameters", "_buffers", "_modules"):
            if table in d and name in d[table]:
                return d[table][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        for table in (self._parameters, self._buffers, self._modules):
            if name in table:
                del table[name]
                return
        object.__delattr__(self, name)

    def register_parameter(self, name: str, param: Optional[Parameter]) -> None:
        if param is None:
            self._parameters.pop(name, None)
            object.__setattr__(self, name, None)
            return
        setattr(self, name, param)

    def register_buffer(self, name: str, tensor: Optional[Tensor], persistent: bool = True) -> None:
        """A tensor that is state but not trained (e.g. a causal mask); in
        ``state_dict`` unless ``persistent=False``."""
        self.__dict__.pop(name, None)
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent.discard(name)
        else:
            self._non_persistent.add(name)

    def add_module(self, name: str, module: Optional["Module"]) -> None:
        self._modules[name] = module

    # ---- calling -----------------------------------------------------------------
    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} does not define forward()")

    def __call__(self, *args, **kwargs):
        _call_stack.append(self)
        try:
            return self.forward(*args, **kwargs)
        except (ValueError, TypeError, RuntimeError, NotImplementedError, IndexError) as e:
            if getattr(e, "_ofl_module_path", None) is not None:
                raise
            path = scope_path() or "<top>"
            tagged = type(e)(f"in module {path} ({type(self).__name__}): {e}")
            tagged._ofl_module_path = path
            raise tagged from e
        finally:
            _call_stack.pop()
            if not _call_stack:
                _paths.clear()

    def extra_repr(self) -> str:
        return ""

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__}({self.extra_repr()}"]
        for name, child in self._modules.items():
            body = repr(child).replace("\n", "\n  ")
            lines.append(f"  ({name}): {body}")
        return lines[0] + ")" if len(lines) == 1 else "\n".join(lines) + "\n)"

    # ---- traversal ---------------------------------------------------------------
    def named_modules(self, prefix: str = "") -> Iterator[Tuple[str, "Module"]]:
        yield prefix, self
        for name, child in self._modules.items():
            if child is not None:
                yield from child.named_modules(f"{prefix}.{name}" if prefix else name)

    def modules(self) -> Iterator["Module"]:
        for _, m in self.named_modules():
            yield m

    def named_children(self) -> Iterator[Tuple[str, "Module"]]:
        for name, child in self._modules.items():
            if child is not None:
                yield name, child

    def children(self) -> Iterator["Module"]:
        for _, m in self.named_children():
            yield m

    def named_parameters(self, prefix: str = "", recurse: bool = True
                         ) -> Iterator[Tuple[str, Parameter]]:
        """Each parameter once (the first path wins for shared ones)."""
        seen = set()
        modules = self.named_modules(prefix) if recurse else [(prefix, self)]
        for path, m in modules:
            for name, p in m._parameters.items():
                if p is None or id(p) in seen:
                    continue
                seen.add(id(p))
                yield (f"{path}.{name}" if path else name), p

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", persistent_only: bool = False
                      ) -> Iterator[Tuple[str, Tensor]]:
        for path, m in self.named_modules(prefix):
            for name, b in m._buffers.items():
                if b is None or (persistent_only and name in m._non_persistent):
                    continue
                yield (f"{path}.{name}" if path else name), b

    def buffers(self) -> Iterator[Tensor]:
        for _, b in self.named_buffers():
            yield b

    def apply(self, fn) -> "Module":
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    # ---- modes -------------------------------------------------------------------
    def train(self, mode: bool = True) -> "Module":
        for m in self.modules():
            object.__setattr__(m, "training", bool(mode))
        return self

    def eval(self) -> "Module":
        return self.train(False)

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self.parameters():
            if set_to_none or p.grad is None:
                p.grad = None
            else:
                p.grad._value = _device.like_value(
                    np.zeros(p.grad.shape, dtypes.numpy_of(p.grad.dtype)), p.grad._value)

    def requires_grad_(self, requires_grad: bool = True) -> "Module":
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def to(self, dtype) -> "Module":
        """Converts every floating parameter and buffer to ``dtype`` in place,
        or moves every parameter, gradient and buffer to a device ("cpu",
        "cuda", "cuda:1"; an unusable one raises naming it and why, before
        anything moves). The tensors stay the same objects (an optimizer made
        before keeps them); meta tensors stay meta."""
        if _device.is_device_name(dtype):
            return self._to_device(_device.canonical(dtype))
        d = dtypes.get(dtype)
        for t in list(self.parameters()) + list(self.buffers()):
            if t.dtype.is_floating_point and t.dtype is not d:
                if t._value is not None:
                    converted = t._array().astype(dtypes.numpy_of(d))
                    t._value = _device.like_value(converted, t._value)
                t._dtype = d
        return self

    def _to_device(self, name: str) -> "Module":
        tensors = list(self.parameters()) + list(self.buffers())
        tensors += [p.grad for p in self.parameters() if p.grad is not None]
        for t in tensors:
            if t._value is None:  # meta: stays meta
                continue
            on_host = not _device.is_device_value(t._value)
            if name.startswith("cpu"):
                t._value, t._device = _device.host_value(t._value), "cpu"
            elif on_host or t._device != name:
                t._value, t._device = _device.move_value(t._value, name), name
        return self

    def to_global(self, placement, sbp) -> "Module":
        """Makes every parameter and buffer global in place (the same
        objects, so an optimizer made before keeps them): its value stays the
        logical value, described as laid out by ``sbp`` (one flow.sbp or a
        list per mesh axis) on ``placement``. Checks every tensor first
        (its shape must fit the layout) and changes nothing on error.

        Under nn.Graph this pins each parameter's layout: the planner keeps
        it (a variable pinned "(S(0))" is sharded by rows, its optimizer
        state with it) instead of choosing one. Eagerly, ops refuse global
        tensors: call the module inside an nn.Graph."""
        from oneflow_lite import _global

        if not isinstance(placement, _global.placement):
            raise TypeError(f"{type(self).__name__}.to_global: placement must be a "
                            f"flow.placement, got {type(placement).__name__}")
        nd = _global.as_nd_sbp(sbp)
        tensors = list(self.named_parameters()) + list(self.named_buffers())
        for name, t in tensors:
            _global.check_fits(t.shape, placement, nd,
                               f"{type(self).__name__}.to_global: '{name}' of shape "
                               f"{list(t.shape)}")
        for _, t in tensors:
            t._placement, t._sbp = placement, nd
        return self

    def cuda(self, device: Optional[int] = None) -> "Module":
        """``to("cuda")``, or ``to(f"cuda:{device}")``."""
        return self.to("cuda" if device is None else f"cuda:{int(device)}")

    def cpu(self) -> "Module":
        """``to("cpu")``."""
        return self.to("cpu")

    def float(self) -> "Module":
        return self.to(dtypes.float32)

    def double(self) -> "Module":
        return self.to(dtypes.float64)

    # ---- state -------------------------------------------------------------------
    def state_dict(self) -> "OrderedDict[str, Tensor]":
        """Parameters then persistent buffers, by dotted path; the tensors are
        detached views of the module's own values."""
        out = OrderedDict()
        for name, p in self.named_parameters():
            out[name] = p.detach()
        for name, b in self.named_buffers(persistent_only=True):
            out[name] = b.detach()
        return out

    def load_state_dict(self, state_dict: Dict, strict: bool = True) -> Tuple[list, list]:
        """Copies values in (numpy arrays or Tensors). Checks everything first
        and changes nothing on error: missing or unexpected keys (strict),
        shape mismatches. A meta parameter becomes a real one. Returns
        (missing keys, unexpected keys)."""
        own = OrderedDict(self.named_parameters())
        own.update(self.named_buffers(persistent_only=True))
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        if strict and (missing or unexpected):
            raise KeyError(f"load_state_dict into {type(self).__name__}: missing keys "
                           f"{missing}, unexpected keys {unexpected}")
        values = {}
        for key, target in own.items():
            if key not in state_dict:
                continue
            value = state_dict[key]
            array = value._array() if isinstance(value, Tensor) else np.asarray(value)
            if tuple(array.shape) != tuple(target.shape):
                raise ValueError(f"load_state_dict into {type(self).__name__}: '{key}' has "
                                 f"shape {list(array.shape)} in the state dict but "
                                 f"{list(target.shape)} in the model")
            values[key] = np.array(array, dtype=dtypes.numpy_of(target.dtype), copy=True)
        for key, array in values.items():
            target = own[key]
            if _device.is_device_value(target._value):
                target._value = _device.like_value(array, target._value)
            elif target._value is not None:
                np.copyto(target._value, array)
            else:
                target._value, target._device = array, "cpu"
        return missing, unexpected
