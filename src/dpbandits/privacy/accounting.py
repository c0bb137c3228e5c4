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
  PLD and RDP accountants.
* :func:`gaussian_delta` / :func:`gaussian_epsilon` — the exact privacy profile of the Gaussian
  mechanism (Balle & Wang 2018, Theorem 8).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple

from dpbandits._core.errors import (
    DependencyNotInstalledError,
    InvalidParameterError,
    PrivacyBudgetExceededError,
    UnsupportedEventError,
)
from dpbandits._core.validation import check_delta, check_epsilon, check_int, check_sensitivity
from dpbandits.privacy.guarantees import ApproxDP, Guarantee, Neighbouring, PureDP

__all__ = [
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
    "to_dp_accounting",
]


class EpsilonDelta(NamedTuple):
    """A pair of privacy parameters (ε, δ)."""

    epsilon: float
    delta: float


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
# Events
# ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PrivacyEvent:
    """Base class of privacy events (immutable records of one private release)."""


@dataclass(frozen=True)
class LaplaceEvent(PrivacyEvent):
    """Laplace noise of scale b added to a query of ℓ1-sensitivity Δ: pure (Δ/b)-DP.

    Parameters
    ----------
    scale : float
        b > 0.
    sensitivity : float, default 1
        Δ > 0.
    """

    scale: float
    sensitivity: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "scale", check_sensitivity(self.scale, "scale"))
        object.__setattr__(self, "sensitivity", check_sensitivity(self.sensitivity, "sensitivity"))

    @property
    def epsilon(self) -> float:
        """ε = Δ/b."""
        return self.sensitivity / self.scale


@dataclass(frozen=True)
class GaussianEvent(PrivacyEvent):
    """Gaussian noise N(0, σ²) added to a query of ℓ2-sensitivity Δ.

    Parameters
    ----------
    sigma : float
        σ > 0.
    l2_sensitivity : float, default 1
        Δ > 0.
    """

    sigma: float
    l2_sensitivity: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "sigma", check_sensitivity(self.sigma, "sigma"))
        object.__setattr__(self, "l2_sensitivity", check_sensitivity(self.l2_sensitivity, "l2_sensitivity"))

    @property
    def noise_multiplier(self) -> float:
        """σ/Δ (the parameter of ``dp_accounting.GaussianDpEvent``)."""
        return self.sigma / self.l2_sensitivity


@dataclass(frozen=True)
class PureEvent(PrivacyEvent):
    """Any ε-DP release (exponential mechanism, report-noisy-max, ...).

    Parameters
    ----------
    epsilon : float
        ε >= 0, finite.
    """

    epsilon: float

    def __post_init__(self) -> None:
        eps = self.epsilon
        if isinstance(eps, bool) or not isinstance(eps, int | float) or not 0 <= eps < math.inf:
            raise InvalidParameterError(f"epsilon must be a finite float >= 0; got {eps!r}")
        object.__setattr__(self, "epsilon", float(eps))


@dataclass(frozen=True)
class ApproxEvent(PrivacyEvent):
    """Any (ε, δ)-DP release.

    Parameters
    ----------
    epsilon : float
        ε >= 0, finite.
    delta : float
        δ in [0, 1).
    """

    epsilon: float
    delta: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", PureEvent(self.epsilon).epsilon)
        object.__setattr__(self, "delta", check_delta(self.delta))


@dataclass(frozen=True)
class ComposedEvent(PrivacyEvent):
    """The events in ``events`` run once each, the whole group repeated ``count`` times.

    Parameters
    ----------
    events : tuple of PrivacyEvent
    count : int, default 1
        Number of repetitions, >= 1.
    """

    events: tuple[PrivacyEvent, ...]
    count: int = 1

    def __post_init__(self) -> None:
        events = tuple(self.events)
        if not events:
            raise InvalidParameterError("events must not be empty; got 0 events")
        for event in events:
            if not isinstance(event, PrivacyEvent):
                raise InvalidParameterError(f"events must contain PrivacyEvent values; got {event!r}")
        object.__setattr__(self, "events", events)
        object.__setattr__(self, "count", check_int(self.count, "count", minimum=1))


def _flatten(event: PrivacyEvent, multiplicity: int = 1) -> Iterator[tuple[PrivacyEvent, int]]:
    if isinstance(event, ComposedEvent):
        for inner in event.events:
            yield from _flatten(inner, multiplicity * event.count)
    else:
        yield event, multiplicity


