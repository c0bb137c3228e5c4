"""What the status page shows, read in one query per page.

:func:`overview` reads a key's experiments and their privacy ledgers with a single statement (the
experiments joined with their ledger rows), not one ledger query per experiment; :func:`detail`
reads one experiment and its ledger the same way, with the privacy budget spent after each release
(the ledger over time). Only public values are read: the stored summary (progress, released
estimates, recommendation) and the ledger; never the agent's state or feedback.
"""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import Engine, select

from dpbandits.privacy.accounting import Accountant
from dpbandits.privacy.event_codec import decode_event
from dpbandits.privacy.ledger_sql import ledger_entries
from dpbandits.serve.ledger import entry_note, finite_or_none, recommendation_entry
from dpbandits.serve.service import ExperimentService
from dpbandits.serve.storage import experiments

__all__ = ["detail", "overview"]

_COLUMNS = (experiments.c.id, experiments.c.name, experiments.c.kind, experiments.c.created_at,
            experiments.c.closed, experiments.c.told, experiments.c.summary, experiments.c.epsilon_budget,
            experiments.c.delta_budget, experiments.c.insecure_seed)
# an experiment's durable ledger (dpbandits.serve.ledger) has the experiment's id as its ledger id
_LEDGER = (ledger_entries.c.id.label("entry_id"), ledger_entries.c.created_at.label("ledger_at"),
           ledger_entries.c.label.label("release"), ledger_entries.c.event, ledger_entries.c.count)


def _joined(owner_id: int, experiment_id: str | None = None) -> Any:
    query = (select(*_COLUMNS, *_LEDGER)
             .select_from(experiments.outerjoin(ledger_entries, ledger_entries.c.ledger_id == experiments.c.id))
             .where(experiments.c.owner_id == owner_id))
    if experiment_id is not None:
        query = query.where(experiments.c.id == experiment_id)
    return query.order_by(experiments.c.created_at.desc(), experiments.c.id, ledger_entries.c.id)


def _grouped(engine: Engine, query: Any) -> list[tuple[Any, list[Any]]]:
    """(experiment row, its ledger rows in order) from the joined rows of one statement."""
    with engine.connect() as connection:
        rows = connection.execute(query).mappings().all()
    grouped: list[tuple[Any, list[Any]]] = []
    for row in rows:
        if not grouped or grouped[-1][0]["id"] != row["id"]:
            grouped.append((row, []))
        if row["entry_id"] is not None:
            grouped[-1][1].append(row)
    return grouped


def _spent_over_time(row: Any, entries: list[Any]) -> list[dict[str, Any]]:
    """Each ledger row with ε and δ spent once it is counted (the accountant replayed in order)."""
    accountant = Accountant(None, row["delta_budget"])
    timeline = []
    for entry in entries:
        accountant.spend(decode_event(entry["event"]), entry["count"])
        spent = accountant.spent()
        timeline.append({"release": entry["release"], "created_at": entry["ledger_at"], "count": entry["count"],
                         "note": entry_note(entry["release"], entry["count"]),
                         "epsilon_spent": finite_or_none(spent.epsilon), "delta_spent": spent.delta})
    recommendation = recommendation_entry(json.loads(row["summary"]))
    if recommendation is not None:  # post-processing: listed, costs nothing
        spent = accountant.spent()
        timeline.append({**recommendation, "epsilon_spent": finite_or_none(spent.epsilon),
                         "delta_spent": spent.delta})
    return timeline


def overview(engine: Engine, owner_id: int) -> list[dict[str, Any]]:
    """Every experiment of ``owner_id`` (newest first): its status and ``spent`` ε, in one query."""
    listed = []
    for row, entries in _grouped(engine, _joined(owner_id)):
        timeline = _spent_over_time(row, entries)
        listed.append({**ExperimentService._status_json(row),
                       "spent": timeline[-1]["epsilon_spent"] if timeline else None})
    return listed


def detail(engine: Engine, owner_id: int, experiment_id: str) -> dict[str, Any] | None:
    """One experiment of ``owner_id`` with its ledger over time (None if the key has no such experiment)."""
    found = _grouped(engine, _joined(owner_id, experiment_id))
    if not found:
        return None
    row, entries = found[0]
    timeline = _spent_over_time(row, entries)
    return {**ExperimentService._status_json(row), "timeline": timeline,
            "spent": timeline[-1]["epsilon_spent"] if timeline else None,
            "guarantee": json.loads(row["summary"]).get("privacy"),
            "delta_budget": row["delta_budget"]}
