"""The command line of the main job (python -m oneflow_lite.train) as a user
meets it, in a subprocess: every mistake found after argparse's own parsing
(files, cluster, numbers, the --report and --plot paths, a searcher that
does not fit the model) is a one-line usage error with exit status 2 and no
traceback, found before any training step; --help shows every default and
names no path of this machine."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from oneflow_lite import _C, train_args

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
PREFIX = "python -m oneflow_lite.train: error: "
TINY = ["--layers", "1", "--hidden", "8", "--heads", "2", "--seq", "4", "--vocab", "5",
        "--steps", "1", "--cluster", "h100_8gpu"]


def run(argv, cwd):
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"))
    return subprocess.run([sys.executable, "-m", "oneflow_lite.train", *argv], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.fixture
def files(tmp_path):
    (tmp_path / "text.txt").write_text("to be or not to be, that is the question\n" * 4)
    (tmp_path / "weights.bin").write_bytes(b"ab" + bytes(range(128, 256)))
    (tmp_path / "afile").write_text("x")
    (tmp_path / "out").mkdir()
    return tmp_path


CASES = [
    (["--data", "missing.txt"], "--data missing.txt: no such file"),
    (["--data", "out"], "--data out: not a regular file"),
    (["--data", "weights.bin", *TINY], "--data weights.bin: not UTF-8 text (byte 0x80 at "
                                       "offset 2)"),
    (["--cluster", "nosuch"], "unknown --cluster 'nosuch': neither 'local', 'local_kernels', a preset"),
    (["--cluster", "out"], "--cluster: cluster file out: is a directory"),
    (["--micro-batches", "3", "--batch", "8"], "--micro-batches 3 does not divide --batch 8"),
    (["--lr", "nan"], "argument --lr: 'nan' is not a number"),
    (["--lr", "inf"], "argument --lr: 'inf' is not finite"),
    (["--lr", "0"], "argument --lr: 0 must be positive"),
    (["--weight-decay", "-0.5"], "argument --weight-decay: -0.5 must be zero or positive"),
    (["--clip", "x"], "argument --clip: 'x' is not a number"),
    (["--threads", "-5"], "argument --threads: -5 is below 0"),
    (["--steps", "0"], "argument --steps: 0 is not positive"),
    (["--report", "out"], "--report out: is a directory; name a file in it"),
    (["--plot", "out"], "--plot out: is a directory; name a file in it"),
    (["--report", "afile/r.json"], "--report afile/r.json: {tmp}/afile is a file, not a "
                                   "folder"),
    (["--plot", "afile/deeper/p.png"], "--plot afile/deeper/p.png: {tmp}/afile is a file, "
                                       "not a folder"),
    (["--report", "out/r.json", "--plot", "out/r.json"], "--report and --plot are the same "
                                                         "file 'out/r.json'"),
    (["--hidden", "10", "--heads", "3"], "GPTConfig: n_embd=10 is not a multiple of n_head=3"),
    (["--model", "mlp", "--searcher", "megatron_sources", *TINY[-4:]],
     "planning --model mlp with --searcher megatron_sources: expert preset megatron_sources: "
     "no Transformer block"),
]


@pytest.mark.parametrize("argv, message", CASES, ids=[" ".join(c[0][:2]) for c in CASES])
def test_a_mistake_is_a_one_line_usage_error(files, argv, message):
    r = run(argv, files)
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr
    last = r.stderr.rstrip("\n").splitlines()[-1]
    assert last.startswith(PREFIX) and message.format(tmp=files) in last, r.stderr
    progress = ("[plan] ", "[calibrate] ")  # oneflow_lite._progress: what ran before the error
    assert "".join(line for line in r.stderr.splitlines(keepends=True)
                   if not line.startswith(progress)).startswith(
                       "usage: python -m oneflow_lite.train")
    assert "step 1" not in r.stdout and "traced" not in r.stdout  # before any training


def test_help_shows_every_default_and_no_local_path(tmp_path):
    parser = train_args.build_parser()
    formatter = parser._get_formatter()
    for action in parser._actions:
        if action.dest not in ("help", "list_searchers"):  # both print and exit
            assert "default" in formatter._get_help_string(action), action.dest
    r = run(["--help"], tmp_path)
    assert r.returncode == 0 and "Traceback" not in r.stderr
    for option in ("--lr", "--threads", "--report", "--batch", "--cluster"):
        assert option in r.stdout
    assert "(default: 0.01)" in r.stdout and "(default: autoddl)" in r.stdout
    for local in ("/work", REPO, os.path.expanduser("~"), str(tmp_path)):
        assert local not in r.stdout, local
    assert "--list-searchers" in r.stdout and "megatron_sources" in r.stdout


def test_list_searchers_shows_the_registry(tmp_path):
    r = run(["--list-searchers"], tmp_path)
    assert r.returncode == 0 and r.stderr == ""
    lines = r.stdout.splitlines()
    assert [line.split()[0] for line in lines] == list(_C.searchers())
    assert lines[0].startswith("autoddl ") and len(lines[0].split()) > 3  # name, description
