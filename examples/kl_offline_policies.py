"""KL-regularised offline policies (Zhang et al. 2025): private actions from logged data."""

import numpy as np

from dpbandits import Accountant, KLLinearPolicy, KLMABPolicy
from dpbandits.audit.kl import audit_mab
from dpbandits.envs.offline import simulate_logged_bandit, simulate_logged_contextual

# Multi-armed bandit: logged (arm, reward) records; K = 5 is public
data = simulate_logged_bandit([0.2, 0.4, 0.5, 0.6, 0.8], n_records=1000, rng=1)
policy = KLMABPolicy(n_arms=5, eta=0.2, beta0=0.5, min_count=150).fit(data)
print("policy:", policy.probabilities().round(3))
print("Theorem 1, per instance:", policy.privacy)
print("over the declared domain:", policy.guarantee(scope="domain"))
report = audit_mab(policy, data)
print(f"exact audited loss {report.epsilon_hat:.4f}; claim violated: {report.violates(policy.privacy)}")

accountant = Accountant(epsilon_budget=1.0)
print("private actions:", policy.sample(size=4, accountant=accountant), "spent:", round(accountant.spent().epsilon, 4))

# Linear contextual bandit: logged (features, reward) records, guarantee at a query context
logged = simulate_logged_contextual(np.array([0.6, 0.8]), 2000, rng=2)
linear = KLLinearPolicy(eta=0.5, beta0=0.5, ridge=2.0).fit(logged)
query = np.array([[1.0, 0.0], [0.0, 1.0], [0.7071, 0.7071]])  # the actions available at this context
print("linear policy at the query context:", linear.probabilities(query).round(3))
print("Theorem 2:", linear.guarantee(query))
print("private action:", linear.sample(query))
