"""A durable privacy ledger shared by processes and hosts: :class:`DurableAccountant` on SQLAlchemy Core.

The ledger lives in a database — a SQLite file by default, or any SQLAlchemy URL (PostgreSQL
through psycopg, ``pip install 'dpbandits[serve]'`` or ``pip install psycopg``). Every
check-and-record is one transaction:

* SQLite: the transaction begins with ``BEGIN IMMEDIATE`` (the database's write lock is taken
  before the ledger is read), the file is in WAL mode with ``synchronous=FULL``;
* PostgreSQL (and other servers): ``SELECT ... FOR UPDATE`` on the ledger's row, so spends on one
  ledger from any number of processes are serialised.

A spend is one row, inserted in the transaction that checked the budget: after a crash (kill -9,
power loss with ``synchronous=FULL``) the ledger holds every committed spend and no half-recorded
one. The tables are on :data:`LEDGER_METADATA`, so an application can create them in its own
database (:func:`create_ledger_tables`) and spend inside its own transactions (``connection=``).
"""

from __future__ import annotations

import sqlite3
import threading
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

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
    func,
    insert,
    make_url,
    select,
    update,
)
from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError

from dpbandits._core.errors import DataFormatError, DPBanditsError, InvalidParameterError
from dpbandits._core.validation import check_delta, check_epsilon, check_one_of
from dpbandits.privacy.accounting import Accountant, LedgerView
from dpbandits.privacy.composition import ACCOUNTING_METHODS
from dpbandits.privacy.event_codec import decode_event, encode_event
from dpbandits.privacy.guarantees import Neighbouring
from dpbandits.privacy.ledger import (
    SCOPES,
    LedgerEntry,
    check_label,
    check_neighbouring,
    check_unit,
)

__all__ = [
    "LEDGER_METADATA",
    "SQLITE_SYNCHRONOUS",
    "DurableAccountant",
    "configure_sqlite",
    "create_ledger_tables",
    "ledger_engine",
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


def _database_url(location: str | Path) -> str:
    text = str(location)
    if not text:
        raise InvalidParameterError("url_or_path must be a path or a database URL; got ''")
    if "://" in text:
        try:
            url = make_url(text)
        except ArgumentError as exc:
            raise InvalidParameterError(f"url_or_path must be a valid database URL; got {text!r} ({exc})") from None
        if url.drivername in ("postgresql", "postgres"):
            url = url.set(drivername="postgresql+psycopg")
        if url.get_backend_name() == "sqlite" and url.database in (None, "", ":memory:"):
            raise InvalidParameterError("a durable ledger needs a SQLite file, not an in-memory database")
        return url.render_as_string(hide_password=False)
    return f"sqlite:///{Path(text).expanduser().resolve()}"


def ledger_engine(url_or_path: str | Path) -> Engine:
    """An engine for a ledger at ``url_or_path`` (a path means a SQLite file in WAL mode).

    On SQLite: :func:`configure_sqlite` (WAL, ``synchronous=FULL``, a 30 s busy timeout, and ``BEGIN
    IMMEDIATE`` for the connections given the execution option ``sqlite_immediate=True``).

    Raises
    ------
    DependencyNotInstalledError
        For a PostgreSQL URL without psycopg (``pip install 'dpbandits[serve]'``).
    """
    url = _database_url(url_or_path)
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30.0})
        configure_sqlite(engine)
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
"""Values of SQLite's ``PRAGMA synchronous`` for :func:`configure_sqlite` (WAL mode)."""


