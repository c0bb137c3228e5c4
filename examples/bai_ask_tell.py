"""DP-BAI (Chen et al. 2024) against feedback from the world, with secure noise and an accountant."""

import numpy as np

from dpbandits import DPBAI, Accountant, PrivacyBudgetExceededError
from dpbandits.envs import dp_bai_instance

env = dp_bai_instance()  # Section 5 of the paper: K = 30 arms in d = 2, arm 0 is the best
algorithm = DPBAI(env.features, budget=2000, epsilon=0.5)
print(algorithm.privacy)

accountant = Accountant(epsilon_budget=1.0)
world = np.random.default_rng(11)  # stands for the real rewards: Uniform[0, 2 mu]
for run in range(3):
    try:
        agent = algorithm.agent(accountant=accountant)  # spends 0.5 before any noise is drawn
    except PrivacyBudgetExceededError as error:
        print(f"run {run}: refused, {error}")
        break
    while not agent.done:
        arm = agent.ask()
        agent.tell(arm, 2 * env.means[arm] * world.random())
    print(f"run {run}: recommended arm {agent.recommendation}, spent {accountant.spent().epsilon}")

# The same algorithm, simulated over many trials (seeded simulation noise: not a release)
result = algorithm.simulate(env, n_trials=1000, rng=3)
print("success rate over 1000 simulated trials:", np.mean(result.recommended == 0))
