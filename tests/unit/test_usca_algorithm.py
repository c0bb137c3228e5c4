"""USCA end to end: validation, the learning protocol, predictions, the guarantee, backend agreement."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpbandits._core.errors import InvalidParameterError, NotFittedError
from dpbandits.algorithms.kernel.usca import USCA
from dpbandits.algorithms.registry import get_algorithm
from dpbandits.envs.kernel import KernelBanditEnvironment
from dpbandits.privacy.guarantees import Neighbouring, PureDP

ENV = KernelBanditEnvironment(function_seed=11)


def make(seed, **kwargs):
    params = {"horizon": 60, "epsilon": 1.0, "reward_bound": 1.5, "kernel": ENV.kernel,
              "context_generator": ENV.sample_contexts, "grid_points_per_dim": 128, "rng": seed,
              "n_features": 10, "sup_rtol": 0.05}
    params.update(kwargs)
    return USCA(**params)


def fitted(seed, **kwargs):
    agent = make(seed, **kwargs)
    contexts = ENV.sample_contexts(agent.horizon, rng=seed + 1)
    agent.observe(contexts, np.clip(ENV.sample_rewards(agent.learning_actions, contexts, rng=seed + 2), -1.5, 1.5))
    return agent, contexts


def test_guarantee_is_pure_joint_dp_for_one_round(seed):
    agent = make(seed)
    g = agent.privacy
    assert isinstance(g, PureDP) and g.epsilon == 1.0 and g.delta == 0.0
    assert g.neighbouring is Neighbouring.JOINT and g.unit == "one round's context and reward"
    assert "Theorem 4.1" in g.reference
    assert not make(seed, epsilon=math.inf, sup_method="trivial").privacy.is_finite


def test_out_of_range_data_is_an_error_unless_clipping_was_asked(seed):
    """E0 (i): rewards are clipped and contexts projected only on request."""
    agent = make(seed)
    with pytest.raises(InvalidParameterError, match=r"rewards must lie in \[-1.5, 1.5\]"):
        agent.observe(np.full((2, 1), 0.5), [0.0, 2.0])
    with pytest.raises(InvalidParameterError, match=r"contexts must lie in \[0.0, 1.0\]"):
        agent.observe([[0.5], [1.2]], [0.0, 0.1])
    clipped = make(seed, clip=True)
    reference = make(seed)
    contexts = ENV.sample_contexts(60, rng=seed)
    rewards = np.linspace(-1.4, 1.4, 60)
    raw_c, raw_y = contexts.copy(), rewards.copy()
    raw_c[0], raw_y[0], raw_y[1] = 1.7, 9.0, -9.0
    clipped.observe(raw_c, raw_y)
    fixed_c, fixed_y = raw_c.copy(), raw_y.copy()
    fixed_c[0], fixed_y[0], fixed_y[1] = 1.0, 1.5, -1.5
    reference.observe(fixed_c, fixed_y)
    np.testing.assert_array_equal(clipped.mechanism_log_probabilities([0.3]),
                                  reference.mechanism_log_probabilities([0.3]))


def test_ask_tell_equals_batch_observe(seed):
    batch, contexts = fitted(seed)
    online = make(seed)
    rewards = np.clip(ENV.sample_rewards(batch.learning_actions, contexts, rng=seed + 2), -1.5, 1.5)
    for t in range(online.horizon):
        np.testing.assert_array_equal(online.ask(), batch.learning_actions[t])
        online.tell(contexts[t], rewards[t])
    np.testing.assert_allclose(online.mechanism_log_probabilities([0.4]),
                               batch.mechanism_log_probabilities([0.4]), atol=1e-12)
    with pytest.raises(InvalidParameterError, match="already observed"):
        online.ask()


def test_prediction_needs_all_rounds_and_composes(seed):
    agent = make(seed)
    with pytest.raises(NotFittedError, match="after all horizon=60"):
        agent.recommend([0.5], rng=seed, insecure_seeded_noise=True)
    agent, _ = fitted(seed)
    draws = agent.recommend([0.5], rng=seed, size=3, insecure_seeded_noise=True)
    assert draws.shape == (3, 1) and agent.recommend([0.5], rng=seed, insecure_seeded_noise=True).shape == (1,)
    assert agent.privacy_spent.epsilon == pytest.approx(4.0)


def test_infinite_epsilon_concentrates_on_the_argmax(seed):
    """E0 (h): as ε → ∞ the mechanism concentrates on argmax μ̄_T."""
    agent, _ = fitted(seed, epsilon=1.0)
    grid_points = np.concatenate([agent.grid, np.full((agent.grid.shape[0], 1), 0.4)], axis=1)
    best = int(np.argmax(agent._surrogate_mean(grid_points)))
    masses = []
    for eps in (1.0, 100.0, 10_000.0):
        agent.epsilon = eps
        masses.append(float(np.exp(agent.mechanism_log_probabilities([0.4])[0, best])))
    assert masses[0] < masses[1] < masses[2] and masses[2] > 0.5
    agent.epsilon = math.inf
    p = np.exp(agent.mechanism_log_probabilities([0.4])[0])
    assert p[best] > 0 and np.isclose(p.sum(), 1.0)


def test_exact_and_feature_backends_agree(seed, rng):
    """Same coins, γ̂ fixed: exact SE kernel vs QFF features agree to the QFF accuracy."""
    exact, _ = fitted(seed, backend="kernel", gamma=15.0, n_features=None, sup_rtol=1e-2)
    features, _ = fitted(seed, backend="features", gamma=15.0, n_features=None, sup_rtol=1e-2)
    assert exact.approx_size == features.approx_size == 60 * 4
    query = rng.random((500, 2))
    np.testing.assert_allclose(exact.surrogate.variance(query), features.surrogate.variance(query), atol=2e-3)
    np.testing.assert_allclose(exact._surrogate_mean(query), features._surrogate_mean(query), atol=5e-3)
    assert features.sup.upper == pytest.approx(exact.sup.upper, rel=2e-2)
    np.testing.assert_allclose(np.exp(exact.mechanism_log_probabilities([0.2])),
                               np.exp(features.mechanism_log_probabilities([0.2])), atol=1e-4)


def test_public_precomputation_does_not_depend_on_the_data(seed):
    """E0 (e): neighbours with the same seeds get bit-identical K, M, 𝒵-derived Ŝ, Δ and grid."""
    a, b = make(seed), make(seed)
    for agent, y0 in ((a, 1.5), (b, -1.5)):
        contexts = ENV.sample_contexts(60, rng=seed + 5)
        rewards = np.zeros(60)
        rewards[0] = y0
        agent.observe(contexts, rewards)
    assert (a.gamma, a.approx_size, a.sup.upper, a.sensitivity) == (b.gamma, b.approx_size, b.sup.upper, b.sensitivity)
    np.testing.assert_array_equal(a.grid, b.grid)
    np.testing.assert_array_equal(a.learning_actions, b.learning_actions)


def test_deviations_and_limits_are_explicit(seed):
    agent = make(seed, approx_size=500)
    assert agent.approx_size == 500 and "approx_size M=500" in agent.deviations[0]
    with pytest.raises(InvalidParameterError, match="max_exact_size"):
        make(seed, backend="kernel", max_exact_size=100)
    with pytest.raises(InvalidParameterError, match="epsilon must be a float > 0"):
        make(seed, epsilon=-1.0)
    trivial = make(seed, sup_method="trivial")
    assert trivial.sensitivity == pytest.approx(2 * 1.5 * trivial.surrogate.max_diag)


def test_registered_simulation_runs_and_is_reproducible(seed):
    spec = get_algorithm("usca")
    assert spec.family == "kernel" and "joint" in spec.privacy
    rng = np.random.SeedSequence(seed)
    out = spec.simulate(ENV, n_trials=2, rng=rng, horizon=40, epsilon=1.0, grid_points_per_dim=64,
                        n_test_contexts=8, n_features=10)
    again = spec.simulate(ENV, n_trials=2, rng=np.random.SeedSequence(seed), horizon=40, epsilon=1.0,
                          grid_points_per_dim=64, n_test_contexts=8, n_features=10)
    assert set(out) == set(spec.metrics)
    for name in spec.metrics:
        assert out[name].shape == (2,)
        np.testing.assert_array_equal(out[name], again[name])
    assert np.all(out["error"] >= 0) and np.all(out["sensitivity"] > 0)
    nonprivate = get_algorithm("usca-nonprivate").simulate(
        ENV, n_trials=2, rng=np.random.SeedSequence(seed), horizon=40, grid_points_per_dim=64, n_test_contexts=8,
        n_features=10)
    assert np.all(nonprivate["error"] <= out["error"] + 0.5)


def test_secure_noise_backend_returns_a_grid_point(seed):
    agent, _ = fitted(seed)
    x = agent.recommend([0.5], backend="opendp")
    assert x.shape == (1,) and np.any(np.isclose(agent.grid[:, 0], x[0]))
