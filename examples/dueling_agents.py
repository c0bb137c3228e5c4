"""DP dueling bandits (Saha & Asi 2024): agents that learn from users' preferences."""

import numpy as np

from dpbandits import DPEBSElimination, GOptimalDPDB
from dpbandits.envs.dueling import finite_instance

env = finite_instance("f1")  # K = 5 arms, preferences P(i beats j) = sigmoid(r_i - r_j)
users = np.random.default_rng(4)


def answer(first: int, second: int) -> int:
    """A user's answer: the index of the preferred arm."""
    return first if users.random() < env.preference_matrix[first, second] else second


agent = DPEBSElimination(n_arms=5, horizon=3000, epsilon=2.0, opponent="without_self")
print(agent.privacy)
for _ in range(3000):
    first, second = agent.ask()
    agent.tell((first, second), winner=answer(first, second))
print("DP-EBS-Elimination after 3000 rounds, active arms:", agent.active_arms)

linear = GOptimalDPDB(env.features, horizon=3000, epsilon=2.0)
print(linear.privacy)
for _ in range(3000):
    first, second = linear.ask()
    linear.tell((first, second), winner=answer(first, second))
print("GOptimal-DPDB after 3000 rounds, active arms:", linear.active.tolist())
