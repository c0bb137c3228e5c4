"""Tickets: what ``ask`` hands out and ``tell`` takes back, signed so that a client cannot invent one.

A ticket names an experiment, a *step* (the position of the action in the agent's feedback sequence)
and a random nonce, and carries an HMAC-SHA256 over those and the action of the step, keyed by the
server's secret (kept in the store, so tickets survive restarts)::

    <experiment id>.<step>.<nonce>.<mac>

Tickets are stateless: an ``ask`` writes nothing to the store (the actions of the scheduled steps
are a deterministic function of the stored agent state). The nonce makes every ticket distinct, so
a retried ``tell`` is recognised by its ticket even when two clients were handed the same step.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
from dataclasses import dataclass
from typing import Any

from dpbandits._core.errors import InvalidParameterError

__all__ = ["Ticket", "action_key", "issue_ticket", "parse_ticket", "ticket_matches"]

_PATTERN = re.compile(r"^([0-9a-f]{32})\.([0-9]{1,9})\.([A-Za-z0-9_-]{16})\.([0-9a-f]{32})$")


@dataclass(frozen=True)
class Ticket:
    """A parsed ticket (its signature not yet checked against an action)."""

    text: str
    experiment_id: str
    step: int
    nonce: str
    mac: str


def action_key(action: dict[str, Any]) -> str:
    """The canonical JSON of an action (what the MAC covers)."""
    return json.dumps(action, sort_keys=True, separators=(",", ":"))


def _mac(secret: bytes, experiment_id: str, step: int, nonce: str, action: dict[str, Any]) -> str:
    message = f"{experiment_id}.{step}.{nonce}.{action_key(action)}".encode()
    return hmac.new(secret, message, hashlib.sha256).hexdigest()[:32]


def issue_ticket(secret: bytes, experiment_id: str, step: int, action: dict[str, Any]) -> str:
    """A new ticket for ``step`` of ``experiment_id``, whose action is ``action``."""
    nonce = secrets.token_urlsafe(12)
    return f"{experiment_id}.{step}.{nonce}.{_mac(secret, experiment_id, step, nonce, action)}"


def parse_ticket(text: str) -> Ticket:
    """Split a ticket into its parts.

    Raises
    ------
    InvalidParameterError
        If ``text`` is not shaped like a ticket.
    """
    match = _PATTERN.match(text) if isinstance(text, str) else None
    if match is None:
        raise InvalidParameterError("ticket must be a ticket returned by ask; got a malformed value")
    experiment_id, step, nonce, mac = match.groups()
    return Ticket(text, experiment_id, int(step), nonce, mac)


def ticket_matches(secret: bytes, ticket: Ticket, action: dict[str, Any]) -> bool:
    """Whether ``ticket`` was issued by this server for its step with action ``action``."""
    return hmac.compare_digest(ticket.mac, _mac(secret, ticket.experiment_id, ticket.step, ticket.nonce, action))
