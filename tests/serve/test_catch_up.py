"""A process whose agent is stale catches up with the store instead of refusing valid tickets (issue 34).

In-process, each ``ExperimentService`` plays one server process (its own engine, agents and commit
thread) on one store, SQLite and PostgreSQL.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
from servetools import Store, service_for

from dpbandits.serve import catchup
from dpbandits.serve import service as service_module
from dpbandits.serve.errors import Retry
from dpbandits.serve.kinds import Feedback
from dpbandits.serve.storage import experiments, feedback
from dpbandits.serve.testing import feedback_for


def _told(handed: dict[str, Any]) -> Feedback:
    action = {k: v for k, v in handed.items() if k in ("arm", "pair")}
    return Feedback(**feedback_for(handed["step"], action))


def _block_writer(service: Any) -> threading.Event:
    """Hold ``service``'s commit thread (its next batch waits) until the event is set."""
    release = threading.Event()
    service._writer.submit("~", lambda _connection: release.wait(30))
    return release


def test_a_tell_chained_on_a_failed_commit_is_not_committed(store: Store, monkeypatch: Any) -> None:
    """Defect 4's root cause. Process A computes two tells of one experiment (steps 2, 3) before their
    commits run; meanwhile process B committed a tell (step 4), so the store's version moved on by
    one. A's first commit fails its version check; the second expected exactly the version the first
    would have written — the store holds that number too, from B's write — and must fail as well:
    it was computed on an agent that had applied step 2, which the store does not hold. If it
    committed, its state covers step 2 with no row for it, and step 2's own ticket then gets
    ``409 step_already_told`` on every retry (the user's feedback lost)."""
    monkeypatch.setattr(service_module, "SNAPSHOT_EVERY", 2)  # step 3's tell stores the state
    first, alice, _ = service_for(store)
    second, _, _ = service_for(store)
    bai = first.create(alice, "dp-bai", {"n_arms": 2, "budget": 400, "epsilon": 1.0}, insecure_seed=5)["id"]
    handed = [first.ask(alice, bai, lease=10.0) for _ in range(5)]
    for step in (0, 1):
        first.tell(alice, bai, handed[step]["ticket"], _told(handed[step]))
    second.tell(alice, bai, handed[4]["ticket"], _told(handed[4]))  # the store's version moves on by one
    release = _block_writer(first)
    futures = [first.tell_later(alice, bai, handed[step]["ticket"], _told(handed[step])) for step in (2, 3)]
    release.set()
    with pytest.raises(Retry):
        futures[0].result(30)
    with pytest.raises(Retry):  # old code: committed, over the store's version 3 written by B
        futures[1].result(30)
    for step in (2, 3):  # the clients retry: both counted once
        assert first.tell(alice, bai, handed[step]["ticket"], _told(handed[step]))["counted"]
    _check_store(first, bai, told=5)


def _check_store(service: Any, experiment_id: str, *, told: int) -> None:
    """The store holds one feedback row per told step, its ``told`` count, and a state behind them."""
    from sqlalchemy import select

    with service.engine.connect() as connection:
        steps = sorted(connection.execute(select(feedback.c.step).where(
            feedback.c.experiment_id == experiment_id)).scalars())
        row = connection.execute(select(experiments.c.told, experiments.c.applied).where(
            experiments.c.id == experiment_id)).one()
    assert steps == list(range(told))
    assert row.told == told
    assert row.applied <= told


SPREAD_EXPERIMENTS = [("dp-ebs-elimination", {"n_arms": 4, "horizon": 400, "epsilon": 1.0}),  # a window of 1 step
                      ("dp-bai", {"n_arms": 3, "budget": 60, "epsilon": 1.0})]  # short phases


STEPS = 20


