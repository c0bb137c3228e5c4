"""Unit tests of the multi-armed environments: parameters, exact moments, validation."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import integrate, stats

from dpbandits._core.errors import InvalidParameterError
from dpbandits.envs.mab import BernoulliBandit, BetaBandit, ClippedGaussianBandit, UniformBandit


def test_bernoulli_quantities() -> None:
    env = BernoulliBandit([0.2, 0.7, 0.7, 0.1])
    assert env.n_arms == 4
    assert env.best_arm == 1
    np.testing.assert_array_equal(env.best_arms, [1, 2])
    np.testing.assert_allclose(env.gaps, [0.5, 0.0, 0.0, 0.6])
    np.testing.assert_allclose(env.variances, [0.16, 0.21, 0.21, 0.09])
    assert env.reward_bounds == (0.0, 1.0)
    described = env.describe()
    assert described["unique_best_arm"] is False
    assert json.loads(json.dumps(described)) == described


def test_means_are_read_only() -> None:
    env = UniformBandit([0.1, 0.2])
    with pytest.raises(ValueError, match="read-only"):
        env.means[0] = 0.9


def test_uniform_bounds_default_and_declared() -> None:
    assert UniformBandit([0.2, 0.3]).reward_bounds == (0.0, 0.6)
    assert UniformBandit([0.0, 0.0]).reward_bounds == (0.0, 1.0)
    env = UniformBandit([0.2, 0.3], reward_bounds=(0.0, 1.0))
    assert env.reward_bounds == (0.0, 1.0)
    assert env.describe()["params"] == {"means": [0.2, 0.3], "reward_bounds": [0.0, 1.0]}
    np.testing.assert_allclose(env.variances, [0.04 / 3, 0.09 / 3])
    with pytest.raises(InvalidParameterError, match="must contain every support"):
        UniformBandit([0.2, 0.6], reward_bounds=(0.0, 1.0))


def test_beta_means_variances_and_from_means() -> None:
    env = BetaBandit([2.0, 1.0], [3.0, 1.0])
    np.testing.assert_allclose(env.means, [0.4, 0.5])
    np.testing.assert_allclose(env.variances, [stats.beta(2, 3).var(), stats.beta(1, 1).var()])
    by_mean = BetaBandit.from_means([0.25, 0.5], 8.0)
    np.testing.assert_allclose(by_mean.alphas, [2.0, 4.0])
    np.testing.assert_allclose(by_mean.betas, [6.0, 4.0])


def _clipped_moments_by_quadrature(
    location: float, sigma: float, low: float, high: float
) -> tuple[float, float]:
    dist = stats.norm(location, sigma)
    inner1 = integrate.quad(lambda x: x * dist.pdf(x), low, high, epsabs=1e-13)[0]
    inner2 = integrate.quad(lambda x: x * x * dist.pdf(x), low, high, epsabs=1e-13)[0]
    mean = low * dist.cdf(low) + high * dist.sf(high) + inner1
    second = low**2 * dist.cdf(low) + high**2 * dist.sf(high) + inner2
    return mean, second - mean**2


@pytest.mark.parametrize(
    ("location", "sigma", "low", "high"),
    [(0.3, 0.2, 0.0, 1.0), (-0.5, 1.0, -1.0, 2.0), (1.4, 0.3, 0.0, 1.0), (0.5, 5.0, 0.0, 1.0)],
)
def test_clipped_gaussian_exact_moments(location: float, sigma: float, low: float, high: float) -> None:
    env = ClippedGaussianBandit([location], sigma, (low, high))
    mean, variance = _clipped_moments_by_quadrature(location, sigma, low, high)
    assert env.means[0] == pytest.approx(mean, abs=1e-10)
    assert env.variances[0] == pytest.approx(variance, abs=1e-10)


def test_clipped_gaussian_from_clipped_means_round_trip() -> None:
    targets = np.array([0.05, 0.5, 0.93])
    env = ClippedGaussianBandit.from_clipped_means(targets, [0.1, 0.4, 2.0], (0.0, 1.0))
    np.testing.assert_allclose(env.means, targets, atol=1e-12)
    rebuilt = ClippedGaussianBandit(**env.describe()["params"])
    np.testing.assert_allclose(rebuilt.means, targets, atol=1e-12)


@pytest.mark.parametrize(
    ("build", "match"),
    [
        (lambda: BernoulliBandit([]), r"means must not be empty"),
        (
            lambda: BernoulliBandit([0.5, 1.2]),
            r"means must lie in the reward bounds \[0.0, 1.0\]; got 1.2 at index 1",
        ),
        (lambda: BernoulliBandit([0.5, float("nan")]), "means must be finite"),
        (lambda: BernoulliBandit([[0.5]]), r"means must have ndim in \[1\]"),
        (
            lambda: UniformBandit([0.3, -0.1]),
            r"means must be >= 0 for Uniform\[0, 2μ\] arms; got -0.1 at index 1",
        ),
        (lambda: UniformBandit([0.3], reward_bounds=(0.0, float("inf"))), "must be a finite float"),
        (lambda: BetaBandit([1.0, 0.0], [1.0, 1.0]), "alphas must be > 0 entrywise; got 0.0 at index 1"),
        (lambda: BetaBandit([1.0], [1.0, 2.0]), "alphas and betas must have the same shape"),
        (lambda: BetaBandit.from_means([0.0, 0.5], 2.0), r"means must lie in \(0, 1\) for Beta arms"),
        (lambda: BetaBandit.from_means([0.2, 0.5], -2.0), "concentration must be > 0"),
        (lambda: ClippedGaussianBandit([0.5], 0.0, (0.0, 1.0)), "sigma must be > 0"),
        (
            lambda: ClippedGaussianBandit([0.5], [0.1, 0.2], (0.0, 1.0)),
            r"sigma must be a float or have shape \(1,\)",
        ),
        (lambda: ClippedGaussianBandit([0.5], 0.1, (1.0, 0.0)), "bounds must satisfy low < high"),
        (
            lambda: ClippedGaussianBandit.from_clipped_means([1.0], 0.1, (0.0, 1.0)),
            r"means must lie strictly inside bounds \(0.0, 1.0\); got 1.0",
        ),
    ],
)
def test_bad_parameters_raise_typed_errors(build: object, match: str) -> None:
    with pytest.raises(InvalidParameterError, match=match):
        build()  # type: ignore[operator]


def test_bernoulli_sums_are_binomial_and_degenerate_arms_exact(seed: int) -> None:
    env = BernoulliBandit([0.0, 1.0, 0.5])
    sums = env.sample_sums(np.array([[5, 7, 0], [0, 3, 9]]), seed)
    np.testing.assert_array_equal(sums[:, :2], [[0.0, 7.0], [0.0, 3.0]])
    assert sums[0, 2] == 0.0
    assert 0.0 <= sums[1, 2] <= 9.0 and float(sums[1, 2]).is_integer()


def test_sample_sums_reproducible_and_seed_sensitive(seed: int) -> None:
    env = UniformBandit([0.4, 0.2])
    counts = np.full((6, 2), 4)
    np.testing.assert_array_equal(env.sample_sums(counts, seed), env.sample_sums(counts, seed))
    assert not np.array_equal(env.sample_sums(counts, seed), env.sample_sums(counts, seed + 1))
