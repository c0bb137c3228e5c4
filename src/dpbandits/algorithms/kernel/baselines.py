"""Baselines for USCA, all in feature space with the same feature map.

* B1 ``gp-uniform`` — uniform sampling + GP posterior mean μ_T (non-private; Salgia et al. 2023).
* B3 ``cgp-ucb`` — contextual GP-UCB (non-private, adaptive; Krause & Ong 2011), β constant.
* B4 ``private-feature-ridge`` — uniform sampling + one-shot private random-feature ridge:
  the augmented second-moment matrix Σₜ aₜaₜᵀ, aₜ = [φ(wₜ); yₜ], released once with the analytic
  Gaussian mechanism; (ε, δ)-joint-DP. The released model answers any number of contexts for free.

(B2 = ``usca-nonprivate`` and B6 = ``usca-trivial-sensitivity`` live in :mod:`~.usca`.) All
baselines use the same environment stream, the same output grid and argmax over it.

Random streams per trial (spawned from the cell's seed sequence): environment, algorithm (split into
feature map then learning actions), privacy noise (B4 only).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy import linalg

from dpbandits._core.errors import InvalidParameterError
from dpbandits._core.rng import RNGLike, as_generator, spawn_seed_sequences
from dpbandits._core.typing import FloatArray
from dpbandits._core.validation import (
    check_bounded_array,
    check_delta,
    check_epsilon,
    check_int,
    check_positive_float,
)
from dpbandits.algorithms.kernel.evaluation import (
    argmax_log_probabilities,
    draw_trial_data,
    grid_points,
    grid_reward_table,
    score_policy,
    trial_streams,
)
from dpbandits.algorithms.kernel.features import FeatureMap, make_feature_map
from dpbandits.algorithms.kernel.usca import PROTECTED_UNIT, action_grid
from dpbandits.algorithms.registry import register_algorithm
from dpbandits.envs.kernel import KernelBanditEnvironment, joint_points
from dpbandits.privacy.accounting import Accountant, GaussianEvent, spend
from dpbandits.privacy.guarantees import ApproxDP, Neighbouring
from dpbandits.privacy.mechanisms import analytic_gaussian_sigma
from dpbandits.privacy.noise import NoiseBackend, NumpyNoise, privacy_noise

__all__ = [
    "PrivateFeatureRidge",
    "feature_ridge_coefficients",
    "simulate_cgp_ucb",
    "simulate_gp_uniform",
    "simulate_private_feature_ridge",
]

BASELINE_METRICS = ("error", "sampled_regret")


def feature_ridge_coefficients(features: FloatArray, rewards: FloatArray, tau: float) -> FloatArray:
    """θ = (ΦᵀΦ + τI)⁻¹Φᵀy, so that φ(w)ᵀθ is the GP posterior mean μ_T(w) of k_D (eq. 2)."""
    gram = features.T @ features
    gram[np.diag_indices_from(gram)] += tau
    return np.asarray(linalg.cho_solve(linalg.cho_factor(gram, lower=True), features.T @ rewards))


class PrivateFeatureRidge:
    """One-shot (ε, δ)-jointly-DP feature ridge regression (baseline B4 of the USCA spec).

    With aₜ = [φ(wₜ); yₜ] (‖aₜ‖² <= L² = sup k_D(w, w) + B_y²), release
    M̃ = Σₜ aₜaₜᵀ + N, N symmetric with i.i.d. N(0, σ²) upper-triangular entries, σ from the analytic
    Gaussian mechanism for the replace-one ℓ₂ sensitivity Δ₂ = √2·L² of the upper triangle
    (‖aaᵀ − a'a'ᵀ‖_F² = ‖a‖⁴ + ‖a'‖⁴ − 2(aᵀa')² <= 2L⁴). Then
    Ṽ = M̃_{1:D,1:D} + (τ + s)I with s = σ(2√(D_f + 1) + 2√ln(1/α)), ũ = M̃_{1:D,D+1}, θ̃ = Ṽ⁻¹ũ.

    Parameters
    ----------
    feature_map : FeatureMap
        Data-independent φ.
    epsilon : float
        ε > 0.
    delta : float
        δ in (0, 1).
    reward_bound : float
        B_y: rewards must lie in [−B_y, B_y] and joint points in [0, 1]^D, else an error is raised.
    tau : float, default 1.0
    alpha : float, default 0.01
        Failure probability of the positive-definiteness shift s.
    clip : bool, default False
        Clip rewards to [−B_y, B_y] and joint points to [0, 1]^D instead of raising (fixed
        per-record maps, so neighbours stay neighbours).

    Privacy
    -------
    (ε, δ)-joint-DP for one round's context and reward: the learning actions are uniform
    data-independent coins, one round changes one aₜ, and M̃ is the Gaussian mechanism on the upper
    triangle with ℓ₂ sensitivity Δ₂. θ̃ and every prediction are post-processing.

    References
    ----------
    Baseline B4 (not in the paper, "Dubey-style"; errata USCA-A20); Balle & Wang (2018),
    analytic Gaussian mechanism.
    """

    def __init__(
        self,
        feature_map: FeatureMap,
        *,
        epsilon: float,
        delta: float,
        reward_bound: float,
        tau: float = 1.0,
        alpha: float = 0.01,
        clip: bool = False,
    ) -> None:
        self.feature_map = feature_map
        self.clip = bool(clip)
        self.epsilon = check_epsilon(epsilon)
        self.delta = check_delta(delta)
        self.reward_bound = check_positive_float(reward_bound, "reward_bound")
        self.tau = check_positive_float(tau, "tau")
        self.alpha = check_positive_float(alpha, "alpha")
        # L² = sup ‖φ‖² + B_y² ;  Δ₂ = √2·L²
        self.l2_sensitivity = math.sqrt(2.0) * (feature_map.max_diag + self.reward_bound**2)
        self.sigma = analytic_gaussian_sigma(self.l2_sensitivity, self.epsilon, self.delta)
        # s = σ(2√(D_f + 1) + 2√ln(1/α))
        self.shift = self.sigma * (2.0 * math.sqrt(feature_map.dim + 1) + 2.0 * math.sqrt(math.log(1.0 / self.alpha)))

    @property
    def privacy(self) -> ApproxDP:
        """(ε, δ)-joint-DP for one round's context and reward (any number of predictions)."""
        return ApproxDP(
            epsilon=self.epsilon, delta=self.delta, unit=PROTECTED_UNIT, neighbouring=Neighbouring.JOINT,
            reference="private feature ridge (baseline B4); analytic Gaussian mechanism (Balle & Wang 2018)",
        )

    def second_moment(self, points: ArrayLike, rewards: ArrayLike) -> FloatArray:
        """M = Σₜ aₜaₜᵀ with aₜ = [φ(wₜ); yₜ] (the non-private statistic).

        Δ₂ assumes |yₜ| <= B_y: out-of-range data is an error unless ``clip=True``.
        """
        w = check_bounded_array(points, "points", 0.0, 1.0, clip=self.clip, ndim=2)
        y = check_bounded_array(rewards, "rewards", -self.reward_bound, self.reward_bound, clip=self.clip, ndim=1)
        if w.shape[0] != y.shape[0]:
            raise InvalidParameterError(f"points and rewards must have the same length; got {w.shape[0]} and {y.shape[0]}")
        a = np.concatenate([self.feature_map.transform(w), y[:, None]], axis=1)
        return np.asarray(a.T @ a)

    def release(
        self, points: ArrayLike, rewards: ArrayLike, rng: RNGLike = None, *,
        backend: NoiseBackend | str | None = None, insecure_seeded_noise: bool = False,
        accountant: Accountant | None = None,
    ) -> FloatArray:
        """Return θ̃ from the noisy second-moment matrix (the private release).

        Parameters
        ----------
        points : array_like of shape (n, joint_dim)
        rewards : array_like of shape (n,)
        rng : int, SeedSequence, Generator or None
            Seed of the noise; only with ``insecure_seeded_noise=True``.
        backend : NoiseBackend or str, optional
            Default the secure OpenDP backend (the Gaussian noise is added inside OpenDP).
        insecure_seeded_noise : bool, default False
            Seeded NumPy noise instead (simulation only; warns).
        accountant : Accountant, optional
            Records the Gaussian release (σ, Δ₂) before any noise is drawn.
        """
        noise = privacy_noise(rng, insecure_seeded_noise=insecure_seeded_noise, backend=backend)
        spend(accountant, GaussianEvent(self.sigma, self.l2_sensitivity), unit=self.privacy.unit,
              neighbouring=self.privacy.neighbouring, label=f"{type(self).__name__}.release")
        return self._release(points, rewards, noise)

    def _release(self, points: ArrayLike, rewards: ArrayLike, noise: NoiseBackend) -> FloatArray:
        """θ̃ with an explicit noise source (simulations pass NumpyNoise)."""
        return self._release_moment(self.second_moment(points, rewards), noise)

    def _release_moment(self, moment: FloatArray, noise: NoiseBackend) -> FloatArray:
        """θ̃ from the second-moment matrix M = Σₜ aₜaₜᵀ of in-range data (the Gaussian mechanism on it)."""
        size = moment.shape[0]
        upper = np.triu_indices(size)
        noisy = np.zeros((size, size))
        noisy[upper] = noise.add_gaussian(moment[upper], self.sigma)  # one N(0, σ²) per upper entry
        noisy = noisy + np.triu(noisy, 1).T  # symmetric: post-processing of the released triangle
        d = self.feature_map.dim
        v_tilde = noisy[:d, :d] + (self.tau + self.shift) * np.eye(d)
        return np.asarray(linalg.solve(v_tilde, noisy[:d, d], assume_a="sym"))


