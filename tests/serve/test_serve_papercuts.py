"""What a deployer meets first (issue 34, defect 6): the start line, -v request lines, one status for
every type error of a request body, and agents' modules imported before the first request."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from servetools import Store, client, make_store, service_for

from dpbandits.serve.errors import InvalidRequest, ServiceError
from dpbandits.serve.testing import ServerProcess


@pytest.mark.parametrize(("params", "status"), [
    ({"n_arms": 3, "budget": 60, "epsilon": True}, 422),  # a JSON type error (was a 400)
    ({"n_arms": 3, "budget": "60", "epsilon": 1.0}, 422),
    ({"n_arms": 3, "epsilon": 1.0}, 422),  # missing
    ({"n_arms": 3, "budget": 60, "epsilon": 1.0, "arms": 2}, 422),  # unknown
    ({"n_arms": 3, "budget": 60, "epsilon": -1.0}, 400),  # a value out of range stays a 400
], ids=["bool-for-float", "string-for-int", "missing", "unknown", "out-of-range"])
def test_a_type_error_in_params_is_a_422_like_every_body_type_error(tmp_path: Path, params: dict[str, Any],
                                                                     status: int) -> None:
    store = make_store(str(tmp_path / "experiments.db"))
    service, alice, _ = service_for(store)
    with pytest.raises(ServiceError) as refused:
        service.create(alice, "dp-bai", params)
    assert refused.value.status == status
    assert isinstance(refused.value, InvalidRequest) == (status == 422)
    assert "invalid parameters for kind 'dp-bai'" in str(refused.value)


@pytest.mark.slow
def test_serve_logs_its_start_and_each_request_at_verbose(tmp_path: Path) -> None:
    store: Store = make_store(str(tmp_path / "experiments.db"))
    log = tmp_path / "server.log"
    server = ServerProcess(store.db, log=log, options=("-v",)).start(timeout=300)
    try:
        http = client(server, store.alice)
        assert http.post("/v1/experiments", json={"kind": "dp-bai", "params": {
            "n_arms": 3, "budget": 60, "epsilon": True}}).status_code == 422
        assert http.post("/v1/experiments/" + "0" * 32 + "/ask").status_code == 404
    finally:
        server.stop()
    lines = log.read_text().splitlines()
    started = [line for line in lines if "dpbandits serve:" in line]
    assert len(started) == 1, lines
    assert f"http://127.0.0.1:{server.port}" in started[0] and str(tmp_path / "experiments.db") in started[0]
    assert "1 worker process" in started[0]
    assert any("POST /v1/experiments 422" in line for line in lines), lines
    assert any(f"POST /v1/experiments/{'0' * 32}/ask 404" in line for line in lines), lines
    assert not any(store.alice in line for line in lines)  # never a key


def test_a_server_process_imports_the_agents_before_it_listens(monkeypatch: Any, tmp_path: Path) -> None:
    """The application a server process listens with is built after the agents' modules are imported,
    so the first request after a restart does not pay for those imports (seconds)."""
    from dpbandits.serve import server
    from dpbandits.serve.quotas import Quotas

    imported: list[str] = []
    # start_workers first: monkeypatch resolves a dotted path with importlib.import_module (recent pytest)
    monkeypatch.setattr("dpbandits.serve.workers.start_workers", lambda: None)
    monkeypatch.setattr(server.importlib, "import_module", imported.append)
    settings = {"db": str(tmp_path / "experiments.db"), "sqlite_synchronous": "full", "lease_seconds": 10.0,
                "allow_insecure_seeded_noise": False, "time_limit": 60.0, "behind_tls": False, "log_level": None,
                "quotas": Quotas().__dict__}
    server._application(settings)
    assert imported == list(server.AGENT_MODULES)
    assert {"dpbandits.algorithms.bai", "dpbandits.algorithms.dueling"} <= set(imported)
