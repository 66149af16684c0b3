"""Where a save may write: the one rule that keeps our writers from losing the
user's files. Checkpoint writers (``checkpoint.save``, hence ``nn.Graph.save``,
and ``sharded_checkpoint.save``) use it.

The rule: a writer deletes, renames or replaces only

- an earlier checkpoint of ours: a real directory (not a symlink) holding the
  marker file ``MARKER`` and, at its top level, nothing but the entries the
  writer names (so a user's file dropped into it is never lost), or one
  written before markers existed that a writer recognises itself;
- an empty directory (nothing is lost);
- a temporary folder of ours: one that ``make_temp_dir`` created (a fresh
  name from ``tempfile.mkdtemp``, so never a user's folder of the same name)
  and marked.

It refuses everything else with ``SaveTargetError`` (a ``ValueError``) naming
the path: "" and the filesystem root, a regular file, a symlink, a directory
with other files. A new checkpoint is written into a temporary folder beside
the target and published by ``publish``: on Linux an atomic exchange
(``renameat2(RENAME_EXCHANGE)``), so at every moment the target is either
the old checkpoint or the new one; where the exchange is not available, two
renames, and a crash between them leaves the old one under
``<target>.old-<pid>-<random>``. Folders are removed marker last, so a
removal cut short still leaves a marked (ours) folder; marked temporaries
of dead writers are removed by the next save of that target.

Both checkpoint formats (logical: ``index.json`` + ``tensors/NNNNN.npy``;
sharded: ``index.json`` + ``shards/process-NNNNN.bin``) replace each other:
``check_checkpoint_target`` accepts a marked folder holding only the entries
of ``CHECKPOINT_LAYOUT``, each sub-folder holding only files named as ours.

A writer's steps (checkpoint.save; the sharded writer the same way)::

    path = target_path(path, "my writer")               # refuses "", "/"
    replace = check_checkpoint_target(path, what)       # refuses the user's
    tmp = make_temp_dir(path)                           # marked, fresh name
    try: ...write into tmp...; publish(tmp, path, replace)
    except BaseException: remove_ours(tmp); raise

Stateless; thread-compatible (two writers of one target race as two ``mv``
would).

    >>> import os, tempfile
    >>> d = os.path.join(tempfile.mkdtemp(), "ck")
    >>> tmp = make_temp_dir(d)
    >>> is_ours(tmp), os.path.exists(d)
    (True, False)
    >>> publish(tmp, d)
    >>> sorted(os.listdir(d)), is_ours(d)
    (['.oneflow_lite-checkpoint'], True)
"""
from __future__ import annotations

import ctypes
import os
import re
import shutil
from typing import Callable, Iterable, Optional

from oneflow_lite import _umask

MARKER = ".oneflow_lite-checkpoint"
_MARKER_TEXT = b"oneflow_lite checkpoint: a later save may replace this directory\n"
_AT_FDCWD, _RENAME_EXCHANGE = -100, 2
# A checkpoint directory of ours, either format: top-level entry -> the
# pattern of the file names inside it (None: a file).
CHECKPOINT_LAYOUT = {"index.json": None, "tensors": r"\d{5,}\.npy",
                     "shards": r"process-\d{5,}\.bin"}


class SaveTargetError(ValueError):
    """A save target that a writer refuses, so as to lose nothing; names the path."""


def target_path(path, what: str) -> str:
    """The absolute path of a save target; refuses what is not a path, "" and
    the filesystem root. ``what`` names the writer in the message."""
    try:
        path = os.fspath(path)
    except TypeError:
        raise TypeError(f"{what}: the path must be a str or os.PathLike, got "
                        f"{type(path).__name__}") from None
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    if not path.strip():
        raise SaveTargetError(f"{what}: the path is empty ({path!r}); name a new directory")
    full = os.path.abspath(path)
    if os.path.dirname(full) == full:
        raise SaveTargetError(f"{what}: '{path}' is the filesystem root; name a new directory "
                              f"under it")
    return full


def has_marker(path: str) -> bool:
    """True when ``path`` is a real directory holding our marker file."""
    marker = os.path.join(path, MARKER)
    if os.path.islink(path) or not os.path.isdir(path) or os.path.islink(marker):
        return False
    try:
        with open(marker, "rb") as f:
            return f.read(len(_MARKER_TEXT) + 1) == _MARKER_TEXT
    except OSError:
        return False


def is_ours(path: str, entries: Optional[Iterable[str]] = None) -> bool:
    """True for a directory we wrote: it holds the marker and, when ``entries``
    is given, nothing else at its top level than those names."""
    if not has_marker(path):
        return False
    if entries is None:
        return True
    return set(os.listdir(path)) <= set(entries) | {MARKER}


def check_replaceable(path: str, what: str, entries: Iterable[str],
                      legacy: Optional[Callable[[str], bool]] = None) -> bool:
    """Raises SaveTargetError unless ``path`` (absolute) is free, an empty
    directory, or a directory of ours (``is_ours(path, entries)`` or
    ``legacy(path)``). Returns whether something is there to replace."""
    if os.path.islink(path):
        raise SaveTargetError(f"{what}: '{path}' is a symbolic link; refusing to replace it "
                              f"(name the directory itself or a new one)")
    if not os.path.lexists(path):
        return False
    if not os.path.isdir(path):
        raise SaveTargetError(f"{what}: '{path}' is an existing file, not a checkpoint of "
                              f"ours; refusing to replace it (remove it or choose another path)")
    if not os.listdir(path) or is_ours(path, entries) or (legacy is not None and legacy(path)):
        return True
    others = sorted(set(os.listdir(path)) - set(entries) - {MARKER})
    shown = ", ".join(others[:5]) + (" ..." if len(others) > 5 else "")
    raise SaveTargetError(f"{what}: '{path}' is a directory that is not a checkpoint of ours "
                          f"(it holds {shown or 'no marker ' + MARKER}); refusing to replace it "
                          f"(remove it or choose a new path)")


