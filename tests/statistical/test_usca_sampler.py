"""USCA's sampler draws from the exact mechanism law it reports (spec E0 (g))."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from dpbandits.algorithms.kernel.usca import USCA
from dpbandits.envs.kernel import KernelBanditEnvironment

ENV = KernelBanditEnvironment(function_seed=9)


@pytest.mark.statistical
def test_recommendations_follow_the_mechanism_probabilities(seed):
    agent = USCA(horizon=80, epsilon=20.0, reward_bound=1.5, kernel=ENV.kernel, context_generator=ENV.sample_contexts,
                 grid_points_per_dim=64, n_features=10, clip=True, rng=seed)
    contexts = ENV.sample_contexts(80, rng=seed + 1)
    agent.observe(contexts, ENV.sample_rewards(agent.learning_actions, contexts, rng=seed + 2))
    p = np.exp(agent.mechanism_log_probabilities([0.6])[0])
    assert p.max() / p.min() > 1.5  # the law is far from uniform, so the test has power
    draws = agent.recommend([0.6], rng=seed + 3, size=200_000, insecure_seeded_noise=True)
    index = np.rint((draws[:, 0] * 64) - 0.5).astype(int)
    counts = np.bincount(index, minlength=64)
    assert (200_000 * p).min() > 5  # χ² approximation valid in every cell
    # χ² goodness of fit, 63 dof; rejecting at p < 1e-4 gives a false-failure rate of 1e-4
    assert stats.chisquare(counts, 200_000 * p).pvalue > 1e-4
    assert agent.privacy_spent.epsilon == pytest.approx(20.0 * 200_000)
