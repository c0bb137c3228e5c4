"""The durable ledger fails closed (issue 32): opening never creates, an edited or lost ledger is refused,
a committed spend is in the main file, database failures are one dpbandits error, backups are safe."""

from __future__ import annotations

import os
import pickle
import shutil
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from ledgertools import hammer
from sqlalchemy import create_engine, delete, event, insert, text, update

from dpbandits._core.errors import (
    DPBanditsError,
    InvalidParameterError,
    LedgerCorruptError,
    LedgerNotFoundError,
    LedgerStorageError,
    PrivacyBudgetExceededError,
)
from dpbandits.privacy.accounting import PureEvent
from dpbandits.privacy.ledger_backup import backup_ledger
from dpbandits.privacy.ledger_store import (
    DurableAccountant,
    ledger_continuations,
    ledger_engine,
    ledger_entries,
    ledgers,
)

EPSILON = 0.0625


def _ledger(tmp_path: Path, spends: int = 3, budget: float | None = 1.0) -> tuple[Path, DurableAccountant]:
    path = tmp_path / "ledger.db"
    acc = DurableAccountant.create(path, "l", epsilon_budget=budget)
    for i in range(spends):
        acc.spend(PureEvent(EPSILON), label=f"spend {i}")
    return path, acc


# -- defect 3: creating and opening are different calls ----------------------------------------------


def test_opening_never_creates_a_file_a_table_or_a_ledger(tmp_path: Path) -> None:
    missing = tmp_path / "missing.db"
    with pytest.raises(LedgerNotFoundError, match="no ledger file"):
        DurableAccountant(missing, "l")
    with pytest.raises(LedgerNotFoundError):
        DurableAccountant(missing, "l", epsilon_budget=1.0)  # a budget does not make an open a creation
    assert not missing.exists()
    empty = tmp_path / "empty.db"
    empty.touch()  # a 0-byte file (a lost ledger) is no ledger, not a fresh one
    with pytest.raises(LedgerNotFoundError, match="no table dpbandits_ledgers"):
        DurableAccountant(empty, "l")
    path, acc = _ledger(tmp_path)
    with pytest.raises(LedgerNotFoundError, match=r"'other' .* does not exist"):
        DurableAccountant(path, "other")
    with pytest.raises(InvalidParameterError, match="already exists"):
        DurableAccountant.create(path, "l", epsilon_budget=1.0)
    with pytest.raises(InvalidParameterError, match="refusing to reopen"):
        DurableAccountant.create(path, "l", epsilon_budget=None, exist_ok=True)  # no limit is not the budget
    assert DurableAccountant.create(path, "l", epsilon_budget=1.0, exist_ok=True).spent().epsilon == 3 * EPSILON
    # a pickled ledger reopens on another host: where the file is missing it is an error, never a new ledger
    shipped = pickle.dumps(acc)
    acc.close()
    os.replace(path, tmp_path / "moved.db")
    with pytest.raises(LedgerNotFoundError):
        pickle.loads(shipped)
    assert not path.exists()


def test_a_dropped_or_emptied_table_is_refused_not_recreated(tmp_path: Path) -> None:
    path, acc = _ledger(tmp_path)
    acc.record_continuation("lineage", 0)
    engine = ledger_engine(path)
    with engine.begin() as conn:
        conn.execute(delete(ledger_continuations))  # forks would be free again
    with pytest.raises(LedgerCorruptError, match="continuations"):
        acc.record_continuation("lineage", 0)
    with pytest.raises(LedgerCorruptError, match="continuations"):
        DurableAccountant(path, "l")
    with engine.begin() as conn:
        conn.exec_driver_sql("DROP TABLE dpbandits_ledger_continuations")
    with pytest.raises(LedgerNotFoundError, match="dpbandits_ledger_continuations"):
        DurableAccountant(path, "l")
    with pytest.raises(LedgerStorageError, match="no such table"):
        acc.spend(PureEvent(EPSILON))  # an open handle fails too, in one line
    (tmp_path / "b").mkdir()
    path2, acc2 = _ledger(tmp_path / "b")
    engine2 = ledger_engine(path2)
    with engine2.begin() as conn:
        conn.exec_driver_sql("DROP TABLE dpbandits_ledger_entries")
    with pytest.raises(LedgerNotFoundError, match="dpbandits_ledger_entries"):
        DurableAccountant(path2, "l")  # before: recreated empty, 0 spent
    with pytest.raises(LedgerStorageError):
        acc2.spend(PureEvent(EPSILON))
    engine.dispose()
    engine2.dispose()


