"""Atomic file writes: a file is either as it was or wholly replaced, never half-written.

One implementation for every file the library writes (run directories, summaries, plots, saved
agents and policies): write a temporary file in the target's directory, flush and ``fsync`` it,
``os.replace`` it over the target, then ``fsync`` the directory so the rename itself is durable.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

__all__ = ["atomic_write_bytes", "fsync_directory"]


def fsync_directory(directory: str | os.PathLike[str]) -> None:
    """Make a rename inside ``directory`` durable (a no-op where directories cannot be opened)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # platforms without directory handles (Windows): rename is still atomic
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes, *, temporary_prefix: str = ".tmp-") -> Path:
    """Write ``data`` to ``path`` atomically; return the path.

    The temporary file is ``<temporary_prefix><pid>-<random>-<name>`` beside the target (so a
    directory's leftovers of a killed writer can be found by the prefix), created exclusively with
    the process's default permissions. On any failure, an interrupt included, it is removed and
    ``path`` is left as it was; the ``OSError`` (disk full, read-only file system, no permission)
    propagates.
    """
    target = Path(path)
    temporary = target.with_name(f"{temporary_prefix}{os.getpid()}-{os.urandom(4).hex()}-{target.name}")
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            temporary.unlink(missing_ok=True)
        raise
    fsync_directory(target.parent)
    return target
