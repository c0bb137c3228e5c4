"""Shared fixtures. Seeds come from here, never from literals scattered through test files."""

from __future__ import annotations

import os

import numpy as np
import pytest

os.environ.setdefault("MPLBACKEND", "Agg")

ROOT_SEED = 20261122


@pytest.fixture
def seed(request: pytest.FixtureRequest) -> int:
    """A per-test seed derived from the root seed and the test's node id (stable across runs)."""
    digest = np.frombuffer(request.node.nodeid.encode(), dtype=np.uint8).astype(np.uint64)
    return int((ROOT_SEED * 1_000_003 + int(digest.sum()) * 7919 + len(digest)) % (2**32))


@pytest.fixture
def rng(seed: int) -> np.random.Generator:
    """A Generator seeded from :func:`seed`."""
    return np.random.default_rng(seed)
