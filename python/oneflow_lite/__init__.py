"""oneflow_lite: a compact distributed deep-learning training framework.

The C++ core is ``oneflow_lite._C``; ``oneflow_lite.graph_builder`` builds
logical graphs over it with one generated wrapper per registered op.

``OFL_EXTENSION_DIR``, when set, names a folder searched first for ``_C``
(a build tree other than the source tree's, e.g. a sanitizer build).
"""
import os as _os

_ext_dir = _os.environ.get("OFL_EXTENSION_DIR")
if _ext_dir:
    __path__.insert(0, _ext_dir)  # noqa: F821 (package __path__)

from oneflow_lite import _C  # noqa: E402,F401

__all__ = ["_C"]
