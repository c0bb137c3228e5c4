"""Accountants of the KL MAB policy: Theorem 1 (pure and approximate), its corrections, the exact loss.

The per-instance guarantees of one action sampled from a fitted
:class:`~dpbandits.algorithms.offline.KLMABPolicy` (add/remove of one (arm, reward) record), the
exact per-instance loss in closed form (``variant="tight"``), and the exact utility sensitivity over
a declared per-arm count floor (``scope="domain"``). The shared vocabulary (units, variants,
scopes) is that of :mod:`.accountants`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from dpbandits._core.errors import InvalidParameterError
from dpbandits._core.typing import FloatArray
from dpbandits._core.validation import check_in_interval, check_int, check_one_of, check_positive_float
from dpbandits.algorithms.offline._kl_accounting import (
    KINDS,
    PAPER,
    UNIT_MAB,
    VARIANTS,
    FittedMAB,
    _cap_log_delta,
    _check_scope,
    _common,
    _logsumexp,
    _paper_warning,
    _result,
)
from dpbandits.privacy.guarantees import Guarantee, Neighbouring

__all__ = [
    "account_mab",
    "corollary1_paper",
    "mab_domain_sensitivity",
    "mab_exact_loss",
    "theorem1_approx_paper",
    "theorem1_corrected_delta",
    "theorem1_pure_epsilon",
]


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
    log_x = _logsumexp(log_pi0[low] + u_ub[low] / eta)
    log_y = _logsumexp(log_pi0[high] + u_lb[high] / eta)
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
    samples compose (:func:`~dpbandits.algorithms.offline.accountants_extensions.repeated_sampling`). Per instance, the value depends on D (publishing
    it leaks N(·; D)). Over the domain, ε is calibrated from public η, β0, R and m only and holds
    for every pair of neighbouring datasets that both satisfy the floor: the loss of a pair is at
    most |δu|/η <= Δ(m)/η because only one arm's utility moves (see :func:`mab_exact_loss`).

    References
    ----------
    Zhang et al. (2025), Theorem 1 (eq. 9) and Corollary 1,
    paper errata KL-C1, KL-C2 (Theorem 1′, Lemma 1′) and KL-7 to KL-12.
    """
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
    policy._check_fitted()  # from here on the fitted statistics are read
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
