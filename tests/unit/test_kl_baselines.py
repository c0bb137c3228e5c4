"""Baselines of the offline MAB comparison: EM, report-noisy-max, Laplace statistics, greedy."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpbandits.algorithms.offline import KLMABPolicy
from dpbandits.algorithms.offline.baselines import (
    ExponentialMechanismMAB,
    LaplaceStatisticsGreedyMAB,
    PessimisticGreedyMAB,
    ReportNoisyMaxMAB,
    mab_utility_sensitivity,
)
from dpbandits.audit.kl import audit_mab
from dpbandits.envs.offline import simulate_logged_bandit

MEANS = np.array([0.2, 0.5, 0.8, 0.4])


def test_em_pessimistic_is_the_kl_policy_with_uniform_reference_and_passes_the_exact_audit(seed: int) -> None:
    data = simulate_logged_bandit(MEANS, 200, rng=seed)
    em = ExponentialMechanismMAB(4, epsilon=0.5, beta0=1.0).fit(data)
    delta_u = mab_utility_sensitivity(50, reward_bound=1.0, beta0=1.0)
    kl = KLMABPolicy(4, eta=2 * delta_u / 0.5, beta0=1.0).fit(data)
    np.testing.assert_allclose(em.probabilities(), kl.probabilities(), rtol=1e-12)
    report = audit_mab(kl, data)
    assert not report.violates(em.privacy())
    assert em.privacy().epsilon == 0.5 and em.privacy().per_instance


def test_rnm_and_greedy_pick_the_best_arm_at_huge_epsilon(seed: int) -> None:
    data = simulate_logged_bandit(MEANS, 4000, rng=seed)
    rnm = ReportNoisyMaxMAB(4, epsilon=1e6, beta0=0.1).fit(data)
    assert np.all(rnm.sample(rng=seed, size=20) == 2)
    greedy = PessimisticGreedyMAB(4, beta0=0.1).fit(data)
    assert int(greedy.sample(rng=seed)) == 2 and greedy.privacy().epsilon == math.inf
    np.testing.assert_array_equal(greedy.probabilities(), [0, 0, 1, 0])


def test_rnm_frequencies_match_its_exact_distribution(seed: int) -> None:
    """Chi-square goodness of fit; false-failure rate 1e-6 at the chosen threshold."""
    from scipy.stats import chi2

    data = simulate_logged_bandit(MEANS, 40, rng=seed)
    rnm = ReportNoisyMaxMAB(4, epsilon=0.3).fit(data)
    from dpbandits.privacy.mechanisms import ReportNoisyMaxMechanism

    mech = ReportNoisyMaxMechanism(rnm.sensitivity_, 0.3, one_utility_changes=True)
    expected = mech.probabilities(rnm.utilities_)
    n = 20_000
    counts = np.bincount(rnm.sample(rng=seed, size=n), minlength=4)
    stat = float(np.sum((counts - n * expected) ** 2 / (n * expected)))
    assert stat < chi2.ppf(1 - 1e-6, df=3)


def test_laplace_statistics_are_released_once(seed: int) -> None:
    data = simulate_logged_bandit(MEANS, 400, rng=seed)
    policy = LaplaceStatisticsGreedyMAB(4, epsilon=1.0, beta0=0.5).fit(data, rng=seed)
    first = policy.sample(size=100)
    assert np.all(first == first[0])  # post-processing of one release
    again = LaplaceStatisticsGreedyMAB(4, epsilon=1.0, beta0=0.5).fit(data, rng=seed)
    np.testing.assert_array_equal(again.noisy_utilities_, policy.noisy_utilities_)


def test_uncovered_arm_gives_infinite_epsilon(seed: int) -> None:
    data = simulate_logged_bandit(MEANS, 40, rng=seed)
    keep = data.actions != 3
    from dpbandits.envs.offline import LoggedBanditData

    partial = LoggedBanditData(data.actions[keep], data.rewards[keep], 4)
    em = ExponentialMechanismMAB(4, epsilon=1.0).fit(partial)
    assert em.privacy().epsilon == math.inf and "unbounded" in em.privacy().reason
    assert em.probabilities()[3] == 0.0
    with pytest.raises(ValueError, match="epsilon must be"):
        ExponentialMechanismMAB(4, epsilon=0.0)
