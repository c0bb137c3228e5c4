"""Serialising the writers of one experiment, without making experiments wait for each other.

Three layers:

* **In a server process**, the requests of one experiment run one at a time
  (:class:`ExperimentLocks`): its agent lives in memory and is not shared between threads. The
  computation of a request (validating feedback, applying it, serialising the new state; building,
  loading or sampling in a child process, see :mod:`dpbandits.serve.workers`) happens under that
  lock only, so a slow experiment delays nobody else.
* **The commit** of what a request computed is a short job of the process's
  :class:`GroupCommitter`: one thread, jobs in arrival order, many jobs per transaction (one commit,
  one fsync, for every job queued meanwhile). Jobs only write rows; no CPU-heavy work runs there.
* **Between processes** (``dpbandits serve --workers N``, several hosts on one PostgreSQL), each
  job checks that the experiment's stored ``version`` is the one its computation started from
  (compare-and-set; an ask whose agent stands on a committed stored state checks that state's
  step count instead, see :func:`~dpbandits.serve.leases.pick_step`), with the row locked: PostgreSQL ``SELECT ... FOR UPDATE`` / ``UPDATE ... WHERE
  version = ...``; SQLite transactions start with ``BEGIN IMMEDIATE``, which takes the database's
  write lock. If another process wrote first the job fails with :class:`~dpbandits.serve.errors.Retry`
  and the service recomputes the request from the stored state (nothing of the stale computation
  left the process). Jobs of a batch take row locks in the order of their keys, so two processes'
  batches never deadlock.

Everything a job changes — the agent's state, the feedback row, the lease, the ledger row — is
written in that transaction, and its result is handed back only after the commit: nothing
acknowledged or released (no action either, which may depend on a noisy release) that the store
does not hold.
"""

from __future__ import annotations

import queue
import secrets
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from typing import Any, TypeVar

from sqlalchemy import Connection, Engine, bindparam, select, update

from dpbandits.serve.errors import NotFound, Retry
from dpbandits.serve.storage import experiments, is_sqlite

__all__ = [
    "ATTEMPTS",
    "ROW_WITHOUT_STATE",
    "SELECT_ROW",
    "ExperimentLocks",
    "GroupCommitter",
    "backoff",
    "compare_and_set",
    "done_future",
    "lock_experiment_row",
    "lock_version",
    "retrying",
    "then",
    "write_transaction",
]

T = TypeVar("T")


