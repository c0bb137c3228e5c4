"""Execution backends: where the tasks of a study run.

A backend maps a picklable module-level function over a list of tasks and yields
``(task_index, result)`` pairs **in completion order**; the runner reassembles results by index, and
every task carries its own seed, so results never depend on the backend, the number of workers or the
completion order.

* ``serial`` — in this process, in task order.
* ``process`` — a local pool of processes (default: all cores). On Linux, when this process has no
  other Python thread as the backend is entered, the workers are forked from it then: they start in
  milliseconds with everything this process has imported, and nothing is imported again. Otherwise
  (a thread is running, or not Linux) the pool starts with ``forkserver`` where available
  (``spawn`` elsewhere), which is safe in a multi-threaded parent; as with any such pool, the main
  module must then be importable: a script file or ``python -m``, not code piped on standard input.
  Workers leave SIGINT and SIGTERM to the parent (which stops them when a run is interrupted) and
  die with it: a watchdog thread in each worker exits the worker when the parent process ends, even
  by SIGKILL (then a fork server and resource tracker exit too).
  It is never slower than serial by design: a ``forkserver`` pool is started only when the work
  left is worth its start-up (the first tasks run in this process and time the rest; a study too
  small to gain runs serially here, and the progress output says so), and while its workers start,
  tasks keep running here; small tasks travel to the workers in batches of about ``batch_seconds``
  each (one round trip per batch, not per task).
* ``dask`` — a ``dask.distributed`` cluster: connect to ``scheduler`` (``tcp://host:8786``), or start
  a local cluster when none is given. Tasks travel in batches, about four per worker thread, since
  each dask task costs milliseconds of CPU across the client, the scheduler and a worker. Needs the
  ``dask`` extra (``pip install "dpbandits[dask]"``).
"""

from __future__ import annotations

import contextlib
import logging
import math
import multiprocessing
import os
import select
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from types import TracebackType
from typing import Any, Protocol, Self

from dpbandits._core.errors import DependencyNotInstalledError, InvalidParameterError, StudyError
from dpbandits._core.extras import install_advice
from dpbandits._core.validation import check_int, check_one_of, check_positive_float
from dpbandits.algorithms.registry import BUILTIN_MODULES
from dpbandits.experiments.interrupts import interrupts_deferred

__all__ = [
    "BACKENDS",
    "START_METHODS",
    "Backend",
    "DaskBackend",
    "ProcessBackend",
    "SerialBackend",
    "WorkerLostError",
    "fork_is_safe",
    "make_backend",
]

BACKENDS: tuple[str, ...] = ("serial", "process", "dask")


class WorkerLostError(StudyError):
    """A worker (a process of the pool, a dask worker) died while it ran tasks: killed, out of memory.

    The tasks of the run are deterministic, so nothing is wrong with the run: the runner says so
    and how to continue (``--resume`` keeps every finished cell).
    """

FORKSERVER_PRELOAD: tuple[str, ...] = ("__main__", "dpbandits.experiments.runner", *BUILTIN_MODULES)
"""Modules the ``forkserver`` process imports once, so that each worker starts with them loaded: the
runner and every built-in algorithm family (``__main__`` is multiprocessing's default: without it
every worker re-imports the main script). When every task names the modules it needs (a ``modules``
attribute, as the runner's tasks do), the fork server imports those instead of every family."""


def _preload(fn: Callable[[Any], Any], tasks: Sequence[Any]) -> list[str]:
    """What the fork server imports: ``__main__``, ``fn``'s module and the tasks' modules, when they say them."""
    needed: dict[str, None] = dict.fromkeys(["__main__", fn.__module__])
    for task in tasks:
        modules = getattr(task, "modules", None)
        if modules is None:
            return list(FORKSERVER_PRELOAD)
        needed.update(dict.fromkeys(modules))
    return list(needed)


class Backend(Protocol):
    """What the runner needs from a backend (a context manager that maps tasks)."""

    name: str

    def __enter__(self) -> Self: ...

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None: ...

    def map_unordered(self, fn: Callable[[Any], Any], tasks: Sequence[Any],
                      notify: Callable[[str], None] | None = None) -> Iterator[tuple[int, Any]]:
        """Yield ``(index, fn(tasks[index]))`` for every task, in completion order (``notify``: one-line notes)."""
        ...

    def describe(self) -> dict[str, Any]:
        """Facts recorded in the manifest (backend name, workers, address)."""
        ...


