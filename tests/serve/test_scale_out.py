"""Several server processes on one store (issue 25): leases and versions live in the store.

In-process, each ``ExperimentService`` plays one server process (its own engine, agents and
commit thread), on SQLite and PostgreSQL: a step is handed out once whichever process is asked,
and a process whose agent is stale recomputes from the store instead of overwriting it.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import numpy as np
import pytest
from servetools import Store, client, create, make_store, run_threads, service_for

from dpbandits.serve.kinds import Feedback
from dpbandits.serve.testing import feedback_for


def _tell(service: Any, owner: int, experiment: str, handed: dict[str, Any]) -> dict[str, Any]:
    action = {k: v for k, v in handed.items() if k in ("arm", "pair")}
    return service.tell(owner, experiment, handed["ticket"], Feedback(**feedback_for(handed["step"], action)))


def test_two_processes_never_hand_out_a_leased_step_twice(store: Store) -> None:
    first, alice, _ = service_for(store)
    second, _, _ = service_for(store)
    bai = first.create(alice, "dp-bai", {"n_arms": 3, "budget": 60, "epsilon": 1.0})["id"]
    steps = [service.ask(alice, bai, lease=10.0)["step"] for service in (first, second, first, second)]
    assert steps == [0, 1, 2, 3]
    duel = first.create(alice, "dp-ebs-elimination", {"n_arms": 3, "horizon": 20, "epsilon": 1.0})["id"]
    handed = first.ask(alice, duel, lease=10.0)
    assert second.ask(alice, duel, lease=10.0) is None  # out on its lease, in the other process
    again = second.ask(alice, duel, lease=0.0)  # expired: handed out again, with another ticket
    assert again["step"] == handed["step"] == 0


def test_a_host_clock_ahead_does_not_expire_another_process_lease(store: Store, monkeypatch: Any) -> None:
    """Lease times are the database's: a process whose host clock runs an hour ahead (case 9 across
    hosts) does not see another process's fresh lease as expired and hand its step out again."""
    first, alice, _ = service_for(store)
    second, _, _ = service_for(store)
    duel = first.create(alice, "dp-ebs-elimination", {"n_arms": 3, "horizon": 20, "epsilon": 1.0})["id"]
    handed = first.ask(alice, duel, lease=10.0)
    host_clock = time.time
    monkeypatch.setattr(time, "time", lambda: host_clock() + 3600.0)  # this host's clock is wrong
    assert second.ask(alice, duel, lease=10.0) is None  # still out on its lease
    monkeypatch.undo()
    assert second.ask(alice, duel, lease=0.0)["step"] == handed["step"]  # expired by the database's clock


def test_tells_of_another_process_inside_a_window_do_not_stale_an_ask(store: Store) -> None:
    """Inside a window the actions do not depend on feedback: a process whose agent stands on the stored
    state hands out the next step at once, without reloading, after another process's tells."""
    first, alice, _ = service_for(store)
    second, _, _ = service_for(store)
    bai = first.create(alice, "dp-bai", {"n_arms": 3, "budget": 60, "epsilon": 1.0})["id"]
    agent = first._live.get(bai)  # built at creation, on the stored state of step 0
    assert _tell(second, alice, bai, second.ask(alice, bai, lease=10.0))["steps_applied"] == 1
    assert first.ask(alice, bai, lease=10.0)["step"] == 1  # step 0 is told: never handed out again
    assert first._live.get(bai) is agent  # no retry, no reload


def test_concurrent_asks_of_two_processes_lease_distinct_steps(store: Store) -> None:
    """Asks racing for one experiment's row lock in two processes: the one that waited sees the lease
    the other committed (on PostgreSQL, a statement after the lock, not one snapshot before it)."""
    first, alice, _ = service_for(store)
    second, _, _ = service_for(store)
    bai = first.create(alice, "dp-bai", {"n_arms": 2, "budget": 400, "epsilon": 1.0})["id"]  # one 400-step window
    steps: list[int] = []
    errors: list[BaseException] = []

    def asking(service: Any) -> None:
        for _ in range(15):
            try:
                steps.append(service.ask(alice, bai, lease=10.0)["step"])
            except BaseException as exc:  # collected, asserted below
                errors.append(exc)

    threads = [threading.Thread(target=asking, args=(service,)) for service in (first, second) * 4]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors[:3]
    assert sorted(steps) == list(range(120))


def test_two_processes_telling_one_experiment_lose_nothing(store: Store) -> None:
    first, alice, _ = service_for(store)
    second, _, _ = service_for(store)
    experiment = first.create(alice, "dp-bai", {"n_arms": 3, "budget": 60, "epsilon": 1.0}, insecure_seed=3)["id"]
    acks = []
    for index in range(12):  # alternate: each process's agent is stale at every other tell
        service = (first, second)[index % 2]
        acks.append(_tell(service, alice, experiment, service.ask(alice, experiment, lease=10.0)))
    assert [ack["steps_told"] for ack in acks] == list(range(1, 13))
    assert first.status(alice, experiment)["progress"]["steps_told"] == 12
    assert second.status(alice, experiment)["progress"]["steps_told"] == 12


