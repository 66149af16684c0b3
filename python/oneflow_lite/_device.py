"""Device names in ``Tensor.to`` and ``Module.to`` ("cpu", "cpu:N", "cuda",
"cuda:N") and the values of tensors on them.

A tensor's value is a numpy array in host memory, or, on a CUDA device, a
``_C.DeviceTensor`` (the buffer in the device's memory; ``numpy()`` copies
it back). Eager ops take either kind and give results of the kind of their
inputs (``_C.EagerExecutor``); the executor runs an op on the device its
inputs are on and refuses inputs on two devices, naming the op and both.
A device name is checked by the C++ core first, so an unusable one raises
naming the device and the reason: ValueError when malformed ("device
'cuda:x': index 'x' is not an integer ..."), NotImplementedError when this
process has no such device ("cuda:0: no CUDA device", "cuda:0: this build
has no cuda backend").

The helpers below are the one place that knows the two kinds of value;
single-threaded, as the eager frontend is.
"""
from __future__ import annotations

import numpy as np


def is_device_name(target) -> bool:
    """Whether ``target`` names a device rather than a dtype."""
    return isinstance(target, str) and target.split(":", 1)[0] in ("cpu", "cuda")


def canonical(target: str) -> str:
    """``target`` with its index ("cuda" -> "cuda:0") once this process can
    use it; raises naming it otherwise (see the module docstring)."""
    from oneflow_lite import _C  # the extension loads after this module

    name = target if ":" in target else target + ":0"
    _C.check_device(name)
    return name


def cuda_device_count() -> int:
    """CUDA devices this process sees (0 in a build without the CUDA backend)."""
    from oneflow_lite import _C

    return _C.cuda_device_count()


_device_tensor_type = None  # _C.DeviceTensor, looked up on first use


def is_device_value(value) -> bool:
    """Whether ``value`` is a ``_C.DeviceTensor`` (not a numpy array, None or anything else)."""
    global _device_tensor_type
    if value is None or isinstance(value, np.ndarray):
        return False
    if _device_tensor_type is None:
        from oneflow_lite import _C

        _device_tensor_type = _C.DeviceTensor
    return isinstance(value, _device_tensor_type)


def host_value(value):
    """``value`` as a numpy array: itself, or a copy of a device value."""
    return value.numpy() if is_device_value(value) else value


def move_value(value, device: str):
    """``value`` on ``device`` (a checked name): a numpy array for "cpu:N"
    (itself when it is one already), else a DeviceTensor (a copy)."""
    if device.startswith("cpu"):
        return host_value(value)
    from oneflow_lite._dispatch import executor

    return executor.to_device(value, device)


def like_value(array: np.ndarray, like):
    """The host ``array`` where ``like`` lives: itself beside a numpy array,
    a copy on ``like``'s device beside a device value."""
    if not is_device_value(like):
        return array
    from oneflow_lite._dispatch import executor

    return executor.to_device(np.asarray(array, order="C"), like.device)


def copy_value(value):
    """A copy of ``value`` of the same kind, on the same device."""
    if is_device_value(value):
        from oneflow_lite._dispatch import executor

        return executor.to_device(value, value.device)
    return np.array(value, copy=True)


def add_values(a, b):
    """a + b for two values of one kind (gradient accumulation)."""
    if not is_device_value(a) and not is_device_value(b):
        return a + b
    from oneflow_lite._dispatch import executor

    return executor.run("add", [a, b], {})[0]
