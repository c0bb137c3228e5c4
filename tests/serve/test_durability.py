"""Durability under load: 32 concurrent clients, SIGKILL at a random moment, restart, finish, replay.

Each run (one seed) creates several experiments with seeded noise (``insecure_seed``: so that a replay
is exact), lets N = 32 clients ask/tell on them, kills the server with SIGKILL at a random moment,
and checks after a restart that

* every acknowledged tell is in the store (its ticket, at its step) and no step is stored twice;
* the progress the server reports counts exactly the stored steps;
* once the experiments are finished by fresh clients, the recommendation and every released estimate
  equal those of a local replay of the same agent fed the same feedback in step order: no
  acknowledged feedback lost, none counted twice, no noise re-drawn differently.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from servetools import Store, client, create, make_store, service_for
from sqlalchemy import func, select

from dpbandits.serve.kinds import get_kind
from dpbandits.serve.storage import feedback, make_engine
from dpbandits.serve.testing import LoadResult, ServerProcess, drive_clients, feedback_for

EXPERIMENTS = (
    ("dp-bai", {"n_arms": 5, "budget": 160, "epsilon": 1.0}),
    ("dp-bai", {"features": [[1, 0], [0, 1], [0.7, 0.7], [0.9, 0.2]], "budget": 120, "epsilon": 1.0}),
    ("dp-ebs-elimination", {"n_arms": 3, "horizon": 40, "epsilon": 1.0}),
)


def _replay(kind_name: str, params: dict[str, Any], seed: int) -> dict[str, Any]:
    """The same agent, driven locally with the feedback of every step in order."""
    kind = get_kind(kind_name)
    agent = kind.build(kind.params.model_validate(params), seed)
    family, step = kind.family, 0
    while not family.done(agent):
        action = family.schedule(agent, limit=1)[0]
        payload = family.check_feedback(agent, action, kind_feedback(feedback_for(step, action)))
        family.apply(agent, action, payload)
        step += 1
    return {**family.summary(agent), "steps": step}


def kind_feedback(values: dict[str, Any]) -> Any:
    from dpbandits.serve.kinds import Feedback

    return Feedback(**values)


def _kill_under_load(store: Store, server: ServerProcess, seed: int) -> tuple[list[str], list[int], LoadResult]:
    """New experiments, 32 clients on them, SIGKILL at a random moment once tells are acknowledged."""
    rng = np.random.default_rng(seed)
    http = client(server, store.alice)
    seeds = [int(s) for s in rng.integers(0, 2**31, len(EXPERIMENTS))]
    ids = [create(http, kind, params, insecure_seed=s) for (kind, params), s in zip(EXPERIMENTS, seeds, strict=True)]
    load = LoadResult()
    delay = float(rng.uniform(0.0, 0.8))

    def kill_at_a_random_moment() -> None:
        deadline = time.monotonic() + 20
        while len(load.acknowledged) < 10 and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(delay)
        server.kill()

    killer = threading.Thread(target=kill_at_a_random_moment)
    killer.start()
    drive_clients(server.url, store.alice, ids, n_clients=32, max_seconds=30, result=load)
    killer.join()
    assert not load.errors, load.errors[:3]
    assert load.acknowledged, "the load must have acknowledged something before the kill"
    return ids, seeds, load


def _check_after_restart(store: Store, server: ServerProcess, ids: list[str], seeds: list[int],
                         load: LoadResult) -> None:
    engine = make_engine(store.db)
    with engine.connect() as connection:
        stored = {row.ticket: (row.experiment_id, row.step) for row in connection.execute(
            select(feedback.c.ticket, feedback.c.experiment_id, feedback.c.step)
            .where(feedback.c.experiment_id.in_(ids)))}
        per_step = connection.execute(select(func.count()).select_from(feedback)
                                      .group_by(feedback.c.experiment_id, feedback.c.step)
                                      .having(func.count() > 1)).all()
    engine.dispose()
    for ack in load.acknowledged:  # every acknowledged tell is stored, at its step
        assert stored.get(ack.ticket) == (ack.experiment, ack.step)
    assert per_step == []  # no step counted twice
    http = client(server, store.alice)
    for experiment in ids:
        told = http.get(f"/v1/experiments/{experiment}").json()["progress"]["steps_told"]
        assert told == sum(1 for e, _ in stored.values() if e == experiment)
    finish = drive_clients(server.url, store.alice, ids, n_clients=8, max_seconds=60)
    assert not finish.errors, finish.errors[:3]
    for experiment, (kind, params), s in zip(ids, EXPERIMENTS, seeds, strict=True):
        status = http.get(f"/v1/experiments/{experiment}").json()
        replay = _replay(kind, params, s)
        assert status["done"] is True
        assert status["progress"]["steps_told"] == replay["steps"]
        assert status["recommendation"] == replay["recommendation"], kind
        assert status["estimates"] == replay["estimates"], kind


def _rounds(store: Store, seeds: list[int], log: Path) -> None:
    """One kill and restart per seed; the restarted server is the next round's (N seeds, N + 1 starts)."""
    server = ServerProcess(store.db, allow_insecure_seeded_noise=True, log=log).start()
    try:
        for seed in seeds:
            ids, experiment_seeds, load = _kill_under_load(store, server, seed)
            server = ServerProcess(store.db, allow_insecure_seeded_noise=True, log=log).start()
            _check_after_restart(store, server, ids, experiment_seeds, load)
    finally:
        server.stop()


