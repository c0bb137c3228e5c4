"""Packed (compressed) stored states: round trip, and a stored state as untrusted input."""

from __future__ import annotations

import zlib

import pytest

from dpbandits._core.errors import InvalidParameterError
from dpbandits.serve.packing import MAGIC, PACK_ABOVE, pack, unpack


def test_large_states_are_packed_and_small_ones_stored_as_they_are() -> None:
    small = b"PK" + b"x" * 100
    assert pack(small) == small and unpack(small, 1000) == small
    large = b"PK" + bytes(8 * PACK_ABOVE)
    packed = pack(large)
    assert packed.startswith(MAGIC) and len(packed) < len(large) // 50
    assert unpack(packed, len(large)) == large


@pytest.mark.parametrize("stored", [
    MAGIC + b"not zlib at all",
    MAGIC + zlib.compress(bytes(100_000))[:-8],  # truncated
    MAGIC + zlib.compress(bytes(10_000_000)),  # inflates beyond the limit (a "bomb")
    MAGIC + zlib.compress(bytes(100)) + b"trailing",
], ids=["corrupt", "truncated", "bomb", "trailing"])
def test_a_bad_packed_state_is_refused_in_one_line(stored: bytes) -> None:
    with pytest.raises(InvalidParameterError, match="stored state"):
        unpack(stored, 1_000_000)


def test_every_stored_state_of_a_large_agent_is_packed(tmp_path: object) -> None:
    """Defect 2: the state written at creation was stored as it is (8 MB for DP-BAI with K = 1000); on
    SQLite each tell's update of the row's counters rewrites the whole row, so until the first snapshot
    every tell of that experiment rewrote megabytes inside the commit other experiments' tells share."""
    from pathlib import Path

    from servetools import make_store, service_for
    from sqlalchemy import select

    from dpbandits.serve.storage import experiments

    store = make_store(str(Path(str(tmp_path)) / "store.db"))
    service, alice, _ = service_for(store)
    experiment = service.create(alice, "dp-bai", {"n_arms": 100, "budget": 100_000, "epsilon": 1.0})["id"]
    with service.engine.connect() as connection:
        stored = connection.execute(select(experiments.c.state).where(experiments.c.id == experiment)).scalar_one()
    assert bytes(stored).startswith(MAGIC) and len(stored) < PACK_ABOVE
    other = service_for(store)[0]  # another server process loads it from there
    assert other.ask(alice, experiment, lease=10.0)["step"] == 0
