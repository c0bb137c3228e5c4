"""The error-rate shape fit recovers the shape that generated the data."""

from __future__ import annotations

import numpy as np
import pytest

from dpbandits._core.errors import InvalidParameterError
from dpbandits.algorithms.kernel.rates import fit_error_rate, privacy_term, statistical_term


def grid():
    t = np.repeat([500.0, 1000, 2000, 4000, 8000, 16000], 5)
    eps = np.tile([0.5, 1.0, 2.0, 5.0, np.inf], 6)
    gamma = 10 * np.log(t) ** 1.5
    return t, eps, gamma


def test_fit_recovers_the_usca_shape_and_prefers_it(rng):
    t, eps, gamma = grid()
    error = 0.3 * statistical_term(t, gamma) + 2.0 * privacy_term(t, eps, gamma)
    noisy = error * (1 + 0.01 * rng.standard_normal(error.size))
    fit = fit_error_rate(t, eps, gamma, noisy)
    assert fit.statistical == pytest.approx(0.3, rel=0.05) and fit.privacy == pytest.approx(2.0, rel=0.05)
    assert fit.r_squared > 0.99 and fit.r_squared > fit.prior_r_squared


def test_fit_prefers_the_prior_art_shape_when_it_generated_the_data():
    t, eps, gamma = grid()
    error = 0.3 * statistical_term(t, gamma) + 0.5 * np.where(np.isinf(eps), 0, np.sqrt(gamma / (t * eps)))
    fit = fit_error_rate(t, eps, gamma, error)
    assert fit.prior_r_squared > 0.999 and fit.prior_r_squared > fit.r_squared


def test_inputs_are_validated():
    with pytest.raises(InvalidParameterError, match="same length"):
        fit_error_rate([1.0, 2.0], [1.0], [1.0, 1.0], [0.1, 0.2])


def test_two_coefficient_nnls_matches_scipy(rng):
    from scipy.optimize import nnls

    from dpbandits.algorithms.kernel.rates import _relative_nnls

    for _ in range(200):
        n = int(rng.integers(3, 12))
        design = np.abs(rng.standard_normal((n, 2))) * rng.random(2) * 10
        design[rng.random(n) < 0.3, 1] = 0.0  # ε = ∞ rows have no privacy term
        target, scale = rng.standard_normal(n) + 3 * rng.random(), rng.random(n) + 0.1
        (ours,), _ = _relative_nnls(design, target, scale)
        reference, _ = nnls(design / scale[:, None], target / scale)
        np.testing.assert_allclose(ours, reference, atol=1e-10)
