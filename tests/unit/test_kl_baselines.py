"""Baselines of the offline MAB comparison: EM, report-noisy-max, Laplace statistics, greedy."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpbandits._core.errors import InsecureNoiseWarning, InvalidParameterError
from dpbandits.algorithms.offline import KLMABPolicy
from dpbandits.algorithms.offline.accountants import mab_domain_sensitivity
from dpbandits.algorithms.offline.baselines import (
    ExponentialMechanismMAB,
    LaplaceStatisticsGreedyMAB,
    PessimisticGreedyMAB,
    ReportNoisyMaxMAB,
)
from dpbandits.audit.kl import audit_mab
from dpbandits.envs.offline import LoggedBanditData, simulate_logged_bandit

MEANS = np.array([0.2, 0.5, 0.8, 0.4])


def test_em_pessimistic_is_the_kl_policy_with_uniform_reference_and_passes_the_exact_audit(seed: int) -> None:
    data = simulate_logged_bandit(MEANS, 200, rng=seed)  # balanced: 50 per arm by design
    em = ExponentialMechanismMAB(4, epsilon=0.5, beta0=1.0, min_count=50).fit(data)
    delta_u = mab_domain_sensitivity(50, reward_bound=1.0, beta0=1.0)
    kl = KLMABPolicy(4, eta=2 * delta_u / 0.5, beta0=1.0).fit(data)
    np.testing.assert_allclose(em.probabilities(), kl.probabilities(), rtol=1e-12)
    # every in-domain neighbour of D is a neighbour of the per-instance audit, whose loss bounds it
    assert audit_mab(kl, data).epsilon_hat <= 0.5
    guarantee = em.guarantee()
    assert guarantee.epsilon == 0.5 and not guarantee.per_instance and "min_count = 50" in str(guarantee)


def test_baselines_require_a_public_floor_and_never_size_noise_from_data(seed: int) -> None:
    for cls in (ExponentialMechanismMAB, ReportNoisyMaxMAB, LaplaceStatisticsGreedyMAB):
        with pytest.raises(TypeError, match="min_count"):
            cls(4, epsilon=1.0)  # type: ignore[call-arg]
        with pytest.raises(InvalidParameterError, match="min_count must be an int >= 1"):
            cls(4, epsilon=1.0, min_count=0)
    small = simulate_logged_bandit(MEANS, 40, rng=seed)
    large = simulate_logged_bandit(MEANS, 400, rng=seed)
    fitted = [ReportNoisyMaxMAB(4, epsilon=1.0, min_count=10).fit(data) for data in (small, large)]
    assert fitted[0].noise_scale == fitted[1].noise_scale == mab_domain_sensitivity(10, reward_bound=1.0, beta0=0.0)
    with pytest.raises(InvalidParameterError, match=r"min_count = 11 for every arm; this dataset does not"):
        LaplaceStatisticsGreedyMAB(4, epsilon=1.0, min_count=11).fit(small)
    with pytest.raises(InvalidParameterError, match="reward_bound"):
        ReportNoisyMaxMAB(2, epsilon=1.0, reward_bound=0.5, min_count=1).fit(LoggedBanditData([0, 1], [0.4, 0.9], 2))
    with pytest.raises(InvalidParameterError, match="n_arms"):
        ReportNoisyMaxMAB(3, epsilon=1.0, min_count=1).fit(LoggedBanditData([0, 1], [0.4, 0.9], 2))
    with pytest.raises(ValueError, match="epsilon must be"):
        ExponentialMechanismMAB(4, epsilon=0.0, min_count=2)


def test_releases_are_secure_by_default_and_seeded_only_on_request(seed: int) -> None:
    data = simulate_logged_bandit(MEANS, 400, rng=seed)
    rnm = ReportNoisyMaxMAB(4, epsilon=1e6, beta0=0.1, min_count=100).fit(data)
    assert np.all(rnm.sample(size=5) == 2)  # OpenDP noise, huge epsilon
    with pytest.raises(InvalidParameterError, match="insecure_seeded_noise=True"):
        rnm.sample(rng=seed)
    with pytest.warns(InsecureNoiseWarning):
        assert np.all(rnm.sample(rng=seed, size=20, insecure_seeded_noise=True) == 2)
    em = ExponentialMechanismMAB(4, epsilon=1e6, min_count=100).fit(data)
    assert int(em.sample()) == 2
    with pytest.raises(InvalidParameterError, match="insecure_seeded_noise=True"):
        em.sample(rng=seed)
    policy = LaplaceStatisticsGreedyMAB(4, epsilon=1.0, beta0=0.5, min_count=100).fit(data)
    first = policy.sample(size=100)
    assert np.all(first == first[0])  # post-processing of one release
    with pytest.raises(InvalidParameterError, match="insecure_seeded_noise=True"):
        LaplaceStatisticsGreedyMAB(4, epsilon=1.0, min_count=100).fit(data, rng=seed)
    seeded = [LaplaceStatisticsGreedyMAB(4, epsilon=1.0, beta0=0.5, min_count=100).fit(
        data, rng=seed, insecure_seeded_noise=True).noisy_utilities_ for _ in range(2)]
    np.testing.assert_array_equal(*seeded)
    greedy = PessimisticGreedyMAB(4, beta0=0.1).fit(data)
    assert int(greedy.sample(rng=seed)) == 2 and greedy.guarantee().epsilon == math.inf
    np.testing.assert_array_equal(greedy.probabilities(), [0, 0, 1, 0])


@pytest.mark.statistical
def test_rnm_frequencies_match_its_exact_distribution(seed: int) -> None:
    """Chi-square goodness of fit of seeded draws; false-failure rate 1e-6 at the chosen threshold."""
    from scipy.stats import chi2

    data = simulate_logged_bandit(MEANS, 40, rng=seed)
    rnm = ReportNoisyMaxMAB(4, epsilon=0.3, min_count=10).fit(data)
    expected = rnm.probabilities()
    n = 20_000
    counts = np.bincount(rnm.sample(rng=seed, size=n, insecure_seeded_noise=True), minlength=4)
    stat = float(np.sum((counts - n * expected) ** 2 / (n * expected)))
    assert stat < chi2.ppf(1 - 1e-6, df=3)