class GroupCommitter:
    """Runs the service's write jobs in one thread, one after the other, many per transaction.

    ``submit(key, work)`` queues ``work(connection)``; the thread takes every queued job (up to
    ``max_batch``), runs them in the order of their keys (jobs of one key in arrival order) inside
    one write transaction, commits once, and only then completes the
    jobs' futures: one commit (one fsync) acknowledges many tells, and no job's result — an
    acknowledgement, a handed-out action, a sample — leaves the process before what it depends on is
    committed. A job raises :class:`~dpbandits.serve.errors.Retry` only from its version check,
    before it writes anything: it then fails alone and the batch goes on (the common failure when
    several server processes share experiments). If a job raises anything else, the transaction is
    rolled back and the batch run again with each job in a savepoint (the job that raises is rolled
    back alone and gets its exception; the others commit): a job must therefore be a function of
    the store only, safe to run twice after a rollback. If the commit fails, every job of the batch fails and ``on_abort`` gets their keys
    (the service forgets those agents and reloads them from the store).

    Parameters
    ----------
    engine : sqlalchemy.Engine
    on_abort : callable
        ``on_abort(keys)`` after a failed commit.
    max_batch : int, default 256
    """

    def __init__(self, engine: Engine, *, on_abort: Callable[[set[str]], None], max_batch: int = 256) -> None:
        self.engine = engine
        self._on_abort = on_abort
        self._max_batch = max_batch
        self._queue: queue.SimpleQueue[tuple[str, Callable[[Connection], Any], Future[Any]]] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="dpbandits-writer", daemon=True)
        self._thread.start()

    def submit(self, key: str, work: Callable[[Connection], T]) -> Future[T]:
        """Queue ``work`` (about experiment ``key``); its future completes after its batch committed."""
        future: Future[T] = Future()
        self._queue.put((key, work, future))
        return future

    def _run(self) -> None:
        while True:
            jobs = [self._queue.get()]
            while len(jobs) < self._max_batch:
                try:
                    jobs.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            self._batch(jobs)

    def _batch(self, jobs: list[tuple[str, Callable[[Connection], Any], Future[Any]]]) -> None:
        jobs = sorted(jobs, key=lambda job: job[0])  # stable: one key's jobs keep their order
        failed: list[Exception] = []
        outcomes: list[tuple[Future[Any], bool, Any]] = []
        try:
            # the common case: no job fails, and the batch needs no savepoints (each costs two statements)
            with write_transaction(self.engine) as connection:
                for _key, work, future in jobs:
                    try:
                        outcomes.append((future, True, work(connection)))
                    except Retry as exc:  # a version check failed before the job wrote anything: it fails alone
                        outcomes.append((future, False, exc))
                    except Exception as exc:
                        failed.append(exc)
                        raise
        except Exception as exc:
            if not failed:  # the commit itself failed
                self._abort(jobs, exc)
                return
            if len(jobs) == 1:
                outcomes = [(jobs[0][2], False, failed[0])]
            else:  # again, each job in a savepoint: a job that fails is rolled back alone
                try:
                    outcomes = self._isolated(jobs)
                except Exception as exc:
                    self._abort(jobs, exc)
                    return
        for future, succeeded, value in outcomes:
            if succeeded:
                future.set_result(value)
            else:
                future.set_exception(value)

    def _abort(self, jobs: list[tuple[str, Callable[[Connection], Any], Future[Any]]], exc: Exception) -> None:
        """A commit failed: every job of the batch fails with ``exc``."""
        self._on_abort({key for key, _work, _future in jobs})
        for _key, _work, future in jobs:
            future.set_exception(exc)

    def _isolated(self, jobs: list[tuple[str, Callable[[Connection], Any], Future[Any]]]
                  ) -> list[tuple[Future[Any], bool, Any]]:
        """Run ``jobs`` in one transaction, each in a savepoint; their outcomes (a failed commit raises)."""
        outcomes: list[tuple[Future[Any], bool, Any]] = []
        with write_transaction(self.engine) as connection:
            for _key, work, future in jobs:
                try:
                    with connection.begin_nested():  # this job's statements alone roll back on error
                        outcomes.append((future, True, work(connection)))
                except Exception as exc:
                    outcomes.append((future, False, exc))
        return outcomes


ATTEMPTS = 8
"""How often a request that lost a race with another server process is recomputed before a 503."""


def backoff(attempt: int) -> float:
    """Seconds to wait before attempt ``attempt + 1``: random and growing, so racing processes desynchronise."""
    return secrets.randbelow(1001) / 1000 * 0.002 * 2 ** min(attempt, 6)


U = TypeVar("U")


def then(future: Future[T], function: Callable[[T], U]) -> Future[U]:
    """A future of ``function(future's result)`` (an exception of either is the new future's)."""
    chained: Future[U] = Future()

    def done(source: Future[T]) -> None:
        try:
            chained.set_result(function(source.result()))
        except BaseException as exc:
            chained.set_exception(exc)

    future.add_done_callback(done)
    return chained


def done_future(value: T) -> Future[T]:
    """A future that already holds ``value``."""
    future: Future[T] = Future()
    future.set_result(value)
    return future


def retrying(request: Callable[[], Future[T]]) -> T:
    """``request().result()``, recomputed while it fails with ``Retry`` (at most :data:`ATTEMPTS` times)."""
    for attempt in range(ATTEMPTS):
        try:
            return request().result()
        except Retry:
            if attempt == ATTEMPTS - 1:
                raise
            time.sleep(backoff(attempt))
    raise AssertionError("unreachable")