@pytest.mark.parametrize("edit", ["delete", "negative id", "zero id", "event", "label", "reorder", "budget",
                                  "rollback entries", "rollback head"])
def test_an_edited_or_rolled_back_ledger_is_refused(tmp_path: Path, edit: str) -> None:
    path, acc = _ledger(tmp_path)
    engine = ledger_engine(path)
    with engine.begin() as conn:
        old_rows = [dict(r._mapping) for r in conn.execute(ledger_entries.select().order_by(ledger_entries.c.id))]
        old_ledger = dict(conn.execute(ledgers.select()).one()._mapping)
    acc.spend(PureEvent(EPSILON), label="later")
    with engine.begin() as conn:
        rows = [dict(r._mapping) for r in conn.execute(ledger_entries.select().order_by(ledger_entries.c.id))]
        if edit == "delete":
            conn.execute(delete(ledger_entries).where(ledger_entries.c.id == rows[1]["id"]))
        elif edit in ("negative id", "zero id"):  # before: never read, and the next spend got id 0, uncounted
            conn.execute(insert(ledger_entries).values({**rows[0], "id": -5 if edit == "negative id" else 0}))
        elif edit == "event":
            conn.execute(update(ledger_entries).where(ledger_entries.c.id == rows[0]["id"]).values(
                event='{"type": "PureEvent", "epsilon": 1e-09}'))
        elif edit == "label":
            conn.execute(update(ledger_entries).where(ledger_entries.c.id == rows[2]["id"]).values(label="x"))
        elif edit == "reorder":
            conn.execute(update(ledger_entries).where(ledger_entries.c.id == rows[0]["id"]).values(id=1000))
        elif edit == "budget":
            conn.execute(update(ledgers).values(epsilon_budget=100.0))
        elif edit == "rollback entries":  # the entry table restored from an older copy, the row kept
            conn.execute(delete(ledger_entries))
            conn.execute(insert(ledger_entries), old_rows)
        elif edit == "rollback head":  # the row restored from an older copy, the entries kept
            conn.execute(update(ledgers).values(entries=old_ledger["entries"], head=old_ledger["head"]))
    engine.dispose()
    with pytest.raises(LedgerCorruptError):
        DurableAccountant(path, "l").spent()
    with pytest.raises(LedgerCorruptError):
        acc.spend(PureEvent(EPSILON))


def test_a_whole_file_rollback_is_caught_by_an_anchor_kept_elsewhere(tmp_path: Path) -> None:
    path, acc = _ledger(tmp_path)
    backup_ledger(path, tmp_path / "old.db")
    acc.spend(PureEvent(EPSILON))
    anchor = str(acc.anchor())
    acc.close()
    shutil.copyfile(tmp_path / "old.db", path)  # consistent, older: the file alone cannot tell
    rolled_back = DurableAccountant(path, "l")
    assert rolled_back.spent().epsilon == 3 * EPSILON
    with pytest.raises(LedgerCorruptError, match="rolled back"):
        rolled_back.check_anchor(anchor)
    with pytest.raises(InvalidParameterError, match="anchor must be"):
        rolled_back.check_anchor("3:xyz")


