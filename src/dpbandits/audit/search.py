"""Output events chosen by looking at runs: likelihood-ratio sets and a classifier's score.

A frequency audit bounds ε on an output event E by comparing how often E occurs on two neighbouring
inputs. The bound is only valid for events fixed before the runs it counts, but the most revealing
event is rarely known in advance: it depends on the algorithm. This module chooses events from a
*selection* sample of runs on the two inputs, in the manner of DP-Sniper (Bichsel et al. 2021), so
that they can then be certified on fresh runs (:func:`certify`):

* for each **discrete observable** (the recommendation, the whole transcript, its length, an arm's
  number of pulls), the values are ordered by their estimated likelihood ratio
  (count under D + ½)/(count under D' + ½) and the event is the prefix set {x : ratio(x) >= t} whose
  plug-in bound is largest (a Neyman–Pearson test of the two empirical laws);
* on **numeric features** of a run (pull counts, pull counts early in the run, the run's length,
  released numbers, and their squares) an L2-regularised logistic regression tells the two inputs
  apart, and the event is a threshold on its score, chosen the same way.

Both are fitted on one half of the selection runs (even indices) and their cut is chosen on the
other half, so that a set of values seen once each (long transcripts) cannot look revealing by
construction.

:func:`search_score` is the plug-in strength of the best such event, used to rank neighbouring
pairs while searching for the worst one; it is not a bound. Only :func:`certify`, on runs drawn
after every choice was made, gives a bound (Clopper–Pearson, valid at its stated confidence).

References
----------
Bichsel, Steffen, Bogunovic & Vechev (2021), DP-Sniper: black-box discovery of differential privacy
violations using classifiers. Ding, Wang, Wang, Zhang & Kifer (2018), StatDP: detecting violations
of differential privacy. Kong et al. (2024), DP-Auditorium.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dpbandits.audit.statistical import StatisticalAuditReport, detectable_violation, epsilon_lower_bound

__all__ = ["ChosenEvent", "Observations", "certify", "choose_events", "event_power", "search_score"]

_SEARCH_ALPHA = 0.2  # the plug-in score's interval: ranks pairs and events, never reported as a bound
_SCORE_THRESHOLDS = 24
_RIDGE = 1.0
_NEWTON_STEPS = 12


@dataclass(frozen=True)
class Observations:
    """What n runs on one input released, as the events see it.

    Attributes
    ----------
    discrete : dict of str to list
        Per discrete observable, one hashable value per run.
    numeric : ndarray of shape (n, f)
        Numeric features of each run (the classifier's input); f may be 0.
    """

    discrete: dict[str, list[Hashable]]
    numeric: NDArray[np.float64]

    @property
    def size(self) -> int:
        """n, the number of runs."""
        return self.numeric.shape[0]


@dataclass(frozen=True)
class ChosenEvent:
    """An output event chosen on a selection sample: a set of values of one observable, or a score threshold.

    Attributes
    ----------
    observable : str
        The discrete observable's name, or ``"classifier"``.
    values : frozenset, optional
        The event {x ∈ values} of a discrete observable.
    weights, centre, scale : ndarray, optional
        The classifier: score = ((features − centre)/scale, squared) · weights.
    threshold : float
        The classifier's event is {score > threshold}.
    """

    observable: str
    values: frozenset[Hashable] | None = None
    weights: NDArray[np.float64] | None = None
    centre: NDArray[np.float64] | None = None
    scale: NDArray[np.float64] | None = None
    threshold: float = 0.0

    def indicator(self, observed: Observations) -> NDArray[np.bool_]:
        """Whether the event occurred in each run of ``observed``."""
        if self.values is not None:
            return np.fromiter((value in self.values for value in observed.discrete[self.observable]),
                               dtype=np.bool_, count=observed.size)
        assert self.weights is not None and self.centre is not None and self.scale is not None
        return np.asarray(_score(observed.numeric, self.weights, self.centre, self.scale) > self.threshold)

    def __str__(self) -> str:
        if self.values is not None:
            shown = sorted(repr(v) for v in self.values)
            if len(self.values) > 4 or sum(len(text) for text in shown) > 80:
                return f"{self.observable} in a set of {len(self.values)} values (largest likelihood ratios)"
            return f"{self.observable} in {{{', '.join(shown)}}}"
        return f"classifier score > {self.threshold:.4g}"


# ------------------------------------------------------------------------------------- scoring
def _plugin(k_d: NDArray[np.float64], k_e: NDArray[np.float64], n_d: int, n_e: int, delta: float) -> NDArray[np.float64]:
    """Per candidate event, the best of its four orientations of log((p_lb − δ)/q_ub) at a loose interval.

    The Clopper–Pearson ends are Beta quantiles, taken with the incomplete beta function's inverse
    itself (``betaincinv(a, b, q)`` is ``beta.ppf(q, a, b)`` without the distribution's argument
    handling, which cost most of a search's time).
    """
    from scipy.special import betaincinv

    def low(k: NDArray[np.float64], n: int) -> NDArray[np.float64]:
        return np.where(k <= 0, 0.0, betaincinv(np.maximum(k, 1e-9), n - k + 1, _SEARCH_ALPHA / 2))

    def high(k: NDArray[np.float64], n: int) -> NDArray[np.float64]:
        return np.where(k >= n, 1.0, betaincinv(k + 1, np.maximum(n - k, 1e-9), 1 - _SEARCH_ALPHA / 2))

    best = np.full(k_d.shape, -np.inf)
    for p_k, p_n, q_k, q_n in ((k_d, n_d, k_e, n_e), (k_e, n_e, k_d, n_d),
                               (n_d - k_d, n_d, n_e - k_e, n_e), (n_e - k_e, n_e, n_d - k_d, n_d)):
        p_low, q_high = low(p_k, p_n), high(q_k, q_n)
        with np.errstate(divide="ignore", invalid="ignore"):
            bound = np.where(p_low > delta, np.log(np.maximum(p_low - delta, 1e-300) / q_high), -np.inf)
        best = np.maximum(best, bound)
    return best


def _set_events(name: str, values_d: Sequence[Hashable], values_e: Sequence[Hashable],
                delta: float) -> tuple[float, ChosenEvent] | None:
    """The likelihood-ratio prefix set of one discrete observable, ordered on one half and scored on the other.

    Ordering and scoring on the same runs would overfit: with values seen once each (long
    transcripts), the set of D's values separates the samples perfectly and means nothing.
    """
    fit_d, fit_e = Counter(values_d[0::2]), Counter(values_e[0::2])
    held_d, held_e = Counter(values_d[1::2]), Counter(values_e[1::2])
    seen = list(fit_d.keys() | fit_e.keys())
    if len(seen) < 2:
        return None
    ratio = np.array([(fit_d[v] + 0.5) / (fit_e[v] + 0.5) for v in seen])
    order = np.argsort(-ratio, kind="stable")
    k_d = np.cumsum([held_d[seen[i]] for i in order], dtype=np.float64)[:-1]
    k_e = np.cumsum([held_e[seen[i]] for i in order], dtype=np.float64)[:-1]
    scores = _plugin(k_d, k_e, len(values_d[1::2]), len(values_e[1::2]), delta)
    best = int(np.argmax(scores))
    return float(scores[best]), ChosenEvent(name, values=frozenset(seen[int(i)] for i in order[:best + 1]))


def _features(x: NDArray[np.float64], centre: NDArray[np.float64], scale: NDArray[np.float64]) -> NDArray[np.float64]:
    z = (x - centre) / scale
    return np.hstack([np.ones((x.shape[0], 1)), z, z**2])


def _score(x: NDArray[np.float64], weights: NDArray[np.float64], centre: NDArray[np.float64],
           scale: NDArray[np.float64]) -> NDArray[np.float64]:
    return np.asarray(_features(x, centre, scale) @ weights, dtype=np.float64)


def _logistic(x: NDArray[np.float64], y: NDArray[np.float64]) -> NDArray[np.float64]:
    """L2-regularised logistic regression by Newton's method (a few steps suffice for a ranking)."""
    w = np.zeros(x.shape[1])
    ridge = _RIDGE * np.eye(x.shape[1])
    ridge[0, 0] = 0.0
    for _ in range(_NEWTON_STEPS):
        p = 1.0 / (1.0 + np.exp(-np.clip(x @ w, -30, 30)))
        gradient = x.T @ (p - y) + ridge @ w
        hessian = (x * (p * (1 - p))[:, None]).T @ x + ridge + 1e-9 * np.eye(x.shape[1])
        w -= np.linalg.solve(hessian, gradient)
    return w


def _classifier_event(numeric_d: NDArray[np.float64], numeric_e: NDArray[np.float64],
                      delta: float) -> tuple[float, ChosenEvent] | None:
    pooled = np.vstack([numeric_d, numeric_e])
    if pooled.shape[1] == 0 or not np.all(np.isfinite(pooled)):
        return None
    centre, scale = pooled.mean(axis=0), pooled.std(axis=0)
    varying = scale > 0
    if not varying.any():
        return None
    scale = np.where(varying, scale, 1.0)
    fit_d, fit_e = numeric_d[0::2], numeric_e[0::2]  # trained on one half, its threshold chosen on the other
    labels = np.concatenate([np.ones(fit_d.shape[0]), np.zeros(fit_e.shape[0])])
    weights = _logistic(_features(np.vstack([fit_d, fit_e]), centre, scale), labels)
    numeric_d, numeric_e = numeric_d[1::2], numeric_e[1::2]
    scores_d, scores_e = _score(numeric_d, weights, centre, scale), _score(numeric_e, weights, centre, scale)
    thresholds = np.unique(np.quantile(np.concatenate([scores_d, scores_e]),
                                       np.arange(1, _SCORE_THRESHOLDS + 1) / (_SCORE_THRESHOLDS + 1)))
    k_d = np.array([np.count_nonzero(scores_d > t) for t in thresholds], dtype=np.float64)
    k_e = np.array([np.count_nonzero(scores_e > t) for t in thresholds], dtype=np.float64)
    plug = _plugin(k_d, k_e, numeric_d.shape[0], numeric_e.shape[0], delta)
    best = int(np.argmax(plug))
    return float(plug[best]), ChosenEvent("classifier", weights=weights, centre=centre, scale=scale,
                                          threshold=float(thresholds[best]))


def choose_events(observed_d: Observations, observed_e: Observations, *, delta: float = 0.0,
                  keep: int = 4) -> list[tuple[float, ChosenEvent]]:
    """The ``keep`` most revealing events on a selection sample, with their plug-in scores, best first.

    One likelihood-ratio set per discrete observable and one classifier threshold; the scores rank
    them and are not bounds. Certify the events on fresh runs (:func:`certify`).
    """
    found = [_set_events(name, observed_d.discrete[name], observed_e.discrete[name], delta)
             for name in observed_d.discrete]
    found.append(_classifier_event(observed_d.numeric, observed_e.numeric, delta))
    ranked = sorted((item for item in found if item is not None), key=lambda item: -item[0])
    return ranked[:keep]


def search_score(observed_d: Observations, observed_e: Observations, *, delta: float = 0.0) -> float:
    """The plug-in strength of the best event on these runs (ranks neighbouring pairs; not a bound)."""
    ranked = choose_events(observed_d, observed_e, delta=delta, keep=1)
    return ranked[0][0] if ranked else -math.inf


# ------------------------------------------------------------------------------- certification
def certify(observed_d: Observations, observed_e: Observations, events: Sequence[Any], *,
            delta: float, confidence: float) -> StatisticalAuditReport:
    """The Clopper–Pearson lower bound on ε over ``events``, on runs drawn after the events were chosen.

    Privacy
    -------
    Valid at ``confidence`` (Bonferroni over the events, complements and directions free) only if
    neither the events nor the pair were chosen by looking at these runs.
    """
    n_d = observed_d.size
    occurred = [np.concatenate([event.indicator(observed_d), event.indicator(observed_e)]) for event in events]
    indicators = [_Indexed(row, str(event)) for row, event in zip(occurred, events, strict=True)]
    return epsilon_lower_bound(np.arange(n_d), np.arange(n_d, n_d + observed_e.size), indicators, delta=delta,
                               confidence=confidence)


@dataclass(frozen=True)
class _Indexed:
    """An event on run indices: runs 0..n−1 are D's, n.. are D''s (so one event serves both samples)."""

    occurred: NDArray[np.bool_]
    text: str

    def __call__(self, indices: NDArray[Any]) -> NDArray[np.bool_]:
        return np.asarray(self.occurred[indices], dtype=np.bool_)

    def __str__(self) -> str:
        return self.text


def event_power(event: ChosenEvent, observed_d: Observations, observed_e: Observations, *, epsilon: float,
                delta: float, runs: int, confidence: float, n_events: int) -> float:
    """The smallest true ε that ``runs`` runs would show on ``event``, at its own observed probability.

    A loss on an event lives on its less likely side (the event or its complement): p is the smaller
    of the event's pooled frequency on the two inputs and its complement's. :func:`detectable_violation`
    gives the least excess over the claim refuted at the expected counts of ``runs`` runs (about half
    the time); the result is the claim plus that excess, ``inf`` if no violation on an event this
    likely could be refuted. The most favourable probability (about ½) would overstate the power of
    an audit whose events are rarer.
    """
    pooled = float(np.mean(np.concatenate([event.indicator(observed_d), event.indicator(observed_e)])))
    p = min(pooled, 1.0 - pooled)
    if not delta < p:
        return math.inf
    return epsilon + detectable_violation(p, runs, epsilon=epsilon, delta=delta, confidence=confidence,
                                          n_events=n_events)
