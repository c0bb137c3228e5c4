"""A history checker for the durable ledger: worker processes spend, some are killed, the history is checked.

``run_history(...)`` starts worker processes (this file, run as a script) with threads that spend
seeded random amounts on one ledger through a chosen store configuration, kills some of them with
SIGKILL at seeded random instants, and returns the recorded history: one line per invocation
(``I label k``) and one per completion (``O`` acknowledged, ``F`` refused by the budget, ``X``
failed with another dpbandits error). An operation with no completion (its process was killed) is
*unknown*. A share of the operations are continuations of a saved generation (``C label g``,
forks refused). ``check_history(...)`` then checks the history against a sequential model of the ledger
(an in-memory :class:`~dpbandits.privacy.accounting.Accountant` replaying the recorded entries in
order):

* every recorded entry was invoked, once, with its amount; a refused one is never recorded;
* every acknowledged spend is recorded (never lost); recorded ⊆ acknowledged ∪ unknown;
* the recorded entries replay under the budget in order (so acknowledged + recorded unknown ≤ budget);
* every budget refusal was justified: the final recorded total plus its amount exceeds the budget;
* the reopened ledger reads exactly the recorded entries (ε spent is their exact sum);
* (``check_continuations``) a generation is recorded at most once, an acknowledged continuation
  always, and a refused fork only after another continuation of its generation was recorded.

Amounts are multiples of 1/64 (exact in binary), so every sum is exact. The same seed gives the
same scripts and kill instants (the interleaving is the machine's).
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

UNIT = 1.0 / 64
BUDGET = 0.5  # 32 units
LINEAGE = "history-lineage"
GENERATIONS = 3
CONTINUE_SHARE = 0.2  # of the operations: a continuation of a saved generation (forks are refused)
HERE = Path(__file__).resolve()


# -- the worker (this file run as a script) ---------------------------------------------------------


def _accountant(config: dict[str, Any]) -> tuple[Any, Any]:
    """The worker's ledger handle for its store configuration, and the engine a caller would own."""
    from sqlalchemy import create_engine, event

    from dpbandits.privacy.ledger_store import DurableAccountant

    store, location = config["store"], config["location"]
    if store in ("sqlite", "pg-database"):
        return DurableAccountant(location, config["ledger"]), None
    if store.startswith("sqlite-engine"):
        engine = create_engine(f"sqlite:///{location}", connect_args={"timeout": 30.0, "check_same_thread": False})
        if store.endswith("-wal"):
            @event.listens_for(engine, "connect")
            def _wal(dbapi_connection: Any, _record: Any) -> None:
                dbapi_connection.execute("PRAGMA journal_mode=WAL")
        return DurableAccountant(engine, config["ledger"]), engine
    if store == "pg-engine":
        engine = create_engine(location, isolation_level=config["level"])
        return DurableAccountant(engine, config["ledger"]), engine
    if store == "pg-connection":
        engine = create_engine(location)
        return DurableAccountant(engine, config["ledger"]), engine
    raise ValueError(f"unknown store {store!r}")


def _operate(accountant: Any, engine: Any, config: dict[str, Any], kind: str, k: int, label: str) -> None:
    """One spend of k units (``kind`` "I") or one continuation of generation k of LINEAGE (``kind`` "C")."""
    from sqlalchemy import text

    from dpbandits.privacy.accounting import PureEvent

    def operate(**connection: Any) -> None:
        if kind == "C":
            accountant.record_continuation(LINEAGE, k, **connection)
        else:
            accountant.spend(PureEvent(k * UNIT), label=label, **connection)

    if config["store"] in ("pg-connection", "sqlite-engine-connection"):
        # the documented way to spend inside an application's transaction; the application reads
        # first (its snapshot is taken before the ledger is touched: the adversarial order)
        with engine.connect() as connection:
            if config.get("level"):
                connection = connection.execution_options(isolation_level=config["level"])
            with connection.begin():
                connection.execute(text("SELECT count(*) FROM dpbandits_ledger_entries")).scalar_one()
                operate(connection=connection)
        return
    operate()


