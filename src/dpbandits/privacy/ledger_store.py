"""A durable privacy ledger shared by processes and hosts: :class:`DurableAccountant` on SQLAlchemy Core.

The ledger lives in a database — a SQLite file by default, or PostgreSQL through psycopg
(``pip install 'dpbandits[serve]'`` or ``pip install psycopg``). It fails closed:

* creating a ledger (:meth:`DurableAccountant.create`) and opening one (``DurableAccountant(...)``)
  are different calls; opening never creates a file, a table or a ledger, and a ledger whose
  recorded state cannot be read completely is refused, never treated as new;
* every check-and-record is one transaction whose *first statement writes the ledger's row*, so
  spends on one ledger are serialised by the row's write lock under every isolation level
  (PostgreSQL's READ COMMITTED, REPEATABLE READ and SERIALIZABLE, set on the database, the engine
  or the caller's transaction; a serialization failure is retried, or reported in one line inside
  a caller's transaction) and on SQLite (``BEGIN IMMEDIATE`` when the driver has not begun);
* the entries form a hash chain whose head is kept in the ledger's row
  (:mod:`dpbandits.privacy.ledger_chain`): an edited, truncated or rolled-back entry table is refused;
* a SQLite ledger opened by path uses a rollback journal with ``synchronous=FULL``: a committed
  spend is in the main file when the call returns, so that file alone holds every acknowledged
  spend once no write is in progress; :func:`~dpbandits.privacy.ledger_backup.backup_ledger` (and
  ``dpbandits ledger backup``) copies it safely while processes spend.

The tables are on :data:`~dpbandits.privacy.ledger_sql.LEDGER_METADATA`, so an application can create
them in its own database (:func:`~dpbandits.privacy.ledger_sql.create_ledger_tables`) and spend inside
its own transactions (``connection=``); :mod:`dpbandits.privacy.ledger_sql` holds the schema and the
engine configuration (its public names are also importable from here).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import (
    Connection,
    Engine,
    func,
    insert,
    inspect,
    select,
    update,
)
from sqlalchemy.exc import DBAPIError

from dpbandits._core.errors import (
    DataFormatError,
    DPBanditsError,
    InvalidParameterError,
    LedgerCorruptError,
    LedgerNotFoundError,
)
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
from dpbandits.privacy.ledger_chain import LedgerAnchor, entry_link, genesis_link, verify_chain
from dpbandits.privacy.ledger_sql import (
    _SUPPORTED_DIALECTS,
    LEDGER_METADATA,
    SQLITE_JOURNAL_MODES,
    SQLITE_SYNCHRONOUS,
    _Conflict,
    _insert_ignore,
    _sqlite_path,
    _storage_error,
    configure_sqlite,
    create_ledger_tables,
    ledger_continuations,
    ledger_engine,
    ledger_entries,
    ledgers,
)

__all__ = [
    "LEDGER_METADATA",
    "SQLITE_JOURNAL_MODES",
    "SQLITE_SYNCHRONOUS",
    "DurableAccountant",
    "configure_sqlite",
    "create_ledger_tables",
    "ledger_engine",
]

_RETRIES = 40

T = TypeVar("T")


def _check_ledger_id(ledger_id: object) -> str:
    if not isinstance(ledger_id, str) or not ledger_id.strip() or len(ledger_id) > 200:
        raise InvalidParameterError(f"ledger_id must be a non-empty string of at most 200 characters; got {ledger_id!r:.80}")
    return ledger_id


def _fields(row: Any) -> list[object]:
    """The stored fields of an entry row that its link covers."""
    return [row.event, row.count, row.unit, row.neighbouring, row.scope, row.label, row.lineage, row.conversion]


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


def _stored_settings(ledger_id: str, row: Any) -> dict[str, Any]:
    """The validated budget, method, unit and relation of a ledger's row."""
    try:
        stored = {
            "epsilon_budget": None if row.epsilon_budget is None else check_epsilon(row.epsilon_budget, "epsilon_budget"),
            "delta_budget": check_delta(row.delta_budget, "delta_budget"),
            "method": check_one_of(row.method, "method", ACCOUNTING_METHODS),
            "unit": check_unit(row.unit),
            "neighbouring": None if row.neighbouring is None else check_neighbouring(row.neighbouring).value,
        }
        for name in ("entries", "continuations", "serial"):
            value = getattr(row, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise InvalidParameterError(f"{name} must be an int >= 0; got {value!r}")
        if not isinstance(row.head, str):
            raise InvalidParameterError(f"head must be a string; got {row.head!r:.80}")
    except DPBanditsError as exc:
        raise LedgerCorruptError(f"ledger {ledger_id!r} is malformed in its database: {exc}") from None
    return stored


class _DurableView(LedgerView):
    """The ledger's state inside one transaction (read completely, chain checked); writes go to the database."""

    def __init__(self, connection: Connection, ledger_id: str, unit: str | None, neighbouring: Neighbouring | None,
                 entries: list[LedgerEntry], head: str, count: int) -> None:
        super().__init__(unit, neighbouring, entries, {})
        self.connection = connection
        self.ledger_id = ledger_id
        self.head = head
        self.count = count

    def append(self, entry: LedgerEntry) -> None:
        super().append(entry)
        values: dict[str, Any] = {
            "event": encode_event(entry.event), "count": entry.count, "unit": entry.unit,
            "neighbouring": None if entry.neighbouring is None else entry.neighbouring.value, "scope": entry.scope,
            "label": entry.label, "lineage": entry.lineage, "conversion": entry.conversion,
        }
        link = entry_link(self.head, self.count + 1, [values[name] for name in (
            "event", "count", "unit", "neighbouring", "scope", "label", "lineage", "conversion")])
        self.connection.execute(insert(ledger_entries).values(
            ledger_id=self.ledger_id, created_at=time.time(), link=link, **values))
        self.head, self.count = link, self.count + 1
        self.connection.execute(update(ledgers).where(ledgers.c.ledger_id == self.ledger_id).values(
            entries=self.count, head=link, unit=self.unit,
            neighbouring=None if self.neighbouring is None else self.neighbouring.value))

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
        self.connection.execute(update(ledgers).where(ledgers.c.ledger_id == self.ledger_id).values(
            continuations=ledgers.c.continuations + 1))


class DurableAccountant(Accountant):
    """A privacy ledger in a database, shared by threads, processes and hosts; the methods of :class:`Accountant`.

    ``DurableAccountant(url_or_path, ledger_id)`` opens an existing ledger and never creates one;
    :meth:`create` creates it.

    Parameters
    ----------
    url_or_path : str, Path or sqlalchemy.Engine
        A SQLite file path (or ``sqlite:///path``), a PostgreSQL URL (``postgresql+psycopg://user@host/db``;
        needs psycopg: ``pip install 'dpbandits[serve]'``), or an engine of the caller's on either.
    ledger_id : str
        The ledger's name in the database; one database holds any number of ledgers.
    epsilon_budget, delta_budget, method, unit, neighbouring
        If given, checked against the values the ledger was created with (a difference is refused).
    connection : sqlalchemy.Connection, optional
        Open the ledger inside the caller's transaction.

    Raises
    ------
    LedgerNotFoundError
        No such file, no ledger tables in the database, or no ledger of this id.
    LedgerCorruptError
        The ledger's row or entries cannot be read completely, or fail the hash chain.
    LedgerStorageError
        The database failed (not a database, a directory, full, read-only, locked).

    Notes
    -----
    Every method takes ``connection=``: an open SQLAlchemy ``Connection`` inside the caller's
    transaction. Check-and-record then happen in that transaction and commit or roll back with it;
    its first statement writes the ledger's row, which holds the row's write lock until the caller's
    transaction ends. On PostgreSQL at REPEATABLE READ or SERIALIZABLE a spend that raced another
    raises :class:`~dpbandits._core.errors.LedgerStorageError` (the caller's transaction is then
    aborted: roll it back and retry it); on SQLite the caller's transaction gets ``BEGIN IMMEDIATE``
    if the driver has not begun one (pysqlite's lazy transactions). Without ``connection=`` every
    call is its own transaction, retried on a serialization failure. A connection in autocommit
    mode is refused. A copied or pickled ledger opened by path or URL reopens the same ledger (one
    budget, in one database), so it may be handed to worker processes.

    Examples
    --------
    >>> import tempfile, os
    >>> from dpbandits.privacy.ledger_store import DurableAccountant
    >>> from dpbandits.privacy.accounting import LaplaceEvent
    >>> path = os.path.join(tempfile.mkdtemp(), "ledger.db")
    >>> acc = DurableAccountant.create(path, "study-1", epsilon_budget=1.0)
    >>> acc.spend(LaplaceEvent(scale=4.0), count=2, label="counts")
    >>> DurableAccountant(path, "study-1").spent().epsilon
    0.5
    """

    def __init__(self, url_or_path: str | Path | Engine, ledger_id: str, *, epsilon_budget: float | None = None,
                 delta_budget: float | None = None, method: str | None = None, unit: str | None = None,
                 neighbouring: Neighbouring | str | None = None, connection: Connection | None = None) -> None:
        asked = _asked(epsilon_budget, delta_budget, method, unit, neighbouring)
        self._setup(url_or_path, ledger_id, create=False)
        stored = self._retry(lambda: self._open(asked, connection, None), connection)
        self._settle(stored)

    @classmethod
    def create(cls, url_or_path: str | Path | Engine, ledger_id: str, *, epsilon_budget: float | None,
               delta_budget: float = 0.0, method: str = "basic", unit: str | None = None,
               neighbouring: Neighbouring | str | None = None, connection: Connection | None = None,
               exist_ok: bool = False) -> DurableAccountant:
        """Create a ledger (and its SQLite file and tables where missing) and open it.

        Parameters
        ----------
        url_or_path, ledger_id, connection
            As for the constructor.
        epsilon_budget : float or None
            The ε budget (required; None explicitly records spends without a limit).
        delta_budget, method, unit, neighbouring
            As for :class:`~dpbandits.privacy.accounting.Accountant`; stored with the ledger.
        exist_ok : bool, default False
            If the ledger exists: open it (its stored values must be the ones given), instead of
            refusing. A lost file is then created afresh: keep ``exist_ok=False`` where a missing
            ledger must be an error.

        Raises
        ------
        InvalidParameterError
            If the ledger exists (without ``exist_ok``) or exists with other values.
        """
        if not isinstance(exist_ok, bool):
            raise InvalidParameterError(f"exist_ok must be a bool; got {exist_ok!r}")
        asked = _asked(epsilon_budget, delta_budget, method, unit, neighbouring)
        self = cls.__new__(cls)
        self._setup(url_or_path, ledger_id, create=True)
        with self._storage_errors():
            create_ledger_tables(self.engine if connection is None else connection)
        stored = self._retry(lambda: self._open(asked, connection, exist_ok), connection)
        self._settle(stored)
        return self

    def _setup(self, url_or_path: str | Path | Engine, ledger_id: str, *, create: bool) -> None:
        self.ledger_id = _check_ledger_id(ledger_id)
        self._owns_engine = not isinstance(url_or_path, Engine)
        if isinstance(url_or_path, Engine):
            self.engine = url_or_path
            self._location: str | None = None
        elif isinstance(url_or_path, str | Path):
            self.engine = ledger_engine(url_or_path, create=create)
            path = _sqlite_path(str(url_or_path))
            self._location = str(path) if path is not None else self.engine.url.render_as_string(hide_password=False)
        else:
            raise InvalidParameterError(f"url_or_path must be a path, a URL or an Engine; got {url_or_path!r:.80}")
        if self.engine.dialect.name not in _SUPPORTED_DIALECTS:
            raise InvalidParameterError(f"a durable ledger runs on SQLite or PostgreSQL; got {self.engine.dialect.name!r}")
        self._sqlite = self.engine.dialect.name == "sqlite"
        self._writer = threading.Lock()  # this process's writers queue here, not in SQLite's busy loop

    def _settle(self, stored: dict[str, Any]) -> None:
        self.epsilon_budget = stored["epsilon_budget"]
        self.delta_budget = float(stored["delta_budget"])
        self.method = str(stored["method"])

    def _where(self) -> str:
        place = self._location if self._location is not None else self.engine.url.render_as_string(hide_password=True)
        return f"ledger {self.ledger_id!r} at {place}"

    @contextmanager
    def _storage_errors(self) -> Iterator[None]:
        try:
            yield
        except DBAPIError as exc:
            raise _storage_error(exc, self._where()) from None

    def _retry(self, call: Callable[[], T], connection: Connection | None) -> T:
        """``call()``, again after a serialization failure of the ledger's own transaction."""
        for attempt in range(_RETRIES):
            try:
                return call()
            except _Conflict:
                if connection is not None or attempt == _RETRIES - 1:
                    raise
                time.sleep(min(0.001 * 2 ** attempt, 0.1))
        raise AssertionError("unreachable")  # pragma: no cover

    def _check_schema(self, conn: Connection) -> None:
        """Refuse a database without the ledger's tables, or with tables of another layout."""
        inspector = inspect(conn)
        for table in LEDGER_METADATA.sorted_tables:
            if not inspector.has_table(table.name):
                raise LedgerNotFoundError(f"{self._where()}: the database has no table {table.name} (create the "
                                          "ledger with DurableAccountant.create, never by opening it)")
            found = {column["name"] for column in inspector.get_columns(table.name)}
            missing = [column.name for column in table.columns if column.name not in found]
            if missing:
                raise LedgerCorruptError(f"{self._where()}: table {table.name} lacks the column(s) {missing} (a ledger "
                                         "of an older dpbandits, or an edited table)")

    def _open(self, asked: dict[str, Any], connection: Connection | None, exist_ok: bool | None) -> dict[str, Any]:
        """Check the ledger's row against ``asked`` (``exist_ok`` not None: create it if missing)."""
        with self._storage_errors(), self._transaction(connection, exist_ok is not None) as conn:
            self._check_schema(conn)
            row = conn.execute(select(ledgers).where(ledgers.c.ledger_id == self.ledger_id)).first()
            if row is not None and exist_ok is False:
                raise InvalidParameterError(f"{self._where()} already exists: open it with DurableAccountant(...), "
                                            "or pass exist_ok=True")
            if row is None:
                if exist_ok is None:
                    raise LedgerNotFoundError(f"{self._where()} does not exist (create it with "
                                              "DurableAccountant.create, never by opening it)")
                values = {"epsilon_budget": asked["epsilon_budget"], "delta_budget": asked["delta_budget"],
                          "method": asked["method"], "unit": asked["unit"], "neighbouring": asked["neighbouring"]}
                genesis = genesis_link(self.ledger_id, values["epsilon_budget"], values["delta_budget"], values["method"])
                conn.execute(_insert_ignore(conn, ledgers).values(
                    ledger_id=self.ledger_id, created_at=time.time(), entries=0, head=genesis, continuations=0,
                    serial=0, **values))
                row = conn.execute(select(ledgers).where(ledgers.c.ledger_id == self.ledger_id)).one()
            stored = _stored_settings(self.ledger_id, row)
            self._settle(stored)
            self._state(conn, write=False)  # the whole recorded state must read, or the ledger is refused
        for name, value in asked.items():
            # creating: the ε budget (None: no limit) must be the stored one too
            if (value is not None or (name == "epsilon_budget" and exist_ok is not None)) and value != stored[name]:
                raise InvalidParameterError(
                    f"ledger {self.ledger_id!r} was created with {name}={stored[name]!r}; refusing to reopen it "
                    f"with {name}={value!r}"
                )
        return stored

    # -- storage hooks -----------------------------------------------------------------------------

    def _begin(self, conn: Connection, write: bool) -> None:
        """On SQLite, begin now if the driver has not (pysqlite is lazy): a writer takes the write lock."""
        if self._sqlite:
            driver = conn.connection.driver_connection
            if driver is not None and not driver.in_transaction:
                conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")

    def _autocommit(self, conn: Connection) -> bool:
        """Whether PostgreSQL's driver commits every statement (no transaction would hold the row's lock)."""
        return not self._sqlite and bool(getattr(conn.connection.driver_connection, "autocommit", False))

    @contextmanager
    def _transaction(self, connection: Connection | None, write: bool = True) -> Iterator[Connection]:
        """The caller's connection (in its transaction), or a new transaction (committed on success)."""
        if connection is not None:
            if not isinstance(connection, Connection):
                raise InvalidParameterError(f"connection must be a sqlalchemy Connection; got {connection!r:.80}")
            if connection.engine.dialect.name != self.engine.dialect.name:
                raise InvalidParameterError("connection must be on the ledger's database")
            if not connection.in_transaction() or self._autocommit(connection):
                raise InvalidParameterError("connection= must be inside a transaction of the caller's (not in "
                                            "autocommit mode): the spend commits or rolls back with it")
            self._begin(connection, write)
            yield connection
            return
        with self._writer if self._sqlite and write else nullcontext(), self.engine.connect() as conn:
            if self._autocommit(conn):
                raise InvalidParameterError("the ledger's engine is in autocommit mode: a check-and-record needs a "
                                            "transaction (use an engine without isolation_level='AUTOCOMMIT')")
            conn = conn.execution_options(sqlite_immediate=write)
            with conn.begin():
                self._begin(conn, write)
                yield conn

    def _state(self, conn: Connection, *, write: bool) -> _DurableView:
        """The ledger's complete state in ``conn``'s transaction, its chain checked against its row.

        ``write``: first write the ledger's row, which serialises every check-and-record on it (the
        row's write lock is held to the end of the transaction; a concurrent committed spend makes
        PostgreSQL's REPEATABLE READ and SERIALIZABLE fail here rather than read a stale snapshot).
        Otherwise, on PostgreSQL, the row is read ``FOR SHARE`` (no spend commits between the reads).
        """
        where = ledgers.c.ledger_id == self.ledger_id
        if write and conn.execute(update(ledgers).where(where).values(serial=ledgers.c.serial + 1)).rowcount != 1:
            raise LedgerNotFoundError(f"{self._where()} is missing from its database")
        query = select(ledgers).where(where)
        row = conn.execute(query if self._sqlite or write else query.with_for_update(read=True)).first()
        if row is None:
            raise LedgerNotFoundError(f"{self._where()} is missing from its database")
        stored = _stored_settings(self.ledger_id, row)
        if (stored["epsilon_budget"], stored["delta_budget"], stored["method"]) != (
                self.epsilon_budget, self.delta_budget, self.method):
            raise LedgerCorruptError(f"{self._where()}: its budget or method changed in the database since it was opened")
        rows = conn.execute(select(ledger_entries).where(ledger_entries.c.ledger_id == self.ledger_id)
                            .order_by(ledger_entries.c.id)).all()
        genesis = genesis_link(self.ledger_id, self.epsilon_budget, self.delta_budget, self.method)
        verify_chain(self.ledger_id, genesis, [(row_.id, row_.link, _fields(row_)) for row_ in rows], row.head,
                     row.entries)
        entries = [_entry_from_row(row_) for row_ in rows]
        total = conn.execute(select(func.coalesce(func.sum(ledger_continuations.c.continuations), 0)).where(
            ledger_continuations.c.ledger_id == self.ledger_id)).scalar_one()
        if int(total) != row.continuations:
            raise LedgerCorruptError(f"{self._where()} records {row.continuations} continuations but its "
                                     f"continuations table holds {total}; the table was edited or rolled back")
        return _DurableView(conn, self.ledger_id, stored["unit"],
                            None if stored["neighbouring"] is None else check_neighbouring(stored["neighbouring"]),
                            entries, row.head, row.entries)

    @contextmanager
    def _locked(self, connection: Any = None) -> Iterator[LedgerView]:
        with self._storage_errors(), self._transaction(connection) as conn:
            yield self._state(conn, write=True)

    def _read(self, connection: Any = None) -> LedgerView:
        def read() -> LedgerView:
            with self._storage_errors(), self._transaction(connection, False) as conn:
                view = self._state(conn, write=False)
            return LedgerView(view.unit, view.neighbouring, list(view.entries), {})

        return self._retry(read, connection)

    def spend(self, *args: Any, **kwargs: Any) -> None:
        """As :meth:`Accountant.spend`; the ledger's own transaction is retried after a serialization failure."""
        self._retry(lambda: Accountant.spend(self, *args, **kwargs), kwargs.get("connection"))

    def record_continuation(self, *args: Any, **kwargs: Any) -> int:
        """As :meth:`Accountant.record_continuation` (returns the issued generation); retried as :meth:`spend`."""
        return self._retry(lambda: Accountant.record_continuation(self, *args, **kwargs), kwargs.get("connection"))

    def continuations(self, *, connection: Connection | None = None) -> dict[tuple[str, int], int]:
        """How many times each saved (lineage, generation) was continued under this ledger."""
        def read() -> dict[tuple[str, int], int]:
            with self._storage_errors(), self._transaction(connection, False) as conn:
                self._state(conn, write=False)
                rows = conn.execute(select(ledger_continuations).where(
                    ledger_continuations.c.ledger_id == self.ledger_id)).all()
            return {(row.lineage, int(row.generation)): int(row.continuations) for row in rows}

        return self._retry(read, connection)

    def anchor(self, *, connection: Connection | None = None) -> LedgerAnchor:
        """The ledger's position and head link, to keep outside the database (see :meth:`check_anchor`).

        The database cannot tell that it was rolled back as a whole to an older consistent copy (a
        restored backup, a swapped file): an anchor recorded elsewhere after a spend can.
        """
        def read() -> LedgerAnchor:
            with self._storage_errors(), self._transaction(connection, False) as conn:
                view = self._state(conn, write=False)
            return LedgerAnchor(view.count, view.head)

        return self._retry(read, connection)

    def check_anchor(self, anchor: LedgerAnchor | str, *, connection: Connection | None = None) -> None:
        """Refuse the ledger unless it still holds ``anchor``'s link at ``anchor``'s position.

        Raises
        ------
        LedgerCorruptError
            If the ledger holds fewer entries than the anchor (rolled back), or another link there
            (rewritten).
        """
        wanted = LedgerAnchor.parse(anchor)
        genesis = genesis_link(self.ledger_id, self.epsilon_budget, self.delta_budget, self.method)

        def read() -> list[str]:
            with self._storage_errors(), self._transaction(connection, False) as conn:
                self._state(conn, write=False)  # the chain checked first
                rows = conn.execute(select(ledger_entries.c.link).where(
                    ledger_entries.c.ledger_id == self.ledger_id).order_by(ledger_entries.c.id)).all()
            return [genesis, *(row.link for row in rows)]

        links = self._retry(read, connection)
        if wanted.entries >= len(links):
            raise LedgerCorruptError(f"{self._where()} holds {len(links) - 1} entries, fewer than the anchor's "
                                     f"{wanted.entries}: it was rolled back")
        if links[wanted.entries] != wanted.link:
            raise LedgerCorruptError(f"{self._where()}: entry {wanted.entries} is not the anchored one: the ledger "
                                     "was rewritten or rolled back")

    def __repr__(self) -> str:
        url = self.engine.url.render_as_string(hide_password=True)
        budget = "inf" if self.epsilon_budget is None else f"{self.epsilon_budget:g}"
        return f"DurableAccountant({url!r}, {self.ledger_id!r}, epsilon_budget={budget}, method={self.method!r})"

    def __reduce__(self) -> Any:
        """A copy reopens the same ledger by its location (never creating it): both spend one budget."""
        if self._location is None:
            raise InvalidParameterError(
                "a DurableAccountant on an engine of the caller's cannot be pickled: open the ledger by its "
                "path or URL in each process"
            )
        return (DurableAccountant, (self._location, self.ledger_id))

    def close(self) -> None:
        """Release the engine's connections (only for an engine this ledger created)."""
        if self._owns_engine:
            self.engine.dispose()


def _asked(epsilon_budget: float | None, delta_budget: float | None, method: str | None, unit: str | None,
           neighbouring: Neighbouring | str | None) -> dict[str, Any]:
    return {
        "epsilon_budget": None if epsilon_budget is None else check_epsilon(epsilon_budget, "epsilon_budget"),
        "delta_budget": None if delta_budget is None else check_delta(delta_budget, "delta_budget"),
        "method": None if method is None else check_one_of(method, "method", ACCOUNTING_METHODS),
        "unit": check_unit(unit),
        "neighbouring": None if neighbouring is None else check_neighbouring(neighbouring).value,
    }
