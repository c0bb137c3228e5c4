"""Serialising writers of one experiment: a lock per experiment in the process, a row lock in the store.

A writer (``tell``, ``close``, ``sample``, ``upload``) holds the experiment's in-process lock and,
inside one database transaction, the experiment's row:

* PostgreSQL: ``SELECT ... FOR UPDATE`` on the row, so writers in other server processes wait too;
* SQLite: the transaction starts with ``BEGIN IMMEDIATE``, which takes the database's write lock
  (one writer at a time across processes; readers go on in WAL mode). Within a process, writers
  queue on a lock of their own first: SQLite's busy handler polls with sleeps of up to 100 ms, which
  under contention from many threads would cost far more than waiting in line.

Everything a writer changes — the agent's state, the feedback row, the ledger row — is written in
that transaction, and the response is built only after it committed: no lost update, and nothing
acknowledged or released that the store does not hold.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Connection, Engine, bindparam, select

from dpbandits.serve.errors import NotFound
from dpbandits.serve.storage import experiments, is_sqlite

__all__ = ["ROW_WITHOUT_STATE", "SELECT_ROW", "ExperimentLocks", "lock_experiment_row", "write_transaction"]


class ExperimentLocks:
    """One re-entrant lock per experiment id, created on first use."""

    def __init__(self) -> None:
        self._locks: dict[str, threading.RLock] = {}
        self._guard = threading.Lock()

    def __call__(self, experiment_id: str) -> threading.RLock:
        """The lock of ``experiment_id``."""
        with self._guard:
            lock = self._locks.get(experiment_id)
            if lock is None:
                lock = self._locks[experiment_id] = threading.RLock()
            return lock


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
