"""Fixtures of the service tests: stores (SQLite file, a throw-away PostgreSQL), keys, server processes.

PostgreSQL is Debian's ``postgresql`` package, started by the tests in a temporary directory on a free
loopback port (``dpbandits.serve.testing.LocalPostgres``); the PostgreSQL tests are skipped, saying
why, only when its binaries are absent. Servers are real ``dpbandits serve`` processes on 127.0.0.1.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="the serve extra is not installed (pip install -e '.[serve]')")

from servetools import OPEN_CLIENTS, Store, make_store

from dpbandits.serve.testing import LocalPostgres, ServerProcess

# the session's PostgreSQL cluster is the fixture ``postgres_cluster`` of tests/conftest.py


_databases = iter(range(1_000_000))


def new_postgres_database(cluster: LocalPostgres) -> str:
    """A fresh empty database in ``cluster``; its SQLAlchemy URL."""
    import psycopg

    name = f"t{next(_databases)}"
    with psycopg.connect(f"host=127.0.0.1 port={cluster.port} user=postgres dbname=postgres",
                         autocommit=True) as connection:
        connection.execute(f"CREATE DATABASE {name}")
    return cluster.url.rsplit("/", 1)[0] + "/" + name


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    """A fresh store on SQLite and on PostgreSQL."""
    if request.param == "sqlite":
        return make_store(str(tmp_path / "experiments.db"))
    return make_store(new_postgres_database(request.getfixturevalue("postgres_cluster")))


@pytest.fixture(scope="session")
def shared_servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, tuple[ServerProcess, Store]]]:
    """One server per backend for the session (started lazily by :func:`served`)."""
    started: dict[str, tuple[ServerProcess, Store]] = {}
    yield started
    for server, _ in started.values():
        server.stop()


@pytest.fixture(params=["sqlite", "postgres"])
def served(request: pytest.FixtureRequest, shared_servers: dict[str, tuple[ServerProcess, Store]],
           tmp_path_factory: pytest.TempPathFactory) -> tuple[ServerProcess, Store]:
    """A running server (shared by the session) on SQLite and on PostgreSQL, with its keys."""
    backend = request.param
    if backend not in shared_servers:
        if backend == "sqlite":
            store = make_store(str(tmp_path_factory.mktemp("served") / "experiments.db"))
        else:
            store = make_store(new_postgres_database(request.getfixturevalue("postgres_cluster")))
        shared_servers[backend] = (ServerProcess(store.db, allow_insecure_seeded_noise=True).start(), store)
    return shared_servers[backend]




@pytest.fixture(autouse=True)
def _close_clients() -> Iterator[None]:
    yield
    while OPEN_CLIENTS:
        OPEN_CLIENTS.pop().close()
