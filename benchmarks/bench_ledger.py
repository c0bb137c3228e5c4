"""Benchmark of a durable ledger's spend, per SQLite journal configuration, as ratios in one run.

Usage::

    python benchmarks/bench_ledger.py            # full size (lead's run)
    python benchmarks/bench_ledger.py --quick    # reduced size, to check the script works

Measured (medians of interleaved runs, ``_harness.interleaved``), per spend on a ledger already
holding ``prefill`` entries (each spend reads and checks every entry's hash chain):

1. a ledger opened by path (rollback journal, ``synchronous=FULL``: every committed spend is in the
   main file) against the same ledger code on an engine in WAL mode with ``synchronous=FULL``
   (the layout before: commits in ``-wal`` until a checkpoint);
2. both against a bare ``sqlite3`` INSERT + COMMIT in a rollback journal with ``synchronous=FULL``
   (the floor the fsyncs set).
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import interleaved, load_average, report_ratio, report_value
from sqlalchemy import create_engine

from dpbandits.privacy.accounting import PureEvent
from dpbandits.privacy.ledger_store import DurableAccountant, configure_sqlite


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="reduced size (a smoke run)")
    args = parser.parse_args()
    prefill, spends, rounds = (20, 5, 3) if args.quick else (200, 20, 7)
    directory = Path(tempfile.mkdtemp())
    by_path = DurableAccountant.create(directory / "delete.db", "l", epsilon_budget=None)
    wal_engine = create_engine(f"sqlite:///{directory / 'wal.db'}", connect_args={"check_same_thread": False})
    configure_sqlite(wal_engine, "full", "wal")
    wal = DurableAccountant.create(wal_engine, "l", epsilon_budget=None)
    for ledger in (by_path, wal):
        for _ in range(prefill):
            ledger.spend(PureEvent(1e-6))
    bare = sqlite3.connect(directory / "bare.db", isolation_level=None)
    bare.execute("PRAGMA journal_mode=DELETE")
    bare.execute("PRAGMA synchronous=FULL")
    bare.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, event TEXT)")

    def spend(ledger: DurableAccountant) -> int:
        for _ in range(spends):
            ledger.spend(PureEvent(1e-6))
        return spends

    def insert() -> int:
        for _ in range(spends):
            bare.execute("BEGIN IMMEDIATE")
            bare.execute("INSERT INTO t (event) VALUES ('x')")
            bare.execute("COMMIT")
        return spends

    print(f"# medians of {rounds} interleaved runs of {spends} spends; {load_average()}")
    medians = interleaved({"path": lambda: spend(by_path), "wal": lambda: spend(wal), "bare": insert}, rounds)
    for name, seconds in medians.items():
        report_value(f"spend ({name})", seconds * 1e3, "ms", note=f"ledger of about {prefill} entries")
    report_ratio("ledger by path (rollback journal) / WAL engine", medians["path"] / medians["wal"],
                 numerator=f"{medians['path'] * 1e3:.2f} ms", denominator=f"{medians['wal'] * 1e3:.2f} ms",
                 note="the cost of every committed spend being in the main file")
    report_ratio("ledger by path / bare sqlite3 insert", medians["path"] / medians["bare"],
                 numerator=f"{medians['path'] * 1e3:.2f} ms", denominator=f"{medians['bare'] * 1e3:.2f} ms")
    by_path.close()
    wal_engine.dispose()
    bare.close()


if __name__ == "__main__":
    main()
