"""Goodness-of-fit of both noise backends (NumPy seeded, OpenDP secure) against the exact distributions.

Every test declares its false-failure rate. The NumPy draws are seeded (deterministic); the OpenDP draws
are unseedable, so those assertions fail with the declared probability on a correct implementation.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from dpbandits.privacy.noise import NoiseBackend, NumpyNoise, OpenDPNoise

pytestmark = pytest.mark.statistical

ALPHA = 1e-5  # significance of each individual test
N_NUMPY = 20_000
N_OPENDP = 3_000  # OpenDP draws are slower


def _backends(seed: int) -> list[tuple[NoiseBackend, int]]:
    return [(NumpyNoise(seed), N_NUMPY), (OpenDPNoise(), N_OPENDP)]


@pytest.mark.parametrize("scale", [0.5, 3.0])
def test_laplace_matches_exact_cdf(seed: int, scale: float) -> None:
    # false-failure rate: ALPHA per backend, 2e-5 per test
    for backend, n in _backends(seed):
        sample = backend.laplace(scale, size=n)
        assert stats.kstest(sample, stats.laplace(scale=scale).cdf).pvalue > ALPHA, backend.name


@pytest.mark.parametrize("scale", [0.5, 3.0])
def test_gaussian_matches_exact_cdf(seed: int, scale: float) -> None:
    # false-failure rate: 2e-5 per test
    for backend, n in _backends(seed):
        sample = backend.gaussian(scale, size=n)
        assert stats.kstest(sample, stats.norm(scale=scale).cdf).pvalue > ALPHA, backend.name


def test_gumbel_matches_exact_cdf(seed: int) -> None:
    # false-failure rate: 2e-5
    for backend, n in _backends(seed):
        sample = backend.gumbel(2.0, size=n)
        assert stats.kstest(sample, stats.gumbel_r(scale=2.0).cdf).pvalue > ALPHA, backend.name


def test_add_noise_is_centred_on_the_value(seed: int) -> None:
    # false-failure rate: 4e-5 (two KS tests per backend)
    value = 7.25
    for backend, n in _backends(seed):
        lap = backend.add_laplace(np.full(n, value), 1.5)
        gau = backend.add_gaussian(np.full(n, value), 1.5)
        assert stats.kstest(lap, stats.laplace(loc=value, scale=1.5).cdf).pvalue > ALPHA, backend.name
        assert stats.kstest(gau, stats.norm(loc=value, scale=1.5).cdf).pvalue > ALPHA, backend.name


def test_backends_two_sample(seed: int) -> None:
    # two-sample KS between the backends; false-failure rate: 3e-5 (three tests)
    numpy_backend, secure = NumpyNoise(seed), OpenDPNoise()
    for draw in ("laplace", "gaussian", "gumbel"):
        a = getattr(numpy_backend, draw)(1.0, size=N_OPENDP)
        b = getattr(secure, draw)(1.0, size=N_OPENDP)
        assert stats.ks_2samp(a, b).pvalue > ALPHA, draw


def test_gumbel_max_frequencies_match_softmax(seed: int) -> None:
    # chi-square goodness of fit of Gumbel-max draws to softmax(z); false-failure rate: 2e-5
    z = np.log(np.array([0.1, 0.2, 0.3, 0.4]))
    for backend, n in _backends(seed):
        draws = backend.gumbel_max(z, size=n)
        counts = np.bincount(draws, minlength=4)
        assert stats.chisquare(counts, n * np.exp(z)).pvalue > ALPHA, backend.name


def test_ks_detects_a_wrong_scale(seed: int) -> None:
    # the test above has power: Laplace noise at 0.8× the scale is rejected (miss rate far below 1e-6
    # at n = 20 000: the KS distance is ≈ 0.05, 7× the critical value)
    sample = NumpyNoise(seed).laplace(0.8, size=N_NUMPY)
    assert stats.kstest(sample, stats.laplace(scale=1.0).cdf).pvalue < ALPHA


@pytest.mark.parametrize("scale", [0.7, 4.0])
def test_discrete_laplace_matches_exact_pmf(seed: int, scale: float) -> None:
    """Chi-square of discrete Laplace draws against P(k) = (1 − q)/(1 + q)·q^|k|, q = e^{−1/b}.

    False-failure rate: ALPHA per backend, 2e-5 per test.
    """
    q = np.exp(-1.0 / scale)
    for backend, n in _backends(seed):
        draws = backend.discrete_laplace(scale, size=n)
        assert draws.dtype == np.int64
        cut = int(np.ceil(3 * scale))  # cells -cut..cut plus the two tails
        k = np.arange(-cut, cut + 1)
        pmf = (1 - q) / (1 + q) * q ** np.abs(k)
        tail = q ** (cut + 1) / (1 + q)  # P(X > cut) = P(X < −cut)
        expected = n * np.concatenate([[tail], pmf, [tail]])
        observed = np.concatenate([[np.sum(draws < -cut)], [np.sum(draws == v) for v in k], [np.sum(draws > cut)]])
        assert stats.chisquare(observed, expected).pvalue > ALPHA, backend.name
