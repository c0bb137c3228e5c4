"""Leases of handed-out steps, kept in the store so that every server process shares them.

``ask`` hands out a step of the agent's schedule (the steps ``applied, ..., applied + size - 1``
known without further feedback) on a *lease*: a step never handed out if there is one, else the
least recently handed-out step that is not told and whose lease expired; else nothing (every
scheduled step is out on its lease). The choice and the lease row are written in the write
transaction of the ask, with the experiment's row locked (PostgreSQL ``FOR UPDATE``; SQLite's
write lock), so two server processes — ``dpbandits serve --workers N``, or several hosts on one
PostgreSQL — never hand out the same step twice within its lease.

Every step below the largest leased one was handed out at least once (steps are handed out in
order the first time), so the next fresh step is ``max(applied, largest leased + 1)``.

Lease times are read from the **database's clock** (:data:`DB_NOW`, in the statement that locks the
experiment's row), never from the clock of the host that runs the server process: several hosts
behind one PostgreSQL agree on when a lease expires even if their own clocks disagree. (With
SQLite, every server process runs on the database's host.)
"""

from __future__ import annotations

from sqlalchemy import Connection, Float, and_, bindparam, cast, delete, func, insert, literal, select, update
from sqlalchemy.sql.elements import ColumnElement

from dpbandits.serve.errors import Retry
from dpbandits.serve.storage import experiments, feedback, is_sqlite, leases

__all__ = ["DB_NOW", "forget_applied", "pick_step"]

DB_NOW: dict[str, ColumnElement[float]] = {
    # seconds since the Unix epoch, as the database's clock has them (PostgreSQL: the transaction's start)
    "postgresql": cast(func.extract("epoch", func.now()), Float),
    "sqlite": (func.julianday("now") - literal(2440587.5)) * literal(86400.0),
}
"""The database's clock, per dialect: what lease times are read from."""

_LARGEST = select(func.max(leases.c.step)).where(leases.c.experiment_id == bindparam("experiment_id"))
_ROW = (experiments.c.version, experiments.c.applied, experiments.c.closed)
# SQLite (its transaction holds the database's write lock): one statement, with the largest leased step
_CHECK_SQLITE = select(*_ROW, DB_NOW["sqlite"], _LARGEST.scalar_subquery()).where(
    experiments.c.id == bindparam("experiment_id"))
# PostgreSQL: the row locked first; the largest leased step in a statement of its own, whose snapshot (READ
# COMMITTED) holds the leases another process committed while this one waited for the lock
_CHECK_POSTGRES = select(*_ROW, DB_NOW["postgresql"]).where(
    experiments.c.id == bindparam("experiment_id")).with_for_update(of=experiments)
_TOLD = select(feedback.c.step).where(feedback.c.experiment_id == bindparam("experiment_id"),
                                      feedback.c.step >= bindparam("applied"))
_EXPIRED = (select(leases.c.step)
            .where(leases.c.experiment_id == bindparam("experiment_id"), leases.c.step >= bindparam("applied"),
                   leases.c.step < bindparam("end"), leases.c.issued_at <= bindparam("expired_before"),
                   leases.c.step.not_in(_TOLD))
            .order_by(leases.c.issued_at, leases.c.step).limit(1))
_INSERT = insert(leases)
_RENEW = (update(leases).where(and_(leases.c.experiment_id == bindparam("leased_experiment"),
                                    leases.c.step == bindparam("leased_step")))
          .values(issued_at=bindparam("now")))
_FORGET = delete(leases).where(leases.c.experiment_id == bindparam("leased_experiment"),
                               leases.c.step < bindparam("applied"))


def pick_step(connection: Connection, experiment_id: str, applied: int, size: int, *, version: int,
              lease: float, snapshot: int | None = None) -> int | None:
    """Lease a step of ``[applied, applied + size)`` (see the module docstring); None if every one is out.

    Call it in ``connection``'s write transaction: it locks the experiment's row (PostgreSQL
    ``FOR UPDATE``; SQLite's transaction holds the write lock) and checks its stored version is
    ``version``, the one the schedule was computed from. With ``snapshot`` (the step count of a stored
    state the caller's agent is built on, known to be committed), it checks instead that the stored
    state is still that one and the experiment not closed: tells of other processes inside a window
    do not change the window's actions (a tell that ends a window stores a new state, with a new
    step count), and steps told meanwhile are never leased (they have a feedback row, or a lease
    above ``applied``). Times are the database's (:data:`DB_NOW`).

    Raises
    ------
    Retry
        If another writer changed the experiment since (or it does not exist any more).
    """
    sqlite = is_sqlite(connection.engine)
    found = connection.execute(_CHECK_SQLITE if sqlite else _CHECK_POSTGRES, {"experiment_id": experiment_id}).first()
    if found is None or (found[0] != version if snapshot is None else found[1] != snapshot or found[2]):
        raise Retry("the experiment changed in another server process; retry")
    now = float(found[3])
    largest = found[4] if sqlite else connection.execute(_LARGEST, {"experiment_id": experiment_id}).scalar()
    fresh = applied if largest is None else max(applied, int(largest) + 1)
    if fresh < applied + size:
        connection.execute(_INSERT, {"experiment_id": experiment_id, "step": fresh, "issued_at": now})
        return fresh
    expired = connection.execute(_EXPIRED, {"experiment_id": experiment_id, "applied": applied,
                                            "end": applied + size, "expired_before": now - lease}).scalar()
    if expired is None:
        return None
    connection.execute(_RENEW, {"leased_experiment": experiment_id, "leased_step": int(expired), "now": now})
    return int(expired)


def forget_applied(connection: Connection, experiment_id: str, applied: int) -> None:
    """Delete the leases of applied steps (they are never handed out again)."""
    connection.execute(_FORGET, {"leased_experiment": experiment_id, "applied": applied})