class SerialBackend:
    """Run every task in this process, in order."""

    name = "serial"

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        return None

    def map_unordered(self, fn: Callable[[Any], Any], tasks: Sequence[Any],
                      notify: Callable[[str], None] | None = None) -> Iterator[tuple[int, Any]]:
        """Yield ``(index, fn(task))`` in task order."""
        for index, task in enumerate(tasks):
            yield index, fn(task)

    def describe(self) -> dict[str, Any]:
        """``{"backend": "serial", "workers": 1}``."""
        return {"backend": self.name, "workers": 1}


def _parent_has_exited(pid: int) -> None:
    """Block until process ``pid`` has exited (a pidfd on Linux, else polling twice a second)."""
    try:
        descriptor = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    except (AttributeError, OSError):  # not Linux >= 5.3
        while True:
            time.sleep(0.5)
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
            except PermissionError:  # exists, owned by someone else (cannot be our parent, but wait on)
                continue
    select.select([descriptor], [], [])  # readable once the process has exited
    os.close(descriptor)


def _watch_parent(pid: int) -> None:
    _parent_has_exited(pid)
    os._exit(1)  # ends the worker from this thread, whatever the main thread is doing


def _worker_initializer(parent_pid: int) -> None:
    """Set up a worker: interrupts are the parent's business, and the worker dies with the parent."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "SIGTERM"):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    threading.Thread(target=_watch_parent, args=(parent_pid,), name="dpbandits-parent-watchdog",
                     daemon=True).start()


def _kill_workers(pool: ProcessPoolExecutor) -> None:
    processes = getattr(pool, "_processes", None) or {}  # no public way before Python 3.14
    for process in list(processes.values()):
        if process.is_alive():
            process.kill()


START_METHODS: tuple[str, ...] = ("fork", "forkserver", "spawn")


def _start_method() -> str:
    """The start method of a pool started while other threads may run: ``forkserver``, else ``spawn``."""
    return "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"


def fork_is_safe() -> bool:
    """Whether worker processes can be forked from this process now: Linux, and no other Python thread.

    A fork copies only the calling thread; a lock another thread held at that moment stays held in
    the child forever, so a process with other Python threads is never forked (Python 3.12 warns
    about it). Threads that native libraries start for themselves are not seen here: OpenBLAS (the
    BLAS of NumPy's wheels) stops and restarts its pool around a fork (``pthread_atfork``); a process
    that has used a native thread pool that is not fork-safe (GNU OpenMP's, for one) should pass
    ``start_method="forkserver"`` to :class:`ProcessBackend`.
    """
    return (sys.platform == "linux" and "fork" in multiprocessing.get_all_start_methods()
            and threading.active_count() == 1)


def _ready() -> None:
    """A task that does nothing: submitted once per worker to have the pool start them all."""


DASK_BATCHES_PER_THREAD = 4
"""Batches per worker thread the dask backend cuts a run's tasks into: each dask task has a fixed cost
(scheduling, a round trip, bookkeeping on the scheduler and the worker) of a few milliseconds of CPU
in several processes, so tasks travel in batches; four per thread still balances the load when
tasks differ in length (a thread idles at most about a quarter of its share at the end)."""


def _batch_size(n_tasks: int, threads: int) -> int:
    """Tasks per batch so that ``n_tasks`` make about ``DASK_BATCHES_PER_THREAD`` batches per thread."""
    return max(1, -(-n_tasks // (DASK_BATCHES_PER_THREAD * max(1, threads))))


def _run_batch(fn: Callable[[Any], Any], tasks: Sequence[Any]) -> tuple[list[Any], float]:
    """Run a batch of tasks in a worker: their results, and the seconds the batch took."""
    started = time.perf_counter()
    results = [fn(task) for task in tasks]
    return results, time.perf_counter() - started


class ProcessBackend:
    """A local process pool, started only when it gains over running here.

    Parameters
    ----------
    workers : int, optional
        Number of processes (default: ``os.cpu_count()``).
    max_pending : int, optional
        Batches submitted ahead of completion (default ``4 × workers``), which bounds memory and
        lets a cell's results be written while later cells are still queued.
    batch_seconds : float, default 0.25
        Target duration of one batch of tasks sent to a worker: tasks shorter than this travel
        together, so that the round trips (pickling, queues) stay a small part of the work.
    startup_seconds : float, default 1.0
        The cost assumed for starting a ``forkserver`` or ``spawn`` pool (fork server, its imports,
        the workers; ``benchmarks/bench_runner.py`` measures it). Such a pool is started only when
        the work left, timed from the first tasks run here, exceeds ``startup_seconds``: tasks keep
        running here while the workers start, so with W seconds of work left and S of start-up the
        run takes S + (W − S)/w (w workers) instead of W, sooner exactly when W > S.
    start_method : {"fork", "forkserver", "spawn"}, optional
        How workers start. Default: ``fork`` when :func:`fork_is_safe` as the backend is entered
        (the workers are forked then, in milliseconds), else ``forkserver`` where available, else
        ``spawn``. ``fork`` given here is refused when it is not safe.

    Notes
    -----
    The runner enters the backend for each study; to run several studies on one pool of warm
    workers, enter it yourself around them (``with backend: run_study(a, ..., backend=backend)``):
    a nested ``with`` reuses the outer pool (a warm pool is used at once: one task runs here, to size the batches).
    Results never depend on where a task ran: every task carries its own seed.
    """

    name = "process"

    def __init__(self, workers: int | None = None, *, max_pending: int | None = None, batch_seconds: float = 0.25,
                 startup_seconds: float = 1.0, start_method: str | None = None) -> None:
        self.workers = check_int(workers, "workers", minimum=1) if workers is not None else os.cpu_count() or 1
        self.max_pending = (
            check_int(max_pending, "max_pending", minimum=1) if max_pending is not None else 4 * self.workers
        )
        self.batch_seconds = check_positive_float(batch_seconds, "batch_seconds")
        self.startup_seconds = check_positive_float(startup_seconds, "startup_seconds")
        if start_method is not None:
            check_one_of(start_method, "start_method", START_METHODS)
            if start_method not in multiprocessing.get_all_start_methods():
                raise InvalidParameterError(f"start_method {start_method!r} is not available on this platform")
        self.start_method = start_method
        self._forked = False  # whether the pool of this block was forked from this process
        self._pool: ProcessPoolExecutor | None = None
        self._starter: threading.Thread | None = None  # starts the pool while tasks run here
        self._starter_error: BaseException | None = None
        self._depth = 0
        self.ran_here = 0  # tasks of the last map run in this process (timing probe, or a study too small)

    def __enter__(self) -> Self:
        """Enter: fork the workers now if that is safe, else start the pool on the first batch that needs it.

        A nested ``with`` reuses the outer block's pool.
        """
        if self._depth == 0 and self._pool is None and self.workers > 1 and self._forks():
            self._fork_workers()
        self._depth += 1
        return self

    def _forks(self) -> bool:
        """Whether this block's workers are forked from this process (refuses a ``fork`` that is not safe)."""
        if self.start_method == "fork" and not fork_is_safe():
            raise InvalidParameterError("start_method 'fork' needs Linux and a process without other Python "
                                        "threads; use 'forkserver', or leave start_method unset")
        return self._would_fork()

    def _would_fork(self) -> bool:
        """Whether a pool started now would be forked: start method unset or ``fork``, several workers, safe now."""
        return self.start_method in (None, "fork") and self.workers > 1 and fork_is_safe()

    def _fork_workers(self) -> None:
        """Fork every worker now, from this single-threaded process (milliseconds, nothing re-imported).

        The pool launches all its workers on the first submission when it forks, before its own
        threads start (``concurrent.futures`` does so since Python 3.11), so no fork sees a thread.
        """
        with interrupts_deferred():  # never half-start a pool
            pool = ProcessPoolExecutor(max_workers=self.workers, mp_context=multiprocessing.get_context("fork"),
                                       initializer=_worker_initializer, initargs=(os.getpid(),))
            try:
                pool.submit(_ready)
            except BaseException:
                pool.shutdown(wait=True, cancel_futures=True)
                raise
        self._pool, self._forked = pool, True

    def _start_pool(self, preload: list[str] | None = None) -> ProcessPoolExecutor:
        if self._pool is None:
            context = multiprocessing.get_context(self.start_method or _start_method())
            if isinstance(context, multiprocessing.context.ForkServerContext):
                # The fork server imports the runner once; workers forked from it start with it loaded
                # (effective when the fork server starts, i.e. on the first pool of this process).
                context.set_forkserver_preload(preload or list(FORKSERVER_PRELOAD))
            with interrupts_deferred():  # never half-start a pool
                self._pool = ProcessPoolExecutor(max_workers=self.workers, mp_context=context,
                                                 initializer=_worker_initializer, initargs=(os.getpid(),))
        return self._pool

    def _start_workers(self, preload: list[str]) -> None:
        """Start the pool and its workers (run in a helper thread); an error is kept for the main thread."""
        try:
            pool = self._start_pool(preload)
            for future in [pool.submit(_ready) for _ in range(self.workers)]:
                future.result()
        except BaseException as exc:  # raised in the main thread by _join_starter
            self._starter_error = exc

    def _join_starter(self) -> None:
        if self._starter is not None:
            self._starter.join()
            self._starter = None
        if self._starter_error is not None:
            error, self._starter_error = self._starter_error, None
            raise error

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._depth -= 1
        if self._depth == 0:
            with contextlib.suppress(Exception):  # a failed start was raised already, or is moot now
                self._join_starter()
        if self._depth == 0 and self._pool is not None:
            if exc_type is not None:  # interrupted or failed: the tasks still running are not needed
                _kill_workers(self._pool)
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool, self._forked = None, False

    def map_unordered(self, fn: Callable[[Any], Any], tasks: Sequence[Any],
                      notify: Callable[[str], None] | None = None) -> Iterator[tuple[int, Any]]:
        """Yield ``(index, fn(task))`` as tasks finish (at most ``max_pending`` batches in flight).

        Without a warm pool, tasks first run here, one by one, while the work left (estimated from
        their times) is too small for the pool to gain; then the pool starts in a helper thread and
        tasks keep running here until its workers are up; the rest go to the pool in batches of
        about ``batch_seconds``. With a warm pool (forked as the backend was entered, or an outer
        block's), the first task runs here to time the batches and the rest go to the pool.
        ``notify`` receives a line saying which was chosen.
        """
        if self._depth == 0:
            raise InvalidParameterError("ProcessBackend must be used inside a `with` block")
        self.ran_here = 0
        next_index, per_task = 0, 0.0
        warm = self._pool is not None
        if warm and tasks:  # the first task runs here to size the batches
            started = time.perf_counter()
            yield 0, fn(tasks[0])
            next_index, per_task, self.ran_here = 1, time.perf_counter() - started, 1
            if len(tasks) == 1:
                return
        if self._pool is None:
            threshold = self.startup_seconds if self.workers > 1 else math.inf  # W > S (see the class docstring)
            started = time.perf_counter()
            while next_index < len(tasks):
                yield next_index, fn(tasks[next_index])
                next_index += 1
                per_task = (time.perf_counter() - started) / next_index
                if per_task * (len(tasks) - next_index) > threshold:
                    break
            self.ran_here = next_index
            if next_index == len(tasks):
                if notify is not None and tasks:
                    notify(f"process backend: ran the {len(tasks)} tasks in this process (about "
                           f"{per_task * len(tasks):.1f} s of work: starting {self.workers} worker processes "
                           f"would not have finished sooner)")
                return
            # start the workers in the background and keep running tasks here until they are up
            # (the fork server's imports and the workers' start-up overlap that work)
            starter = threading.Thread(target=self._start_workers, args=(_preload(fn, tasks[next_index:]),),
                                       name="dpbandits-pool-start", daemon=True)
            self._starter = starter
            starter.start()
            while next_index < len(tasks) and starter.is_alive():
                yield next_index, fn(tasks[next_index])
                next_index += 1
            self._join_starter()
            per_task = (time.perf_counter() - started) / next_index
            self.ran_here = next_index
            if next_index == len(tasks):
                if notify is not None:
                    notify(f"process backend: ran the {len(tasks)} tasks in this process while its "
                           f"{self.workers} worker processes started (none was left for them)")
                return
        batch = max(1, min(round(self.batch_seconds / per_task) if per_task > 0 else 1,
                           -(-(len(tasks) - next_index) // (2 * self.workers))))  # >= 2 batches per worker
        if notify is not None:
            notify(f"process backend: {len(tasks) - next_index} tasks on {self.workers} worker processes"
                   + (f", in batches of {batch}" if batch > 1 else "")
                   + (" (1 run here, to time the tasks)" if warm
                      else f" ({next_index} run here, while the workers started)" if next_index else ""))
        pool = self._start_pool()
        pending: dict[Future[Any], int] = {}
        try:
            while next_index < len(tasks) or pending:
                while next_index < len(tasks) and len(pending) < self.max_pending:
                    with interrupts_deferred():  # a submit may start a worker: never half-start one
                        pending[pool.submit(_run_batch, fn, tasks[next_index:next_index + batch])] = next_index
                    next_index += batch
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    first = pending.pop(future)
                    try:
                        results, _ = future.result()
                    except BrokenProcessPool:
                        raise WorkerLostError("a worker process died (killed, or out of memory?)") from None
                    for offset, result in enumerate(results):
                        yield first + offset, result
        finally:  # stopped early (an error, an interrupt): queued tasks must not run on
            for future in pending:
                future.cancel()

    def describe(self) -> dict[str, Any]:
        """Backend name, worker count and start method (before ``with``: the one entering would choose)."""
        if self._forked or (self._pool is None and self._would_fork()):
            method = "fork"
        else:
            method = self.start_method if self.start_method not in (None, "fork") else _start_method()
        return {"backend": self.name, "workers": self.workers, "start_method": method}


@contextlib.contextmanager
def _without_dasks_trim_threshold(dask: Any) -> Iterator[None]:
    """Spawn workers without the MALLOC_TRIM_THRESHOLD_ an earlier dask cluster left in this process.

    A dask nanny writes its pre-spawn variables into its own process's environment (the caller's, for a
    local cluster), so one earlier cluster in this process -- the user's, or a run with other settings
    -- would hand the value to our workers too. A value equal to dask's own setting is taken out while
    the workers spawn and put back after; a different value is the user's, and is kept.
    """
    name = "MALLOC_TRIM_THRESHOLD_"
    dasks = dask.config.get(f"distributed.nanny.pre-spawn-environ.{name}", None)
    inherited = os.environ.get(name)
    left_by_dask = inherited is not None and dasks is not None and inherited == str(dasks)
    if left_by_dask:
        del os.environ[name]
    try:
        yield
    finally:
        if left_by_dask and inherited is not None:
            os.environ[name] = inherited


class DaskBackend:
    """A ``dask.distributed`` cluster.

    Parameters
    ----------
    scheduler : str, optional
        Address of a running scheduler (``tcp://host:8786``). Without it a local cluster is started
        (``workers`` workers of one thread each) and closed at the end.
    workers : int, optional
        Workers of the local cluster (default: ``os.cpu_count()``); ignored with ``scheduler``.
    processes : bool, default True
        Local cluster with worker processes (True) or threads in this process (False, quick to start).

    Notes
    -----
    The runner enters the backend for each study; to run several studies on one cluster, enter it
    yourself around them (``with backend: run_study(a, ..., backend=backend)``): a nested ``with``
    reuses the outer connection (and the outer block closes it).

    Raises
    ------
    DependencyNotInstalledError
        If ``dask.distributed`` is not installed (the ``dask`` extra).
    """

    name = "dask"

    def __init__(self, scheduler: str | None = None, workers: int | None = None, *, processes: bool = True) -> None:
        self.scheduler = scheduler
        self.workers = check_int(workers, "workers", minimum=1) if workers is not None else os.cpu_count() or 1
        self.processes = bool(processes)
        self._client: Any = None
        self._cluster: Any = None
        self._depth = 0

    def __enter__(self) -> Self:
        """Connect (or start the local cluster); a nested ``with`` reuses the outer connection."""
        self._depth += 1
        if self._client is not None:
            return self
        try:
            return self._connect()
        except BaseException:
            self._depth -= 1
            raise

    def _connect(self) -> Self:
        try:
            from distributed import Client, LocalCluster
        except ImportError as exc:
            raise DependencyNotInstalledError(
                f"the dask backend needs dask.distributed: {install_advice('dask')}"
            ) from exc
        if self.scheduler is not None:
            try:
                self._client = Client(self.scheduler, timeout="10s")
            except (OSError, ValueError, TypeError) as exc:  # unreachable, or not an address at all
                raise InvalidParameterError(
                    f"scheduler must be the address of a running dask scheduler; got {self.scheduler!r} ({exc})"
                ) from None
        else:
            import dask

            # dask sets MALLOC_TRIM_THRESHOLD_ in its workers, so that a long-lived worker gives memory
            # back; it also fixes glibc's mmap threshold, so that every array over 128 KiB is mapped
            # and unmapped anew (on Figure 1: 2.2 s of system time instead of 0.5 s, and about a
            # quarter more CPU in all). A local cluster lives for one run: its workers keep glibc's default.
            # nor does it need the workers' statistical profiler (a stack sample every 10 ms in every
            # worker, for a dashboard we do not start)
            with _without_dasks_trim_threshold(dask), \
                    dask.config.set({"distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None,
                                     "distributed.worker.profile.enabled": False}):
                self._cluster = LocalCluster(
                    n_workers=self.workers,
                    threads_per_worker=1,
                    processes=self.processes,
                    dashboard_address=None,
                    silence_logs=logging.CRITICAL,  # a killed worker is reported in one line, not dask's tracebacks
                )
            self._client = Client(self._cluster)
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._depth -= 1
        if self._depth > 0:  # an inner block: the outer one closes
            return
        if self._client is not None:
            self._client.close()
            self._client = None
        if self._cluster is not None:
            self._cluster.close()
            self._cluster = None

    def map_unordered(self, fn: Callable[[Any], Any], tasks: Sequence[Any],
                      notify: Callable[[str], None] | None = None) -> Iterator[tuple[int, Any]]:
        """Submit the tasks in batches and yield ``(index, result)`` as the batches complete.

        The tasks are cut into about ``DASK_BATCHES_PER_THREAD`` batches per worker thread (the
        threads of the cluster when the run starts), each one dask task; ``notify`` receives a line
        giving the batch size when batches hold more than one task.
        """
        from distributed import as_completed
        from distributed.comm.core import CommClosedError
        from distributed.scheduler import KilledWorker

        if self._client is None:
            raise InvalidParameterError("DaskBackend must be used inside a `with` block")
        size = _batch_size(len(tasks), self._threads())
        if notify is not None and size > 1:
            notify(f"dask backend: {len(tasks)} tasks in batches of {size}")
        futures = [self._client.submit(_run_batch, fn, list(tasks[first:first + size]), pure=False)
                   for first in range(0, len(tasks), size)]
        first_of = {future.key: number * size for number, future in enumerate(futures)}
        try:
            for future in as_completed(futures):
                try:
                    results, _ = future.result()
                except KilledWorker:
                    raise WorkerLostError("a dask worker died (killed, or out of memory?) running a task "
                                          "of this run") from None
                except CommClosedError:
                    raise WorkerLostError("the connection to the dask scheduler was lost") from None
                for offset, result in enumerate(results):
                    yield first_of[future.key] + offset, result
        finally:
            self._client.cancel(futures)

    def _threads(self) -> int:
        """Threads of the cluster's workers now (a local cluster's are known; a remote one is asked)."""
        if self._cluster is not None:
            return self.workers
        try:
            return max(1, sum(int(n) for n in self._client.nthreads().values()))
        except Exception:  # an unusual scheduler: assume one thread (batches of one task, as before)
            return 1

    def describe(self) -> dict[str, Any]:
        """Backend name, scheduler address (or local cluster) and workers."""
        return {"backend": self.name, "scheduler": self.scheduler or "local", "workers": self.workers}


def make_backend(name: str, *, workers: int | None = None, scheduler: str | None = None) -> Backend:
    """Build a backend by name (``serial``, ``process`` or ``dask``).

    Raises
    ------
    InvalidParameterError
        On an unknown name, or ``scheduler`` given to a backend other than ``dask``.
    """
    check_one_of(name, "backend", BACKENDS)
    if scheduler is not None and name != "dask":
        raise InvalidParameterError(f"scheduler is only used by the dask backend; got backend {name!r}")
    if name == "serial":
        return SerialBackend()
    if name == "process":
        return ProcessBackend(workers)
    return DaskBackend(scheduler, workers)
