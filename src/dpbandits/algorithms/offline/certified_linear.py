"""Certified per-instance privacy loss of the linear KL policy at one public context.

One sample of π̃(·|x; D) ∝ π0·e^{u_D/η}, with u_D(a) = θ̂_Dᵀφ_a − β0·‖φ_a‖_{Σ_D⁻¹}, has the per-instance
pure loss ε*(D) = sup_{D'} max_a |log π̃(a|x; D') − log π̃(a|x; D)| over the neighbours D' of D. This
module brackets ε*(D) between the loss of neighbours it finds and a certified upper bound:

* the removals are finitely many, and each is an exact rank-one update (Sherman–Morrison);
* the additions range over a continuum — a record of norm <= 1 with any reward in [0, R] — and are
  covered by branch and bound over boxes of records (:mod:`.loss_bracket`), with a sound interval
  bound on every candidate's change of utility over a box.

The gap between the two numbers is the looseness of the certified value; it closes as the search
refines (``rtol``) within its budget (``max_boxes``). The RLHF policy's counterpart is
:mod:`.certified_rlhf`.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np
from numpy.typing import ArrayLike

from dpbandits._core.errors import InvalidParameterError
from dpbandits._core.typing import FloatArray
from dpbandits.algorithms.offline.loss_bracket import (
    ROUNDING_MARGIN,
    LossBracket,
    RecordBox,
    active_actions,
    addition_penalty_bounds,
    branch_and_bound,
    cholesky_solve,
    interval_loss_bounds,
    penalty_change,
    point_loss,
)
from dpbandits.envs.logged import FEATURE_NORM_TOLERANCE, LoggedContextualData

__all__ = ["EllipticalFit", "LinearFit", "linear_loss_bracket"]

_CHUNK = 2048  # removals evaluated together (bounds the temporary memory)


class EllipticalFit(Protocol):
    """What the certified accountants read of a fitted elliptical KL policy."""

    eta: float
    beta0: float
    ridge: float
    theta_: FloatArray
    covariance_: FloatArray
    cholesky_: FloatArray
    lambda_min_: float

    def _check_query(self, action_features: ArrayLike) -> FloatArray: ...

    def log_probabilities(self, action_features: ArrayLike, reference: ArrayLike | None = None) -> FloatArray:
        """Log π̃(a|x; D) of the candidates."""


class LinearFit(EllipticalFit, Protocol):
    """What :func:`linear_loss_bracket` reads of a fitted linear policy."""

    reward_bound: float


# ------------------------------------------------------------------------------------ linear
def _check_records(policy: LinearFit, records: tuple[ArrayLike, ArrayLike]) -> tuple[FloatArray, FloatArray]:
    """The logged records, refused unless they give the policy's Σ_D and θ̂ (up to rounding)."""
    data = LoggedContextualData(records[0], records[1], policy.reward_bound)
    phi, r = data.features, data.rewards
    covariance = policy.ridge * np.eye(phi.shape[1]) + phi.T @ phi if phi.size else None
    scale = max(1.0, float(np.abs(policy.covariance_).max()))
    if (covariance is None or covariance.shape != policy.covariance_.shape
            or not np.allclose(covariance, policy.covariance_, rtol=1e-9, atol=1e-9 * scale)
            or not np.allclose(cholesky_solve(policy.cholesky_, phi.T @ r), policy.theta_, rtol=1e-7, atol=1e-9)):
        raise InvalidParameterError(
            "records must be the (features, rewards) the policy was fitted on: the certified loss enumerates "
            "their removals; got records whose Sigma_D or theta_hat differ from the policy's"
        )
    return phi, r


