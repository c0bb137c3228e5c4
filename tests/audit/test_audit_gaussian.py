"""Privacy audit of the Gaussian mechanism (analytic and classical calibration), with σ halved caught.

Exact audit: N(f(D), σ²) discretised onto fine intervals (exact log-probabilities from the normal
log-CDF). Discretisation is post-processing, so the audited δ(ε) is a lower bound on the true one
and converges to it; a correct calibration must give δ(ε) <= δ, and the analytic calibration, being
the smallest σ, must come close to δ. With σ halved δ(ε) exceeds the claim by orders of magnitude.
The audited δ(ε) is also checked against the closed form of ``gaussian_delta`` (Balle & Wang 2018).

Statistical audit: ``release`` samples on f(D) = 0 and f(D') = Δ, threshold events from a separate
calibration draw, ε_lb = max log((p_lb − δ)/q_ub).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dpbandits.audit import audit_exact, epsilon_lower_bound, interval_log_probabilities, threshold_events
from dpbandits.privacy.mechanisms import GaussianMechanism, gaussian_delta

pytestmark = pytest.mark.statistical

# (Δ, ε, δ, calibration)
CLAIMS = [
    (1.0, 1.0, 1e-5, "analytic"),
    (0.5, 0.3, 1e-3, "analytic"),
    (2.0, 4.0, 1e-6, "analytic"),
    (1.0, 0.5, 1e-5, "classical"),
]
CONFIDENCE = 1 - 1e-5  # false-failure rate of every "ε_lb <= ε" assertion: <= 1e-5


def _halved(mechanism: GaussianMechanism) -> GaussianMechanism:
    """The broken variant: same claimed (ε, δ), noise σ/2."""
    broken = GaussianMechanism(mechanism.l2_sensitivity, mechanism.epsilon, mechanism.delta,
                               calibration=mechanism.calibration)
    broken.sigma = mechanism.sigma / 2.0
    return broken


def _exact_report(mechanism: GaussianMechanism):  # type: ignore[no-untyped-def]
    sigma, sensitivity = mechanism.sigma, mechanism.l2_sensitivity
    # intervals of width σ/400 across ±12σ around [0, Δ]: the discretisation loses < 1% of δ(ε)
    inner = np.arange(-12 * sigma, sensitivity + 12 * sigma, sigma / 400)
    edges = np.concatenate([[-math.inf], inner, [math.inf]])

    def distribution(true_value: float) -> np.ndarray:
        return interval_log_probabilities(stats.norm(loc=true_value, scale=sigma), edges)

    pairs = [(0.0, sensitivity), (sensitivity, 0.0)]
    return audit_exact(distribution, pairs, epsilon=mechanism.epsilon, delta=mechanism.delta, log=True)


@pytest.mark.parametrize(("sensitivity", "epsilon", "delta", "calibration"), CLAIMS)
def test_exact_audit_passes(sensitivity: float, epsilon: float, delta: float, calibration: str) -> None:
    mechanism = GaussianMechanism(sensitivity, epsilon, delta, calibration=calibration)
    report = _exact_report(mechanism)
    assert report.passed, str(report)
    true_delta = gaussian_delta(mechanism.sigma, sensitivity, epsilon)
    # discretisation never increases δ, and this grid is fine enough to come within 1 %
    assert report.delta_at_epsilon <= true_delta * (1 + 1e-9)
    assert report.delta_at_epsilon >= 0.99 * true_delta
    if calibration == "analytic":
        # the analytic σ is the smallest valid one: the audited δ(ε) is essentially the claimed δ
        assert report.delta_at_epsilon >= 0.98 * delta
    else:
        # the classical σ is conservative (and valid)
        assert report.delta_at_epsilon < delta


@pytest.mark.parametrize(("sensitivity", "epsilon", "delta", "calibration"), CLAIMS)
def test_exact_audit_catches_halved_sigma(
    sensitivity: float, epsilon: float, delta: float, calibration: str
) -> None:
    broken = _halved(GaussianMechanism(sensitivity, epsilon, delta, calibration=calibration))
    report = _exact_report(broken)
    assert not report.passed
    assert report.delta_at_epsilon > 10 * delta
    # and the closed form agrees that the broken σ violates the claim
    assert gaussian_delta(broken.sigma, sensitivity, epsilon) > delta


def _statistical_report(mechanism: GaussianMechanism, rng: np.random.Generator, n_samples: int):  # type: ignore[no-untyped-def]
    sensitivity = mechanism.l2_sensitivity
    calibration = np.concatenate([mechanism.release(np.zeros(4000), rng=rng, insecure_seeded_noise=True),
                                  mechanism.release(np.full(4000, sensitivity), rng=rng, insecure_seeded_noise=True)])
    # thresholds in the upper tail, where the likelihood ratio exceeds e^ε
    events = threshold_events(calibration[calibration > np.quantile(calibration, 0.5)], 12)
    samples_d = mechanism.release(np.zeros(n_samples), rng=rng, insecure_seeded_noise=True)
    samples_d_prime = mechanism.release(np.full(n_samples, sensitivity), rng=rng, insecure_seeded_noise=True)
    return epsilon_lower_bound(samples_d, samples_d_prime, events, delta=mechanism.delta,
                               confidence=CONFIDENCE)


@pytest.mark.parametrize(("sensitivity", "epsilon", "delta", "calibration"), CLAIMS[:2])
def test_statistical_audit_passes(
    sensitivity: float, epsilon: float, delta: float, calibration: str, rng: np.random.Generator
) -> None:
    mechanism = GaussianMechanism(sensitivity, epsilon, delta, calibration=calibration)
    report = _statistical_report(mechanism, rng, 100_000)
    assert report.epsilon_lower_bound <= epsilon, str(report)  # false failure <= 1e-5


def test_statistical_audit_catches_halved_sigma(rng: np.random.Generator) -> None:
    # σ halved at (ε, δ) = (0.3, 1e-3): the true ε at this δ is 0.686; with 2·10⁵ samples the bound
    # is about 0.46 with a spread of ~0.01 across seeds, so it exceeds 0.3 except with probability < 1e-6
    broken = _halved(GaussianMechanism(0.5, 0.3, 1e-3))
    report = _statistical_report(broken, rng, 200_000)
    assert report.refutes(0.3), str(report)
