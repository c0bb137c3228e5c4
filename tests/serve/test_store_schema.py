"""The store's schema version (issue 37): a store is opened at this release's version, migrated, or
refused in one line before anything in it is read -- never misread.

``data/store_0.1.0_5e208c9.sql`` is a store made by the release before schema versions (commit
5e208c9, see ``data/make_previous_release_store.py``): an API key, a finished DP-BAI experiment and
its ledger's spend, in that release's ledger tables (without this release's chain columns).
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from servetools import Store
from sqlalchemy import delete, text, update

from dpbandits.serve import storage
from dpbandits.serve.errors import StoreSchemaError
from dpbandits.serve.storage import SCHEMA_VERSION, make_engine, settings

PREVIOUS_RELEASE = Path(__file__).parent / "data" / "store_0.1.0_5e208c9.sql"


def _previous_release_store(tmp_path: Path) -> Path:
    path = tmp_path / "old.db"
    connection = sqlite3.connect(path)
    connection.executescript(PREVIOUS_RELEASE.read_text())
    connection.close()
    return path


def _dump(path: Path) -> list[str]:
    connection = sqlite3.connect(path)
    try:
        return list(connection.iterdump())
    finally:
        connection.close()


def _set_version(path: Path, value: bytes | None) -> None:
    engine = make_engine(str(path))
    with engine.begin() as connection:
        if value is None:
            connection.execute(delete(settings).where(settings.c.name == "schema_version"))
        else:
            connection.execute(update(settings).where(settings.c.name == "schema_version").values(value=value))
    engine.dispose()


def test_the_previous_release_store_holds_an_experiment_and_a_spend(tmp_path: Path) -> None:
    # the test data is what it claims: the old layout, with a recorded spend
    connection = sqlite3.connect(_previous_release_store(tmp_path))
    columns = {row[1] for row in connection.execute("PRAGMA table_info(dpbandits_ledgers)")}
    assert "head" not in columns and "entries" not in columns
    assert connection.execute("SELECT count(*) FROM experiments").fetchone() == (1,)
    assert connection.execute("SELECT count(*) FROM dpbandits_ledger_entries").fetchone() == (1,)
    assert connection.execute("SELECT count(*) FROM settings WHERE name = 'schema_version'").fetchone() == (0,)
    connection.close()


def test_a_store_of_the_previous_release_is_refused_in_one_line_and_left_as_it_was(tmp_path: Path) -> None:
    path = _previous_release_store(tmp_path)
    before = _dump(path)
    with pytest.raises(StoreSchemaError) as refused:
        make_engine(str(path))
    message = str(refused.value)
    assert "\n" not in message
    assert "records no schema version" in message and "earlier dpbandits" in message
    assert f"store schema version {SCHEMA_VERSION}" in message and "start a new store" in message
    assert _dump(path) == before  # nothing created, stamped or read into the old tables


def test_dpbandits_serve_refuses_the_previous_release_store_in_one_line(tmp_path: Path) -> None:
    path = _previous_release_store(tmp_path)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    for command in (["-m", "dpbandits", "serve", "--db", str(path), "--port", "0"],
                    ["-m", "dpbandits.serve", "--db", str(path), "--port", "0"]):
        done = subprocess.run([sys.executable, *command], capture_output=True, text=True, timeout=30, env=env)
        assert done.returncode == 1, (command, done.stdout, done.stderr)
        lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
        assert len(lines) == 1 and "Traceback" not in lines[0], (command, lines)
        assert "records no schema version" in lines[0] and "start a new store" in lines[0]


def test_a_new_store_records_its_version_and_reopens(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    make_engine(str(path)).dispose()
    engine = make_engine(str(path))
    with engine.connect() as connection:
        recorded = connection.execute(text("SELECT value FROM settings WHERE name = 'schema_version'")).scalar_one()
    engine.dispose()
    assert bytes(recorded) == str(SCHEMA_VERSION).encode()


@pytest.mark.parametrize(("value", "expected"), [
    (None, "records no schema version"),
    (str(SCHEMA_VERSION + 1).encode(), "written by a newer dpbandits"),
    (b"1; DROP TABLE experiments", "unreadable schema version"),
    (b"", "unreadable schema version"),
])
def test_a_store_of_another_or_no_version_is_refused(tmp_path: Path, value: bytes | None, expected: str) -> None:
    path = tmp_path / "s.db"
    make_engine(str(path)).dispose()
    _set_version(path, value)
    with pytest.raises(StoreSchemaError, match=expected):
        make_engine(str(path))


def test_a_stamped_store_missing_a_table_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    make_engine(str(path)).dispose()
    connection = sqlite3.connect(path)
    connection.execute("DROP TABLE leases")
    connection.close()
    with pytest.raises(StoreSchemaError, match=r"lacks the table\(s\) \['leases'\]"):
        make_engine(str(path))
    connection = sqlite3.connect(path)
    assert connection.execute("SELECT name FROM sqlite_master WHERE name = 'leases'").fetchone() is None  # not re-created
    connection.close()


@pytest.fixture
def next_version(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """This release as if it were the next: version SCHEMA_VERSION + 1, with or without a migration."""
    monkeypatch.setattr(storage, "SCHEMA_VERSION", SCHEMA_VERSION + 1)
    monkeypatch.setattr(storage, "MIGRATIONS", {})
    yield []


def test_an_older_version_without_a_migration_is_refused(tmp_path: Path, next_version: list[int]) -> None:
    path = tmp_path / "s.db"
    make_engine(str(path)).dispose()
    _set_version(path, str(SCHEMA_VERSION).encode())
    with pytest.raises(StoreSchemaError, match=f"schema version {SCHEMA_VERSION}, .* has no migration from it"):
        make_engine(str(path))


def test_an_older_version_is_migrated_once_and_stamped(tmp_path: Path, next_version: list[int]) -> None:
    path = tmp_path / "s.db"
    make_engine(str(path)).dispose()
    _set_version(path, str(SCHEMA_VERSION).encode())
    ran: list[int] = []

    def add_column(connection: object) -> None:
        ran.append(1)
        connection.execute(text("ALTER TABLE experiments ADD COLUMN migrated INTEGER"))  # type: ignore[attr-defined]

    storage.MIGRATIONS[SCHEMA_VERSION] = add_column
    make_engine(str(path)).dispose()
    make_engine(str(path)).dispose()  # stamped: not migrated twice
    assert ran == [1]
    connection = sqlite3.connect(path)
    assert "migrated" in {row[1] for row in connection.execute("PRAGMA table_info(experiments)")}
    assert connection.execute("SELECT value FROM settings WHERE name = 'schema_version'").fetchone() == (
        str(SCHEMA_VERSION + 1).encode(),)
    connection.close()


def test_a_store_without_its_version_is_refused_on_both_backends(store: Store) -> None:
    engine = make_engine(store.db)
    with engine.begin() as connection:
        connection.execute(delete(settings).where(settings.c.name == "schema_version"))
    engine.dispose()
    with pytest.raises(StoreSchemaError, match="records no schema version") as refused:
        make_engine(store.db)
    assert "\n" not in str(refused.value)


def test_a_version_1_store_gains_the_process_tables_and_keeps_its_rows(store: Store) -> None:
    """Version 1 -> 2 adds ``processes`` and ``owners`` (experiment affinity), on both backends."""
    engine = make_engine(store.db)
    with engine.begin() as connection:
        connection.execute(text("DROP TABLE owners"))
        connection.execute(text("DROP TABLE processes"))
        connection.execute(update(settings).where(settings.c.name == "schema_version").values(value=b"1"))
        keys = connection.execute(text("SELECT count(*) FROM api_keys")).scalar_one()
    engine.dispose()
    engine = make_engine(store.db)
    with engine.connect() as connection:
        assert connection.execute(text("SELECT value FROM settings WHERE name = 'schema_version'")).scalar_one() \
            == str(SCHEMA_VERSION).encode()
        assert connection.execute(text("SELECT count(*) FROM owners")).scalar_one() == 0
        assert connection.execute(text("SELECT count(*) FROM processes")).scalar_one() == 0
        assert connection.execute(text("SELECT count(*) FROM api_keys")).scalar_one() == keys == 2
    engine.dispose()
