"""Privacy events as JSON, for ledgers kept in files and databases.

``{"type": "LaplaceEvent", "scale": 2.0, "sensitivity": 1.0}``; a :class:`ComposedEvent` nests its
events. Decoding validates everything it reads (a ledger file is attack surface): the type must be
one of the five event classes, the fields exactly that class's fields, every value passes the
class's own validation, and nesting is bounded.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from dpbandits._core.errors import DataFormatError, DPBanditsError
from dpbandits.privacy.events import (
    ApproxEvent,
    ComposedEvent,
    GaussianEvent,
    LaplaceEvent,
    PrivacyEvent,
    PureEvent,
)

__all__ = ["decode_event", "encode_event"]

_EVENT_TYPES: dict[str, type[PrivacyEvent]] = {
    cls.__name__: cls for cls in (LaplaceEvent, GaussianEvent, PureEvent, ApproxEvent, ComposedEvent)
}
_MAX_DEPTH = 16


def _to_json(event: PrivacyEvent) -> dict[str, Any]:
    if type(event).__name__ not in _EVENT_TYPES or type(event) is not _EVENT_TYPES[type(event).__name__]:
        raise DataFormatError(f"cannot record a privacy event of type {type(event).__name__}")
    if isinstance(event, ComposedEvent):
        return {"type": "ComposedEvent", "events": [_to_json(e) for e in event.events], "count": event.count}
    return {"type": type(event).__name__, **dataclasses.asdict(event)}


def encode_event(event: PrivacyEvent) -> str:
    """The event as a JSON string (``{"type": "PureEvent", "epsilon": 0.5}``)."""
    return json.dumps(_to_json(event), allow_nan=False)


def _from_json(value: Any, depth: int) -> PrivacyEvent:
    if depth > _MAX_DEPTH:
        raise DataFormatError(f"privacy event nested deeper than {_MAX_DEPTH} levels")
    if not isinstance(value, dict):
        raise DataFormatError(f"a privacy event must be a JSON object; got {value!r:.100}")
    kind = value.get("type")
    cls = _EVENT_TYPES.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise DataFormatError(f"unknown privacy event type: {kind!r:.100}")
    fields = {k: v for k, v in value.items() if k != "type"}
    names = {f.name for f in dataclasses.fields(cls)}
    if not set(fields) <= names or (set(names) - set(fields)) - {"sensitivity", "l2_sensitivity"}:
        raise DataFormatError(f"a {cls.__name__} has the fields {sorted(names)}; got {sorted(fields)}")
    try:
        if cls is ComposedEvent:
            inner = fields["events"]
            if not isinstance(inner, list):
                raise DataFormatError(f"ComposedEvent events must be a list; got {inner!r:.100}")
            return ComposedEvent(tuple(_from_json(e, depth + 1) for e in inner), fields["count"])
        return cls(**fields)
    except DataFormatError:
        raise
    except (DPBanditsError, TypeError, ValueError) as exc:
        raise DataFormatError(f"invalid {cls.__name__} in the ledger: {exc}") from None


def decode_event(text: str) -> PrivacyEvent:
    """Inverse of :func:`encode_event`, validating every field.

    Raises
    ------
    DataFormatError
        For anything but a valid encoded event.
    """
    try:
        value = json.loads(text)
    except (TypeError, ValueError) as exc:
        raise DataFormatError(f"a privacy event must be JSON; got {text!r:.100} ({exc})") from None
    return _from_json(value, 0)
