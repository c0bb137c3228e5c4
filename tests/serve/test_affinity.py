"""Experiment affinity (issue 34, defect 3): each experiment's requests forwarded to its owner process.

In-process servers (two uvicorn servers in threads, each an application with its own engine,
agents and :class:`~dpbandits.serve.affinity.Affinity`, on one store) show where a request is
served: the owner's agent advances while the process that forwarded loads nothing; another key's
experiment is answered locally, never forwarded; a forwarded request is never forwarded again (no
loop); an invalid or unreachable address in the registry is not used; an owner lost after a request
was forwarded to it gets the client a 503, and the request is not sent again; two processes that both
believe they own an experiment stay correct. Real ``dpbandits serve`` processes show the failover:
the owner killed with SIGKILL under load, the other process takes the experiment over once the
lease expires, with no valid ticket refused, nothing acknowledged lost and no released value
re-drawn.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from servetools import Store, create, make_store, run_threads
from sqlalchemy import func, select, update
from test_durability import _replay

from dpbandits.serve.affinity import HOP_HEADER, Affinity, _Route
from dpbandits.serve.app import create_app
from dpbandits.serve.owners import Owner, checked_url
from dpbandits.serve.storage import feedback, make_engine, owners, processes
from dpbandits.serve.testing import ServerProcess, feedback_for, free_port

BAI = ("dp-bai", {"n_arms": 3, "budget": 60, "epsilon": 1.0})
EXPERIMENTS = (("dp-bai", {"n_arms": 3, "budget": 36, "epsilon": 1.0}),
               ("dp-ebs-elimination", {"n_arms": 3, "horizon": 12, "epsilon": 1.0}))


class InProcess:
    """An application with affinity served by uvicorn in a thread of the test process."""

    def __init__(self, db: str, *, lease: float = 5.0) -> None:
        import uvicorn

        self.engine = make_engine(db)
        self.affinity = Affinity(self.engine, lease=lease, read_timeout=10.0)
        self.app = create_app(self.engine, allow_insecure_seeded_noise=True, affinity=self.affinity)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.server = uvicorn.Server(uvicorn.Config(self.app, host="127.0.0.1", port=self.port, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            assert time.monotonic() < deadline, "the in-process server did not start"
            time.sleep(0.01)

    def agent(self, experiment: str) -> Any:
        return self.app.state.service._live.get(experiment)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(30)
        self.engine.dispose()


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Store, InProcess, InProcess]]:
    """Two processes on one SQLite store for the module's tests (each test on experiments of its own).

    Leases of a minute: no heartbeat runs while the tests set what a process believes."""
    store = make_store(str(tmp_path_factory.mktemp("affinity") / "experiments.db"))
    first, second = InProcess(store.db, lease=60.0), InProcess(store.db, lease=60.0)
    try:
        yield store, first, second
    finally:
        first.stop()
        second.stop()


def _http(url: str, key: str) -> httpx.Client:
    return httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=30.0)


def _round(ask_on: httpx.Client, tell_on: httpx.Client, experiment: str) -> int:
    asked = ask_on.post(f"/v1/experiments/{experiment}/ask")
    assert asked.status_code == 200, asked.text
    handed = asked.json()
    action = {k: v for k, v in handed.items() if k in ("arm", "pair")}
    told = tell_on.post(f"/v1/experiments/{experiment}/tell",
                        json={"ticket": handed["ticket"], **feedback_for(handed["step"], action)})
    assert told.status_code == 200, told.text
    assert told.json()["counted"]
    return int(handed["step"])


def _told(engine: Any) -> int:
    with engine.connect() as connection:  # a new transaction: its snapshot sees the latest commits
        return int(connection.execute(select(func.count()).select_from(feedback)).scalar_one())


def _owner_row(engine: Any, experiment: str) -> str | None:
    with engine.connect() as connection:
        return connection.execute(select(owners.c.process_id).where(owners.c.experiment_id == experiment)).scalar()


def test_checked_url_accepts_host_and_port_only() -> None:
    for good in ("http://127.0.0.1:8000", "https://host.example:443", "http://[::1]:9000"):
        assert checked_url(good) == good
    for bad in ("http://169.254.169.254/latest/meta-data", "file:///etc/passwd", "http://127.0.0.1:0",
                "http://user@127.0.0.1:80", "http://127.0.0.1:99999", "gopher://127.0.0.1:70", "http://h:80?x",
                "http://127.0.0.1", None, 42, "http://a:80\r\nX: y"):
        assert checked_url(bad) is None, bad


def test_requests_to_a_non_owner_are_served_by_the_owner(pair: tuple[Store, InProcess, InProcess]) -> None:
    store, first, second = pair
    with _http(first.url, store.alice) as one, _http(second.url, store.alice) as two:
        experiment = create(one, *BAI, insecure_seed=5)
        forwarded = first.affinity.forwarded, second.affinity.forwarded
        _round(one, one, experiment)  # the first process takes the lease
        assert _owner_row(first.engine, experiment) == first.affinity.process_id
        for _ in range(8):
            _round(two, two, experiment)
        assert second.agent(experiment) is None  # the second process loaded nothing
        assert first.agent(experiment).told == 9  # the owner's agent in memory took every tell
        assert (first.affinity.forwarded - forwarded[0], second.affinity.forwarded - forwarded[1]) == (0, 16)
        closed = two.post(f"/v1/experiments/{experiment}/close")
        assert closed.status_code == 200 and closed.json()["closed"] is True
        assert first.agent(experiment).closed and second.agent(experiment) is None


def test_another_keys_experiment_is_answered_locally_as_a_missing_one(pair: tuple[Store, InProcess, InProcess]) -> None:
    store, first, second = pair
    with _http(first.url, store.alice) as alice, _http(second.url, store.bob) as bob:
        experiment = create(alice, *BAI)
        _round(alice, alice, experiment)
        ticket = alice.post(f"/v1/experiments/{experiment}/ask").json()["ticket"]
        before = second.affinity.forwarded
        theirs = bob.post(f"/v1/experiments/{experiment}/ask")
        missing = bob.post(f"/v1/experiments/{'0' * 32}/ask")
        told = bob.post(f"/v1/experiments/{experiment}/tell", json={"ticket": ticket, "reward": 0.5})
        assert theirs.status_code == missing.status_code == told.status_code == 404
        assert theirs.json()["error"]["code"] == missing.json()["error"]["code"] == "not_found"
        assert second.affinity.forwarded == before  # checked before forwarding: the owner never sees them
        assert second.agent(experiment) is None


def test_a_forwarded_request_is_never_forwarded_again(pair: tuple[Store, InProcess, InProcess]) -> None:
    store, first, second = pair
    with _http(first.url, store.alice) as one:
        experiment = create(one, *BAI, insecure_seed=6)
        tenant = int(first.app.state.keys.owner(store.alice))
        far = time.monotonic() + 60
        # each believes the other owns the experiment: a request forwarded by one is served by the other
        first.affinity._routes[experiment] = _Route(Owner(tenant, second.affinity.process_id, second.affinity.url,
                                                          60.0), far)
        second.affinity._routes[experiment] = _Route(Owner(tenant, first.affinity.process_id, first.affinity.url,
                                                           60.0), far)
        forwarded = first.affinity.forwarded, second.affinity.forwarded
        _round(one, one, experiment)
        assert (first.affinity.forwarded - forwarded[0], second.affinity.forwarded - forwarded[1]) == (2, 0)
        assert second.agent(experiment).told == 1 and first.agent(experiment).told == 0  # (kept at creation)
        # a client's hop header only makes the process serve it itself
        hopped = one.post(f"/v1/experiments/{experiment}/ask", headers={HOP_HEADER: "anything"})
        assert hopped.status_code == 200 and first.affinity.forwarded == forwarded[0] + 2


def test_an_invalid_or_unreachable_registered_address_is_not_used(pair: tuple[Store, InProcess, InProcess]) -> None:
    store, first, second = pair
    with _http(first.url, store.alice) as one, _http(second.url, store.alice) as two:
        for address in ("http://169.254.169.254/latest/meta-data", "file:///etc/passwd",
                        f"http://127.0.0.1:{free_port()}"):
            experiment = create(one, *BAI, insecure_seed=7)
            _round(one, one, experiment)  # owned by the first process, which registered another address
            with first.engine.begin() as connection:
                connection.execute(update(processes).where(processes.c.id == first.affinity.process_id)
                                   .values(url=address))
            before = second.affinity.forwarded
            try:
                steps = [_round(two, two, experiment) for _ in range(3)]  # served by the second process itself
            finally:
                with first.engine.begin() as connection:
                    connection.execute(update(processes).where(processes.c.id == first.affinity.process_id)
                                       .values(url=first.affinity.url))
            assert steps == [1, 2, 3]
            assert second.agent(experiment).told == 4
            # an address of the wrong form is never connected to; a refused connection is not tried again at once
            assert second.affinity.forwarded - before == (1 if address.startswith("http://127.0.0.1") else 0)


def test_a_lost_answer_is_a_503_and_the_request_is_not_sent_again(pair: tuple[Store, InProcess, InProcess]) -> None:
    """An owner that reads a forwarded tell and dies before answering: the client gets 503 owner_unavailable
    (it retries, with the same ticket); the forwarding process never sends the tell again on its own."""
    store, first, second = pair
    seen: list[bytes] = []
    listener = socket.create_server(("127.0.0.1", 0))

    def swallow() -> None:  # reads one request per connection, then closes it without answering
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            with connection:
                data = b""
                while b"\r\n\r\n" not in data and (chunk := connection.recv(65536)):
                    data += chunk
                seen.append(data.split(b"\r\n", 1)[0])

    threading.Thread(target=swallow, daemon=True).start()
    with _http(first.url, store.alice) as one, _http(second.url, store.alice) as two:
        experiment = create(one, *BAI, insecure_seed=9)
        handed = one.post(f"/v1/experiments/{experiment}/ask").json()  # owned by the first process
        body = {"ticket": handed["ticket"], **feedback_for(handed["step"], {"arm": handed["arm"]})}
        with first.engine.begin() as connection:
            connection.execute(update(processes).where(processes.c.id == first.affinity.process_id)
                               .values(url=f"http://127.0.0.1:{listener.getsockname()[1]}"))
        try:
            lost = two.post(f"/v1/experiments/{experiment}/tell", json=body)
        finally:
            with first.engine.begin() as connection:
                connection.execute(update(processes).where(processes.c.id == first.affinity.process_id)
                                   .values(url=first.affinity.url))
            listener.close()
        assert lost.status_code == 503 and lost.json()["error"]["code"] == "owner_unavailable"
        assert lost.headers["retry-after"] == "1"
        assert seen == [f"POST /v1/experiments/{experiment}/tell HTTP/1.1".encode()]  # sent once
        retried = one.post(f"/v1/experiments/{experiment}/tell", json=body)  # the client's retry
        assert retried.status_code == 200 and retried.json()["counted"]


def test_two_processes_that_both_believe_they_own_stay_correct(pair: tuple[Store, InProcess, InProcess]) -> None:
    """Both serve the experiment (the catch-up path): every valid ticket accepted once, the run as one process's."""
    store, first, second = pair
    with _http(first.url, store.alice) as one, _http(second.url, store.alice) as two:
        kind, params = BAI
        experiment = create(one, kind, params, insecure_seed=8)
        tenant = int(first.app.state.keys.owner(store.alice))
        forwarded = first.affinity.forwarded, second.affinity.forwarded
        for process in (first, second):
            process.affinity._routes[experiment] = _Route(Owner(tenant, process.affinity.process_id,
                                                                process.affinity.url, 60.0), time.monotonic() + 60)
            process.affinity._owned.add(experiment)
        rng = np.random.default_rng(8)
        clients = (one, two)
        step = 0
        while not one.get(f"/v1/experiments/{experiment}").json()["done"]:
            assert _round(clients[rng.integers(2)], clients[rng.integers(2)], experiment) == step
            step += 1
        assert (first.affinity.forwarded, second.affinity.forwarded) == forwarded
        status = one.get(f"/v1/experiments/{experiment}").json()
        replay = _replay(kind, params, 8)
        assert status["progress"]["steps_told"] == step == replay["steps"]
        assert status["recommendation"] == replay["recommendation"]
        assert status["estimates"] == replay["estimates"]


