"""Helpers shared by the service tests (imported by conftest.py and the test modules)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import httpx

from dpbandits.serve.auth import create_key
from dpbandits.serve.storage import make_engine
from dpbandits.serve.testing import ServerProcess


@dataclass
class Store:
    """A store URL with two API keys (alice, bob)."""

    db: str
    alice: str
    bob: str


def make_store(db: str) -> Store:
    engine = make_engine(db)
    _, alice = create_key(engine, "alice")
    _, bob = create_key(engine, "bob")
    engine.dispose()
    return Store(db, alice, bob)


def client(server: ServerProcess, key: str | None) -> httpx.Client:
    """An HTTP client of ``server`` authenticated with ``key`` (None: no key)."""
    headers = {} if key is None else {"Authorization": f"Bearer {key}"}
    http = httpx.Client(base_url=server.url, headers=headers, timeout=30.0)
    OPEN_CLIENTS.append(http)
    return http


OPEN_CLIENTS: list[httpx.Client] = []
"""Clients made by :func:`client`, closed after each test (conftest)."""


def create(http: httpx.Client, kind: str, params: dict[str, Any], **extra: Any) -> str:
    response = http.post("/v1/experiments", json={"kind": kind, "params": params, **extra})
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def service_for(store: Store, **options: Any) -> tuple[Any, int, int]:
    """An in-process ExperimentService on ``store`` (a server process of its own), and alice's and bob's ids."""
    from dpbandits.serve.auth import KeyCache
    from dpbandits.serve.service import ExperimentService

    engine = make_engine(store.db)
    keys = KeyCache(engine)
    service = ExperimentService(engine, allow_insecure_seeded_noise=True, **options)
    return service, int(keys.owner(store.alice)), int(keys.owner(store.bob))  # type: ignore[arg-type]


def run_threads(target: Callable[..., Any], arguments: Iterable[tuple[Any, ...]], *, daemon: bool = False,
                timeout: float = 120.0) -> None:
    """Run ``target(*args)`` for each ``args`` in its own thread, all at once, and wait for them (``timeout``
    seconds each)."""
    threads = [threading.Thread(target=target, args=args, daemon=daemon) for args in arguments]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout)
