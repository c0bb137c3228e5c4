"""Helpers shared by the tests that kill runs: find the processes a run left alive.

A run started with a unique marker in its environment passes it to every process it starts, so the
survivors of a kill are found by scanning ``/proc`` for the marker, orphans re-parented to init
included.
"""

from __future__ import annotations

import os
import time
from pathlib import Path


def processes_with(marker: str) -> list[int]:
    """Pids of live processes whose environment holds ``marker`` (zombies excluded)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if marker.encode() not in (entry / "environ").read_bytes():
                continue
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            found.append(int(entry.name))
    return found


def wait_until_gone(marker: str, timeout: float) -> list[int]:
    """Wait up to ``timeout`` seconds for every process holding ``marker`` to end; those still alive."""
    deadline = time.monotonic() + timeout
    while (alive := processes_with(marker)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return alive
