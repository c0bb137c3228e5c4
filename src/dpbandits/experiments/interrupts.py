"""Interrupts of a study run: SIGTERM is handled as Ctrl-C, and critical steps are never cut in half.

* :func:`sigterm_as_interrupt` — while a run is going, SIGTERM (what ``timeout``, containers and
  batch schedulers send) raises :class:`RunTerminated`, a :class:`KeyboardInterrupt`: the run stops
  as on Ctrl-C, keeps its finished cells and records itself as interrupted.
* :func:`interrupts_deferred` — SIGINT and SIGTERM arriving during a short critical step (starting
  a worker process, opening a run directory) are held and delivered right after it.

Both act in the main thread only (where Python runs signal handlers) and restore the handlers
they replace.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["RunTerminated", "interrupts_deferred", "sigterm_as_interrupt"]


class RunTerminated(KeyboardInterrupt):
    """SIGTERM arrived during a study run: the run stops as on Ctrl-C (an interrupt)."""


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """While the block runs, SIGTERM raises :class:`RunTerminated` (main thread only)."""
    if not _in_main_thread() or not hasattr(signal, "SIGTERM"):
        yield
        return

    def terminate(signum: int, frame: Any) -> None:
        raise RunTerminated(f"terminated by signal {signum}")

    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def interrupts_deferred() -> Iterator[Callable[[], None]]:
    """Hold SIGINT and SIGTERM during the block, then deliver them to the handlers of before.

    A step cut in half could not be cleaned up: a worker process half-started is unknown to its
    pool, a run directory opened without its session recorded cannot be marked interrupted. The
    block gets a function that ends the deferral early (held signals are delivered there).
    """
    if not _in_main_thread():
        yield lambda: None
        return
    received: list[int] = []

    def hold(signum: int, frame: Any) -> None:
        received.append(signum)

    signals = [signal.SIGINT] + ([signal.SIGTERM] if hasattr(signal, "SIGTERM") else [])
    previous = {signum: signal.signal(signum, hold) for signum in signals}

    def deliver() -> None:
        while previous:
            signum, handler = previous.popitem()
            signal.signal(signum, handler)
        for number in dict.fromkeys(received):
            signal.raise_signal(number)
        received.clear()

    try:
        yield deliver
    finally:
        deliver()
