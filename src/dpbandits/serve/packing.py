"""Stored agent states, compressed when they are large.

A large agent state is mostly structure that compresses well (DP-BAI with K = 1000 arms: an 8 MB
state of which most is its feature matrix, about 40 kB with zlib at level 1, in some 60 ms of CPU,
which zlib spends without holding the GIL). Writing the compressed bytes keeps a heavy experiment's
snapshots from holding up the commits other experiments share (one transaction, one fsync for every
tell queued meanwhile), and makes its loads read less.

A packed state is :data:`MAGIC` followed by a zlib stream; anything else is a state in the library's
own format, stored as it is (small states, and every state written before packing existed). A stored
state is untrusted input: :func:`unpack` refuses a stream that does not end or inflates beyond a limit.
"""

from __future__ import annotations

import zlib

from dpbandits._core.errors import InvalidParameterError

__all__ = ["MAGIC", "PACK_ABOVE", "pack", "unpack"]

MAGIC = b"DPBZ\x01"
"""The prefix of a packed state (the library's state format starts otherwise: a zip archive's ``PK``)."""
PACK_ABOVE = 32 * 1024
"""States of more bytes than this are packed (smaller ones cost more to compress than to write)."""


def pack(state: bytes) -> bytes:
    """The bytes to store for ``state``: compressed if it is over :data:`PACK_ABOVE` bytes."""
    if len(state) <= PACK_ABOVE:
        return state
    return MAGIC + zlib.compress(state, 1)


def unpack(stored: bytes, limit: int) -> bytes:
    """The state stored as ``stored`` (by :func:`pack`, or as it is).

    Raises
    ------
    InvalidParameterError
        If a packed state is corrupt, truncated, or inflates to more than ``limit`` bytes.
    """
    if not stored.startswith(MAGIC):
        return stored
    inflater = zlib.decompressobj()
    try:
        state = inflater.decompress(stored[len(MAGIC):], limit + 1)
    except zlib.error:
        raise InvalidParameterError("the stored state is corrupt (its compressed stream does not inflate)") from None
    if len(state) > limit or inflater.unconsumed_tail:
        raise InvalidParameterError(f"the stored state inflates to more than {limit} bytes: refused")
    if not inflater.eof or inflater.unused_data:
        raise InvalidParameterError("the stored state is corrupt (its compressed stream is truncated or "
                                    "followed by other bytes)")
    return state