_IDLE_SPENDER = """
import sys, time
from dpbandits.privacy.accounting import PureEvent
from dpbandits.privacy.ledger_store import DurableAccountant
acc = DurableAccountant.create(sys.argv[1], "killed", epsilon_budget=1.0)
for i in range(int(sys.argv[2])):
    acc.spend(PureEvent(0.015625), label=f"spend {i}")
print("spent", flush=True)
time.sleep(600)
"""


def test_after_kill_9_the_main_file_alone_holds_every_acknowledged_spend(tmp_path: Path) -> None:
    path = tmp_path / "killed.db"
    child = subprocess.Popen([sys.executable, "-c", _IDLE_SPENDER, str(path), "12"], stdout=subprocess.PIPE,
                             text=True)
    assert child.stdout is not None and child.stdout.readline().strip() == "spent"
    os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=30)
    child.stdout.close()
    copy = tmp_path / "copy.db"
    shutil.copyfile(path, copy)  # the main file alone: before, 4 KiB with no tables (the spends in -wal)
    reopened = DurableAccountant(copy, "killed")
    assert [e.label for e in reopened.entries()] == [f"spend {i}" for i in range(12)]
    assert reopened.spent().epsilon == 12 * 0.015625
    assert not Path(f"{path}-wal").exists()


def test_backup_while_threads_spend_and_the_cli(tmp_path: Path) -> None:
    import threading

    from typer.testing import CliRunner

    from dpbandits.cli import app

    path, acc = _ledger(tmp_path, spends=0, budget=None)
    stop = threading.Event()

    def spend() -> None:
        while not stop.is_set():
            acc.spend(PureEvent(0.001))

    spender = threading.Thread(target=spend)
    spender.start()
    try:
        (summary,) = backup_ledger(path, tmp_path / "copy.db")
    finally:
        stop.set()
        spender.join()
    copy = DurableAccountant(tmp_path / "copy.db", "l")
    assert copy.anchor() == summary.anchor and copy.entries() == acc.entries()[: summary.anchor.entries]
    with pytest.raises(InvalidParameterError, match="exists"):
        backup_ledger(path, tmp_path / "copy.db")
    runner = CliRunner()
    result = runner.invoke(app, ["ledger", "backup", str(path), str(tmp_path / "cli.db")])
    assert result.exit_code == 0, result.output
    anchor = str(acc.anchor())
    assert result.output.startswith("l\tspent ") and anchor in result.output
    assert runner.invoke(app, ["ledger", "check", str(path), "--anchor", f"l={anchor}"]).exit_code == 0
    result = runner.invoke(app, ["ledger", "check", str(tmp_path / "copy.db"), "--anchor", f"l={anchor}"])
    assert result.exit_code == 1 and result.output.count("\n") == 1 and result.output.startswith("Error: ")


# -- defect 8: database failures are one dpbandits error --------------------------------------------


