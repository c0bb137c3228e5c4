"""Privacy events: immutable records of one private release, for accounting.

An event describes a release by its noise (:class:`LaplaceEvent`, :class:`GaussianEvent`) or by its
guarantee (:class:`PureEvent`, :class:`ApproxEvent`); :class:`ComposedEvent` repeats a group of
events. Mechanisms expose their event as ``mechanism.event``; private algorithms record events in an
:class:`~dpbandits.privacy.accounting.Accountant` before they draw noise.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import NamedTuple

from dpbandits._core.errors import InvalidParameterError, UnsupportedEventError
from dpbandits._core.validation import check_delta, check_int, check_sensitivity

__all__ = [
    "ApproxEvent",
    "ComposedEvent",
    "EpsilonDelta",
    "GaussianEvent",
    "LaplaceEvent",
    "PrivacyEvent",
    "PureEvent",
    "fixed_parameters",
    "flatten_event",
]


class EpsilonDelta(NamedTuple):
    """A pair of privacy parameters (ε, δ)."""

    epsilon: float
    delta: float


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


def flatten_event(event: PrivacyEvent, multiplicity: int = 1) -> Iterator[tuple[PrivacyEvent, int]]:
    """The leaf events of ``event`` with their multiplicities (nested counts multiplied)."""
    if isinstance(event, ComposedEvent):
        for inner in event.events:
            yield from flatten_event(inner, multiplicity * event.count)
    else:
        yield event, multiplicity


def fixed_parameters(event: PrivacyEvent) -> EpsilonDelta:
    """The (ε, δ) of a non-Gaussian leaf event.

    Raises
    ------
    UnsupportedEventError
        For a :class:`GaussianEvent` (no single (ε, δ)) or an unknown event.
    """
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
