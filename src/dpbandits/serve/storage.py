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
``settings``
    Server secrets (the key that signs tickets), created with the schema.

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
from pathlib import Path
from typing import Any

from sqlalchemy import (
    Boolean,
    Column,
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
    select,
)
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, IntegrityError

from dpbandits._core.errors import InvalidParameterError
from dpbandits.privacy.ledger_sql import configure_sqlite, create_ledger_tables

__all__ = [
    "SQLITE_SYNCHRONOUS",
    "api_keys",
    "database_url",
    "experiments",
    "feedback",
    "is_sqlite",
    "leases",
    "make_engine",
    "metadata",
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
    metadata.create_all(engine)
    create_ledger_tables(engine)  # the experiments' privacy ledgers (dpbandits.privacy.ledger_store)
    ticket_secret(engine)  # created once, with the schema
    return engine


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
