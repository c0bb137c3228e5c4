"""Budgets that are spent: an over-budget release is refused before any noise is drawn."""

from dpbandits import Accountant, LaplaceMechanism, PrivacyBudgetExceededError
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
