"""The cell writer's close survives an interrupt: a second close waits for the writes in flight.

A signal handler that raises (SIGTERM during a run, Ctrl-C) while the main thread waits in
``Thread.join`` can leave the thread marked stopped although it still writes; a second ``join`` then
returns at once and the process exits mid-write, leaving temporary files behind. The writer waits on
its own event instead.
"""

from __future__ import annotations

import signal
import sys
import threading
import time
from typing import Any

import pytest

from dpbandits.experiments.runner import _CellWriter

pytestmark = pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="needs signal.setitimer")


class _SlowStore:
    """Stands in for a RunStore: each write takes 0.6 s and records that it finished."""

    def __init__(self) -> None:
        self.finished_writes = 0
        self.writing = threading.Event()

    def write_cells(self, finished: Any) -> None:
        self.writing.set()
        time.sleep(0.6)
        self.finished_writes += 1


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def test_close_interrupted_by_a_signal_then_called_again_waits_for_the_write_in_flight(monkeypatch) -> None:
    store = _SlowStore()
    monkeypatch.setattr("dpbandits.experiments.runner._assemble", lambda cell, parts: (cell, {}, 0.0))
    writer = _CellWriter(store)  # type: ignore[arg-type]
    writer.put(object(), {})  # type: ignore[arg-type]
    assert store.writing.wait(5.0)
    previous = signal.signal(signal.SIGALRM, _interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.1)
        with pytest.raises(KeyboardInterrupt):
            writer.close()  # the interrupt arrives while it waits for the write
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert store.finished_writes == 0, "the interrupt should have come while the write was in flight"
    writer.close()  # as the run's finally does
    assert store.finished_writes == 1, f"close returned before the write finished (Python {sys.version_info[:2]})"