def configure_sqlite(engine: Engine, synchronous: str = "full") -> None:
    """Configure a SQLite engine for a shared ledger: WAL, ``synchronous``, a busy timeout, BEGIN IMMEDIATE.

    Each new connection gets ``PRAGMA journal_mode=WAL``, ``PRAGMA synchronous`` (``"full"``: a committed
    transaction survives a power loss; ``"normal"``: a killed process only), a 30 s busy timeout and
    foreign keys; a transaction begun on a connection with the execution option
    ``sqlite_immediate=True`` starts with ``BEGIN IMMEDIATE`` (the write lock is taken at BEGIN: the
    budget is read and checked under it, and two writers never deadlock on a read-to-write upgrade).
    """
    synchronous = check_one_of(synchronous, "synchronous", SQLITE_SYNCHRONOUS)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: sqlite3.Connection, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # SQLAlchemy emits BEGIN itself (below)
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA synchronous={synchronous.upper()}")
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Any) -> None:
        immediate = connection.get_execution_options().get("sqlite_immediate", False)
        connection.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


def _check_ledger_id(ledger_id: object) -> str:
    if not isinstance(ledger_id, str) or not ledger_id.strip() or len(ledger_id) > 200:
        raise InvalidParameterError(f"ledger_id must be a non-empty string of at most 200 characters; got {ledger_id!r:.80}")
    return ledger_id


def _entry_from_row(row: Any) -> LedgerEntry:
    """A validated entry from a stored row (a ledger file is attack surface)."""
    try:
        count = row.count
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise InvalidParameterError(f"count must be an int >= 1; got {count!r}")
        scope = check_one_of(row.scope, "scope", SCOPES)
        return LedgerEntry(
            event=decode_event(row.event), count=count, unit=check_unit(row.unit),
            neighbouring=None if row.neighbouring is None else check_neighbouring(row.neighbouring),
            scope=scope,
            label=check_label(row.label),
            lineage=None if row.lineage is None else check_unit(row.lineage, "lineage"),
            conversion=check_label(row.conversion),
        )
    except DPBanditsError as exc:
        raise DataFormatError(f"ledger entry {row.id} is malformed: {exc}") from None


class _DurableView(LedgerView):
    """The ledger's state inside one transaction; writes go to the database."""

    def __init__(self, connection: Connection, ledger_id: str, unit: str | None, neighbouring: Neighbouring | None,
                 entries: list[LedgerEntry], fresh: list[tuple[int, LedgerEntry]]) -> None:
        super().__init__(unit, neighbouring, entries, {})
        self.connection = connection
        self.ledger_id = ledger_id
        self.fresh = fresh  # rows read or written in this transaction beyond the cache, with their ids

    def append(self, entry: LedgerEntry) -> None:
        unit, relation = self.unit, self.neighbouring
        super().append(entry)
        if (unit, relation) != (self.unit, self.neighbouring):
            self.connection.execute(update(ledgers).where(ledgers.c.ledger_id == self.ledger_id).values(
                unit=self.unit, neighbouring=None if self.neighbouring is None else self.neighbouring.value))
        result = self.connection.execute(insert(ledger_entries).values(
            ledger_id=self.ledger_id, event=encode_event(entry.event), count=entry.count, unit=entry.unit,
            neighbouring=None if entry.neighbouring is None else entry.neighbouring.value, scope=entry.scope,
            label=entry.label, lineage=entry.lineage, conversion=entry.conversion, created_at=time.time(),
        ))
        key = result.inserted_primary_key
        assert key is not None
        self.fresh.append((int(key[0]), entry))

    def prior_continuations(self, lineage: str, generation: int) -> int:
        row = self.connection.execute(select(ledger_continuations.c.continuations).where(
            ledger_continuations.c.ledger_id == self.ledger_id, ledger_continuations.c.lineage == lineage,
            ledger_continuations.c.generation == generation)).first()
        return 0 if row is None else int(row[0])

    def latest_continuation(self, lineage: str) -> int | None:
        table = ledger_continuations
        row = self.connection.execute(select(func.max(table.c.generation)).where(
            table.c.ledger_id == self.ledger_id, table.c.lineage == lineage)).first()
        return None if row is None or row[0] is None else int(row[0])

    def add_continuation(self, lineage: str, generation: int, before: int) -> None:
        table = ledger_continuations
        if before == 0:
            self.connection.execute(insert(table).values(ledger_id=self.ledger_id, lineage=lineage,
                                                         generation=generation, continuations=1, first_at=time.time()))
        else:
            self.connection.execute(update(table).where(
                table.c.ledger_id == self.ledger_id, table.c.lineage == lineage, table.c.generation == generation,
            ).values(continuations=before + 1))


