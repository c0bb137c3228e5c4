"""Empirical behaviour of the mechanisms matches their exact distributions (declared error rates)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from dpbandits.privacy.mechanisms import (
    ExponentialMechanism,
    GaussianMechanism,
    GibbsMechanism,
    GridExponentialMechanism,
    LaplaceMechanism,
    ReportNoisyMaxMechanism,
    uniform_grid,
)

pytestmark = pytest.mark.statistical

ALPHA = 1e-5


def test_laplace_release_noise_has_the_calibrated_scale(seed: int) -> None:
    # KS of (release − value) against Laplace(Δ/ε); false-failure rate 1e-5
    mech = LaplaceMechanism(sensitivity=2.0, epsilon=0.5)
    values = np.linspace(-3, 3, 20_000)
    noise = mech.release(values, rng=seed, insecure_seeded_noise=True) - values
    assert stats.kstest(noise, stats.laplace(scale=4.0).cdf).pvalue > ALPHA


def test_gaussian_release_noise_has_the_calibrated_sigma(seed: int) -> None:
    # false-failure rate 1e-5
    mech = GaussianMechanism(1.0, 1.0, 1e-5)
    noise = mech.release(np.zeros(20_000), rng=seed, insecure_seeded_noise=True)
    assert stats.kstest(noise, stats.norm(scale=mech.sigma).cdf).pvalue > ALPHA


def test_exponential_sample_frequencies_match_probabilities(seed: int) -> None:
    # chi-square; false-failure rate 1e-5
    mech = ExponentialMechanism(sensitivity=1.0, epsilon=1.5)
    u = np.array([0.0, 0.5, 1.0, 2.0, 2.5])
    draws = mech.sample(u, rng=seed, size=50_000, insecure_seeded_noise=True)
    counts = np.bincount(draws, minlength=u.size)
    assert stats.chisquare(counts, 50_000 * mech.probabilities(u)).pvalue > ALPHA


def test_gibbs_batch_rows_are_independent_distributions(seed: int) -> None:
    # each row of a batch is sampled from its own distribution; false-failure rate 2e-5 (two rows)
    mech = GibbsMechanism(np.log([0.5, 0.3, 0.2]), temperature=0.5, sensitivity=0.1)
    u = np.array([[0.0, 0.0, 0.0], [0.0, 0.5, 1.0]])
    draws = mech.sample(u, rng=seed, size=30_000, insecure_seeded_noise=True)
    p = mech.probabilities(u)
    for row in range(2):
        counts = np.bincount(draws[:, row], minlength=3)
        assert stats.chisquare(counts, 30_000 * p[row]).pvalue > ALPHA


def test_grid_mechanism_frequencies(seed: int) -> None:
    # false-failure rate 1e-5
    mech = GridExponentialMechanism(uniform_grid(0.0, 1.0, 6), sensitivity=0.2, epsilon=1.0)
    u = -((mech.grid[:, 0] - 0.6) ** 2)
    idx = mech.sample_index(u, rng=seed, size=30_000, insecure_seeded_noise=True)
    counts = np.bincount(idx, minlength=6)
    assert stats.chisquare(counts, 30_000 * mech.probabilities(u)).pvalue > ALPHA


def test_report_noisy_max_frequencies_match_integrated_probabilities(seed: int) -> None:
    # false-failure rate 1e-5 (probabilities are computed by quadrature to about 1e-10)
    mech = ReportNoisyMaxMechanism(sensitivity=1.0, epsilon=1.0)
    u = np.array([0.0, 0.4, 0.8, 1.5])
    draws = mech.release(np.tile(u, (40_000, 1)), rng=seed, insecure_seeded_noise=True)
    counts = np.bincount(draws, minlength=4)
    assert stats.chisquare(counts, 40_000 * mech.probabilities(u)).pvalue > ALPHA


def test_exponential_secure_backend_matches_probabilities() -> None:
    # OpenDP's Gumbel noisy-max samples the same distribution; false-failure rate 1e-5 (unseeded)
    mech = ExponentialMechanism(sensitivity=1.0, epsilon=2.0)
    u = np.array([0.0, 0.5, 1.0])
    draws = mech.sample(u, size=3_000, backend="opendp")
    counts = np.bincount(draws, minlength=3)
    assert stats.chisquare(counts, 3_000 * mech.probabilities(u)).pvalue > ALPHA