def linear_loss_bracket(policy: LinearFit, action_features: ArrayLike, records: tuple[ArrayLike, ArrayLike],
                        reference: ArrayLike | None = None, *, rtol: float = 0.02,
                        max_boxes: int = 20_000) -> LossBracket:
    """Bracket the per-instance loss of one sample of a fitted :class:`KLLinearPolicy` at one context.

    Parameters
    ----------
    policy : KLLinearPolicy
    action_features : array_like of shape (K, d)
        φ(x, a) of the candidates.
    records : (array_like of shape (n, d), array_like of shape (n,))
        The features and rewards the policy was fitted on (checked against Σ_D and θ̂).
    reference : array_like of shape (K,), optional
        π0(·|x); uniform when omitted.
    rtol : float, default 0.02
        The search stops when the certified bound is within (1 + rtol) of the loss found.
    max_boxes : int, default 20000
        Budget of boxes of added records.

    Returns
    -------
    LossBracket

    Privacy
    -------
    Removing record i (s = φ_iᵀΣ⁻¹φ_i < 1, e = r_i − φ_iᵀθ̂, p_a = φ_aᵀΣ⁻¹φ_i, g_a = ‖φ_a‖_{Σ⁻¹})
    changes u(a) by −e·p_a/(1 − s) − β0(√(g_a² + p_a²/(1 − s)) − g_a), exactly. Adding (φ, r) changes
    it by e·p_a/(1 + s) + β0(g_a − √(g_a² − p_a²/(1 + s))) with e = r − φᵀθ̂ and p, s of the new φ;
    over a box of (φ, r) the linear forms p_a, φᵀθ̂ and the quadratic s are bounded exactly or from
    outside, which bounds every δu(a) and hence the loss (:func:`.loss_bracket.interval_loss_bounds`).

    References
    ----------
    Zhang et al. (2025), eq. (10) (the policy); Sherman & Morrison (1950) (the rank-one updates).
    """
    features = policy._check_query(action_features)
    phi, rewards = _check_records(policy, records)
    log_p_all = policy.log_probabilities(features, reference)
    active = active_actions(log_p_all)
    features, log_p = features[active], log_p_all[active]
    if features.shape[0] < 2:
        return LossBracket(0.0, 0.0, "one action has all the probability", 0, True)
    chol, theta, eta, beta0 = policy.cholesky_, policy.theta_, policy.eta, policy.beta0
    a_mat = cholesky_solve(chol, features.T)  # columns Σ⁻¹φ_a
    g = np.sqrt(np.einsum("ja,ja->a", features.T, a_mat))
    # removals, exactly
    best, worst = 0.0, "none"
    for start in range(0, phi.shape[0], _CHUNK):
        rows, r = phi[start:start + _CHUNK], rewards[start:start + _CHUNK]
        s = np.einsum("ij,ji->i", rows, cholesky_solve(chol, rows.T))
        p = rows @ a_mat
        e = r - rows @ theta
        du = -(e / (1.0 - s))[:, None] * p + beta0 * penalty_change(g, p, s[:, None], -1.0)
        losses = point_loss(log_p, du / eta)
        i = int(np.argmax(losses))
        if losses[i] > best:
            best, worst = float(losses[i]), f"remove record {start + i}"
    removal = LossBracket(best * (1.0 + ROUNDING_MARGIN), best, worst, 0, True)
    # additions: branch and bound over (φ, r) in the unit ball × [0, R]
    d, big_r = phi.shape[1], policy.reward_bound
    radius = 1.0 + FEATURE_NORM_TOLERANCE
    inverse = cholesky_solve(chol, np.eye(d))
    s_top = radius**2 / policy.lambda_min_

    def exact(z: FloatArray, r: FloatArray) -> FloatArray:
        s = np.einsum("ij,jk,ik->i", z, inverse, z)
        p = z @ a_mat
        e = r - z @ theta
        du = (e / (1.0 + s))[:, None] * p + beta0 * penalty_change(g, p, s[:, None], 1.0)
        return point_loss(log_p, du / eta)

    def evaluate(lows: FloatArray, highs: FloatArray) -> tuple[FloatArray, FloatArray]:
        box = RecordBox(lows, highs, d, radius)
        p_lo, p_hi = box.linear(a_mat)
        q_lo, q_hi = box.linear(theta)
        s_lo, s_hi = box.quadratic(inverse, s_top)
        bound = g * np.sqrt(s_hi)[:, None]  # |p_a| <= g_a·√s (Cauchy–Schwarz)
        p_lo, p_hi = np.maximum(p_lo, -bound), np.minimum(p_hi, bound)
        e_lo, e_hi = lows[:, d] - q_hi, highs[:, d] - q_lo
        ratios = np.stack([p_lo / (1.0 + s_lo[:, None]), p_lo / (1.0 + s_hi[:, None]),
                           p_hi / (1.0 + s_lo[:, None]), p_hi / (1.0 + s_hi[:, None])])
        t_lo, t_hi = ratios.min(axis=0), ratios.max(axis=0)
        products = np.stack([e_lo[:, None] * t_lo, e_lo[:, None] * t_hi, e_hi[:, None] * t_lo, e_hi[:, None] * t_hi])
        pen_lo, pen_hi = addition_penalty_bounds(g, p_lo, p_hi, s_lo, s_hi)
        x_lo = (products.min(axis=0) + beta0 * pen_lo) / eta
        x_hi = (products.max(axis=0) + beta0 * pen_hi) / eta
        upper, _ = interval_loss_bounds(log_p, x_lo, x_hi)
        found = np.max([exact(box.point, r) for r in (lows[:, d], highs[:, d], 0.5 * (lows[:, d] + highs[:, d]))],
                       axis=0)
        return np.where(box.feasible, upper, -np.inf), np.where(box.feasible, found, -np.inf)

    def describe(centre: FloatArray) -> str:
        z = centre[:d] * min(1.0, radius / max(float(np.linalg.norm(centre[:d])), 1e-300))
        r0 = max((0.0, big_r), key=lambda v: float(exact(z[None, :], np.array([v]))[0]))
        return f"add a record with features {np.round(z, 4).tolist()} and reward {r0:g}"

    low = np.concatenate([-np.full(d, radius), [0.0]])
    high = np.concatenate([np.full(d, radius), [big_r]])
    scale = np.concatenate([np.full(d, 2.0 * radius), [big_r]])
    addition = branch_and_bound(evaluate, low, high, scale, rtol=rtol, max_boxes=max_boxes, describe=describe,
                                known=removal.lower)
    return removal.merge(addition)
