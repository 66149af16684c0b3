"""``flow.optim``: SGD (momentum, weight decay), Adam and AdamW for eager
parameters.

``step()`` runs the registered C++ update ops (``sgd_update``,
``adam_update``) through the dispatcher, so eager and graph training share
one update rule. The state is named as graph/optimizer_pass.cpp names its
variables: "<param>/momentum" (SGD), "<param>/m", "<param>/v", "<param>/step"
(Adam, AdamW), where <param> is the parameter's state_dict key when the
optimizer was given ``model.named_parameters()`` (else its position "0",
"1", ...); so an optimizer state_dict maps 1:1 onto a graph checkpoint.
Hyper-parameters live in ``param_groups`` (PyTorch's layout; schedulers set
"lr"). An nn.Graph that trains with an optimizer shares its state: reading
``state`` after graph steps first fetches the graph's (nn/graph_share.py),
so eager steps continue where the graph left off. Not thread-safe.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Dict, Iterable, List

import numpy as np

from oneflow_lite import _autograd, _device, _dispatch
from oneflow_lite import _dtype as dtypes
from oneflow_lite._dispatch import apply
from oneflow_lite._tensor import Tensor


def _in_place_ok(a) -> bool:
    if _device.is_device_value(a):  # a device buffer of its own: the kernel writes it
        return True
    f = a.flags
    return f.c_contiguous and f.aligned and f.writeable and a.dtype.isnative


class Optimizer:
    """Base class: ``param_groups``, ``zero_grad``, ``state_dict``."""

    _STATE: tuple = ()         # state suffixes, e.g. ("m", "v", "step")
    _HYPER: Dict[str, float] = {}

    def __init__(self, params, defaults: Dict[str, float]) -> None:
        for key, value in defaults.items():
            if key in ("lr", "weight_decay", "momentum", "eps") and value < 0:
                raise ValueError(f"{type(self).__name__}: {key}={value} is negative")
        for key in ("beta1", "beta2"):
            if key in defaults and not 0.0 <= defaults[key] < 1.0:
                raise ValueError(f"{type(self).__name__}: {key}={defaults[key]} is outside "
                                 f"[0, 1)")
        params = list(params)
        if not params:
            raise ValueError(f"{type(self).__name__}: got an empty parameter list")
        groups = params if isinstance(params[0], dict) else [{"params": params}]
        self.defaults = dict(defaults)
        self.param_groups: List[dict] = []
        self._names: Dict[int, str] = {}
        self._state: Dict[int, Dict[str, np.ndarray]] = {}
        for group in groups:
            self.add_param_group(group)

    def add_param_group(self, param_group: dict) -> None:
        """Adds a group ({"params": [...], hyper-parameters}; the ones left
        out take the optimizer's defaults), as PyTorch: e.g. layers unfrozen
        during fine-tuning. Parameters are named as in the constructor
        (a (name, tensor) pair, else the next position); a parameter already
        held raises, and nothing is added."""
        if not isinstance(param_group, dict) or "params" not in param_group:
            raise TypeError(f"{type(self).__name__}.add_param_group: expects a dict with "
                            f"'params', got {type(param_group).__name__}")
        entries = param_group["params"]
        entries = [entries] if isinstance(entries, Tensor) else list(entries)
        position = len(self._names)
        named, seen = [], set()
        for entry in entries:
            name, p = entry if isinstance(entry, tuple) else (str(position), entry)
            if not isinstance(p, Tensor) or not p.dtype.is_floating_point:
                raise TypeError(f"{type(self).__name__}: parameter '{name}' is not a "
                                f"floating flow.Tensor")
            if id(p) in self._names or id(p) in seen:
                raise ValueError(f"{type(self).__name__}: parameter '{name}' appears twice")
            seen.add(id(p))
            named.append((name, p))
            position += 1
        full = dict(self.defaults)
        full.update({k: v for k, v in param_group.items() if k != "params"})
        self._check_group(full)
        for name, p in named:
            self._names[id(p)] = name
        full["params"] = [p for _, p in named]
        self.param_groups.append(full)

    def _check_group(self, group: dict) -> None:
        """Raises on a group's bad hyper-parameter (subclasses add rules)."""

    @property
    def state(self) -> Dict[int, Dict[str, np.ndarray]]:
        """id(param) -> {part: array}; the newest, also after graph steps."""
        link = self.__dict__.get("_graph_link")
        if link is not None:  # an nn.Graph shares this state (nn/graph_share.py)
            link.touch()
        return self._state

    def zero_grad(self, set_to_none: bool = True) -> None:
        for group in self.param_groups:
            for p in group["params"]:
                if set_to_none or p.grad is None:
                    p.grad = None
                else:
                    p.grad._value = _device.like_value(
                        np.zeros(p.grad.shape, dtypes.numpy_of(p.grad.dtype)), p.grad._value)

    def _state_of(self, p: Tensor) -> Dict[str, np.ndarray]:
        s = self.state.get(id(p))
        if s is None:
            # On the parameter's device (its first step's: move a model before stepping).
            s = self.state[id(p)] = {k: _device.like_value(self._initial(k, p), p._value)
                                     for k in self._STATE}
        return s

    @staticmethod
    def _initial(key: str, p: Tensor) -> np.ndarray:
        if key == "step":
            return np.zeros((), np.int64)
        return np.zeros(p.shape, dtypes.numpy_of(p.dtype))

    def step(self) -> None:
        with _autograd.no_grad():
            for group in self.param_groups:
                attrs = {k: float(group[k]) for k in self._HYPER}
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    if p.grad.shape != p.shape:
                        raise ValueError(f"{type(self).__name__}: grad of '{self._names[id(p)]}'"
                                         f" has shape {list(p.grad.shape)} != "
                                         f"{list(p.shape)}")
                    self._update(p, self._state_of(p), attrs, group)

    def _update(self, p: Tensor, state: Dict[str, np.ndarray], attrs: dict,
                group: dict) -> None:
        raise NotImplementedError

    def _run(self, op_type: str, p: Tensor, state: Dict[str, np.ndarray], attrs: dict) -> None:
        """Runs ``op_type`` on (param, grad, *state) and writes back in place:
        the kernel writes the arrays themselves when it can (they are
        writeable and C-contiguous; the update kernels reject no value),
        else the dispatcher's copies are copied back (also under anomaly
        mode, which checks the result before anything is written)."""
        plain = all(t._placement is None and t._value is not None for t in (p, p.grad))
        if plain and not _autograd.is_anomaly_enabled():
            arrays = [p._value, p.grad._value] + [state[k] for k in self._STATE]
            if all(_in_place_ok(a) for a in arrays):
                _dispatch.executor.run_in_place(op_type, arrays, attrs)
                return
        inputs = [p, p.grad] + [Tensor._wrap(state[k]) for k in self._STATE]
        outs = apply(op_type, inputs, attrs)
        outs = outs if isinstance(outs, tuple) else (outs,)
        if _device.is_device_value(p._value):  # fresh device buffers take the old ones' place
            p._value = outs[0]._value
            for k, out in zip(self._STATE, outs[1:]):
                state[k] = out._value
            return
        np.copyto(p._array(), outs[0]._array())
        for k, out in zip(self._STATE, outs[1:]):
            np.copyto(state[k], out._array())

    def state_dict(self) -> "OrderedDict[str, Tensor]":
        """"<param>/<state>" -> Tensor, for every parameter already stepped."""
        out = OrderedDict()
        for group in self.param_groups:
            for p in group["params"]:
                if id(p) in self.state:
                    for k in self._STATE:
                        out[f"{self._names[id(p)]}/{k}"] = Tensor._wrap(
                            _device.copy_value(self.state[id(p)][k]))
        return out

    def load_state_dict(self, state_dict: Dict) -> None:
        """Inverse of ``state_dict``; checks every entry before changing
        anything (unknown names, missing parts, shapes)."""
        by_name = {self._names[id(p)]: p for g in self.param_groups for p in g["params"]}
        staged = {}
        for key, value in state_dict.items():
            name, _, part = key.rpartition("/")
            if name not in by_name or part not in self._STATE:
                raise KeyError(f"{type(self).__name__}.load_state_dict: unexpected key '{key}' "
                               f"(expected '<param>/{{{', '.join(self._STATE)}}}')")
            p = by_name[name]
            array = np.asarray(value.numpy() if isinstance(value, Tensor) else value)
            want = self._initial(part, p)
            if array.shape != want.shape:
                raise ValueError(f"{type(self).__name__}.load_state_dict: '{key}' has shape "
                                 f"{list(array.shape)}, expected {list(want.shape)}")
            staged.setdefault(id(p), {})[part] = array.astype(want.dtype)
        for pid, parts in staged.items():
            if set(parts) != set(self._STATE):
                name = self._names[pid]
                raise KeyError(f"{type(self).__name__}.load_state_dict: '{name}' lacks "
                               f"{sorted(set(self._STATE) - set(parts))}")
        by_id = {id(p): p for p in by_name.values()}
        for pid, parts in staged.items():
            self.state[pid] = {k: _device.like_value(np.array(v, copy=True), by_id[pid]._value)
                               for k, v in parts.items()}


class SGD(Optimizer):
    """PyTorch's SGD: g += wd * p; buf = momentum * buf + g; p -= lr * buf;
    with ``nesterov=True``, p -= lr * (g + momentum * buf).

    Nesterov is composed from registered ops (add, scalar_mul; no kernel of
    its own); eager only (nn.Graph's optimizer pass runs
    plain momentum, so add_optimizer must refuse a nesterov group)."""

    _STATE = ("momentum",)
    _HYPER = {"lr": 0, "momentum": 0, "weight_decay": 0}

    def __init__(self, params, lr: float = 0.01, momentum: float = 0.0,
                 weight_decay: float = 0.0, nesterov: bool = False) -> None:
        super().__init__(params, {"lr": lr, "momentum": momentum, "weight_decay": weight_decay,
                                  "nesterov": bool(nesterov)})

    def _check_group(self, group: dict) -> None:
        for key in ("lr", "momentum", "weight_decay"):
            if group[key] < 0:
                raise ValueError(f"SGD: {key}={group[key]} is negative")
        if group.get("nesterov") and group["momentum"] <= 0:
            raise ValueError(f"SGD: nesterov=True needs a positive momentum, got "
                             f"{group['momentum']}")

    def _update(self, p, state, attrs, group) -> None:
        if group.get("nesterov"):
            self._nesterov(p, state, attrs)
        else:
            self._run("sgd_update", p, state, attrs)

    def _nesterov(self, p, state, attrs) -> None:
        """g = grad + wd * p; buf = m * buf + g; p -= lr * (g + m * buf)."""
        m, wd = attrs["momentum"], attrs["weight_decay"]
        g = p.grad + p * wd if wd else p.grad
        buf = Tensor._wrap(state["momentum"]) * m + g
        p.copy_(p - (g + buf * m) * attrs["lr"])  # under no_grad: p's own buffer
        holder = Tensor._wrap(state["momentum"])
        holder.copy_(buf)
        state["momentum"] = holder._value  # the same array on the host; a new device buffer


class Adam(Optimizer):
    """PyTorch's Adam (L2 weight decay added to the gradient)."""

    _STATE = ("m", "v", "step")
    _HYPER = {"lr": 0, "beta1": 0, "beta2": 0, "eps": 0, "weight_decay": 0}
    _DECOUPLED = False

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0) -> None:
        super().__init__(params, {"lr": lr, "beta1": betas[0], "beta2": betas[1], "eps": eps,
                                  "weight_decay": weight_decay})

    def _update(self, p, state, attrs, group) -> None:
        self._run("adam_update", p, state, dict(attrs, decoupled_weight_decay=self._DECOUPLED))


class AdamW(Adam):
    """PyTorch's AdamW: p *= 1 - lr * wd, then Adam."""

    _DECOUPLED = True

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.01) -> None:
        super().__init__(params, lr, betas, eps, weight_decay)
