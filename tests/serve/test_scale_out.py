"""Several server processes on one store (issue 25): leases and versions live in the store.

In-process, each ``ExperimentService`` plays one server process (its own engine, agents and
commit thread), on SQLite and PostgreSQL: a step is handed out once whichever process is asked,
and a process whose agent is stale recomputes from the store instead of overwriting it.
"""

from __future__ import annotations

from typing import Any

from servetools import Store, service_for

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
