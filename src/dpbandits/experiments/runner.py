"""The study runner: split a study into tasks, run them on a backend, store results as cells finish.

Tasks
-----
A study has ``n_points`` grid points × ``n_algorithms`` algorithms = cells, and each cell's
``trials`` are split into chunks of ``chunk_size`` trials (the last may be shorter). One task is
one (cell, chunk): it builds the environment, calls the algorithm's simulation entry point for the
chunk's trials and returns per-trial metrics. The chunk size is fixed by the study, never by the
number of workers.

Seeds (fixed, documented order)
-------------------------------
From the study's root seed ``s``::

    root        = SeedSequence(s)
    point_seq_p = root.spawn(n_points)[p]            # one child per grid point, in grid order
    chunk_seq   = point_seq_p.spawn(n_chunks)[c]     # one child per chunk of trials, in trial order

``chunk_seq`` is the ``rng`` passed to the simulation entry point; it does **not** depend on the
algorithm, so all algorithms of a grid point see the same environment randomness (each entry point
spawns environment, algorithm and privacy-noise streams from it, in that order). Because
``spawn(n)[i]`` does not depend on ``n``, raising ``trials`` appends chunks and keeps the earlier
ones' numbers. Every task derives its own seed sequence from ``(s, p, c)``, so results are the
same on every backend, for every number of workers and in every completion order.

Examples
--------
>>> from dpbandits.experiments.config import Study
>>> from dpbandits.experiments.runner import run_study
>>> study = Study.from_mapping({
...     "name": "doc", "seed": 1, "trials": 20, "chunk_size": 10,
...     "environment": {"name": "bernoulli", "means": [0.8, 0.2]},
...     "algorithms": [{"name": "uniform"}], "grid": {"budget": [10, 20]},
... })
>>> import tempfile
>>> result = run_study(study, tempfile.mkdtemp() + "/run", progress="none")
>>> result.cells_run, result.cells_skipped
(2, 0)
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from dpbandits._core.errors import DPBanditsError, StudyError
from dpbandits._core.rng import as_seed_sequence
from dpbandits._core.typing import FloatArray
from dpbandits.algorithms.user_simulation import AgentSimulation
from dpbandits.envs.registry import get_environment
from dpbandits.experiments.analyses import run_analyses
from dpbandits.experiments.backends import Backend, ProcessBackend, WorkerLostError, make_backend
from dpbandits.experiments.config import Cell, Study
from dpbandits.experiments.costs import check_study_cost
from dpbandits.experiments.interrupts import RunTerminated, interrupts_deferred, sigterm_as_interrupt
from dpbandits.experiments.progress import ProgressReporter, make_progress
from dpbandits.experiments.store import RunStore

_LOG = logging.getLogger("dpbandits.run")

__all__ = ["RunResult", "RunTerminated", "Task", "TaskResult", "chunk_seed_sequence", "make_tasks", "run_study",
           "run_task"]

def chunk_seed_sequence(root_seed: int, point_index: int, chunk_index: int) -> np.random.SeedSequence:
    """The seed sequence of one (grid point, chunk): ``root.spawn(·)[p].spawn(·)[c]``.

    Built fresh on every call (a SeedSequence's ``spawn`` is stateful), so it is the same object
    value in every process.
    """
    root = as_seed_sequence(root_seed)
    point_seq = root.spawn(point_index + 1)[point_index]  # spawn(n)[i] is the same for every n > i
    return point_seq.spawn(chunk_index + 1)[chunk_index]


@dataclass(frozen=True)
class Task:
    """One (cell, chunk of trials): all a worker needs, picklable.

    The environment factory and the simulation entry point travel with the task (pickled by
    reference), so a worker imports only their modules rather than every algorithm family.
    """

    cell: Cell
    chunk_index: int
    n_trials: int
    root_seed: int
    metrics: tuple[str, ...]
    environment_factory: Callable[..., Any]
    simulate: Callable[..., Mapping[str, Any]]
    proportion_metrics: tuple[str, ...] = ()

    @property
    def modules(self) -> tuple[str, ...]:
        """The modules the task needs (its environment's and its entry point's): a worker may import them ahead."""
        return (self.environment_factory.__module__, self.simulate.__module__)


@dataclass(frozen=True)
class TaskResult:
    """Per-trial metrics of one task and the time the simulation took."""

    values: dict[str, FloatArray]
    seconds: float


def run_task(task: Task) -> TaskResult:
    """Run one task: build the environment, simulate the chunk's trials, check the output.

    Raises
    ------
    StudyError
        If the entry point does not return every metric as a finite array of shape (n_trials,).
    """
    cell = task.cell
    if task.simulate.__module__.startswith("dpbandits.algorithms.offline"):
        # the kl-* entry points audit (audit = true, calibration = "audit") through callbacks that the
        # audit layer registers when imported: import it here, in whichever process runs the task
        import dpbandits.audit.kl  # noqa: F401
    rng = chunk_seed_sequence(task.root_seed, cell.point_index, task.chunk_index)
    started = time.perf_counter()
    try:
        env = task.environment_factory(**cell.environment_params)
        output = task.simulate(env, n_trials=task.n_trials, rng=rng, **cell.algorithm_params)
    except DPBanditsError as exc:
        raise StudyError(
            f"cell {cell.key} ({cell.label} on {cell.environment}, grid point {cell.point}) failed: {exc}"
        ) from exc
    seconds = time.perf_counter() - started
    values: dict[str, FloatArray] = {}
    for metric in task.metrics:
        if metric not in output:
            raise StudyError(
                f"algorithm {cell.algorithm!r} returned metrics {sorted(output)}; expected {metric!r} too"
            )
        arr = np.asarray(output[metric], dtype=np.float64)
        if arr.shape != (task.n_trials,) or not np.all(np.isfinite(arr)):
            raise StudyError(
                f"algorithm {cell.algorithm!r} metric {metric!r} must be {task.n_trials} finite values; "
                f"got shape {arr.shape} (cell {cell.key}, point {cell.point})"
            )
        if metric in task.proportion_metrics and not np.all((arr == 0) | (arr == 1)):
            raise StudyError(
                f"algorithm {cell.algorithm!r} metric {metric!r} is declared a proportion and must be 0/1 "
                f"per trial; got {float(arr[(arr != 0) & (arr != 1)][0])!r} (cell {cell.key}, point {cell.point})"
            )
        values[metric] = arr
    return TaskResult(values, seconds)


def make_tasks(study: Study, cells: list[Cell]) -> list[Task]:
    """The tasks of ``cells``: cells in order, each cell's chunks consecutive (so cells finish early)."""
    metrics = {index: study.metrics_of(index) for index in range(len(study.algorithms))}
    specs = {index: study.algorithm_spec(index) for index in range(len(study.algorithms))}
    factory = get_environment(study.environment.name).factory
    sizes = study.chunk_sizes()
    firsts = np.cumsum([0, *sizes[:-1]]).tolist()  # the cell's index of each chunk's first trial
    return [
        Task(cell, chunk_index, n_trials, study.seed, metrics[cell.algorithm_index], factory,
             _for_chunk(specs[cell.algorithm_index].simulate, firsts[chunk_index]),
             specs[cell.algorithm_index].proportion_metrics)
        for cell in cells
        for chunk_index, n_trials in enumerate(sizes)
    ]


def _for_chunk(simulate: Callable[..., Mapping[str, Any]], first_trial: int) -> Callable[..., Mapping[str, Any]]:
    """A user's driven agent class numbers its trials as the cell does (in its errors); other entry points as is."""
    if isinstance(simulate, AgentSimulation):
        return replace(simulate, first_trial=first_trial)
    return simulate


@dataclass
class RunResult:
    """What a run did."""

    run_dir: Path
    summary_path: Path
    cells_run: int
    cells_skipped: int
    status: str
    seconds: float
    backend: dict[str, Any] = field(default_factory=dict)


def run_study(
    study: Study,
    out_dir: str | Path,
    *,
    backend: str | Backend = "serial",
    workers: int | None = None,
    scheduler: str | None = None,
    resume: bool = False,
    progress: str | ProgressReporter = "auto",
    source_text: str | None = None,
    allow_version_change: bool = False,
) -> RunResult:
    """Run a study into a run directory (see :mod:`dpbandits.experiments.store` for its layout).

    Parameters
    ----------
    study : Study
    out_dir : str or Path
        The run directory (created if needed).
    backend : {"serial", "process", "dask"} or Backend, default "serial"
    workers : int, optional
        Workers of the process pool or local dask cluster (default: all cores).
    scheduler : str, optional
        Address of a dask scheduler (``dask`` backend only).
    resume : bool, default False
        Continue an interrupted run: finished cells are kept, not recomputed.
    progress : {"auto", "rich", "log", "none"} or ProgressReporter, default "auto"
    source_text : str, optional
        The study file's text, copied into the run directory.
    allow_version_change : bool, default False
        With ``resume``: continue a run whose finished cells were computed with other versions of
        Python or of a package that can change a result (refused otherwise); each cell records
        the session, and so the versions, that computed it.

    Returns
    -------
    RunResult

    Interrupts: Ctrl-C (SIGINT) and SIGTERM stop the run: finished cells are kept, the run is
    recorded as ``interrupted`` and :class:`KeyboardInterrupt` (:class:`RunTerminated` for
    SIGTERM) propagates; ``resume=True`` continues it.

    Raises
    ------
    StudyError
        If the study cannot run here (memory or time, see :mod:`dpbandits.experiments.costs`; checked
        before anything is written), the run directory holds another study, or holds results and
        ``resume`` is false, holds cells of other versions and ``allow_version_change`` is false, or an
        algorithm returns malformed metrics.
    """
    with sigterm_as_interrupt():
        return _run_study(study, out_dir, backend=backend, workers=workers, scheduler=scheduler, resume=resume,
                          progress=progress, source_text=source_text, allow_version_change=allow_version_change)


def _run_study(
    study: Study,
    out_dir: str | Path,
    *,
    backend: str | Backend,
    workers: int | None,
    scheduler: str | None,
    resume: bool,
    progress: str | ProgressReporter,
    source_text: str | None,
    allow_version_change: bool,
) -> RunResult:
    started = time.monotonic()
    engine = make_backend(backend, workers=workers, scheduler=scheduler) if isinstance(backend, str) else backend
    facts = engine.describe()
    local = facts.get("backend") == "process" or facts.get("scheduler") == "local"
    check_study_cost(study, workers=int(facts.get("workers", 1)), local_processes=int(facts["workers"]) if local else 0)
    reporter = make_progress(progress) if isinstance(progress, str) else progress
    _LOG.debug("backend %s", facts)
    # A process pool forks its workers as it is entered, when this process has no other thread (see
    # ProcessBackend): it is entered before the run directory is opened (its lock is not inherited)
    # and before the run starts its threads (progress display, cell writer). Other backends are
    # entered once the run is open (a dask cluster is not started for a run directory refused).
    early = engine if isinstance(engine, ProcessBackend) else contextlib.nullcontext()
    # A run is either not started or recorded as started, never half-opened: an interrupt that
    # arrives while the run directory is opened is delivered once the run can record it.
    with early, interrupts_deferred() as deliver_interrupts:
        store = RunStore.open(out_dir, study, source_text=source_text, resume=resume, session=engine.describe(),
                              allow_version_change=allow_version_change)
        return _run_opened(study, store, engine, reporter, started, deliver_interrupts)


def _run_opened(study: Study, store: RunStore, engine: Backend, reporter: ProgressReporter, started: float,
                deliver_interrupts: Callable[[], None]) -> RunResult:
    status = "failed"
    error: BaseException | None = None
    writer: _CellWriter | None = None
    try:
        deliver_interrupts()
        cells = study.cells()
        finished = store.finished_cells()
        pending = [cell for cell in cells if cell.key not in finished]
        tasks = make_tasks(study, pending)
        chunks_per_cell = study.n_chunks()
        partial: dict[str, dict[int, TaskResult]] = {}
        reporter.start(
            total_cells=len(cells),
            total_trials=len(cells) * study.trials,
            done_cells=len(finished),
            done_trials=len(finished) * study.trials,
        )
        writer = _CellWriter(store)
        with engine:
            for index, result in engine.map_unordered(run_task, tasks, notify=getattr(reporter, "note", None)):
                task = tasks[index]
                parts = partial.setdefault(task.cell.key, {})
                parts[task.chunk_index] = result
                done = len(parts) == chunks_per_cell
                if done:
                    writer.put(task.cell, partial.pop(task.cell.key))
                reporter.advance(trials=task.n_trials, cells=int(done))
        writer.close()
        status = "complete"
    except KeyboardInterrupt as exc:
        status, error = "interrupted", exc
        raise
    except WorkerLostError as exc:
        error = WorkerLostError(f"{exc}; the finished cells are saved in {store.run_dir}: continue with --resume")
        raise error from None
    except BaseException as exc:
        error = exc
        raise
    finally:
        reporter.close()
        try:
            if writer is not None:
                _close_writer(writer, error)  # the cells already computed are written before the end is recorded
            store.finish(status)
            summary_path = store.write_summary()
            if store.manifest["status"] == "complete":
                run_analyses(store.run_dir, study.analyses)
        except StudyError as exc:  # e.g. the disk is full: report the error that stopped the run
            if error is None:
                raise
            error.add_note(f"and the end of the run could not be recorded: {exc}")
        finally:
            store.close()
    return RunResult(
        run_dir=store.run_dir,
        summary_path=summary_path,
        cells_run=len(pending),
        cells_skipped=len(finished),
        status=store.manifest["status"],
        seconds=time.monotonic() - started,
        backend=engine.describe(),
    )


class _CellWriter:
    """Writes finished cells on a background thread, in group commits, while the next cells compute.

    Each time it is free, the thread takes every cell finished meanwhile and stores them with one
    :meth:`RunStore.write_cells` (each file written atomically and fsync-ed, the directory fsync-ed
    once; a cell is recorded as done only once its file is durable). While the thread runs it alone
    touches the store; :meth:`close` writes what is queued, stops it and re-raises its error, if any
    (e.g. a full disk), which :meth:`put` also raises as soon as it is known.
    """

    def __init__(self, store: RunStore) -> None:
        self._store = store
        self._queue: queue.SimpleQueue[tuple[Cell, dict[int, TaskResult]] | None] = queue.SimpleQueue()
        self._error: BaseException | None = None
        self._closing = False
        # set by the thread as it ends: close() waits on it, not on Thread.join, because a join that a
        # signal handler interrupts (SIGTERM, Ctrl-C) can mark the thread stopped while it still
        # writes, so that a second join returns at once and the process exits mid-write
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = threading.Thread(target=self._write_until_closed,
                                                                 name="dpbandits-cell-writer", daemon=True)
        self._thread.start()

    def put(self, cell: Cell, parts: dict[int, TaskResult]) -> None:
        """Queue a finished cell (all its chunks) for writing."""
        self._raise_error()
        self._queue.put((cell, parts))

    def close(self) -> None:
        """Write the queued cells, stop the thread (idempotent) and raise its error, if any."""
        if self._thread is not None:
            if not self._closing:  # a close interrupted by a signal is called again: one end marker
                self._closing = True
                self._queue.put(None)
            self._stopped.wait()  # interruptible by a signal; an interrupted close is simply called again
            self._thread = None
        self._raise_error()

    def _raise_error(self) -> None:
        if self._error is not None:
            error, self._error = self._error, None
            raise error

    def _write_until_closed(self) -> None:
        try:
            self._write_batches()
        finally:
            self._stopped.set()

    def _write_batches(self) -> None:
        closed = False
        while not closed:
            batch = [self._queue.get()]
            with contextlib.suppress(queue.Empty):
                while True:
                    batch.append(self._queue.get_nowait())
            closed = batch[-1] is None
            finished = [item for item in batch if item is not None]
            if finished and self._error is None:
                try:
                    self._store.write_cells([_assemble(cell, parts) for cell, parts in finished])
                except BaseException as exc:  # handed to the main thread by put() or close()
                    self._error = exc


def _close_writer(writer: _CellWriter, error: BaseException | None) -> None:
    """Close the cell writer at the end of a run that stopped with ``error`` (None: it did not)."""
    try:
        writer.close()
    except Exception as exc:  # the run had already stopped (else close() raised in the run): say both
        if error is None:
            raise
        error.add_note(f"and some finished cells could not be written: {exc}")


def _assemble(cell: Cell, parts: Mapping[int, TaskResult]) -> tuple[Cell, dict[str, FloatArray], float]:
    """A cell's values (its chunks in trial order) and its seconds of compute."""
    ordered = [parts[chunk] for chunk in sorted(parts)]
    values = {metric: np.concatenate([part.values[metric] for part in ordered]) for metric in ordered[0].values}
    seconds = sum(part.seconds for part in ordered)
    _LOG.debug("cell %s done: %s, %s, %d trials in %.3f s of compute", cell.key, cell.label,
               cell.point or "no grid", len(next(iter(values.values()))), seconds)
    return cell, values, seconds
