"""Shared fixtures. Seeds come from here, never from literals scattered through test files."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

os.environ.setdefault("MPLBACKEND", "Agg")

ROOT_SEED = 20261122
TESTS = Path(__file__).resolve().parent
SLOW_DIRECTORIES = ("statistical",)
"""Every test below these directories is ``slow`` (large samples): CI runs them (``--run-slow``)."""


RUN_SLOW = "--run-slow"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(RUN_SLOW, action="store_true", default=False,
                     help="also run the tests marked slow (CI does); without it they are deselected, "
                          "unless -m selects by marker")


def _runs_slow(config: pytest.Config) -> bool:
    return bool(config.getoption(RUN_SLOW) or config.getoption("markexpr"))


def pytest_report_header(config: pytest.Config) -> str:
    if _runs_slow(config):
        return "slow tests: selected"
    return f"slow tests: deselected (the fast loop); {RUN_SLOW} runs them too, as CI does"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the tests of :data:`SLOW_DIRECTORIES` slow, then deselect every slow test unless asked for.

    Other slow tests carry the marker themselves. Without ``--run-slow`` (or an explicit ``-m``) the
    slow ones are deselected, so that ``python -m pytest`` is a contributor's fast loop.
    """
    for item in items:
        parts = item.path.resolve().relative_to(TESTS).parts if item.path.resolve().is_relative_to(TESTS) else ()
        if parts and parts[0] in SLOW_DIRECTORIES:
            item.add_marker(pytest.mark.slow)
    if _runs_slow(config):
        return
    slow = [item for item in items if item.get_closest_marker("slow") is not None]
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = [item for item in items if item.get_closest_marker("slow") is None]


@pytest.fixture
def seed(request: pytest.FixtureRequest) -> int:
    """A per-test seed derived from the root seed and the test's node id (stable across runs)."""
    digest = np.frombuffer(request.node.nodeid.encode(), dtype=np.uint8).astype(np.uint64)
    return int((ROOT_SEED * 1_000_003 + int(digest.sum()) * 7919 + len(digest)) % (2**32))


@pytest.fixture
def rng(seed: int) -> np.random.Generator:
    """A Generator seeded from :func:`seed`."""
    return np.random.default_rng(seed)


NO_POSTGRES = "PostgreSQL's server binaries (initdb, pg_ctl) are not installed: apt-get install postgresql"


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[Any]:
    """One throw-away PostgreSQL cluster for the session (``dpbandits.serve.testing.LocalPostgres``).

    Debian's ``postgresql`` package, started in a temporary directory on a free loopback port; the
    tests that use it are skipped, saying why, only when its binaries (or psycopg) are absent.
    """
    pytest.importorskip("psycopg", reason="psycopg is not installed (pip install -e '.[serve]')")
    pytest.importorskip("httpx", reason="the serve extra is not installed (pip install -e '.[serve]')")
    from dpbandits.serve.testing import LocalPostgres, postgres_binaries

    if postgres_binaries() is None:
        pytest.skip(NO_POSTGRES)
    cluster = LocalPostgres().start()
    yield cluster
    cluster.stop()
