"""A history checker for one store served by several processes (issue 34).

Client threads send each request (ask, tell, sample) to a random one of several in-process services
(each an ``ExperimentService`` with its own engine, agents and commit thread: a server process), while
a fault thread restarts services (their agents are lost: the next request there loads from the
store) and, on PostgreSQL, terminates the store's connections (``pg_terminate_backend``). A request
that fails with a retryable answer (503, a store error) is retried with the same ticket, as the
documented client does. The history is then checked against a sequential model of each experiment:

* every valid ticket is accepted once: no ``400 invalid_ticket``, no error other than a retryable
  one, and a ``409 step_already_told`` only when another ticket of that step was counted (a client
  slower than its lease: the documented answer);
* every acknowledged tell is stored once, at its step, and the progress counts exactly those;
* released values are never re-drawn: each finished experiment's recommendation and released
  estimates equal those of a local replay of the same seeded agent fed the same feedback in step order
  (a value drawn twice would shift the seeded noise stream);
* the budget is never exceeded: samples of a KL-MAB experiment stop at what its budget affords, each
  recorded once on its durable ledger.

Short in the default run; longer (more seeds, clients and faults) under ``--run-slow``.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from servetools import Store, service_for
from sqlalchemy import func, select

from dpbandits.serve.errors import Conflict, Retry, ServiceError
from dpbandits.serve.kinds import Feedback
from dpbandits.serve.storage import feedback
from dpbandits.serve.store_errors import is_retryable
from dpbandits.serve.testing import feedback_for

EXPERIMENTS = (
    ("dp-ebs-elimination", {"n_arms": 3, "horizon": 20, "epsilon": 1.0}),
    ("dp-bai", {"n_arms": 3, "budget": 60, "epsilon": 1.0}),
)


@dataclass
class History:
    """What the clients saw."""

    acknowledged: dict[str, tuple[str, int]] = field(default_factory=dict)  # ticket -> (experiment, step)
    refused: list[str] = field(default_factory=list)
    superseded: list[tuple[str, int, str]] = field(default_factory=list)  # 409 step_already_told
    errors: list[str] = field(default_factory=list)
    samples: int = 0
    guard: threading.Lock = field(default_factory=threading.Lock)


class Cluster:
    """Several services ("processes") on one store; :meth:`restart` replaces one (its memory is lost)."""

    def __init__(self, store: Store, size: int) -> None:
        self.store = store
        made = [service_for(store) for _ in range(size)]
        self.services = [service for service, _, _ in made]
        self.alice = made[0][1]
        self.retired: list[Any] = []
        self.guard = threading.Lock()

    def pick(self, rng: np.random.Generator) -> Any:
        with self.guard:
            return self.services[int(rng.integers(len(self.services)))]

    def restart(self, index: int) -> None:
        fresh = service_for(self.store)[0]
        with self.guard:
            self.retired.append(self.services[index])
            self.services[index] = fresh


def _retrying(call: Any, history: History, what: str) -> Any:
    """``call()``, retried while it fails with a retryable answer (503, a store error)."""
    for attempt in range(200):
        try:
            return call()
        except Retry:
            pass
        except (ServiceError, AssertionError):
            raise
        except Exception as exc:
            if not is_retryable(exc):
                with history.guard:
                    history.errors.append(f"{what}: {type(exc).__name__}")
                return None
        time.sleep(0.002 * min(attempt + 1, 20))
    with history.guard:
        history.errors.append(f"{what}: still refused after 200 attempts")
    return None


def _client(cluster: Cluster, experiments: list[str], history: History, seed: int, deadline: float) -> None:
    rng = np.random.default_rng(seed)
    alice = cluster.alice
    active = list(experiments)
    while active and time.monotonic() < deadline:
        experiment = active[int(rng.integers(len(active)))]
        try:
            handed = _retrying(lambda e=experiment: cluster.pick(rng).ask(alice, e, lease=10.0), history, "ask")
        except Conflict as exc:
            if exc.code == "done":
                active.remove(experiment)
            else:
                history.refused.append(f"ask: {exc.code}")
            continue
        if handed is None:
            time.sleep(0.005)  # every step out on its lease (or an error, recorded)
            continue
        action = {k: v for k, v in handed.items() if k in ("arm", "pair")}
        told = Feedback(**feedback_for(handed["step"], action))
        try:
            ack = _retrying(lambda e=experiment, t=handed["ticket"], f=told: cluster.pick(rng).tell(alice, e, t, f),
                            history, "tell")
        except ServiceError as exc:
            with history.guard:
                if exc.code == "step_already_told":  # right only if another ticket of the step was counted
                    history.superseded.append((experiment, handed["step"], handed["ticket"]))
                else:  # a valid ticket refused
                    history.refused.append(f"tell step {handed['step']}: {exc.status} {exc.code}")
            continue
        if ack is not None:
            assert ack["step"] == handed["step"]
            with history.guard:
                history.acknowledged[handed["ticket"]] = (experiment, handed["step"])


def _sampler(cluster: Cluster, experiment: str, history: History, seed: int) -> None:
    rng = np.random.default_rng(seed)
    while True:
        try:
            drawn = _retrying(lambda: cluster.pick(rng).sample(cluster.alice, experiment, 1, None), history, "sample")
        except Conflict as exc:
            assert exc.code == "budget_exceeded", exc.code
            return
        if drawn is None:
            return
        with history.guard:
            history.samples += 1


def _faults(cluster: Cluster, stop: threading.Event, seed: int, restarts: int, postgres: Any) -> None:
    rng = np.random.default_rng(seed)
    done = 0
    while not stop.wait(float(rng.uniform(0.2, 0.6))):
        if done < restarts:
            cluster.restart(int(rng.integers(len(cluster.services))))
            done += 1
        if postgres is not None:
            import psycopg

            with psycopg.connect(postgres, autocommit=True) as connection:
                connection.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                                   "WHERE datname = current_database() AND pid <> pg_backend_pid()")


def _kl_mab(service: Any, alice: int, budget_samples: int) -> tuple[str, float]:
    """A fitted KL-MAB experiment whose budget affords ``budget_samples`` samples; its per-sample ε."""
    data = b"arm,reward\n" + b"".join(b"%d,%d\n" % (i % 2, (i // 2) % 2) for i in range(40))
    params = {"n_arms": 2, "eta": 1.0, "min_count": 5}
    probe = service.create(alice, "kl-mab", params, epsilon_budget=100.0)["id"]
    per_sample = service.upload(alice, probe, data, file_format="csv", action_column="arm")["privacy"]["epsilon"]
    experiment = service.create(alice, "kl-mab", params, epsilon_budget=(budget_samples + 0.5) * per_sample)["id"]
    service.upload(alice, experiment, data, file_format="csv", action_column="arm")
    return experiment, per_sample


def check_history(store: Store, *, seed: int, processes: int, clients: int, restarts: int, seconds: float) -> None:
    from test_durability import _replay

    from dpbandits.privacy.ledger_store import DurableAccountant

    cluster = Cluster(store, processes)
    rng = np.random.default_rng(seed)
    seeds = [int(s) for s in rng.integers(0, 2**31, len(EXPERIMENTS))]
    first = cluster.services[0]
    ids = [first.create(cluster.alice, kind, params, insecure_seed=s)["id"]
           for (kind, params), s in zip(EXPERIMENTS, seeds, strict=True)]
    sampled, _per_sample = _kl_mab(first, cluster.alice, budget_samples=4)
    postgres = None
    if not store.db.startswith("/"):
        postgres = store.db.replace("postgresql+psycopg://", "postgresql://")
    history, stop = History(), threading.Event()
    deadline = time.monotonic() + seconds
    threads = [threading.Thread(target=_client, args=(cluster, ids, history, seed * 100 + i, deadline))
               for i in range(clients)]
    threads += [threading.Thread(target=_sampler, args=(cluster, sampled, history, seed * 100 + 99 + i))
                for i in range(3)]
    faults = threading.Thread(target=_faults, args=(cluster, stop, seed, restarts, postgres))
    faults.start()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(seconds + 120)
    stop.set()
    faults.join()

    assert history.errors == [] and history.refused == [], (history.errors[:5], history.refused[:5])
    checker = service_for(store)[0]  # a fresh process (its own connections, opened after the faults)
    engine = checker.engine
    with engine.connect() as connection:
        stored = {row.ticket: (row.experiment_id, row.step) for row in connection.execute(
            select(feedback.c.ticket, feedback.c.experiment_id, feedback.c.step).where(feedback.c.experiment_id.in_(ids)))}
        doubled = connection.execute(select(func.count()).select_from(feedback).group_by(
            feedback.c.experiment_id, feedback.c.step).having(func.count() > 1)).all()
    assert doubled == []  # no step counted twice
    for ticket, where in history.acknowledged.items():  # every acknowledged tell kept, at its step
        assert stored.get(ticket) == where
    by_step = {where: ticket for ticket, where in stored.items()}
    for experiment, step, ticket in history.superseded:  # its lease expired and another ticket of the step counted
        assert ticket not in stored and by_step.get((experiment, step)) not in (None, ticket)
    for experiment, (kind, params), s in zip(ids, EXPERIMENTS, seeds, strict=True):
        status = checker.status(cluster.alice, experiment)
        assert status["progress"]["steps_told"] == sum(1 for e, _ in stored.values() if e == experiment)
        replay = _replay(kind, params, s)
        if status["done"]:  # released values never re-drawn: the finished run equals the sequential model
            assert status["progress"]["steps_told"] == replay["steps"]
            assert (status["recommendation"], status["estimates"]) == (replay["recommendation"], replay["estimates"])
    durable = DurableAccountant(engine, sampled)
    assert history.samples == len(durable.entries()) == 4  # exactly what the budget affords, each recorded once
    assert durable.spent().epsilon <= durable.epsilon_budget
    assert sum(1 for status in (checker.status(cluster.alice, e) for e in ids) if status["done"]) >= 1


def test_history_of_one_store_on_three_processes(store: Store) -> None:
    check_history(store, seed=1, processes=3, clients=4, restarts=2, seconds=5)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [2, 3, 4])
def test_longer_histories_of_one_store_on_three_processes(store: Store, seed: int) -> None:
    check_history(store, seed=seed, processes=3, clients=12, restarts=6, seconds=120)
