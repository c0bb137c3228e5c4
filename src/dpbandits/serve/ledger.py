"""The privacy ledger of a served experiment: privacy events as JSON, and the accountant they rebuild.

Every ledger row records one release (the run's guarantee when the experiment is created, a
recommendation, samples) with the event it spent (``None`` for post-processing of something already
paid for). The experiment's :class:`~dpbandits.privacy.accounting.Accountant` is rebuilt from the
rows, so spent/remaining always agree with what the store says was released.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from dpbandits.privacy.accounting import Accountant
from dpbandits.privacy.event_codec import decode_event, encode_event

__all__ = ["decode_event", "encode_event", "rebuild_accountant"]


def rebuild_accountant(epsilon_budget: float | None, delta_budget: float,
                       rows: Iterable[tuple[str | None, int]]) -> Accountant:
    """The experiment's accountant: its budget and every (event, count) of its ledger, in order.

    Rows are replayed without the budget check (they were checked when they were spent).
    """
    accountant = Accountant(None, delta_budget)
    for text, count in rows:
        if text is not None:
            accountant.spend(decode_event(text), count)
    accountant.epsilon_budget = epsilon_budget
    return accountant


def finite_or_none(value: float) -> float | None:
    """JSON has no infinity: ``inf`` is reported as None (no budget, or no finite ε)."""
    return value if math.isfinite(value) else None