def _grid(env: KernelBanditEnvironment, grid_points_per_dim: int | None) -> FloatArray:
    return action_grid(env.action_dim, grid_points_per_dim)


def _uniform_sampling_trials(
    env: KernelBanditEnvironment,
    fit: Callable[[FeatureMap, FloatArray, FloatArray, RNGLike], FloatArray],
    *,
    n_trials: int,
    rng: np.random.SeedSequence,
    horizon: int,
    reward_bound: float,
    feature_map: str,
    n_features: int | None,
    grid_points_per_dim: int | None,
    n_test_contexts: int,
    metrics: tuple[str, ...],
) -> dict[str, np.ndarray]:
    """Trials of a uniform-sampling learner: ``fit(φ, points, clipped rewards, noise rng) -> θ``, argmax φᵀθ."""
    n_trials = check_int(n_trials, "n_trials", minimum=1)
    grid = _grid(env, grid_points_per_dim)
    out = {name: np.empty(n_trials) for name in metrics}
    for i, (env_seed, algo_seed, noise_seed) in enumerate(trial_streams(rng, n_trials)):
        data = draw_trial_data(env, horizon, n_test_contexts, env_seed)
        map_seed, learn_seed = spawn_seed_sequences(algo_seed, 2)
        fmap = make_feature_map(env.kernel, env.joint_dim, feature_map, n_features, map_seed)
        actions = as_generator(learn_seed).random((horizon, env.action_dim))
        rewards = np.clip(data.rewards(env, actions), -reward_bound, reward_bound)
        theta = fit(fmap, joint_points(actions, data.contexts), rewards, noise_seed)
        values = _greedy_metrics(env, grid, data, fmap, theta)
        for name, value in zip(("error", "sampled_regret", "sup_error"), values, strict=True):
            if name in out:
                out[name][i] = value
    return out