def _fixed_parameters(event: PrivacyEvent) -> EpsilonDelta:
    if isinstance(event, LaplaceEvent):
        return EpsilonDelta(event.epsilon, 0.0)
    if isinstance(event, PureEvent):
        return EpsilonDelta(event.epsilon, 0.0)
    if isinstance(event, ApproxEvent):
        return EpsilonDelta(event.epsilon, event.delta)
    if isinstance(event, GaussianEvent):
        raise UnsupportedEventError(
            "a GaussianEvent has no single (epsilon, delta); use Accountant().get_epsilon(delta), "
            "which composes Gaussian events exactly"
        )
    raise UnsupportedEventError(f"cannot account for event {event!r}")


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
            for event, count in _flatten(item):
                eps_i, delta_i = _fixed_parameters(event)
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


class Accountant:
    """A privacy ledger: records events and reports ε(δ) of their composition.

    Gaussian events compose exactly (as one Gaussian mechanism with μ = √Σ(Δᵢ/σᵢ)²). The other events
    compose by basic composition, or by advanced composition when they are k copies of one (ε, δ);
    the better valid bound is reported (each candidate is an upper bound, so their minimum is one).

    Parameters
    ----------
    epsilon_budget : float, optional
        If given (with ``delta_budget``), :meth:`spend` refuses, *before* recording, an event that would
        make ε(``delta_budget``) exceed this budget.
    delta_budget : float, default 0
        The δ at which the budget is checked.

    Examples
    --------
    >>> from dpbandits.privacy.accounting import Accountant, LaplaceEvent
    >>> acc = Accountant()
    >>> acc.spend(LaplaceEvent(scale=10.0), count=5)
    >>> acc.get_epsilon(0.0)
    0.5
    """

    def __init__(self, epsilon_budget: float | None = None, delta_budget: float = 0.0) -> None:
        self.epsilon_budget = None if epsilon_budget is None else check_epsilon(epsilon_budget, "epsilon_budget")
        self.delta_budget = check_delta(delta_budget, "delta_budget")
        self._ledger: list[tuple[PrivacyEvent, int]] = []

    @property
    def events(self) -> tuple[PrivacyEvent, ...]:
        """The recorded events, as one :class:`ComposedEvent` per :meth:`spend` call."""
        return tuple(ComposedEvent((event,), count) for event, count in self._ledger)

    def spend(self, event: PrivacyEvent, count: int = 1) -> None:
        """Record ``count`` runs of ``event``.

        Raises
        ------
        PrivacyBudgetExceededError
            If a budget was set and would be exceeded; nothing is recorded then.
        """
        if not isinstance(event, PrivacyEvent):
            raise InvalidParameterError(f"event must be a PrivacyEvent; got {event!r}")
        count = check_int(count, "count", minimum=1)
        for inner, _count in _flatten(event):  # refuse events no theorem here can bound, before recording
            if not isinstance(inner, GaussianEvent):
                _fixed_parameters(inner)
        if self.epsilon_budget is not None:
            spent = self._epsilon([*self._ledger, (event, count)], self.delta_budget)
            if spent > self.epsilon_budget:
                raise PrivacyBudgetExceededError(
                    f"spending {count} × {event!r} would bring epsilon to {spent:.6g} at "
                    f"delta={self.delta_budget:g}, over epsilon_budget={self.epsilon_budget:g}"
                )
        self._ledger.append((event, count))

    def get_epsilon(self, delta: float) -> float:
        """Return an upper bound on ε of everything spent, at ``delta``.

        Parameters
        ----------
        delta : float
            Total δ in [0, 1); it must cover the δ the (ε, δ) events already spend, strictly if
            Gaussian events were spent.

        Returns
        -------
        float
            ``inf`` when no finite ε holds at this δ (Gaussian events and no δ left).
        """
        return self._epsilon(self._ledger, check_delta(delta))

    def guarantee(self, delta: float, *, unit: str, neighbouring: Neighbouring | str, reference: str = "") -> Guarantee:
        """Return the guarantee of everything spent, at ``delta``, for the given unit and relation."""
        epsilon = self.get_epsilon(delta)
        if math.isinf(epsilon):
            return PureDP(epsilon=math.inf, unit=unit, neighbouring=neighbouring,  # type: ignore[arg-type]
                          reason=f"no finite epsilon at delta={delta}", reference=reference)
        cls: type[Guarantee] = PureDP if delta == 0.0 else ApproxDP
        return cls(epsilon=epsilon, delta=delta, unit=unit, neighbouring=neighbouring,  # type: ignore[arg-type]
                   reference=reference or "dpbandits Accountant (exact Gaussian, basic/advanced composition)")

    @staticmethod
    def _epsilon(ledger: list[tuple[PrivacyEvent, int]], delta: float) -> float:
        mu_squared = 0.0
        fixed: list[tuple[EpsilonDelta, int]] = []
        for top_event, top_count in ledger:
            for event, count in _flatten(top_event, top_count):
                if isinstance(event, GaussianEvent):
                    # μ² = Σ (Δᵢ/σᵢ)²: composed Gaussians are one Gaussian mechanism
                    mu_squared += count / event.noise_multiplier**2
                else:
                    fixed.append((_fixed_parameters(event), count))
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

    def __repr__(self) -> str:
        return f"Accountant(events={len(self._ledger)}, epsilon_budget={self.epsilon_budget})"


