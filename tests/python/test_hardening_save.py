"""Nothing of the user's is lost on save (oneflow_lite._save_paths):
checkpoint.save, nn.Graph.save and flow.save refuse a directory with other
files, a regular file, a symlink, "" and "/", leaving them byte for byte;
user folders named like our temporary folders survive; an earlier
checkpoint of ours is replaced atomically, which a writer killed at random
moments (SIGKILL) shows: the target always loads, as the old or the new."""
from __future__ import annotations

import os

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite import _save_paths, checkpoint
from oneflow_lite.checkpoint import CheckpointError
from killed_writer import kill_at_random_moment

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_DIR = os.path.join(os.path.dirname(os.path.dirname(HERE)), "python")


def snapshot(root):
    """Every file (bytes) and folder under ``root``, by relative path."""
    out = {}
    for d, dirs, files in os.walk(root):
        for name in dirs:
            out[os.path.relpath(os.path.join(d, name), root) + "/"] = None
        for name in files:
            path = os.path.join(d, name)
            out[os.path.relpath(path, root)] = open(path, "rb").read()
    return out


def user_folder(path):
    os.makedirs(os.path.join(path, "figures"))
    with open(os.path.join(path, "thesis.tex"), "wb") as f:
        f.write(b"\\chapter{Four years of work}\n")
    with open(os.path.join(path, "figures", "plot.png"), "wb") as f:
        f.write(bytes(range(256)))


def tensors(value=1.0):
    return {"w": np.full((2, 3), value, np.float32), "w/m": np.zeros((2, 3), np.float32)}


class Tiny(flow.nn.Graph):
    def __init__(self):
        super().__init__()
        self.model = flow.nn.Linear(3, 2)

    def build(self, x):
        return self.model(x)


def compiled_graph():
    g = Tiny()
    g(np.ones((2, 3), np.float32))
    return g


# ---- checkpoint.save and nn.Graph.save --------------------------------------------

@pytest.mark.parametrize("writer", ["checkpoint", "graph"])
def test_a_folder_with_other_files_is_refused_and_kept(tmp_path, writer):
    target = str(tmp_path / "thesis")
    user_folder(target)
    before = snapshot(tmp_path)
    save = (lambda p: checkpoint.save(p, tensors())) if writer == "checkpoint" else \
        compiled_graph().save
    with pytest.raises(CheckpointError, match=rf"'{target}' is a directory that is not a "
                                              rf"checkpoint of ours .*figures, thesis.tex"):
        save(target)
    assert snapshot(tmp_path) == before


def test_our_checkpoint_with_a_user_file_added_is_refused(tmp_path):
    target = str(tmp_path / "ck")
    checkpoint.save(target, tensors())
    with open(os.path.join(target, "notes.txt"), "w") as f:
        f.write("my notes")
    before = snapshot(tmp_path)
    with pytest.raises(CheckpointError, match="holds notes.txt"):
        checkpoint.save(target, tensors(2.0))
    assert snapshot(tmp_path) == before
    os.remove(os.path.join(target, "notes.txt"))
    with open(os.path.join(target, "tensors", "mine.npy"), "w") as f:
        f.write("my array")
    before = snapshot(tmp_path)
    with pytest.raises(CheckpointError, match=r"tensors/ holds files that are not ours "
                                              r"\(mine.npy\)"):
        checkpoint.save(target, tensors(2.0))
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("writer", ["checkpoint", "graph"])
def test_a_regular_file_at_the_target_is_refused_and_kept(tmp_path, writer):
    target = tmp_path / "weights"
    target.write_bytes(b"not a checkpoint")
    save = (lambda p: checkpoint.save(p, tensors())) if writer == "checkpoint" else \
        compiled_graph().save
    with pytest.raises(CheckpointError, match=rf"'{target}' is an existing file"):
        save(str(target))
    assert snapshot(tmp_path) == {"weights": b"not a checkpoint"}  # no NAME.old-PID either


