"""Theory curves of the DP dueling-bandit paper, as functions to overlay on regret plots.

All of them follow the paper errata DUEL-1, DUEL-2 and DUEL-10 (the paper's formulas were lost; the O(·) shapes
come from its abstract and proofs, the explicit curves are ours and say so):

* :func:`thm1_shape` — Theorem 1's shape a·Σ_i ln(KT)/Δ_i + b·K·L_T^{1.5}·√ln(KT)/ε (a, b fitted by
  :func:`fit_shape`).
* :func:`alg1_heuristic` — typical DP-EBS-Elimination regret Σ_i 2·g_i·n̂_i with n̂_i solving
  2·wid(n̂_i) = Δ_i under the exact constants of errata DUEL-6.
* :func:`alg1_upper` — the loose Lemma 6 curve Σ_i 2·g_i·n̄_i + 4Tδ,
  n̄_i = ⌈max{32λ/Δ_i², 8B/Δ_i}⌉.
* :func:`thm2_lower_shape` — Theorem 2: c·max{Σ_i ln T/Δ_i, (K − 1)/ε} (slopes only).
* :func:`thm3_shape` — Theorem 3's shape a·d√T/κ + b·d⁶/(κε).
* :func:`thm3_schedule_bound` — GOptimal-DPDB's explicit schedule bound.

The two explicit curves are also registered as pseudo-algorithms (``theory-dp-ebs-heuristic``,
``theory-dp-ebs-upper``) returning the curve's value as ``reward_regret`` for every trial, so that a
study draws them as lines beside the measured regrets (the study plots have no other overlay hook).
They use no data and no randomness.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy import optimize

from dpbandits._core.errors import InvalidParameterError
from dpbandits._core.rng import RNGLike
from dpbandits._core.typing import FloatArray
from dpbandits._core.validation import (
    check_array,
    check_epsilon,
    check_in_interval,
    check_int,
    check_positive_float,
)
from dpbandits.algorithms.dueling._goptimal_design import _settings, phase_play_count
from dpbandits.algorithms.dueling.dp_ebs_elimination import ebs_constants
from dpbandits.algorithms.registry import register_algorithm
from dpbandits.envs.dueling import UtilityDuelingEnvironment

__all__ = [
    "alg1_heuristic",
    "alg1_upper",
    "curve_alg1_heuristic",
    "curve_alg1_upper",
    "curve_thm3_schedule",
    "fit_shape",
    "thm1_shape",
    "thm2_lower_shape",
    "thm3_schedule_bound",
    "thm3_shape",
]


def _suboptimal(env: UtilityDuelingEnvironment) -> tuple[FloatArray, FloatArray]:
    """(Δ_i, g_i) of the arms with Δ_i > 0 (preference and reward gaps)."""
    if not isinstance(env, UtilityDuelingEnvironment):
        raise InvalidParameterError(f"env must be a UtilityDuelingEnvironment; got {type(env).__name__}")
    mask = env.preference_gaps > 0
    return env.preference_gaps[mask], env.reward_gaps[mask]


def thm1_shape(env: UtilityDuelingEnvironment, horizon: int, epsilon: float, a: float = 1.0, b: float = 1.0) -> float:
    """Theorem 1: a·Σ_{i>=2} ln(KT)/Δ_i + b·K·L_T^{1.5}·√ln(KT)/ε (polylog made explicit, errata DUEL-2).

    References
    ----------
    Saha & Asi (2024), Theorem 1 and abstract: O(Σ_i log(KT)/Δ_i + K/ε).
    """
    gaps, _ = _suboptimal(env)
    t = check_int(horizon, "horizon", minimum=2)
    eps = check_epsilon(epsilon, allow_inf=True)
    k = env.n_arms
    log_kt = math.log(k * t)
    levels = t.bit_length()
    privacy = 0.0 if math.isinf(eps) else k * levels**1.5 * math.sqrt(log_kt) / eps
    return float(a * np.sum(log_kt / gaps) + b * privacy)


def _plays(env: UtilityDuelingEnvironment, horizon: int, epsilon: float, **options: Any) -> tuple[FloatArray, FloatArray, float, float]:
    gaps, reward_gaps = _suboptimal(env)
    c = ebs_constants(env.n_arms, horizon, epsilon, **options)
    return gaps, reward_gaps, c.confidence_log, c.tree_bound


def alg1_heuristic(env: UtilityDuelingEnvironment, horizon: int, epsilon: float, **options: Any) -> float:
    """Typical regret of DP-EBS-Elimination: Σ_i 2·g_i·min(n̂_i, T), 2·wid(n̂_i) = Δ_i.

    With s = 1/√n, 2·(√(λ/2)·s + B·s²) = Δ gives s = (√(λ/2 + 2BΔ) − √(λ/2))/(2B) (s = Δ/(2√(λ/2))
    when B = 0). ``options`` go to :func:`~dpbandits.algorithms.dueling.dp_ebs_elimination.ebs_constants`.

    References
    ----------
    Saha & Asi (2024), Theorem 1 and Lemma 6 (proof).
    """
    gaps, reward_gaps, lam, bound = _plays(env, horizon, epsilon, **options)
    half_lam = lam / 2.0
    if bound > 0:
        s = (np.sqrt(half_lam + 2 * bound * gaps) - math.sqrt(half_lam)) / (2 * bound)
    else:
        s = gaps / (2 * math.sqrt(half_lam))
    plays = np.minimum(1.0 / s**2, horizon)
    return float(np.sum(2 * reward_gaps * plays))


def alg1_upper(env: UtilityDuelingEnvironment, horizon: int, epsilon: float, **options: Any) -> float:
    """Loose upper curve Σ_i 2·g_i·n̄_i + 4Tδ, n̄_i = ⌈max{32λ/Δ_i², 8B/Δ_i}⌉ (Lemma 6).

    The empirical mean regret should lie below it (n̄_i is capped at T).

    References
    ----------
    Saha & Asi (2024), Lemma 6 and Theorem 1 (proof).
    """
    gaps, reward_gaps, lam, bound = _plays(env, horizon, epsilon, **options)
    delta = ebs_constants(env.n_arms, horizon, epsilon, **options).failure_probability
    plays = np.minimum(np.ceil(np.maximum(32 * lam / gaps**2, 8 * bound / gaps)), horizon)
    return float(np.sum(2 * reward_gaps * plays) + 4 * horizon * delta)


def thm2_lower_shape(env: UtilityDuelingEnvironment, horizon: int, epsilon: float, c: float = 1.0) -> float:
    """Theorem 2 with the classical bound: c·max{Σ_i ln T/Δ_i, (K − 1)/ε} (for slopes only).

    References
    ----------
    Saha & Asi (2024), Theorem 2 and Lemma 11 (Ω(K/ε) on constant-gap instances); Yue et al. (2012),
    Komiyama et al. (2015) for Ω(Σ_i log T/Δ_i).
    """
    gaps, _ = _suboptimal(env)
    t = check_int(horizon, "horizon", minimum=2)
    eps = check_epsilon(epsilon, allow_inf=True)
    private = 0.0 if math.isinf(eps) else (env.n_arms - 1) / eps
    return float(c * max(float(np.sum(math.log(t) / gaps)), private))


def thm3_shape(horizon: int, dim: int, kappa: float, epsilon: float, a: float = 1.0, b: float = 1.0) -> float:
    """Theorem 3's shape a·d·√T/κ + b·d⁶/(κ·ε) (GOptimal-DPDB).

    References
    ----------
    Saha & Asi (2024), Theorem 3: Õ(d⁶/(κε) + d√T/κ).
    """
    t = check_int(horizon, "horizon", minimum=1)
    d = check_int(dim, "dim", minimum=1)
    k = check_positive_float(kappa, "kappa")
    eps = check_epsilon(epsilon, allow_inf=True)
    privacy = 0.0 if math.isinf(eps) else d**6 / (k * eps)
    return float(a * d * math.sqrt(t) / k + b * privacy)


def thm3_schedule_bound(
    horizon: int,
    dim: int,
    n_arms: int,
    epsilon: float,
    *,
    kappa: float | str = "slope_at_theta",
    failure_probability: float | None = None,
    net_resolution: float = 0.0,
    play_count_scale: float = 1.0,
) -> float:
    """Explicit GOptimal-DPDB overlay: the deterministic phase schedule's regret bound.

    With g_ℓ = d and m_ℓ = d(d+1)/2 + 1, phase ℓ lasts N_ℓ + m_ℓ rounds (N_ℓ of errata DUEL-10), truncated
    so the total is T; per-round regret is <= 4·S_θ in phase 1 and <= 12·ε_ℓ afterwards (survivors
    of phase ℓ − 1 have gap <= 3ε_{ℓ−1}), plus discretisation 2ηT and failure 4Tδ (S_θ = 1):

        R̄(T) = min(4(N_1 + m_1), 4T) + Σ_{ℓ>=2} 12·ε_ℓ·(N_ℓ + m_ℓ)|_truncated + 2ηT + 4Tδ.

    References
    ----------
    Saha & Asi (2024), Theorem 3 and Lemmas 8–10 (proof).
    """
    settings = _settings(n_arms, horizon, epsilon, failure_probability, kappa, 1.0, 0.01, 2.0, play_count_scale)
    d = check_int(dim, "dim", minimum=1)
    eta = check_in_interval(net_resolution, "net_resolution", 0.0, 2.0)
    support = d * (d + 1) // 2 + 1
    remaining, total, phase = settings.horizon, 0.0, 0
    while remaining > 0:
        phase += 1
        length = min(remaining, phase_play_count(settings, phase, float(d), support) + support)
        per_round = 4.0 if phase == 1 else 12.0 * 2.0 ** (-phase)  # 4·S_θ, then 12·ε_ℓ
        total += per_round * length
        remaining -= math.ceil(length)
    return float(total + 2 * eta * settings.horizon + 4 * settings.horizon * settings.failure_probability)


def fit_shape(features: ArrayLike, regrets: ArrayLike) -> FloatArray:
    """Non-negative least squares: coefficients c >= 0 minimising ‖features·c − regrets‖.

    Parameters
    ----------
    features : array_like (n_points, n_terms)
        The shape's terms at each point (for Theorem 1: thm1_shape with (a, b) = (1, 0) and (0, 1)).
    regrets : array_like (n_points,)
        Measured mean regrets.

    Examples
    --------
    >>> from dpbandits.algorithms.dueling.theory import fit_shape
    >>> fit_shape([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], [2.0, 3.0, 5.0]).round(6).tolist()
    [2.0, 3.0]
    """
    x = check_array(features, "features", ndim=2)
    y = check_array(regrets, "regrets", ndim=1)
    if x.shape[0] != y.shape[0]:
        raise InvalidParameterError(
            f"regrets must have one value per row of features ({x.shape[0]}); got {y.shape[0]}"
        )
    coefficients, _ = optimize.nnls(x, y)
    return np.asarray(coefficients, dtype=np.float64)


# ---------------------------------------------------------------------- theory curves as study lines
_CURVE_ENVS = ("dueling-f1", "dueling-f2", "dueling-f3", "dueling-f4", "dueling-utility")


def _curve(value: float, n_trials: int) -> dict[str, FloatArray]:
    n = check_int(n_trials, "n_trials", minimum=1)
    return {"reward_regret": np.full(n, value)}


@register_algorithm(
    "theory-dp-ebs-heuristic",
    family="dueling",
    privacy="n/a: a theory curve (uses no data)",
    uses_data=False,
    metrics=("reward_regret",),
    environments=_CURVE_ENVS,
    description="Theory curve, not an algorithm: typical DP-EBS-Elimination regret (alg1_heuristic)",
)
def curve_alg1_heuristic(
    env: UtilityDuelingEnvironment, *, n_trials: int, rng: RNGLike, horizon: int, epsilon: float = math.inf
) -> dict[str, FloatArray]:
    """Draw :func:`alg1_heuristic` as a line in study plots (``rng`` is unused: the curve is deterministic).

    Privacy
    -------
    Not applicable: a deterministic theory curve that reads no feedback.

    References
    ----------
    Saha & Asi (2024), Theorem 1.
    """
    return _curve(alg1_heuristic(env, horizon, epsilon), n_trials)


@register_algorithm(
    "theory-dp-ebs-upper",
    family="dueling",
    privacy="n/a: a theory curve (uses no data)",
    uses_data=False,
    metrics=("reward_regret",),
    environments=_CURVE_ENVS,
    description="Theory curve, not an algorithm: Lemma 6 upper curve of DP-EBS-Elimination (alg1_upper)",
)
def curve_alg1_upper(
    env: UtilityDuelingEnvironment, *, n_trials: int, rng: RNGLike, horizon: int, epsilon: float = math.inf
) -> dict[str, FloatArray]:
    """Draw :func:`alg1_upper` as a line in study plots (``rng`` is unused: the curve is deterministic).

    Privacy
    -------
    Not applicable: a deterministic theory curve that reads no feedback.

    References
    ----------
    Saha & Asi (2024), Lemma 6 and Theorem 1.
    """
    return _curve(alg1_upper(env, horizon, epsilon), n_trials)


@register_algorithm(
    "theory-goptimal-schedule",
    family="dueling",
    privacy="n/a: a theory curve (uses no data)",
    uses_data=False,
    metrics=("reward_regret",),
    environments=("dueling-unit-ball", *_CURVE_ENVS),
    description="Theory curve, not an algorithm: GOptimal-DPDB schedule bound (thm3_schedule_bound)",
)
def curve_thm3_schedule(
    env: UtilityDuelingEnvironment,
    *,
    n_trials: int,
    rng: RNGLike,
    horizon: int,
    epsilon: float = math.inf,
    play_count_scale: float = 1.0,
) -> dict[str, FloatArray]:
    """Draw :func:`thm3_schedule_bound` for ``env`` (d, K, and its discretisation gap) as a study line.

    Privacy
    -------
    Not applicable: a deterministic theory curve that reads no feedback.

    References
    ----------
    Saha & Asi (2024), Theorem 3.
    """
    if not isinstance(env, UtilityDuelingEnvironment):
        raise InvalidParameterError(f"env must be a UtilityDuelingEnvironment; got {type(env).__name__}")
    gap = float(env.reward_gaps.min())  # r(x*) − best net arm: the discretisation actually present
    value = thm3_schedule_bound(horizon, env.dim, env.n_arms, epsilon, play_count_scale=play_count_scale)
    return _curve(value + gap * 2 * horizon, n_trials)
