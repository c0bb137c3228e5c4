"""Which store failures a retry can fix: the service answers those with 503, and no other store failure.

(Its only other 503 is a request forwarded to the process that serves its experiment, which went
away before answering: :mod:`dpbandits.serve.affinity`.)

A transaction the store refused for a reason of the moment left nothing committed, so the client
may send the same request again (a tell is idempotent by its ticket):

* the connection was lost or terminated (PostgreSQL SQLSTATE class ``08``, ``57`` operator
  intervention such as ``pg_terminate_backend`` or a statement timeout, a psycopg
  ``OperationalError`` without a SQLSTATE, a connection SQLAlchemy invalidated, a
  ``PendingRollbackError`` left on a connection by such a failure, a pool checkout timeout);
* the transaction lost a race (class ``40``: serialization failure, deadlock; ``55P03`` lock not
  available; SQLite's "database is locked" / "busy" after its busy timeout);
* the server ran short of resources (class ``53``).

Everything else is not retryable: a value the store cannot hold (PostgreSQL refuses a NUL character
in text, SQLSTATE class ``22``; SQLAlchemy's ``DataError``) is the request's fault (400), and an
unexpected failure is a bug (500). Sending a client into an endless retry loop for those would be
worse than an honest error.
"""

from __future__ import annotations

import sqlite3

from sqlalchemy import exc as sa

from dpbandits._core.errors import LedgerStorageError

__all__ = ["is_bad_value", "is_retryable"]

_RETRYABLE_CLASSES = ("08", "40", "53", "57")
_RETRYABLE_STATES = ("55P03",)


def _sqlstate(error: BaseException | None) -> str | None:
    state = getattr(error, "sqlstate", None) or getattr(error, "pgcode", None)
    return state if isinstance(state, str) else None


def is_retryable(exc: BaseException) -> bool:
    """Whether ``exc`` is a store failure a retry of the same request can fix (see the module docstring)."""
    if isinstance(exc, LedgerStorageError):  # the durable ledger's one-line error over a database failure
        return exc.database_error is not None and is_retryable(exc.database_error)
    if isinstance(exc, sa.PendingRollbackError | sa.DisconnectionError | sa.TimeoutError):
        return True
    if not isinstance(exc, sa.DBAPIError):
        return False
    if exc.connection_invalidated:
        return True
    original = exc.orig
    state = _sqlstate(original)
    if state is not None:
        return state[:2] in _RETRYABLE_CLASSES or state in _RETRYABLE_STATES
    if isinstance(original, sqlite3.OperationalError):
        text = str(original).lower()
        return "locked" in text or "busy" in text
    # psycopg's OperationalError without a SQLSTATE: the connection failed (closed, reset, timed out)
    return isinstance(exc, sa.OperationalError) and type(original).__module__.startswith("psycopg")


def is_bad_value(exc: BaseException) -> bool:
    """Whether ``exc`` says a value of the request cannot be stored (a 400, not a retry)."""
    if isinstance(exc, sa.DataError):
        return True
    state = _sqlstate(getattr(exc, "orig", None))
    return state is not None and state.startswith("22")
