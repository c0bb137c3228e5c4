"""The privacy ledger of a served experiment, on the library's durable ledger.

Every experiment has a :class:`~dpbandits.privacy.ledger_store.DurableAccountant` in the service's
own database (its tables are created with the service's; its ledger id is the experiment's id) holding
its budget and one entry per release that costs privacy: the run's guarantee when an ask/tell
experiment is created, each batch of samples. The service spends with ``connection=``: the
check against the budget, the entry, the experiment's new state and its other rows commit in ONE
transaction (and the row lock of the ledger serialises spends from every server process), so the
ledger holds exactly the releases that left the server. A recommendation is post-processing of
the run's release and costs nothing; the ledger report lists it without an entry.
"""

from __future__ import annotations

import json
import math
from typing import Any

from sqlalchemy import Connection, Engine, select

from dpbandits._core.errors import PrivacyBudgetExceededError
from dpbandits.privacy.accounting import Accountant
from dpbandits.privacy.guarantees import Guarantee
from dpbandits.privacy.ledger_store import DurableAccountant, ledger_entries
from dpbandits.serve.errors import Conflict

__all__ = ["budget_json", "entry_note", "finite_or_none", "ledger_report", "open_ledger", "recommendation_entry",
           "spend_or_refuse"]


def _ledger_id(experiment_id: str) -> str:
    return experiment_id  # ledger_entries.ledger_id joins experiments.id directly


def open_ledger(engine: Engine, experiment_id: str, *, connection: Connection | None = None,
                create: bool = False, epsilon_budget: float | None = None,
                delta_budget: float | None = None) -> DurableAccountant:
    """The experiment's durable ledger; ``create``: create it with its budget (when the experiment is created)."""
    if create:
        return DurableAccountant.create(engine, _ledger_id(experiment_id), epsilon_budget=epsilon_budget,
                                        delta_budget=0.0 if delta_budget is None else delta_budget,
                                        connection=connection)
    return DurableAccountant(engine, _ledger_id(experiment_id), connection=connection)


def spend_or_refuse(accountant: Accountant, guarantee: Guarantee, count: int, *, label: str,
                    connection: Connection | None = None) -> None:
    """Record ``count`` releases of ``guarantee`` (in ``connection``'s transaction); 409 over budget."""
    try:
        accountant.spend(guarantee, count, label=label, connection=connection)
    except PrivacyBudgetExceededError as exc:
        raise Conflict(str(exc), code="budget_exceeded") from None


def finite_or_none(value: float) -> float | None:
    """JSON has no infinity: ``inf`` is reported as None (no budget, or no finite ε)."""
    return value if math.isfinite(value) else None


def budget_json(accountant: Accountant, *, connection: Connection | None = None) -> dict[str, Any]:
    """Spent and remaining (ε, δ) of ``accountant`` as JSON (read in ``connection``'s transaction if given)."""
    spent, remaining = accountant.spent(connection=connection), accountant.remaining(connection=connection)
    return {"spent": {"epsilon": finite_or_none(spent.epsilon), "delta": spent.delta},
            "remaining": {"epsilon": finite_or_none(remaining.epsilon), "delta": remaining.delta}}


def ledger_report(engine: Engine, experiment_id: str, summary: dict[str, Any]) -> dict[str, Any]:
    """The ledger route's JSON: guarantee, budget, spent / remaining, and the releases in order."""
    accountant = open_ledger(engine, experiment_id)
    with engine.connect() as connection:
        rows = connection.execute(select(ledger_entries.c.label, ledger_entries.c.created_at,
                                         ledger_entries.c.count, ledger_entries.c.event)
                                  .where(ledger_entries.c.ledger_id == _ledger_id(experiment_id))
                                  .order_by(ledger_entries.c.id)).all()
    events = [{"release": label, "created_at": created_at, "count": count, "event": json.loads(event),
               "note": entry_note(label, count)} for label, created_at, count, event in rows]
    recommendation = recommendation_entry(summary)
    if recommendation is not None:
        events.append({**recommendation, "event": None})
    return {"experiment": experiment_id, "guarantee": summary.get("privacy"),
            "budget": {"epsilon": accountant.epsilon_budget, "delta": accountant.delta_budget},
            **budget_json(accountant), "events": events}


def entry_note(label: str, count: int) -> str:
    """What a ledger entry of the service paid for, in words."""
    if label == "run":
        return "the whole run (every value it releases, its recommendation) is one release"
    return f"{count} sample(s)"


def recommendation_entry(summary: dict[str, Any]) -> dict[str, Any] | None:
    """The recommendation of a finished run as a ledger line (post-processing: no entry, no cost), or None."""
    if not summary.get("done") or summary.get("recommendation") is None:
        return None
    return {"release": "recommendation", "created_at": summary.get("done_at"), "count": 1,
            "note": f"recommendation {json.dumps(summary['recommendation'])}: post-processing, covered by the "
                    "run's guarantee"}