# ---------------------------------------------------------------------------------------------------
# Export to dp_accounting
# ---------------------------------------------------------------------------------------------------


def _import_dp_accounting() -> Any:
    try:
        import dp_accounting
    except ImportError as exc:
        raise DependencyNotInstalledError(
            "exporting to dp_accounting needs it installed; install the extra: "
            "pip install 'dpbandits[accounting]'"
        ) from exc
    return dp_accounting


def to_dp_accounting(event: PrivacyEvent) -> Any:
    """Return the ``dp_accounting`` event equivalent to ``event``.

    * :class:`LaplaceEvent` → ``LaplaceDpEvent(noise_multiplier=b/Δ)``;
    * :class:`GaussianEvent` → ``GaussianDpEvent(noise_multiplier=σ/Δ)``;
    * :class:`PureEvent` → ``RandomizedResponseDpEvent(noise_parameter=2/(1+e^ε), num_buckets=2)``,
      binary randomised response at ε, which dominates every ε-DP mechanism (Kairouz, Oh & Viswanath
      2015, Theorem 3.4); dp_accounting accounts for it under the replace-one relation only;
    * :class:`ComposedEvent` → ``SelfComposedDpEvent(ComposedDpEvent([...]), count)``; when the group holds
      a pure event, ``ComposedDpEvent([group] * count)`` instead (dp_accounting 0.6's PLD accountant
      ignores ``count`` for a self-composed randomised-response event).

    Raises
    ------
    UnsupportedEventError
        For an :class:`ApproxEvent` with δ > 0 (dp_accounting 0.6 has no (ε, δ) event).
    DependencyNotInstalledError
        If dp_accounting is not installed (extra ``accounting``).
    """
    dpa = _import_dp_accounting()
    if isinstance(event, LaplaceEvent):
        return dpa.LaplaceDpEvent(noise_multiplier=event.scale / event.sensitivity)
    if isinstance(event, GaussianEvent):
        return dpa.GaussianDpEvent(noise_multiplier=event.noise_multiplier)
    if isinstance(event, PureEvent | ApproxEvent):
        if isinstance(event, ApproxEvent) and event.delta > 0.0:
            raise UnsupportedEventError(
                f"dp_accounting has no (epsilon, delta) event; cannot export ApproxEvent with delta={event.delta}"
            )
        # binary randomised response: P(keep) = 1 − p/2, P(flip) = p/2, ratio e^ε ⇔ p = 2/(1 + e^ε)
        return dpa.RandomizedResponseDpEvent(noise_parameter=2.0 / (1.0 + math.exp(event.epsilon)), num_buckets=2)
    if isinstance(event, ComposedEvent):
        inner = [to_dp_accounting(e) for e in event.events]
        group = inner[0] if len(inner) == 1 else dpa.ComposedDpEvent(inner)
        if event.count == 1:
            return group
        if any(isinstance(e, PureEvent | ApproxEvent) for e, _n in _flatten(event)):
            # dp_accounting 0.6's PLDAccountant ignores the count of a self-composed randomised-response
            # event (it composes it once), so repeat the group explicitly instead
            return dpa.ComposedDpEvent([group] * event.count)
        return dpa.SelfComposedDpEvent(group, event.count)
    raise UnsupportedEventError(f"cannot export event {event!r} to dp_accounting")
