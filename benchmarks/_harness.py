"""Shared by the benchmarks: medians of interleaved timings, and ratio records that run.py collects.

Timing: :func:`interleaved` runs every candidate once per round, in a rotating order, for ``rounds``
rounds, and returns each candidate's **median** time. Interleaving spreads the machine's load (it is
shared) over all candidates alike, and the median neither rewards a lucky run (as best-of-N does) nor
punishes an unlucky one.

Reporting: :func:`report_ratio` prints one human line (with the word "ratio") and one machine line
``#ratio {json}``; ``benchmarks/run.py`` gathers the machine lines of every benchmark into
``benchmarks/results/ratios.md`` and ``ratios.json``.
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

__all__ = ["interleaved", "load_average", "report_ratio", "report_value", "tree_cpu"]


def dpbandits_command() -> list[str]:
    """The ``dpbandits`` command of this interpreter's environment (``python -m dpbandits`` if none)."""
    found = shutil.which("dpbandits", path=str(Path(sys.executable).parent))
    return [found] if found else [sys.executable, "-m", "dpbandits"]


def load_average() -> str:
    """The 1-minute load average and the core count, for the record (the machine is shared)."""
    try:
        one, five, _ = os.getloadavg()
    except OSError:  # pragma: no cover - not on Linux
        return "load average unknown"
    return f"load average {one:.2f} (5 min {five:.2f}) on {os.cpu_count()} cores"


def interleaved(candidates: Mapping[str, Callable[[], Any]], rounds: int, *, per: float = 1.0,
                warmup: bool = True) -> dict[str, float]:
    """Median seconds per call of each candidate, timed in ``rounds`` interleaved rounds.

    Parameters
    ----------
    candidates : mapping of name to a callable with no argument
        Each call is one timed run. A callable may return a number: the time is then divided by it
        (for example the number of steps it ran), else by ``per``.
    rounds : int
        Number of rounds; round r runs the candidates starting at the (r mod n)-th.
    per : float, default 1
        Divisor of every time (steps or trials per run) when the callable returns None.
    warmup : bool, default True
        Run every candidate once, untimed, first (imports, caches, first-touch allocations).

    Returns
    -------
    dict of name to the median time per unit
    """
    names = list(candidates)
    if warmup:
        for name in names:
            candidates[name]()
    times: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        order = names[r % len(names):] + names[: r % len(names)]
        for name in order:
            start = time.perf_counter()
            units = candidates[name]()
            elapsed = time.perf_counter() - start
            times[name].append(elapsed / (units if isinstance(units, int | float) and units else per))
    return {name: statistics.median(values) for name, values in times.items()}


def report_ratio(name: str, value: float, *, numerator: str, denominator: str, target: str | None = None,
                 met: bool | None = None, note: str = "") -> None:
    """Print a ratio for people and for run.py's table.

    Parameters
    ----------
    name : str
        Short identifier, unique within the benchmark (``"dp-ebs fast / plain loop"``).
    value : float
    numerator, denominator : str
        What was divided by what, with their measured values and units.
    target : str, optional
        The target as text (``"<= 2"``).
    met : bool, optional
        Whether the target is met.
    note : str
        Anything the reader needs (a missing peer, the reason of a gap).
    """
    verdict = "" if met is None else (" (met)" if met else " (MISSED)")
    target_text = f"; target {target}{verdict}" if target else ""
    print(f"ratio {name}: {value:.3g} ({numerator} / {denominator}{target_text}){' — ' + note if note else ''}",
          flush=True)
    record = {"name": name, "value": value, "numerator": numerator, "denominator": denominator,
              "target": target, "met": met, "note": note}
    print("#ratio " + json.dumps(record), flush=True)


def report_value(name: str, value: float, unit: str, *, note: str = "") -> None:
    """Print a measured value (not a ratio) for people and for run.py's table."""
    print(f"{name}: {value:.4g} {unit}{' — ' + note if note else ''}", flush=True)
    print("#value " + json.dumps({"name": name, "value": value, "unit": unit, "note": note}), flush=True)


_SUBREAPER = False


def tree_cpu(command: list[str]) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one run of ``command`` and of every process it started.

    CPU is user + system time of the whole process tree: this process becomes a child subreaper
    (Linux ``prctl(PR_SET_CHILD_SUBREAPER)``), so that processes the command leaves behind (a fork
    server, dask's workers) are re-parented here and waited for, and their time is counted. Wall time
    is until the command itself exits. Linux only.
    """
    global _SUBREAPER
    if not _SUBREAPER:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(36, 1, 0, 0, 0) != 0:  # PR_SET_CHILD_SUBREAPER
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER) failed")
        _SUBREAPER = True
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - start
    while True:  # wait for what the command left running (re-parented here)
        try:
            os.wait()
        except ChildProcessError:
            break
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), wall
