"""USCA's surrogate μ̄_T, σ̄² (eqs. 4–5) and the certified supremum: spec E0 (a)–(c), (e), (f), (j)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import optimize

from dpbandits.algorithms.kernel.features import FeatureKernel, quadrature_fourier_features
from dpbandits.algorithms.kernel.information_gain import formula_information_gain
from dpbandits.algorithms.kernel.sup_bound import certified_sup, trivial_sup
from dpbandits.algorithms.kernel.surrogate import (
    ApproximatingSet,
    ExactKernelSurrogate,
    FeatureSurrogate,
    accumulate_feature_gram,
)
from dpbandits.envs.kernel import KernelBanditEnvironment, StationaryKernel

SE = StationaryKernel("se", 0.2)


def uniform_contexts(size, gen):
    return gen.random((size, 1))


def test_kernel_form_equals_feature_form_for_a_finite_rank_kernel(seed, rng):
    """E0 (a): eqs. 4–5 with k_D(w, w') = φ(w)ᵀφ(w') equal the feature form to 1e-10."""
    qff = quadrature_fourier_features(SE, 2, nodes_per_axis=8)
    horizon, size = 40, 600
    approx = ApproximatingSet(size, 1, uniform_contexts, seed, block_size=256)
    exact = ExactKernelSurrogate(FeatureKernel(qff), approx.points(), horizon, tau=0.7)
    feature = FeatureSurrogate(qff, accumulate_feature_gram(qff, approx), size, horizon, tau=0.7)
    data, y = rng.random((horizon, 2)), rng.uniform(-1, 1, horizon)
    query = rng.random((300, 2))
    np.testing.assert_allclose(exact.variance(query), feature.variance(query), atol=1e-10)
    theta = feature.coefficients(feature.reward_vector(data, y))
    np.testing.assert_allclose(exact.fit(data, y)(query), feature.mean(theta, query), atol=1e-10)


def test_reduction_to_the_gp_posterior(rng):
    """E0 (b): 𝒵 = W_T and K = 1 give the GP posterior mean (eq. 2) and σ_T²/τ (eq. 3)."""
    tau, data, y = 0.5, rng.random((60, 2)), rng.uniform(-1, 1, 60)
    surrogate = ExactKernelSurrogate(SE, data, horizon=60, tau=tau)
    query = rng.random((200, 2))
    k_qw, k_ww = SE(query, data), SE(data)
    inv = np.linalg.inv(k_ww + tau * np.eye(60))
    np.testing.assert_allclose(surrogate.fit(data, y)(query), k_qw @ inv @ y, atol=1e-10)
    posterior_var = 1.0 - np.einsum("ij,jk,ik->i", k_qw, inv, k_qw)
    np.testing.assert_allclose(surrogate.variance(query), posterior_var / tau, atol=1e-10)


def test_variance_is_positive_and_below_the_trivial_bound(seed, rng):
    """E0 (c): 0 < σ̄² <= k(w, w)/τ."""
    approx = ApproximatingSet(500, 1, uniform_contexts, seed)
    for tau in (0.1, 1.0, 10.0):
        surrogate = ExactKernelSurrogate(SE, approx.points(), horizon=50, tau=tau)
        values = surrogate.variance(rng.random((2000, 2)))
        assert np.all(values > 0) and np.all(values <= 1.0 / tau * (1 + 1e-12))


def test_streaming_accumulation_is_invariant_to_chunk_size(seed):
    """E0 (f): the approximating set and its Gram sum do not depend on the chunking."""
    qff = quadrature_fourier_features(SE, 2, nodes_per_axis=10)
    approx = ApproximatingSet(5000, 1, uniform_contexts, seed, block_size=1024)
    g1 = accumulate_feature_gram(qff, approx, chunk_size=1024)
    g2 = accumulate_feature_gram(qff, approx, chunk_size=77)
    np.testing.assert_allclose(g1, g2, rtol=1e-11, atol=1e-9)
    g32 = accumulate_feature_gram(qff, approx, chunk_size=1024, precision="float32")
    np.testing.assert_allclose(g32, g1, rtol=1e-4, atol=1e-3)
    assert approx.points().shape == (5000, 2)
    np.testing.assert_array_equal(approx.points(), approx.points())


def test_approximating_set_follows_the_generator_law(seed):
    env = KernelBanditEnvironment(context_law="uniform-half")
    points = ApproximatingSet(3000, 1, env.sample_contexts, seed).points()
    assert points[:, 1].max() <= 0.5 and points[:, 0].max() > 0.9  # actions uniform, contexts κ


@pytest.mark.slow
def test_certified_sup_dominates_dense_search_and_local_optimisation(seed, rng):
    """E0 (j), reduced: Ŝ >= max σ̄² over 10⁵ random points and over 10 L-BFGS-B runs."""
    tau = 0.3
    qff = quadrature_fourier_features(SE, 2, nodes_per_axis=16)
    approx = ApproximatingSet(4000, 1, uniform_contexts, seed)
    surrogate = FeatureSurrogate(qff, accumulate_feature_gram(qff, approx), 4000, 200, tau)
    bound = certified_sup(surrogate.variance, surrogate.distance_bound, dim=2, tau=surrogate.min_eigenvalue,
                          max_diag=surrogate.max_diag, rtol=1e-2)
    assert bound.converged and bound.lower <= bound.upper <= bound.lower * 1.0101
    dense = surrogate.variance(rng.random((100_000, 2))).max()
    best = 0.0
    for start in rng.random((10, 2)):
        res = optimize.minimize(lambda w: -surrogate.variance(w[None, :])[0], start, bounds=[(0, 1)] * 2,
                                method="L-BFGS-B")
        best = max(best, -res.fun)
    corners = surrogate.variance(np.array([[0, 0], [0, 1], [1, 0], [1, 1]], dtype=float)).max()
    assert bound.upper >= max(dense, best, corners)
    assert trivial_sup(surrogate.max_diag, tau).upper >= bound.upper


def test_sup_bound_stays_valid_when_the_budget_runs_out(seed, rng):
    qff = quadrature_fourier_features(SE, 2, nodes_per_axis=16)
    approx = ApproximatingSet(4000, 1, uniform_contexts, seed)
    surrogate = FeatureSurrogate(qff, accumulate_feature_gram(qff, approx), 4000, 200, 1.0)
    tight = certified_sup(surrogate.variance, surrogate.distance_bound, dim=2, tau=1.0, max_diag=1.0)
    loose = certified_sup(surrogate.variance, surrogate.distance_bound, dim=2, tau=1.0, max_diag=1.0,
                          cells_per_axis=4, max_evaluations=20)
    assert not loose.converged and loose.upper >= tight.lower


def test_formula_information_gain_orders():
    assert formula_information_gain(SE, 1000, 2) == pytest.approx(np.log(1000) ** 3)
    matern = StationaryKernel("matern", 0.2, 1.5)
    assert formula_information_gain(matern, 10, 2) <= 10


def test_greedy_information_gain(seed):
    from dpbandits.algorithms.kernel.information_gain import (
        greedy_information_gain,
        random_information_gain,
        resolve_gamma,
    )

    qff = quadrature_fourier_features(SE, 2, nodes_per_axis=10)
    one = greedy_information_gain(1, 0.5, 1, uniform_contexts, seed, qff, n_candidates=64)
    assert one == pytest.approx(0.5 * np.log1p(qff.max_diag / 0.5), rel=1e-9)  # first pick: σ₀² = k_D(w, w)
    greedy = greedy_information_gain(100, 1.0, 1, uniform_contexts, seed, qff, n_candidates=512)
    random = random_information_gain(100, 1.0, 1, uniform_contexts, seed, feature_map=qff)
    # greedy maximises the gain step by step; on this kernel it beats a random design by > 5 %
    assert greedy > 1.05 * random
    exact = resolve_gamma("greedy", horizon=50, tau=1.0, action_dim=1, dim=2, kernel=SE,
                          context_generator=uniform_contexts, rng=seed)
    assert 1.0 < exact < 50.0


class _CountingFeatures:
    """A feature map that counts its transforms (to see whether the Gram cache recomputed)."""

    def __init__(self, inner, tag: str = "") -> None:
        self.inner, self.calls, self.tag = inner, 0, tag
        self.dim, self.max_diag = inner.dim, inner.max_diag

    def transform(self, points, dtype=np.float64):
        self.calls += 1
        return self.inner.transform(points, dtype=dtype)

    def distance_bound(self, radius):
        return self.inner.distance_bound(radius)

    def fingerprint(self) -> str:
        return self.inner.fingerprint() + self.tag


def test_gram_cache_is_keyed_by_content(seed):
    from dpbandits.algorithms.kernel.surrogate import clear_gram_cache

    clear_gram_cache()
    features = _CountingFeatures(quadrature_fourier_features(SE, 2, nodes_per_axis=6))
    first = accumulate_feature_gram(features, ApproximatingSet(3000, 1, uniform_contexts, seed), chunk_size=500)
    calls = features.calls
    # a new set object with the same coins and generator: the same points, so a hit (no transform)
    again = accumulate_feature_gram(features, ApproximatingSet(3000, 1, uniform_contexts, seed), chunk_size=500)
    assert features.calls == calls
    np.testing.assert_array_equal(first, again)
    again[0, 0] += 1.0  # a hit hands out a copy: the cached value is unchanged
    np.testing.assert_array_equal(accumulate_feature_gram(features, ApproximatingSet(3000, 1, uniform_contexts, seed),
                                                          chunk_size=500), first)
    # the same coins through another generator are other points: a miss, and another Gram sum
    other = accumulate_feature_gram(features, ApproximatingSet(3000, 1, lambda n, gen: 0.5 * gen.random((n, 1)), seed),
                                    chunk_size=500)
    assert features.calls > calls and not np.allclose(other, first)
    # another feature map (fingerprint), precision or chunking: a miss
    for kwargs, fmap in [({}, _CountingFeatures(features.inner, tag="x")), ({"precision": "float32"}, features),
                         ({"chunk_size": 400}, features)]:
        before = fmap.calls
        accumulate_feature_gram(fmap, ApproximatingSet(3000, 1, uniform_contexts, seed),
                                **{"chunk_size": 500, **kwargs})
        assert fmap.calls > before
    before = features.calls
    uncached = accumulate_feature_gram(features, ApproximatingSet(3000, 1, uniform_contexts, seed), chunk_size=500,
                                       cache=False)
    assert features.calls > before
    np.testing.assert_allclose(uncached, first, rtol=1e-12)
    clear_gram_cache()


def test_usca_at_several_epsilons_builds_the_gram_sum_once(seed, monkeypatch):
    from dpbandits.algorithms.kernel import features, surrogate
    from dpbandits.algorithms.kernel.usca import USCA

    surrogate.clear_gram_cache()
    env = KernelBanditEnvironment(function_seed=1)
    accumulations = []  # float32 transforms: only the Gram accumulation (precision="float32") makes them
    original = features.TrigonometricFeatures.transform

    def spy(self, points, dtype=np.float64):
        if dtype == np.float32:
            accumulations.append(len(points))
        return original(self, points, dtype)

    monkeypatch.setattr(features.TrigonometricFeatures, "transform", spy)
    agents, built = [], []
    for eps in (0.5, 2.0):
        before = len(accumulations)
        agents.append(USCA(horizon=200, epsilon=eps, reward_bound=1.5, kernel=env.kernel,
                           context_generator=env.sample_contexts, n_features=8, rng=seed))
        built.append(len(accumulations) > before)
    assert built == [True, False]
    np.testing.assert_array_equal(agents[0].surrogate._chol, agents[1].surrogate._chol)
    assert agents[0].sensitivity == agents[1].sensitivity
    surrogate.clear_gram_cache()