@pytest.mark.parametrize(("kind", "params"), SPREAD_EXPERIMENTS, ids=[kind for kind, _ in SPREAD_EXPERIMENTS])
def test_requests_spread_over_two_processes_refuse_no_valid_ticket(store: Store, kind: str,
                                                                   params: dict[str, Any]) -> None:
    """Defect 1: a sequential client whose every request lands on a random process of two. A process whose
    agent is from an earlier window (the other one told since) catches up with the store instead of
    answering ``400 invalid_ticket``: every ticket is accepted, once, in step order."""
    import numpy as np

    services = [service_for(store)[0] for _ in range(2)]
    alice = service_for(store)[1]
    experiment = services[0].create(alice, kind, params, insecure_seed=11)["id"]
    rng = np.random.default_rng(7)
    steps = []
    for _ in range(STEPS):
        handed = services[int(rng.integers(2))].ask(alice, experiment, lease=10.0)
        ack = services[int(rng.integers(2))].tell(alice, experiment, handed["ticket"], _told(handed))
        assert ack["counted"] and not ack.get("duplicate")
        steps.append(handed["step"])
    assert steps == list(range(STEPS))
    _check_store(services[0], experiment, told=STEPS)


def test_another_keys_experiment_in_memory_is_refused_as_a_missing_one(store: Store) -> None:
    """Defect 5 (timing): another key's experiment whose agent is in this process's memory answers 404
    after the same statements as an id that does not exist — not from memory, which answered in about
    half the time and told the two apart. (Timed over HTTP by benchmarks/bench_serve_scale.py.)"""
    from sqlalchemy import event

    from dpbandits.serve.catchup import NeedsThread
    from dpbandits.serve.errors import NotFound

    service, alice, bob = service_for(store)
    experiment = service.create(alice, "dp-bai", {"n_arms": 3, "budget": 60, "epsilon": 1.0})["id"]
    assert service._live.get(experiment) is not None  # in memory
    missing = "0" * 32
    statements: list[str] = []
    event.listen(service.engine, "before_cursor_execute",
                 lambda _c, _cur, statement, *_args: statements.append(statement))
    seen = {}
    for target in (experiment, missing):
        statements.clear()
        with pytest.raises(NeedsThread):  # the event loop never answers either from memory
            service.ask_later(bob, target, lease=10.0, inline=True)
        with pytest.raises(NotFound):
            service.ask(bob, target, lease=10.0)
        with pytest.raises(NotFound):
            service.tell(bob, target, f"{target}.0.{'a' * 16}.{'0' * 32}", Feedback(reward=0.5))
        seen[target] = list(statements)
    assert seen[experiment] == seen[missing] and seen[missing]
    assert service._live.get(experiment).owner_id == alice  # alice's agent is still in memory


def test_a_stale_agent_catches_up_by_replaying_the_feedback_told_elsewhere(store: Store, monkeypatch: Any) -> None:
    """Inside a window, a process behind the store replays the rows told since on its (large) agent before
    a tell, instead of computing the tell on a stale agent, failing its commit and loading the agent
    again: no state is read or deserialised, the agent in memory stays the same object."""
    first, alice, _ = service_for(store)
    second, _, _ = service_for(store)
    bai = first.create(alice, "dp-bai", {"n_arms": 2, "budget": 400, "epsilon": 1.0}, insecure_seed=9)["id"]
    handed = [first.ask(alice, bai, lease=10.0) for _ in range(4)]
    agent = first._live.get(bai)
    for step in (0, 1, 2):  # told through the other process: first's agent is behind
        second.tell(alice, bai, handed[step]["ticket"], _told(handed[step]))
    loads: list[str] = []
    monkeypatch.setattr(first._agents, "load", lambda *args, **kwargs: loads.append("load"))  # fails the tell below
    monkeypatch.setattr(catchup, "LIGHT_STATE_BYTES", 0)  # a large agent: caught up before a tell
    ack = first.tell(alice, bai, handed[3]["ticket"], _told(handed[3]))  # in order once caught up
    assert ack["steps_applied"] == 4 and ack["steps_told"] == 4
    assert loads == [] and first._live.get(bai) is agent
    _check_store(first, bai, told=4)


