"""Errors that say the truth (issue 25): 503 exactly when a retry can fix the store's refusal, the
connection stays usable after any error, no bound parameter, feedback or state in the logs, no
server path in an error body."""

from __future__ import annotations

import http.client
import json
import logging
import sqlite3
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
from servetools import Store, make_store
from sqlalchemy import exc as sa

from dpbandits.serve.app import create_app
from dpbandits.serve.storage import make_engine
from dpbandits.serve.store_errors import is_bad_value, is_retryable
from dpbandits.serve.testing import free_port


def _locked(secret: str) -> sa.OperationalError:
    return sa.OperationalError("UPDATE experiments SET state=?", {"state": secret},
                               sqlite3.OperationalError("database is locked"))


def test_which_store_errors_a_retry_can_fix() -> None:
    assert is_retryable(sa.PendingRollbackError("Can't reconnect until invalid transaction is rolled back"))
    assert is_retryable(_locked("x"))
    assert is_retryable(sa.TimeoutError("QueuePool limit reached"))
    no_table = sa.OperationalError("SELECT 1", {}, sqlite3.OperationalError("no such table: experiments"))
    assert not is_retryable(no_table)
    nul = sa.DataError("INSERT", {}, ValueError("PostgreSQL text fields cannot contain NUL (0x00) bytes"))
    assert not is_retryable(nul) and is_bad_value(nul)
    assert not is_retryable(sa.IntegrityError("INSERT", {}, sqlite3.IntegrityError("UNIQUE constraint failed")))
    assert not is_retryable(ZeroDivisionError())


@contextmanager
def _in_thread(db: str) -> Iterator[tuple[Any, int]]:
    """The application on ``db`` in a real uvicorn server (in a thread of the test); (app, port)."""
    import uvicorn

    app = create_app(make_engine(db))
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=free_port(), log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    try:
        yield app, server.config.port
    finally:
        server.should_exit = True
        thread.join(10)


@contextmanager
def _client(db: str, key: str) -> Iterator[httpx.Client]:
    with _in_thread(db) as (_, port), httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60,
                                                   headers={"Authorization": f"Bearer {key}"}) as client:
        yield client


@pytest.fixture
def served_app(store: Store) -> Iterator[tuple[Any, int, str]]:
    """The application in a real uvicorn server (in a thread), on SQLite and PostgreSQL; (app, port, key)."""
    with _in_thread(store.db) as (app, port):
        yield app, port, store.alice


def test_errors_keep_the_connection_open_and_log_no_values(served_app: tuple[Any, int, str],
                                                            caplog: pytest.LogCaptureFixture) -> None:
    app, port, key = served_app
    service = app.state.service

    def pending(*_: Any) -> Any:
        raise sa.PendingRollbackError("Can't reconnect until invalid transaction is rolled back (SECRET-1)")

    def locked(*_: Any) -> Any:
        raise _locked("SECRET-STATE-BLOB")

    def bug(*_: Any) -> Any:
        raise ZeroDivisionError("SECRET-FEEDBACK 0.73")

    service.status, service.ledger, service.experiments = pending, locked, bug
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {"Authorization": f"Bearer {key}"}
    experiment = "0" * 32
    answers = []
    caplog.set_level(logging.DEBUG)
    for path in (f"/v1/experiments/{experiment}", f"/v1/experiments/{experiment}/ledger", "/v1/experiments",
                 "/healthz"):
        connection.request("GET", path, headers=headers)
        response = connection.getresponse()
        answers.append((response.status, json.loads(response.read()), response.getheader("connection")))
        socket = connection.sock
        assert socket is not None  # http.client drops its socket when the server closes the connection
    assert [status for status, _, _ in answers] == [503, 503, 500, 200]
    assert answers[0][1]["error"]["code"] == "store_unavailable"
    assert answers[2][1]["error"]["code"] == "internal_error"
    assert all(header != "close" for _, _, header in answers)
    logged = "\n".join(record.getMessage() + str(record.exc_info or "") for record in caplog.records)
    assert "PendingRollbackError" in logged and "ZeroDivisionError" in logged
    assert "SECRET" not in logged


def test_a_nul_character_is_refused_not_a_retry_on_postgres(postgres_cluster: Any) -> None:
    from servetools import service_for

    from conftest import new_postgres_database

    store = make_store(new_postgres_database(postgres_cluster))
    with _client(store.db, store.alice) as client:  # refused by validation (4xx), never a 503 "retry"
        response = client.post("/v1/experiments", json={"kind": "dp-bai", "name": "a\x00b",
                                                        "params": {"n_arms": 3, "budget": 60, "epsilon": 1.0}})
        assert response.status_code in (400, 422), response.text
        assert client.get("/v1/experiments").json() == []
    service, alice, _ = service_for(store)  # past validation, PostgreSQL itself refuses the NUL
    with pytest.raises(sa.DBAPIError) as refused:
        service.create(alice, "dp-bai", {"n_arms": 3, "budget": 60, "epsilon": 1.0}, name="a\x00b")
    assert is_bad_value(refused.value) and not is_retryable(refused.value)  # answered 400, not 503


def test_terminated_connections_are_503_never_500_and_the_service_recovers(postgres_cluster: Any) -> None:
    import psycopg

    from conftest import new_postgres_database

    store = make_store(new_postgres_database(postgres_cluster))
    with _client(store.db, store.alice) as client:
        experiment = client.post("/v1/experiments", json={"kind": "dp-bai", "params": {
            "n_arms": 3, "budget": 60, "epsilon": 1.0}}).json()["id"]
        database = store.db.rsplit("/", 1)[1]
        with psycopg.connect(f"host=127.0.0.1 port={postgres_cluster.port} user=postgres dbname=postgres",
                             autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s",
                          (database,))
        statuses = []
        for _ in range(6):  # asks and tells through the terminated pool: retried until they pass
            asked = client.post(f"/v1/experiments/{experiment}/ask")
            statuses.append(asked.status_code)
            if asked.status_code == 200:
                told = client.post(f"/v1/experiments/{experiment}/tell",
                                   json={"ticket": asked.json()["ticket"], "reward": 0.5})
                statuses.append(told.status_code)
        assert set(statuses) <= {200, 503}, statuses
        assert statuses[-1] == 200
        assert client.get(f"/v1/experiments/{experiment}").json()["progress"]["steps_told"] >= 1


@pytest.mark.slow
def test_upload_errors_carry_no_server_path(store: Store) -> None:
    with _client(store.db, store.alice) as client:
        experiment = client.post("/v1/experiments", json={"kind": "kl-mab", "epsilon_budget": 5.0, "params": {
            "n_arms": 2, "eta": 1.0, "min_count": 2}}).json()["id"]
        response = client.post(f"/v1/experiments/{experiment}/data?format=csv",
                               content=b"arm,click\n0,1\n1,0\n", headers={"Content-Type": "text/csv"})
    assert response.status_code == 400, response.text
    message = response.json()["error"]["message"]
    assert tempfile.gettempdir() not in message and "upload.csv" not in message, message
    assert "the uploaded file" in message
