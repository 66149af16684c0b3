"""oneflow_lite: a compact distributed deep-learning training framework.

The C++ core is ``oneflow_lite._C``; ``oneflow_lite.graph_builder`` builds
logical graphs over it with one generated wrapper per registered op.
"""
from oneflow_lite import _C  # noqa: F401

__all__ = ["_C"]