def _greedy_metrics(
    env: KernelBanditEnvironment, grid: FloatArray, data: Any, fmap: FeatureMap, theta: FloatArray
) -> tuple[float, float, float]:
    scores = (fmap.transform(grid_points(grid, data.test_contexts)) @ theta).reshape(len(data.test_contexts), -1)
    next_scores = fmap.transform(joint_points(grid, data.next_context[None, :])) @ theta
    error, regret = score_policy(env, grid, data, argmax_log_probabilities(scores), grid[int(np.argmax(next_scores))])
    sup_error = float(np.max(np.abs(scores - grid_reward_table(env, grid, data.test_contexts))))
    return error, regret, sup_error


@register_algorithm(
    "gp-uniform",
    family="kernel",
    privacy="none (non-private)",
    metrics=(*BASELINE_METRICS, "sup_error"),
    environments=("kernel-rkhs",),
)
def simulate_gp_uniform(
    env: KernelBanditEnvironment,
    *,
    n_trials: int,
    rng: np.random.SeedSequence,
    horizon: int = 500,
    reward_bound: float = 1.5,
    tau: float = 1.0,
    feature_map: str = "auto",
    n_features: int | None = None,
    grid_points_per_dim: int | None = None,
    n_test_contexts: int = 64,
) -> Mapping[str, np.ndarray]:
    """Uniform sampling + GP posterior mean argmax (B1, non-private; rewards clipped to ±B_y like USCA)."""
    def fit(fmap: FeatureMap, points: FloatArray, rewards: FloatArray, noise_seed: RNGLike) -> FloatArray:
        return feature_ridge_coefficients(fmap.transform(points), rewards, tau)

    return _uniform_sampling_trials(
        env, fit, n_trials=n_trials, rng=rng, horizon=horizon, reward_bound=reward_bound, feature_map=feature_map,
        n_features=n_features, grid_points_per_dim=grid_points_per_dim, n_test_contexts=n_test_contexts,
        metrics=(*BASELINE_METRICS, "sup_error"),
    )