# ---------------------------------------------------------------------------------------------- failover
def _spread_load(urls: list[str], key: str, experiments: list[str], alive: list[bool], stop: threading.Event,
                 seed: int) -> dict[str, Any]:
    """Clients whose every request lands on a random live process; a refused connection or a 503 is retried.

    A tell is retried with the same ticket (the documented client), on another process if this one is gone.
    """
    seen: dict[str, Any] = {"acknowledged": {}, "superseded": [], "errors": [], "retried_503": 0, "done": set()}
    guard = threading.Lock()

    def send(rng: np.random.Generator, http: list[httpx.Client], path: str, body: dict[str, Any] | None
             ) -> httpx.Response:
        for _attempt in range(200):
            live = [client for client, up in zip(http, alive, strict=True) if up]
            try:
                answer = live[int(rng.integers(len(live)))].post(path, json=body)
            except httpx.HTTPError:
                time.sleep(0.02)
                continue
            if answer.status_code == 503:
                with guard:
                    seen["retried_503"] += 1
                time.sleep(0.05)
                continue
            return answer
        raise AssertionError(f"no answer to {path}")

    def client(index: int) -> None:
        rng = np.random.default_rng([seed, index])
        http = [_http(url, key) for url in urls]  # keep-alive connections, as a client library keeps
        try:
            rounds(index, rng, http)
        finally:
            for one in http:
                one.close()

    def rounds(index: int, rng: np.random.Generator, http: list[httpx.Client]) -> None:
        while not stop.is_set():
            open_ones = [e for e in experiments if e not in seen["done"]]
            if not open_ones:
                return
            experiment = open_ones[index % len(open_ones)]
            asked = send(rng, http, f"/v1/experiments/{experiment}/ask", None)
            if asked.status_code == 409 and asked.json()["error"]["code"] == "done":
                with guard:
                    seen["done"].add(experiment)
                continue
            if asked.status_code != 200:
                with guard:
                    seen["errors"].append(f"ask {asked.status_code} {asked.text[:160]}")
                return
            handed = asked.json()
            action = {k: v for k, v in handed.items() if k in ("arm", "pair")}
            told = send(rng, http, f"/v1/experiments/{experiment}/tell",
                        {"ticket": handed["ticket"], **feedback_for(handed["step"], action)})
            with guard:
                if told.status_code == 200:
                    seen["acknowledged"][handed["ticket"]] = (experiment, handed["step"])
                elif told.status_code == 409 and told.json()["error"]["code"] == "step_already_told":
                    seen["superseded"].append((handed["ticket"], experiment, handed["step"]))
                else:
                    seen["errors"].append(f"tell {told.status_code} {told.text[:160]}")
                    return

    run_threads(client, ((i,) for i in range(6)), daemon=True)
    return seen


