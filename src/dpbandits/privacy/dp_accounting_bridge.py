"""Tight composition through Google's ``dp_accounting``: privacy-loss distributions (PLD) and Rényi DP.

* :func:`pld_epsilon` composes the ledger's privacy-loss distributions — Laplace and Gaussian
  mechanisms exactly (``from_laplace_mechanism`` / ``from_gaussian_mechanism``), any (ε, δ)-DP
  release through its dominating pair (``from_privacy_parameters``, the tight PLD of an (ε, δ)-DP
  mechanism, Kairouz, Oh & Viswanath 2015) — and reads ε(δ) off the composition (pessimistic
  discretisation: an upper bound).
* :func:`rdp_epsilon` adds Rényi-DP curves at dp_accounting's default orders — Gaussian
  α·Δ²/(2σ²), Laplace (Mironov 2017, Table II), pure ε-DP min(ε, α·ε²/2) (Bun & Steinke 2016,
  Proposition 1.4) — and converts with ``dp_accounting.rdp.compute_epsilon``. (ε, δ) events with δ > 0
  have no RDP curve and are refused.
* :func:`to_dp_accounting` exports events as ``dp_accounting`` events (to cross-check).

Both composition functions take a ledger of (event, count) pairs, the form
:class:`~dpbandits.privacy.accounting.Accountant` keeps.

References
----------
Google differential-privacy team, ``dp_accounting`` (PLD and RDP accountants).
I. Mironov, "Rényi differential privacy", CSF 2017.
M. Bun and T. Steinke, "Concentrated differential privacy", TCC 2016.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from dpbandits._core.errors import UnsupportedEventError
from dpbandits.privacy.events import (
    ApproxEvent,
    ComposedEvent,
    GaussianEvent,
    LaplaceEvent,
    PrivacyEvent,
    PureEvent,
    flatten_event,
)

__all__ = ["RDP_ORDERS", "check_supported", "pld_epsilon", "rdp_epsilon", "to_dp_accounting"]

Ledger = Sequence[tuple[PrivacyEvent, int]]

RDP_ORDERS: tuple[float, ...] = (
    *(1.0 + x / 10.0 for x in range(1, 100)), *range(12, 64), 128.0, 256.0, 512.0, 1024.0,
)
"""Rényi orders α at which curves are evaluated (dp_accounting's default grid)."""

_PLD_DISCRETISATION = 1e-4


def check_supported(event: PrivacyEvent, method: str) -> None:
    """Raise :class:`UnsupportedEventError` if ``method`` ("pld" or "rdp") cannot bound ``event``."""
    for leaf, _count in flatten_event(event):
        if not isinstance(leaf, LaplaceEvent | GaussianEvent | PureEvent | ApproxEvent):
            raise UnsupportedEventError(f"cannot account for event {leaf!r}")
        if method == "rdp" and isinstance(leaf, ApproxEvent) and leaf.delta > 0.0:
            _leaf_rdp(leaf, np.ones(1))  # raises with the explanation


def _leaf_pld(event: PrivacyEvent) -> Any:
    from dp_accounting.pld import common
    from dp_accounting.pld import privacy_loss_distribution as pld

    if isinstance(event, LaplaceEvent):
        return pld.from_laplace_mechanism(event.scale, sensitivity=event.sensitivity,
                                          value_discretization_interval=_PLD_DISCRETISATION)
    if isinstance(event, GaussianEvent):
        return pld.from_gaussian_mechanism(event.sigma, sensitivity=event.l2_sensitivity,
                                           value_discretization_interval=_PLD_DISCRETISATION)
    if isinstance(event, PureEvent | ApproxEvent):
        delta = event.delta if isinstance(event, ApproxEvent) else 0.0
        return pld.from_privacy_parameters(common.DifferentialPrivacyParameters(event.epsilon, delta),
                                           value_discretization_interval=_PLD_DISCRETISATION)
    raise UnsupportedEventError(f"cannot account for event {event!r}")


def pld_epsilon(ledger: Ledger, delta: float) -> float:
    """ε(δ) of the composition of ``ledger`` by privacy-loss distributions (0 for an empty ledger).

    Raises
    ------
    UnsupportedEventError
        For an event of another kind.
    """
    composed: Any = None
    for top_event, top_count in ledger:
        for event, count in flatten_event(top_event, top_count):
            leaf = _leaf_pld(event)
            part = leaf.self_compose(count) if count > 1 else leaf
            composed = part if composed is None else composed.compose(part)
    if composed is None:
        return 0.0
    return float(composed.get_epsilon_for_delta(delta))


def _laplace_rdp(orders: np.ndarray, noise_multiplier: float) -> np.ndarray:
    """Rényi divergence of Laplace(λ) shifted by 1 (Mironov 2017, Table II), λ = b/Δ.

    D_α = 1/(α − 1)·log(α/(2α − 1)·e^{(α−1)/λ} + (α − 1)/(2α − 1)·e^{−α/λ}), in log space.
    """
    lam = noise_multiplier
    first = np.log(orders / (2 * orders - 1)) + (orders - 1) / lam
    second = np.log((orders - 1) / (2 * orders - 1)) - orders / lam
    return np.asarray(np.logaddexp(first, second) / (orders - 1), dtype=np.float64)


def _leaf_rdp(event: PrivacyEvent, orders: np.ndarray) -> np.ndarray:
    if isinstance(event, GaussianEvent):
        return orders / (2.0 * event.noise_multiplier**2)  # α·Δ²/(2σ²)
    if isinstance(event, LaplaceEvent):
        return _laplace_rdp(orders, event.scale / event.sensitivity)
    if isinstance(event, PureEvent) or (isinstance(event, ApproxEvent) and event.delta == 0.0):
        eps = event.epsilon
        return np.minimum(eps, orders * eps * eps / 2.0)  # ε-DP ⇒ (α, min(ε, αε²/2))-RDP
    if isinstance(event, ApproxEvent):
        raise UnsupportedEventError(
            f"an (epsilon, delta) event with delta={event.delta} has no Renyi-DP curve; account it with "
            "method='basic' or method='pld'"
        )
    raise UnsupportedEventError(f"cannot account for event {event!r}")


def rdp_epsilon(ledger: Ledger, delta: float) -> float:
    """ε(δ) of the composition of ``ledger`` by Rényi DP (0 for an empty ledger; inf at δ = 0 with events).

    Raises
    ------
    UnsupportedEventError
        For an (ε, δ) event with δ > 0, or an event of another kind.
    """
    from dp_accounting.rdp import compute_epsilon

    orders = np.asarray(RDP_ORDERS, dtype=np.float64)
    total = np.zeros_like(orders)
    pure_sum, all_pure, any_event = 0.0, True, False
    for top_event, top_count in ledger:
        for event, count in flatten_event(top_event, top_count):
            total += count * _leaf_rdp(event, orders)
            any_event = True
            if isinstance(event, LaplaceEvent | PureEvent | ApproxEvent):
                pure_sum += count * event.epsilon
            else:
                all_pure = False
    if not any_event:
        return 0.0
    if delta <= 0.0:  # RDP converts to δ > 0 only; pure events still compose to Σε at δ = 0
        return pure_sum if all_pure else math.inf
    return float(compute_epsilon(orders.tolist(), total.tolist(), delta)[0])


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
    """
    import dp_accounting as dpa

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
        if any(isinstance(e, PureEvent | ApproxEvent) for e, _n in flatten_event(event)):
            # dp_accounting 0.6's PLDAccountant ignores the count of a self-composed randomised-response
            # event (it composes it once), so repeat the group explicitly instead
            return dpa.ComposedDpEvent([group] * event.count)
        return dpa.SelfComposedDpEvent(group, event.count)
    raise UnsupportedEventError(f"cannot export event {event!r} to dp_accounting")
