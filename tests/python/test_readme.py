"""The README's Python examples run as written (they are the first thing a
user copies). Each ```python block runs in one namespace, in order, with
its prints captured; the first (nn.Graph on 4 virtual devices) must print
falling losses."""
from __future__ import annotations

import contextlib
import io
import pathlib
import re

import numpy as np

README = pathlib.Path(__file__).resolve().parents[2] / "README.md"


def _blocks():
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def test_readme_python_blocks_run_and_the_first_one_learns():
    blocks = _blocks()
    assert len(blocks) >= 2, "README lost its Python examples"
    namespace = {}
    outputs = []
    for block in blocks:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(block, str(README), "exec"), namespace)  # noqa: S102
        outputs.append(out.getvalue())
    first = outputs[0].splitlines()
    losses = [float(line.split()[1]) for line in first[:3]]
    assert losses[2] < losses[0], first[:3]
    assert np.isfinite(losses).all()
    assert "matmul" in outputs[0]  # the plan report lists the matmuls' signatures
