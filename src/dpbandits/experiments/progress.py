"""Progress reporting of a study run: a rich progress bar on a terminal, log lines otherwise.

:func:`make_progress` picks :class:`RichProgress` when the console is a terminal and
:class:`LogProgress` (one plain line every ``interval`` seconds and at the end) otherwise.
:class:`NullProgress` reports nothing.

Log lines are INFO records of the ``dpbandits.progress`` logger (the CLI shows them on stderr,
hides them with ``-q``); a program that has configured no logging still sees them on stderr.
"""

from __future__ import annotations

import logging
import sys
import time
from typing import Any, Protocol, TextIO

_LOG = logging.getLogger("dpbandits.progress")

__all__ = ["LogProgress", "NullProgress", "ProgressReporter", "RichProgress", "make_progress"]


class ProgressReporter(Protocol):
    """What the runner reports: totals at the start, then trials and cells as they finish.

    A reporter may also have ``note(text)``: the runner then passes it one-line notes (how the
    process backend chose to run a small study, for example).
    """

    def start(self, *, total_cells: int, total_trials: int, done_cells: int, done_trials: int) -> None:
        """The run starts; ``done_*`` were finished by an earlier session (resume)."""
        ...

    def advance(self, *, trials: int, cells: int) -> None:
        """``trials`` more trials and ``cells`` more cells are done."""
        ...

    def close(self) -> None:
        """The run has ended (normally or not)."""
        ...


class NullProgress:
    """Report nothing."""

    def start(self, *, total_cells: int, total_trials: int, done_cells: int, done_trials: int) -> None:
        """Do nothing."""

    def advance(self, *, trials: int, cells: int) -> None:
        """Do nothing."""

    def close(self) -> None:
        """Do nothing."""

    def note(self, text: str) -> None:
        """Do nothing."""


def _duration(seconds: float) -> str:
    seconds = max(0, round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


class LogProgress:
    """Plain periodic log lines (for logs, CI and pipes).

    Parameters
    ----------
    stream : text stream, optional
        Where to print the lines; by default they are INFO records of the ``dpbandits.progress``
        logger (printed on stderr when no logging is configured).
    interval : float, default 10
        Seconds between lines (a line is also printed at the start and at the end).
    """

    def __init__(self, stream: TextIO | None = None, interval: float = 10.0) -> None:
        self.stream = stream
        self.interval = float(interval)
        self._total_cells = self._total_trials = self._cells = self._trials = self._resumed_trials = 0
        self._started = self._last = 0.0

    def start(self, *, total_cells: int, total_trials: int, done_cells: int, done_trials: int) -> None:
        """Record the totals and print the first line."""
        self._total_cells, self._total_trials = total_cells, total_trials
        self._cells, self._trials, self._resumed_trials = done_cells, done_trials, done_trials
        self._started = self._last = time.monotonic()
        resumed = f" ({done_cells} already done)" if done_cells else ""
        self._print(f"starting: {total_cells} cells, {total_trials} trials{resumed}")

    def advance(self, *, trials: int, cells: int) -> None:
        """Count progress; print a line if ``interval`` seconds have passed."""
        self._trials += trials
        self._cells += cells
        now = time.monotonic()
        if now - self._last >= self.interval:
            self._last = now
            self._print(self._status(now))

    def close(self) -> None:
        """Print the final line."""
        self._print(self._status(time.monotonic()) + " — finished" if self._cells >= self._total_cells
                    else self._status(time.monotonic()) + " — stopped")

    def _status(self, now: float) -> str:
        elapsed = max(now - self._started, 1e-9)
        rate = (self._trials - self._resumed_trials) / elapsed
        remaining = self._total_trials - self._trials
        eta = "0:00" if remaining <= 0 else _duration(remaining / rate) if rate > 0 else "?"
        return (f"{self._cells}/{self._total_cells} cells, {self._trials}/{self._total_trials} trials, "
                f"{rate:,.0f} trials/s, elapsed {_duration(elapsed)}, ETA {eta}")

    def note(self, text: str) -> None:
        """Print a line (for example how the backend chose to run the tasks)."""
        self._print(text)

    def _print(self, text: str) -> None:
        if self.stream is None and _LOG.hasHandlers():
            _LOG.info(text)
        else:  # a stream was given, or no logging is configured
            print(f"[dpbandits] {text}", file=self.stream or sys.stderr, flush=True)


class RichProgress:
    """A rich progress bar: trials done, cells done, rate and ETA."""

    def __init__(self, console: Any = None) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TaskProgressColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self._progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            TaskProgressColumn(),
            MofNCompleteColumn(),
            TextColumn("trials · {task.fields[cells]} cells · {task.fields[rate]}/s"),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=console,
        )
        self._task: Any = None
        self._cells = self._total_cells = self._resumed = 0
        self._trials = 0
        self._started = 0.0

    def start(self, *, total_cells: int, total_trials: int, done_cells: int, done_trials: int) -> None:
        """Show the bar."""
        self._total_cells, self._cells, self._resumed, self._trials = total_cells, done_cells, done_trials, done_trials
        self._started = time.monotonic()
        self._progress.start()
        self._task = self._progress.add_task(
            "study", total=total_trials, completed=done_trials, cells=f"{done_cells}/{total_cells}", rate="0"
        )

    def advance(self, *, trials: int, cells: int) -> None:
        """Move the bar."""
        self._cells += cells
        self._trials += trials
        rate = (self._trials - self._resumed) / max(time.monotonic() - self._started, 1e-9)
        self._progress.update(self._task, advance=trials, cells=f"{self._cells}/{self._total_cells}",
                              rate=f"{rate:,.0f}")

    def close(self) -> None:
        """Remove the live display."""
        self._progress.stop()

    def note(self, text: str) -> None:
        """Print a line above the bar (for example how the backend chose to run the tasks)."""
        self._progress.console.print(f"[dpbandits] {text}")


def make_progress(kind: str = "auto", *, interval: float = 10.0) -> ProgressReporter:
    """A reporter: ``"auto"`` (rich bar on a terminal, log lines otherwise), ``"rich"``, ``"log"``, ``"none"``."""
    if kind == "none":
        return NullProgress()
    if kind == "log":
        return LogProgress(interval=interval)
    if kind == "rich":
        return RichProgress()
    from rich.console import Console

    console = Console(stderr=True)
    return RichProgress(console) if console.is_terminal else LogProgress(interval=interval)
