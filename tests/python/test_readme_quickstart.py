"""The README's quick start for one's own script runs as printed: the
`.venv/bin/python` lines of its bash block and the complete `train.py` of
the launcher section (the ```python train.py block), taken from README.md
so that they cannot drift; the launcher line runs train.py on 2 processes.

`.venv/bin/python` is the repository's own venv where it imports this tree
(CI: scripts/test.sh sets it up); in a checkout that shares another venv
(OFL_VENV) it is this interpreter with PYTHONPATH=python. Either way the
command lines are the README's, run by bash in a folder holding train.py.
Also: the setup step's .pth file makes a fresh venv find the package."""
from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
README = REPO / "README.md"
TIMEOUT_S = 240


def _quickstart_lines():
    text = README.read_text()
    start = text.index("## Quick start")
    end = text.index("\n## ", start + 1)
    blocks = re.findall(r"```bash\n(.*?)```", text[start:end], flags=re.S)
    lines = [line for b in blocks for line in b.splitlines()
             if line.startswith(".venv/bin/python")]
    assert len(lines) >= 3, "the quick start lost its own-script lines"
    return lines


def _train_py():
    found = re.findall(r"```python train\.py\n(.*?)```", README.read_text(), flags=re.S)
    assert len(found) == 1, "README must print exactly one train.py"
    return found[0]


def _finds_this_tree(python) -> bool:
    if not os.access(python, os.X_OK):
        return False
    done = subprocess.run([str(python), "-c", "import importlib.util as u; "
                           "print(u.find_spec('oneflow_lite').origin)"],
                          capture_output=True, text=True, timeout=60, env=_clean_env())
    return done.returncode == 0 and done.stdout.strip() == str(
        REPO / "python" / "oneflow_lite" / "__init__.py")


def _clean_env():
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE",
                        "GROUP_RANK", "MASTER_ADDR", "MASTER_PORT", "OFL_JOB_ID")
           and not k.startswith(("SLURM_", "OMPI_"))}
    return env


def _venv_python(folder: pathlib.Path) -> dict:
    """Makes folder/.venv/bin/python run the repository's venv (or this
    interpreter with PYTHONPATH=python); returns the environment to run in."""
    own = REPO / ".venv" / "bin" / "python"
    env = _clean_env()
    if _finds_this_tree(own):
        target = own
    else:
        target = pathlib.Path(sys.executable)
        env["PYTHONPATH"] = str(REPO / "python")
    wrapper = folder / ".venv" / "bin" / "python"
    wrapper.parent.mkdir(parents=True)
    wrapper.write_text(f'#!/bin/sh\nexec "{target}" "$@"\n')
    wrapper.chmod(0o755)
    return env


def test_quickstart_lines_and_train_py_run_as_printed(tmp_path):
    (tmp_path / "train.py").write_text(_train_py())
    env = _venv_python(tmp_path)
    outputs = []
    for line in _quickstart_lines():
        done = subprocess.run(["bash", "-c", line], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=TIMEOUT_S)
        assert done.returncode == 0, f"{line}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
        outputs.append((line, done.stdout))
    launched = [out for line, out in outputs if "distributed.launch" in line]
    assert len(launched) == 1 and "--nproc-per-node 2" in [
        line for line, _ in outputs if "distributed.launch" in line][0]
    losses = [float(m) for m in re.findall(r"^step \d+ loss ([0-9.]+)$", launched[0], re.M)]
    assert len(losses) >= 2, launched[0]  # rank 0 alone prints
    assert losses[-1] < 0.5 * losses[0], losses  # it learns
    # The one-process run and the 2-process run agree on the first loss (the
    # same model and batch; 2 processes split it).
    single = [out for line, out in outputs if line.startswith(".venv/bin/python train.py")]
    first = float(re.search(r"^step 0 loss ([0-9.]+)$", single[0], re.M).group(1))
    assert first == pytest.approx(losses[0], rel=1e-5, abs=1e-6)


def test_setup_link_makes_a_fresh_venv_find_the_package(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=120)
    python = venv / "bin" / "python"
    assert not _finds_this_tree(python)
    env = dict(_clean_env(), OFL_VENV=str(venv), OFL_LINK_VENV="1")
    subprocess.run(["bash", "-c", "source scripts/lib/setup.sh && ofl_link_package"], cwd=REPO,
                   env=env, check=True, timeout=60)
    assert _finds_this_tree(python)
    # Not the project's own venv and no OFL_LINK_VENV: left alone.
    other = tmp_path / "other"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(other)], check=True,
                   timeout=120)
    env = dict(_clean_env(), OFL_VENV=str(other))
    subprocess.run(["bash", "-c", "source scripts/lib/setup.sh && ofl_link_package"], cwd=REPO,
                   env=env, check=True, timeout=60)
    assert not _finds_this_tree(other / "bin" / "python")
