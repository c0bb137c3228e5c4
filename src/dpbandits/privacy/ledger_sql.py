"""The durable ledger's SQL schema and engine configuration (SQLAlchemy Core).

The three tables of a ledger (:data:`LEDGER_METADATA`), their creation in an application's own
database (:func:`create_ledger_tables`), the engine for a ledger's location (:func:`ledger_engine`:
a SQLite file opened without ever creating it behind an open, or PostgreSQL through psycopg), the
SQLite settings a shared ledger needs (:func:`configure_sqlite`), and database failures in one line.
:class:`~dpbandits.privacy.ledger_store.DurableAccountant` keeps the ledger on them.
"""

from __future__ import annotations

import sqlite3
import time
import weakref
from pathlib import Path
from typing import Any
from urllib.parse import quote

from sqlalchemy import (
    BigInteger,
    Column,
    Connection,
    Double,
    Engine,
    ForeignKey,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    create_engine,
    event,
    make_url,
)
from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError

from dpbandits._core.errors import (
    InvalidParameterError,
    LedgerNotFoundError,
    LedgerStorageError,
)
from dpbandits._core.validation import check_one_of

__all__ = [
    "LEDGER_METADATA",
    "SQLITE_JOURNAL_MODES",
    "SQLITE_SYNCHRONOUS",
    "configure_sqlite",
    "create_ledger_tables",
    "ledger_continuations",
    "ledger_engine",
    "ledger_entries",
    "ledgers",
]

LEDGER_METADATA = MetaData()
"""The ledger's tables (``dpbandits_ledgers``, ``dpbandits_ledger_entries``, ``dpbandits_ledger_continuations``)."""

ledgers = Table(
    "dpbandits_ledgers", LEDGER_METADATA,
    Column("ledger_id", String(200), primary_key=True),
    Column("epsilon_budget", Double, nullable=True),
    Column("delta_budget", Double, nullable=False),
    Column("method", String(16), nullable=False),
    Column("unit", Text, nullable=True),
    Column("neighbouring", String(32), nullable=True),
    Column("created_at", Double, nullable=False),
    Column("entries", BigInteger, nullable=False),  # how many entries the chain holds
    Column("head", String(64), nullable=False),  # the chain's last link (the genesis link when empty)
    Column("continuations", BigInteger, nullable=False),  # the sum of the continuations table's counts
    Column("serial", BigInteger, nullable=False),  # written first by every check-and-record (the lock)
)

ledger_entries = Table(
    "dpbandits_ledger_entries", LEDGER_METADATA,
    Column("id", BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True),
    Column("ledger_id", String(200), ForeignKey(ledgers.c.ledger_id), nullable=False, index=True),
    Column("event", Text, nullable=False),
    Column("count", BigInteger, nullable=False),
    Column("unit", Text, nullable=True),
    Column("neighbouring", String(32), nullable=True),
    Column("scope", String(16), nullable=False),
    Column("label", Text, nullable=False),
    Column("lineage", Text, nullable=True),
    Column("conversion", Text, nullable=False),
    Column("created_at", Double, nullable=False),
    Column("link", String(64), nullable=False),  # sha256 of the previous link, the position and the fields
)

ledger_continuations = Table(
    "dpbandits_ledger_continuations", LEDGER_METADATA,
    Column("ledger_id", String(200), ForeignKey(ledgers.c.ledger_id), nullable=False),
    Column("lineage", String(1000), nullable=False),
    Column("generation", BigInteger, nullable=False),
    Column("continuations", BigInteger, nullable=False),
    Column("first_at", Double, nullable=False),
    UniqueConstraint("ledger_id", "lineage", "generation", name="uq_dpbandits_continuation"),
)

_TABLES_READY: weakref.WeakSet[Engine] = weakref.WeakSet()
"""Engines whose database is known to hold the tables (created or checked in a committed transaction)."""

