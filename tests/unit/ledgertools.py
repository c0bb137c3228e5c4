"""Helpers shared by the ledger tests: threads racing to spend one budget."""

from __future__ import annotations

import threading
from typing import Any

from dpbandits._core.errors import PrivacyBudgetExceededError
from dpbandits.privacy.accounting import Accountant, PureEvent


def hammer(accountant: Accountant, *, n_threads: int, epsilon: float, attempts: int) -> int:
    """``n_threads`` threads released together each try ``attempts`` spends of ε; the number accepted."""
    barrier = threading.Barrier(n_threads)
    counts = [0] * n_threads

    def worker(index: int) -> None:
        barrier.wait()
        for _ in range(attempts):
            try:
                accountant.spend(PureEvent(epsilon))
            except PrivacyBudgetExceededError:
                continue
            counts[index] += 1

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(n_threads)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sum(counts)


def forge_entry(engine: Any, ledger_id: str, **fields: Any) -> None:
    """Append an entry row *with a consistent hash chain* (the ledger's row updated too): an adversary who
    writes the database and recomputes the chain, so what is left to catch it is the row's own validation."""
    from sqlalchemy import select, update

    from dpbandits.privacy.ledger_chain import entry_link
    from dpbandits.privacy.ledger_store import ledger_entries, ledgers

    values = {"event": '{"type": "PureEvent", "epsilon": 0.1}', "count": 1, "unit": None, "neighbouring": None,
              "scope": "domain", "label": "", "lineage": None, "conversion": "", **fields}
    with engine.begin() as conn:
        row = conn.execute(select(ledgers).where(ledgers.c.ledger_id == ledger_id)).one()
        link = entry_link(row.head, row.entries + 1, [values[name] for name in (
            "event", "count", "unit", "neighbouring", "scope", "label", "lineage", "conversion")])
        conn.execute(ledger_entries.insert().values(ledger_id=ledger_id, created_at=0.0, link=link, **values))
        conn.execute(update(ledgers).where(ledgers.c.ledger_id == ledger_id).values(entries=row.entries + 1, head=link))
