"""The durable privacy ledger (issue 23): a SQLite file or PostgreSQL, shared by threads and processes,
exact under kill -9, spends inside a caller's transaction, forks recorded per (lineage, generation)."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from ledgertools import forge_entry, hammer
from sqlalchemy import func, select, text

from dpbandits._core.errors import (
    DataFormatError,
    ForkRefusedError,
    InvalidParameterError,
    LedgerUnitError,
    PerInstanceSpendError,
    PrivacyBudgetExceededError,
)
from dpbandits.privacy.accounting import GaussianEvent, GroupPrivacy, LaplaceEvent, PureEvent, spend
from dpbandits.privacy.event_codec import decode_event, encode_event
from dpbandits.privacy.guarantees import PureDP
from dpbandits.privacy.ledger_store import (
    LEDGER_METADATA,
    DurableAccountant,
    create_ledger_tables,
    ledger_engine,
)

EPSILON = 0.0625  # exact in binary: 16 spends are exactly 1.0


def _guarantee(epsilon: float, unit: str = "one reward", **kw: Any) -> PureDP:
    return PureDP(epsilon=epsilon, unit=unit, neighbouring="replace-one", **kw)  # type: ignore[arg-type]


def test_spends_survive_reopening_with_their_types(tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    acc = DurableAccountant.create(path, "study", epsilon_budget=1.0, delta_budget=1e-6)
    acc.spend(_guarantee(0.25), label="DPBAI.agent")
    acc.spend(LaplaceEvent(scale=4.0), count=2, label="counts")
    acc.spend(_guarantee(0.125, unit="one user"), conversion=GroupPrivacy(2), label="grouped")
    reopened = DurableAccountant(str(path), "study")
    assert (reopened.epsilon_budget, reopened.delta_budget, reopened.method) == (1.0, 1e-6, "basic")
    assert reopened.entries() == acc.entries() and reopened.spent() == acc.spent()
    assert reopened.spent().epsilon == 1.0 and reopened.unit == "one reward"
    assert [e.label for e in reopened.entries()] == ["DPBAI.agent", "counts", "grouped"]
    with pytest.raises(PrivacyBudgetExceededError, match="nothing was spent"):
        reopened.spend(PureEvent(0.01))
    with pytest.raises(LedgerUnitError):
        reopened.spend(_guarantee(0.0, unit="one user"))
    with pytest.raises(PerInstanceSpendError):
        spend(reopened, _guarantee(0.0, per_instance=True))
    assert len(acc.entries()) == 3  # nothing recorded by the refusals, seen from the first handle too
    for changed in ({"epsilon_budget": 2.0}, {"delta_budget": 0.0}, {"method": "pld"}, {"unit": "one user"},
                    {"neighbouring": "add/remove"}):
        with pytest.raises(InvalidParameterError, match="refusing to reopen"):
            DurableAccountant(path, "study", **changed)  # type: ignore[arg-type]
    other = DurableAccountant.create(path, "other-study", epsilon_budget=None)  # one file, many ledgers
    assert other.entries() == () and other.epsilon_budget is None


def test_a_copy_reopens_the_same_ledger(tmp_path: Path) -> None:
    import copy
    import pickle

    acc = DurableAccountant.create(tmp_path / "ledger.db", "copied", epsilon_budget=1.0)
    twin = pickle.loads(pickle.dumps(acc))
    twin.spend(PureEvent(0.75))
    assert acc.spent().epsilon == 0.75  # one budget, in one database
    with pytest.raises(PrivacyBudgetExceededError):
        copy.deepcopy(acc).spend(PureEvent(0.5))
    engine = ledger_engine(tmp_path / "ledger.db")
    with pytest.raises(InvalidParameterError, match="cannot be pickled"):
        pickle.dumps(DurableAccountant(engine, "copied"))
    engine.dispose()


def test_pure_events_at_delta_zero_and_gaussian_events(tmp_path: Path) -> None:
    pld = DurableAccountant.create(tmp_path / "a.db", "pld", epsilon_budget=1.0, method="pld")
    pld.spend(LaplaceEvent(scale=10.0), count=10)
    assert pld.spent().epsilon == 1.0
    gauss = DurableAccountant.create(tmp_path / "a.db", "gauss", epsilon_budget=None, delta_budget=1e-5)
    gauss.spend(GaussianEvent(sigma=5.0), count=3)
    assert 0.0 < gauss.spent().epsilon < 3.0


def test_forks_are_recorded_per_lineage_and_generation(tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    acc = DurableAccountant.create(path, "agents", epsilon_budget=1.0)
    later = acc.record_continuation("abc", 1) + 1  # a save of the continuing object
    acc.record_continuation("abc", later)
    with pytest.raises(ForkRefusedError):
        DurableAccountant(path, "agents").record_continuation("abc", 1)  # another handle, same ledger
    acc.record_continuation("abc", 1, on_fork="charge", charge=_guarantee(0.75))
    with pytest.raises(PrivacyBudgetExceededError):
        acc.record_continuation("abc", 1, on_fork="charge", charge=_guarantee(0.75))
    assert acc.continuations() == {("abc", 1): 2, ("abc", later): 1}
    (entry,) = acc.entries()
    assert entry.lineage == "abc" and entry.event == PureEvent(0.75)
    DurableAccountant.create(path, "other", epsilon_budget=None).record_continuation("abc", 1)  # per ledger


def test_spend_inside_the_callers_transaction(tmp_path: Path) -> None:
    engine = ledger_engine(tmp_path / "app.db", create=True)
    acc = DurableAccountant.create(engine, "service", epsilon_budget=1.0)
    with engine.connect() as conn:
        conn = conn.execution_options(sqlite_immediate=True)
        with conn.begin() as transaction:
            acc.spend(PureEvent(0.5), connection=conn)
            acc.record_continuation("x", 0, connection=conn)
            assert acc.spent(connection=conn).epsilon == 0.5
            transaction.rollback()  # the caller's own write failed: the spend goes with it
    assert acc.spent().epsilon == 0.0 and acc.continuations() == {}
    with engine.connect() as conn:
        conn = conn.execution_options(sqlite_immediate=True)
        with conn.begin():
            acc.spend(PureEvent(0.5), connection=conn)
            with pytest.raises(PrivacyBudgetExceededError):
                acc.spend(PureEvent(0.75), connection=conn)
    assert acc.spent().epsilon == 0.5 and len(acc.entries()) == 1
    with engine.connect() as conn:
        conn = conn.execution_options(sqlite_immediate=True)
        with conn.begin():
            acc.spend(PureEvent(0.125), connection=conn)
            savepoint = conn.begin_nested()
            acc.spend(PureEvent(0.25), connection=conn)
            assert acc.spent(connection=conn).epsilon == 0.875
            savepoint.rollback()  # a savepoint of the caller's rolled back: its spend with it
            assert acc.spent(connection=conn).epsilon == 0.625
            acc.spend(PureEvent(0.375), connection=conn)
            assert [e.event.epsilon for e in acc.entries(connection=conn)] == [0.5, 0.125, 0.375]
    assert acc.spent().epsilon == 1.0 and DurableAccountant(engine, "service").spent().epsilon == 1.0
    with pytest.raises(InvalidParameterError, match="Connection"):
        acc.spend(PureEvent(0.1), connection="not a connection")
    acc.close()
    engine.dispose()


def test_tables_in_the_applications_own_database(tmp_path: Path) -> None:
    engine = ledger_engine(tmp_path / "app.db", create=True)
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE app_rows (id INTEGER PRIMARY KEY)"))
        create_ledger_tables(conn)
        acc = DurableAccountant.create(engine, "experiment-1", epsilon_budget=2.0, connection=conn)
    with engine.connect() as conn:  # closed: in a rollback journal an open reader holds writers back
        assert {t.name for t in LEDGER_METADATA.sorted_tables} <= set(engine.dialect.get_table_names(conn))
    acc.spend(PureEvent(1.0))
    assert DurableAccountant(engine, "experiment-1").spent().epsilon == 1.0
    engine.dispose()


def test_malformed_rows_and_arguments_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    acc = DurableAccountant.create(path, "l", epsilon_budget=None)
    acc.spend(PureEvent(0.5))
    engine = ledger_engine(path)
    forge_entry(engine, "l", event='{"type": "os.system", "cmd": "x"}')  # a chain recomputed by the forger
    with pytest.raises(DataFormatError, match="ledger entry 2 is malformed"):
        DurableAccountant(path, "l").spent()
    engine.dispose()
    for bad in ("", "x" * 201, 3):
        with pytest.raises(InvalidParameterError, match="ledger_id"):
            DurableAccountant(path, bad)  # type: ignore[arg-type]
    for url in ("sqlite://", "sqlite:///:memory:", "nodb://", ""):
        with pytest.raises(InvalidParameterError):
            DurableAccountant(url, "l")


@pytest.mark.parametrize("bad", [
    "not json", "[]", '{"type": "LaplaceEvent"}', '{"type": "LaplaceEvent", "scale": -1}',
    '{"type": "PureEvent", "epsilon": 0.1, "extra": 1}', '{"type": "Foo"}', '{"type": 3}',
    '{"type": "ComposedEvent", "events": "x", "count": 1}', '{"type": "PureEvent", "epsilon": "0.1"}',
    '{"type": "ComposedEvent", "events": [], "count": 1}',
    "".join(['{"type": "ComposedEvent", "count": 1, "events": ['] * 20) + '{"type": "PureEvent", "epsilon": 1}'
    + "]}" * 20,
])
def test_event_codec_refuses_malformed_events(bad: str) -> None:
    with pytest.raises(DataFormatError):
        decode_event(bad)


def test_event_codec_round_trip() -> None:
    from dpbandits.privacy.accounting import ApproxEvent, ComposedEvent

    for event in (LaplaceEvent(2.0, 3.0), GaussianEvent(1.5), PureEvent(0.25), ApproxEvent(0.5, 1e-6),
                  ComposedEvent((LaplaceEvent(1.0), ComposedEvent((PureEvent(0.1),), 3)), 2)):
        assert decode_event(encode_event(event)) == event


def test_threads_sharing_a_durable_ledger_never_overspend(tmp_path: Path) -> None:
    acc = DurableAccountant.create(tmp_path / "ledger.db", "threads", epsilon_budget=1.0)
    accepted = hammer(acc, n_threads=8, epsilon=EPSILON, attempts=4)
    assert accepted == 16 == len(acc.entries()) and acc.spent().epsilon == 1.0


# -- processes ---------------------------------------------------------------------------------------

_RACER = """
import sys, threading
from dpbandits._core.errors import PrivacyBudgetExceededError
from dpbandits.privacy.accounting import PureEvent
from dpbandits.privacy.ledger_store import DurableAccountant
acc = DurableAccountant(sys.argv[1], "shared", epsilon_budget=1.0)  # created by the test
print("ready", flush=True)
sys.stdin.readline()
accepted = []
def work():
    for _ in range(6):
        try:
            acc.spend(PureEvent(float(sys.argv[2])))
        except PrivacyBudgetExceededError:
            continue
        accepted.append(1)
