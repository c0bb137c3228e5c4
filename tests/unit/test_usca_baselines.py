"""Non-private baselines of the kernel family and their registration."""

from __future__ import annotations

import numpy as np
import pytest

from dpbandits.algorithms.kernel.baselines import feature_ridge_coefficients
from dpbandits.algorithms.kernel.features import FeatureKernel, quadrature_fourier_features
from dpbandits.algorithms.registry import get_algorithm, list_algorithms
from dpbandits.envs.kernel import KernelBanditEnvironment, StationaryKernel

ENV = KernelBanditEnvironment(function_seed=8)


def test_feature_ridge_is_the_gp_posterior_mean_of_the_feature_kernel(rng):
    qff = quadrature_fourier_features(StationaryKernel("se", 0.2), 2, nodes_per_axis=8)
    data, y, query = rng.random((50, 2)), rng.uniform(-1, 1, 50), rng.random((100, 2))
    kernel = FeatureKernel(qff)
    tau = 0.4
    gp_mean = kernel(query, data) @ np.linalg.solve(kernel(data) + tau * np.eye(50), y)
    theta = feature_ridge_coefficients(qff.transform(data), y, tau)
    np.testing.assert_allclose(qff.transform(query) @ theta, gp_mean, atol=1e-10)


def test_family_is_registered():
    names = {spec.name for spec in list_algorithms() if spec.family == "kernel"}
    assert {"usca", "usca-nonprivate", "usca-trivial-sensitivity", "gp-uniform", "cgp-ucb",
            "private-feature-ridge"} <= names


@pytest.mark.parametrize(
    ("name", "params"),
    [("gp-uniform", {}), ("cgp-ucb", {"ucb_grid_points_per_dim": 32}), ("private-feature-ridge", {"epsilon": 1.0})],
)
def test_baselines_run_reproducibly_and_learn(name, params, seed):
    spec = get_algorithm(name)
    kwargs = {"horizon": 150, "grid_points_per_dim": 64, "n_test_contexts": 16, "n_features": 10, **params}
    out = spec.simulate(ENV, n_trials=2, rng=np.random.SeedSequence(seed), **kwargs)
    again = spec.simulate(ENV, n_trials=2, rng=np.random.SeedSequence(seed), **kwargs)
    assert set(out) == set(spec.metrics)
    for metric in spec.metrics:
        np.testing.assert_array_equal(out[metric], again[metric])
    assert np.all(out["error"] >= 0)
    if name != "private-feature-ridge":
        # non-private learners at T = 150 beat a random guess by far (range of f is about 1)
        assert np.all(out["error"] < 0.1)


def test_private_feature_ridge_refuses_out_of_range_data_unless_clipping_was_asked(rng):
    """Δ₂ = √2·(sup‖φ‖² + B_y²) assumes |y| <= B_y: an unbounded reward must not be used silently."""
    from dpbandits._core.errors import InvalidParameterError
    from dpbandits.algorithms.kernel.baselines import PrivateFeatureRidge

    qff = quadrature_fourier_features(StationaryKernel("se", 0.2), 2, nodes_per_axis=6)
    points, rewards = rng.random((5, 2)), np.array([0.0, 0.5, -0.5, 1.0, 40.0])
    model = PrivateFeatureRidge(qff, epsilon=1.0, delta=1e-6, reward_bound=1.5)
    with pytest.raises(InvalidParameterError, match=r"rewards must lie in \[-1.5, 1.5\]"):
        model.release(points, rewards)
    with pytest.raises(InvalidParameterError, match=r"points must lie in \[0.0, 1.0\]"):
        model.second_moment(points + 1.0, np.zeros(5))
    clipped = PrivateFeatureRidge(qff, epsilon=1.0, delta=1e-6, reward_bound=1.5, clip=True)
    np.testing.assert_array_equal(clipped.second_moment(points, rewards),
                                  model.second_moment(points, np.clip(rewards, -1.5, 1.5)))
