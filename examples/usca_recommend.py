"""USCA (Pavlovic et al. 2025): learn ask/tell, then make private recommendations under a budget."""

import numpy as np

from dpbandits import USCA, Accountant, PrivacyBudgetExceededError
from dpbandits.envs.kernel import KernelBanditEnvironment

env = KernelBanditEnvironment(function_seed=2)
usca = USCA(horizon=300, epsilon=1.0, reward_bound=1.5, kernel=env.kernel,
            context_generator=env.sample_contexts, clip=True, grid_points_per_dim=128, rng=0)
world = np.random.default_rng(5)
for _ in range(300):  # learning rounds: USCA picks the action, the world gives context and reward
    action = usca.ask()
    context = env.sample_contexts(1, rng=world)[0]
    usca.tell(context, float(env.sample_rewards(action, context, rng=world)))
print(usca.privacy, "| sensitivity", round(usca.sensitivity, 3))

accountant = Accountant(epsilon_budget=2.5)
for context in (0.1, 0.5, 0.9):
    try:
        action = usca.recommend([context], accountant=accountant)  # one eps-JDP release each
        print(f"context {context}: recommended action {action.round(3)}")
    except PrivacyBudgetExceededError as error:
        print(f"context {context}: refused ({error})")
print("spent:", accountant.spent().epsilon)
