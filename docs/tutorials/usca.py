"""Tutorial: jointly-DP kernelised contextual bandits with USCA (Pavlovic, Salgia & Zhao, AISTATS 2025).

Run ``python docs/tutorials/usca.py [OUT_DIR]``: it prints what the tutorial page shows and writes
``OUT_DIR/usca.png``. The docs build and the test suite both run it.
"""

from __future__ import annotations

import sys
from pathlib import Path

out_dir = Path(sys.argv[1]) if len(sys.argv) > 1 else Path.cwd()

# --8<-- [start:learn]
import numpy as np

from dpbandits import USCA
from dpbandits.envs.kernel import KernelBanditEnvironment

env = KernelBanditEnvironment(function_seed=1)  # f on [0,1] (action) x [0,1] (context), SE kernel


def learn(horizon: int, epsilon: float) -> USCA:
    """Run USCA's T learning rounds: uniform actions, observed contexts and rewards."""
    usca = USCA(horizon=horizon, epsilon=epsilon, reward_bound=1.5, kernel=env.kernel,
                context_generator=env.sample_contexts, clip=True, grid_points_per_dim=256,
                rng=0)  # rng draws the public coins only; the privacy noise is secure
    contexts = env.sample_contexts(horizon, rng=1)
    usca.observe(contexts, env.sample_rewards(usca.learning_actions, contexts, rng=2))
    return usca


usca = learn(horizon=800, epsilon=1.0)
print(usca.privacy)
print(f"sensitivity Delta = {usca.sensitivity:.3f} (certified sup of the surrogate variance:"
      f" {usca.summary()['sup_variance']:.3f})")
# --8<-- [end:learn]

# --8<-- [start:recommend]
from dpbandits import Accountant

accountant = Accountant(epsilon_budget=3.0)
context = [0.3]
action = usca.recommend(context, accountant=accountant)  # one eps-JDP release (secure sampler)
best = usca.grid[np.argmax(env.mean_reward(usca.grid, np.full((usca.grid.shape[0], 1), 0.3)))]
print(f"private action {action.round(3)} for context 0.3 (best action {best.round(3)});"
      f" spent {accountant.spent().epsilon}")
# --8<-- [end:recommend]

# --8<-- [start:plot]
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from scipy.special import logsumexp


def at_epsilon(log_probabilities: np.ndarray, epsilon: float) -> np.ndarray:
    """The exponential mechanism's log P(x | c) at ``epsilon``, from its log-probabilities at eps = 1.

    P_eps(x) is proportional to exp(eps * mu(x, c) / (2 Delta)) = P_1(x)^eps: the learning (and
    Delta) do not depend on epsilon, only the release does.
    """
    scaled = log_probabilities * epsilon
    return scaled - logsumexp(scaled, axis=1, keepdims=True)


from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

EPSILONS = (1.0, 4.0, 16.0)  # the same three epsilon in both panels, each in the same colour
COLOURS = dict(zip(EPSILONS, ("tab:blue", "tab:orange", "tab:green"), strict=True))
grid = usca.grid[:, 0]
figure, (left, right) = plt.subplots(1, 2, figsize=(9.5, 3.6), layout="constrained")
(reward,) = left.plot(grid, env.mean_reward(usca.grid, np.full((grid.size, 1), 0.3)), color="black",
                      linewidth=2, label="reward f(x, c = 0.3)")
density = left.twinx()
at_context = usca.mechanism_log_probabilities([context])  # exact, for evaluation: not a release
densities = [density.plot(grid, np.exp(at_epsilon(at_context, epsilon)[0]) * grid.size, color=COLOURS[epsilon],
                          label=f"density, eps = {epsilon:g}")[0] for epsilon in EPSILONS]
left.set_xlabel("action x")
left.set_ylabel("reward f(x, 0.3)")
density.set_ylabel("density of the released action")
left.legend(handles=[reward, *densities], loc="upper right", fontsize=8)  # one legend for both axes
left.set_title("exponential mechanism at T = 800")

horizons = [100, 200, 400, 800]
fits = {horizon: usca if horizon == 800 else learn(horizon, epsilon=1.0) for horizon in horizons}
test_contexts = env.sample_contexts(16, rng=9)
table = env.mean_reward(usca.grid[None, :, :], test_contexts[:, None, :])  # f(x_j, c_i), (contexts, grid)
log_probabilities = {horizon: fit.mechanism_log_probabilities(test_contexts) for horizon, fit in fits.items()}
drawn = []
for epsilon in EPSILONS:
    errors = []
    for horizon in horizons:
        probabilities = np.exp(at_epsilon(log_probabilities[horizon], epsilon))
        errors.append(np.mean(table.max(axis=1) - (probabilities * table).sum(axis=1)))  # expected regret
    right.loglog(horizons, errors, marker="o", color=COLOURS[epsilon], label=f"eps = {epsilon:g}")
    drawn += errors
print("sensitivity by horizon:", {horizon: round(fit.sensitivity, 3) for horizon, fit in fits.items()})
right.set_xticks(horizons, [str(horizon) for horizon in horizons])
right.xaxis.set_minor_locator(NullLocator())  # the horizons are the ticks
# labelled y ticks at 1, 1.5, 2, 3, 5 and 7 times a power of ten, from just below the lowest error to just above the highest
low, high = min(drawn) / 1.15, max(drawn) * 1.15
right.set_ylim(low, high)
right.yaxis.set_major_locator(FixedLocator([m * 10.0**e for e in range(-4, 2) for m in (1, 1.5, 2, 3, 5, 7) if low <= m * 10.0**e <= high]))
right.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
right.yaxis.set_minor_locator(NullLocator())
right.set_xlabel("horizon T")
right.set_ylabel("expected error rate")
right.set_title("error rate of one private prediction")
right.grid(True, which="major", alpha=0.3)
right.legend(fontsize=8)
figure.savefig(out_dir / "usca.png", dpi=110)
# --8<-- [end:plot]