def worker(config: dict[str, Any]) -> None:
    """Spend the seeded script of this worker from ``config["threads"]`` threads, logging the history."""
    from dpbandits._core.errors import DPBanditsError, PrivacyBudgetExceededError

    accountant, engine = _accountant(config)
    log = os.open(config["log"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    seeds = np.random.SeedSequence(config["entropy"], spawn_key=(config["worker"],)).spawn(config["threads"])
    start = threading.Barrier(config["threads"])

    def run(index: int) -> None:
        rng = np.random.default_rng(seeds[index])
        amounts = rng.integers(1, 5, size=config["ops"])
        continues = rng.random(config["ops"]) < CONTINUE_SHARE
        generations = rng.integers(0, GENERATIONS, size=config["ops"])
        start.wait()
        for op, (k, fork, generation) in enumerate(zip(amounts, continues, generations, strict=True)):
            label = f"w{config['worker']}t{index}o{op}"
            kind, value = ("C", int(generation)) if fork else ("I", int(k))
            os.write(log, f"{kind} {label} {value}\n".encode())
            try:
                _operate(accountant, engine, config, kind, value, label)
            except PrivacyBudgetExceededError:
                os.write(log, f"F {label}\n".encode())
            except DPBanditsError as exc:
                os.write(log, f"X {label} {str(exc)[:200]!r}\n".encode())
            else:
                os.write(log, f"O {label}\n".encode())

    print("ready", flush=True)
    sys.stdin.readline()
    threads = [threading.Thread(target=run, args=(i,)) for i in range(config["threads"])]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    os.close(log)


# -- the driver and the checker ---------------------------------------------------------------------


@dataclass
class History:
    """Invocations (label → amount in units) and completions (label → "O" / "F" / "X")."""

    invoked: dict[str, int] = field(default_factory=dict)
    continued: dict[str, int] = field(default_factory=dict)  # label → generation
    completed: dict[str, str] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    killed: list[int] = field(default_factory=list)

    @property
    def unknown(self) -> set[str]:
        return (set(self.invoked) | set(self.continued)) - set(self.completed)


def create_ledger(location: Any, ledger_id: str) -> None:
    """Create the ledger with the budget (the parent creates; workers only open)."""
    from dpbandits.privacy.ledger_store import DurableAccountant

    create = getattr(DurableAccountant, "create", None)
    if create is not None:
        create(location, ledger_id, epsilon_budget=BUDGET).close()
    else:  # the code before ledger creation was a call of its own (to run this checker against it)
        DurableAccountant(location, ledger_id, epsilon_budget=BUDGET).close()


def run_history(directory: Path, config: dict[str, Any], *, seed: int, workers: int, threads: int, ops: int,
                kills: int, timeout: float = 240.0) -> History:
    """Run ``workers`` worker processes on one ledger, SIGKILL ``kills`` of them at seeded instants."""
    rng = np.random.default_rng(np.random.SeedSequence(seed))
    log = directory / f"history-{config['ledger']}.log"
    processes = []
    for index in range(workers):
        worker_config = {**config, "worker": index, "entropy": seed, "threads": threads, "ops": ops, "log": str(log)}
        processes.append(subprocess.Popen([sys.executable, str(HERE), json.dumps(worker_config)],
                                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True))
    for process in processes:
        assert process.stdout is not None and process.stdout.readline().strip() == "ready", "a worker did not start"
    victims = [int(i) for i in rng.choice(workers, size=kills, replace=False)]
    delays = sorted(float(d) for d in rng.uniform(0.05, 0.6, size=kills))
    for process in processes:
        assert process.stdin is not None
        process.stdin.write("go\n")
        process.stdin.flush()
    started = time.monotonic()
    for victim, delay in zip(victims, delays, strict=True):
        time.sleep(max(0.0, started + delay - time.monotonic()))
        os.kill(processes[victim].pid, signal.SIGKILL)
    for process in processes:
        process.communicate(timeout=timeout)
    history = History(killed=victims)
    for process, index in zip(processes, range(workers), strict=True):
        if index not in victims:
            assert process.returncode == 0, f"worker {index} failed (exit status {process.returncode})"
    for line in log.read_text().splitlines():
        kind, label, *rest = line.split(" ", 2)
        if kind == "I":
            history.invoked[label] = int(rest[0])
        elif kind == "C":
            history.continued[label] = int(rest[0])
        else:
            history.completed[label] = kind
            if kind == "X":
                history.errors.append(f"{label}: {rest[0] if rest else ''}")
    return history


def recorded_entries(accountant: Any) -> list[tuple[str, float]]:
    """(label, ε) of every entry of a reopened ledger, in order."""
    return [(entry.label, entry.event.epsilon) for entry in accountant.entries()]


def check_continuations(history: History, recorded: dict[tuple[str, int], int], *, errors_fail: bool) -> None:
    """Forks are refused: per generation at most one continuation is recorded, and exactly the acknowledged one."""
    for generation in range(GENERATIONS):
        labels = {label for label, g in history.continued.items() if g == generation}
        acknowledged = {label for label in labels if history.completed.get(label) == "O"}
        refused = {label for label in labels if history.completed.get(label) == "F"}
        unknown = labels & history.unknown
        if not errors_fail:
            unknown |= {label for label in labels if history.completed.get(label) == "X"}
        count = recorded.get((LINEAGE, generation), 0)
        assert count <= 1 and len(acknowledged) <= 1, f"generation {generation} continued {count} times " \
            f"({len(acknowledged)} acknowledged): a fork was accepted"
        assert count == 1 or not acknowledged, f"an acknowledged continuation of generation {generation} was lost"
        assert count == 0 or acknowledged or unknown, f"generation {generation} recorded with no continuation"
        assert count == 1 or not refused, f"a continuation of generation {generation} was refused for nothing"


def check_history(history: History, recorded: list[tuple[str, float]], spent: float, *,
                  errors_fail: bool) -> None:
    """Check one history against the sequential model (see the module docstring); AssertionError names the break.

    ``errors_fail``: an ``X`` completion is a known failure (the caller's transaction rolled back)
    rather than an unknown outcome.
    """
    from dpbandits._core.errors import PrivacyBudgetExceededError
    from dpbandits.privacy.accounting import Accountant, PureEvent

    labels = [label for label, _eps in recorded]
    assert len(labels) == len(set(labels)), "an entry was recorded twice"
    spends = {label: kind for label, kind in history.completed.items() if label in history.invoked}
    acknowledged = {label for label, kind in spends.items() if kind == "O"}
    refused = {label for label, kind in spends.items() if kind == "F"}
    errors = {label for label, kind in spends.items() if kind == "X"}
    failed = refused | (errors if errors_fail else set())
    unknown = (history.unknown & set(history.invoked)) | (set() if errors_fail else errors)
    for label, epsilon in recorded:
        assert label in history.invoked, f"entry {label} was never invoked"
        assert epsilon == history.invoked[label] * UNIT, f"entry {label} records another amount"
    lost = acknowledged - set(labels)
    assert not lost, f"{len(lost)} acknowledged spend(s) lost: {sorted(lost)[:5]}"
    wrongly = failed & set(labels)
    assert not wrongly, f"{len(wrongly)} refused or failed spend(s) recorded: {sorted(wrongly)[:5]}"
    stray = set(labels) - acknowledged - unknown
    assert not stray, f"entries neither acknowledged nor in flight: {sorted(stray)[:5]}"
    model = Accountant(epsilon_budget=BUDGET)  # the sequential model, replaying the ledger's order
    for label, epsilon in recorded:
        try:
            model.spend(PureEvent(epsilon), label=label)
        except PrivacyBudgetExceededError:
            total = math.fsum(e for _l, e in recorded)
            raise AssertionError(f"overspent: the ledger records {total:g} against a budget of {BUDGET:g} "
                                 f"(acknowledged: {math.fsum(history.invoked[a] * UNIT for a in acknowledged):g})"
                                 ) from None
    total_units = sum(history.invoked[label] for label in labels)
    spurious = [label for label in refused if total_units + history.invoked[label] <= round(BUDGET / UNIT)]
    assert not spurious, f"{len(spurious)} refusal(s) that the final ledger does not justify: {spurious[:5]}"
    assert spent == math.fsum(e for _l, e in recorded), "the reopened ledger reports another epsilon"


if __name__ == "__main__":
    worker(json.loads(sys.argv[1]))
