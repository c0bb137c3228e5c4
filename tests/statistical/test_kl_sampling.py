"""The KL policies' samplers draw from the probabilities they report (chi-square goodness of fit)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import chi2

from dpbandits._core.errors import InvalidParameterError
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
    stat, threshold = _chi_square(policy.sample(rng=seed, size=N_SAMPLES, insecure_seeded_noise=True), policy.probabilities())
    assert stat < threshold


@pytest.mark.statistical
def test_linear_samples_follow_the_policy(seed: int) -> None:
    data = simulate_logged_contextual(np.array([0.3, -0.4, 0.2]), 200, rng=seed)
    policy = KLLinearPolicy(eta=0.3, beta0=0.5).fit(data)
    actions = np.eye(3)[[0, 1, 2, 0]] * np.array([[1.0], [1.0], [1.0], [-1.0]])
    stat, threshold = _chi_square(policy.sample(actions, rng=seed, size=N_SAMPLES, insecure_seeded_noise=True), policy.probabilities(actions))
    assert stat < threshold


def _rejection_law(policy: KLLinearPolicy, candidates: np.ndarray, n_proposals: int, bound: float) -> np.ndarray:
    """Exact output law of the rejection sampler with a uniform π0 over the candidates: (1 − q)·π̃ + q·π0."""
    accept = np.exp((policy.utilities(candidates) - bound) / policy.eta)  # per-proposal acceptance
    alpha = float(np.mean(accept))
    q = (1.0 - alpha) ** n_proposals
    return (1.0 - q) * policy.probabilities(candidates) + q / candidates.shape[0]


CANDIDATES = np.array([[1.0, 0.0], [0.0, 1.0], [-0.6, 0.8], [0.6, -0.8]])


def _propose(gen: np.random.Generator, m: int) -> np.ndarray:
    return CANDIDATES[gen.integers(0, 4, size=m)]  # π0 uniform over the candidates


def _index(features: np.ndarray) -> int:
    return int(np.flatnonzero(np.all(features == CANDIDATES, axis=1))[0])


@pytest.mark.statistical
def test_rejection_sampler_draws_its_exact_mixture_law(seed: int) -> None:
    """Few proposals, so that the data-independent fallback has visible mass; chi-square, rate 1e-6."""
    data = simulate_logged_contextual(np.array([0.6, -0.5]), 300, rng=seed)
    policy = KLLinearPolicy(eta=0.5, beta0=0.3).fit(data)
    gen = np.random.default_rng(seed)
    n, proposals = 3000, 2
    draws = np.array([_index(policy.sample_by_rejection(_propose, gen, n_proposals=proposals, theta_norm_bound=1.0,
                                                        batch=1, insecure_seeded_noise=True)) for _ in range(n)])
    law = _rejection_law(policy, CANDIDATES, proposals, 1.0)
    assert abs(law - policy.probabilities(CANDIDATES)).max() > 0.01  # the fallback matters here
    counts = np.bincount(draws, minlength=4)
    stat = float(np.sum((counts - n * law) ** 2 / (n * law)))
    assert stat < chi2.ppf(1 - ALPHA, df=3)


def test_rejection_sampler_never_fails_and_its_work_does_not_depend_on_the_data(seed: int) -> None:
    """Regression (issue 12, defect 5): the old sampler raised after max_proposals rejections, with a
    data-dependent probability, and stopped at the first acceptance (a timing channel)."""
    quiet = KLLinearPolicy(eta=1e-3, beta0=1.0).fit(simulate_logged_contextual(np.array([0.9, 0.0]), 300, rng=seed))
    other = KLLinearPolicy(eta=1e-3, beta0=1.0).fit(simulate_logged_contextual(np.array([0.0, 0.9]), 50, rng=seed))
    calls: dict[int, list[int]] = {0: [], 1: []}
    for which, policy in enumerate((quiet, other)):
        def propose(gen: np.random.Generator, m: int, which: int = which) -> np.ndarray:
            calls[which].append(m)
            return np.tile([[-1.0, 0.0]], (m, 1))  # an action whose acceptance is ~e^{-1000}
        chosen = policy.sample_by_rejection(propose, seed, n_proposals=25, theta_norm_bound=1.0, batch=10,
                                            insecure_seeded_noise=True)
        np.testing.assert_array_equal(chosen, [-1.0, 0.0])  # the fallback, no exception
    assert calls[0] == calls[1] == [10, 10, 5, 1]  # T proposals in batches, then the fallback draw
    with pytest.raises(InvalidParameterError, match="theta_norm_bound"):
        quiet.sample_by_rejection(_propose, seed, n_proposals=5, theta_norm_bound=1e-3, insecure_seeded_noise=True)
    with pytest.raises(InvalidParameterError, match="insecure_seeded_noise=True"):
        quiet.sample_by_rejection(_propose, seed, n_proposals=5, theta_norm_bound=1.0)
    secure = quiet.sample_by_rejection(_propose, n_proposals=5, theta_norm_bound=1.0)  # OpenDP acceptance draws
    assert _index(secure) in range(4)