def _full_disk_engine(path: Path) -> Any:
    engine = create_engine(f"sqlite:///{path}")

    @event.listens_for(engine, "connect")
    def _small(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.execute("PRAGMA max_page_count=12")  # what a full disk looks like to SQLite

    return engine


def test_database_failures_are_one_dpbandits_error(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from dpbandits.cli import app

    text_file = tmp_path / "notes.txt"
    text_file.write_text("not a ledger\n" * 100)
    path, acc = _ledger(tmp_path, spends=20, budget=None)
    acc.close()
    truncated = tmp_path / "truncated.db"
    truncated.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(path.read_bytes()[:100] + b"\x00\xff" * 4000)
    for target, error in ((tmp_path, LedgerStorageError), (text_file, LedgerStorageError),
                          (truncated, DPBanditsError), (garbage, DPBanditsError)):
        with pytest.raises(error) as caught:
            DurableAccountant(target, "l").spend(PureEvent(EPSILON))
        assert "\n" not in str(caught.value) and "Traceback" not in str(caught.value)
        result = CliRunner().invoke(app, ["ledger", "check", str(target)])
        assert result.exit_code == 1 and result.output.count("\n") == 1 and result.output.startswith("Error: ")
        with pytest.raises(DPBanditsError):
            DurableAccountant.create(target, "l", epsilon_budget=1.0)
    full = _full_disk_engine(tmp_path / "full.db")
    ledger = DurableAccountant.create(full, "l", epsilon_budget=None)
    with pytest.raises(LedgerStorageError, match="database or disk is full"):
        for _ in range(2000):
            ledger.spend(PureEvent(0.001), label="x" * 900)
    assert DurableAccountant(full, "l").entries() == ledger.entries()  # the failed spend left nothing
    read_only = create_engine(f"sqlite:///file:{path}?mode=ro&uri=true")  # as a read-only file is, even for root
    with pytest.raises(LedgerStorageError, match="readonly"):
        DurableAccountant(read_only, "l").spend(PureEvent(EPSILON))
    assert DurableAccountant(read_only, "l").spent().epsilon == 20 * EPSILON  # reading still works
    if os.geteuid() != 0:
        os.chmod(path, 0o444)
        with pytest.raises(LedgerStorageError):
            DurableAccountant(path, "l").spend(PureEvent(EPSILON))


# -- defect 2 (one process): a caller's SQLite engine --------------------------------------------------


def test_a_callers_sqlite_engine_begins_immediate(tmp_path: Path) -> None:
    engine = create_engine(f"sqlite:///{tmp_path / 'app.db'}", connect_args={"check_same_thread": False})
    acc = DurableAccountant.create(engine, "l", epsilon_budget=1.0)
    assert hammer(acc, n_threads=6, epsilon=EPSILON, attempts=4) == 16 and acc.spent().epsilon == 1.0
    # inside the caller's transaction, pysqlite has not begun at the caller's first read: the ledger begins it
    with engine.connect() as conn, conn.begin():
        conn.execute(text("SELECT count(*) FROM dpbandits_ledger_entries")).scalar_one()
        with pytest.raises(PrivacyBudgetExceededError):
            acc.spend(PureEvent(EPSILON), connection=conn)
        driver = conn.connection.driver_connection
        assert driver is not None and driver.in_transaction
    with engine.connect() as conn, pytest.raises(InvalidParameterError, match="inside a transaction"):
        acc.spend(PureEvent(EPSILON), connection=conn.execution_options(isolation_level="AUTOCOMMIT"))
    engine.dispose()
    assert sqlite3.sqlite_version


# -- defect 1: PostgreSQL's REPEATABLE READ in the caller's transaction ---------------------------------


@pytest.mark.slow
def test_a_stale_repeatable_read_snapshot_cannot_overspend(postgres_cluster: Any) -> None:
    url = postgres_cluster.url
    acc = DurableAccountant.create(url, "stale-snapshot", epsilon_budget=1.0)
    engine = create_engine(url)
    with engine.connect() as conn:
        conn = conn.execution_options(isolation_level="REPEATABLE READ")
        with conn.begin() as transaction:
            assert conn.execute(text("SHOW transaction_isolation")).scalar_one() == "repeatable read"
            # the application reads first: its snapshot is taken here (spent(connection=conn) would hold
            # the ledger's row FOR SHARE, and the spend below would wait for this transaction)
            assert conn.execute(text("SELECT count(*) FROM dpbandits_ledger_entries WHERE ledger_id = 'stale-snapshot'")
                                ).scalar_one() == 0
            acc.spend(PureEvent(0.75))  # another process commits a spend meanwhile
            with pytest.raises(LedgerStorageError, match="conflicted"):  # before: accepted, 1.25 spent
                acc.spend(PureEvent(0.5), connection=conn)
            transaction.rollback()
    autocommit = create_engine(url, isolation_level="AUTOCOMMIT")
    with pytest.raises(InvalidParameterError, match="autocommit"):
        DurableAccountant(autocommit, "stale-snapshot").spend(PureEvent(0.1))
    autocommit.dispose()
    assert acc.spent().epsilon == 0.75
    engine.dispose()
    acc.close()
