"""Serialising writers: one writer thread per process with group commit, a row lock in the store.

Every operation that changes or hands out an experiment's state (``ask``, ``tell``, ``close``,
``sample``, ``upload``, ``create``) runs as a job of the process's :class:`GroupCommitter`: one
thread, jobs in arrival order (so no two jobs of an experiment interleave: no lost update), many
jobs per transaction. Inside the transaction a job holds the experiment's row:

* PostgreSQL: ``SELECT ... FOR UPDATE`` on the row, so writers in other server processes wait too;
* SQLite: the transaction starts with ``BEGIN IMMEDIATE``, which takes the database's write lock
  (one writer at a time across processes; readers go on in WAL mode). Within a process, writers
  queue on a lock of their own first: SQLite's busy handler polls with sleeps of up to 100 ms, which
  under contention from many threads would cost far more than waiting in line.

Everything a job changes — the agent's state, the feedback row, the ledger row — is written in
that transaction, and its result is handed back only after the commit: nothing acknowledged or
released (no action either, which may depend on a noisy release) that the store does not hold.
"""

from __future__ import annotations

import queue
import threading
import weakref
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from typing import Any, TypeVar

from sqlalchemy import Connection, Engine, bindparam, select

from dpbandits.serve.errors import NotFound
from dpbandits.serve.storage import experiments, is_sqlite

__all__ = ["ROW_WITHOUT_STATE", "SELECT_ROW", "GroupCommitter", "lock_experiment_row", "write_transaction"]

T = TypeVar("T")


class GroupCommitter:
    """Runs the service's write jobs in one thread, one after the other, many per transaction.

    ``submit(key, work)`` queues ``work(connection)``; the thread takes every queued job (up to
    ``max_batch``), runs them in order inside one write transaction, each in a savepoint (a job that
    raises is rolled back alone and gets its exception), commits once, and only then completes the
    jobs' futures: one commit (one fsync) acknowledges many tells, and no job's result — an
    acknowledgement, a handed-out action, a sample — leaves the process before what it depends on is
    committed. If the commit fails, every job of the batch fails and ``on_abort`` gets their keys
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
        outcomes: list[tuple[Future[Any], bool, Any]] = []
        try:
            with write_transaction(self.engine) as connection:
                for _key, work, future in jobs:
                    try:
                        with connection.begin_nested():  # this job's statements alone roll back on error
                            outcomes.append((future, True, work(connection)))
                    except Exception as exc:
                        outcomes.append((future, False, exc))
        except Exception as exc:
            self._on_abort({key for key, _work, _future in jobs})
            for _key, _work, future in jobs:
                future.set_exception(exc)
            return
        for future, succeeded, value in outcomes:
            if succeeded:
                future.set_result(value)
            else:
                future.set_exception(value)


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
