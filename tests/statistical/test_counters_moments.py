"""Statistical tests of the binary-tree counters: error moments and coverage."""

from __future__ import annotations

import numpy as np
import pytest

from dpbandits.privacy.counters import (
    binary_tree_error_bound,
    binary_tree_node_scale,
    binary_tree_prefix_sums,
)

pytestmark = pytest.mark.statistical

HORIZON = 16
REPLICATES = 100_000


def _errors(epsilon: float, seed: int) -> np.ndarray:
    values = np.zeros((REPLICATES, HORIZON))
    return binary_tree_prefix_sums(values, epsilon, rng=seed)  # exact sums are 0: this is e_t


def test_error_has_mean_zero_and_variance_two_b_squared_popcount(seed: int) -> None:
    epsilon = 0.8
    errors = _errors(epsilon, seed)
    b = binary_tree_node_scale(HORIZON, epsilon)
    popcount = np.array([bin(t).count("1") for t in range(1, HORIZON + 1)])
    variance = 2 * b**2 * popcount  # Var(e_t) = 2b²·popcount(t)
    # Var of the sample variance ≈ σ⁴(κ − 1)/n with kurtosis κ = 3 + 3/popcount <= 6, so the
    # relative s.e. is <= √(5/1e5) = 0.71%; 3% is >= 4.2 s.e.: false failure <= 2.6e-5 per time,
    # and the 16 times are positively dependent (shared nodes); union <= 4.2e-4 is loose, the
    # worst single time (popcount 1) dominates, and the fixed seed makes the test deterministic.
    np.testing.assert_allclose(errors.var(axis=0), variance, rtol=0.03)
    # mean: |mean| <= 5 s.e.; false failure 16 × 5.7e-7 < 1e-5
    assert np.all(np.abs(errors.mean(axis=0)) <= 5 * np.sqrt(variance / REPLICATES))


@pytest.mark.parametrize("method", ["css", "union"])
def test_bound_covers_with_probability_at_least_one_minus_beta(method: str, seed: int) -> None:
    epsilon, beta = 1.0, 0.05
    errors = _errors(epsilon, seed)
    bound = binary_tree_error_bound(HORIZON, epsilon, beta, method)
    exceed = (np.abs(errors) > bound).mean(axis=0)
    # the true exceedance rate is <= β; the empirical rate exceeds β + 5·√(β(1−β)/n) with
    # probability < 3e-7 per time (normal approximation), < 5e-6 over the 16 times
    assert np.all(exceed <= beta + 5 * np.sqrt(beta * (1 - beta) / REPLICATES))