class DurableAccountant(Accountant):
    """A privacy ledger in a database, shared by threads, processes and hosts; the methods of :class:`Accountant`.

    Parameters
    ----------
    url_or_path : str, Path or sqlalchemy.Engine
        A file path (SQLite, created if missing), a SQLAlchemy URL (``postgresql+psycopg://user@host/db``;
        PostgreSQL needs psycopg: ``pip install 'dpbandits[serve]'``), or an engine of the caller's.
    ledger_id : str
        The ledger's name in the database; one database holds any number of ledgers.
    epsilon_budget, delta_budget, method, unit, neighbouring
        As for :class:`Accountant`. Stored with the ledger when it is created; reopening it with
        other values is refused. Left at None, they are the stored values (for a new ledger: no
        budget, δ = 0, ``"basic"``, fixed by the first spend).
    connection : sqlalchemy.Connection, optional
        Create (or check) the ledger inside the caller's transaction.

    Notes
    -----
    Every method takes ``connection=``: an open SQLAlchemy ``Connection`` inside the caller's
    transaction. Check-and-record then happen in that transaction and commit or roll back with it;
    on PostgreSQL the ledger's row is locked ``FOR UPDATE`` until the caller's transaction ends; on
    SQLite the caller's transaction must hold the write lock from its start (``BEGIN IMMEDIATE``:
    ``connection.execution_options(sqlite_immediate=True)`` on an engine from :func:`ledger_engine`)
    — otherwise SQLite's serialisation still prevents overspending, but a concurrent writer makes
    the transaction fail with "database is locked". Without ``connection=`` every call is its own
    transaction. An engine passed as ``url_or_path`` is used as it is (the caller configures it).
    A copied or pickled ledger opened by path or URL reopens the same ledger (one budget, in one
    database), so it may be handed to worker processes.

    Examples
    --------
    >>> import tempfile, os
    >>> from dpbandits.privacy.ledger_store import DurableAccountant
    >>> from dpbandits.privacy.accounting import LaplaceEvent
    >>> path = os.path.join(tempfile.mkdtemp(), "ledger.db")
    >>> acc = DurableAccountant(path, "study-1", epsilon_budget=1.0)
    >>> acc.spend(LaplaceEvent(scale=4.0), count=2, label="counts")
    >>> DurableAccountant(path, "study-1").spent().epsilon
    0.5
    """

    def __init__(self, url_or_path: str | Path | Engine, ledger_id: str, *, epsilon_budget: float | None = None,
                 delta_budget: float | None = None, method: str | None = None, unit: str | None = None,
                 neighbouring: Neighbouring | str | None = None, connection: Connection | None = None) -> None:
        self.ledger_id = _check_ledger_id(ledger_id)
        asked = {
            "epsilon_budget": None if epsilon_budget is None else check_epsilon(epsilon_budget, "epsilon_budget"),
            "delta_budget": None if delta_budget is None else check_delta(delta_budget, "delta_budget"),
            "method": None if method is None else check_one_of(method, "method", ACCOUNTING_METHODS),
            "unit": check_unit(unit),
            "neighbouring": None if neighbouring is None else check_neighbouring(neighbouring).value,
        }
        self._owns_engine = not isinstance(url_or_path, Engine)
        if isinstance(url_or_path, Engine):
            self.engine = url_or_path
        elif isinstance(url_or_path, str | Path):
            self.engine = ledger_engine(url_or_path)
        else:
            raise InvalidParameterError(f"url_or_path must be a path, a URL or an Engine; got {url_or_path!r:.80}")
        self._sqlite = self.engine.dialect.name == "sqlite"
        self._writer = threading.Lock()  # this process's writers queue here, not in SQLite's busy loop
        self._cache_lock = threading.Lock()
        self._cache: list[LedgerEntry] = []
        self._cache_last_id = 0
        self._transaction_rows: tuple[tuple[Any, Any], list[tuple[int, LedgerEntry]]] | None = None
        create_ledger_tables(self.engine if connection is None else connection)
        stored = self._open(asked, connection)
        self.epsilon_budget = stored["epsilon_budget"]
        self.delta_budget = float(stored["delta_budget"])
        self.method = str(stored["method"])

    def _open(self, asked: dict[str, Any], connection: Connection | None) -> dict[str, Any]:
        """Create the ledger's row (first open) or check the asked values against it."""
        with self._transaction(connection) as conn:
            row = conn.execute(select(ledgers).where(ledgers.c.ledger_id == self.ledger_id)).mappings().first()
            if row is None:
                values = {"epsilon_budget": asked["epsilon_budget"],
                          "delta_budget": 0.0 if asked["delta_budget"] is None else asked["delta_budget"],
                          "method": asked["method"] or "basic", "unit": asked["unit"],
                          "neighbouring": asked["neighbouring"]}
                conn.execute(_insert_ignore(conn, ledgers).values(ledger_id=self.ledger_id, created_at=time.time(),
                                                                  **values))
                row = conn.execute(select(ledgers).where(ledgers.c.ledger_id == self.ledger_id)).mappings().one()
            stored = dict(row)
        try:
            stored["epsilon_budget"] = None if stored["epsilon_budget"] is None else check_epsilon(
                stored["epsilon_budget"], "epsilon_budget")
            stored["delta_budget"] = check_delta(stored["delta_budget"], "delta_budget")
            stored["method"] = check_one_of(stored["method"], "method", ACCOUNTING_METHODS)
            check_unit(stored["unit"])
            if stored["neighbouring"] is not None:
                check_neighbouring(stored["neighbouring"])
        except DPBanditsError as exc:
            raise DataFormatError(f"ledger {self.ledger_id!r} is malformed in its database: {exc}") from None
        for name, value in asked.items():
            if value is not None and value != stored[name]:
                raise InvalidParameterError(
                    f"ledger {self.ledger_id!r} was created with {name}={stored[name]!r}; refusing to reopen it "
                    f"with {name}={value!r}"
                )
        return stored

    # -- storage hooks -----------------------------------------------------------------------------

    @contextmanager
    def _transaction(self, connection: Connection | None) -> Iterator[Connection]:
        """The caller's connection as it is, or a new write transaction (committed on success)."""
        if connection is not None:
            if not isinstance(connection, Connection):
                raise InvalidParameterError(f"connection must be a sqlalchemy Connection; got {connection!r:.80}")
            yield connection
            return
        with self._writer if self._sqlite else nullcontext(), self.engine.connect() as conn:
            conn = conn.execution_options(sqlite_immediate=True)
            with conn.begin():
                yield conn

    @contextmanager
    def _locked(self, connection: Any = None) -> Iterator[LedgerView]:
        with self._transaction(connection) as conn:
            query = select(ledgers.c.unit, ledgers.c.neighbouring).where(ledgers.c.ledger_id == self.ledger_id)
            row = conn.execute(query if self._sqlite else query.with_for_update()).first()
            if row is None:
                raise DataFormatError(f"ledger {self.ledger_id!r} is missing from its database")
            key = None if connection is None else (conn.get_transaction(), conn.get_nested_transaction())
            cached, fresh = self._load(conn, key)
            view = _DurableView(conn, self.ledger_id, check_unit(row.unit),
                                None if row.neighbouring is None else check_neighbouring(row.neighbouring),
                                [*cached, *(e for _i, e in fresh)], fresh)
            yield view
            if key is not None:  # the caller's transaction: what it holds so far, for its next call
                self._transaction_rows = (key, fresh)
        if connection is None:  # committed: what this transaction read and wrote is now known for good
            self._remember(fresh)

    def _load(self, conn: Connection, key: tuple[Any, Any] | None = None,
              ) -> tuple[list[LedgerEntry], list[tuple[int, LedgerEntry]]]:
        """The cached (committed) entries and the rows after them, read in ``conn``.

        In a caller's transaction (``key``: its transaction and savepoint), the rows an earlier call
        read or wrote in that same transaction and savepoint are not read again; they are never
        cached beyond it (the caller may still roll back).
        """
        with self._cache_lock:
            cached, last_id = list(self._cache), self._cache_last_id
        known: list[tuple[int, LedgerEntry]] = []
        memo = self._transaction_rows
        if key is not None and memo is not None and key[0] is not None and key[0].is_active and (
                memo[0][0] is key[0] and memo[0][1] is key[1]):
            known = [(row_id, entry) for row_id, entry in memo[1] if row_id > last_id]
            last_id = known[-1][0] if known else last_id
        rows = conn.execute(select(ledger_entries).where(
            ledger_entries.c.ledger_id == self.ledger_id, ledger_entries.c.id > last_id,
        ).order_by(ledger_entries.c.id)).all()
        return cached, [*known, *((int(row.id), _entry_from_row(row)) for row in rows)]

    def _remember(self, fresh: list[tuple[int, LedgerEntry]]) -> None:
        with self._cache_lock:
            for row_id, entry in fresh:
                if row_id > self._cache_last_id:
                    self._cache.append(entry)
                    self._cache_last_id = row_id

    def _read(self, connection: Any = None) -> LedgerView:
        if connection is not None:
            with self._locked(connection) as view:
                return LedgerView(view.unit, view.neighbouring, list(view.entries), {})
        with self.engine.connect() as conn, conn.begin():
            row = conn.execute(select(ledgers.c.unit, ledgers.c.neighbouring).where(
                ledgers.c.ledger_id == self.ledger_id)).one()
            cached, fresh = self._load(conn)
        self._remember(fresh)
        return LedgerView(check_unit(row.unit), None if row.neighbouring is None else check_neighbouring(row.neighbouring),
                          [*cached, *(e for _i, e in fresh)], {})

    def continuations(self) -> dict[tuple[str, int], int]:
        """How many times each saved (lineage, generation) was continued under this ledger."""
        with self.engine.connect() as conn:
            rows = conn.execute(select(ledger_continuations).where(
                ledger_continuations.c.ledger_id == self.ledger_id)).all()
        return {(row.lineage, int(row.generation)): int(row.continuations) for row in rows}

    def __repr__(self) -> str:
        url = self.engine.url.render_as_string(hide_password=True)
        budget = "inf" if self.epsilon_budget is None else f"{self.epsilon_budget:g}"
        return f"DurableAccountant({url!r}, {self.ledger_id!r}, epsilon_budget={budget}, method={self.method!r})"

    def __reduce__(self) -> Any:
        """A copy reopens the same ledger by its URL: both spend one budget, in one database."""
        if not self._owns_engine:
            raise InvalidParameterError(
                "a DurableAccountant on an engine of the caller's cannot be pickled: open the ledger by its "
                "path or URL in each process"
            )
        return (DurableAccountant, (self.engine.url.render_as_string(hide_password=False), self.ledger_id))

    def close(self) -> None:
        """Release the engine's connections (only for an engine this ledger created)."""
        if self._owns_engine:
            self.engine.dispose()


def _insert_ignore(conn: Connection, table: Table) -> Any:
    """INSERT that does nothing when the primary key exists (two processes opening a new ledger at once)."""
    name = conn.dialect.name
    if name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as pg_insert

        return pg_insert(table).on_conflict_do_nothing()
    if name == "sqlite":
        from sqlalchemy.dialects.sqlite import insert as sqlite_insert

        return sqlite_insert(table).on_conflict_do_nothing()
    return insert(table)