def test_a_contended_light_agent_catches_up_before_a_tell_instead_of_reloading(store: Store, monkeypatch: Any) -> None:
    """Defect 3 (per-request spread): once a process found that another one writes an experiment, its
    tells catch up first (replaying the rows told elsewhere on the agent in memory) instead of being
    computed on a stale agent, failing their commit, and loading the agent again."""
    first, alice, _ = service_for(store)
    second, _, _ = service_for(store)
    bai = first.create(alice, "dp-bai", {"n_arms": 2, "budget": 400, "epsilon": 1.0}, insecure_seed=3)["id"]
    handed = [first.ask(alice, bai, lease=10.0) for _ in range(6)]
    second.tell(alice, bai, handed[0]["ticket"], _told(handed[0]))
    first.tell(alice, bai, handed[1]["ticket"], _told(handed[1]))  # its commit fails once: first learns of second
    assert first._agents.contended(bai)
    agent = first._live.get(bai)
    loads: list[str] = []
    original = first._agents.load
    monkeypatch.setattr(first._agents, "load", lambda *a, **k: loads.append("load") or original(*a, **k))
    for step in (2, 4):
        second.tell(alice, bai, handed[step]["ticket"], _told(handed[step]))
        ack = first.tell(alice, bai, handed[step + 1]["ticket"], _told(handed[step + 1]))
        assert ack["steps_applied"] == step + 2
    assert loads == [] and first._live.get(bai) is agent  # caught up by replay, never reloaded
    _check_store(first, bai, told=6)


def test_a_warm_large_agent_reloads_in_the_server_process(store: Store, monkeypatch: Any) -> None:
    """Defect 3 (heavy experiments): a DP-BAI agent whose process held it reloads in the server process
    (its plans are kept per process, keyed by public parameters) when another process stored a newer
    state, instead of a child process re-planning from scratch (seconds for K = 1000). A process that
    never held it loads a large state in a child process, as before; the loaded agent is the stored one."""
    monkeypatch.setattr(catchup, "LIGHT_STATE_BYTES", 0)  # every state counts as large
    monkeypatch.setattr(service_module, "SNAPSHOT_EVERY", 2)
    children: list[str] = []
    isolated = catchup.run_isolated
    monkeypatch.setattr(catchup, "run_isolated", lambda *a, **k: children.append(a[0].__name__) or isolated(*a, **k))
    first, alice, _ = service_for(store)
    second, _, _ = service_for(store)
    bai = first.create(alice, "dp-bai", {"n_arms": 3, "budget": 600, "epsilon": 1.0}, insecure_seed=4)["id"]
    handed = [first.ask(alice, bai, lease=10.0) for _ in range(5)]
    for step in range(4):  # second loads it cold (a child process), then stores states at steps 2 and 4
        second.tell(alice, bai, handed[step]["ticket"], _told(handed[step]))
    assert children == ["load_job"]
    ack = first.tell(alice, bai, handed[4]["ticket"], _told(handed[4]))  # first reloads: warm, in process
    assert ack["steps_applied"] == 5 and children == ["load_job"]
    assert first._live.get(bai).agent.to_bytes() is not None
    _check_store(first, bai, told=5)


def test_processes_sharing_an_experiment_take_turns_on_postgresql(store: Store) -> None:
    """Defect 3 (per-request spread): on PostgreSQL, tells of an experiment two processes write are
    computed under its row lock once it is contended, so none is computed on a stale agent: no agent
    is dropped for a lost race (each drop costs a load), and every tell counts once."""
    import numpy as np

    from dpbandits.serve.storage import is_sqlite

    services = [service_for(store)[0] for _ in range(2)]
    if is_sqlite(services[0].engine):
        pytest.skip("SQLite: a write transaction locks the whole store; tells stay optimistic there")
    alice = service_for(store)[1]
    bai = services[0].create(alice, "dp-bai", {"n_arms": 4, "budget": 4000, "epsilon": 1.0}, insecure_seed=8)["id"]
    for service in services:
        service._agents.mark_contended(bai)  # as after a first lost race
    handed = [services[0].ask(alice, bai, lease=30.0) for _ in range(96)]
    drops: list[str] = []
    for service in services:
        discard = service._agents.discard
        service._agents.discard = lambda live, _d=discard: drops.append(live.id) or _d(live)  # type: ignore[method-assign]

    def client(index: int) -> None:
        rng = np.random.default_rng(index)
        for handout in handed[index::8]:
            services[int(rng.integers(2))].tell(alice, bai, handout["ticket"], _told(handout))

    threads = [threading.Thread(target=client, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert drops == []
    _check_store(services[0], bai, told=96)
