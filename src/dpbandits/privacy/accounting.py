"""Privacy accounting: privacy events, composition theorems, a ledger, and export to dp_accounting.

A *privacy event* is an immutable record of one private release, in terms of its noise
(:class:`LaplaceEvent`, :class:`GaussianEvent`) or of its guarantee (:class:`PureEvent`,
:class:`ApproxEvent`); :class:`ComposedEvent` repeats a group of events. Mechanisms expose their event as
``mechanism.event``.

* :func:`basic_composition` — ε and δ add up (Dwork et al. 2006).
* :func:`advanced_composition` — k-fold composition of (ε, δ)-DP mechanisms is
  (√(2k ln(1/δ'))·ε + k·ε·(e^ε − 1), kδ + δ')-DP (Dwork, Rothblum & Vadhan 2010, Theorem III.3).
* :class:`Accountant` — a ledger of events that reports ε(δ): Gaussian events compose *exactly*
  (k Gaussian mechanisms with ratios Δᵢ/σᵢ are one Gaussian mechanism with μ = √Σ(Δᵢ/σᵢ)²;
  Dong, Roth & Su 2022, Corollary 3.3), everything else by the better of basic and advanced composition.
* :func:`to_dp_accounting` — the same events as ``dp_accounting`` events, to cross-check against its
  PLD and RDP accountants; ``Accountant(method="pld" | "rdp")`` composes through them
  (:mod:`dpbandits.privacy.dp_accounting_bridge`).
* :func:`gaussian_delta` / :func:`gaussian_epsilon` — the exact privacy profile of the Gaussian
  mechanism (Balle & Wang 2018, Theorem 8).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from dpbandits._core.errors import InvalidParameterError, PrivacyBudgetExceededError
from dpbandits._core.validation import check_delta, check_epsilon, check_int, check_one_of, check_sensitivity
from dpbandits.privacy.dp_accounting_bridge import check_supported, pld_epsilon, rdp_epsilon, to_dp_accounting
from dpbandits.privacy.events import (
    ApproxEvent,
    ComposedEvent,
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
    "Accountant",
    "ApproxEvent",
    "ComposedEvent",
    "EpsilonDelta",
    "GaussianEvent",
    "LaplaceEvent",
    "PrivacyEvent",
    "PureEvent",
    "advanced_composition",
    "basic_composition",
    "compose_guarantees",
    "gaussian_delta",
    "gaussian_epsilon",
    "guarantee_event",
    "spend",
    "to_dp_accounting",
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
        single (ε, δ); use :class:`Accountant`).

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
# Accountant
# ---------------------------------------------------------------------------------------------------

_DELTA_SPLITS = (0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95)


ACCOUNTING_METHODS: tuple[str, ...] = ("basic", "pld", "rdp")
"""Composition methods of :class:`Accountant`."""


class Accountant:
    """A privacy ledger: records events, reports ε(δ) of their composition, and enforces a budget.

    Every private algorithm and release of the library takes ``accountant=``: it records its event
    here *before* drawing any noise, so a release that would exceed the budget raises
    :class:`~dpbandits._core.errors.PrivacyBudgetExceededError` and draws nothing.

    Parameters
    ----------
    epsilon_budget : float, optional
        If given, :meth:`spend` refuses, *before* recording, an event that would make
        ε(``delta_budget``) exceed this budget.
    delta_budget : float, default 0
        The δ at which the budget is checked (and at which :meth:`spent` / :meth:`remaining` report).
    method : {"basic", "pld", "rdp"}, default "basic"
        ``"basic"``: Gaussian events compose exactly (one Gaussian mechanism with μ = √Σ(Δᵢ/σᵢ)²), the
        others by the better of basic and advanced composition — the simple, always-available choice.
        ``"pld"``: privacy-loss distributions through ``dp_accounting`` (tightest; Laplace and
        Gaussian exactly, (ε, δ) events through their dominating pair). ``"rdp"``: Rényi DP through
        ``dp_accounting`` (no (ε, δ) events with δ > 0). See
        :mod:`dpbandits.privacy.dp_accounting_bridge`.

    Notes
    -----
    The events must all protect the same unit under the same neighbouring relation: the accountant
    composes numbers, it does not convert between relations.

    Examples
    --------
    >>> from dpbandits.privacy.accounting import Accountant, LaplaceEvent
    >>> acc = Accountant(epsilon_budget=1.0)
    >>> acc.spend(LaplaceEvent(scale=10.0), count=5)
    >>> acc.spent().epsilon, acc.remaining().epsilon
    (0.5, 0.5)
    """

    def __init__(self, epsilon_budget: float | None = None, delta_budget: float = 0.0, *,
                 method: str = "basic") -> None:
        self.epsilon_budget = None if epsilon_budget is None else check_epsilon(epsilon_budget, "epsilon_budget")
        self.delta_budget = check_delta(delta_budget, "delta_budget")
        self.method = check_one_of(method, "method", ACCOUNTING_METHODS)
        self._ledger: list[tuple[PrivacyEvent, int]] = []

    @property
    def events(self) -> tuple[PrivacyEvent, ...]:
        """The recorded events, as one :class:`ComposedEvent` per :meth:`spend` call."""
        return tuple(ComposedEvent((event, ), count) for event, count in self._ledger)

    def _check_event(self, event: PrivacyEvent, count: int) -> int:
        if not isinstance(event, PrivacyEvent):
            raise InvalidParameterError(f"event must be a PrivacyEvent; got {event!r}")
        count = check_int(count, "count", minimum=1)
        # refuse, before recording, events the chosen method cannot bound
        if self.method == "basic":
            for leaf, _n in flatten_event(event):
                if not isinstance(leaf, GaussianEvent):
                    fixed_parameters(leaf)
        else:
            check_supported(event, self.method)
        return count

    def can_spend(self, event: PrivacyEvent, count: int = 1) -> bool:
        """Whether :meth:`spend` would accept ``count`` runs of ``event`` (nothing is recorded)."""
        count = self._check_event(event, count)
        if self.epsilon_budget is None:
            return True
        return self._epsilon([*self._ledger, (event, count)], self.delta_budget) <= self.epsilon_budget

    def spend(self, event: PrivacyEvent, count: int = 1) -> None:
        """Record ``count`` runs of ``event``.

        Raises
        ------
        PrivacyBudgetExceededError
            If a budget was set and would be exceeded; nothing is recorded then.
        UnsupportedEventError
            If the accounting method cannot bound the event; nothing is recorded then.
        """
        count = self._check_event(event, count)
        if self.epsilon_budget is not None:
            spent = self._epsilon([*self._ledger, (event, count)], self.delta_budget)
            if spent > self.epsilon_budget:
                raise PrivacyBudgetExceededError(
                    f"spending {count} × {event!r} would bring epsilon to {spent:.6g} at "
                    f"delta={self.delta_budget:g}, over epsilon_budget={self.epsilon_budget:g}; nothing was spent"
                )
        self._ledger.append((event, count))

    def spent(self, delta: float | None = None) -> EpsilonDelta:
        """(ε, δ) spent so far, at ``delta`` (default ``delta_budget``)."""
        at = self.delta_budget if delta is None else check_delta(delta)
        return EpsilonDelta(self.get_epsilon(at), at)

    def remaining(self) -> EpsilonDelta:
        """(ε budget − ε spent, δ budget) at ``delta_budget``; ε is ``inf`` without a budget."""
        if self.epsilon_budget is None:
            return EpsilonDelta(math.inf, self.delta_budget)
        return EpsilonDelta(max(0.0, self.epsilon_budget - self.get_epsilon(self.delta_budget)), self.delta_budget)

    def get_epsilon(self, delta: float) -> float:
        """Return an upper bound on ε of everything spent, at ``delta``.

        Parameters
        ----------
        delta : float
            Total δ in [0, 1); with ``method="basic"`` it must cover the δ the (ε, δ) events already
            spend, strictly if Gaussian events were spent.

        Returns
        -------
        float
            ``inf`` when no finite ε holds at this δ (Gaussian events and no δ left).
        """
        return self._epsilon(self._ledger, check_delta(delta))

    def guarantee(self, delta: float | None = None, *, unit: str, neighbouring: Neighbouring | str,
                  reference: str = "") -> Guarantee:
        """Return the guarantee of everything spent, at ``delta``, for the given unit and relation.

        Parameters
        ----------
        delta : float, optional
            δ; default ``delta_budget`` (as :meth:`spent`).
        unit, neighbouring : str, Neighbouring
            What every recorded release protects, and under which relation: the caller's to state,
            since the accountant composes numbers only (keyword-only, no default).
        reference : str, optional
        """
        delta = self.delta_budget if delta is None else delta
        epsilon = self.get_epsilon(delta)
        if math.isinf(epsilon):
            return PureDP(epsilon=math.inf, unit=unit, neighbouring=neighbouring,  # type: ignore[arg-type]
                          reason=f"no finite epsilon at delta={delta}", reference=reference)
        cls: type[Guarantee] = PureDP if delta == 0.0 else ApproxDP
        return cls(epsilon=epsilon, delta=delta, unit=unit, neighbouring=neighbouring,  # type: ignore[arg-type]
                   reference=reference or f"dpbandits Accountant (method={self.method!r})")

    def _epsilon(self, ledger: list[tuple[PrivacyEvent, int]], delta: float) -> float:
        if self.method == "pld":
            return pld_epsilon(ledger, delta)
        if self.method == "rdp":
            return rdp_epsilon(ledger, delta)
        return _basic_epsilon(ledger, delta)

    def __repr__(self) -> str:
        return (f"Accountant(method={self.method!r}, events={len(self._ledger)}, "
                f"epsilon_budget={self.epsilon_budget}, delta_budget={self.delta_budget})")


def _basic_epsilon(ledger: list[tuple[PrivacyEvent, int]], delta: float) -> float:
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


def spend(accountant: Accountant | None, event: PrivacyEvent | Guarantee, count: int = 1) -> None:
    """Record ``count`` releases in ``accountant`` (nothing when it is None), before any noise is drawn.

    Every private algorithm calls this at its release points with its own event (or guarantee).

    Raises
    ------
    PrivacyBudgetExceededError
        If the accountant's budget would be exceeded; nothing is recorded.
    InvalidParameterError
        If ``accountant`` is not an :class:`Accountant`.
    """
    if accountant is None:
        return
    if not isinstance(accountant, Accountant):
        raise InvalidParameterError(f"accountant must be an Accountant or None; got {accountant!r}")
    accountant.spend(guarantee_event(event) if isinstance(event, Guarantee) else event, count)
