"""Privacy audit of the one-shot private feature ridge baseline (B4): exact Gaussian δ(ε) per pair.

The release is M̃ = M + N with N Gaussian on the upper triangle; for neighbouring datasets (one
round's context and reward replaced) the output laws are two Gaussians whose means differ by the
upper triangle of aaᵀ − a'a'ᵀ, so the exact δ(ε) of the pair is the Gaussian hockey-stick
divergence at shift ‖Δ‖₂/σ. It must stay <= δ for adversarial pairs; σ halved must be caught.
"""

from __future__ import annotations

import numpy as np

from dpbandits.algorithms.kernel.baselines import PrivateFeatureRidge
from dpbandits.algorithms.kernel.features import quadrature_fourier_features
from dpbandits.envs.kernel import StationaryKernel
from dpbandits.privacy.accounting import gaussian_delta
from dpbandits.privacy.guarantees import ApproxDP, Neighbouring

QFF = quadrature_fourier_features(StationaryKernel("se", 0.2), 2, nodes_per_axis=12)
BOUND = 1.5


def realised_shift(model: PrivateFeatureRidge, first: tuple, second: tuple) -> float:
    """ℓ₂ norm of the upper triangle of aaᵀ − a'a'ᵀ (the mean shift of the released entries)."""
    diff = model.second_moment(*first) - model.second_moment(*second)
    return float(np.linalg.norm(diff[np.triu_indices_from(diff)]))


def adversarial_pairs(rng: np.random.Generator, n_random: int) -> list[tuple[tuple, tuple]]:
    pairs = []
    for _ in range(n_random):
        w, w_prime = rng.random((1, 2)), rng.random((1, 2))
        y, y_prime = rng.choice([-BOUND, BOUND]), rng.uniform(-BOUND, BOUND)
        pairs.append(((w, [y]), (w_prime, [y_prime])))
    corner, opposite = np.zeros((1, 2)), np.ones((1, 2))
    pairs += [((corner, [BOUND]), (opposite, [-BOUND])), ((corner, [BOUND]), (corner, [-BOUND])),
              ((corner, [BOUND]), (opposite, [BOUND])), ((corner, [BOUND]), (opposite, [0.0]))]
    return pairs


def test_exact_delta_of_every_pair_is_below_the_claim(rng):
    for epsilon in (0.5, 1.0, 4.0):
        model = PrivateFeatureRidge(QFF, epsilon=epsilon, delta=1e-6, reward_bound=BOUND)
        shifts = [realised_shift(model, a, b) for a, b in adversarial_pairs(rng, 100)]
        assert max(shifts) <= model.l2_sensitivity
        worst = max(gaussian_delta(model.sigma, s, epsilon) for s in shifts)
        assert worst <= 1e-6 * (1 + 1e-9)


def test_broken_variant_with_halved_noise_is_caught(rng):
    model = PrivateFeatureRidge(QFF, epsilon=1.0, delta=1e-6, reward_bound=BOUND)
    shifts = [realised_shift(model, a, b) for a, b in adversarial_pairs(rng, 50)]
    assert max(gaussian_delta(model.sigma / 2, s, 1.0) for s in shifts) > 1e-6


def test_guarantee_and_vanishing_noise_limit(rng):
    model = PrivateFeatureRidge(QFF, epsilon=1.0, delta=1e-6, reward_bound=BOUND)
    g = model.privacy
    assert isinstance(g, ApproxDP) and (g.epsilon, g.delta) == (1.0, 1e-6)
    assert g.neighbouring is Neighbouring.JOINT and g.unit == "one round's context and reward"
    # with ε huge the noise and the shift vanish and θ̃ tends to the ridge solution
    points, rewards = rng.random((300, 2)), rng.uniform(-1, 1, 300)
    loose = PrivateFeatureRidge(QFF, epsilon=1e12, delta=0.5, reward_bound=BOUND)
    phi = QFF.transform(points)
    ridge = np.linalg.solve(phi.T @ phi + np.eye(QFF.dim), phi.T @ rewards)
    np.testing.assert_allclose(loose.release(points, rewards, rng, insecure_seeded_noise=True), ridge, atol=1e-3)
    np.testing.assert_allclose(loose.release(points, rewards), ridge, atol=1e-3)  # the secure default
