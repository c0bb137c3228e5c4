"""Kernel environments: the kernels, the RKHS reward function, contexts, rewards and registration."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpbandits._core.errors import InvalidParameterError
from dpbandits.envs.kernel import KernelBanditEnvironment, StationaryKernel, joint_points
from dpbandits.envs.registry import get_environment, make_environment


@pytest.mark.parametrize(
    ("name", "nu", "closed_form"),
    [
        ("se", 2.5, lambda r: np.exp(-0.5 * r**2)),
        ("matern", 0.5, lambda r: np.exp(-r)),
        ("matern", 1.5, lambda r: (1 + math.sqrt(3) * r) * np.exp(-math.sqrt(3) * r)),
        ("matern", 2.5, lambda r: (1 + math.sqrt(5) * r + 5 * r**2 / 3) * np.exp(-math.sqrt(5) * r)),
    ],
)
def test_profile_matches_closed_forms(name, nu, closed_form):
    ell = 0.3
    kernel = StationaryKernel(name, ell, nu)
    r = np.linspace(0.0, 2.0, 41)
    np.testing.assert_allclose(kernel.profile(r), closed_form(r / ell), rtol=1e-12, atol=1e-14)


def test_gram_is_isotropic_and_distance_bound_is_exact(rng):
    kernel = StationaryKernel("matern", 0.2, 1.5)
    a, b = rng.random((30, 2)), rng.random((20, 2))
    dist = np.linalg.norm(a[:, None, :] - b[None, :, :], axis=-1)
    np.testing.assert_allclose(kernel(a, b), kernel.profile(dist), rtol=1e-12)
    # ‖φ(a) − φ(b)‖² = 2 − 2k(a, b) <= ρ(‖a − b‖)²
    d_k = np.sqrt(np.maximum(2 - 2 * kernel(a, b), 0))
    assert np.all(d_k <= kernel.distance_bound(dist) + 1e-12)


def test_spectral_frequencies_reproduce_the_kernel(rng):
    # E[cos ωᵀδ] = k(δ); with 200 000 draws the Monte-Carlo sd is <= 1/√(2·10⁵) ≈ 0.0022; the
    # tolerance 0.012 is > 5 sd (false-failure rate < 1e-6 per point, 5 points)
    for name in ("se", "matern"):
        kernel = StationaryKernel(name, 0.3, 2.5)
        omega = kernel.spectral_frequencies(200_000, 2, rng)
        deltas = np.array([[0.0, 0.0], [0.1, 0.0], [0.2, 0.1], [0.3, 0.3], [0.5, 0.2]])
        estimate = np.cos(omega @ deltas.T).mean(axis=0)
        np.testing.assert_allclose(estimate, kernel(np.zeros((1, 2)), deltas)[0], atol=0.012)


def test_reward_function_has_the_declared_rkhs_norm(seed):
    env = KernelBanditEnvironment(action_dim=2, context_dim=1, kernel="matern", nu=1.5, rkhs_norm=0.7,
                                  function_seed=seed % 1000)
    a = env.coefficients
    assert math.isclose(math.sqrt(a @ env.kernel(env.centres) @ a), 0.7, rel_tol=1e-12)
    points = np.random.default_rng(seed).random((5000, 3))
    assert np.all(np.abs(env.f(points)) <= 0.7 + 1e-12)  # |f| <= ‖f‖_H·√k(w,w)


def test_mean_reward_broadcasts_and_rewards_have_the_declared_noise(seed):
    env = KernelBanditEnvironment(noise_std=0.1, function_seed=2)
    x = np.full((4000, 1), 0.25)
    c = env.sample_contexts(4000, rng=seed)
    assert env.mean_reward(np.full((1, 1), 0.25), c).shape == (4000,)
    residual = env.sample_rewards(x, c, rng=seed + 1) - env.mean_reward(x, c)
    # sample sd of 4000 normals: relative error sd ≈ 1/√8000 ≈ 0.011; 6 sd = 0.067 (rate < 1e-8)
    assert abs(residual.std() / 0.1 - 1.0) < 0.067
    assert joint_points(x[:3], c[:3]).shape == (3, 2)


@pytest.mark.parametrize(("law", "high"), [("uniform", 1.0), ("beta", 1.0), ("uniform-half", 0.5)])
def test_context_laws_stay_in_their_support(law, high, seed):
    env = KernelBanditEnvironment(context_dim=2, context_law=law)
    c = env.sample_contexts((10, 30), rng=seed)
    assert c.shape == (10, 30, 2)
    assert c.min() >= 0.0 and c.max() <= high


def test_function_is_fixed_by_its_seed():
    a = KernelBanditEnvironment(function_seed=5)
    b = KernelBanditEnvironment(function_seed=5)
    c = KernelBanditEnvironment(function_seed=6)
    np.testing.assert_array_equal(a.centres, b.centres)
    assert not np.array_equal(a.coefficients, c.coefficients)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"kernel": "poly"}, "kernel must be one of"),
        ({"kernel": "matern", "nu": 0.7}, "nu must be one of"),
        ({"length_scale": -1.0}, "length_scale must be a finite float > 0"),
        ({"noise_std": -0.1}, "noise_std must be a finite float >= 0"),
        ({"action_dim": 0}, "action_dim must be an int >= 1"),
        ({"context_law": "gaussian"}, "context_law must be one of"),
    ],
)
def test_invalid_parameters_are_named(kwargs, message):
    with pytest.raises(InvalidParameterError, match=message):
        KernelBanditEnvironment(**kwargs)


def test_check_actions_refuses_out_of_domain():
    env = KernelBanditEnvironment()
    with pytest.raises(InvalidParameterError, match=r"actions must lie in \[0, 1\]"):
        env.check_actions([[1.5]])


def test_registered_under_kernel_rkhs():
    spec = get_environment("kernel-rkhs")
    assert spec.kind == "kernel"
    env = make_environment("kernel-rkhs", action_dim=1, context_dim=2)
    assert isinstance(env, KernelBanditEnvironment) and env.joint_dim == 3


def test_missing_scikit_learn_names_the_ml_extra(monkeypatch):
    import sys

    from dpbandits._core.errors import DependencyNotInstalledError

    monkeypatch.setitem(sys.modules, "sklearn.gaussian_process", None)  # makes the import fail
    with pytest.raises(DependencyNotInstalledError, match=r"dpbandits\[ml\]"):
        StationaryKernel("se", 0.2)(np.zeros((1, 2)))
