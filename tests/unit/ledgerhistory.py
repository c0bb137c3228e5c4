"""A history checker for the durable ledger: worker processes spend, some are killed, the history is checked.

``run_history(...)`` starts worker processes (this file, run as a script) with threads that spend
seeded random amounts on one ledger through a chosen store configuration, kills some of them with
SIGKILL at seeded random instants, and returns the recorded history: one line per invocation
(``I label k``) and one per completion (``O`` acknowledged, ``F`` refused by the budget, ``X``
failed with another dpbandits error, ``R`` refused as a fork). An operation with no completion (its
process was killed) is *unknown*. A share of the operations are continuations of a saved generation
of one shared lineage (``C label lineage g 0``, forks refused): a base save (generation 0, 1 or 2), or
a later save of the continuation the thread holds (the generation the ledger issued, + 1). Another
share are loads of an agent saved without a ledger (``L label k``: a fresh lineage ``agent-<label>``,
generation 0, paying its run of k units atomically with the continuation), each followed, when
acknowledged, by a load of that agent's next save with the same run (``C label lineage g k``: the
ledger already holds the charge, so it records nothing but the continuation).
``check_history(...)`` then checks the history against a sequential model of the ledger
(an in-memory :class:`~dpbandits.privacy.accounting.Accountant` replaying the recorded entries in
order):

* every recorded entry was invoked, once, with its amount; a refused one is never recorded;
* every acknowledged spend is recorded (never lost); recorded ⊆ acknowledged ∪ unknown;
* the recorded entries replay under the budget in order (so acknowledged + recorded unknown ≤ budget);
* every budget refusal was justified: the final recorded total plus its amount exceeds the budget;
* the reopened ledger reads exactly the recorded entries (ε spent is their exact sum);
* (``check_continuations``) the window rule: per lineage, the recorded generations form one chain,
  each continued once, each next one a later save of the previous one's continuation (in
  (g + W, g + 2W), W = ``CONTINUATION_WINDOW``); an acknowledged continuation is recorded, a recorded
  one was acknowledged or in flight; a refused fork is justified by the chain (some continuation
  recorded whose window does not hold it); a load pays its run once (its reload records no entry)
  and its entry and continuation are recorded together or not at all.

Amounts are multiples of 1/64 (exact in binary), so every sum is exact. The same seed gives the
same scripts and kill instants (the interleaving is the machine's).
"""

from __future__ import annotations

import itertools
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
LOAD_SHARE = 0.15  # of the operations: a load of an agent saved without a ledger (it pays its run)
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


def _operate(accountant: Any, engine: Any, config: dict[str, Any], kind: str, k: int, label: str,
             lineage: str = LINEAGE, run: int = 0) -> int | None:
    """One spend of k units (``kind`` "I"), one continuation of generation k of ``lineage`` (``kind``
    "C", paying a run of ``run`` units unless the ledger holds it), or one load of a fresh agent whose
    run is k units (``kind`` "L"). Returns the generation a continuation issued."""
    from sqlalchemy import text

    from dpbandits.privacy.accounting import PureEvent

    issued: list[int] = []

    def operate(**connection: Any) -> None:
        if kind == "C":
            issued.append(accountant.record_continuation(
                lineage, k, run_charge=PureEvent(run * UNIT) if run else None, run_label=label, **connection))
        elif kind == "L":
            issued.append(accountant.record_continuation(
                f"agent-{label}", 0, run_charge=PureEvent(k * UNIT), run_label=label, **connection))
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
    else:
        operate()
    return issued[0] if issued else None