def test_a_symlink_at_the_target_is_refused(tmp_path):
    checkpoint.save(str(tmp_path / "real"), tensors())
    os.symlink(tmp_path / "real", tmp_path / "link")
    before = snapshot(tmp_path)
    with pytest.raises(CheckpointError, match="is a symbolic link"):
        checkpoint.save(str(tmp_path / "link"), tensors(2.0))
    assert snapshot(tmp_path) == before and os.path.islink(tmp_path / "link")


@pytest.mark.parametrize("target", ["", "   ", "/", "//", "."])
@pytest.mark.parametrize("writer", ["checkpoint", "graph"])
def test_root_empty_and_working_directory_targets_are_refused(tmp_path, monkeypatch, target,
                                                               writer):
    user_folder(str(tmp_path / "work"))
    monkeypatch.chdir(tmp_path / "work")
    before = snapshot(tmp_path)
    graph = compiled_graph() if writer == "graph" else None
    save = graph.save if graph else (lambda p: checkpoint.save(p, tensors()))
    match = {"": "the path is empty", "   ": "the path is empty", "/": "filesystem root",
             "//": "filesystem root", ".": "not a checkpoint of ours"}[target]
    with pytest.raises(ValueError, match=match):
        save(target)
    assert snapshot(tmp_path) == before


def test_user_folders_named_like_our_temporary_folders_survive(tmp_path):
    target = str(tmp_path / "ck")
    pid = os.getpid()
    for name in (f"ck.tmp-{pid}", f"ck.old-{pid}", f"ck.tmp-{pid}-x", "ck.old-1"):
        user_folder(str(tmp_path / name))
    before = snapshot(tmp_path)
    checkpoint.save(target, tensors(1.0))   # new
    checkpoint.save(target, tensors(2.0))   # replaces our own
    after = snapshot(tmp_path)
    assert {k: v for k, v in after.items() if not k.startswith("ck/")} == before
    assert checkpoint.load(target).tensors["w"][0, 0] == 2.0


def test_an_earlier_checkpoint_an_unmarked_one_and_an_empty_folder_are_replaced(tmp_path):
    target = str(tmp_path / "ck")
    os.makedirs(target)
    checkpoint.save(target, tensors(1.0))           # an empty folder: nothing is lost
    assert _save_paths.is_ours(target, checkpoint.ENTRIES)
    checkpoint.save(target, tensors(2.0))           # our own
    os.remove(os.path.join(target, _save_paths.MARKER))  # as written before markers
    checkpoint.save(target, tensors(3.0))
    assert checkpoint.load(target).tensors["w"][0, 0] == 3.0
    assert sorted(os.listdir(tmp_path)) == ["ck"]


def test_replacing_without_an_atomic_exchange_still_works(tmp_path, monkeypatch):
    target = str(tmp_path / "ck")
    checkpoint.save(target, tensors(1.0))
    monkeypatch.setattr(_save_paths, "_exchange", lambda a, b: False)
    checkpoint.save(target, tensors(2.0))
    assert checkpoint.load(target).tensors["w"][0, 0] == 2.0
    assert sorted(os.listdir(tmp_path)) == ["ck"]


@pytest.mark.parametrize("step", ["tensor", "index", "exchange"])
def test_a_failure_at_each_step_keeps_the_old_checkpoint(tmp_path, monkeypatch, step):
    target = str(tmp_path / "ck")
    checkpoint.save(target, tensors(1.0))
    boom = OSError(f"simulated failure at {step}")
    if step == "tensor":
        monkeypatch.setattr(np, "save", lambda *a, **k: (_ for _ in ()).throw(boom))
    elif step == "index":
        real = checkpoint._write_file
        monkeypatch.setattr(checkpoint, "_write_file", lambda p, w: (_ for _ in ()).throw(
            boom) if p.endswith("index.json") else real(p, w))
    else:
        monkeypatch.setattr(_save_paths, "_exchange", lambda a, b: (_ for _ in ()).throw(boom))
    with pytest.raises(OSError, match="simulated"):
        checkpoint.save(target, tensors(2.0))
    monkeypatch.undo()
    assert checkpoint.load(target).tensors["w"][0, 0] == 1.0
    assert sorted(os.listdir(tmp_path)) == ["ck"]  # our temporary folder is gone


