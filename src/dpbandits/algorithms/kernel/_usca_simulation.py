"""USCA's simulation: trials of the agent on a kernel environment, and its three registered entry points.

Each trial draws its data, runs a fresh agent (:class:`~dpbandits.algorithms.kernel.usca.USCA`, found
through the registry, so that this module does not import the agent's module, which re-exports the
entry points) and evaluates its mechanism exactly on the action grid.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from dpbandits._core.errors import InvalidParameterError
from dpbandits._core.typing import FloatArray
from dpbandits._core.validation import (
    check_int,
)
from dpbandits.algorithms.kernel.evaluation import (
    draw_trial_data,
    expected_regret,
    grid_points,
    grid_reward_table,
    trial_streams,
)
from dpbandits.algorithms.registry import get_algorithm, register_algorithm
from dpbandits.envs.kernel import KernelBanditEnvironment
from dpbandits.privacy.noise import NumpyNoise

__all__ = [
    "EVALUATION_POINTS",
    "USCA_METRICS",
    "simulate_usca",
    "simulate_usca_nonprivate",
    "simulate_usca_trivial",
]

USCA_METRICS = (
    "error", "sampled_regret", "sup_error", "sensitivity", "sup_variance", "gamma", "approx_size", "uniform_error",
)


EVALUATION_POINTS = 1 << 13
"""Joint points (grid action, evaluation context) the evaluation metrics hold at once (whole contexts per block)."""


def _evaluate(agent: Any, env: KernelBanditEnvironment, contexts: FloatArray) -> tuple[float, float, float]:
    """(ER with the exact mechanism probabilities, sup |μ̄_T − f|, ER of a uniform grid action) over ``contexts``.

    Evaluated in blocks of whole contexts of about :data:`EVALUATION_POINTS` joint points, so that the
    memory of the scores, the true rewards and the features they need does not grow with the number of
    contexts times the grid size (1024 points × 64 contexts were held at once before).
    """
    n_grid = agent.grid.shape[0]
    per_block = max(1, EVALUATION_POINTS // n_grid)
    errors, uniform = np.empty(contexts.shape[0]), np.empty(contexts.shape[0])
    sup_error = 0.0
    for start in range(0, contexts.shape[0], per_block):
        c = contexts[start:start + per_block]
        scores = agent._surrogate_mean(grid_points(agent.grid, c)).reshape(c.shape[0], n_grid)
        truth = grid_reward_table(env, agent.grid, c)
        log_p = agent._log_probabilities(c, scores)
        errors[start:start + c.shape[0]] = expected_regret(truth, np.exp(log_p))
        # ER of a uniformly random grid action: the level at which a flat (saturated) mechanism sits
        uniform[start:start + c.shape[0]] = expected_regret(truth, np.full(truth.shape, 1.0 / n_grid))
        sup_error = max(sup_error, float(np.max(np.abs(scores - truth))))
    return float(np.mean(errors)), sup_error, float(np.mean(uniform))


def _agent_class() -> Any:
    """The USCA agent class, as its module registered it (that module imports this one: no import back)."""
    cls = get_algorithm("usca").algorithm_class
    if cls is None:  # registered with its module, which the kernel package imports first
        raise InvalidParameterError("the USCA agent class is not registered; import dpbandits.algorithms.kernel")
    return cls


def _simulate(
    env: KernelBanditEnvironment,
    *,
    n_trials: int,
    rng: np.random.SeedSequence,
    horizon: int,
    epsilon: float,
    reward_bound: float,
    n_test_contexts: int,
    **options: Any,
) -> Mapping[str, np.ndarray]:
    n_trials = check_int(n_trials, "n_trials", minimum=1)
    n_test = check_int(n_test_contexts, "n_test_contexts", minimum=1)
    out = {name: np.empty(n_trials) for name in USCA_METRICS}
    usca = _agent_class()
    for i, (env_seed, algo_seed, noise_seed) in enumerate(trial_streams(rng, n_trials)):
        data = draw_trial_data(env, horizon, n_test, env_seed)
        agent = usca(
            horizon=horizon, epsilon=epsilon, reward_bound=reward_bound, kernel=env.kernel,
            context_generator=env.sample_contexts, action_dim=env.action_dim, context_dim=env.context_dim,
            clip=True, rng=algo_seed, **options,
        )
        agent.observe(data.contexts, data.rewards(env, agent.learning_actions))
        x_hat = agent._draw(data.next_context, NumpyNoise(noise_seed))  # simulation: seeded NumPy noise
        best_next = float(grid_reward_table(env, agent.grid, data.next_context[None, :]).max())
        out["sampled_regret"][i] = best_next - float(env.mean_reward(x_hat, data.next_context))
        out["error"][i], out["sup_error"][i], out["uniform_error"][i] = _evaluate(agent, env, data.test_contexts)
        out["sensitivity"][i] = agent.sensitivity
        out["sup_variance"][i] = agent.sup.upper
        out["gamma"][i] = agent.gamma
        out["approx_size"][i] = agent.approx_size
    return out


@register_algorithm(
    "usca",
    family="kernel",
    privacy="epsilon-joint-DP (pure) per prediction, protecting one round's context and reward",
    metrics=USCA_METRICS,
    environments=("kernel-rkhs",),
)
def simulate_usca(
    env: KernelBanditEnvironment,
    *,
    n_trials: int,
    rng: np.random.SeedSequence,
    horizon: int = 500,
    epsilon: float = 1.0,
    reward_bound: float = 1.5,
    tau: float = 1.0,
    backend: str = "features",
    feature_map: str = "auto",
    n_features: int | None = None,
    gamma: str | float = "random",
    approx_size: int | None = None,
    sup_method: str = "certified",
    sensitivity_method: str = "paper",
    grid_points_per_dim: int | None = None,
    n_test_contexts: int = 64,
    precision: str = "float32",
) -> Mapping[str, np.ndarray]:
    """USCA (Pavlovic et al. 2025): uniform exploration, covariance approximation, grid exponential mechanism.

    Per trial: the environment stream draws contexts, reward noise, evaluation contexts and c_{T+1};
    the algorithm stream builds the public precomputation; the privacy-noise stream samples x̂.
    Metrics: ``error`` (ER over the evaluation contexts with exact mechanism probabilities — an
    evaluation protocol, see :mod:`~dpbandits.algorithms.kernel.evaluation`), ``sampled_regret`` (one
    private prediction at c_{T+1}), ``sup_error`` (max |μ̄_T − f| on grid × evaluation contexts),
    ``sensitivity`` (the paper's Δ, also with ``sensitivity_method="refined"``), ``sup_variance`` (Ŝ),
    ``gamma`` (γ̂), ``approx_size`` (M), ``uniform_error`` (ER of a uniformly random grid action at
    the same evaluation contexts: where a saturated mechanism sits).

    Privacy
    -------
    The one sampled prediction per trial is ε-joint-DP (pure) for one round's context and reward
    (exponential mechanism with Δ = 2·B_y·Ŝ on a data-independent grid; rewards clipped, contexts
    projected). ``error`` and ``sup_error`` read μ̄_T directly: evaluation metrics, not releases.

    References
    ----------
    Pavlovic, Salgia & Zhao (2025), Algorithm 1, Lemma 4.2 (= 7.1), Theorem 4.1 (= 7.3).
    """
    if isinstance(epsilon, int | float) and math.isinf(epsilon):
        raise InvalidParameterError("epsilon must be finite for 'usca'; use 'usca-nonprivate' for epsilon = inf")
    return _simulate(
        env, n_trials=n_trials, rng=rng, horizon=horizon, epsilon=epsilon, reward_bound=reward_bound,
        n_test_contexts=n_test_contexts, tau=tau, backend=backend, feature_map=feature_map,
        n_features=n_features, gamma=gamma, approx_size=approx_size, sup_method=sup_method,
        sensitivity_method=sensitivity_method, grid_points_per_dim=grid_points_per_dim, precision=precision,
    )


@register_algorithm(
    "usca-nonprivate",
    family="kernel",
    privacy="none (non-private)",
    metrics=USCA_METRICS,
    environments=("kernel-rkhs",),
)
def simulate_usca_nonprivate(
    env: KernelBanditEnvironment,
    *,
    n_trials: int,
    rng: np.random.SeedSequence,
    horizon: int = 500,
    reward_bound: float = 1.5,
    tau: float = 1.0,
    backend: str = "features",
    feature_map: str = "auto",
    n_features: int | None = None,
    gamma: str | float = "random",
    approx_size: int | None = None,
    grid_points_per_dim: int | None = None,
    n_test_contexts: int = 64,
    precision: str = "float32",
) -> Mapping[str, np.ndarray]:
    """Non-private USCA (baseline B2): argmax of the surrogate mean μ̄_T on the grid (ε = ∞).

    The ``sensitivity`` metric is the Δ that private USCA would use with the same coins.
    """
    return _simulate(
        env, n_trials=n_trials, rng=rng, horizon=horizon, epsilon=math.inf, reward_bound=reward_bound,
        n_test_contexts=n_test_contexts, tau=tau, backend=backend, feature_map=feature_map,
        n_features=n_features, gamma=gamma, approx_size=approx_size, sup_method="certified",
        grid_points_per_dim=grid_points_per_dim, precision=precision,
    )


@register_algorithm(
    "usca-trivial-sensitivity",
    family="kernel",
    privacy="epsilon-joint-DP (pure) per prediction, protecting one round's context and reward",
    metrics=USCA_METRICS,
    environments=("kernel-rkhs",),
)
def simulate_usca_trivial(
    env: KernelBanditEnvironment,
    *,
    n_trials: int,
    rng: np.random.SeedSequence,
    horizon: int = 500,
    epsilon: float = 1.0,
    reward_bound: float = 1.5,
    tau: float = 1.0,
    backend: str = "features",
    feature_map: str = "auto",
    n_features: int | None = None,
    gamma: str | float = "random",
    grid_points_per_dim: int | None = None,
    n_test_contexts: int = 64,
    precision: str = "float32",
) -> Mapping[str, np.ndarray]:
    """USCA with the trivial sensitivity Δ = 2·B_y/τ (baseline B6, ablation): private, no decaying Δ.

    Privacy
    -------
    ε-joint-DP (pure) per prediction for one round's context and reward: Ŝ = sup k(w, w)/τ >= sup σ̄²
    because Z̃ ≽ τ·Id, so Lemma 4.2's sensitivity bound holds with this Δ.

    References
    ----------
    Pavlovic, Salgia & Zhao (2025), Lemma 4.2 (= 7.1), Theorem 4.1 (baseline B6, trivial sensitivity).
    """
    return _simulate(
        env, n_trials=n_trials, rng=rng, horizon=horizon, epsilon=epsilon, reward_bound=reward_bound,
        n_test_contexts=n_test_contexts, tau=tau, backend=backend, feature_map=feature_map,
        n_features=n_features, gamma=gamma, sup_method="trivial", grid_points_per_dim=grid_points_per_dim,
        precision=precision,
    )
