"""The KL policies' samplers draw from the probabilities they report (chi-square goodness of fit)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import chi2

from dpbandits.algorithms.offline import KLLinearPolicy, KLMABPolicy
from dpbandits.envs.offline import simulate_logged_bandit, simulate_logged_contextual

# Each test: chi-square statistic against its 1 - 1e-6 quantile, false-failure rate 1e-6.
ALPHA = 1e-6
N_SAMPLES = 20_000


def _chi_square(draws: np.ndarray, probs: np.ndarray) -> tuple[float, float]:
    counts = np.bincount(draws, minlength=probs.size)
    keep = probs > 0
    assert counts[~keep].sum() == 0  # never an action of probability 0
    expected = N_SAMPLES * probs[keep]
    stat = float(np.sum((counts[keep] - expected) ** 2 / expected))
    return stat, float(chi2.ppf(1 - ALPHA, df=int(keep.sum()) - 1))


@pytest.mark.statistical
def test_mab_samples_follow_the_policy(seed: int) -> None:
    data = simulate_logged_bandit(np.linspace(0.2, 0.8, 6), 120, logging="zipf", rng=seed)
    policy = KLMABPolicy(6, eta=0.2, beta0=0.3, reference=[0.3, 0.1, 0.1, 0.2, 0.2, 0.1]).fit(data)
    stat, threshold = _chi_square(policy.sample(rng=seed, size=N_SAMPLES), policy.probabilities())
    assert stat < threshold


@pytest.mark.statistical
def test_linear_samples_follow_the_policy(seed: int) -> None:
    data = simulate_logged_contextual(np.array([0.3, -0.4, 0.2]), 200, rng=seed)
    policy = KLLinearPolicy(eta=0.3, beta0=0.5).fit(data)
    actions = np.eye(3)[[0, 1, 2, 0]] * np.array([[1.0], [1.0], [1.0], [-1.0]])
    stat, threshold = _chi_square(policy.sample(actions, rng=seed, size=N_SAMPLES), policy.probabilities(actions))
    assert stat < threshold


@pytest.mark.statistical
def test_rejection_sampler_is_exact_on_a_finite_candidate_set(seed: int) -> None:
    data = simulate_logged_contextual(np.array([0.6, -0.5]), 300, rng=seed)
    policy = KLLinearPolicy(eta=0.5, beta0=0.3).fit(data)
    candidates = np.array([[1.0, 0.0], [0.0, 1.0], [-0.6, 0.8], [0.6, -0.8]])

    def propose(gen: np.random.Generator, m: int) -> np.ndarray:
        return candidates[gen.integers(0, 4, size=m)]  # π0 uniform over the candidates

    gen = np.random.default_rng(seed)
    n = 1500
    draws = np.empty(n, dtype=int)
    for i in range(n):
        chosen = policy.sample_by_rejection(propose, gen, batch=64)
        draws[i] = int(np.flatnonzero(np.all(candidates == chosen, axis=1))[0])
    counts = np.bincount(draws, minlength=4)
    expected = n * policy.probabilities(candidates)
    stat = float(np.sum((counts - expected) ** 2 / expected))
    assert stat < chi2.ppf(1 - ALPHA, df=3)  # false-failure rate 1e-6


def test_rejection_sampler_refuses_to_return_an_inexact_sample(seed: int) -> None:
    from dpbandits._core.errors import InvalidParameterError

    data = simulate_logged_contextual(np.array([0.9, 0.0]), 300, rng=seed)
    policy = KLLinearPolicy(eta=1e-4, beta0=1.0).fit(data)
    with pytest.raises(InvalidParameterError, match="max_proposals"):
        policy.sample_by_rejection(lambda gen, m: np.tile([[-1.0, 0.0]], (m, 1)), seed, batch=10,
                                   max_proposals=100)
