"""GOptimal-DPDB's settings and statistics: phase lengths, the private logistic MLE, the guarantee, play counts.

What the agent and its simulation (:mod:`dpbandits.algorithms.dueling.goptimal_dpdb`, which
re-exports every public name here) compute from a phase's design and its released wins; nothing
here holds state.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import special

from dpbandits._core.errors import InvalidParameterError
from dpbandits._core.typing import FloatArray, IntArray
from dpbandits._core.validation import (
    check_array,
    check_epsilon,
    check_in_interval,
    check_int,
    check_one_of,
    check_positive_float,
)
from dpbandits.privacy.guarantees import Neighbouring, NonPrivate, PureDP
from dpbandits.privacy.noise import NoiseBackend

__all__ = [
    "REFERENCE",
    "UNIT",
    "GOptimalSettings",
    "goptimal_dpdb_guarantee",
    "phase_play_count",
    "private_logistic_mle",
]

UNIT = "one preference label (one round's feedback, the user's whole response function)"
REFERENCE = (
    "Saha & Asi (2024), DP-Dueling, Algorithm 2 and Theorem 3 (GOptimal-DPDB, privacy part); "
    "reconstruction, paper errata DUEL-10"
)


def _sigmoid_slope(u: float) -> float:
    s = float(special.expit(u))
    return s * (1.0 - s)  # σ'(u) = σ(u)(1 − σ(u))


@dataclass(frozen=True)
class GOptimalSettings:
    """Validated parameters of GOptimal-DPDB.

    Attributes
    ----------
    n_arms, horizon : int
    epsilon : float
    failure_probability : float
        δ (default 1/T); not a DP parameter.
    kappa : float
        κ, lower bound on the slope of σ.
    phase_union : int
        L_T = ⌈log₂T⌉ (at least 1).
    fw_tol, c_elim, play_count_scale : float
    lambda_min_check : {"warn", "enforce", "off"}
        Li, Lu & Zhou's λ_min condition: recorded in the phase diagnostics ("warn",
        default), enforced by raising N_ℓ ("enforce"), or not computed ("off").
    """

    n_arms: int
    horizon: int
    epsilon: float
    failure_probability: float
    kappa: float
    phase_union: int
    fw_tol: float
    c_elim: float
    play_count_scale: float
    lambda_min_check: str = "warn"


def _settings(
    n_arms: int,
    horizon: int,
    epsilon: float,
    failure_probability: float | None,
    kappa: float | str,
    theta_bound: float,
    fw_tol: float,
    c_elim: float,
    play_count_scale: float,
    lambda_min_check: str = "warn",
) -> GOptimalSettings:
    k = check_int(n_arms, "n_arms", minimum=2)
    t = check_int(horizon, "horizon", minimum=1)
    eps = check_epsilon(epsilon, allow_inf=True)
    s_theta = check_positive_float(theta_bound, "theta_bound")
    if isinstance(kappa, str):
        rule = check_one_of(kappa, "kappa", ("slope_at_theta", "li_et_al"))
        # κ = σ'(2·S_θ) (default) or σ'(2·(S_θ + 1)) (Li, Lu & Zhou 2017, Assumption 1)
        kappa_value = _sigmoid_slope(2 * s_theta) if rule == "slope_at_theta" else _sigmoid_slope(2 * (s_theta + 1))
        if not (kappa_value > 0.0 and math.isfinite(1.0 / kappa_value)):
            raise InvalidParameterError(
                f"theta_bound = {s_theta:.4g} is too large: κ = σ'(2·theta_bound) is 0 in floating point "
                "(keep theta_bound below 18)"
            )
    else:
        kappa_value = check_in_interval(kappa, "kappa", 0.0, 0.25, closed="right")
    if failure_probability is None:
        delta = 1.0 / t if t > 1 else 0.5  # δ = 1/T (the paper's choice in Theorem 3)
    else:
        delta = check_in_interval(failure_probability, "failure_probability", 0.0, 1.0, closed="neither")
    return GOptimalSettings(
        n_arms=k,
        horizon=t,
        epsilon=eps,
        failure_probability=delta,
        kappa=kappa_value,
        phase_union=max(1, math.ceil(math.log2(t))),
        fw_tol=check_positive_float(fw_tol, "fw_tol"),
        c_elim=check_positive_float(c_elim, "c_elim"),
        play_count_scale=check_positive_float(play_count_scale, "play_count_scale"),
        lambda_min_check=check_one_of(lambda_min_check, "lambda_min_check", ("warn", "enforce", "off")),
    )


def phase_play_count(settings: GOptimalSettings, phase: int, g_value: float, support_size: int) -> float:
    """N_ℓ of errata DUEL-10 (times ``play_count_scale``).

    N_ℓ = 9·g·ln(6K²L_T/δ)/(κ²ε_ℓ²) + 1[ε<∞]·2·m·g·ln(2·m·L_T/δ)/(κ·ε·ε_ℓ), ε_ℓ = 2^{−ℓ}.
    """
    accuracy = 2.0 ** (-phase)  # ε_ℓ
    k, lt, delta, kappa = settings.n_arms, settings.phase_union, settings.failure_probability, settings.kappa
    statistical = 9 * g_value * math.log(6 * k * k * lt / delta) / (kappa**2 * accuracy**2)
    privacy = 0.0
    if math.isfinite(settings.epsilon):
        m = support_size
        denominator = kappa * settings.epsilon * accuracy  # underflows to 0 for a tiny ε: N_ℓ = +inf (capped later)
        privacy = 2 * m * g_value * math.log(2 * m * lt / delta) / denominator if denominator > 0 else math.inf
    return (statistical + privacy) * settings.play_count_scale


def private_logistic_mle(
    coordinates: FloatArray, counts: FloatArray, wins: FloatArray, *, max_iter: int = 100
) -> FloatArray:
    """Minimise Σ_s t_s·softplus(y_sᵀφ) − W̄_s·y_sᵀφ by Newton's method with Armijo backtracking.

    The stationarity condition is the paper's private MLE equation Σ_s (t_s·σ(y_sᵀφ) − W̄_s)·y_s = 0.
    With 0 < W̄_s < t_s and {y_s} spanning the coordinate space the loss is strictly convex and
    coercive, so the root exists and is unique.

    Parameters
    ----------
    coordinates : ndarray (m, r)
        y_s: the support differences in span coordinates.
    counts : ndarray (m,)
        t_s > 0.
    wins : ndarray (m,)
        W̄_s in (0, t_s).

    Returns
    -------
    ndarray (r,)
        φ̂.

    Privacy
    -------
    Post-processing only: private when ``wins`` are already privatised (W̄ = clip(W + Lap(1/ε))).

    References
    ----------
    Saha & Asi (2024), Algorithm 2 (private MLE) (Newton with
    Armijo backtracking, the clipping that makes the root exist).
    """
    y = check_array(coordinates, "coordinates", ndim=2)
    t = check_array(counts, "counts", ndim=1)
    w = check_array(wins, "wins", ndim=1)

    def loss(phi: FloatArray) -> float:
        u = y @ phi
        return float(np.sum(t * np.logaddexp(0.0, u) - w * u))

    phi = np.zeros(y.shape[1])
    current = loss(phi)
    for _ in range(max_iter):
        s = special.expit(y @ phi)
        gradient = y.T @ (t * s - w)  # Σ (t·σ − W̄)·y
        hessian = (y * (t * s * (1.0 - s))[:, None]).T @ y  # Σ t·σ(1 − σ)·y yᵀ
        step = np.linalg.lstsq(hessian, gradient, rcond=None)[0]
        rate, slope = 1.0, float(gradient @ step)
        while rate > 1e-12:
            candidate = loss(phi - rate * step)
            if candidate <= current - 1e-4 * rate * slope:
                break
            rate /= 2.0
        phi = phi - rate * step
        current = loss(phi)
        if np.linalg.norm(rate * step) < 1e-12:
            break
    return np.asarray(phi, dtype=np.float64)


def goptimal_dpdb_guarantee(epsilon: float) -> PureDP:
    """ε-DP for one preference label: each label enters one Laplace(1/ε) aggregate, once (disjoint).

    Privacy
    -------
    Returns the pure ε-DP guarantee (central model); ``inf`` gives the non-private twin's.

    References
    ----------
    Saha & Asi (2024), Theorem 3 (privacy part).
    """
    eps = check_epsilon(epsilon, allow_inf=True)
    if math.isinf(eps):
        return NonPrivate(unit=UNIT, neighbouring=Neighbouring.LABEL_ONLY, reference=REFERENCE,
                               reason="epsilon = inf: the non-private twin uses exact counts")
    return PureDP(epsilon=eps, unit=UNIT, neighbouring=Neighbouring.LABEL_ONLY, reference=REFERENCE,
                  reason="per-(phase, pair) Laplace(1/ε) sums of disjoint labels, sensitivity 1 "
                         "(parallel composition; plays are post-processing of earlier phases)")


def _span_basis(z: FloatArray) -> tuple[FloatArray, int]:
    """Orthonormal basis (d, r) of span of the rows of z (singular values > 1e-10·σ_max)."""
    _, sigma, vt = np.linalg.svd(z, full_matrices=False)
    rank = int(np.sum(sigma > 1e-10 * sigma[0])) if sigma.size and sigma[0] > 0 else 0
    return vt[:rank].T, rank


def _play_counts(weights: FloatArray, total: float, horizon: int) -> IntArray:
    """t_ℓ(x, y) = ⌈π_ℓ(x, y)·N_ℓ⌉, each capped at T + 1.

    A phase starts at a round >= 0, so a pair played more than T times in a row is never finished
    within the horizon: capping at T + 1 changes no play and no release, and keeps the counts
    (hence the schedule) bounded by the horizon even when N_ℓ is huge or infinite (tiny ε).
    """
    return np.fmin(np.ceil(weights * total), float(horizon + 1)).astype(np.int64)


def _lambda_min_condition(coordinates: FloatArray, counts: IntArray, settings: GOptimalSettings) -> tuple[float, float]:
    """(λ_min(V_ℓ), 8/κ⁴·(r² + ln(1/δ₁))) with V_ℓ = Σ_s t_s·y_s y_sᵀ in span coordinates, δ₁ = δ/(6K²L_T)."""
    gram = (coordinates * counts.astype(np.float64)[:, None]).T @ coordinates
    log_inv_delta1 = math.log(6 * settings.n_arms**2 * settings.phase_union / settings.failure_probability)
    required = 8.0 / settings.kappa**4 * (coordinates.shape[1] ** 2 + log_inv_delta1)
    return float(np.linalg.eigvalsh(gram)[0]), required


def _release_wins(noise: NoiseBackend, wins: IntArray, scale: float) -> FloatArray:
    """W̃ = W + discrete Lap(1/ε) on the integer per-pair win counts (exact integers; W itself if ε = ∞)."""
    if scale == 0.0:
        return wins.astype(np.float64)
    return noise.add_discrete_laplace(wins, scale).astype(np.float64)
