"""Summary statistics of per-trial metrics: mean, standard error and a 95% confidence interval.

* Proportions (a metric that is 0/1 per trial, e.g. ``success``): the standard error is the
  binomial one, ``√(p̂(1 − p̂)/n)``, and the interval is Wilson's score interval, in closed form
  (the formula ``scipy.stats.binomtest(...).proportion_ci(method="wilson")`` evaluates, with the
  normal quantile from the standard library), which stays inside [0, 1] and behaves at p̂ = 0 or 1,
  unlike the normal interval.
* Other metrics: ``stderr = s/√n`` with the sample standard deviation ``s`` (ddof = 1) and the
  Student-t interval ``mean ± t_{0.975, n−1}·stderr`` (the quantile from SciPy, once per (n,
  confidence): every cell of a study has the same n). With one trial the stderr and interval are NaN.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from statistics import NormalDist

import numpy as np
from numpy.typing import ArrayLike

from dpbandits._core.errors import InvalidParameterError
from dpbandits._core.validation import check_array, check_in_interval

__all__ = ["CONFIDENCE", "MetricSummary", "summarize_metric", "wilson_interval"]

CONFIDENCE = 0.95
"""Confidence level of the intervals in ``summary.csv``."""


@dataclass(frozen=True)
class MetricSummary:
    """Mean, standard error and confidence interval of one metric over ``n_trials`` trials."""

    n_trials: int
    mean: float
    stderr: float
    ci_low: float
    ci_high: float


def wilson_interval(successes: int, n_trials: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion.

    Parameters
    ----------
    successes : int
        Number of successes, ``0 <= successes <= n_trials``.
    n_trials : int
        Number of trials, ``>= 1``.
    confidence : float, default 0.95

    Returns
    -------
    (float, float)
        Lower and upper ends.

    Examples
    --------
    >>> from dpbandits.experiments.summary import wilson_interval
    >>> low, high = wilson_interval(7, 10)
    >>> round(low, 4), round(high, 4)
    (0.3968, 0.8922)
    """
    check_in_interval(confidence, "confidence", 0.0, 1.0, closed="neither")
    n, k = int(n_trials), int(successes)
    z = _normal_quantile(0.5 + confidence / 2.0)  # z = Φ⁻¹((1 + c)/2)
    p = k / n
    # Wilson: (2np + z² ± z·√(z² + 4np(1 − p))) / (2(n + z²))
    denominator = 2.0 * (n + z * z)
    center = (2.0 * n * p + z * z) / denominator
    half = z * math.sqrt(z * z + 4.0 * n * p * (1.0 - p)) / denominator
    return max(0.0, center - half), min(1.0, center + half)


@lru_cache(maxsize=64)
def _normal_quantile(probability: float) -> float:
    return NormalDist().inv_cdf(probability)


@lru_cache(maxsize=256)
def _student_quantile(probability: float, dof: int) -> float:
    from scipy.stats import t as student_t

    return float(student_t.ppf(probability, df=dof))


def summarize_metric(
    values: ArrayLike, *, proportion: bool, confidence: float = CONFIDENCE, name: str = "values"
) -> MetricSummary:
    """Summarise the per-trial values of one metric.

    Parameters
    ----------
    values : array_like of float, shape (n_trials,)
        One value per trial (finite).
    proportion : bool
        The values are 0/1 (Wilson interval) rather than real-valued (Student-t interval).
    confidence : float, default 0.95
    name : str
        Used in error messages.

    Returns
    -------
    MetricSummary

    Raises
    ------
    InvalidParameterError
        If ``values`` is empty, not finite, or not 0/1 when ``proportion``.
    """
    arr = check_array(values, name, ndim=1)
    n = int(arr.size)
    mean = float(arr.mean())
    if proportion:
        if not np.all((arr == 0) | (arr == 1)):
            bad = float(arr[(arr != 0) & (arr != 1)][0])
            raise InvalidParameterError(f"{name} must be 0/1 per trial for a proportion metric; got {bad!r}")
        successes = int(arr.sum())
        stderr = math.sqrt(mean * (1.0 - mean) / n)  # √(p̂(1 − p̂)/n)
        low, high = wilson_interval(successes, n, confidence)
        return MetricSummary(n, mean, stderr, low, high)
    if n < 2:
        return MetricSummary(n, mean, math.nan, math.nan, math.nan)
    stderr = float(arr.std(ddof=1)) / math.sqrt(n)  # s/√n
    half_width = _student_quantile(0.5 + confidence / 2.0, n - 1) * stderr  # t_{(1+c)/2, n−1}·s/√n
    return MetricSummary(n, mean, stderr, mean - half_width, mean + half_width)
