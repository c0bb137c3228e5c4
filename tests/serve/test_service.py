"""The service without HTTP: leases, out-of-order tells, restarts, ownership (fast, in-process, SQLite)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dpbandits.serve.auth import create_key
from dpbandits.serve.errors import Conflict, NotFound
from dpbandits.serve.kinds import Feedback
from dpbandits.serve.service import ExperimentService
from dpbandits.serve.storage import make_engine
from dpbandits.serve.testing import feedback_for


def _service(tmp_path: Path) -> tuple[ExperimentService, int, int]:
    engine = make_engine(str(tmp_path / "s.db"))
    alice, _ = create_key(engine, "alice")
    bob, _ = create_key(engine, "bob")
    return ExperimentService(engine, allow_insecure_seeded_noise=True), alice.id, bob.id


def _feedback(handed: dict) -> Feedback:
    action = {k: v for k, v in handed.items() if k in ("arm", "pair")}
    return Feedback(**feedback_for(handed["step"], action))


def test_leases_hand_out_distinct_steps_and_reissue_only_expired_ones(tmp_path: Path) -> None:
    service, alice, _ = _service(tmp_path)
    bai = service.create(alice, "dp-bai", {"n_arms": 3, "budget": 60, "epsilon": 1.0})["id"]
    steps = [service.ask(alice, bai, lease=10.0)["step"] for _ in range(5)]
    assert steps == [0, 1, 2, 3, 4]  # a phase is known in advance: five clients, five steps
    duel = service.create(alice, "dp-ebs-elimination", {"n_arms": 3, "horizon": 20, "epsilon": 1.0})["id"]
    first = service.ask(alice, duel, lease=10.0)
    assert service.ask(alice, duel, lease=10.0) is None  # one duel ahead, out on its lease: wait
    again = service.ask(alice, duel, lease=0.0)  # lease expired: the same step, another ticket
    assert again["step"] == first["step"] and again["ticket"] != first["ticket"]
    service.tell(alice, duel, again["ticket"], _feedback(again))
    with pytest.raises(Conflict, match="already told"):
        service.tell(alice, duel, first["ticket"], _feedback(first))
    assert service.ask(alice, duel, lease=10.0)["step"] == 1


def test_out_of_order_tells_are_buffered_then_applied_and_survive_a_restart(tmp_path: Path) -> None:
    service, alice, bob = _service(tmp_path)
    experiment = service.create(alice, "dp-bai", {"n_arms": 3, "budget": 60, "epsilon": 1.0}, insecure_seed=4)["id"]
    handed = [service.ask(alice, experiment, lease=10.0) for _ in range(3)]
    ack2 = service.tell(alice, experiment, handed[2]["ticket"], _feedback(handed[2]))
    ack1 = service.tell(alice, experiment, handed[1]["ticket"], _feedback(handed[1]))
    assert (ack2["steps_applied"], ack1["steps_applied"]) == (0, 0)  # step 0 is missing: buffered
    restarted = ExperimentService(service.engine, allow_insecure_seeded_noise=True)  # a new process
    assert restarted.status(alice, experiment)["progress"]["steps_told"] == 2
    ack0 = restarted.tell(alice, experiment, handed[0]["ticket"], _feedback(handed[0]))  # a ticket of before
    assert ack0["steps_applied"] == 3
    assert restarted.tell(alice, experiment, handed[2]["ticket"], _feedback(handed[2]))["duplicate"] is True
    with pytest.raises(NotFound):
        restarted.tell(bob, experiment, handed[0]["ticket"], _feedback(handed[0]))
    with pytest.raises(NotFound):
        restarted.ledger(bob, experiment)


def test_insecure_seeds_are_refused_unless_the_server_allows_them(tmp_path: Path) -> None:
    service, alice, _ = _service(tmp_path)
    secure = ExperimentService(service.engine)
    from dpbandits.serve.errors import ServiceError

    with pytest.raises(ServiceError, match="insecure_seed is refused"):
        secure.create(alice, "dp-bai", {"n_arms": 3, "budget": 60, "epsilon": 1.0}, insecure_seed=1)
    status = secure.create(alice, "dp-bai", {"n_arms": 3, "budget": 60, "epsilon": 1.0})
    assert status["noise"].startswith("secure")


@pytest.mark.slow
def test_usca_learns_through_tickets_then_samples_against_its_budget_after_a_restart(tmp_path: Path) -> None:
    pytest.importorskip("sklearn", reason="USCA's kernels need scikit-learn (the ml extra)")
    service, alice, _ = _service(tmp_path)
    experiment = service.create(alice, "usca", {"horizon": 8, "epsilon": 1.0, "reward_bound": 1.0},
                                epsilon_budget=2.5)["id"]
    with pytest.raises(Conflict, match=r"USCA predicts"):
        service.sample(alice, experiment, 1, [0.5])  # before the horizon nothing can be released
    for round_ in range(8):
        handed = service.ask(alice, experiment, lease=10.0)
        assert len(handed["action"]) == 1
        service.tell(alice, experiment, handed["ticket"],
                     Feedback(context=[round_ / 8], reward=handed["action"][0] - 0.5))
    restarted = ExperimentService(service.engine)  # reloads USCA, its context law passed again
    released = restarted.sample(alice, experiment, 2, [0.3])
    assert len(released["samples"]) == 2 and all(0.0 <= x[0] <= 1.0 for x in released["samples"])
    assert released["spent"]["epsilon"] == 2.0
    with pytest.raises(Conflict, match="epsilon_budget"):
        restarted.sample(alice, experiment, 1, [0.3])
    assert [e["release"] for e in restarted.ledger(alice, experiment)["events"]] == ["sample"]


@pytest.mark.slow
def test_kl_mab_takes_a_parquet_upload(tmp_path: Path) -> None:
    import io

    import pandas as pd

    service, alice, _ = _service(tmp_path)
    experiment = service.create(alice, "kl-mab", {"n_arms": 2, "eta": 1.0, "min_count": 3}, epsilon_budget=10.0)["id"]
    buffer = io.BytesIO()
    pd.DataFrame({"arm": [0, 1, 0, 1, 0, 1], "click": [1.0, 0.0, 1.0, 0.0, 1.0, 1.0]}).to_parquet(buffer)
    status = service.upload(alice, experiment, buffer.getvalue(), file_format="parquet", action_column="arm",
                            reward_column="click")
    assert status["fitted"] is True and status["privacy"]["per_instance"] is False
    assert service.sample(alice, experiment, 3, None)["samples"][0] in (0, 1)
