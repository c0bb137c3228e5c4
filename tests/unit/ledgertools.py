"""Helpers shared by the ledger tests: threads racing to spend one budget."""

from __future__ import annotations

import threading

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
