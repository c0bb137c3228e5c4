"""The private feature ridge baseline (B4): what the privacy contract does not check.

The privacy contract (:mod:`dpbandits.audit.cases.kernel`) computes the exact δ(ε) of the release
M̃ = M + N for worst-case rounds on the law of its projection on each pair's mean shift, and catches
σ halved. Here: that discretised audit reproduces the closed-form Gaussian δ(ε) of the shift (its
edges include the points where the log-likelihood ratio crosses ±ε), the realised shift stays below
Δ₂ for random and corner rounds, δ(ε) stays below δ at ε in {0.5, 1, 4}, and the guarantee and the
vanishing-noise limit.
"""

from __future__ import annotations

import numpy as np
import pytest

from dpbandits.algorithms.kernel.baselines import PrivateFeatureRidge
from dpbandits.audit.cases.kernel import RIDGE_BOUND, realised_ridge_shift, ridge_feature_map, ridge_rounds
from dpbandits.audit.contract import privacy_cases, run_privacy_case
from dpbandits.privacy.accounting import gaussian_delta
from dpbandits.privacy.guarantees import ApproxDP, Neighbouring

QFF = ridge_feature_map()


def test_contract_audit_is_the_gaussian_delta_of_the_shift() -> None:
    for case in privacy_cases("private-feature-ridge"):
        sigma = PrivateFeatureRidge(QFF, epsilon=1.0, delta=1e-6, reward_bound=RIDGE_BOUND).sigma
        sigma = sigma / 2 if case.broken else sigma
        report = run_privacy_case(case)
        for pair, audited in zip(case.pairs, report.pairs, strict=True):
            first, second = (pair.data.point, pair.data.reward), (pair.neighbour.point, pair.neighbour.reward)
            model = PrivateFeatureRidge(QFF, epsilon=1.0, delta=1e-6, reward_bound=RIDGE_BOUND)
            exact = gaussian_delta(sigma, realised_ridge_shift(model, first, second), 1.0)
            assert audited.exact_delta == pytest.approx(exact, rel=1e-6, abs=1e-300)


def test_exact_delta_of_every_pair_is_below_the_claim(rng: np.random.Generator) -> None:
    for epsilon in (0.5, 1.0, 4.0):
        model = PrivateFeatureRidge(QFF, epsilon=epsilon, delta=1e-6, reward_bound=RIDGE_BOUND)
        shifts = [realised_ridge_shift(model, a, b) for _, a, b in ridge_rounds(model, rng, 100)]
        assert max(shifts) <= model.l2_sensitivity
        worst = max(gaussian_delta(model.sigma, s, epsilon) for s in shifts)
        assert worst <= 1e-6 * (1 + 1e-9)


def test_guarantee_and_vanishing_noise_limit(rng: np.random.Generator) -> None:
    model = PrivateFeatureRidge(QFF, epsilon=1.0, delta=1e-6, reward_bound=RIDGE_BOUND)
    g = model.privacy
    assert isinstance(g, ApproxDP) and (g.epsilon, g.delta) == (1.0, 1e-6)
    assert g.neighbouring is Neighbouring.JOINT and g.unit == "one round's context and reward"
    # with ε huge the noise and the shift vanish and θ̃ tends to the ridge solution
    points, rewards = rng.random((300, 2)), rng.uniform(-1, 1, 300)
    loose = PrivateFeatureRidge(QFF, epsilon=1e12, delta=0.5, reward_bound=RIDGE_BOUND)
    phi = QFF.transform(points)
    ridge = np.linalg.solve(phi.T @ phi + np.eye(QFF.dim), phi.T @ rewards)
    np.testing.assert_allclose(loose.release(points, rewards, rng, insecure_seeded_noise=True), ridge, atol=1e-3)
    np.testing.assert_allclose(loose.release(points, rewards), ridge, atol=1e-3)  # the secure default
