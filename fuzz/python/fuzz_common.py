"""Shared parts of the atheris targets (fuzz/README.md).

A target module defines ``TestOneInput(data: bytes)``, which feeds the bytes
to one of the package's readers the way a user's load does and lets only an
*expected* error through: a ValueError, TypeError or OSError (any subclass)
with a non-empty message, the exceptions the house rules give bad files.
Anything else (KeyError, AttributeError, IndexError, RuntimeError, an empty
message, a crash) propagates, and atheris reports it with the input.

The target modules import atheris only in ``main`` (atheris instruments
oneflow_lite's Python modules there), so tests/python/test_fuzz_regressions.py
replays the committed inputs without it.
"""
from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from typing import Callable, Iterable

EXPECTED = (ValueError, TypeError, OSError)
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


@contextlib.contextmanager
def expected_errors(what: str):
    """Swallows an expected error with a message; re-raises anything else."""
    try:
        yield
    except EXPECTED as e:
        if not str(e).strip():
            raise AssertionError(f"{what}: {type(e).__name__} without a message") from e


def scratch_dir() -> str:
    """One private directory per process for the files a target writes."""
    global _SCRATCH
    if _SCRATCH is None:
        _SCRATCH = tempfile.mkdtemp(prefix="ofl-fuzz-")
    return _SCRATCH


_SCRATCH = None


def write(path: str, data: bytes) -> str:
    with open(path, "wb") as f:
        f.write(data)
    return path


def main(test_one_input: Callable[[bytes], None], modules: Iterable[str]) -> None:
    """Runs libFuzzer through atheris; ``modules`` are imported instrumented."""
    import importlib

    import atheris

    with atheris.instrument_imports(include=["oneflow_lite"]):
        for name in modules:
            importlib.import_module(name)
    # The target's own module (its input decoding) and json's pure-Python
    # parts count as coverage too.
    atheris.instrument_func(test_one_input)
    for module in (sys.modules["__main__"], sys.modules["json.decoder"]):
        for value in vars(module).values():
            if callable(value) and getattr(value, "__module__", None) == module.__name__ \
                    and hasattr(value, "__code__"):
                atheris.instrument_func(value)
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()
