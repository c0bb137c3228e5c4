"""Privacy accountants of the KL-regularised offline policies, one formula per theorem.

Two scopes (``scope=``):

* ``"instance"`` (default) — the papers' **per-instance** (data-dependent) guarantees: they hold for
  the given dataset D and all its neighbours, not for every pair of neighbouring datasets. Their
  printed form says so (:data:`~dpbandits.privacy.guarantees.PER_INSTANCE_NOTE`), and publishing ε(D) itself leaks information
  about D.
* ``"domain"`` — ordinary DP over a **declared public domain** of datasets (a per-arm count floor,
  a floor on λ_min(Σ_D), a bound on n; for RLHF label DP, the public comparisons themselves): one
  (ε, δ) for every pair of neighbouring datasets in the domain, calibrated only from public
  quantities. The policies refuse data outside their declared domain.

Variants:

* ``"corrected"`` (default) — valid bounds: the paper's formulas where they are right (Theorem 1 and
  2 pure), the corrected bounds of the paper errata elsewhere (Theorem 1′, the corrected approximate recipe, Theorems 3′ and 4′);
* ``"paper"`` — the printed formulas with the unambiguous typo fixes ([FIX]), or verbatim with
  ``verbatim=True``; a :class:`PaperVariantWarning` is issued where the claim is known to be false;
* ``"refined"`` (linear, RLHF) — refinements that are still valid but carry no stated factor to the
  exact loss (linear: C2·γ_max/η; RLHF label: the range refinement);
* ``"tight"`` — within a stated factor of the exact loss: MAB, the exact per-instance loss (or the
  exact domain sensitivity); linear and RLHF (per instance, pure), a certified upper bound on the
  supremum over every neighbour with the loss of the worst neighbour found printed beside it
  (:mod:`.certified_linear`, :mod:`.certified_rlhf`), so the factor is visible in the guarantee's reference.

A guarantee whose precondition fails is ε = ∞ (δ = 1 for approximate kinds) with the reason, or an
:class:`InvalidParameterError` with ``strict=True``. δ is computed in log space and capped at 1.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import replace
from typing import Any, Protocol

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import logsumexp

from dpbandits._core.errors import InvalidParameterError, PaperVariantWarning
from dpbandits._core.typing import FloatArray, IntArray
from dpbandits._core.validation import (
    check_in_interval,
    check_int,
    check_one_of,
    check_positive_float,
)
from dpbandits.privacy.accounting import advanced_composition, basic_composition
from dpbandits.privacy.guarantees import ApproxDP, Guarantee, Neighbouring, PureDP

__all__ = [
    "PAPER",
    "SCOPES",
    "UNIT_LINEAR",
    "UNIT_MAB",
    "UNIT_RLHF_LABEL",
    "UNIT_RLHF_RECORD",
    "FittedElliptical",
    "FittedLinear",
    "FittedMAB",
    "FittedRLHF",
    "account_linear",
    "account_mab",
    "account_rlhf",
    "corollary1_paper",
    "corollary2_paper",
    "corollary3_paper",
    "elliptical_corrected_delta",
    "inexact_policy",
    "kappa_b",
    "mab_domain_sensitivity",
    "mab_exact_loss",
    "rejection_sampling_guarantee",
    "repeated_sampling",
    "theorem1_approx_paper",
    "theorem1_corrected_delta",
    "theorem1_pure_epsilon",
    "theorem2_bracket",
    "theorem2_pure_epsilon",
    "theorem3_label_epsilon",
    "theorem4_add_remove_epsilon",
]


# ----------------------------------------------------------------- what the accountants read
# The accountants read a fitted policy through these protocols, so they depend on no policy class
# (the policies import this module to compute their guarantees).
class FittedMAB(Protocol):
    """What :func:`account_mab` reads of a fitted :class:`~dpbandits.algorithms.offline.KLMABPolicy`."""

    eta: float
    beta0: float
    n_arms: int
    reward_bound: float
    min_count: int | None
    log_reference: FloatArray
    counts_: IntArray
    reward_sums_: FloatArray
    reward_minima_: FloatArray
    reward_maxima_: FloatArray
    log_probabilities_: FloatArray

    def _check_fitted(self) -> None: ...


class FittedElliptical(Protocol):
    """What the linear and RLHF accountants read of a fitted elliptical KL policy."""

    eta: float
    beta0: float
    ridge: float
    lambda_min_: float
    n_features_in_: int
    n_records_: int
    min_eigenvalue: float | None
    theta_: FloatArray
    covariance_: FloatArray
    cholesky_: FloatArray

    def _check_fitted(self) -> None: ...

    def _check_query(self, action_features: ArrayLike) -> FloatArray: ...

    def penalties(self, action_features: ArrayLike) -> FloatArray:
        """Γ(x, a) = ‖φ(x, a)‖_{Σ_D⁻¹} of each candidate."""

    def log_probabilities(self, action_features: ArrayLike, reference: ArrayLike | None = None) -> FloatArray:
        """Log π̃(a|x; D) of the candidates."""


class FittedLinear(FittedElliptical, Protocol):
    """What :func:`account_linear` reads of a fitted :class:`~dpbandits.algorithms.offline.KLLinearPolicy`."""

    reward_bound: float
    max_records: int | None


class FittedRLHF(FittedElliptical, Protocol):
    """What :func:`account_rlhf` reads of a fitted :class:`~dpbandits.algorithms.offline.KLRLHFPolicy`."""

    norm_bound: float
    solver_tolerance: float

    @property
    def max_difference_leverage_(self) -> float:
        """max_i ‖z_i‖_{M⁻¹}."""

    @property
    def comparisons_(self) -> tuple[FloatArray, FloatArray]:
        """(z_i, y_i) of the fitted data."""

    @property
    def total_multiplier_(self) -> float:
        """n·ν, the multiplier of the constraint ‖θ‖ <= B at the fit."""

    def solver_divergence(self, action_features: ArrayLike | None, solver_error: float | None = None) -> float:
        """ε̂: D∞ between the computed and the exact policy at a context."""

    def feature_range_metric(self, features: ArrayLike) -> float:
        """max_{a,a'} ‖φ_a − φ_a'‖_{M⁻¹} over the candidates."""

PAPER = "Zhang, Panaganti, Shi, Ziani, Wierman (2025), KL-regularization itself is DP"
UNIT_MAB = "one logged record (arm, reward)"
UNIT_LINEAR = "one logged record (features, reward)"
UNIT_RLHF_LABEL = "one preference label (features public)"
UNIT_RLHF_RECORD = "one preference record (feature pair, label)"

VARIANTS = ("corrected", "paper", "refined", "tight")
_SMALLEST_DELTA = math.ulp(0.0)  # 5e-324, an upper bound on any positive δ that underflows
KINDS = ("pure", "approx")
SCOPES = ("instance", "domain")

_NO_CONTEXT: FloatArray = np.empty((0, 0))
"""Stands for "every context" (no action features): only context-free bounds are computed then."""


# ---------------------------------------------------------------------------------------- helpers
def _cap_log_delta(log_delta: float) -> float:
    """δ = exp(min(0, log δ)): the formulas can exceed 1 (errata KL-37).

    A finite log δ below the float64 range is rounded *up* to the smallest positive float, never to
    0: δ = 0 would claim pure ε-DP, which is false when some mass escapes the bound (e.g. an arm with
    N(a) = 0 whose probability is e^{−3000} on a neighbour).
    """
    if log_delta == -math.inf:
        return 0.0
    return max(float(math.exp(min(0.0, log_delta))), _SMALLEST_DELTA)


def _paper_warning(claim: str) -> None:
    warnings.warn(
        f"variant='paper': {claim} is known to be invalid; "
        "the number returned is the paper's formula, not a valid guarantee",
        PaperVariantWarning,
        stacklevel=3,
    )


def _result(
    kind: str,
    epsilon: float,
    delta: float,
    *,
    unit: str,
    neighbouring: Neighbouring,
    reference: str,
    reason: str = "",
    strict: bool = False,
    domain: str | None = None,
) -> Guarantee:
    """A scoped guarantee: per-instance, or (``domain`` = its description) over a public domain."""
    if strict and not math.isfinite(epsilon):
        raise InvalidParameterError(f"precondition of {reference} fails: {reason}")
    if not math.isfinite(epsilon):
        delta = 1.0 if kind == "approx" else 0.0
    per_instance = domain is None
    if kind == "pure":
        return PureDP(epsilon=epsilon, unit=unit, neighbouring=neighbouring, reference=reference,
                      per_instance=per_instance, reason=reason, domain=domain or "")
    if delta >= 1.0 and not reason:
        reason = "delta capped at 1: the bound is vacuous"
    return ApproxDP(epsilon=epsilon, delta=min(1.0, delta), unit=unit, neighbouring=neighbouring,
                    reference=reference, per_instance=per_instance, reason=reason, domain=domain or "")


def _check_scope(scope: str, kind: str) -> bool:
    """Validate ``scope``; return whether it is ``"domain"`` (which gives pure guarantees only)."""
    check_one_of(scope, "scope", SCOPES)
    if scope == "domain" and kind != "pure":
        raise InvalidParameterError(
            f"scope='domain' gives pure guarantees only (kind='pure'); got kind={kind!r}"
        )
    return scope == "domain"


def _common(eta: float, beta0: float) -> tuple[float, float]:
    return check_positive_float(eta, "eta"), check_in_interval(beta0, "beta0", 0.0, math.inf, closed="left")


# ------------------------------------------------------------------------------ MAB (Theorem 1)
def theorem1_pure_epsilon(n_min: int, *, reward_bound: float, beta0: float, eta: float) -> float:
    """Theorem 1, eq. (9): ε0 = (4R/(N_min − 1) + β0/(N_min − 1)^{3/2})/η; ∞ if N_min <= 1.

    Examples
    --------
    >>> round(theorem1_pure_epsilon(11, reward_bound=1.0, beta0=1.0, eta=0.1), 6)
    4.316228
    """
    eta, beta0 = _common(eta, beta0)
    r = check_positive_float(reward_bound, "reward_bound")
    n_min = check_int(n_min, "n_min", minimum=0)
    if n_min <= 1:
        return math.inf
    m = n_min - 1
    # ε0 = (4R/(N_min−1) + β0/(N_min−1)^{3/2}) / η
    return (4.0 * r / m + beta0 / m**1.5) / eta


def theorem1_approx_paper(
    n0: float, *, n_max: int, n_actions: int, reward_bound: float, beta0: float, eta: float
) -> tuple[float, float]:
    """Theorem 1 (approximate part) as printed, with N0 → ⌊N0⌋ (errata KL-9). **Invalid** (C1, C2).

    ε = (4R/N0 + β0/N0^{3/2})/η,  δ = |A|·exp(4R/(ηN0) + (β0/η)(1/√N_max − 1/√N0 + 1/N0^{3/2})).

    Returns
    -------
    (float, float)
        (ε, δ), δ capped at 1; (∞, 1) if ⌊N0⌋ < 1 or N_max < 1.

    Examples
    --------
    >>> eps, delta = theorem1_approx_paper(625, n_max=10_000, n_actions=2, reward_bound=1, beta0=0.5, eta=0.001)
    >>> round(eps, 3), f"{delta:.6e}"
    (6.432, '3.801849e-04')
    """
    eta, beta0 = _common(eta, beta0)
    r = check_positive_float(reward_bound, "reward_bound")
    k = check_int(n_actions, "n_actions", minimum=1)
    n0_eff = math.floor(check_positive_float(n0, "n0"))
    n_max = check_int(n_max, "n_max", minimum=0)
    if n0_eff < 1 or n_max < 1:
        return math.inf, 1.0
    eps = (4.0 * r / n0_eff + beta0 / n0_eff**1.5) / eta
    # log δ = log|A| + 4R/(ηN0) + (β0/η)(1/√N_max − 1/√N0 + 1/N0^{3/2})
    log_delta = (math.log(k) + 4.0 * r / (eta * n0_eff)
                 + beta0 / eta * (1.0 / math.sqrt(n_max) - 1.0 / math.sqrt(n0_eff) + 1.0 / n0_eff**1.5))
    return eps, _cap_log_delta(log_delta)


def corollary1_paper(
    k: float, *, n_max: int, n_actions: int, reward_bound: float, beta0: float, eta: float,
    verbatim: bool = False,
) -> tuple[float, float]:
    """Corollary 1: Theorem 1 with N0 = N_max/k. **Invalid** approximate claim (C1).

    By default N0 = ⌊N_max/k⌋ and the δ term 4kR/(ηN_max) keeps its 1/η (errata KL-10, KL-11);
    ``verbatim=True`` evaluates the printed formulas (real N0, 4kR/N_max without 1/η).

    Examples
    --------
    >>> corollary1_paper(16, n_max=10_000, n_actions=2, reward_bound=1, beta0=0.5, eta=0.001, verbatim=True)[1]
    6.357548...e-07
    """
    eta, beta0 = _common(eta, beta0)
    kk = check_positive_float(k, "k")
    n_max = check_int(n_max, "n_max", minimum=0)
    if not verbatim:
        if n_max < 1:
            return math.inf, 1.0
        return theorem1_approx_paper(n_max / kk, n_max=n_max, n_actions=n_actions,
                                     reward_bound=reward_bound, beta0=beta0, eta=eta)
    r = check_positive_float(reward_bound, "reward_bound")
    na = check_int(n_actions, "n_actions", minimum=1)
    if n_max < 1:
        return math.inf, 1.0
    # ε = (4kR + k^{3/2}β0/√N_max)/(ηN_max)
    eps = (4.0 * kk * r + kk**1.5 * beta0 / math.sqrt(n_max)) / (eta * n_max)
    # printed: log δ = log|A| − (β0/η)(√k − 1)/√N_max + 4kR/N_max + (β0/η)k^{3/2}/N_max^{3/2}
    log_delta = (math.log(na) - beta0 / eta * (math.sqrt(kk) - 1.0) / math.sqrt(n_max)
                 + 4.0 * kk * r / n_max + beta0 / eta * kk**1.5 / n_max**1.5)
    return eps, _cap_log_delta(log_delta)


def theorem1_corrected_delta(
    counts: ArrayLike,
    reward_sums: ArrayLike,
    log_reference: ArrayLike,
    n0: float,
    *,
    reward_bound: float,
    beta0: float,
    eta: float,
) -> tuple[float, float]:
    """Theorem 1′ (corrected approximate DP for the MAB), per instance.

    Ī = {a : N(a) <= N0}, I = the rest. Bounds the utility of each arm over D and all its add/remove
    neighbours (one arm changes per neighbour), then
    δ0 = X/(X + Y) with X = Σ_Ī π0·e^{u_ub/η}, Y = Σ_I π0·e^{u_lb/η};
    ε = (4R/N0 + β0/N0^{3/2})/η and δ = min(1, e^ε·δ0) (Lemma 1′).

    Parameters
    ----------
    counts, reward_sums : array_like of shape (K,)
        N(a; D) and S(a; D).
    log_reference : array_like of shape (K,)
        log π0 (``-inf`` for arms π0 never chooses).
    n0 : int
        N0 >= 1 (a non-integer is floored; < 1 gives (∞, 1)).
    reward_bound, beta0, eta : float

    Returns
    -------
    (float, float)
        (ε, δ).
    """
    eta, beta0 = _common(eta, beta0)
    r = check_positive_float(reward_bound, "reward_bound")
    n0_eff = math.floor(check_positive_float(n0, "n0"))
    if n0_eff < 1:
        return math.inf, 1.0
    n = np.asarray(counts, dtype=np.float64)
    s = np.asarray(reward_sums, dtype=np.float64)
    log_pi0 = np.asarray(log_reference, dtype=np.float64)
    eps = (4.0 * r / n0_eff + beta0 / n0_eff**1.5) / eta
    active = np.isfinite(log_pi0)
    low = (n <= n0_eff) & active
    high = (n > n0_eff) & active
    if not np.any(low):
        return eps, 0.0
    if not np.any(high):
        return eps, 1.0
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = np.where(n > 0, s / np.where(n > 0, n, 1.0), 0.0)
        # upper bound of r̄ over D and its neighbours: keep, add R, or remove a 0 reward (N >= 2)
        add_r = (n * mean + r) / (n + 1.0)
        remove_zero = np.where(n >= 2, n * mean / np.maximum(n - 1.0, 1.0), -np.inf)
        r_ub = np.minimum(r, np.maximum(np.maximum(mean, add_r), remove_zero))
        # u_ub = r_ub − β0/√(N+1); an arm with N = 0 gets R − β0 (a single added point of reward R)
        u_ub = np.where(n >= 1, r_ub - beta0 / np.sqrt(n + 1.0), r - beta0)
        # lower bound of r̄ on I (N >= 2): remove an R reward, or add a 0 reward
        r_lb = np.maximum(0.0, np.minimum((n * mean - r) / np.maximum(n - 1.0, 1.0), n * mean / (n + 1.0)))
        u_lb = r_lb - beta0 / np.sqrt(np.maximum(n - 1.0, 1.0))
    log_x = float(logsumexp(log_pi0[low] + u_ub[low] / eta))
    log_y = float(logsumexp(log_pi0[high] + u_lb[high] / eta))
    # log δ0 = log X − log(X + Y)
    log_delta0 = log_x - float(np.logaddexp(log_x, log_y))
    return eps, _cap_log_delta(eps + log_delta0)


def mab_domain_sensitivity(min_count: int, *, reward_bound: float, beta0: float) -> float:
    """Δ(m) = R/(m + 1) + β0·(1/√m − 1/√(m + 1)): the exact utility sensitivity over a count floor m.

    Over the domain {D : N(a; D) >= m for every arm} with rewards in [0, R], a pair of add/remove
    neighbours that both lie in the domain changes one arm's utility u = r̄ − β0/√N, between
    counts N and N + 1 with N >= m. Adding a reward r0 gives
    δu = (r0 − r̄)/(N + 1) + β0(1/√N − 1/√(N + 1)) with |r0 − r̄| <= R; its largest magnitude is at
    N = m, r̄ = 0, r0 = R, which is attained. So Δ(m) = sup |u(a; D) − u(a; D')| over in-domain pairs
    (about a quarter of App. B's 2R/(m − 1) + β0/(2(m − 1)^{3/2}), which also covers neighbours that
    leave the domain). Finite for every m >= 1.

    Examples
    --------
    >>> round(mab_domain_sensitivity(99, reward_bound=1.0, beta0=0.0), 6)
    0.01
    """
    m = check_int(min_count, "min_count", minimum=1)
    r = check_positive_float(reward_bound, "reward_bound")
    b0 = check_in_interval(beta0, "beta0", 0.0, math.inf, closed="left")
    # Δ(m) = R/(m+1) + β0(1/√m − 1/√(m+1))
    return r / (m + 1.0) + b0 * (1.0 / math.sqrt(m) - 1.0 / math.sqrt(m + 1.0))


def _log_other_mass(log_p: FloatArray) -> FloatArray:
    """Log Σ_{b≠a} p(b) for every a, without the cancellation of log(1 − p(a)) (prefix/suffix sums)."""
    neg = np.array([-np.inf])
    prefix = np.logaddexp.accumulate(log_p)
    suffix = np.logaddexp.accumulate(log_p[::-1])[::-1]
    return np.asarray(np.logaddexp(np.concatenate([neg, prefix[:-1]]), np.concatenate([suffix[1:], neg])))


def mab_exact_loss(
    log_probabilities: ArrayLike,
    counts: ArrayLike,
    reward_sums: ArrayLike,
    reward_minima: ArrayLike,
    reward_maxima: ArrayLike,
    log_reference: ArrayLike,
    *,
    reward_bound: float,
    beta0: float,
    eta: float,
) -> tuple[float, str]:
    """The exact per-instance pure privacy loss of one sample of the KL MAB policy, in closed form.

    Derivation. An add/remove neighbour D' changes the utility of one arm j only, by
    δu; write x = δu/η and p = π̃(j; D). Then Z'/Z = 1 − p + p·e^x, so with f(x) = log(1 − p + p·e^x)

    * log π̃(j; D') − log π̃(j; D) = x − f(x),
    * log π̃(b; D') − log π̃(b; D) = −f(x) for every other action b,

    and the pair's loss is L_j(x) = max(|x − f(x)|, |f(x)|) (the second term only if another action
    has positive probability). For x >= 0, f(x) ∈ [0, x] and both x − f and f are non-decreasing in
    x (d(x − f)/dx = (1 − p)/(1 − p + p·e^x)); for x <= 0 both terms are non-increasing. So the worst
    neighbour of arm j is one of the extreme changes. With N = N(j; D) >= 2, r̄ = S/N,
    g = β0(1/√(N − 1) − 1/√N) and h = β0(1/√N − 1/√(N + 1)):

    * remove a record of reward r: δu = (r̄ − r)/(N − 1) − g, extreme at r = min and r = max of the
      arm's rewards;
    * add a record of reward r0 ∈ [0, R]: δu = (r0 − r̄)/(N + 1) + h, extreme at r0 = 0 and R.

    An arm with π0(j) > 0 and N = 0 (adding one record gives it positive probability) or N = 1
    (removing its record gives it probability 0) has infinite loss; arms with π0(j) = 0 never
    matter. ε(D) = max_j max of L_j at the four extremes, exactly (checked against
    :func:`dpbandits.audit.kl.audit_mab`, which recomputes every extreme neighbour).

    Parameters
    ----------
    log_probabilities : array_like of shape (K,)
        log π̃(·; D).
    counts, reward_sums : array_like of shape (K,)
        N(a; D), S(a; D).
    reward_minima, reward_maxima : array_like of shape (K,)
        The smallest and largest reward of each arm in D (from statistics alone: the extremes any
        dataset with those statistics can have, which gives the worst such dataset's loss).
    log_reference : array_like of shape (K,)
        log π0.
    reward_bound, beta0, eta : float

    Returns
    -------
    (float, str)
        ε(D) and a description of the worst neighbour.
    """
    eta, beta0 = _common(eta, beta0)
    r = check_positive_float(reward_bound, "reward_bound")
    log_p = np.asarray(log_probabilities, dtype=np.float64)
    n = np.asarray(counts, dtype=np.float64)
    s = np.asarray(reward_sums, dtype=np.float64)
    active = np.isfinite(np.asarray(log_reference, dtype=np.float64))
    for count, what in ((0, "add a record of arm {j}, which has no data"),
                        (1, "remove the only record of arm {j}")):
        hit = np.flatnonzero(active & (n == count))
        if hit.size:
            return math.inf, what.format(j=int(hit[0]))
    arms = np.flatnonzero(active)
    n_a, mean = n[arms], s[arms] / n[arms]
    g = beta0 * (1.0 / np.sqrt(n_a - 1.0) - 1.0 / np.sqrt(n_a))
    h = beta0 * (1.0 / np.sqrt(n_a) - 1.0 / np.sqrt(n_a + 1.0))
    minima = np.asarray(reward_minima, dtype=np.float64)[arms]
    maxima = np.asarray(reward_maxima, dtype=np.float64)[arms]
    # δu of the four extreme neighbours of each arm (columns), scaled: x = δu/η
    changes = np.column_stack([
        (mean - minima) / (n_a - 1.0) - g,   # remove the smallest reward
        (mean - maxima) / (n_a - 1.0) - g,   # remove the largest reward
        (r - mean) / (n_a + 1.0) + h,        # add a reward R
        (0.0 - mean) / (n_a + 1.0) + h,      # add a reward 0
    ])
    x = changes / eta
    log_p_arm = log_p[arms][:, None]
    log_rest = _log_other_mass(np.where(active, log_p, -np.inf))[arms][:, None]
    with np.errstate(invalid="ignore"):
        f = np.logaddexp(log_rest, log_p_arm + x)  # log(1 − p + p·e^x)
    loss = np.abs(x - f)
    others = np.isfinite(log_rest)
    loss = np.where(others, np.maximum(loss, np.abs(f)), loss)
    row, col = np.unravel_index(int(np.argmax(loss)), loss.shape)
    arm = int(arms[row])
    worst = (f"remove (arm {arm}, r={minima[row]:.6g})", f"remove (arm {arm}, r={maxima[row]:.6g})",
             f"add (arm {arm}, r={r:.6g})", f"add (arm {arm}, r=0)")[col]
    return float(loss[row, col]), worst


def _mab_domain(policy: FittedMAB) -> str:
    return (f"N(a) >= min_count = {policy.min_count} for every arm with pi0(a) > 0, rewards in "
            f"[0, {policy.reward_bound:g}]; every pair of add/remove neighbours in it")


def account_mab(
    policy: FittedMAB,
    *,
    kind: str = "pure",
    variant: str = "corrected",
    scope: str = "instance",
    n0: float | None = None,
    k: float | None = None,
    verbatim: bool = False,
    strict: bool = False,
) -> Guarantee:
    """Guarantee of one action sampled from a fitted :class:`KLMABPolicy`.

    Parameters
    ----------
    policy : KLMABPolicy (any :class:`FittedMAB`)
        Fitted policy.
    kind : {"pure", "approx"}
        Pure ε0 (Theorem 1, eq. 9; valid) or approximate (ε, δ).
    variant : {"corrected", "paper", "tight"}
        Pure: ``"corrected"`` and ``"paper"`` are Theorem 1; ``"tight"`` is the exact per-instance loss
        (:func:`mab_exact_loss`) or, with ``scope="domain"``, Δ(m)/η (:func:`mab_domain_sensitivity`).
        Approximate: ``"corrected"`` is Theorem 1′; ``"paper"`` is Theorem 1 (with ``n0``) or
        Corollary 1 (with ``k``), which are invalid (warning).
    scope : {"instance", "domain"}, default "instance"
        ``"domain"`` needs the policy's public ``min_count`` = m (pure only): Theorem 1 at N_min = m
        (``"corrected"``/``"paper"``), or the exact domain sensitivity Δ(m)/η (``"tight"``).
    n0, k : float, optional
        For ``kind="approx"``: the threshold N0, or k with N0 = ⌊N_max/k⌋. Exactly one is needed.
    verbatim : bool, default False
        Corollary 1 as printed (no 1/η fix, real N0).
    strict : bool, default False
        Raise instead of returning ε = ∞ when a precondition fails.

    Returns
    -------
    PureDP or ApproxDP
        Add/remove of one logged record; ``per_instance`` unless ``scope="domain"``.

    Privacy
    -------
    (ε, δ) of **one** action sampled from π̃(·; D), add/remove of one (arm, reward) record; further
    samples compose (:func:`repeated_sampling`). Per instance, the value depends on D (publishing
    it leaks N(·; D)). Over the domain, ε is calibrated from public η, β0, R and m only and holds
    for every pair of neighbouring datasets that both satisfy the floor: the loss of a pair is at
    most |δu|/η <= Δ(m)/η because only one arm's utility moves (see :func:`mab_exact_loss`).

    References
    ----------
    Zhang et al. (2025), Theorem 1 (eq. 9) and Corollary 1,
    paper errata KL-C1, KL-C2 (Theorem 1′, Lemma 1′) and KL-7 to KL-12.
    """
    policy._check_fitted()
    check_one_of(kind, "kind", KINDS)
    check_one_of(variant, "variant", VARIANTS)
    if variant == "refined":
        raise InvalidParameterError(
            "variant='refined' applies to the linear and RLHF policies; the MAB policy's variant='tight' is its "
            "exact loss; got variant='refined'"
        )
    domain = _check_scope(scope, kind)
    common: dict[str, Any] = {
        "unit": UNIT_MAB, "neighbouring": Neighbouring.ADD_REMOVE, "strict": strict,
    }
    if domain:  # public parameters only: the counts are not read
        if policy.min_count is None:
            raise InvalidParameterError(
                "scope='domain' needs the public per-arm floor declared when the policy is built "
                "(KLMABPolicy(..., min_count=m)); got min_count=None"
            )
        m = policy.min_count
        if variant == "tight":
            eps = mab_domain_sensitivity(m, reward_bound=policy.reward_bound, beta0=policy.beta0) / policy.eta
            return _result(kind, eps, 0.0, reference="exact domain sensitivity Delta(m)/eta (one arm moves)",
                           domain=_mab_domain(policy), **common)
        eps = theorem1_pure_epsilon(m, reward_bound=policy.reward_bound, beta0=policy.beta0, eta=policy.eta)
        reason = "" if math.isfinite(eps) else f"Theorem 1 needs min_count >= 2 (got {m}); use variant='tight'"
        return _result(kind, eps, 0.0, reference=f"{PAPER}, Theorem 1 eq. (9) at N_min = min_count",
                       reason=reason, domain=_mab_domain(policy), **common)
    counts = policy.counts_
    log_pi0 = policy.log_reference
    active = np.isfinite(log_pi0)
    n_min = int(counts[active].min()) if np.any(active) else 0
    n_max = int(counts.max())
    if getattr(policy, "fallback_used_", False):
        return _result(kind, math.inf, 1.0, reference=f"{PAPER}, eq. (8)", strict=strict,
                       reason="no arm has data: the policy fell back to pi0", unit=UNIT_MAB,
                       neighbouring=Neighbouring.ADD_REMOVE)
    if variant == "tight":
        if kind != "pure":
            raise InvalidParameterError(f"variant='tight' is available for kind='pure' only; got kind={kind!r}")
        eps, worst = mab_exact_loss(policy.log_probabilities_, counts, policy.reward_sums_, policy.reward_minima_,
                                    policy.reward_maxima_, log_pi0, reward_bound=policy.reward_bound,
                                    beta0=policy.beta0, eta=policy.eta)
        reason = "" if math.isfinite(eps) else f"infinite loss: {worst}"
        return _result(kind, eps, 0.0, reason=reason,
                       reference=f"exact per-instance loss (closed form; worst neighbour: {worst})",
                       **common)
    if kind == "pure":
        # N_min over the arms with π0(a) > 0: an arm π0 never chooses does not affect π̃
        eps = theorem1_pure_epsilon(n_min, reward_bound=policy.reward_bound, beta0=policy.beta0,
                                    eta=policy.eta)
        reason = "" if math.isfinite(eps) else f"min_a N(a;D) <= 1 (got {n_min})"
        return _result(kind, eps, 0.0, reference=f"{PAPER}, Theorem 1 eq. (9)", reason=reason, **common)
    if (n0 is None) == (k is None):
        raise InvalidParameterError(f"exactly one of n0 and k must be given for kind='approx'; got n0={n0!r}, k={k!r}")
    if variant == "paper":
        if k is not None:
            _paper_warning("Corollary 1 (approximate DP)")
            eps, delta = corollary1_paper(k, n_max=n_max, n_actions=policy.n_arms,
                                          reward_bound=policy.reward_bound, beta0=policy.beta0,
                                          eta=policy.eta, verbatim=verbatim)
            ref = f"{PAPER}, Corollary 1 [paper{', verbatim' if verbatim else ''}]"
        else:
            _paper_warning("Theorem 1 (approximate DP)")
            eps, delta = theorem1_approx_paper(float(n0), n_max=n_max,  # type: ignore[arg-type]
                                               n_actions=policy.n_arms, reward_bound=policy.reward_bound,
                                               beta0=policy.beta0, eta=policy.eta)
            ref = f"{PAPER}, Theorem 1 approximate [paper]"
    else:
        threshold = float(n0) if n0 is not None else n_max / check_positive_float(k, "k")
        eps, delta = theorem1_corrected_delta(
            counts, policy.reward_sums_, log_pi0, max(threshold, 1e-300),
            reward_bound=policy.reward_bound, beta0=policy.beta0, eta=policy.eta,
        )
        ref = "Theorem 1' [corrected, errata KL-8]"
    reason = "" if math.isfinite(eps) else "N0 = floor(threshold) < 1"
    return _result(kind, eps, delta, reference=ref, reason=reason, **common)


# ------------------------------------------------------------------- linear (Theorem 2)
def _threshold_lambda0(lambda0: float | None, c: float | None, lambda_min: float) -> float:
    """λ0 from ``lambda0`` or from Corollary 2/3's c: λ0 = λ_min/c² (ε = c·ε0)."""
    if (lambda0 is None) == (c is None):
        raise InvalidParameterError(
            f"exactly one of lambda0 and c must be given for kind='approx'; got lambda0={lambda0!r}, c={c!r}"
        )
    if c is not None:
        cc = check_in_interval(c, "c", 0.0, 1.0, closed="neither")
        return lambda_min / cc**2
    return check_positive_float(lambda0, "lambda0")


def theorem2_bracket(lambda_min: float, *, n_records: int, dimension: int, reward_bound: float,
                     beta0: float) -> float:
    """C2 = 2(1 + √(nd/(λ_min − 1)))·R/√(λ_min − 1) + β0/(λ_min − 1); ∞ if λ_min <= 1.

    Examples
    --------
    >>> round(theorem2_bracket(102, n_records=200, dimension=2, reward_bound=1, beta0=10), 7)
    0.6940569
    """
    lam = check_positive_float(lambda_min, "lambda_min")
    if lam <= 1.0:
        return math.inf
    n = check_int(n_records, "n_records", minimum=0)
    d = check_int(dimension, "dimension", minimum=1)
    r = check_positive_float(reward_bound, "reward_bound")
    b0 = check_in_interval(beta0, "beta0", 0.0, math.inf, closed="left")
    m = lam - 1.0
    return 2.0 * (1.0 + math.sqrt(n * d / m)) * r / math.sqrt(m) + b0 / m


def theorem2_pure_epsilon(lambda_min: float, *, n_records: int, dimension: int, reward_bound: float,
                          beta0: float, eta: float) -> float:
    """Theorem 2 pure: ε0 = C2/(η√λ_min); ∞ if λ_min <= 1.

    Examples
    --------
    >>> round(theorem2_pure_epsilon(102, n_records=200, dimension=2, reward_bound=1, beta0=10, eta=0.01), 6)
    6.872188
    """
    eta = check_positive_float(eta, "eta")
    c2 = theorem2_bracket(lambda_min, n_records=n_records, dimension=dimension, reward_bound=reward_bound,
                          beta0=beta0)
    return c2 / (eta * math.sqrt(lambda_min))


def elliptical_corrected_delta(
    log_probabilities: ArrayLike,
    penalties: ArrayLike,
    *,
    coefficient: float,
    threshold: float,
    eta: float,
) -> tuple[float, float]:
    """The corrected approximate-DP recipe of the paper errata (Lemma 1′) for linear and RLHF policies.

    The per-action sensitivity is Δ(a) = c·γ(a) with γ(a) = ‖φ(x, a)‖_{Σ⁻¹}; Ī = {a : γ(a) > t}.

    1. ε = 2·c·t/η;
    2. p = π̃(Ī; D) exactly;
    3. δ0 = min(1, max(p, e^{Δ_max/η}·Σ_Ī e^{Δ(a)/η}·π̃(a; D))) bounds the mass of Ī under every neighbour;
    4. δ = min(1, e^ε·δ0).

    Parameters
    ----------
    log_probabilities : array_like of shape (K,)
        log π̃(·|x; D).
    penalties : array_like of shape (K,)
        γ(a) = ‖φ(x, a)‖_{Σ_D⁻¹}.
    coefficient : float
        c, so that Δ(a) <= c·γ(a) for every action.
    threshold : float
        t = 1/√λ0 > 0.
    eta : float

    Returns
    -------
    (float, float)
        (ε, δ).
    """
    logp = np.asarray(log_probabilities, dtype=np.float64)
    gamma = np.asarray(penalties, dtype=np.float64)
    eta = check_positive_float(eta, "eta")
    t = check_positive_float(threshold, "threshold")
    if not math.isfinite(coefficient):
        return math.inf, 1.0
    eps = 2.0 * coefficient * t / eta
    outside = gamma > t
    if not np.any(outside & np.isfinite(logp)):
        return eps, 0.0
    sens = coefficient * gamma / eta  # Δ(a)/η
    log_p = float(logsumexp(logp[outside]))
    # log of e^{Δmax/η} Σ_Ī e^{Δ(a)/η} π̃(a)
    log_inflated = float(np.max(sens)) + float(logsumexp(logp[outside] + sens[outside]))
    log_delta0 = min(0.0, max(log_p, log_inflated))
    return eps, _cap_log_delta(eps + log_delta0)


def _corollary_approx_paper(eps0: float, c: float, *, k1: float, n_actions: int, beta0: float, eta: float,
                            dimension: int, n_records: int) -> tuple[float, float]:
    """Corollaries 2 and 3, approximate part as printed: ε = c·ε0, δ = |A|e^ε·exp((β0/η)√(d/n)(1 − √(c·k1)))."""
    cc = check_in_interval(c, "c", 0.0, 1.0, closed="neither")
    na = check_int(n_actions, "n_actions", minimum=1)
    eps = cc * eps0
    log_delta = math.log(na) + eps + beta0 / eta * math.sqrt(dimension / n_records) * (1.0 - math.sqrt(cc * k1))
    return eps, _cap_log_delta(log_delta)


def _paper_elliptical_delta(eps: float, penalties: FloatArray, threshold: float, *, beta0: float,
                            eta: float) -> float:
    """The paper's δ of Theorems 2–4 (invalid, C3): |A|·e^ε·exp((β0/η)(min_a γ(a) − 1/√λ0))."""
    log_delta = math.log(len(penalties)) + eps + beta0 / eta * (float(np.min(penalties)) - threshold)
    return _cap_log_delta(log_delta)


def corollary2_paper(
    k1: float, c: float | None = None, *, lambda_min: float, n_records: int, dimension: int,
    n_actions: int, reward_bound: float, beta0: float, eta: float,
) -> tuple[float, float]:
    """Corollary 2 as printed. Pure part valid; approximate part (with ``c``) **invalid** (errata KL-14).

    The approximate part issues a :class:`PaperVariantWarning`; its valid counterpart is
    ``account_linear(..., kind="approx", c=c)`` (λ0 = λ_min/c² and the corrected δ recipe).

    Requires λ_min >= 1 + n/(k1·d), else (∞, ·).
    ε0 = (k1·d/(nη))·(2R(1 + √k1·d) + β0·√(k1·d/n)); with c ∈ (0, 1): ε = c·ε0 and
    δ = |A|·e^ε·exp((β0/η)·√(d/n)·(1 − √(c·k1))).

    Returns
    -------
    (float, float)
        (ε0, 0) without ``c``; (ε, δ) with ``c``.

    Examples
    --------
    >>> eps, delta = corollary2_paper(4, 0.9, lambda_min=1e9, n_records=1000, dimension=5, n_actions=10,
    ...                               reward_bound=1, beta0=50, eta=0.1)
    >>> round(eps, 6), f"{delta:.6e}"
    (5.232792, '3.117755e-11')
    """
    eta, beta0 = _common(eta, beta0)
    kk = check_positive_float(k1, "k1")
    n = check_int(n_records, "n_records", minimum=1)
    d = check_int(dimension, "dimension", minimum=1)
    r = check_positive_float(reward_bound, "reward_bound")
    if check_positive_float(lambda_min, "lambda_min") < 1.0 + n / (kk * d):
        return math.inf, (0.0 if c is None else 1.0)
    eps0 = kk * d / (n * eta) * (2.0 * r * (1.0 + math.sqrt(kk) * d) + beta0 * math.sqrt(kk * d / n))
    if c is None:
        return eps0, 0.0
    check_in_interval(c, "c", 0.0, 1.0, closed="neither")
    _paper_warning("Corollary 2 (approximate DP)")
    return _corollary_approx_paper(eps0, c, k1=kk, n_actions=n_actions, beta0=beta0, eta=eta, dimension=d,
                                   n_records=n)


def account_linear(
    policy: FittedLinear,
    action_features: ArrayLike | None = None,
    reference: ArrayLike | None = None,
    *,
    kind: str = "pure",
    variant: str = "corrected",
    lambda0: float | None = None,
    c: float | None = None,
    strict: bool = False,
    scope: str = "instance",
    records: tuple[ArrayLike, ArrayLike] | None = None,
) -> Guarantee:
    """Guarantee of one action sampled from a fitted :class:`KLLinearPolicy` at a context.

    Parameters
    ----------
    policy : KLLinearPolicy (any :class:`FittedLinear`)
    action_features : array_like of shape (K, d), optional
        φ(x, a) for the candidate actions of the fixed public context x. Omitted: the pure
        guarantee at every context (features of norm <= 1), which is what ``policy.privacy`` gives.
    reference : array_like of shape (K,), optional
        π0(·|x); uniform when omitted.
    kind : {"pure", "approx"}
    variant : {"corrected", "paper", "refined", "tight"}
        Pure: ``"corrected"`` and ``"paper"`` are Theorem 2 (valid); ``"refined"`` is C2·γ_max(x)/η (valid,
        no stated factor to the exact loss); ``"tight"`` is the certified per-instance loss
        (:func:`.certified_linear.linear_loss_bracket`, at most the refined value), whose reference prints
        the loss of the worst neighbour found and the factor between the two (needs ``records``).
        Approx (needs ``lambda0``): ``"paper"`` is Theorem 2's printed (ε, δ) (invalid, C3; warning);
        ``"corrected"`` is the corrected approximate recipe (errata KL-8).
    lambda0 : float, optional
        λ0 > 0, the threshold 1/√λ0 on ‖φ(x, a)‖_{Σ⁻¹}.
    c : float, optional
        Corollary 2 (corrected form, errata KL-14): λ0 = λ_min/c², so ε = c·ε0 exactly; c ∈ (0, 1).
        Exclusive with ``lambda0``.
    strict : bool, default False
    scope : {"instance", "domain"}, default "instance"
        ``"domain"`` (pure only) needs the policy's public ``min_eigenvalue`` = ℓ > 1 (a floor on
        λ_min(Σ_D), ridge included) and ``max_records`` = n_max: ε = C2(ℓ, n_max)/(η√ℓ), Theorem 2
        at the public worst case (C2 decreases in λ_min and increases in n, and 1/√λ_min decreases,
        so every dataset of the domain has a smaller per-instance ε0, which covers all its
        neighbours). ``"corrected"``, ``"paper"`` and ``"refined"`` give this value in the domain scope
        (γ_max(x) <= 1/√ℓ there); ``"tight"`` is per instance only.
    records : (array_like, array_like), optional
        For ``variant="tight"``: the features and rewards the policy was fitted on (its removals are
        enumerated); checked against Σ_D and θ̂.

    Returns
    -------
    PureDP or ApproxDP
        Add/remove of one logged record, for this context only.

    Privacy
    -------
    Guarantee of one action sampled at the fixed public context x, per instance or over the
    declared domain (features of norm <= 1, rewards in [0, R], ridge λ, λ_min(Σ_D) >= ℓ,
    n <= n_max); other contexts and further samples compose.

    References
    ----------
    Zhang et al. (2025), Theorem 2 and Corollary 2; paper errata KL-14 and KL-C3 (the paper's
    approximate form fails).
    """
    check_one_of(kind, "kind", KINDS)
    check_one_of(variant, "variant", VARIANTS)
    _check_certified(variant, kind, scope)
    every_context = action_features is None
    if every_context and (kind != "pure" or variant in ("refined", "tight")):
        raise InvalidParameterError(
            f"kind={kind!r}, variant={variant!r} depends on the context: pass action_features"
        )
    # every context: no features are used (the paths that need them were refused above)
    features = _NO_CONTEXT if action_features is None else policy._check_query(action_features)
    if _check_scope(scope, kind):
        if policy.min_eigenvalue is None or policy.max_records is None:
            raise InvalidParameterError(
                "scope='domain' needs the public floor min_eigenvalue and bound max_records declared when the "
                f"policy is built; got min_eigenvalue={policy.min_eigenvalue!r}, max_records={policy.max_records!r}"
            )
        floor = policy.min_eigenvalue
        c2_domain = theorem2_bracket(floor, n_records=policy.max_records, dimension=policy.n_features_in_,
                                     reward_bound=policy.reward_bound, beta0=policy.beta0)
        described = (f"lambda_min(Sigma_D) >= {floor:g} (ridge {policy.ridge:g}), n <= {policy.max_records}, "
                     f"feature norms <= 1, rewards in [0, {policy.reward_bound:g}]; every pair of add/remove "
                     "neighbours in it")
        return _result(kind, c2_domain / (policy.eta * math.sqrt(floor)), 0.0, unit=UNIT_LINEAR,
                       neighbouring=Neighbouring.ADD_REMOVE, strict=strict, domain=described,
                       reference=f"{PAPER}, Theorem 2 (pure) at the public floor and n_max",
                       reason="" if math.isfinite(c2_domain) else f"min_eigenvalue must exceed 1 (got {floor!r})")
    policy._check_fitted()
    lam_min = policy.lambda_min_
    c2 = theorem2_bracket(lam_min, n_records=policy.n_records_, dimension=policy.n_features_in_,
                          reward_bound=policy.reward_bound, beta0=policy.beta0)
    reason = "" if math.isfinite(c2) else f"lambda_min(Sigma_D) <= 1 (got {lam_min!r})"
    common: dict[str, Any] = {
        "unit": UNIT_LINEAR, "neighbouring": Neighbouring.ADD_REMOVE, "strict": strict, "reason": reason,
    }
    if kind == "pure":
        if variant in ("refined", "tight"):
            eps = c2 * float(np.max(policy.penalties(features))) / policy.eta
            if variant == "refined":
                return _result(kind, eps, 0.0, reference="Theorem 2 refined at this context: C2*gamma_max(x)/eta",
                               **common)
            if records is None:
                raise InvalidParameterError(
                    "variant='tight' enumerates the neighbours of the data: pass records=(features, rewards), the "
                    "data the policy was fitted on (a loaded policy keeps only Sigma_D and theta_hat); got none"
                )
            from dpbandits.algorithms.offline.certified_linear import linear_loss_bracket

            bracket = linear_loss_bracket(policy, features, records, reference)
            return _certified_result(bracket, eps, "Theorem 2 refined", common)
        eps = c2 / (policy.eta * math.sqrt(lam_min))  # γ_max(x) <= 1/√λ_min: every context
        return _result(kind, eps, 0.0, reference=f"{PAPER}, Theorem 2 (pure, every context)", **common)
    gamma = policy.penalties(features)
    logp = policy.log_probabilities(features, reference)
    lam0 = _threshold_lambda0(lambda0, c, lam_min)
    t = 1.0 / math.sqrt(lam0)
    if variant == "paper":
        _paper_warning("Theorem 2 (approximate DP)")
        eps = c2 / (policy.eta * math.sqrt(lam0))
        delta = _paper_elliptical_delta(eps, gamma, t, beta0=policy.beta0, eta=policy.eta)
        return _result(kind, eps, delta, reference=f"{PAPER}, Theorem 2 approx [paper]", **common)
    eps, delta = elliptical_corrected_delta(logp, gamma, coefficient=c2 / 2.0, threshold=t, eta=policy.eta)
    return _result(kind, eps, delta, reference="corrected approximate Theorem 2 (errata KL-8)", **common)


def _check_certified(variant: str, kind: str, scope: str) -> None:
    """``variant="tight"`` of the linear and RLHF policies is a pure per-instance bound."""
    if variant == "tight" and (kind != "pure" or scope != "instance"):
        raise InvalidParameterError(
            "variant='tight' is the certified per-instance loss: kind='pure', scope='instance' only; got "
            f"kind={kind!r}, scope={scope!r}"
        )


def _certified_result(bracket: Any, fallback: float, fallback_name: str, common: dict[str, Any]) -> Guarantee:
    """The tight guarantee: the smaller of two valid upper bounds, with the loss found beside it."""
    eps = min(bracket.upper, fallback)
    factor = eps / bracket.lower if bracket.lower > 0 else (1.0 if eps == 0 else math.inf)
    source = "certified bound" if bracket.upper <= fallback else f"{fallback_name} (the certified bound was larger)"
    reference = (f"per-instance loss, certified: epsilon <= {eps:.6g} ({source}); a neighbour reaches "
                 f"{bracket.lower:.6g}, so epsilon is within {factor:.4g}x of the exact loss (worst found: "
                 f"{bracket.worst})")
    return _result("pure", eps, 0.0, reference=reference, **common)


# ---------------------------------------------------------------------- RLHF (Theorems 3, 4)
def kappa_b(norm_bound: float) -> float:
    """κ_B = 1/γ = 2 + e^{2B} + e^{−2B}, the inverse curvature of the BT log-likelihood on ‖θ‖ <= B."""
    b = check_positive_float(norm_bound, "norm_bound")
    return 2.0 + math.exp(2.0 * b) + math.exp(-2.0 * b)


def theorem3_label_epsilon(lambda_min: float, *, ridge: float, norm_bound: float, eta: float,
                           variant: str = "corrected", lambda0: float | None = None) -> float:
    """Label-DP ε of the RLHF policy: Theorem 3 (``"paper"``, invalid) or Theorem 3′ (``"corrected"``).

    Paper: (2 + 2e^{2B})/(η·μ); corrected: 4κ_B/(η·μ), μ = λ_min − λ. With ``lambda0`` the pure value
    is multiplied by √λ_min/√λ0 (the approximate ε). ∞ if μ <= 0.

    Examples
    --------
    >>> round(theorem3_label_epsilon(4001, ridge=1, norm_bound=0.1, eta=1, variant="paper"), 9)
    0.001110701
    >>> round(theorem3_label_epsilon(4001, ridge=1, norm_bound=0.1, eta=1), 9)
    0.004040134
    """
    check_one_of(variant, "variant", ("corrected", "paper"))
    eta = check_positive_float(eta, "eta")
    lam = check_positive_float(ridge, "ridge")
    b = check_positive_float(norm_bound, "norm_bound")
    mu = check_positive_float(lambda_min, "lambda_min") - lam
    if mu <= 0:
        return math.inf
    numerator = 2.0 + 2.0 * math.exp(2.0 * b) if variant == "paper" else 4.0 * kappa_b(b)
    scale = 1.0 if lambda0 is None else math.sqrt(lambda_min) / math.sqrt(check_positive_float(lambda0, "lambda0"))
    return numerator * scale / (eta * mu)


def theorem4_add_remove_epsilon(lambda_min: float, *, ridge: float, norm_bound: float, beta0: float,
                                eta: float, variant: str = "corrected", lambda0: float | None = None) -> float:
    """Add/remove ε of the RLHF policy: Theorem 4 (``"paper"``, invalid) or Theorem 4′ (``"corrected"``).

    Paper: (1/(η√λ_min))·((1 + e^{2B})√λ_min/μ + 2β0/(λ_min − 1)), needs λ_min > max(λ, 1).
    Corrected: (2/(η√λ_min))·(2(1 + e^{2B})√λ_min/μ + 2β0/(λ_min − 4)), needs μ > 0 and λ_min > 4.
    With ``lambda0`` the leading 1/√λ_min becomes 1/√λ0.

    Examples
    --------
    >>> f"{theorem4_add_remove_epsilon(4001, ridge=1, norm_bound=0.1, beta0=1, eta=1, variant='paper'):.6e}"
    '5.632554e-04'
    >>> f"{theorem4_add_remove_epsilon(4001, ridge=1, norm_bound=0.1, beta0=1, eta=1):.6e}"
    '2.237224e-03'
    """
    check_one_of(variant, "variant", ("corrected", "paper"))
    eta, beta0 = _common(eta, beta0)
    lam = check_positive_float(ridge, "ridge")
    b = check_positive_float(norm_bound, "norm_bound")
    lam_min = check_positive_float(lambda_min, "lambda_min")
    mu = lam_min - lam
    floor_needed = 1.0 if variant == "paper" else 4.0
    if mu <= 0 or lam_min <= floor_needed:
        return math.inf
    lead = 1.0 / math.sqrt(lam_min if lambda0 is None else check_positive_float(lambda0, "lambda0"))
    growth = 1.0 + math.exp(2.0 * b)
    if variant == "paper":
        return lead / eta * (growth * math.sqrt(lam_min) / mu + 2.0 * beta0 / (lam_min - 1.0))
    return 2.0 * lead / eta * (2.0 * growth * math.sqrt(lam_min) / mu + 2.0 * beta0 / (lam_min - 4.0))


def corollary3_paper(k1: float, c: float | None = None, *, lambda_min: float, ridge: float,
                     n_records: int, dimension: int, n_actions: int, norm_bound: float, beta0: float,
                     eta: float, variant: str = "paper") -> tuple[float, float]:
    """Corollary 3 (label DP). Needs λ_min >= λ + n/(k1·d), else ∞.

    ``"paper"``: ε0 = (2 + 2e^{2B})·k1·d/(nη) (invalid, inherits Theorem 3's error); with c ∈ (0, 1),
    ε = c·ε0 and δ = |A|·e^ε·exp((β0/η)√(d/n)(1 − √(c·k1))) (invalid). ``"corrected"``: the pure
    analogue 4κ_B·k1·d/(nη) (no approximate form; use :func:`account_rlhf`). ``"paper"`` issues a
    :class:`PaperVariantWarning`.

    Examples
    --------
    >>> round(corollary3_paper(2, lambda_min=1e9, ridge=1, n_records=1000, dimension=5, n_actions=2,
    ...                        norm_bound=0.5, beta0=1, eta=0.1)[0], 7)
    0.7436564
    """
    check_one_of(variant, "variant", ("corrected", "paper"))
    eta, beta0 = _common(eta, beta0)
    kk = check_positive_float(k1, "k1")
    n = check_int(n_records, "n_records", minimum=1)
    d = check_int(dimension, "dimension", minimum=1)
    b = check_positive_float(norm_bound, "norm_bound")
    if check_positive_float(lambda_min, "lambda_min") < check_positive_float(ridge, "ridge") + n / (kk * d):
        return math.inf, (0.0 if c is None else 1.0)
    if c is not None:
        check_in_interval(c, "c", 0.0, 1.0, closed="neither")
    if variant == "paper":
        _paper_warning("Corollary 3 (label DP, inherits Theorem 3)")
    numerator = 2.0 + 2.0 * math.exp(2.0 * b) if variant == "paper" else 4.0 * kappa_b(b)
    eps0 = numerator * kk * d / (n * eta)
    if c is None or variant == "corrected":
        return eps0, 0.0
    return _corollary_approx_paper(eps0, c, k1=kk, n_actions=n_actions, beta0=beta0, eta=eta, dimension=d,
                                   n_records=n)


def account_rlhf(
    policy: FittedRLHF,
    action_features: ArrayLike | None = None,
    reference: ArrayLike | None = None,
    *,
    kind: str = "pure",
    variant: str = "corrected",
    neighbouring: str = "label",
    lambda0: float | None = None,
    c: float | None = None,
    strict: bool = False,
    include_solver_error: bool = True,
    scope: str = "instance",
) -> Guarantee:
    """Guarantee of one action sampled from a fitted :class:`KLRLHFPolicy` at a context.

    Parameters
    ----------
    policy : KLRLHFPolicy (any :class:`FittedRLHF`)
    action_features : array_like of shape (K, d), optional
        φ(x, a) of the candidate responses to the public prompt x. Omitted: the pure (non-tight)
        guarantee at every prompt (features of norm <= 1; the solver error at the worst-case
        leverage 1/√(λ_min − λ)), which is what ``policy.privacy`` gives.
    reference : array_like of shape (K,), optional
        π0(·|x); uniform when omitted.
    kind : {"pure", "approx"}
    variant : {"corrected", "paper", "refined", "tight"}
        ``"paper"``: Theorem 3 (label) / Theorem 4 (add/remove), both invalid (C4, C5; warning).
        ``"corrected"``: Theorems 3′/4′. ``"refined"`` (label, pure): κ_B·max_i‖z_i‖_{M⁻¹}·
        max_{a,a'}‖φ_a − φ_a'‖_{M⁻¹}/η (valid, no stated factor to the exact loss). ``"tight"`` (pure,
        per instance, both units): the certified per-instance loss
        (:func:`.certified_rlhf.rlhf_loss_bracket`, at most the corrected value), whose reference prints the
        loss of the worst neighbour found and the factor between the two.
    neighbouring : {"label", "add_remove"}
    lambda0 : float, optional
        For ``kind="approx"``: threshold 1/√λ0 on ‖φ(x, a)‖_{Σ⁻¹}. The paper's Theorems 3/4 need
        λ0 > λ (checked for ``variant="paper"``); the corrected recipe is valid for every λ0 > 0 (for
        λ0 <= λ_min it returns δ = 0 with an ε above the pure one).
    c : float, optional
        Corollary 3 (corrected form): λ0 = λ_min/c², c ∈ (0, 1); exclusive with ``lambda0``.
    strict : bool, default False
    include_solver_error : bool, default True
        Account for the solver (below). Turning it off gives the exact-maximiser value of the
        theorems, which is not what the computed policy satisfies.
    scope : {"instance", "domain"}, default "instance"
        ``"domain"`` (pure only). Label DP: the comparisons z_i are public, so ε depends on public
        data only and holds for every labelling of them. Add/remove: needs the policy's public
        ``min_eigenvalue`` = ℓ; Theorem 4′ (or 4) at λ_min = ℓ (the bounds decrease in λ_min).

    Returns
    -------
    PureDP or ApproxDP

    Privacy
    -------
    Guarantee of one response sampled at the fixed public prompt x: one preference label
    (``"label"``, features public) or one whole comparison (``"add_remove"``). Solver error: the
    released policy π̂ uses the computed θ̂, not the exact maximiser. With ε̂_D and ε̂_{D'} bounds on
    D∞ between π̂ and π̃ (both directions) at D and at the neighbour D',
    π̂_D(S) <= e^{ε̂_D}(e^ε·π̃_{D'}(S) + δ) <= e^{ε̂_D + ε + ε̂_{D'}}·π̂_{D'}(S) + e^{ε̂_D}·δ, and symmetrically,
    so the released policy is (ε + ε̂_D + ε̂_{D'}, e^{max(ε̂_D, ε̂_{D'})}·δ)-DP. ε̂ = 2·e·max_a‖φ_a‖_{M⁻¹}/η
    with e a bound on ‖θ̂ − θ*‖_M: at D the certificate of this fit (per instance) or the public
    ``solver_tolerance`` (domain); at D' the public tolerance, which ``fit`` enforces on every dataset.
    The leverage at D' equals that at D for label flips (M unchanged), is smaller for additions
    (M grows), and is at most lev_D/√(1 − max_i‖z_i‖²_{M⁻¹}) for removals (Sherman–Morrison and
    Cauchy–Schwarz); over an add/remove domain it is at most 1/√(ℓ − λ) on both sides.

    References
    ----------
    Zhang et al. (2025), Theorem 3, Corollary 3 and Appendix D (Theorem 4);
    Paper errata KL-C4/C5 (Theorems 3′/4′) and KL-18.
    """
    check_one_of(kind, "kind", KINDS)
    check_one_of(variant, "variant", VARIANTS)
    check_one_of(neighbouring, "neighbouring", ("label", "add_remove"))
    _check_certified(variant, kind, scope)
    if action_features is None and (kind != "pure" or variant in ("refined", "tight")):
        raise InvalidParameterError(
            f"kind={kind!r}, variant={variant!r} depends on the prompt: pass action_features"
        )
    if variant == "tight":
        corrected = account_rlhf(policy, action_features, reference, neighbouring=neighbouring,
                                 include_solver_error=include_solver_error)
        from dpbandits.algorithms.offline.certified_rlhf import rlhf_loss_bracket

        assert action_features is not None  # refused above
        bracket = rlhf_loss_bracket(policy, action_features, reference, neighbouring=neighbouring)
        if not (math.isfinite(bracket.upper) or math.isfinite(corrected.epsilon)):
            return _result("pure", math.inf, 0.0, unit=corrected.unit, neighbouring=corrected.neighbouring,
                           reference="certified per-instance loss", strict=strict,
                           reason=f"{bracket.worst}; {corrected.reason}")
        common = {"unit": corrected.unit, "neighbouring": corrected.neighbouring, "strict": strict, "reason": ""}
        return _certified_result(bracket, corrected.epsilon, corrected.reference, common)
    domain = _check_scope(scope, kind)
    label = neighbouring == "label"
    floor: float | None = None
    described: str | None = None
    if domain:
        if label:
            described = (f"every labelling of the {policy.n_records_} public comparisons z_i (features public, "
                         f"MLE radius B = {policy.norm_bound:g}, solver tolerance {policy.solver_tolerance:g})")
        else:
            if policy.min_eigenvalue is None:
                raise InvalidParameterError(
                    "scope='domain' with neighbouring='add_remove' needs the public floor min_eigenvalue declared "
                    "when the policy is built; got min_eigenvalue=None"
                )
            floor = policy.min_eigenvalue
            described = (f"lambda_min(Sigma_D) >= {floor:g} (ridge {policy.ridge:g}), ||z_i|| <= 2, MLE radius "
                         f"B = {policy.norm_bound:g}, solver tolerance {policy.solver_tolerance:g}; every pair "
                         "of add/remove neighbours in it")
    guarantee = _account_rlhf_exact(policy, action_features, reference, kind=kind, variant=variant,
                                    neighbouring=neighbouring, lambda0=lambda0, c=c, strict=strict,
                                    lambda_min=floor, domain=described)
    if not include_solver_error or variant == "paper" or not math.isfinite(guarantee.epsilon):
        return guarantee
    here, there = _rlhf_solver_divergences(policy, action_features, label=label, domain=domain, floor=floor)
    adjusted = inexact_policy(guarantee, here, neighbour_divergence=there)
    return replace(adjusted, reference=f"{guarantee.reference} + solver error at D and at the neighbour")


def _rlhf_solver_divergences(policy: FittedRLHF, action_features: ArrayLike | None, *, label: bool, domain: bool,
                             floor: float | None) -> tuple[float, float]:
    """(ε̂_D, ε̂_{D'}): divergences of the computed from the exact policy at D and at any neighbour."""
    tolerance = policy.solver_tolerance
    if floor is not None:  # add/remove domain: lev <= ‖φ‖/√(λ_min − λ) <= 1/√(ℓ − λ) on both sides
        gap = floor - policy.ridge
        side = 2.0 * tolerance / (policy.eta * math.sqrt(gap)) if gap > 0 else math.inf
        return side, side
    here = policy.solver_divergence(action_features, tolerance if domain else None)
    if label:  # a label flip leaves M unchanged
        return here, policy.solver_divergence(action_features, tolerance)
    s_max = policy.max_difference_leverage_ ** 2  # max_i ‖z_i‖²_{M⁻¹}
    if not s_max < 1.0:
        return here, math.inf  # a removal can make M singular
    # removal: ‖φ‖²_{M₋⁻¹} = ‖φ‖²_{M⁻¹} + (φᵀM⁻¹z_i)²/(1 − s_i) <= ‖φ‖²_{M⁻¹}/(1 − s_i); addition: smaller
    return here, policy.solver_divergence(action_features, tolerance) / math.sqrt(1.0 - s_max)


def _account_rlhf_exact(
    policy: FittedRLHF, action_features: ArrayLike | None, reference: ArrayLike | None, *, kind: str,
    variant: str, neighbouring: str, lambda0: float | None, c: float | None, strict: bool,
    lambda_min: float | None = None, domain: str | None = None,
) -> Guarantee:
    """:func:`account_rlhf` for the exact maximiser (the theorems' setting), at λ_min(Σ_D) or a floor."""
    features = _NO_CONTEXT if action_features is None else policy._check_query(action_features)
    policy._check_fitted()
    lam_min = policy.lambda_min_ if lambda_min is None else lambda_min
    lam, b = policy.ridge, policy.norm_bound
    mu = lam_min - lam
    label = neighbouring == "label"
    unit = UNIT_RLHF_LABEL if label else UNIT_RLHF_RECORD
    rel = Neighbouring.LABEL_ONLY if label else Neighbouring.ADD_REMOVE
    if variant == "refined" and (kind != "pure" or not label):
        raise InvalidParameterError(
            f"variant='refined' is available for kind='pure' with neighbouring='label' only; got kind={kind!r}, "
            f"neighbouring={neighbouring!r}"
        )
    min_needed = lam if label else max(lam, 1.0 if variant == "paper" else 4.0)
    reason = "" if (mu > 0 and lam_min > min_needed) else (
        f"lambda_min(Sigma_D) = {lam_min!r} must exceed {min_needed!r} (ridge {lam!r}"
        + ("" if label else " and the add/remove floor") + ")"
    )
    common: dict[str, Any] = {"unit": unit, "neighbouring": rel, "strict": strict, "reason": reason,
                              "domain": domain}
    thm = ("Theorem 3" if label else "Theorem 4")
    if kind == "pure":
        if variant == "refined":
            eps = kappa_b(b) * policy.max_difference_leverage_ * policy.feature_range_metric(features) / policy.eta
            return _result(kind, eps, 0.0, reference="refined label-DP (range refinement)", **common)
        if variant == "paper":
            _paper_warning(f"{thm} (pure {'label' if label else 'add/remove'} DP)")
        if label:
            eps = theorem3_label_epsilon(lam_min, ridge=lam, norm_bound=b, eta=policy.eta, variant=variant)
        else:
            eps = theorem4_add_remove_epsilon(lam_min, ridge=lam, norm_bound=b, beta0=policy.beta0,
                                              eta=policy.eta, variant=variant)
        tag = " [paper]" if variant == "paper" else "' [corrected]"
        return _result(kind, eps, 0.0, reference=f"{PAPER}, {thm}{tag} (pure)", **common)
    lam0 = _threshold_lambda0(lambda0, c, lam_min)
    if variant == "paper" and not lam0 > lam:
        raise InvalidParameterError(
            f"lambda0 must be > the ridge lambda = {lam!r} for {thm}'s approximate part (paper); got {lam0!r}"
        )
    t = 1.0 / math.sqrt(lam0)
    if not (mu > 0 and lam_min > min_needed):
        return _result(kind, math.inf, 1.0, reference=f"{PAPER}, {thm} approx", **common)
    gamma = policy.penalties(features)
    logp = policy.log_probabilities(features, reference)
    if variant == "paper":
        _paper_warning(f"{thm} (approximate DP)")
        if label:
            eps = theorem3_label_epsilon(lam_min, ridge=lam, norm_bound=b, eta=policy.eta, variant="paper",
                                         lambda0=lam0)
        else:
            eps = theorem4_add_remove_epsilon(lam_min, ridge=lam, norm_bound=b, beta0=policy.beta0,
                                              eta=policy.eta, variant="paper", lambda0=lam0)
        delta = _paper_elliptical_delta(eps, gamma, t, beta0=policy.beta0, eta=policy.eta)
        return _result(kind, eps, delta, reference=f"{PAPER}, {thm} approx [paper]", **common)
    growth = 1.0 + math.exp(2.0 * b)
    if label:
        # Δ(a) = 2κ_B·√λ_min/μ · γ(a)  (Γ unchanged by a label flip)
        coefficient = 2.0 * kappa_b(b) * math.sqrt(lam_min) / mu
    else:
        # Δ(a) = [2(1 + e^{2B})√λ_min/μ + 2β0/(λ_min − 4)] · γ(a)
        coefficient = 2.0 * growth * math.sqrt(lam_min) / mu + 2.0 * policy.beta0 / (lam_min - 4.0)
    eps, delta = elliptical_corrected_delta(logp, gamma, coefficient=coefficient, threshold=t, eta=policy.eta)
    return _result(kind, eps, delta, reference=f"corrected approximate {thm}'", **common)


# ---------------------------------------------------------------- extensions (paper §4.4)
def repeated_sampling(guarantee: Guarantee, n_samples: int, *, method: str = "basic",
                      delta_prime: float | None = None) -> Guarantee:
    """Guarantee of ``n_samples`` independent samples from the same policy (same context).

    ``"basic"``: (Tε, Tδ). ``"advanced"`` (Dwork & Roth Thm 3.20, with the paper's typo fixed,
    errata KL-17): (√(2T·ln(1/δ'))·ε + T·ε·(e^ε − 1), T·δ + δ') with δ' ∈ (0, 1).

    Examples
    --------
    >>> from dpbandits.privacy.guarantees import PureDP
    >>> g = PureDP(epsilon=0.1, unit="one record", neighbouring="add/remove")
    >>> round(repeated_sampling(g, 100, method="advanced", delta_prime=1e-6).epsilon, 6)
    6.308231
    """
    t = check_int(n_samples, "n_samples", minimum=1)
    check_one_of(method, "method", ("basic", "advanced"))
    eps, delta = guarantee.epsilon, guarantee.delta
    if method == "basic":
        new_eps, new_delta = basic_composition([guarantee] * t)
    elif not math.isfinite(eps) or eps == 0.0 or delta >= 1.0:
        if delta_prime is None:
            raise InvalidParameterError("delta_prime must be a float in (0, 1) for method='advanced'; got None")
        new_eps, new_delta = t * eps, min(1.0, t * delta + float(delta_prime))
    else:
        if delta_prime is None:
            raise InvalidParameterError("delta_prime must be a float in (0, 1) for method='advanced'; got None")
        new_eps, new_delta = advanced_composition(eps, delta, t, delta_prime)
    composed = guarantee.with_parameters(new_eps, new_delta)
    return replace(composed, unit=f"{guarantee.unit}; {t} samples ({method} composition)")


def inexact_policy(guarantee: Guarantee, divergence: float, *, variant: str = "corrected",
                   neighbour_divergence: float | None = None) -> Guarantee:
    """Guarantee of an approximate policy π̂ with D∞(π̃‖π̂) <= ε̂ and D∞(π̂‖π̃) <= ε̂ on every dataset.

    Corrected: (ε + 2ε̂, e^{ε̂}·δ) (errata KL-18). Paper: (ε + 2ε̂, δ), invalid when δ > 0 (warning).
    If π̂ ∝ π0·e^{û/η} with ‖û − u‖∞ <= e, then ε̂ = 2e/η.

    With ``neighbour_divergence`` = ε̂' (the bound at the neighbouring datasets, where it may differ
    from ``divergence`` = ε̂ at D): (ε + ε̂ + ε̂', e^{max(ε̂, ε̂')}·δ), since
    π̂_D(S) <= e^{ε̂}(e^ε·π̃_{D'}(S) + δ) <= e^{ε̂ + ε + ε̂'}·π̂_{D'}(S) + e^{ε̂}·δ and symmetrically.
    """
    check_one_of(variant, "variant", ("corrected", "paper"))
    eh = check_in_interval(divergence, "divergence", 0.0, math.inf, closed="left")
    other = eh if neighbour_divergence is None else check_in_interval(
        neighbour_divergence, "neighbour_divergence", 0.0, math.inf, closed="left")
    delta = guarantee.delta
    if variant == "paper":
        if delta > 0:
            _paper_warning("the inexact-policy extension with delta > 0")
    elif delta > 0:
        delta = min(1.0, math.exp(max(eh, other)) * delta)
    return guarantee.with_parameters(guarantee.epsilon + eh + other, delta)


def rejection_sampling_guarantee(guarantee: Guarantee, failure_bound: float) -> Guarantee:
    """Guarantee of :meth:`EllipticalKLPolicy.sample_by_rejection` from that of one exact sample.

    The sampler outputs (1 − q_D)·π̃(·; D) + q_D·π0 with q_D <= q̄ = ``failure_bound`` on every dataset
    of the declared domain (a data-independent fallback when all proposals are rejected); an
    (ε, δ)-DP π̃ gives (ε + ln(1/(1 − q̄)), δ + q̄) (proof in the sampler's Privacy section).

    Examples
    --------
    >>> from dpbandits.privacy.guarantees import PureDP
    >>> g = rejection_sampling_guarantee(PureDP(epsilon=0.5, unit="one record", neighbouring="add/remove"), 1e-9)
    >>> round(g.epsilon, 9), g.delta
    (0.500000001, 1e-09)
    """
    q = check_in_interval(failure_bound, "failure_bound", 0.0, 1.0, closed="left")
    # ε' = ε + ln(1/(1 − q̄)), δ' = δ + q̄
    return guarantee.with_parameters(guarantee.epsilon - math.log1p(-q), min(1.0, guarantee.delta + q))
