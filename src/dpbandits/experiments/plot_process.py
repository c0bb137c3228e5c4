"""A drawing process started before a run, so that importing matplotlib overlaps the run.

Drawing a run's figures first imports matplotlib (about half a second on one core), and the run
itself never needs it. :class:`PlotProcess` forks a process *before* the run that imports matplotlib
at a low priority (``nice``) while the run computes, so the import takes cores the run leaves idle
(its start-up, its last cells, the summary) rather than time after it; when the run has finished,
:meth:`PlotProcess.start` hands it the run directory and it draws the figures
(:func:`~dpbandits.experiments.plots.plot_run`, in forked workers of its own) while the caller
prints the summary.

The process never outlives its caller: it is killed when the caller closes it (on every path out of
the command, a failed or interrupted run included), and the kernel kills it, and its drawing
workers, if the caller dies even by ``SIGKILL`` (``PR_SET_PDEATHSIG``). It ignores ``SIGINT``: an
interrupt is the caller's business. Where it cannot be forked safely (not Linux, or the caller already
runs other threads), nothing is forked and :meth:`PlotProcess.start` draws as
:func:`~dpbandits.experiments.plots.start_plot_run` does.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from dpbandits._core.errors import StudyError
from dpbandits._core.lifetime import die_with_parent
from dpbandits.experiments.plots import PendingPlots, import_drawing_modules, plot_run, start_plot_run

__all__ = ["PlotProcess"]

_NICENESS = 10
"""How much lower the drawing process's priority is while it waits (it only imports then)."""


def _serve(connection: Any, callers_end: Any, formats: tuple[str, ...]) -> None:
    """The drawing process: import matplotlib, wait for a run directory, draw, answer, exit."""
    die_with_parent()
    callers_end.close()  # inherited by the fork: the caller's death must read as the end of the pipe
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with contextlib.suppress(OSError):
        os.nice(_NICENESS)
    import_drawing_modules(formats)  # while the run computes
    try:
        request = connection.recv()
    except EOFError:
        os._exit(0)
    if request is None:
        os._exit(0)
    run_dir, out_dir = request
    try:
        reply: tuple[str, Any] = ("done", plot_run(run_dir, out_dir=out_dir, formats=formats))
    except StudyError as exc:
        reply = ("refused", str(exc))
    except BaseException as exc:  # reported to the caller, which raises it as its own
        reply = ("failed", f"{type(exc).__name__}: {exc}")
    with contextlib.suppress(OSError):
        connection.send(reply)
    os._exit(0)


class PlotProcess:
    """A process that imports matplotlib during a run and draws the run's figures after it.

    Use it as a context manager around the run; it is killed on leaving the block whatever happens.

    Parameters
    ----------
    formats : sequence of str
        File formats the figures are written in.
    """

    def __init__(self, formats: Sequence[str]) -> None:
        import multiprocessing

        self._formats = tuple(formats)
        self._process: Any = None
        self._connection: Any = None
        if sys.platform != "linux" or threading.active_count() != 1:
            return  # forking a multi-threaded process is unsafe: draw in start() instead
        context = multiprocessing.get_context("fork")
        here, there = context.Pipe()
        self._process = context.Process(target=_serve, args=(there, here, self._formats),
                                        name="dpbandits-plots")
        self._process.start()
        there.close()
        self._connection = here

    def start(self, run_dir: str | Path) -> PendingPlots:
        """Start drawing the figures of ``run_dir`` into ``run_dir / "plots"``.

        Returns
        -------
        PendingPlots
            Its ``result()`` waits for the files and raises :class:`StudyError` as
            :func:`~dpbandits.experiments.plots.plot_run` would.
        """
        if self._process is None:
            return start_plot_run(run_dir, formats=self._formats)
        try:
            self._connection.send((Path(run_dir), None))
        except OSError:
            self.close()
            return start_plot_run(run_dir, formats=self._formats)
        return PendingPlots(self._reply, hint=False)

    def _reply(self) -> list[Path]:
        try:
            kind, value = self._connection.recv()
        except (EOFError, OSError):
            raise StudyError("the process drawing the plots ended without drawing them; "
                             "draw them with `dpbandits plot RUN_DIR`") from None
        finally:
            self.close()
        if kind != "done":
            message = value if kind == "refused" else (f"drawing the plots failed ({value}); "
                                                       "draw them with `dpbandits plot RUN_DIR`")
            raise StudyError(message)
        return list(value)

    def close(self) -> None:
        """Kill the process (if it still runs) and release it; safe to call again."""
        process, self._process = self._process, None
        if process is None:
            return
        if process.is_alive():
            process.kill()
        process.join()
        self._connection.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
