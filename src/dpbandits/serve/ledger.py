"""The privacy ledger of a served experiment: privacy events as JSON, and the accountant they rebuild.

Every ledger row records one release (the run's guarantee when the experiment is created, a
recommendation, samples) with the event it spent (``None`` for post-processing of something already
paid for). The experiment's :class:`~dpbandits.privacy.accounting.Accountant` is rebuilt from the
rows, so spent/remaining always agree with what the store says was released.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Iterable
from typing import Any

from dpbandits._core.errors import DataFormatError
from dpbandits.privacy.accounting import Accountant
from dpbandits.privacy.events import (
    ApproxEvent,
    ComposedEvent,
    GaussianEvent,
    LaplaceEvent,
    PrivacyEvent,
    PureEvent,
)

__all__ = ["decode_event", "encode_event", "rebuild_accountant"]

_EVENT_TYPES: dict[str, type[PrivacyEvent]] = {
    cls.__name__: cls for cls in (LaplaceEvent, GaussianEvent, PureEvent, ApproxEvent, ComposedEvent)
}


def _to_json(event: PrivacyEvent) -> dict[str, Any]:
    if isinstance(event, ComposedEvent):
        return {"type": "ComposedEvent", "events": [_to_json(e) for e in event.events], "count": event.count}
    return {"type": type(event).__name__, **dataclasses.asdict(event)}


def encode_event(event: PrivacyEvent) -> str:
    """The event as a JSON string (``{"type": "PureEvent", "epsilon": 0.5}``)."""
    if type(event).__name__ not in _EVENT_TYPES:
        raise DataFormatError(f"cannot record a privacy event of type {type(event).__name__}")
    return json.dumps(_to_json(event))


def _from_json(value: dict[str, Any]) -> PrivacyEvent:
    cls = _EVENT_TYPES.get(str(value.get("type")))
    if cls is None:
        raise DataFormatError(f"unknown privacy event in the ledger: {value!r}")
    fields = {k: v for k, v in value.items() if k != "type"}
    if cls is ComposedEvent:
        return ComposedEvent(tuple(_from_json(e) for e in fields["events"]), fields["count"])
    return cls(**fields)


def decode_event(text: str) -> PrivacyEvent:
    """Inverse of :func:`encode_event`."""
    return _from_json(json.loads(text))


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