_SUPPORTED_DIALECTS = ("sqlite", "postgresql")
_CONFLICT_STATES = ("40001", "40P01")  # serialization failure, deadlock: the transaction may be retried



class _Conflict(LedgerStorageError):
    """A serialization failure or deadlock (PostgreSQL): retried in the ledger's own transactions."""


def _storage_error(exc: DBAPIError, where: str) -> LedgerStorageError:
    """One line for a database failure (the driver's first line, no SQL, no parameters)."""
    original = exc.orig if exc.orig is not None else exc
    first = (str(original).strip().splitlines() or [type(original).__name__])[0]
    error: LedgerStorageError
    if getattr(original, "sqlstate", None) in _CONFLICT_STATES:
        error = _Conflict(f"{where}: a concurrent spend on the same ledger conflicted ({first}); nothing was "
                          "recorded: roll back this transaction and retry it")
    else:
        error = LedgerStorageError(f"{where}: the database failed: {first}")
    # kept for callers that decide whether a retry can help (the service answers 503 for a terminated
    # connection or a serialization failure); the message itself stays one line
    error.database_error = exc
    return error


def create_ledger_tables(bind: Engine | Connection) -> None:
    """Create the ledger's tables in ``bind``'s database where they are missing.

    Safe to call from several processes at once (a concurrent creation is checked again). Given a
    ``Connection``, the tables are created in the caller's transaction.
    """
    if isinstance(bind, Connection):
        if bind.engine not in _TABLES_READY:
            LEDGER_METADATA.create_all(bind, checkfirst=True)
        return
    for attempt in range(3):
        try:
            with bind.connect() as connection:
                # SQLite: BEGIN IMMEDIATE, so the check and the creation hold the write lock together
                connection = connection.execution_options(sqlite_immediate=True)
                with connection.begin():
                    LEDGER_METADATA.create_all(connection, checkfirst=True)
            _TABLES_READY.add(bind)
            return
        except DBAPIError:
            if attempt == 2:
                raise
            time.sleep(0.05 * (attempt + 1))  # another process was creating them: check again


def _sqlite_path(text: str) -> Path | None:
    """The file of a SQLite location (a path or a ``sqlite:///`` URL), or None for another database."""
    if "://" not in text:
        return Path(text).expanduser().resolve()
    try:
        url = make_url(text)
    except ArgumentError as exc:
        raise InvalidParameterError(f"url_or_path must be a valid database URL; got {text!r} ({exc})") from None
    if url.get_backend_name() != "sqlite":
        return None
    if url.database in (None, "", ":memory:") or url.query:
        raise InvalidParameterError("a durable ledger needs a SQLite file (sqlite:///path, no query), not "
                                    f"an in-memory or URI database; got {text!r}")
    return Path(url.database).expanduser().resolve()


def _database_url(location: str | Path, *, create: bool = False) -> str:
    text = str(location)
    if not text:
        raise InvalidParameterError("url_or_path must be a path or a database URL; got ''")
    path = _sqlite_path(text)
    if path is None:
        url = make_url(text)
        if url.drivername in ("postgresql", "postgres"):
            url = url.set(drivername="postgresql+psycopg")
        if url.get_backend_name() not in _SUPPORTED_DIALECTS:
            raise InvalidParameterError(f"a durable ledger runs on SQLite or PostgreSQL; got {url.drivername!r}")
        return url.render_as_string(hide_password=False)
    if path.is_dir():
        raise LedgerStorageError(f"{path} is a directory, not a ledger file")
    if not create and not path.exists():
        raise LedgerNotFoundError(f"no ledger file at {path}: create the ledger with DurableAccountant.create(...)")
    # mode=rw: SQLite opens an existing file only (it never creates one behind an open)
    return f"sqlite:///file:{quote(str(path), safe='/')}?mode={'rwc' if create else 'rw'}&uri=true"