@pytest.mark.slow
def test_kill_9_under_load_sqlite(tmp_path: Path) -> None:
    _rounds(make_store(str(tmp_path / "experiments.db")), [11, 12, 13], tmp_path / "server.log")


@pytest.mark.slow
def test_kill_9_under_load_postgres(postgres_cluster: Any, tmp_path: Path) -> None:
    from conftest import new_postgres_database

    _rounds(make_store(new_postgres_database(postgres_cluster)), [21], tmp_path / "server.log")


def test_tells_between_snapshots_are_replayed_exactly_after_a_restart(store: Store) -> None:
    """A tell stores its feedback row, not the agent's state: the state is written every
    ``SNAPSHOT_EVERY`` steps, at a phase end and when done. A new process rebuilds the agent from the
    stored state and replays the rows told since; the run ends exactly as an uninterrupted one, and
    raw feedback is erased once a stored state covers it."""
    from dpbandits.serve.kinds import Feedback
    from dpbandits.serve.service import SNAPSHOT_EVERY
    from dpbandits.serve.storage import experiments

    params = {"n_arms": 2, "budget": 150, "epsilon": 1.0}  # one phase of 150 pulls: a window of 150 steps
    service, alice, _ = service_for(store)
    experiment = service.create(alice, "dp-bai", params, insecure_seed=11)["id"]

    def drive(process: Any, count: int) -> None:
        for _ in range(count):
            handed = process.ask(alice, experiment, lease=10.0)
            reported = Feedback(**feedback_for(handed["step"], {"arm": handed["arm"]}))
            process.tell(alice, experiment, handed["ticket"], reported)

    def stored() -> tuple[int, int]:
        engine = make_engine(store.db)
        with engine.connect() as connection:
            applied = connection.execute(select(experiments.c.applied).where(experiments.c.id == experiment)).scalar()
            kept = connection.execute(select(func.count()).select_from(feedback).where(
                feedback.c.experiment_id == experiment, feedback.c.payload.is_not(None))).scalar()
        engine.dispose()
        return int(applied or 0), int(kept or 0)

    drive(service, 10)
    assert stored() == (0, 10)  # no state written: ten rows with their feedback
    restarted, _, _ = service_for(store)  # another process: the state of step 0, ten rows replayed
    drive(restarted, SNAPSHOT_EVERY)
    assert stored() == (SNAPSHOT_EVERY, 10)  # a snapshot at 64 steps erased the feedback it covers
    again, _, _ = service_for(store)
    while not again.status(alice, experiment)["done"]:
        drive(again, 1)
    status, replay = again.status(alice, experiment), _replay("dp-bai", params, 11)
    assert stored() == (replay["steps"], 0)  # the run's end is stored; no raw feedback is left
    assert status["progress"]["steps_told"] == replay["steps"]
    assert (status["recommendation"], status["estimates"]) == (replay["recommendation"], replay["estimates"])
