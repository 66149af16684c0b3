"""oneflow_lite: a compact distributed deep-learning training framework.

The C++ core is ``oneflow_lite._C``; ``oneflow_lite.graph_builder`` builds
logical graphs over it with one generated wrapper per registered op.

``OFL_EXTENSION_DIR``, when set, names a folder searched first for ``_C``
(a build tree other than the source tree's, e.g. a sanitizer build).
"""
import os as _os

# oneDNN's OpenMP threads spin while idle by default; on a shared or
# oversubscribed machine (several virtual devices per core) that costs up to
# 25x. Sleep instead, unless the user chose otherwise. Must precede the
# extension's import: libgomp reads it when it loads.
_os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

_ext_dir = _os.environ.get("OFL_EXTENSION_DIR")
if _ext_dir:
    __path__.insert(0, _ext_dir)  # noqa: F821 (package __path__)

from oneflow_lite import _C  # noqa: E402,F401

__all__ = ["_C"]
