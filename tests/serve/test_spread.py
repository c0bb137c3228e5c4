"""Real server processes on one store, each request landing on any of them (issue 34, defect 1).

A sequential client with a new connection per request (as curl does), its requests spread at
random over two ``dpbandits serve`` processes, or over the processes of ``--workers 2``: every
valid ticket is accepted, once, in step order — no ``400 invalid_ticket`` from a process whose
agent is from an earlier window, no ``409 step_already_told`` for a step the store does not hold.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from servetools import Store, make_store

from dpbandits.serve.testing import ServerProcess, feedback_for

EXPERIMENTS = [("dp-ebs-elimination", {"n_arms": 4, "horizon": 400, "epsilon": 1.0}, 40),
               ("dp-bai", {"n_arms": 3, "budget": 60, "epsilon": 1.0}, 30)]


def _spread_client(urls: list[str], key: str, seed: int) -> None:
    """Run each experiment of :data:`EXPERIMENTS` for its steps; every tell must be accepted at once."""
    rng = np.random.default_rng(seed)
    headers = {"Authorization": f"Bearer {key}"}

    def post(path: str, body: dict[str, Any]) -> httpx.Response:
        return httpx.post(urls[int(rng.integers(len(urls)))] + path, json=body, headers=headers, timeout=60.0)

    for kind, params, steps in EXPERIMENTS:
        created = post("/v1/experiments", {"kind": kind, "params": params, "insecure_seed": seed})
        assert created.status_code == 201, created.text
        experiment = created.json()["id"]
        for expected in range(steps):
            asked = post(f"/v1/experiments/{experiment}/ask", {})
            assert asked.status_code == 200, asked.text
            handed = asked.json()
            assert handed["step"] == expected
            action = {k: v for k, v in handed.items() if k in ("arm", "pair")}
            told = post(f"/v1/experiments/{experiment}/tell",
                        {"ticket": handed["ticket"], **feedback_for(handed["step"], action)})
            # old code: 400 invalid_ticket from a process whose agent is from an earlier window
            assert told.status_code == 200, f"{kind} step {expected}: {told.status_code} {told.text[:160]}"
            assert told.json()["counted"] and not told.json().get("duplicate")


def _serve(store: Store, log: Path, count: int, options: tuple[str, ...] = ()) -> list[ServerProcess]:
    return [ServerProcess(store.db, allow_insecure_seeded_noise=True, log=log, options=options).start(timeout=300)
            for _ in range(count)]


@pytest.mark.slow
def test_two_server_processes_accept_every_valid_ticket(store: Store, tmp_path: Path) -> None:
    # each path on one store, at no extra cost: on SQLite without forwarding (each request served where it
    # lands: the catch-up path), on PostgreSQL with it (each experiment's requests served by its owner)
    options = () if "://" in store.db else ("--no-forward",)
    servers = _serve(store, tmp_path / "servers.log", 2, options)
    try:
        _spread_client([server.url for server in servers], store.alice, seed=3)
    finally:
        for server in servers:
            server.stop()


@pytest.mark.slow
def test_workers_2_on_sqlite_accept_every_valid_ticket(tmp_path: Path) -> None:
    store = make_store(str(tmp_path / "experiments.db"))
    servers = _serve(store, tmp_path / "servers.log", 1, ("--workers", "2"))
    try:
        _spread_client([servers[0].url], store.alice, seed=4)
    finally:
        servers[0].stop()