threads = [threading.Thread(target=work) for _ in range(3)]
[t.start() for t in threads]
[t.join() for t in threads]
print(len(accepted), flush=True)
"""


def _two_processes(location: str) -> int:
    racers = [subprocess.Popen([sys.executable, "-c", _RACER, location, repr(EPSILON)], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True) for _ in range(2)]
    for racer in racers:
        assert racer.stdout is not None and racer.stdout.readline().strip() == "ready"
    for racer in racers:
        assert racer.stdin is not None
        racer.stdin.write("go\n")
        racer.stdin.flush()
    outputs = [racer.communicate(timeout=120)[0] for racer in racers]
    assert all(racer.returncode == 0 for racer in racers)
    return sum(int(out.strip()) for out in outputs)


@pytest.mark.slow
def test_two_processes_on_one_sqlite_ledger_never_overspend(tmp_path: Path) -> None:
    path = str(tmp_path / "shared.db")
    DurableAccountant.create(path, "shared", epsilon_budget=1.0).close()
    accepted = _two_processes(path)  # 2 processes × 3 threads × 6 attempts = 36 > 16
    acc = DurableAccountant(path, "shared")
    assert accepted == 16 == len(acc.entries()) and acc.spent().epsilon == 1.0


@pytest.mark.slow
def test_two_processes_on_one_postgres_ledger_never_overspend(postgres_cluster: Any) -> None:
    url = postgres_cluster.url
    DurableAccountant.create(url, "shared", epsilon_budget=1.0).close()  # the race under test is the spends'
    accepted = _two_processes(url)
    acc = DurableAccountant(url, "shared")
    assert accepted == 16 == len(acc.entries()) and acc.spent().epsilon == 1.0
    assert hammer(acc, n_threads=4, epsilon=EPSILON, attempts=2) == 0
    with acc.engine.connect() as conn, conn.begin() as transaction:
        acc.record_continuation("pg", 0, connection=conn)
        with pytest.raises(ForkRefusedError):
            acc.record_continuation("pg", 0, connection=conn)
        transaction.rollback()
    assert acc.continuations() == {}
    acc.close()


_SPENDER = """
import sys
from dpbandits.privacy.accounting import PureEvent
from dpbandits.privacy.ledger_store import DurableAccountant
acc = DurableAccountant.create(sys.argv[1], "killed", epsilon_budget=1e9)
i = 0
while True:
    acc.spend(PureEvent(0.001), label=f"spend {i}")
    i += 1
    print(i, flush=True)
"""


def test_kill_9_leaves_only_complete_spends(tmp_path: Path) -> None:
    path = str(tmp_path / "killed.db")
    child = subprocess.Popen([sys.executable, "-c", _SPENDER, path], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    acknowledged = 0
    while acknowledged < 40:
        acknowledged = int(child.stdout.readline())
    os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=30)
    child.stdout.close()
    assert child.returncode == -signal.SIGKILL
    acc = DurableAccountant(path, "killed")
    entries = acc.entries()
    assert len(entries) >= acknowledged  # every acknowledged spend is there
    assert [e.label for e in entries] == [f"spend {i}" for i in range(len(entries))]  # and nothing half-written
    assert all(e.event == PureEvent(0.001) and e.count == 1 for e in entries)
    assert acc.spent().epsilon == math.fsum([0.001] * len(entries))
    engine = ledger_engine(path)
    with engine.connect() as conn:
        table = LEDGER_METADATA.tables["dpbandits_ledger_entries"]
        assert conn.execute(select(func.count()).select_from(table)).scalar_one() == len(entries)
        assert conn.execute(text("PRAGMA integrity_check")).scalar_one() == "ok"
    engine.dispose()
    acc.spend(PureEvent(0.001))  # the ledger is usable after the crash