WRITER = """
import sys, numpy as np
from oneflow_lite import checkpoint
path = sys.argv[1]
big = {f"t{i}": np.full(20000, 0.0, np.float32) for i in range(8)}
value = 1.0
checkpoint.save(path, {k: v + value for k, v in big.items()})
print("ready", flush=True)
while True:
    value += 1.0
    checkpoint.save(path, {k: v + value for k, v in big.items()})
"""


def test_a_writer_killed_at_random_moments_leaves_a_loadable_checkpoint(tmp_path):
    target = str(tmp_path / "ck")
    rng = np.random.default_rng(0)
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR)
    for _ in range(4):
        kill_at_random_moment(WRITER, target, env, rng)
        got = checkpoint.load(target).tensors
        values = {float(a[0]) for a in got.values()}
        assert len(values) == 1 and all((a == a[0]).all() for a in got.values())
    checkpoint.save(target, tensors())  # removes the dead writers' marked temporaries
    for name in os.listdir(tmp_path):  # at most one killed before marking its folder
        left = os.listdir(tmp_path / name) if name != "ck" else []
        assert name == "ck" or (name.startswith("ck.tmp-") and left in ([], [
            _save_paths.MARKER]) and not _save_paths.has_marker(str(tmp_path / name)))


# ---- flow.save ----------------------------------------------------------------------

def test_flow_save_replaces_its_own_file_only(tmp_path):
    path = str(tmp_path / "model.npz")
    flow.save({"w": np.ones(3, np.float32), "file": np.zeros(1)}, path)  # "file": savez's arg
    flow.save({"w": np.full(3, 2.0, np.float32)}, path)
    assert list(flow.load(path)) == ["w"] and flow.load(path)["w"].numpy()[0] == 2.0
    other = tmp_path / "notes.txt"
    other.write_bytes(b"my notes")
    user_folder(str(tmp_path / "dir"))
    os.symlink(path, tmp_path / "link.npz")
    before = snapshot(tmp_path)
    for target, match in ((str(other), "an existing file that is not a flow.save archive"),
                          (str(tmp_path / "dir"), "is a directory"),
                          (str(tmp_path / "link.npz"), "is a symbolic link"),
                          ("", "the path is empty"), ("/", "filesystem root")):
        with pytest.raises(ValueError, match=match):
            flow.save({"w": np.ones(3)}, target)
    assert snapshot(tmp_path) == before


def test_flow_save_keeps_user_files_named_like_its_temporaries(tmp_path):
    path = str(tmp_path / "model.npz")
    pid = os.getpid()
    for name in (f"model.npz.tmp{pid}", f"model.npz.tmp-{pid}"):
        (tmp_path / name).write_bytes(b"user data")
    flow.save({"w": np.ones(3)}, path)
    assert (tmp_path / f"model.npz.tmp{pid}").read_bytes() == b"user data"
    assert (tmp_path / f"model.npz.tmp-{pid}").read_bytes() == b"user data"
    assert sorted(os.listdir(tmp_path)) == sorted(["model.npz", f"model.npz.tmp{pid}",
                                                   f"model.npz.tmp-{pid}"])


def test_the_train_report_writer_keeps_user_files_named_like_its_temporary(tmp_path):
    from oneflow_lite import train_report

    path = str(tmp_path / "r.json")
    (tmp_path / f"r.json.tmp-{os.getpid()}").write_bytes(b"user data")
    train_report.write_json(path, {"loss": np.float32(1.5)})
    assert (tmp_path / f"r.json.tmp-{os.getpid()}").read_bytes() == b"user data"
    assert sorted(os.listdir(tmp_path)) == ["r.json", f"r.json.tmp-{os.getpid()}"]
