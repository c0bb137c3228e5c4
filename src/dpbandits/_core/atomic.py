"""Atomic file writes: a file is either as it was or wholly replaced, never half-written.

One implementation for every file the library writes (run directories, summaries, plots, saved
agents and policies): write a temporary file in the target's directory, flush and ``fsync`` it,
``os.replace`` it over the target, then ``fsync`` the directory so the rename itself is durable.

A target path that holds a symbolic link or anything but a regular file (a directory, a device,
a FIFO, a socket) is refused with :class:`~dpbandits._core.errors.UnsafeTargetError` before anything
is written: a rename would replace the link (leaving the file it points to stale) or the device.
Write to the link's target path itself if that is what you mean. (The check and the rename are
not one atomic step: a link created in between by someone who can write to the directory is
replaced, never followed.)
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Sequence
from pathlib import Path

from dpbandits._core.errors import UnsafeTargetError

__all__ = ["atomic_write_bytes", "atomic_write_many", "check_target", "fsync_directory"]


def check_target(path: str | os.PathLike[str]) -> None:
    """Refuse a target that exists and is a symbolic link or not a regular file (see the module docstring).

    Raises
    ------
    UnsafeTargetError
        Naming the path and what is there.
    """
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    except OSError:
        return  # unreadable parent and the like: the write itself reports it
    if stat.S_ISLNK(mode):
        raise UnsafeTargetError(f"{os.fspath(path)} is a symbolic link; refusing to replace it (write to "
                                f"{os.path.realpath(path)} instead)")
    if not stat.S_ISREG(mode):
        kind = ("a directory" if stat.S_ISDIR(mode) else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
                else "a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "not a regular file")
        raise UnsafeTargetError(f"{os.fspath(path)} is {kind}; refusing to replace it with a regular file")


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
    """Write ``data`` to ``path`` atomically; return the path (see :func:`atomic_write_many`)."""
    atomic_write_many([(path, data)], temporary_prefix=temporary_prefix)
    return Path(path)


def atomic_write_many(files: Sequence[tuple[str | os.PathLike[str], bytes]], *,
                      temporary_prefix: str = ".tmp-") -> None:
    """Write several files atomically, as one group commit.

    Each is written to a temporary file beside its target (``<temporary_prefix><pid>-<random>-<name>``,
    so a directory's leftovers of a killed writer can be found by the prefix; created exclusively
    with the process's default permissions) and fsync-ed; then all are renamed over their targets
    and each directory is fsync-ed once. When this returns every file is durable; a crash before
    leaves each target either as it was or complete, never half-written. On any failure, an
    interrupt included, the temporary files not yet renamed are removed and the ``OSError`` (disk
    full, read-only file system, no permission) propagates, its ``filename`` the target's. Every
    target is checked first (:func:`check_target`): nothing is written if one is refused.
    """
    for path, _ in files:
        check_target(path)
    pending: list[tuple[Path, Path]] = []  # (temporary, target) not yet renamed
    target = Path()
    try:
        for path, data in files:
            target = Path(path)
            temporary = target.with_name(f"{temporary_prefix}{os.getpid()}-{os.urandom(4).hex()}-{target.name}")
            pending.append((temporary, target))
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
        while pending:
            temporary, target = pending[0]
            os.replace(temporary, target)
            pending.pop(0)
    except BaseException as exc:
        for temporary, _ in pending:
            with contextlib.suppress(OSError):
                temporary.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            exc.filename = str(target)  # the file the caller asked for, not its temporary
        raise
    for directory in dict.fromkeys(Path(path).parent for path, _ in files):
        fsync_directory(directory)
