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