@register_algorithm(
    "cgp-ucb",
    family="kernel",
    privacy="none (non-private)",
    metrics=(*BASELINE_METRICS, "sup_error"),
    environments=("kernel-rkhs",),
)
def simulate_cgp_ucb(
    env: KernelBanditEnvironment,
    *,
    n_trials: int,
    rng: np.random.SeedSequence,
    horizon: int = 500,
    reward_bound: float = 1.5,
    tau: float = 1.0,
    beta: float = 2.0,
    feature_map: str = "auto",
    n_features: int | None = None,
    grid_points_per_dim: int | None = None,
    ucb_grid_points_per_dim: int = 128,
    n_test_contexts: int = 64,
) -> Mapping[str, np.ndarray]:
    """Contextual GP-UCB (B3, non-private, adaptive): xₜ = argmax μ_{t−1}(x, cₜ) + β·σ_{t−1}(x, cₜ).

    Feature form with Sherman–Morrison updates of V⁻¹ = (ΦᵀΦ + τI)⁻¹; σ² = τ·φᵀV⁻¹φ. Actions are
    chosen on a coarser grid (``ucb_grid_points_per_dim`` per axis) to keep each step O(N·D_f²);
    the rounds are sequential (about 1 ms each with the default QFF features, so T = 16 000 takes
    about 15 s per trial). Metrics: ``error`` and ``sampled_regret`` of the final greedy choice
    argmax μ_T, and ``sup_error`` = max |μ_T − f| on grid × evaluation contexts.
    """
    n_trials = check_int(n_trials, "n_trials", minimum=1)
    beta = check_positive_float(beta, "beta")
    grid = _grid(env, grid_points_per_dim)
    ucb_grid = _grid(env, ucb_grid_points_per_dim)
    out = {name: np.empty(n_trials) for name in (*BASELINE_METRICS, "sup_error")}
    for i, (env_seed, algo_seed, _) in enumerate(trial_streams(rng, n_trials)):
        data = draw_trial_data(env, horizon, n_test_contexts, env_seed)
        fmap = make_feature_map(env.kernel, env.joint_dim, feature_map, n_features,
                                spawn_seed_sequences(algo_seed, 1)[0])
        v_inv = np.eye(fmap.dim) / tau
        b = np.zeros(fmap.dim)
        actions = np.empty((horizon, env.action_dim))
        for t in range(horizon):
            phi = fmap.transform(joint_points(ucb_grid, data.contexts[t][None, :]))
            projected = phi @ v_inv
            # UCB = φᵀθ + β·√(τ·φᵀV⁻¹φ)
            ucb = projected @ b + beta * np.sqrt(np.maximum(tau * np.einsum("ij,ij->i", projected, phi), 0.0))
            j = int(np.argmax(ucb))
            actions[t] = ucb_grid[j]
            y = float(np.clip(env.mean_reward(ucb_grid[j], data.contexts[t]) + env.noise_std * data.noise[t],
                              -reward_bound, reward_bound))
            # Sherman–Morrison: V⁻¹ ← V⁻¹ − (V⁻¹φ)(V⁻¹φ)ᵀ/(1 + φᵀV⁻¹φ)
            u = projected[j]
            v_inv -= np.outer(u, u) / (1.0 + u @ phi[j])
            b += phi[j] * y
        theta = v_inv @ b
        out["error"][i], out["sampled_regret"][i], out["sup_error"][i] = _greedy_metrics(env, grid, data, fmap, theta)
    return out


@register_algorithm(
    "private-feature-ridge",
    family="kernel",
    privacy="(epsilon, delta)-joint-DP (analytic Gaussian), protecting one round's context and reward",
    metrics=BASELINE_METRICS,
    environments=("kernel-rkhs",),
)
def simulate_private_feature_ridge(
    env: KernelBanditEnvironment,
    *,
    n_trials: int,
    rng: np.random.SeedSequence,
    horizon: int = 500,
    epsilon: float = 1.0,
    delta: float = 1e-6,
    reward_bound: float = 1.5,
    tau: float = 1.0,
    feature_map: str = "auto",
    n_features: int | None = None,
    grid_points_per_dim: int | None = None,
    n_test_contexts: int = 64,
) -> Mapping[str, np.ndarray]:
    """Uniform sampling + one-shot private feature ridge (B4, (ε, δ)-JDP; predictions are free).

    Privacy
    -------
    (ε, δ)-joint-DP for one round's context and reward (rewards clipped to ±B_y): the analytic
    Gaussian mechanism on the augmented second-moment matrix, see :class:`PrivateFeatureRidge`.

    References
    ----------
    Baseline B4; Balle & Wang (2018), analytic Gaussian mechanism, Theorem 8.
    """
    def fit(fmap: FeatureMap, points: FloatArray, rewards: FloatArray, noise_seed: RNGLike) -> FloatArray:
        model = PrivateFeatureRidge(fmap, epsilon=epsilon, delta=delta, reward_bound=reward_bound, tau=tau)
        return model._release(points, rewards, NumpyNoise(noise_seed))  # simulation: seeded NumPy noise

    return _uniform_sampling_trials(
        env, fit, n_trials=n_trials, rng=rng, horizon=horizon, reward_bound=reward_bound, feature_map=feature_map,
        n_features=n_features, grid_points_per_dim=grid_points_per_dim, n_test_contexts=n_test_contexts,
        metrics=BASELINE_METRICS,
    )
