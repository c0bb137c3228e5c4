"""The store of ``dpbandits serve``: SQLAlchemy tables and engines (SQLite in WAL mode, or PostgreSQL).

Tables
------
``api_keys``
    One row per API key: its SHA-256 hash (the key itself is shown once, when created, and never
    stored), a short prefix to recognise it, a name, and whether it was revoked.
``experiments``
    One row per experiment: owner, kind, parameters, and the **durable state**: the agent's bytes
    in the versioned state format (:meth:`~dpbandits._core.persistence.Persistable.to_bytes`), the
    number of feedback steps applied to it (the state is a snapshot: the steps told since are
    replayed from ``feedback``), a version number bumped on every write, and a public summary
    (progress, released estimates) for the status page.
``feedback``
    One row per told ticket: the step it fed, a hash of the feedback (to tell a retry from a
    conflicting tell), the acknowledgement returned, and, until a stored state covers its step, the
    feedback itself (then erased: the store keeps raw feedback only while it is needed to rebuild
    the agent).
    ``(experiment_id, step)`` is unique: a step is counted once, whatever the clients or processes.
``leases``
    The steps handed out by ``ask``: one row per (experiment, step) with the time of its latest
    hand-out, so that every server process (``--workers N``, several hosts on one PostgreSQL) sees
    the same leases (see :mod:`dpbandits.serve.leases`); times are the database's clock. Rows of
    steps a stored state covers are deleted.
``ledgers``, ``ledger_entries``, ``ledger_continuations``
    The privacy ledgers of the experiments: the library's durable ledger
    (:mod:`dpbandits.privacy.ledger_store`), created in the same database; see
    :mod:`dpbandits.serve.ledger`.
``processes``, ``owners``
    The server processes serving the store, each with the address other processes forward an
    experiment's requests to, and each experiment's advisory *owner*: the process its requests are
    forwarded to while its lease (the database's clock) runs (see :mod:`dpbandits.serve.affinity`).
    Nothing a request's correctness depends on is read from them.
``settings``
    Server secrets (the key that signs tickets), created with the schema, and the store's
    **schema version** (``schema_version``).

Schema version
--------------
A new store records :data:`SCHEMA_VERSION`, the layout of its tables, in the transaction that
creates them. Opening a store checks it first: a store of the current version is opened; one of an
older version is migrated in one transaction when :data:`MIGRATIONS` holds every step from its
version (version 1 -> 2 adds the tables of server processes and owners); any other store -- one recording no version (a store of a dpbandits from
before schema versions, whose ledger tables lack this release's columns), an older version without
a migration, a newer version, an unreadable version, or a missing table -- is refused in one line
(:class:`~dpbandits.serve.errors.StoreSchemaError`) before anything in it is read. The version is a
row, not an Alembic revision: the row costs store creation one insert, while importing Alembic
would cost every process that opens a store several times a store's creation; the one migration
so far (version 1 -> 2 creates two tables) is a function of :data:`MIGRATIONS`, run in the opening
transaction. A release whose migrations need more can adopt Alembic with these versions as its baseline.

Engines
-------
:func:`make_engine` takes a path (SQLite) or a SQLAlchemy URL. SQLite connections run in WAL mode
with ``synchronous=FULL`` by default (a committed transaction survives a power loss; ``NORMAL``
survives a killed process only), a busy timeout, and write transactions opened with ``BEGIN
IMMEDIATE`` (the write lock is taken at the start, so two writers never deadlock on an upgrade).
PostgreSQL URLs (``postgresql+psycopg://...``) are used unchanged; writers lock the experiment's row
with ``SELECT ... FOR UPDATE``. Engines hide bound parameters from every error and log line
(``hide_parameters``): a failed statement's text never shows an agent's state or raw feedback.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlalchemy import (
    Boolean,
    Column,
    Connection,
    Engine,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    create_engine,
    insert,
    inspect,
    select,
    update,
)
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, IntegrityError

from dpbandits._core.errors import InvalidParameterError
from dpbandits.privacy.ledger_sql import LEDGER_METADATA, configure_sqlite, create_ledger_tables
from dpbandits.serve.errors import StoreSchemaError

__all__ = [
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "SQLITE_SYNCHRONOUS",
    "api_keys",
    "database_url",
    "experiments",
    "feedback",
    "is_sqlite",
    "leases",
    "make_engine",
    "metadata",
    "owners",
    "processes",
    "settings",
    "ticket_secret",
]

metadata = MetaData()

api_keys = Table(
    "api_keys", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("name", String(200), nullable=False),
    Column("key_hash", String(64), nullable=False, unique=True),
    Column("prefix", String(16), nullable=False),
    Column("created_at", Float, nullable=False),
    Column("revoked", Boolean, nullable=False, default=False),
)

experiments = Table(
    "experiments", metadata,
    Column("id", String(32), primary_key=True),
    Column("owner_id", Integer, ForeignKey("api_keys.id"), nullable=False),
    Column("name", String(200), nullable=False),
    Column("kind", String(64), nullable=False),
    Column("params", Text, nullable=False),  # JSON: the validated parameters
    Column("created_at", Float, nullable=False),
    Column("closed", Boolean, nullable=False, default=False),
    Column("insecure_seed", Integer, nullable=True),  # set only on servers that allow seeded noise
    Column("epsilon_budget", Float, nullable=True),
    Column("delta_budget", Float, nullable=False, default=0.0),
    Column("state", LargeBinary, nullable=True),  # the agent / policy in the state format
    Column("applied", Integer, nullable=False, default=0),  # feedback steps applied to the stored state
    Column("told", Integer, nullable=False, default=0),  # feedback steps acknowledged (applied or buffered)
    Column("version", Integer, nullable=False, default=0),  # bumped on every write of the row
    Column("summary", Text, nullable=False, default="{}"),  # JSON: public progress and released values
    Index("ix_experiments_owner", "owner_id"),
)

feedback = Table(
    "feedback", metadata,
    Column("ticket", String(200), primary_key=True),
    Column("experiment_id", String(32), ForeignKey("experiments.id"), nullable=False),
    Column("step", Integer, nullable=False),
    Column("feedback_hash", String(64), nullable=False),
    Column("payload", Text, nullable=True),  # JSON feedback until a stored state covers the step; then erased
    Column("applied", Boolean, nullable=False, default=False),  # covered by the stored state
    Column("ack", Text, nullable=False),  # JSON: the acknowledgement a retry gets again
    Column("created_at", Float, nullable=False),
    UniqueConstraint("experiment_id", "step", name="uq_feedback_step"),
)

leases = Table(
    "leases", metadata,
    Column("experiment_id", String(32), ForeignKey("experiments.id"), primary_key=True),
    Column("step", Integer, primary_key=True),
    Column("issued_at", Float, nullable=False),  # the database's clock (seconds since the epoch) at its latest hand-out
)

settings = Table(
    "settings", metadata,
    Column("name", String(64), primary_key=True),
    Column("value", LargeBinary, nullable=False),
)

sessions = Table(  # the status page's sign-in sessions (dpbandits.serve.sessions)
    "sessions", metadata,
    Column("id_hash", String(64), primary_key=True),  # SHA-256 of the session id (the id is not stored)
    Column("owner_id", Integer, ForeignKey("api_keys.id"), nullable=False),
    Column("created_at", Float, nullable=False),
    Column("expires_at", Float, nullable=False),
)

processes = Table(  # the server processes on this store (dpbandits.serve.affinity)
    "processes", metadata,
    Column("id", String(32), primary_key=True),  # random, chosen by the process at start
    Column("url", String(300), nullable=False),  # http(s)://host:port where other processes reach it
    Column("seen_at", Float, nullable=False),  # the database's clock at its latest heartbeat
)

owners = Table(  # each experiment's advisory owner process (dpbandits.serve.affinity)
    "owners", metadata,
    Column("experiment_id", String(32), ForeignKey("experiments.id"), primary_key=True),
    Column("process_id", String(32), nullable=False),
    Column("expires_at", Float, nullable=False),  # the database's clock
)

SCHEMA_VERSION = 2
"""The layout of the store's tables this dpbandits writes and reads (see the module docstring).

