"""Per-key quotas of ``dpbandits serve``: experiments held, concurrent requests, state size.

A tenant cannot take the server from the others by volume: a key holds at most
``experiments`` experiments (closed ones count: their state stays in the store), has at most
``concurrent_requests`` requests in progress in a server process (the next one is refused at
once with 429 and ``Retry-After``, before any work), and no experiment's stored state may exceed
``state_bytes`` (413; checked when the state is built and at every write). All are set at
``dpbandits serve`` (``--max-experiments``, ``--max-concurrent-requests``, ``--max-state-bytes``).

Where each is counted: ``experiments`` in the store (the count and the insert run in one
transaction with the key's row locked), so it holds across ``--workers N`` and several hosts;
``state_bytes`` per experiment, wherever it is written; ``concurrent_requests`` **per server
process**, in its memory (a request in progress is not a durable fact: a store-wide count would
outlive a killed process and cost two writes per request) — with ``--workers N`` or several hosts,
a key may have up to N times that many requests in progress in all.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from dpbandits._core.errors import InvalidParameterError
from dpbandits.serve.errors import QuotaExceeded, TooLarge

__all__ = ["ConcurrencyLimit", "Quotas"]


@dataclass(frozen=True)
class Quotas:
    """The per-key limits (see the module docstring)."""

    experiments: int = 1000
    concurrent_requests: int = 64
    state_bytes: int = 64 * 2**20

    def __post_init__(self) -> None:
        for name in ("experiments", "concurrent_requests", "state_bytes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InvalidParameterError(f"quota {name} must be an integer >= 1; got {value!r}")

    def check_state(self, state: bytes) -> None:
        """Refuse a state over ``state_bytes`` (413)."""
        if len(state) > self.state_bytes:
            raise TooLarge(f"the experiment's state would take {len(state)} bytes, over the server's limit of "
                           f"{self.state_bytes} bytes (dpbandits serve --max-state-bytes); nothing was recorded",
                           code="state_too_large")


class ConcurrencyLimit:
    """Requests in progress per key in this process; one over the quota is refused (429).

    Used from the event loop only (no lock needed).
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._running: Counter[int] = Counter()

    @contextmanager
    def hold(self, owner_id: int) -> Iterator[None]:
        """Count a request of ``owner_id`` for the block.

        Raises
        ------
        QuotaExceeded
            If the key already has ``limit`` requests in progress.
        """
        if self._running[owner_id] >= self.limit:
            raise QuotaExceeded(f"this API key already has {self.limit} requests in progress on this server "
                                "(dpbandits serve --max-concurrent-requests); retry shortly",
                                code="too_many_requests")
        self._running[owner_id] += 1
        try:
            yield
        finally:
            self._running[owner_id] -= 1
            if not self._running[owner_id]:
                del self._running[owner_id]
