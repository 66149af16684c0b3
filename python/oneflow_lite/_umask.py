"""Temporary files and folders that become the user's files (reports,
checkpoints, ``flow.save`` archives) with the permissions the user's umask
gives, as ``open()`` and ``os.mkdir`` would: ``tempfile.mkstemp`` and
``mkdtemp`` create them owner-only (0600 / 0700), which a checkpoint on a
filesystem shared by several hosts or users cannot keep.

The umask is read from /proc/self/status (no change to the process's
state); where that is missing, by setting and restoring it (a moment in
which another thread's new files would get 0o077's mask)."""
from __future__ import annotations

import os
import tempfile
from typing import Tuple


def umask() -> int:
    """This process's umask."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o077)
    os.umask(mask)
    return mask


def mkstemp(**kwargs) -> Tuple[int, str]:
    """``tempfile.mkstemp`` whose file has the mode ``open()`` would give it."""
    fd, path = tempfile.mkstemp(**kwargs)
    try:
        os.fchmod(fd, 0o666 & ~umask())
    except BaseException:
        os.close(fd)
        os.remove(path)
        raise
    return fd, path


def mkdtemp(**kwargs) -> str:
    """``tempfile.mkdtemp`` whose folder has the mode ``os.mkdir`` would give it."""
    path = tempfile.mkdtemp(**kwargs)
    try:
        os.chmod(path, 0o777 & ~umask())
    except BaseException:
        os.rmdir(path)
        raise
    return path