Bumped by every release that changes a table of the store (its own or the ledger's)."""


def _add_process_tables(connection: Connection) -> None:
    """Version 1 -> 2: the server processes and the experiments' owners (new tables, nothing else changes)."""
    metadata.create_all(connection, tables=[processes, owners])


MIGRATIONS: dict[int, Callable[[Connection], None]] = {1: _add_process_tables}
"""Migrations of the store: ``MIGRATIONS[v]`` changes a store of version ``v`` into one of ``v + 1``
(in the opening transaction). Stores of versions without a migration to this one are refused."""

_VERSION_KEY = "schema_version"

SQLITE_SYNCHRONOUS = ("full", "normal")
"""Accepted values of ``synchronous`` for SQLite (see the module docstring)."""


def database_url(db: str) -> str:
    """The SQLAlchemy URL of ``db``: a URL as it is, a path as a SQLite URL.

    Raises
    ------
    InvalidParameterError
        If ``db`` looks like a URL but SQLAlchemy cannot parse it, or is empty.
    """
    if not db:
        raise InvalidParameterError("db must be a path or a database URL; got ''")
    if "://" in db:
        try:
            make_url(db)
        except ArgumentError as exc:
            raise InvalidParameterError(f"db must be a valid database URL; got {db!r} ({exc})") from None
        return db
    return f"sqlite:///{Path(db).expanduser().resolve()}"


def is_sqlite(engine: Engine) -> bool:
    """Whether ``engine`` talks to SQLite."""
    return engine.dialect.name == "sqlite"


def make_engine(db: str, *, synchronous: str = "full", pool_size: int = 16) -> Engine:
    """Create the engine for ``db`` (a path or URL) and the tables if they are missing.

    Parameters
    ----------
    db : str
        A file path (SQLite) or a SQLAlchemy URL (``postgresql+psycopg://user@host/name``,
        ``sqlite:///path``).
    synchronous : {"full", "normal"}, default "full"
        SQLite's ``PRAGMA synchronous`` in WAL mode (ignored for PostgreSQL).
    pool_size : int, default 16
        Connections kept open.

    Returns
    -------
    sqlalchemy.Engine
    """
    if synchronous not in SQLITE_SYNCHRONOUS:
        raise InvalidParameterError(f"synchronous must be one of {list(SQLITE_SYNCHRONOUS)}; got {synchronous!r}")
    url = database_url(db)
    # hide_parameters: an error's text (logged, or raised) never carries bound values (states, feedback)
    kwargs: dict[str, Any] = {"pool_size": pool_size, "max_overflow": 2 * pool_size, "pool_pre_ping": False,
                              "hide_parameters": True}
    if url.startswith("sqlite"):
        if url in ("sqlite://", "sqlite:///:memory:"):
            raise InvalidParameterError("db must be a file for SQLite (an in-memory database is lost on exit)")
        kwargs["connect_args"] = {"check_same_thread": False, "timeout": 30.0}
    engine = create_engine(url, **kwargs)
    if is_sqlite(engine):
        configure_sqlite(engine, synchronous)  # the one SQLite set-up, shared with the durable ledger
    try:
        _open_schema(engine)
    except BaseException:
        engine.dispose()
        raise
    create_ledger_tables(engine)  # present now: marks the engine's ledger tables as checked
    ticket_secret(engine)  # created once, with the schema
    return engine


def _open_schema(engine: Engine) -> None:
    """Create the tables of a new store and record its version, or check (and migrate) an existing store's.

    One transaction (SQLite: ``BEGIN IMMEDIATE``), tried again if a concurrent creation conflicted.
    """
    for attempt in range(3):
        try:
            with engine.connect() as connection:
                connection = connection.execution_options(sqlite_immediate=True)
                with connection.begin():
                    _check_or_create(connection)
            return
        except DBAPIError:
            if attempt == 2:
                raise
            time.sleep(0.05 * (attempt + 1))  # another process was creating the store: check again


def _check_or_create(connection: Connection) -> None:
    found = set(inspect(connection).get_table_names())
    if not found & set(metadata.tables):  # a new store (the database may hold other applications' tables)
        metadata.create_all(connection)
        create_ledger_tables(connection)  # the experiments' privacy ledgers (dpbandits.privacy.ledger_store)
        connection.execute(insert(settings).values(name=_VERSION_KEY, value=str(SCHEMA_VERSION).encode()))
        return
    where = f"store {connection.engine.url.render_as_string(hide_password=True)}"
    raw = None
    if settings.name in found:
        raw = connection.execute(select(settings.c.value).where(settings.c.name == _VERSION_KEY)).scalar()
    if raw is None:
        raise StoreSchemaError(
            f"{where} records no schema version: it was created by an earlier dpbandits, whose tables this "
            f"one (store schema version {SCHEMA_VERSION}) does not read and does not migrate; start a new "
            "store (another --db), and read the old store's experiments and ledger spends with the dpbandits "
            "that created it")
    text = bytes(raw).decode("ascii", errors="replace")
    if not (text.isascii() and text.isdigit() and len(text) <= 9):
        raise StoreSchemaError(f"{where} has an unreadable schema version {text[:20]!r} (an edited store); "
                               f"this dpbandits reads store schema version {SCHEMA_VERSION}")
    version = int(text)
    if version > SCHEMA_VERSION:
        raise StoreSchemaError(
            f"{where} has schema version {version}, written by a newer dpbandits; this one reads store schema "
            f"version {SCHEMA_VERSION}: upgrade dpbandits to open it")
    if version < SCHEMA_VERSION and any(step not in MIGRATIONS for step in range(version, SCHEMA_VERSION)):
        raise StoreSchemaError(
            f"{where} has schema version {version}, and this dpbandits (store schema version {SCHEMA_VERSION}) "
            "has no migration from it; start a new store (another --db), and read the old store's experiments "
            "and ledger spends with the dpbandits that created it")
    for step in range(version, SCHEMA_VERSION):
        MIGRATIONS[step](connection)
    if version != SCHEMA_VERSION:
        connection.execute(update(settings).where(settings.c.name == _VERSION_KEY)
                           .values(value=str(SCHEMA_VERSION).encode()))
        found = set(inspect(connection).get_table_names())
    missing = [name for name in [*metadata.tables, *LEDGER_METADATA.tables] if name not in found]
    if missing:
        raise StoreSchemaError(f"{where} (schema version {SCHEMA_VERSION}) lacks the table(s) {missing} "
                               "(an edited store)")


def ticket_secret(engine: Engine) -> bytes:
    """The server's ticket-signing key (32 random bytes), created on first use and kept in the store."""
    query = select(settings.c.value).where(settings.c.name == "ticket_secret")
    with engine.connect() as connection:
        value = connection.execute(query).scalar()
    if value is None:
        try:
            with engine.begin() as connection:
                connection.execute(insert(settings).values(name="ticket_secret", value=secrets.token_bytes(32)))
        except IntegrityError:  # another process created it first
            pass
        with engine.connect() as connection:
            value = connection.execute(query).scalar_one()
    return bytes(value)
