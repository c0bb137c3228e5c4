"""Composition theorems and the exact privacy profile of the Gaussian mechanism.

* :func:`basic_composition` — ε and δ add up (Dwork et al. 2006).
* :func:`advanced_composition` — k-fold composition of (ε, δ)-DP mechanisms is
  (√(2k ln(1/δ'))·ε + k·ε·(e^ε − 1), kδ + δ')-DP (Dwork, Rothblum & Vadhan 2010, Theorem III.3).
* :func:`ledger_epsilon` — ε(δ) of a ledger of (event, count) pairs by one of
  :data:`ACCOUNTING_METHODS`: Gaussian events compose *exactly* (k Gaussian mechanisms with ratios
  Δᵢ/σᵢ are one Gaussian mechanism with μ = √Σ(Δᵢ/σᵢ)²; Dong, Roth & Su 2022, Corollary 3.3), pure
  events by exact summation (Σεᵢ, at δ = 0 under every method), the rest by the better of basic and
  advanced composition or through ``dp_accounting`` (PLD, RDP).
* :func:`gaussian_delta` / :func:`gaussian_epsilon` — the exact privacy profile of the Gaussian
  mechanism (Balle & Wang 2018, Theorem 8).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from dpbandits._core.errors import InvalidParameterError
from dpbandits._core.validation import check_delta, check_epsilon, check_int, check_sensitivity
from dpbandits.privacy.dp_accounting_bridge import pld_epsilon, rdp_epsilon
from dpbandits.privacy.events import (
    ApproxEvent,
    EpsilonDelta,
    GaussianEvent,
    LaplaceEvent,
    PrivacyEvent,
    PureEvent,
    fixed_parameters,
    flatten_event,
)
from dpbandits.privacy.guarantees import ApproxDP, Guarantee, Neighbouring, PureDP

__all__ = [
    "ACCOUNTING_METHODS",
    "advanced_composition",
    "basic_composition",
    "compose_guarantees",
    "gaussian_delta",
    "gaussian_epsilon",
    "guarantee_event",
    "ledger_epsilon",
    "pure_sum",
]

# ---------------------------------------------------------------------------------------------------
# Exact privacy profile of the Gaussian mechanism
# ---------------------------------------------------------------------------------------------------


def _gaussian_delta(mu: float, epsilon: float) -> float:
    from scipy.special import log_ndtr  # lazy: keep `import dpbandits` light

    # δ(ε) = Φ(μ/2 − ε/μ) − e^ε·Φ(−μ/2 − ε/μ), μ = Δ/σ; second term in log space (no overflow)
    first = math.exp(float(log_ndtr(mu / 2.0 - epsilon / mu)))
    second = math.exp(epsilon + float(log_ndtr(-mu / 2.0 - epsilon / mu)))
    return max(0.0, first - second)


def gaussian_delta(sigma: float, l2_sensitivity: float, epsilon: float) -> float:
    """Return the exact δ(ε) of the Gaussian mechanism N(f(D), σ²I) with ℓ2-sensitivity Δ.

    δ(ε) = Φ(Δ/(2σ) − εσ/Δ) − e^ε·Φ(−Δ/(2σ) − εσ/Δ): the mechanism is (ε, δ)-DP if and only if
    δ >= δ(ε).

    Parameters
    ----------
    sigma : float
        Noise standard deviation σ > 0.
    l2_sensitivity : float
        Δ > 0.
    epsilon : float
        ε >= 0.

    Returns
    -------
    float

    References
    ----------
    Balle & Wang (2018), "Improving the Gaussian mechanism for differential privacy", Theorem 8.

    Examples
    --------
    >>> from dpbandits.privacy.accounting import gaussian_delta
    >>> round(gaussian_delta(3.73, 1.0, 1.0) * 1e5, 2)
    1.0
    """
    sigma = check_sensitivity(sigma, "sigma")
    delta_f = check_sensitivity(l2_sensitivity, "l2_sensitivity")
    if isinstance(epsilon, bool) or not isinstance(epsilon, int | float) or not 0 <= epsilon < math.inf:
        raise InvalidParameterError(f"epsilon must be a finite float >= 0; got {epsilon!r}")
    return _gaussian_delta(delta_f / sigma, float(epsilon))


def _gaussian_epsilon(mu: float, delta: float) -> float:
    from scipy.optimize import brentq  # lazy: keep `import dpbandits` light

    if _gaussian_delta(mu, 0.0) <= delta:
        return 0.0
    upper = 1.0
    while _gaussian_delta(mu, upper) > delta:
        upper *= 2.0
    root = float(brentq(lambda e: _gaussian_delta(mu, e) - delta, 0.0, upper, xtol=1e-12, rtol=1e-12))
    # round ε up so that δ(ε) <= δ holds in floating point
    while _gaussian_delta(mu, root) > delta:
        root = root * (1.0 + 1e-12) + 1e-15
    return root


def gaussian_epsilon(sigma: float, l2_sensitivity: float, delta: float) -> float:
    """Return the smallest ε with δ(ε) <= ``delta`` for the Gaussian mechanism (rounded up).

    Parameters
    ----------
    sigma : float
        σ > 0.
    l2_sensitivity : float
        Δ > 0.
    delta : float
        δ in (0, 1).

    Returns
    -------
    float

    References
    ----------
    Balle & Wang (2018), Theorem 8.
    """
    sigma = check_sensitivity(sigma, "sigma")
    delta_f = check_sensitivity(l2_sensitivity, "l2_sensitivity")
    delta = check_delta(delta)
    if delta == 0.0:
        raise InvalidParameterError("delta must be > 0 for the Gaussian mechanism; got 0.0")
    return _gaussian_epsilon(delta_f / sigma, delta)


# ---------------------------------------------------------------------------------------------------
# Composition theorems
# ---------------------------------------------------------------------------------------------------


def basic_composition(items: Iterable[Guarantee | PrivacyEvent]) -> EpsilonDelta:
    """Basic composition: (Σεᵢ, Σδᵢ).

    Parameters
    ----------
    items : iterable of Guarantee or PrivacyEvent
        Guarantees must share one neighbouring relation. Gaussian events are refused (they have no
        single (ε, δ); use :class:`~dpbandits.privacy.accounting.Accountant`).

    Returns
    -------
    EpsilonDelta
        δ is capped at 1.

    Raises
    ------
    UnsupportedEventError
        For a :class:`GaussianEvent`.
    InvalidParameterError
        If guarantees of different neighbouring relations are mixed.

    References
    ----------
    Dwork, McSherry, Nissim & Smith (2006); Dwork & Roth (2014), Theorem 3.16.

    Examples
    --------
    >>> from dpbandits.privacy.accounting import basic_composition, LaplaceEvent, PureEvent
    >>> basic_composition([LaplaceEvent(scale=2.0), PureEvent(0.25)])
    EpsilonDelta(epsilon=0.75, delta=0.0)
    """
    epsilon, delta = 0.0, 0.0
    relations: set[Neighbouring] = set()
    for item in items:
        if isinstance(item, Guarantee):
            relations.add(item.neighbouring)
            epsilon += item.epsilon
            delta += item.delta
        elif isinstance(item, PrivacyEvent):
            for event, count in flatten_event(item):
                eps_i, delta_i = fixed_parameters(event)
                epsilon += count * eps_i
                delta += count * delta_i
        else:
            raise InvalidParameterError(f"items must be Guarantee or PrivacyEvent values; got {item!r}")
    if len(relations) > 1:
        raise InvalidParameterError(
            f"guarantees must share one neighbouring relation; got {sorted(r.value for r in relations)}"
        )
    return EpsilonDelta(epsilon, min(1.0, delta))


def compose_guarantees(guarantees: Iterable[Guarantee], *, unit: str | None = None) -> Guarantee:
    """Compose guarantees of one unit and neighbouring relation by basic composition.

    Parameters
    ----------
    guarantees : iterable of Guarantee
        At least one; all with the same neighbouring relation (and the same unit unless ``unit``).
    unit : str, optional
        The unit of the result when the guarantees name different units.

    Returns
    -------
    Guarantee
        :class:`PureDP` if the total δ is 0, else :class:`ApproxDP`; per-instance if any input is.
    """
    items = list(guarantees)
    if not items:
        raise InvalidParameterError("guarantees must not be empty; got 0 guarantees")
    units = {g.unit for g in items}
    if unit is None and len(units) > 1:
        raise InvalidParameterError(f"guarantees must share one unit (or pass unit=); got {sorted(units)}")
    epsilon, delta = basic_composition(items)
    cls: type[Guarantee] = PureDP if delta == 0.0 else ApproxDP
    references = "; ".join(dict.fromkeys(g.reference for g in items if g.reference))
    return cls(
        epsilon=epsilon,
        delta=delta,
        unit=items[0].unit if unit is None else unit,
        neighbouring=items[0].neighbouring,
        reference=f"basic composition of: {references}" if references else "basic composition",
        per_instance=any(g.per_instance for g in items),
        reason="; ".join(dict.fromkeys(g.reason for g in items if g.reason)),
    )


def advanced_composition(epsilon: float, delta: float, k: int, delta_prime: float) -> EpsilonDelta:
    """Advanced composition of k (ε, δ)-DP mechanisms (Dwork–Rothblum–Vadhan).

    ε' = √(2k·ln(1/δ'))·ε + k·ε·(e^ε − 1),  δ'' = k·δ + δ'.

    Parameters
    ----------
    epsilon : float
        ε > 0 of each mechanism.
    delta : float
        δ in [0, 1) of each mechanism.
    k : int
        Number of mechanisms, >= 1.
    delta_prime : float
        δ' in (0, 1).

    Returns
    -------
    EpsilonDelta
        (ε', min(1, δ'')).

    References
    ----------
    Dwork, Rothblum & Vadhan (2010), Theorem III.3; Dwork & Roth (2014), Theorem 3.20.

    Examples
    --------
    >>> from dpbandits.privacy.accounting import advanced_composition
    >>> round(advanced_composition(0.1, 0.0, 100, 1e-6).epsilon, 4)
    6.3082
    """
    eps = check_epsilon(epsilon)
    delta = check_delta(delta)
    k = check_int(k, "k", minimum=1)
    delta_prime = check_delta(delta_prime, "delta_prime")
    if delta_prime == 0.0:
        raise InvalidParameterError("delta_prime must be > 0 for advanced composition; got 0.0")
    # ε' = √(2k ln(1/δ'))·ε + k·ε·(e^ε − 1)
    eps_total = math.sqrt(2.0 * k * math.log(1.0 / delta_prime)) * eps + k * eps * math.expm1(eps)
    # δ'' = kδ + δ'
    return EpsilonDelta(eps_total, min(1.0, k * delta + delta_prime))


# ---------------------------------------------------------------------------------------------------
# A ledger's ε(δ)
# ---------------------------------------------------------------------------------------------------

_DELTA_SPLITS = (0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95)


ACCOUNTING_METHODS: tuple[str, ...] = ("basic", "pld", "rdp")
"""Composition methods of :class:`~dpbandits.privacy.accounting.Accountant`."""


def pure_sum(ledger: Sequence[tuple[PrivacyEvent, int]]) -> float | None:
    """Σ countᵢ·εᵢ when every leaf event is pure (Laplace, PureEvent, ApproxEvent with δ = 0), else None.

    Pure ε-DP events compose exactly to (Σεᵢ)-DP at δ = 0 (basic composition); the sum is taken with
    :func:`math.fsum`, so ten spends of 0.1 are exactly 1.0.
    """
    terms: list[float] = []
    for top_event, top_count in ledger:
        for event, count in flatten_event(top_event, top_count):
            if isinstance(event, LaplaceEvent | PureEvent) or (isinstance(event, ApproxEvent) and event.delta == 0.0):
                terms.append(count * event.epsilon)
            else:
                return None
    return math.fsum(terms)


def ledger_epsilon(method: str, ledger: Sequence[tuple[PrivacyEvent, int]], delta: float) -> float:
    """ε(δ) of the composition of ``ledger`` by ``method`` (one of :data:`ACCOUNTING_METHODS`).

    A ledger of pure events only composes by exact summation under every method: ε(0) = Σεᵢ, and
    ε(δ) = min(Σεᵢ, the method's ε(δ)) for δ > 0 (the PLD accountant alone would answer ∞ at δ = 0).

    Returns
    -------
    float
        0 for an empty ledger; ``inf`` when no finite ε holds at this δ.
    """
    pure = pure_sum(ledger)
    if pure is not None and delta == 0.0:
        return pure
    if method == "pld":
        epsilon = pld_epsilon(ledger, delta)
    elif method == "rdp":
        epsilon = rdp_epsilon(ledger, delta)
    else:
        epsilon = basic_epsilon(ledger, delta)
    return epsilon if pure is None else min(pure, epsilon)


def basic_epsilon(ledger: Sequence[tuple[PrivacyEvent, int]], delta: float) -> float:
    """Exact Gaussian composition plus the better of basic and advanced composition of the rest."""
    mu_squared = 0.0
    fixed: list[tuple[EpsilonDelta, int]] = []
    for top_event, top_count in ledger:
        for event, count in flatten_event(top_event, top_count):
            if isinstance(event, GaussianEvent):
                # μ² = Σ (Δᵢ/σᵢ)²: composed Gaussians are one Gaussian mechanism
                mu_squared += count / event.noise_multiplier**2
            else:
                fixed.append((fixed_parameters(event), count))
    delta_fixed = sum(n * d for (_e, d), n in fixed)
    remaining = delta - delta_fixed
    if remaining < 0.0:
        raise InvalidParameterError(
            f"delta must be >= the delta already spent by (epsilon, delta) events ({delta_fixed:.6g}); "
            f"got {delta!r}"
        )
    mu = math.sqrt(mu_squared)

    def gaussian_part(budget: float) -> float:
        if mu == 0.0:
            return 0.0
        return math.inf if budget <= 0.0 else _gaussian_epsilon(mu, budget)

    # basic composition of the fixed part; the Gaussian part gets all the remaining δ
    best = sum(n * e for (e, _d), n in fixed) + gaussian_part(remaining)
    distinct = {p for p, _n in fixed}
    k = sum(n for _p, n in fixed)
    if len(distinct) == 1 and k >= 2 and remaining > 0.0:
        ((eps_0, delta_0),) = distinct
        if eps_0 > 0.0:
            splits = (1.0,) if mu == 0.0 else _DELTA_SPLITS
            for share in splits:
                # advanced composition gets δ' = share·remaining, the Gaussian part the rest
                eps_adv = advanced_composition(eps_0, delta_0, k, share * remaining).epsilon
                best = min(best, eps_adv + gaussian_part((1.0 - share) * remaining))
    return best


def guarantee_event(guarantee: Guarantee) -> PrivacyEvent:
    """The event of a release whose guarantee is ``guarantee``: PureEvent(ε) or ApproxEvent(ε, δ).

    Raises
    ------
    InvalidParameterError
        If the guarantee is infinite (nothing to account: the release is not private).
    """
    if not math.isfinite(guarantee.epsilon):
        raise InvalidParameterError(
            f"an accountant cannot record a release with no finite guarantee (epsilon = inf: {guarantee.reason})"
        )
    return PureEvent(guarantee.epsilon) if guarantee.delta == 0.0 else ApproxEvent(guarantee.epsilon, guarantee.delta)