@pytest.mark.slow
def test_killing_the_owner_hands_its_experiments_over(store: Store, tmp_path: Path) -> None:
    """SIGKILL the owner under load: the other process serves, takes the lease once it expires, and the
    history is that of one process — no valid ticket refused, nothing acknowledged lost or counted twice,
    no released value re-drawn (the finished runs equal a local replay of the same seeded agents)."""
    options = ("--owner-lease-seconds", "1", "--lease-seconds", "1")
    log = tmp_path / "servers.log"
    servers = [ServerProcess(store.db, allow_insecure_seeded_noise=True, log=log, options=options) for _ in range(2)]
    starting = [threading.Thread(target=server.start, kwargs={"timeout": 300}) for server in servers]
    for thread in starting:  # both start at once
        thread.start()
    for thread in starting:
        thread.join()
    engine = make_engine(store.db)
    try:
        urls = [server.url for server in servers]
        with _http(urls[0], store.alice) as http:
            seeds = [31, 32]
            ids = [create(http, kind, params, insecure_seed=s) for (kind, params), s in zip(EXPERIMENTS, seeds,
                                                                                           strict=True)]
            _round(http, http, ids[0])  # the first process takes the first experiment's lease
        victim = 0
        owner = _owner_row(engine, ids[0])
        assert owner is not None
        alive, stop = [True, True], threading.Event()
        result: dict[str, Any] = {}

        def load() -> None:
            result.update(_spread_load(urls, store.alice, ids, alive, stop, seed=9))

        driver = threading.Thread(target=load)
        driver.start()
        deadline = time.monotonic() + 60
        while _told(engine) < 10:  # the owner killed once tells are acknowledged
            if time.monotonic() > deadline:
                stop.set()
                raise AssertionError("no tells acknowledged")
            time.sleep(0.02)
        assert _owner_row(engine, ids[0]) == owner  # renewed by its heartbeat
        servers[victim].kill()
        at_kill = _told(engine)
        alive[victim] = False
        driver.join(180)
        assert not driver.is_alive()
        survivor = servers[1 - victim]
        assert not result["errors"], result["errors"][:3]
        acknowledged = result["acknowledged"]
        assert len(acknowledged) > at_kill + 10  # the load went on after the kill
        time.sleep(1.2)  # the killed owner's lease has expired: the survivor's next request of it takes it
        with _http(survivor.url, store.alice) as http:
            assert http.post(f"/v1/experiments/{ids[0]}/ask").json()["error"]["code"] == "done"
        with engine.connect() as connection:
            stored = {row.ticket: (row.experiment_id, row.step) for row in connection.execute(
                select(feedback.c.ticket, feedback.c.experiment_id, feedback.c.step))}
            taken = connection.execute(select(owners.c.process_id).where(owners.c.experiment_id == ids[0])).scalar()
        for ticket, where in acknowledged.items():  # every acknowledged tell stored once, at its step
            assert stored.get(ticket) == where
        for ticket, experiment, step in result["superseded"]:  # refused only for a step another ticket holds
            assert any(e == experiment and s == step and t != ticket for t, (e, s) in stored.items())
        assert taken is not None and taken != owner  # the survivor took the lease over
        with _http(survivor.url, store.alice) as http:
            for experiment, (kind, params), s in zip(ids, EXPERIMENTS, seeds, strict=True):
                status = http.get(f"/v1/experiments/{experiment}").json()
                replay = _replay(kind, params, s)
                assert status["done"] and status["progress"]["steps_told"] == replay["steps"]
                assert status["recommendation"] == replay["recommendation"], kind
                assert status["estimates"] == replay["estimates"], kind
    finally:
        engine.dispose()
        for server in servers:
            server.stop()
