"""Budgets that are spent: an over-budget release is refused before any noise is drawn."""

import os
import tempfile
from concurrent.futures import ThreadPoolExecutor

from dpbandits import Accountant, DurableAccountant, LaplaceMechanism, PrivacyBudgetExceededError
from dpbandits.privacy.events import GaussianEvent, LaplaceEvent

mechanism = LaplaceMechanism(sensitivity=1.0, epsilon=0.3)
accountant = Accountant(epsilon_budget=1.0)
released = []
while True:
    try:
        released.append(float(mechanism.release(42.0, accountant=accountant)))
    except PrivacyBudgetExceededError as error:
        print("refused:", error)
        break
print(f"{len(released)} releases; spent {accountant.spent().epsilon:.2f}, remaining {accountant.remaining().epsilon:.2f}")

# Many small releases: how much does the choice of composition save?
for method in ("basic", "pld", "rdp"):
    ledger = Accountant(method=method)
    ledger.spend(LaplaceEvent(scale=20.0), count=200)  # 200 releases of a 0.05-DP Laplace mechanism
    ledger.spend(GaussianEvent(sigma=5.0, l2_sensitivity=1.0), count=50)
    print(f"{method:5}: epsilon {ledger.get_epsilon(1e-6):.3f} at delta = 1e-6")

# One budget shared by threads (one Accountant) and by processes or hosts (a DurableAccountant:
# a SQLite file here, or a PostgreSQL URL); a spend is one atomic check-and-record.
path = os.path.join(tempfile.mkdtemp(), "ledger.db")
shared = DurableAccountant.create(path, "example", epsilon_budget=1.0)  # opening never creates


def release_once(_: int) -> bool:
    try:
        mechanism.release(42.0, accountant=shared)
    except PrivacyBudgetExceededError:
        return False
    return True


with ThreadPoolExecutor(8) as pool:
    accepted = sum(pool.map(release_once, range(20)))
reopened = DurableAccountant(path, "example")  # as another process would
print(f"8 threads, 20 attempts: {accepted} accepted; the ledger file says epsilon {reopened.spent().epsilon:.2f}")
