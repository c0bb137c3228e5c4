"""Statistical privacy auditing: a lower confidence bound on ε from samples of a mechanism.

If a mechanism M is (ε, δ)-DP then for every output event E and neighbouring D, D'

    P[M(D) ∈ E] <= e^ε · P[M(D') ∈ E] + δ,   so   ε >= log((P[M(D) ∈ E] − δ) / P[M(D') ∈ E]).

From n samples of M(D) and n' samples of M(D') we bound P[M(D) ∈ E] from below and P[M(D') ∈ E]
from above with exact Clopper–Pearson intervals, and obtain, with probability at least
``confidence`` simultaneously for every event checked,

    ε_lb = max over events E, their complements and both directions of log((p_lb − δ) / q_ub).

A correct (ε, δ)-DP mechanism gives ε_lb <= ε except with probability <= 1 − ``confidence``; a
mechanism whose true ε exceeds the claim is caught (ε_lb > ε) once enough samples are drawn.

Multiple comparisons
--------------------
Every event gets one two-sided interval for P[M(D) ∈ E] and one for P[M(D') ∈ E]; with m events
there are 2m intervals and each gets miscoverage α/(2m), α = 1 − ``confidence`` (Bonferroni). The
complement of an event needs no extra budget: the Clopper–Pearson interval of the complement is
(1 − high, 1 − low), which covers exactly when the event's interval does. Both directions use the
same intervals.

Event selection
---------------
The events must not depend on the samples the bound is computed from, or the selection biases the
bound upward (picking the luckiest of many thresholds on the same data is the multiple-comparison
problem in disguise). :func:`threshold_events` therefore builds thresholds from a *separate*
calibration sample: draw a calibration set, choose events on it, then draw fresh samples for
:func:`epsilon_lower_bound`. :func:`select_events` keeps only the most promising candidates (by a
plug-in estimate on the calibration split), which saves confidence in the Bonferroni split.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpbandits._core.errors import InvalidParameterError
from dpbandits._core.validation import check_array, check_in_interval, check_int

__all__ = [
    "OutcomeEvent",
    "StatisticalAuditReport",
    "ThresholdEvent",
    "clopper_pearson",
    "detectable_violation",
    "epsilon_lower_bound",
    "select_events",
    "threshold_events",
]

OutputEvent = Callable[[NDArray[Any]], ArrayLike]
"""An output event: maps samples of shape (n, ...) to a boolean array of shape (n,) (E occurred)."""


def _clopper_pearson_arrays(
    k: NDArray[np.int64], n: NDArray[np.int64], alpha: float
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    from scipy.stats import beta

    # low = B(α/2; k, n − k + 1) (0 if k = 0) ; high = B(1 − α/2; k + 1, n − k) (1 if k = n)
    with np.errstate(invalid="ignore", divide="ignore"):
        low = np.where(k == 0, 0.0, beta.ppf(alpha / 2.0, np.maximum(k, 1), n - k + 1))
        high = np.where(k == n, 1.0, beta.ppf(1.0 - alpha / 2.0, k + 1, np.maximum(n - k, 1)))
    return np.asarray(low, dtype=np.float64), np.asarray(high, dtype=np.float64)


def clopper_pearson(k: int, n: int, alpha: float) -> tuple[float, float]:
    """Return the exact (Clopper–Pearson) two-sided 1 − α confidence interval of a binomial p.

    Parameters
    ----------
    k : int
        Number of successes, 0 <= k <= n.
    n : int
        Number of trials, n >= 1.
    alpha : float
        Miscoverage in (0, 1): each end fails with probability at most α/2.

    Returns
    -------
    (low, high) : tuple of float
        low = Beta⁻¹(α/2; k, n − k + 1) (0 when k = 0) and high = Beta⁻¹(1 − α/2; k + 1, n − k)
        (1 when k = n); P[low <= p <= high] >= 1 − α for every p.

    Examples
    --------
    >>> from dpbandits.audit.statistical import clopper_pearson
    >>> low, high = clopper_pearson(5, 10, 0.05)
    >>> round(low, 6), round(high, 6)
    (0.187086, 0.812914)
    """
    n_trials = check_int(n, "n", minimum=1)
    k_successes = check_int(k, "k", minimum=0, maximum=n_trials)
    a = check_in_interval(alpha, "alpha", 0.0, 1.0, closed="neither")
    low, high = _clopper_pearson_arrays(np.array(k_successes), np.array(n_trials), a)
    return float(low), float(high)


@dataclass(frozen=True)
class ThresholdEvent:
    """The event "output > threshold" of a one-dimensional (or scalar-statistic) mechanism.

    Parameters
    ----------
    threshold : float
        t: the event is {x > t}. Its complement {x <= t} is checked automatically by
        :func:`epsilon_lower_bound`.
    """

    threshold: float

    def __call__(self, samples: NDArray[Any]) -> NDArray[np.bool_]:
        """Return the indicator of {x > t} for samples of shape (n,)."""
        return np.asarray(samples > self.threshold, dtype=np.bool_)

    def __str__(self) -> str:
        return f"output > {self.threshold:.6g}"


@dataclass(frozen=True)
class OutcomeEvent:
    """The event "output == outcome" of a mechanism with a finite output set (an arm, an index).

    Parameters
    ----------
    outcome : int or float
        The output value. Outcome events of a finite output set can be fixed before sampling, so
        they need no calibration split.

    Examples
    --------
    >>> import numpy as np
    >>> from dpbandits.audit.statistical import OutcomeEvent
    >>> OutcomeEvent(2)(np.array([0, 2, 1, 2])).tolist()
    [False, True, False, True]
    """

    outcome: Any

    def __call__(self, samples: NDArray[Any]) -> NDArray[np.bool_]:
        """Return the indicator of {x == outcome} for samples of shape (n,)."""
        return np.asarray(samples == self.outcome, dtype=np.bool_)

    def __str__(self) -> str:
        return f"output == {self.outcome!r}"


def threshold_events(samples: ArrayLike, n_thresholds: int) -> list[ThresholdEvent]:
    """Return threshold events {x > t} at evenly spaced quantiles of a *calibration* sample.

    The thresholds are the empirical quantiles of levels i/(n_thresholds + 1), i = 1..n_thresholds,
    of ``samples`` (duplicates removed). Pass samples that will **not** be used to compute the bound
    (for example a first draw of a few thousand outputs of M(D) and M(D') pooled): events chosen on
    the audit samples themselves would bias :func:`epsilon_lower_bound` upward.

    Parameters
    ----------
    samples : array_like of shape (n,)
        Calibration outputs (of either or both neighbouring datasets), finite.
    n_thresholds : int
        Number of candidate thresholds, >= 1. Each costs confidence through the Bonferroni
        split, so a few dozen at most.

    Returns
    -------
    list of ThresholdEvent
        In increasing order of threshold.

    Examples
    --------
    >>> import numpy as np
    >>> from dpbandits.audit.statistical import threshold_events
    >>> [e.threshold for e in threshold_events(np.arange(11.0), 4)]
    [2.0, 4.0, 6.0, 8.0]
    """
    x = check_array(samples, "samples", ndim=1)
    count = check_int(n_thresholds, "n_thresholds", minimum=1)
    levels = np.arange(1, count + 1) / (count + 1)
    thresholds = np.unique(np.quantile(x, levels))
    return [ThresholdEvent(float(t)) for t in thresholds]


# the four ways one event gives evidence: (complement, reversed)
_ORIENTATIONS = ((False, False), (True, False), (False, True), (True, True))


def _orientation_bounds(
    k_d: NDArray[np.int64], n_d: int, k_d_prime: NDArray[np.int64], n_d_prime: int, alpha_each: float, delta: float
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Per orientation and event: ε bound log((p_lb − δ)/q_ub), p_lb and q_ub; shapes (4, m).

    Orientation order is :data:`_ORIENTATIONS`: the event, its complement, the event reversed
    (D' in the numerator), the complement reversed. All four use the same two intervals per event.
    """
    low_d, high_d = _clopper_pearson_arrays(k_d, np.full_like(k_d, n_d), alpha_each)
    low_d_prime, high_d_prime = _clopper_pearson_arrays(k_d_prime, np.full_like(k_d_prime, n_d_prime), alpha_each)
    # lower bound of the numerator probability, upper bound of the other
    p_lower = np.stack([low_d, 1.0 - high_d, low_d_prime, 1.0 - high_d_prime])
    q_upper = np.stack([high_d_prime, 1.0 - low_d_prime, high_d, 1.0 - low_d])
    with np.errstate(divide="ignore", invalid="ignore"):
        # ε_E = log((p_lb − δ)/q_ub), only where p_lb > δ
        bounds = np.where(p_lower > delta, np.log(np.maximum(p_lower - delta, 1e-300) / q_upper), -np.inf)
    return bounds, p_lower, q_upper


def _check_events(events: Sequence[OutputEvent], name: str) -> list[OutputEvent]:
    event_list = list(events)
    if not event_list:
        raise InvalidParameterError(f"{name} must not be empty; got 0 events")
    for index, event in enumerate(event_list):
        if not callable(event):
            raise InvalidParameterError(f"{name}[{index}] must be callable; got {type(event).__name__}")
    return event_list


def _all_counts(events: list[OutputEvent], samples: NDArray[Any], name: str) -> NDArray[np.int64]:
    return np.array([_event_counts(e, samples, name, i) for i, e in enumerate(events)], dtype=np.int64)


def select_events(
    calibration_d: ArrayLike,
    calibration_d_prime: ArrayLike,
    candidates: Sequence[OutputEvent],
    n_keep: int = 3,
    delta: float = 0.0,
    confidence: float = 0.95,
) -> list[OutputEvent]:
    """Keep the candidate events that give the best ε lower bound on a *calibration* split.

    Every event given to :func:`epsilon_lower_bound` costs confidence (Bonferroni), so auditing a
    few promising events beats auditing many. Each candidate is scored by the bound it would give
    on the calibration samples alone, at ``confidence`` split over ``n_keep`` events (so that rare
    events whose plug-in ratio is high by chance but whose intervals are wide are not preferred).
    The calibration samples must **not** be reused for the bound.

    Parameters
    ----------
    calibration_d, calibration_d_prime : array_like of shape (n, ...) and (n', ...)
        Calibration outputs of M(D) and M(D').
    candidates : sequence of callable
        Candidate events (for example :func:`threshold_events` on pooled calibration outputs).
    n_keep : int, default 3
        How many events to keep (all of them if fewer are given).
    delta : float, default 0
        The δ the bound will subtract.
    confidence : float, default 0.95
        The confidence the final bound will use.

    Returns
    -------
    list
        The ``n_keep`` best candidates, best first.

    Examples
    --------
    >>> import numpy as np
    >>> from dpbandits.audit.statistical import OutcomeEvent, select_events
    >>> d, d_prime = np.repeat([0, 1], [90, 10]), np.repeat([0, 1], [10, 90])
    >>> select_events(d, d_prime, [OutcomeEvent(2), OutcomeEvent(1)], n_keep=1)
    [OutcomeEvent(outcome=1)]
    """
    x_d = check_array(calibration_d, "calibration_d", dtype=None)
    x_d_prime = check_array(calibration_d_prime, "calibration_d_prime", dtype=None)
    keep = check_int(n_keep, "n_keep", minimum=1)
    dlt = check_in_interval(delta, "delta", 0.0, 1.0, closed="left")
    conf = check_in_interval(confidence, "confidence", 0.0, 1.0, closed="neither")
    event_list = _check_events(candidates, "candidates")
    k_d = _all_counts(event_list, x_d, "calibration_d")
    k_d_prime = _all_counts(event_list, x_d_prime, "calibration_d_prime")
    alpha_each = (1.0 - conf) / (2 * min(keep, len(event_list)))
    bounds, _, _ = _orientation_bounds(k_d, int(x_d.shape[0]), k_d_prime, int(x_d_prime.shape[0]), alpha_each, dlt)
    scores = bounds.max(axis=0)
    order = np.argsort(-scores, kind="stable")[:keep]
    return [event_list[int(i)] for i in order]


@dataclass(frozen=True)
class StatisticalAuditReport:
    """Result of :func:`~dpbandits.audit.statistical.epsilon_lower_bound`.

    Attributes
    ----------
    epsilon_lower_bound : float
        ε_lb >= 0: with probability >= ``confidence``, the mechanism is not (ε, δ)-DP for any ε < ε_lb
        (0 when no event gives evidence).
    best_event : object or None
        The event attaining ε_lb (None when ε_lb = 0).
    best_event_index : int
        Its index among the events given (−1 when ε_lb = 0).
    complement : bool
        Whether the bound is attained by the complement of ``best_event``.
    reversed : bool
        False if the bound compares P[M(D) ∈ E] to P[M(D') ∈ E], True for the other direction.
    count_d, count_d_prime : int
        Occurrences of the attaining event (or its complement) among the samples of D and D'.
    n_d, n_d_prime : int
        Sample sizes.
    p_lower, q_upper : float
        The confidence bounds entering ε_lb = log((p_lower − δ)/q_upper): the lower bound of the
        numerator dataset's probability and the upper bound of the other's.
    confidence : float
        Joint confidence of all intervals.
    delta : float
        The δ subtracted.
    n_events : int
        Number of events given (complements not counted: they are free).
    """

    epsilon_lower_bound: float
    best_event: Any
    best_event_index: int
    complement: bool
    reversed: bool
    count_d: int
    count_d_prime: int
    n_d: int
    n_d_prime: int
    p_lower: float
    q_upper: float
    confidence: float
    delta: float
    n_events: int

    def refutes(self, epsilon: float) -> bool:
        """Whether the samples refute an (ε, δ)-DP claim at this confidence: ε_lb > ε."""
        return self.epsilon_lower_bound > epsilon

    def __str__(self) -> str:
        where = "none" if self.best_event is None else (
            f"{'not ' if self.complement else ''}({self.best_event})"
            f"{', reversed' if self.reversed else ''}"
        )
        return (
            f"epsilon >= {self.epsilon_lower_bound:.4g} with confidence {self.confidence:g} "
            f"(delta = {self.delta:.3g}, {self.n_events} events, best: {where}; "
            f"counts {self.count_d}/{self.n_d} vs {self.count_d_prime}/{self.n_d_prime})"
        )


def _event_counts(event: OutputEvent, samples: NDArray[Any], name: str, index: int) -> int:
    occurred = np.asarray(event(samples))
    if occurred.shape != (samples.shape[0],):
        raise InvalidParameterError(
            f"events[{index}] must return a boolean array of shape ({samples.shape[0]},) on {name}; "
            f"got shape {occurred.shape}"
        )
    return int(np.count_nonzero(occurred))


def epsilon_lower_bound(
    samples_d: ArrayLike,
    samples_d_prime: ArrayLike,
    events: Sequence[OutputEvent],
    delta: float = 0.0,
    confidence: float = 0.95,
) -> StatisticalAuditReport:
    """Return a lower confidence bound on ε from samples of a mechanism on two neighbouring inputs.

    Parameters
    ----------
    samples_d, samples_d_prime : array_like of shape (n, ...) and (n', ...)
        Independent outputs of M(D) and M(D'), first axis over samples. Not used to choose
        ``events`` (see :func:`threshold_events`).
    events : sequence of callable
        Output events: ``event(samples)`` returns a boolean array of shape (n,). Complements and
        both directions are checked for each at no extra confidence cost.
    delta : float, default 0
        The δ of the claim being tested, in [0, 1).
    confidence : float, default 0.95
        Joint confidence in (0, 1), split by Bonferroni over the events and the two datasets.

    Returns
    -------
    StatisticalAuditReport
        ε_lb = max over events, complements and directions of log((p_lb − δ)/q_ub), floored at 0.

    Raises
    ------
    InvalidParameterError
        If a sample array is empty or not finite, ``events`` is empty, an event returns the wrong
        shape, or ``delta`` / ``confidence`` is out of range.

    Notes
    -----
    For an (ε, δ)-DP mechanism, P[ε_lb > ε] <= 1 − ``confidence`` whatever the sample sizes, as
    long as the events were fixed before the samples were drawn.

    Examples
    --------
    Randomized response keeping the bit with probability 3/4 (ε = ln 3 ≈ 1.0986):

    >>> import math
    >>> import numpy as np
    >>> from dpbandits.audit.statistical import epsilon_lower_bound
    >>> gen = np.random.default_rng(0)
    >>> keep_zero = gen.random(100_000) < 0.75
    >>> keep_one = gen.random(100_000) < 0.75
    >>> outputs_d, outputs_d_prime = np.where(keep_zero, 0, 1), np.where(keep_one, 1, 0)
    >>> report = epsilon_lower_bound(outputs_d, outputs_d_prime, [lambda x: x == 1], confidence=0.99)
    >>> 1.0 < report.epsilon_lower_bound <= math.log(3)
    True
    """
    x_d = check_array(samples_d, "samples_d", dtype=None)
    x_d_prime = check_array(samples_d_prime, "samples_d_prime", dtype=None)
    if x_d.ndim == 0 or x_d_prime.ndim == 0:
        raise InvalidParameterError("samples_d and samples_d_prime must have a sample axis; got 0-d arrays")
    dlt = check_in_interval(delta, "delta", 0.0, 1.0, closed="left")
    conf = check_in_interval(confidence, "confidence", 0.0, 1.0, closed="neither")
    event_list = _check_events(events, "events")

    n_d, n_d_prime = int(x_d.shape[0]), int(x_d_prime.shape[0])
    k_d = _all_counts(event_list, x_d, "samples_d")
    k_d_prime = _all_counts(event_list, x_d_prime, "samples_d_prime")
    n_events = len(event_list)
    # Bonferroni: 2m two-sided intervals (m events × 2 datasets), each with miscoverage α/(2m)
    alpha_each = (1.0 - conf) / (2 * n_events)
    bounds, p_lower, q_upper = _orientation_bounds(k_d, n_d, k_d_prime, n_d_prime, alpha_each, dlt)
    orientation, index = (int(i) for i in np.unravel_index(int(np.argmax(bounds)), bounds.shape))
    best: tuple[float, OutputEvent | None, int, bool, bool, float, float] = (
        0.0, None, -1, False, False, math.nan, math.nan
    )
    if bounds[orientation, index] > 0.0:
        is_complement, is_reversed = _ORIENTATIONS[orientation]
        best = (float(bounds[orientation, index]), event_list[index], index, is_complement, is_reversed,
                float(p_lower[orientation, index]), float(q_upper[orientation, index]))

    eps_lb, best_event, index, is_complement, is_reversed, p_lb, q_ub = best
    count_d = count_d_prime = 0
    if index >= 0:
        count_d, count_d_prime = int(k_d[index]), int(k_d_prime[index])
        if is_complement:
            count_d, count_d_prime = n_d - count_d, n_d_prime - count_d_prime
    return StatisticalAuditReport(
        epsilon_lower_bound=eps_lb,
        best_event=best_event,
        best_event_index=index,
        complement=is_complement,
        reversed=is_reversed,
        count_d=count_d,
        count_d_prime=count_d_prime,
        n_d=n_d,
        n_d_prime=n_d_prime,
        p_lower=p_lb,
        q_upper=q_ub,
        confidence=conf,
        delta=dlt,
        n_events=n_events,
    )


def detectable_violation(probability: float, n: int, *, epsilon: float, delta: float = 0.0,
                         confidence: float = 1 - 1e-6, n_events: int = 1) -> float:
    """The power of :func:`epsilon_lower_bound`: the smallest excess over the claim it detects.

    A release that violates an (ε, δ) claim on an output event S with P_D(S) = p and
    P_D'(S) = (p − δ)·e^{−(ε + Δ)} (true loss ε + Δ on S) gives, at the *expected* counts p·n and
    P_D'(S)·n of n draws per input (about the median run), the bound log((p_lb − δ)/q_ub) with
    Clopper–Pearson intervals at miscoverage (1 − confidence)/(2·n_events). This returns the
    smallest Δ >= 0 at which that bound exceeds ε: a violation at least this large on an event at
    least this likely is refuted in about half of the runs or more; smaller ones pass unseen.

    Parameters
    ----------
    probability : float
        p = P_D(S) in (δ, 1).
    n : int
        Draws per input.
    epsilon, delta : float
        The claim.
    confidence : float, default 1 − 1e-6
    n_events : int, default 1
        Events the audit examines (the Bonferroni split).

    Returns
    -------
    float
        Δ, or ``inf`` if no violation of an event that likely is detectable with n draws.

    Examples
    --------
    >>> round(detectable_violation(0.5, 10_000, epsilon=1.0, n_events=3), 2)
    0.17
    """
    from scipy.optimize import brentq
    from scipy.stats import beta

    p = check_in_interval(probability, "probability", 0.0, 1.0, closed="neither")
    n = check_int(n, "n", minimum=1)
    dlt = check_in_interval(delta, "delta", 0.0, 1.0, closed="left")
    conf = check_in_interval(confidence, "confidence", 0.0, 1.0, closed="neither")
    alpha = (1.0 - conf) / (2 * check_int(n_events, "n_events", minimum=1))
    # p_lb at the expected count k = p·n (real-valued Beta quantile)
    p_low = float(beta.ppf(alpha / 2.0, p * n, n - p * n + 1))
    if not p_low > dlt:
        return math.inf

    def excess(gap: float) -> float:
        k = (p - dlt) * math.exp(-(epsilon + gap)) * n
        q_high = float(beta.ppf(1.0 - alpha / 2.0, k + 1, max(n - k, 1e-9)))
        return math.log((p_low - dlt) / q_high) - epsilon

    upper = 64.0
    if excess(upper) <= 0.0:
        return math.inf
    return 0.0 if excess(0.0) > 0.0 else float(brentq(excess, 0.0, upper, xtol=1e-6))