def check_checkpoint_target(path: str, what: str,
                            legacy: Optional[Callable[[str], bool]] = None) -> bool:
    """``check_replaceable`` with the entries of ``CHECKPOINT_LAYOUT``, and
    refuses a checkpoint of ours whose sub-folders hold files we did not
    name (a user's file dropped into ``tensors/`` or ``shards/``)."""
    replace = check_replaceable(path, what, CHECKPOINT_LAYOUT, legacy)
    for folder, pattern in CHECKPOINT_LAYOUT.items():
        full = os.path.join(path, folder)
        if not replace or pattern is None or not os.path.isdir(full):
            continue
        if os.path.islink(full):
            raise SaveTargetError(f"{what}: '{full}' is a symbolic link; refusing to replace it")
        foreign = sorted(n for n in os.listdir(full) if not (
            re.fullmatch(pattern, n) and os.path.isfile(os.path.join(full, n))
            and not os.path.islink(os.path.join(full, n))))
        if foreign:
            raise SaveTargetError(f"{what}: {folder}/ holds files that are not ours "
                                  f"({', '.join(foreign[:5])}); refusing to replace it")
    return replace


def make_temp_dir(path: str) -> str:
    """A new, marked, empty folder ``<path>.tmp-<pid>-<random>`` beside
    ``path`` (parents are created). Marked temporaries of ``path`` left by a
    writer that died are removed first (``remove_stale``)."""
    parent, base = os.path.split(path)
    os.makedirs(parent, exist_ok=True)
    remove_stale(path)
    tmp = _umask.mkdtemp(prefix=f"{base}.tmp-{os.getpid()}-", dir=parent)
    try:
        with open(os.path.join(tmp, MARKER), "wb") as f:
            f.write(_MARKER_TEXT)
            f.flush()
            os.fsync(f.fileno())
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return tmp


def remove_stale(path: str) -> None:
    """Removes ``<path>.tmp-<pid>-*`` and ``<path>.old-<pid>-*`` folders that
    carry our marker and whose writer process ``pid`` is gone; an ``.old-``
    one only while ``path`` exists (else it is the last copy of a checkpoint
    whose writer died between its two renames). A writer killed in the
    instant between creating its folder and marking it leaves an unmarked,
    empty one, which stays."""
    parent, base = os.path.split(path)
    pattern = re.compile(re.escape(base) + r"\.(tmp|old)-(\d+)-[^/]+")
    try:
        names = os.listdir(parent)
    except OSError:
        return
    for name in names:
        match = pattern.fullmatch(name)
        if not match or (match.group(1) == "old" and not os.path.isdir(path)):
            continue
        if not _alive(int(match.group(2))) and has_marker(os.path.join(parent, name)):
            _remove_tree(os.path.join(parent, name))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True


def _remove_tree(path: str) -> None:
    """rmtree, the marker last: a removal cut short leaves a marked folder."""
    for name in os.listdir(path):
        if name != MARKER:
            full = os.path.join(path, name)
            if os.path.isdir(full) and not os.path.islink(full):
                shutil.rmtree(full, ignore_errors=True)
            else:
                os.remove(full)
    shutil.rmtree(path, ignore_errors=True)


def remove_ours(path: str) -> None:
    """Removes ``path`` if it is a folder of ours (marked) or an empty
    directory; leaves anything else alone."""
    if has_marker(path):
        _remove_tree(path)
    elif os.path.isdir(path) and not os.path.islink(path):
        try:
            os.rmdir(path)  # only when empty
        except OSError:
            pass


def _exchange(a: str, b: str) -> bool:
    """Atomically swaps two paths (Linux renameat2); False where unsupported."""
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return False
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (22, 38, 95):  # EINVAL, ENOSYS, EOPNOTSUPP: no exchange on this filesystem
        return False
    raise OSError(err, os.strerror(err), a, None, b)


def publish(tmp: str, path: str, replace: bool = False) -> None:
    """Moves the finished folder ``tmp`` to ``path``. ``replace``: ``path``
    holds a directory that ``check_replaceable`` accepted; it is swapped out
    atomically where possible (see the module docstring) and then removed."""
    _fsync_dir(tmp)
    if not replace:
        os.rename(tmp, path)  # fails on a file or a non-empty directory: nothing is lost
        _fsync_dir(os.path.dirname(path))
        return
    if _exchange(tmp, path):
        old = tmp
    else:
        parent, base = os.path.split(path)
        old = _umask.mkdtemp(prefix=f"{base}.old-{os.getpid()}-", dir=parent)
        os.replace(path, old)  # onto our own empty folder
        os.replace(tmp, path)
    _fsync_dir(os.path.dirname(path))
    _remove_tree(old)  # the replaced one, which check_replaceable accepted


def _fsync_dir(path: str) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
