"""Device names in ``Tensor.to`` and ``Module.to``: "cpu", "cpu:N", "cuda", "cuda:N".

Python tensors live in host memory. Moving one to "cpu" is a copy; a CUDA
device is checked by the C++ core first, so the error names the device and
the reason ("cuda:0: no CUDA device", "cuda:0: this build has no cuda
backend"); on a machine that has one, CUDA tensors are not reachable from
Python yet (NotImplementedError naming the device): CUDA runs through plans
placed on ``flow.placement("cuda", ...)``.
"""
from __future__ import annotations


def is_device_name(target) -> bool:
    """Whether ``target`` names a device rather than a dtype."""
    return isinstance(target, str) and target.split(":", 1)[0] in ("cpu", "cuda")


def require_host(target: str) -> None:
    """Returns when ``target`` is a CPU device; raises naming it otherwise."""
    from oneflow_lite import _C  # the extension loads after this module

    name = target if ":" in target else target + ":0"
    _C.check_device(name)  # ValueError (malformed), NotImplementedError (no backend or device)
    if not name.startswith("cpu:"):
        raise NotImplementedError(
            f"{name}: tensors on CUDA devices are not available from Python yet "
            f"({_C.cuda_device_count()} CUDA devices visible)")


def cuda_device_count() -> int:
    """CUDA devices this process sees (0 in a build without the CUDA backend)."""
    from oneflow_lite import _C

    return _C.cuda_device_count()
