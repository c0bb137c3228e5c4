"""The hash chain of a durable ledger: what an edited, truncated or rolled-back entry table looks like.

Every entry of a :class:`~dpbandits.privacy.ledger_store.DurableAccountant` stores
``sha256(previous link, position, entry)``; the ledger's row stores the head (the last link) and
the number of entries. The chain starts from a genesis link that covers the ledger's id, budget
and accounting method. Reading the ledger recomputes the chain from the entries and compares it
with the row, so these are refused (:class:`~dpbandits._core.errors.LedgerCorruptError`):

* an entry deleted, inserted (at any id, ≤ 0 included), reordered or edited in any field;
* the entry table rolled back to an older copy, or the ledger row's budget or method edited;
* a ledger row rolled back to an older head while the entries stayed.

It is a hash, not a signature: someone who can write the database can recompute a consistent
chain, and a whole file rolled back to an older consistent copy (a restored backup, a file
swapped under the application) reads as that older ledger. Neither can be detected from inside
the file; a :class:`LedgerAnchor` kept elsewhere (``anchor()`` after a spend, checked with
``check_anchor()``) detects both for every entry up to the anchored one.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from dpbandits._core.errors import InvalidParameterError, LedgerCorruptError

__all__ = ["LedgerAnchor", "entry_link", "genesis_link", "verify_chain"]

CHAIN_FORMAT = "dpbandits-ledger-chain-1"
_ANCHOR = re.compile(r"^([0-9]{1,18}):([0-9a-f]{64})$")


def genesis_link(ledger_id: str, epsilon_budget: float | None, delta_budget: float, method: str) -> str:
    """The chain's first link: the ledger's id, budget and method (editing them breaks the chain)."""
    text = json.dumps([CHAIN_FORMAT, ledger_id, None if epsilon_budget is None else float(epsilon_budget).hex(),
                       float(delta_budget).hex(), method], separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def entry_link(previous: str, position: int, fields: Sequence[object]) -> str:
    """The link of the entry at ``position`` (1-based): its stored fields after ``previous``."""
    text = json.dumps([previous, position, list(fields)], separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def verify_chain(ledger_id: str, genesis: str, links: Sequence[tuple[int, str, Sequence[object]]],
                 head: str, count: int) -> list[str]:
    """Recompute the chain of ``links`` (row id, stored link, fields) and compare it with the ledger's row.

    Returns
    -------
    list of str
        The link after each entry, in order (``[genesis, link 1, ...]`` without the genesis).

    Raises
    ------
    LedgerCorruptError
        If an entry's stored link is not the recomputed one, or the number of entries or the last
        link is not the row's.
    """
    previous, chain = genesis, []
    for position, (row_id, stored, fields) in enumerate(links, start=1):
        link = entry_link(previous, position, fields)
        if stored != link:
            raise LedgerCorruptError(
                f"ledger {ledger_id!r}: entry {row_id} (position {position}) does not match its hash chain; "
                "the entry table was edited, reordered or partly lost"
            )
        chain.append(link)
        previous = link
    if len(links) != count or previous != head:
        raise LedgerCorruptError(
            f"ledger {ledger_id!r} records {count} entries ending at {head[:12]}... but its entry table holds "
            f"{len(links)} ending at {previous[:12]}...; the entries or the ledger row were edited or rolled back"
        )
    return chain


@dataclass(frozen=True)
class LedgerAnchor:
    """A ledger's position and head link, to keep outside the database (``"<entries>:<sha256 hex>"``).

    A ledger that no longer holds this link at this position was rolled back or rewritten.
    """

    entries: int
    link: str

    @classmethod
    def parse(cls, text: object) -> LedgerAnchor:
        """The anchor of ``text`` (``"12:9f86d0..."``), or InvalidParameterError."""
        if isinstance(text, LedgerAnchor):
            return text
        match = _ANCHOR.match(text) if isinstance(text, str) else None
        if match is None:
            raise InvalidParameterError(
                f"anchor must be '<entries>:<64 hex digits>' as printed by anchor(); got {text!r:.100}")
        return cls(int(match.group(1)), match.group(2))

    def __str__(self) -> str:
        return f"{self.entries}:{self.link}"
