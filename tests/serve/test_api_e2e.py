"""End to end through HTTP, on SQLite and on PostgreSQL: two clients drive a DP-BAI and a DP dueling
experiment to a recommendation; retried tells count once; keys see only their own experiments."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from servetools import client, create, run_threads

from dpbandits.serve.testing import feedback_for

BAI = {"n_arms": 4, "budget": 240, "epsilon": 2.0}
DUELING = {"n_arms": 3, "horizon": 60, "epsilon": 2.0}


def _drive(http: httpx.Client, experiment: str, told: list[int]) -> None:
    """Ask/tell until the experiment is done; retry every tell once (it must count once)."""
    while True:
        asked = http.post(f"/v1/experiments/{experiment}/ask")
        if asked.status_code == 409:
            assert asked.json()["error"]["code"] == "done"
            return
        assert asked.status_code == 200, asked.text
        ticket = asked.json()
        action = {k: v for k, v in ticket.items() if k in ("arm", "pair")}
        body = {"ticket": ticket["ticket"], **feedback_for(ticket["step"], action)}
        first = http.post(f"/v1/experiments/{experiment}/tell", json=body)
        if first.status_code == 409:  # the other client told this step first: ask again
            assert first.json()["error"]["code"] == "step_already_told"
            continue
        assert first.status_code == 200, first.text
        again = http.post(f"/v1/experiments/{experiment}/tell", json=body)
        assert again.status_code == 200
        assert {k: v for k, v in again.json().items() if k != "duplicate"} == first.json()
        assert again.json()["duplicate"] is True
        told.append(ticket["step"])


def _two_clients(server: Any, key: str, experiment: str) -> list[int]:
    told: list[int] = []
    run_threads(_drive, ((client(server, key), experiment, told) for _ in range(2)))
    return told


@pytest.mark.slow
def test_dp_bai_and_dueling_to_a_recommendation_with_two_clients(served: Any) -> None:
    server, store = served
    http = client(server, store.alice)
    for kind, params in (("dp-bai", BAI), ("dp-ebs-elimination", DUELING)):
        experiment = create(http, kind, params, name=f"e2e {kind}")
        told = _two_clients(server, store.alice, experiment)
        status = http.get(f"/v1/experiments/{experiment}").json()
        assert status["done"] is True
        assert status["recommendation"]["arm"] in range(params["n_arms"])
        # every step told exactly once, each retry counted nothing
        assert sorted(told) == list(range(len(told)))
        assert status["progress"]["steps_told"] == len(told)
        ledger = http.get(f"/v1/experiments/{experiment}/ledger").json()
        assert [e["release"] for e in ledger["events"]] == ["run", "recommendation"]
        assert ledger["spent"]["epsilon"] == params["epsilon"]
        assert ledger["guarantee"]["unit"]
        assert "reward" not in str(status) or kind != "dp-bai" or "reward" not in str(status["estimates"])


def test_a_retry_with_other_feedback_is_refused_and_counts_nothing(served: Any) -> None:
    server, store = served
    http = client(server, store.alice)
    experiment = create(http, "dp-bai", BAI)
    ticket = http.post(f"/v1/experiments/{experiment}/ask").json()
    assert http.post(f"/v1/experiments/{experiment}/tell", json={"ticket": ticket["ticket"], "reward": 0.25}).status_code == 200
    other = http.post(f"/v1/experiments/{experiment}/tell", json={"ticket": ticket["ticket"], "reward": 0.75})
    assert other.status_code == 409
    assert other.json()["error"]["code"] == "ticket_already_told"
    assert http.get(f"/v1/experiments/{experiment}").json()["progress"]["steps_told"] == 1


def test_one_key_cannot_read_or_drive_another_keys_experiment(served: Any) -> None:
    server, store = served
    alice, bob, nobody = client(server, store.alice), client(server, store.bob), client(server, None)
    experiment = create(alice, "dp-bai", BAI)
    ticket = alice.post(f"/v1/experiments/{experiment}/ask").json()["ticket"]
    for method, path, body in (("GET", "", None), ("GET", "/ledger", None), ("POST", "/ask", None),
                               ("POST", "/tell", {"ticket": ticket, "reward": 0.5}), ("POST", "/close", None)):
        response = bob.request(method, f"/v1/experiments/{experiment}{path}", json=body)
        assert response.status_code == 404, (path, response.text)
        assert nobody.request(method, f"/v1/experiments/{experiment}{path}", json=body).status_code == 401
    assert experiment not in [e["id"] for e in bob.get("/v1/experiments").json()]
    assert alice.get(f"/v1/experiments/{experiment}").json()["progress"]["steps_told"] == 0


def test_closed_experiments_refuse_feedback(served: Any) -> None:
    server, store = served
    http = client(server, store.alice)
    experiment = create(http, "dp-ebs-elimination", DUELING)
    ticket = http.post(f"/v1/experiments/{experiment}/ask").json()
    assert http.post(f"/v1/experiments/{experiment}/close").json()["closed"] is True
    told = http.post(f"/v1/experiments/{experiment}/tell", json={"ticket": ticket["ticket"], "first_wins": True})
    assert told.status_code == 409 and told.json()["error"]["code"] == "closed"
    assert http.post(f"/v1/experiments/{experiment}/ask").status_code == 409


def test_kl_offline_upload_then_samples_against_the_budget(served: Any) -> None:
    server, store = served
    http = client(server, store.alice)
    experiment = create(http, "kl-mab", {"n_arms": 3, "eta": 2.0, "min_count": 5}, epsilon_budget=2.0)
    assert http.post(f"/v1/experiments/{experiment}/sample", json={"size": 1}).status_code == 409  # no data yet
    rows = "".join(f"{i % 3},{(i % 5) / 5}\n" for i in range(30))
    uploaded = http.post(f"/v1/experiments/{experiment}/data", content="action,reward\n" + rows,
                         headers={"Content-Type": "text/csv"})
    assert uploaded.status_code == 200, uploaded.text
    assert uploaded.json()["fitted"] is True and "counts" not in uploaded.text
    epsilon = uploaded.json()["privacy"]["epsilon"]
    n = int(2.0 // epsilon)
    sampled = http.post(f"/v1/experiments/{experiment}/sample", json={"size": n})
    assert sampled.status_code == 200, sampled.text
    assert len(sampled.json()["samples"]) == n and all(a in range(3) for a in sampled.json()["samples"])
    over = http.post(f"/v1/experiments/{experiment}/sample", json={"size": 1})
    assert over.status_code == 409 and over.json()["error"]["code"] == "budget_exceeded"
    ledger = http.get(f"/v1/experiments/{experiment}/ledger").json()
    assert [e["release"] for e in ledger["events"]] == ["sample"]
    assert ledger["events"][0]["count"] == n
    assert abs(ledger["spent"]["epsilon"] - n * epsilon) < 1e-9
    assert http.post(f"/v1/experiments/{experiment}/data", content="action,reward\n0,1\n",
                     headers={"Content-Type": "text/csv"}).status_code == 409  # data is uploaded once
