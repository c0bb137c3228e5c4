"""Helper processes that never outlive the process that started them."""

from __future__ import annotations

import contextlib
import os
import signal
import sys

__all__ = ["die_with_parent"]

_PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """Ask the kernel to kill this process with ``SIGKILL`` when its parent ends, even by ``SIGKILL``.

    Linux only (``prctl(PR_SET_PDEATHSIG)``); elsewhere it does nothing. Call it first thing in a
    forked child. Exits at once if the parent has already ended (the request would never fire then).
    """
    if sys.platform != "linux":
        return
    import ctypes

    parent = os.getppid()
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)
