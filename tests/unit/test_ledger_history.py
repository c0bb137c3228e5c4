"""The durable ledger's history checker (issue 32): processes spend, some are SIGKILLed, the history is checked.

See :mod:`ledgerhistory` for the model (spends, continuations under the window rule, loads of an
agent that pay its run once). The default run checks SQLite (a ledger opened by path, and
a caller's engine with pysqlite's lazy transactions); ``--run-slow`` adds a spend inside the
caller's SQLite transaction, SQLite in WAL mode, and PostgreSQL at READ COMMITTED, REPEATABLE READ and
SERIALIZABLE, set on the database, on the engine and on the caller's own transaction.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from ledgerhistory import check_continuations, check_history, create_ledger, recorded_entries, run_history

from dpbandits.privacy.ledger_store import DurableAccountant

LEVELS = ("READ COMMITTED", "REPEATABLE READ", "SERIALIZABLE")


def _check_sqlite(tmp_path: Path, store: str, *, seed: int, workers: int, threads: int, ops: int, kills: int) -> None:
    from sqlalchemy import create_engine

    path = tmp_path / f"{store}.db"
    ledger_id = f"history-{store}"
    if store == "sqlite":
        create_ledger(str(path), ledger_id)
    else:
        engine = create_engine(f"sqlite:///{path}")
        if store.endswith("-wal"):
            with engine.connect() as conn:
                conn.exec_driver_sql("PRAGMA journal_mode=WAL")
        create_ledger(engine, ledger_id)
        engine.dispose()
    history = run_history(tmp_path, {"store": store, "location": str(path), "ledger": ledger_id},
                          seed=seed, workers=workers, threads=threads, ops=ops, kills=kills)
    reopened = DurableAccountant(str(path), ledger_id) if store == "sqlite" else None
    if reopened is None:
        engine = create_engine(f"sqlite:///{path}")
        reopened = DurableAccountant(engine, ledger_id)
    recorded = recorded_entries(reopened)
    check_history(history, recorded, reopened.spent().epsilon, errors_fail=store.endswith("-connection"))
    check_continuations(history, reopened.continuations(), recorded, errors_fail=store.endswith("-connection"))
    if not store.endswith("-connection"):
        assert not history.errors, f"the ledger's own transactions failed: {history.errors[:3]}"
    if store == "sqlite":
        # the main file alone (what a user copies) holds every recorded spend once no write is in progress
        copy = tmp_path / "copied-alone.db"
        shutil.copyfile(path, copy)
        alone = DurableAccountant(str(copy), ledger_id)
        assert recorded_entries(alone) == recorded, "the main file alone lacks committed spends"
        alone.close()
    reopened.close()


@pytest.mark.parametrize("store", ["sqlite", "sqlite-engine"])
def test_history_on_sqlite(tmp_path: Path, store: str) -> None:
    _check_sqlite(tmp_path, store, seed=32, workers=2, threads=2, ops=6, kills=1)


@pytest.mark.slow
@pytest.mark.parametrize("store", ["sqlite-engine", "sqlite-engine-wal", "sqlite-engine-connection"])
def test_history_on_sqlite_longer(tmp_path: Path, store: str) -> None:
    # 4 processes x 3 threads: with the row-first write and BEGIN IMMEDIATE both removed, this size
    # caught the race (a forked hash chain) in 3 runs of 3; the default run's size did not
    _check_sqlite(tmp_path, store, seed=len(store), workers=4, threads=3, ops=8, kills=2)


def _pg_database(cluster: Any, level: str) -> str:
    """A database of the cluster whose default_transaction_isolation is ``level`` (created once)."""
    import psycopg

    name = "history_" + level.lower().replace(" ", "_")
    with psycopg.connect(f"host=127.0.0.1 port={cluster.port} user=postgres dbname=postgres",
                         autocommit=True) as connection:
        exists = connection.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
        if exists is None:
            connection.execute(f'CREATE DATABASE "{name}"')
            connection.execute(f"ALTER DATABASE \"{name}\" SET default_transaction_isolation = '{level.lower()}'")
    return f"postgresql+psycopg://postgres@127.0.0.1:{cluster.port}/{name}"


@pytest.mark.slow
@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("way", ["pg-database", "pg-engine", "pg-connection"])
def test_history_on_postgres(tmp_path: Path, postgres_cluster: Any, way: str, level: str) -> None:
    from sqlalchemy import create_engine, text

    url = _pg_database(postgres_cluster, level) if way == "pg-database" else postgres_cluster.url
    ledger_id = f"history-{way}-{level}-{tmp_path.name}"
    create_ledger(url, ledger_id)
    if way == "pg-database":
        engine = create_engine(url)
        with engine.connect() as conn:
            assert conn.execute(text("SHOW transaction_isolation")).scalar_one() == level.lower()
        engine.dispose()
    history = run_history(tmp_path, {"store": way, "location": url, "ledger": ledger_id, "level": level},
                          seed=len(way) * 7 + len(level), workers=2, threads=2, ops=8, kills=1)
    reopened = DurableAccountant(url, ledger_id)
    recorded = recorded_entries(reopened)
    check_history(history, recorded, reopened.spent().epsilon, errors_fail=way == "pg-connection")
    check_continuations(history, reopened.continuations(), recorded, errors_fail=way == "pg-connection")
    if way != "pg-connection":  # the ledger's own transactions retry serialization failures
        assert not history.errors, f"the ledger's own transactions failed: {history.errors[:3]}"
    reopened.close()
