"""Sampler-level audit of USCA (spec E4): Clopper–Pearson lower bounds on ε from sampled outputs.

The exact audit (test_audit_usca_exact.py) checks the output *distributions*; this one checks the
*sampler* that releases x̂: 200 000 draws for each dataset of the worst neighbouring pair (the
reward flip at the certified argmax of σ̄²), grouped into events fixed before sampling from the exact
probabilities (the grid cells where one dataset is most favoured). The lower confidence bound on ε
must stay <= ε for USCA, and exceed ε for the broken variant with Δ/10.
"""

from __future__ import annotations

import numpy as np
import pytest

from dpbandits.algorithms.kernel.usca import USCA
from dpbandits.audit.statistical import epsilon_lower_bound
from dpbandits.envs.kernel import KernelBanditEnvironment

ENV = KernelBanditEnvironment(function_seed=4)
HORIZON, BOUND, N_SAMPLES, CONFIDENCE = 100, 1.5, 200_000, 1 - 1e-4


class CellSet:
    """The event "the sampled grid point lies in this fixed set of cells"."""

    def __init__(self, cells: np.ndarray, grid: np.ndarray) -> None:
        self.values = grid[cells, 0]

    def __call__(self, samples: np.ndarray) -> np.ndarray:
        return np.isin(samples[:, 0], self.values)


def worst_pair_samples(agent: USCA, seed: int) -> tuple[np.ndarray, np.ndarray, list[CellSet]]:
    corner = agent.sup.argmax
    agent.learning_actions = agent.learning_actions.copy()
    agent.learning_actions[0] = corner[:1]
    contexts = ENV.sample_contexts(HORIZON, rng=seed)
    contexts[0] = corner[1:]
    rewards = np.clip(ENV.sample_rewards(agent.learning_actions, contexts, rng=seed + 1), -BOUND, BOUND)
    draws, log_ps = [], []
    for index, y0 in enumerate((BOUND, -BOUND)):
        rewards[0] = y0
        agent.reset_data()
        agent.observe(contexts, rewards)
        log_ps.append(agent.mechanism_log_probabilities(corner[1:])[0])
        draws.append(agent.recommend(corner[1:], rng=seed + 2 + index, size=N_SAMPLES, insecure_seeded_noise=True))
    # events from the exact laws only (never from the samples): the cells most favouring each side
    order = np.argsort(log_ps[0] - log_ps[1])
    events = [CellSet(order[-k:], agent.grid) for k in (4, 32)] + [CellSet(order[:k], agent.grid) for k in (4, 32)]
    return draws[0], draws[1], events


@pytest.mark.statistical
def test_sampled_outputs_do_not_refute_epsilon_and_catch_the_broken_variant(seed):
    agent = USCA(horizon=HORIZON, epsilon=1.0, reward_bound=BOUND, kernel=ENV.kernel,
                 context_generator=ENV.sample_contexts, n_features=12, grid_points_per_dim=128, rng=seed)
    assert np.isclose(agent.surrogate.variance(agent.sup.argmax[None, :])[0], agent.sup.lower)
    # USCA: P[ε_lb > ε] <= 1e-4 (the joint confidence of the Clopper–Pearson intervals)
    report = epsilon_lower_bound(*worst_pair_samples(agent, seed), confidence=CONFIDENCE)
    assert not report.refutes(1.0), str(report)
    # broken (Δ/10): the exact loss is several times ε, so 2·10⁵ samples refute the claim
    agent.sensitivity /= 10.0
    broken = epsilon_lower_bound(*worst_pair_samples(agent, seed), confidence=CONFIDENCE)
    assert broken.refutes(1.0), str(broken)