# ---------------------------------------------------------------------------------- server processes
def _two_servers(store: Store, log: Any, **options: Any) -> list[Any]:
    from dpbandits.serve.testing import ServerProcess

    return [ServerProcess(store.db, allow_insecure_seeded_noise=True, log=log, **options).start(timeout=300)
            for _ in range(2)]  # a busy machine starts a server slowly


@pytest.mark.slow
def test_two_server_processes_on_postgres_under_kill_9(postgres_cluster: Any, tmp_path: Any) -> None:
    """Clients on two processes, both SIGKILLed at a random moment: every acknowledged tell is stored
    once at its step, and the finished experiments equal a local replay (nothing lost or doubled)."""
    from test_durability import EXPERIMENTS, _check_after_restart

    from conftest import new_postgres_database
    from dpbandits.serve.testing import LoadResult, drive_clients

    store = make_store(new_postgres_database(postgres_cluster))
    log = tmp_path / "servers.log"
    for seed in (31, 32):
        servers = _two_servers(store, log)
        rng = np.random.default_rng(seed)
        http = client(servers[0], store.alice)
        seeds = [int(s) for s in rng.integers(0, 2**31, len(EXPERIMENTS))]
        ids = [create(http, kind, params, insecure_seed=s)
               for (kind, params), s in zip(EXPERIMENTS, seeds, strict=True)]
        load = LoadResult()
        delay = float(rng.uniform(0.0, 0.8))

        def kill_both(servers: list[Any] = servers, delay: float = delay, load: LoadResult = load) -> None:
            deadline = time.monotonic() + 30
            while len(load.acknowledged) < 10 and time.monotonic() < deadline:
                time.sleep(0.01)
            time.sleep(delay)
            for server in servers:
                server.kill()

        killer = threading.Thread(target=kill_both)
        killer.start()
        drivers = [threading.Thread(target=drive_clients, args=(server.url, store.alice, ids),
                                    kwargs={"n_clients": 16, "max_seconds": 40, "result": load})
                   for server in servers]
        for driver in drivers:
            driver.start()
        for driver in drivers:
            driver.join()
        killer.join()
        assert not load.errors, load.errors[:3]
        assert load.acknowledged
        restarted = _two_servers(store, log)
        try:
            _check_after_restart(store, restarted[0], ids, seeds, load)
        finally:
            for server in restarted:
                server.stop()


@pytest.mark.slow
def test_the_budget_race_between_server_processes_never_overspends(postgres_cluster: Any, tmp_path: Any) -> None:
    """16 clients sampling one KL-MAB experiment through two processes (one of them ``--workers 2``):
    exactly the samples the budget affords are released, each recorded once on the durable ledger."""
    import httpx

    from conftest import new_postgres_database
    from dpbandits.privacy.ledger_store import DurableAccountant
    from dpbandits.serve.storage import make_engine
    from dpbandits.serve.testing import ServerProcess

    store = make_store(new_postgres_database(postgres_cluster))
    log = tmp_path / "servers.log"
    servers = [ServerProcess(store.db, log=log).start(timeout=300),
               ServerProcess(store.db, log=log, options=("--workers", "2")).start(timeout=300)]
    data = b"arm,reward\n" + b"".join(b"%d,%d\n" % (i % 2, (i // 2) % 2) for i in range(40))
    params = {"n_arms": 2, "eta": 1.0, "min_count": 5}
    try:
        http = client(servers[0], store.alice)

        def fitted(budget: float) -> str:
            experiment = create(http, "kl-mab", params, epsilon_budget=budget)
            assert http.post(f"/v1/experiments/{experiment}/data?format=csv&action_column=arm", content=data,
                             headers={"Content-Type": "text/csv"}).status_code == 200
            return experiment

        per_sample = http.get(f"/v1/experiments/{fitted(100.0)}").json()["privacy"]["epsilon"]
        experiment = fitted(5.5 * per_sample)  # affords exactly 5 samples
        outcomes: list[int] = []
        guard = threading.Lock()

        def sampler(index: int) -> None:
            with httpx.Client(base_url=servers[index % 2].url, timeout=60,
                              headers={"Authorization": f"Bearer {store.alice}"}) as own:
                while True:
                    response = own.post(f"/v1/experiments/{experiment}/sample", json={"size": 1})
                    if response.status_code != 503:  # 503: nothing recorded, retry
                        break
                with guard:
                    outcomes.append(response.status_code)
                    if response.status_code == 409:
                        assert response.json()["error"]["code"] == "budget_exceeded"

        run_threads(sampler, ((i,) for i in range(16)))
        assert sorted(outcomes) == [200] * 5 + [409] * 11
        ledger = http.get(f"/v1/experiments/{experiment}/ledger").json()
        assert [e["release"] for e in ledger["events"]] == ["sample"] * 5
        engine = make_engine(store.db)
        durable = DurableAccountant(engine, experiment)  # the experiment's ledger id is its id
        assert len(durable.entries()) == 5
        assert durable.spent().epsilon == pytest.approx(5 * per_sample)
        assert durable.spent().epsilon <= durable.epsilon_budget
        engine.dispose()
    finally:
        for server in servers:
            server.stop()