def ledger_engine(url_or_path: str | Path, *, create: bool = False) -> Engine:
    """An engine for a ledger at ``url_or_path`` (a path means a SQLite file).

    On SQLite: :func:`configure_sqlite` with a rollback journal and ``synchronous=FULL`` (a committed
    spend is in the main file), a 30 s busy timeout, and ``BEGIN IMMEDIATE`` for the connections
    given the execution option ``sqlite_immediate=True``. The file must exist unless ``create``.

    Raises
    ------
    LedgerNotFoundError
        For a SQLite file that does not exist (without ``create``).
    DependencyNotInstalledError
        For a PostgreSQL URL without psycopg (``pip install 'dpbandits[serve]'``).
    """
    url = _database_url(url_or_path, create=create)
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30.0})
        configure_sqlite(engine, journal_mode="delete")
        return engine
    try:
        return create_engine(url, pool_pre_ping=True)
    except NoSuchModuleError:
        raise InvalidParameterError(f"url_or_path names an unknown database: {make_url(url).drivername!r}") from None
    except ModuleNotFoundError as exc:
        from dpbandits._core.errors import DependencyNotInstalledError

        raise DependencyNotInstalledError(
            f"the database driver for {make_url(url).drivername} is not installed ({exc.name}); for PostgreSQL: "
            "pip install 'dpbandits[serve]' (or psycopg[binary])"
        ) from None


SQLITE_SYNCHRONOUS: tuple[str, ...] = ("full", "normal")
"""Values of SQLite's ``PRAGMA synchronous`` for :func:`configure_sqlite`."""

SQLITE_JOURNAL_MODES: tuple[str, ...] = ("wal", "delete")
"""Values of SQLite's ``PRAGMA journal_mode`` for :func:`configure_sqlite`."""


def configure_sqlite(engine: Engine, synchronous: str = "full", journal_mode: str = "wal") -> None:
    """Configure a SQLite engine for a shared ledger: journal, ``synchronous``, a busy timeout, BEGIN IMMEDIATE.

    Each new connection gets ``PRAGMA journal_mode`` (``"wal"``: readers never wait, but a commit
    reaches the main file only at a checkpoint, so the file alone is not a backup; ``"delete"``:
    a rollback journal, every commit is in the main file), ``PRAGMA synchronous`` (``"full"``: a
    committed transaction survives a power loss; ``"normal"``: a killed process only), a 30 s busy
    timeout and foreign keys; a transaction begun on a connection with the execution option
    ``sqlite_immediate=True`` starts with ``BEGIN IMMEDIATE`` (the write lock is taken at BEGIN).
    A file another connection holds in WAL mode cannot be switched to ``"delete"``: that is refused.
    """
    synchronous = check_one_of(synchronous, "synchronous", SQLITE_SYNCHRONOUS)
    journal_mode = check_one_of(journal_mode, "journal_mode", SQLITE_JOURNAL_MODES)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: sqlite3.Connection, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # SQLAlchemy emits BEGIN itself (below)
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA busy_timeout=30000")
        mode = cursor.execute(f"PRAGMA journal_mode={journal_mode.upper()}").fetchone()
        if mode is None or str(mode[0]).lower() != journal_mode:
            cursor.close()
            raise LedgerStorageError(
                f"SQLite could not set journal_mode={journal_mode} (it is {mode and mode[0]!r}); another "
                "process holds the file in another mode")
        cursor.execute(f"PRAGMA synchronous={synchronous.upper()}")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Any) -> None:
        immediate = connection.get_execution_options().get("sqlite_immediate", False)
        connection.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


def _insert_ignore(conn: Connection, table: Table) -> Any:
    """INSERT that does nothing when the primary key exists (two processes creating one ledger at once)."""
    if conn.dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as pg_insert

        return pg_insert(table).on_conflict_do_nothing()
    from sqlalchemy.dialects.sqlite import insert as sqlite_insert

    return sqlite_insert(table).on_conflict_do_nothing()
