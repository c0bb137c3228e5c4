"""Safe copies of a SQLite ledger file, and the check of every ledger a file holds.

Copying a live ledger file with ``cp`` is not a backup: a copy taken while a spend commits can be
torn, and a file in WAL mode keeps its latest commits in ``-wal`` (a copy of the main file alone
may miss them). :func:`backup_ledger` uses SQLite's online backup API: it copies a consistent
snapshot while other processes keep spending, writes it as one self-contained file (rollback
journal), checks every ledger in the copy (each hash chain) and only then moves it into place.
It prints, and returns, each ledger's anchor (``<entries>:<head link>``): kept outside the file, an
anchor is what detects a later rollback of the whole file to an older copy
(:meth:`~dpbandits.privacy.ledger_store.DurableAccountant.check_anchor`).

PostgreSQL ledgers are backed up with the server's own tools (``pg_dump``); they are refused here.
"""

from __future__ import annotations

import os
import sqlite3
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from sqlalchemy import create_engine, select

from dpbandits._core.errors import InvalidParameterError, LedgerNotFoundError, LedgerStorageError
from dpbandits.privacy.ledger_chain import LedgerAnchor
from dpbandits.privacy.ledger_store import DurableAccountant, ledgers

__all__ = ["LedgerSummary", "backup_ledger", "check_ledger_file"]


@dataclass(frozen=True)
class LedgerSummary:
    """One ledger of a file: its id, ε spent (at its δ budget), ε budget and anchor."""

    ledger_id: str
    spent: float
    epsilon_budget: float | None
    anchor: LedgerAnchor


def _sqlite_file(location: str | Path, what: str) -> Path:
    text = str(location)
    if not text or "://" in text:
        raise InvalidParameterError(f"{what} must be the path of a SQLite ledger file (back up PostgreSQL with "
                                    f"pg_dump); got {text!r:.100}")
    path = Path(text).expanduser().resolve()
    if path.is_dir():
        raise LedgerStorageError(f"{path} is a directory, not a ledger file")
    return path


def check_ledger_file(path: str | Path) -> list[LedgerSummary]:
    """Open every ledger of a SQLite ledger file, check it completely, and summarise it.

    Raises
    ------
    LedgerNotFoundError, LedgerCorruptError, LedgerStorageError
        As :class:`~dpbandits.privacy.ledger_store.DurableAccountant` raises them.
    """
    file = _sqlite_file(path, "path")
    if not file.is_file():
        raise LedgerNotFoundError(f"no ledger file at {file}")
    # read-only, the file's journal mode left as it is
    engine = create_engine(f"sqlite:///file:{quote(str(file), safe='/')}?mode=ro&uri=true",
                           connect_args={"timeout": 30.0})
    try:
        try:
            with engine.connect() as connection:
                ids = [row[0] for row in connection.execute(select(ledgers.c.ledger_id).order_by(ledgers.c.ledger_id))]
        except Exception as exc:  # no table, not a database: the constructor reports it in one line
            from sqlalchemy.exc import DBAPIError

            if not isinstance(exc, DBAPIError):
                raise
            if "no such table" in str(exc.orig):
                raise LedgerNotFoundError(f"{file} holds no ledger (no table {ledgers.name})") from None
            raise LedgerStorageError(f"{file}: the database failed: {str(exc.orig).splitlines()[0]}") from None
        summaries = []
        for ledger_id in ids:
            ledger = DurableAccountant(engine, ledger_id)
            summaries.append(LedgerSummary(ledger_id, ledger.spent().epsilon, ledger.epsilon_budget, ledger.anchor()))
        return summaries
    finally:
        engine.dispose()


def backup_ledger(source: str | Path, destination: str | Path) -> list[LedgerSummary]:
    """Copy a SQLite ledger file safely (SQLite's online backup), check the copy, and return its ledgers.

    Parameters
    ----------
    source : str or Path
        The ledger file; processes may be spending on it meanwhile (the copy is one consistent
        snapshot: every spend committed before the copy began, none after).
    destination : str or Path
        A new file (an existing one is refused, never overwritten).

    Returns
    -------
    list of LedgerSummary
        Each ledger of the copy, with its anchor (record it elsewhere: see the module docstring).

    Raises
    ------
    LedgerNotFoundError
        If ``source`` does not exist or holds no ledger.
    LedgerCorruptError
        If a ledger of the copy fails its check (the source is then damaged too); nothing is kept.
    LedgerStorageError
        If the source is not a database, or the copy cannot be written.
    """
    origin = _sqlite_file(source, "source")
    target = _sqlite_file(destination, "destination")
    if not origin.is_file():
        raise LedgerNotFoundError(f"no ledger file at {origin}")
    if target.exists() or target.is_symlink():
        raise InvalidParameterError(f"{target} exists: a backup is written to a new file only")
    if not target.parent.is_dir():
        raise InvalidParameterError(f"{target.parent} is not a directory")
    partial = target.with_name(f".{target.name}.partial-{os.getpid()}")
    try:
        try:
            with closing(sqlite3.connect(origin.as_uri() + "?mode=ro", uri=True, timeout=30.0)) as reader, \
                    closing(sqlite3.connect(partial)) as writer:
                reader.execute("PRAGMA busy_timeout=30000")
                reader.backup(writer)  # one step: a consistent snapshot of every committed transaction
                writer.execute("PRAGMA journal_mode=DELETE")
                writer.commit()
            with open(partial, "rb") as handle:
                os.fsync(handle.fileno())
        except sqlite3.Error as exc:
            raise LedgerStorageError(f"backing up {origin} failed: {str(exc).splitlines()[0]}") from None
        except OSError as exc:
            raise LedgerStorageError(f"backing up {origin} to {target} failed: {exc.strerror or exc}") from None
        summaries = check_ledger_file(partial)
        os.link(partial, target)  # fails rather than overwrite a file created meanwhile
    except FileExistsError:
        raise InvalidParameterError(f"{target} exists: a backup is written to a new file only") from None
    finally:
        partial.unlink(missing_ok=True)
    directory = os.open(target.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)
    return summaries