def worker(config: dict[str, Any]) -> None:
    """Spend the seeded script of this worker from ``config["threads"]`` threads, logging the history."""
    from dpbandits._core.errors import DPBanditsError, ForkRefusedError, PrivacyBudgetExceededError

    accountant, engine = _accountant(config)
    log = os.open(config["log"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    seeds = np.random.SeedSequence(config["entropy"], spawn_key=(config["worker"],)).spawn(config["threads"])
    start = threading.Barrier(config["threads"])

    def run(index: int) -> None:
        rng = np.random.default_rng(seeds[index])
        amounts = rng.integers(1, 5, size=config["ops"])
        draws = rng.random(config["ops"])
        generations = rng.integers(0, GENERATIONS, size=config["ops"])
        own = rng.random(config["ops"]) < 0.7  # continue the thread's own continuation, when it holds one
        held: int | None = None  # the generation the ledger issued for this thread's latest continuation

        def attempt(kind: str, label: str, value: int, lineage: str = LINEAGE, run: int = 0) -> int | None:
            if kind == "C":
                os.write(log, f"C {label} {lineage} {value} {run}\n".encode())
            else:
                os.write(log, f"{kind} {label} {value}\n".encode())
            try:
                issued = _operate(accountant, engine, config, kind, value, label, lineage, run)
            except ForkRefusedError:
                os.write(log, f"R {label}\n".encode())
            except PrivacyBudgetExceededError:
                os.write(log, f"F {label}\n".encode())
            except DPBanditsError as exc:
                os.write(log, f"X {label} {str(exc)[:200]!r}\n".encode())
            else:
                os.write(log, f"O {label}\n".encode())
                return issued
            return None

        start.wait()
        for op, (k, draw, generation, mine) in enumerate(zip(amounts, draws, generations, own, strict=True)):
            label = f"w{config['worker']}t{index}o{op}"
            if draw < CONTINUE_SHARE:
                value = held + 1 if held is not None and mine else int(generation)
                held = attempt("C", label, value) or held
            elif draw < CONTINUE_SHARE + LOAD_SHARE:
                issued = attempt("L", label, int(k))
                if issued is not None:  # the loaded agent's next save, loaded under the same ledger
                    attempt("C", f"{label}r", issued + 1, f"agent-{label}", int(k))
            else:
                attempt("I", label, int(k))

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
    continued: dict[str, tuple[str, int]] = field(default_factory=dict)  # label → (lineage, generation)
    reloads: set[str] = field(default_factory=set)  # continuations that pass a run already paid
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
        elif kind == "L":  # a spend of the run and a continuation of generation 0 of a fresh lineage
            history.invoked[label] = int(rest[0])
            history.continued[label] = (f"agent-{label}", 0)
        elif kind == "C":
            lineage, generation, run = rest[0].split(" ")
            history.continued[label] = (lineage, int(generation))
            if int(run):
                history.reloads.add(label)
        else:
            history.completed[label] = kind
            if kind == "X":
                history.errors.append(f"{label}: {rest[0] if rest else ''}")
    return history


def recorded_entries(accountant: Any) -> list[tuple[str, float]]:
    """(label, ε) of every entry of a reopened ledger, in order."""
    return [(entry.label, entry.event.epsilon) for entry in accountant.entries()]


def check_continuations(history: History, recorded: dict[tuple[str, int], int], entries: list[tuple[str, float]], *,
                        errors_fail: bool) -> None:
    """The window rule, checked per lineage against the recorded continuations (see the module docstring).

    ``entries``: the recorded entries (label, ε); a load's entry and continuation go together.
    """
    from dpbandits._core.persistence import CONTINUATION_WINDOW as W

    def in_flight(label: str) -> bool:
        return label in history.unknown or (not errors_fail and history.completed.get(label) == "X")

    for (lineage, generation), count in recorded.items():
        assert count == 1, f"generation {generation} of {lineage} continued {count} times: a fork was accepted"
        labels = [label for label, key in history.continued.items() if key == (lineage, generation)]
        assert any(history.completed.get(label) == "O" or in_flight(label) for label in labels), \
            f"generation {generation} of {lineage} recorded with no continuation"
    lineages = {lineage for lineage, _g in history.continued.values()} | {lineage for lineage, _g in recorded}
    for lineage in lineages:
        chain = sorted(g for (name, g) in recorded if name == lineage)
        for before, after in itertools.pairwise(chain):
            assert before + W < after < before + 2 * W, \
                f"{lineage}: generation {after} was continued after {before} although it is no later save of it (a fork)"
        for label, (name, generation) in history.continued.items():
            if name != lineage:
                continue
            outcome = history.completed.get(label)
            if outcome == "O":
                assert (lineage, generation) in recorded, \
                    f"an acknowledged continuation of generation {generation} of {lineage} was lost"
            elif outcome == "R":
                assert any(not c + W < generation < c + 2 * W for c in chain), \
                    f"a continuation of generation {generation} of {lineage} was refused for nothing"
            elif outcome == "F":
                assert label in history.invoked, \
                    f"the continuation {label} of {lineage} was refused for budget though its run was paid"
                assert (lineage, generation) not in recorded, \
                    f"a load refused for budget recorded its continuation ({label})"
    labels = {label for label, _eps in entries}
    for label in history.invoked:
        if label in history.continued:  # a load: its run's entry and its continuation, both or neither
            assert (label in labels) == (history.continued[label] in recorded), \
                f"the load {label} recorded its run's entry without its continuation, or the reverse"
    for label in history.reloads:  # a reload of a loaded agent passes the run it paid: never refused
        # (an X inside a caller's transaction is a serialization failure, rolled back: checked above)
        assert history.completed.get(label) in ("O", "X", None), \
            f"the reload {label} of an agent whose run was paid was refused ({history.completed.get(label)})"


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
