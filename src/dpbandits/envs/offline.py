"""Synthetic logged (offline) bandit data and the study environments that draw it.

The generators draw the logged data of :mod:`dpbandits.envs.logged` from known ground truths
(Bernoulli arms, a linear model, the Bradley–Terry model with the *standard* logistic
σ(t) = 1/(1 + e^{−t}); the paper's printed σ(exp(r¹) − exp(r²)) is a typo, errata KL-1, KL-2). Each
takes ``rng`` and documents the order in which it draws.

The containers (:mod:`dpbandits.envs.logged`) and the readers' earlier names
(:mod:`dpbandits.envs.readers`: CSV, Parquet, DataFrames) are re-exported here for existing callers.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from dpbandits._core.errors import InvalidParameterError
from dpbandits._core.rng import RNGLike, as_generator
from dpbandits._core.typing import FloatArray
from dpbandits._core.validation import (
    check_array,
    check_bounded_array,
    check_int,
    check_one_of,
    check_positive_float,
    check_probability_vector,
)
from dpbandits.envs.logged import (
    FEATURE_NORM_TOLERANCE,
    LoggedBanditData,
    LoggedContextualData,
    PreferenceData,
    check_feature_norms,
)
from dpbandits.envs.readers import (  # their earlier home; new code imports dpbandits.envs.readers
    read_action_features_csv,
    read_logged_bandit_csv,
    read_logged_contextual_csv,
    read_preferences_csv,
)
from dpbandits.envs.registry import register_environment

__all__ = [
    "FEATURE_NORM_TOLERANCE",
    "LoggedBanditData",
    "LoggedContextualData",
    "OfflineBanditEnvironment",
    "OfflineLinearEnvironment",
    "OfflinePreferenceEnvironment",
    "PreferenceData",
    "check_feature_norms",
    "logging_distribution",
    "read_action_features_csv",
    "read_logged_bandit_csv",
    "read_logged_contextual_csv",
    "read_preferences_csv",
    "simulate_logged_bandit",
    "simulate_logged_contextual",
    "simulate_preferences",
]


def logging_distribution(n_arms: int, logging: str | ArrayLike = "balanced") -> FloatArray:
    """Return the logging policy's arm probabilities.

    Parameters
    ----------
    n_arms : int
    logging : {"balanced", "zipf"} or array_like
        ``"balanced"``: uniform; ``"zipf"``: p(a) ∝ 1/(a + 1); or explicit probabilities (renormalised
        when they sum to 1 within 1e-3, as rounded study files do).
    """
    k = check_int(n_arms, "n_arms", minimum=1)
    if isinstance(logging, str):
        check_one_of(logging, "logging", ("balanced", "zipf"))
        weights = np.ones(k) if logging == "balanced" else 1.0 / np.arange(1, k + 1)
        return np.asarray(weights / weights.sum(), dtype=np.float64)
    p = check_probability_vector(logging, "logging", atol=1e-3)
    p = p / p.sum()
    if p.shape[0] != k:
        raise InvalidParameterError(f"logging must have n_arms={k} entries; got {p.shape[0]}")
    return p


def simulate_logged_bandit(
    means: ArrayLike,
    n_records: int,
    *,
    logging: str | ArrayLike = "balanced",
    min_pulls: int = 0,
    rng: RNGLike = None,
) -> LoggedBanditData:
    """Draw logged Bernoulli-bandit data.

    Parameters
    ----------
    means : array_like, shape (K,)
        μ(a) ∈ [0, 1]; rewards are Bernoulli(μ(a)) and R = 1.
    n_records : int
        n >= 0.
    logging : {"balanced", "zipf"} or array_like, default "balanced"
        ``"balanced"`` gives exactly ``n // K`` pulls per arm (the remainder to the first arms);
        otherwise arms are drawn i.i.d. from the logging probabilities.
    min_pulls : int, default 0
        Force each arm to be pulled at least this often (study kl-e1 uses 2 with Zipf logging); the forced
        pulls come first and count toward ``n_records``.
    rng : int, SeedSequence, Generator or None
        Draw order: the arms, then the rewards.

    Returns
    -------
    LoggedBanditData
    """
    mu = check_bounded_array(means, "means", 0.0, 1.0, ndim=1)
    k = mu.shape[0]
    n = check_int(n_records, "n_records", minimum=0)
    forced = check_int(min_pulls, "min_pulls", minimum=0)
    if forced * k > n:
        raise InvalidParameterError(f"n_records must be >= min_pulls * n_arms = {forced * k}; got {n}")
    gen = as_generator(rng)
    probs = logging_distribution(k, logging)
    if isinstance(logging, str) and logging == "balanced":
        actions = np.arange(n, dtype=np.int64) % k
    else:
        drawn = gen.choice(k, size=n - forced * k, p=probs)
        actions = np.concatenate([np.repeat(np.arange(k, dtype=np.int64), forced), drawn.astype(np.int64)])
    rewards = (gen.random(n) < mu[actions]).astype(np.float64)
    return LoggedBanditData(actions, rewards, k, 1.0)


def _unit_sphere(gen: np.random.Generator, n: int, d: int) -> FloatArray:
    x = gen.standard_normal((n, d))
    return np.asarray(x / np.linalg.norm(x, axis=1, keepdims=True), dtype=np.float64)


def simulate_logged_contextual(
    theta: ArrayLike, n_records: int, *, rng: RNGLike = None
) -> LoggedContextualData:
    """Draw linear contextual data: φ uniform on the unit sphere, r ~ Bernoulli((1 + θ*ᵀφ)/2).

    Parameters
    ----------
    theta : array_like, shape (d,)
        θ* with ‖θ*‖ ≤ 1, so the success probability lies in [0, 1] and R = 1 (study kl-e2).
    n_records : int
    rng : int, SeedSequence, Generator or None
        Draw order: the features, then the rewards.
    """
    th = check_array(theta, "theta", ndim=1)
    if float(np.linalg.norm(th)) > 1.0 + FEATURE_NORM_TOLERANCE:
        raise InvalidParameterError(f"theta must have Euclidean norm <= 1; got {float(np.linalg.norm(th))!r}")
    n = check_int(n_records, "n_records", minimum=0)
    gen = as_generator(rng)
    phi = _unit_sphere(gen, n, th.shape[0])
    p = np.clip(0.5 * (1.0 + phi @ th), 0.0, 1.0)
    rewards = (gen.random(n) < p).astype(np.float64)
    return LoggedContextualData(phi, rewards, 1.0)


def simulate_preferences(
    theta: ArrayLike,
    n_records: int,
    *,
    n_prompts: int = 200,
    responses_per_prompt: int = 10,
    rng: RNGLike = None,
) -> PreferenceData:
    """Draw Bradley–Terry preference data (study kl-e3).

    Each prompt has ``responses_per_prompt`` responses with features uniform on the unit sphere;
    each comparison picks a prompt and two distinct responses uniformly, and
    ``P[y = 1] = σ(θ*ᵀ(φ¹ − φ²))`` with the standard logistic σ.

    Parameters
    ----------
    theta : array_like, shape (d,)
        θ*.
    n_records : int
    n_prompts : int, default 200
    responses_per_prompt : int, default 10
    rng : int, SeedSequence, Generator or None
        Draw order: the response features, the prompts, the pairs, the labels.
    """
    th = check_array(theta, "theta", ndim=1)
    n = check_int(n_records, "n_records", minimum=0)
    m = check_int(n_prompts, "n_prompts", minimum=1)
    k = check_int(responses_per_prompt, "responses_per_prompt", minimum=2)
    gen = as_generator(rng)
    d = th.shape[0]
    responses = _unit_sphere(gen, m * k, d).reshape(m, k, d)
    prompts = gen.integers(0, m, size=n)
    first = gen.integers(0, k, size=n)
    second = (first + gen.integers(1, k, size=n)) % k  # uniform over the other k − 1 responses
    z = responses[prompts, first] - responses[prompts, second]
    # P[y = 1] = σ(θ*ᵀ z) = 1 / (1 + e^{−θ*ᵀz})
    p = 1.0 / (1.0 + np.exp(-(z @ th)))
    labels = (gen.random(n) < p).astype(np.float64)
    return PreferenceData(z, labels)


# ----------------------------------------------------------------------- study environments
@dataclass(frozen=True)
class OfflineBanditEnvironment:
    """Data-generating process of logged Bernoulli-bandit data (studies E1, E4–E6).

    Parameters
    ----------
    means : sequence of float
        μ(a) ∈ [0, 1].
    n_records : int
        n per dataset.
    logging : {"balanced", "zipf"}, default "balanced"
    min_pulls : int, default 0
        Forced pulls per arm (E1 uses 2 with Zipf logging).
    """

    means: tuple[float, ...]
    n_records: int
    logging: str | tuple[float, ...] = "balanced"
    min_pulls: int = 0

    def draw(self, rng: RNGLike) -> LoggedBanditData:
        """One logged dataset (arms, then rewards, from ``rng``)."""
        logging = self.logging if isinstance(self.logging, str) else np.asarray(self.logging)
        return simulate_logged_bandit(np.asarray(self.means), self.n_records, logging=logging,
                                      min_pulls=self.min_pulls, rng=rng)


@dataclass(frozen=True)
class OfflineLinearEnvironment:
    """Logged linear contextual data plus one query context with ``n_actions`` unit features (E2).

    θ* is drawn uniformly on the sphere of radius ``theta_norm`` (<= 1) per dataset.
    """

    dimension: int
    n_records: int
    n_actions: int = 20
    theta_norm: float = 1.0

    def draw(self, rng: RNGLike) -> tuple[LoggedContextualData, FloatArray, FloatArray]:
        """Return (data, θ*, query features) drawn in that order from ``rng``."""
        gen = as_generator(rng)
        theta = self.theta_norm * _unit_sphere(gen, 1, self.dimension)[0]
        data = simulate_logged_contextual(theta, self.n_records, rng=gen)
        return data, theta, _unit_sphere(gen, self.n_actions, self.dimension)


@dataclass(frozen=True)
class OfflinePreferenceEnvironment:
    """Bradley–Terry preference data plus one query prompt with ``n_actions`` responses (E3).

    θ* is drawn uniformly on the sphere of radius ``theta_norm`` per dataset.
    """

    dimension: int
    n_records: int
    theta_norm: float = 0.05
    n_prompts: int = 200
    responses_per_prompt: int = 10
    n_actions: int = 10

    def draw(self, rng: RNGLike) -> tuple[PreferenceData, FloatArray, FloatArray]:
        """Return (data, θ*, query features) drawn in that order from ``rng``."""
        gen = as_generator(rng)
        theta = self.theta_norm * _unit_sphere(gen, 1, self.dimension)[0]
        data = simulate_preferences(theta, self.n_records, n_prompts=self.n_prompts,
                                    responses_per_prompt=self.responses_per_prompt, rng=gen)
        return data, theta, _unit_sphere(gen, self.n_actions, self.dimension)


def _make_offline_bandit(means: ArrayLike, n_records: int, logging: str | ArrayLike = "balanced",
                         min_pulls: int = 0) -> OfflineBanditEnvironment:
    mu = check_bounded_array(means, "means", 0.0, 1.0, ndim=1)
    probs = logging_distribution(mu.size, logging)
    kept: str | tuple[float, ...] = logging if isinstance(logging, str) else tuple(float(p) for p in probs)
    n = check_int(n_records, "n_records", minimum=1)
    forced = check_int(min_pulls, "min_pulls", minimum=0)
    if forced * mu.size > n:
        raise InvalidParameterError(f"n_records must be >= min_pulls * n_arms = {forced * mu.size}; got {n}")
    return OfflineBanditEnvironment(tuple(float(m) for m in mu), n, kept, forced)


def _make_offline_linear(dimension: int, n_records: int, n_actions: int = 20,
                         theta_norm: float = 1.0) -> OfflineLinearEnvironment:
    return OfflineLinearEnvironment(
        check_int(dimension, "dimension", minimum=1), check_int(n_records, "n_records", minimum=1),
        check_int(n_actions, "n_actions", minimum=1), float(check_bounded_array(theta_norm, "theta_norm", 0.0, 1.0)),
    )


def _make_offline_preferences(dimension: int, n_records: int, theta_norm: float = 0.05, n_prompts: int = 200,
                              responses_per_prompt: int = 10, n_actions: int = 10) -> OfflinePreferenceEnvironment:
    return OfflinePreferenceEnvironment(
        check_int(dimension, "dimension", minimum=1), check_int(n_records, "n_records", minimum=1),
        check_positive_float(theta_norm, "theta_norm"), check_int(n_prompts, "n_prompts", minimum=1),
        check_int(responses_per_prompt, "responses_per_prompt", minimum=2),
        check_int(n_actions, "n_actions", minimum=1),
    )


register_environment("offline-bandit", kind="offline", factory=_make_offline_bandit,
                     description="Logged Bernoulli-bandit data; params: means, n_records, logging, min_pulls")
register_environment("offline-linear", kind="offline", factory=_make_offline_linear,
                     description="Logged linear contextual data + one query context; params: dimension, n_records")
register_environment("offline-preferences", kind="offline", factory=_make_offline_preferences,
                     description="Bradley-Terry preferences + one query prompt; params: dimension, n_records, "
                                 "theta_norm")