_SQLITE_WRITERS: weakref.WeakKeyDictionary[Engine, threading.Lock] = weakref.WeakKeyDictionary()
_SQLITE_GUARD = threading.Lock()


def _sqlite_writer_lock(engine: Engine) -> threading.Lock:
    with _SQLITE_GUARD:
        lock = _SQLITE_WRITERS.get(engine)
        if lock is None:
            lock = _SQLITE_WRITERS[engine] = threading.Lock()
        return lock


@contextmanager
def write_transaction(engine: Engine) -> Iterator[Connection]:
    """A transaction that commits on success and rolls back on any exception (BEGIN IMMEDIATE on SQLite)."""
    if not is_sqlite(engine):
        with engine.connect() as connection, connection.begin():
            yield connection
        return
    with _sqlite_writer_lock(engine), engine.connect() as connection:
        connection = connection.execution_options(sqlite_immediate=True)
        with connection.begin():
            yield connection


ROW_WITHOUT_STATE = tuple(column for column in experiments.c if column.name != "state")
"""The columns of an experiment's row but its (possibly large) state: what requests read."""

SELECT_ROW = select(*ROW_WITHOUT_STATE).where(experiments.c.id == bindparam("experiment_id"))
"""The row without its state (built once: SQLAlchemy then reuses its compiled form and cache key)."""
_SELECT_ROW_FOR_UPDATE = SELECT_ROW.with_for_update()


class ExperimentLocks:
    """One lock per experiment id, created on demand and dropped when nobody holds or waits for it."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._locks: dict[str, tuple[threading.Lock, int]] = {}

    @contextmanager
    def hold(self, key: str) -> Iterator[None]:
        """Hold ``key``'s lock for the block."""
        with self._guard:
            lock, users = self._locks.get(key, (None, 0))
            if lock is None:
                lock = threading.Lock()
            self._locks[key] = (lock, users + 1)
        try:
            with lock:
                yield
        finally:
            with self._guard:
                lock, users = self._locks[key]
                if users == 1:
                    del self._locks[key]
                else:
                    self._locks[key] = (lock, users - 1)


_SELECT_VERSION = select(experiments.c.version).where(experiments.c.id == bindparam("experiment_id"))
_SELECT_VERSION_FOR_UPDATE = _SELECT_VERSION.with_for_update()


def lock_version(connection: Connection, experiment_id: str, expected: int) -> None:
    """Lock the experiment's row for the transaction and check its version is ``expected``.

    Raises
    ------
    Retry
        If another writer changed the experiment since (or it does not exist any more).
    """
    query = _SELECT_VERSION if is_sqlite(connection.engine) else _SELECT_VERSION_FOR_UPDATE
    if connection.execute(query, {"experiment_id": experiment_id}).scalar() != expected:
        raise Retry("the experiment changed in another server process; retry")


def compare_and_set(connection: Connection, experiment_id: str, expected: int, **values: Any) -> None:
    """``UPDATE experiments SET values, version = expected + 1 WHERE id AND version = expected``.

    Raises
    ------
    Retry
        If the stored version is not ``expected`` (another writer came first): nothing is written.
    """
    result = connection.execute(update(experiments)
                                .where(experiments.c.id == experiment_id, experiments.c.version == expected)
                                .values(version=expected + 1, **values))
    if result.rowcount != 1:
        raise Retry("the experiment changed in another server process; retry")


def lock_experiment_row(connection: Connection, experiment_id: str) -> Any:
    """The experiment's row (all but the state), locked until the transaction ends.

    PostgreSQL: ``FOR UPDATE``; SQLite: nothing more, its transaction already holds the write lock.

    Raises
    ------
    NotFound
        If there is no such experiment.
    """
    query = SELECT_ROW if is_sqlite(connection.engine) else _SELECT_ROW_FOR_UPDATE
    row = connection.execute(query, {"experiment_id": experiment_id}).mappings().first()
    if row is None:
        raise NotFound(f"experiment {experiment_id!r} does not exist for this API key")
    return row
