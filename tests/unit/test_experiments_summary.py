"""Summary statistics: Wilson interval for proportions, Student-t interval otherwise."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpbandits._core.errors import InvalidParameterError
from dpbandits.experiments.summary import summarize_metric, wilson_interval


def _wilson_by_formula(successes: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    # centre = (p̂ + z²/2n)/(1 + z²/n); half = z/(1 + z²/n)·√(p̂(1 − p̂)/n + z²/4n²)
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z / denominator * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


@pytest.mark.parametrize(("successes", "n"), [(0, 10), (7, 10), (10, 10), (512, 1000)])
def test_wilson_interval_matches_the_closed_form(successes: int, n: int) -> None:
    low, high = wilson_interval(successes, n)
    expected_low, expected_high = _wilson_by_formula(successes, n)
    assert low == pytest.approx(max(expected_low, 0.0), abs=1e-12)
    assert high == pytest.approx(min(expected_high, 1.0), abs=1e-12)


def test_proportion_summary(rng: np.random.Generator) -> None:
    values = (rng.random(400) < 0.3).astype(float)
    stats = summarize_metric(values, proportion=True)
    p = values.mean()
    assert stats.n_trials == 400
    assert stats.mean == p
    assert stats.stderr == pytest.approx(math.sqrt(p * (1 - p) / 400))
    assert (stats.ci_low, stats.ci_high) == wilson_interval(int(values.sum()), 400)


def test_real_valued_summary_uses_student_t(rng: np.random.Generator) -> None:
    from scipy import stats as scipy_stats

    values = rng.normal(1.0, 2.0, size=30)
    summary = summarize_metric(values, proportion=False)
    low, high = scipy_stats.t.interval(0.95, df=29, loc=values.mean(), scale=scipy_stats.sem(values))
    assert summary.stderr == pytest.approx(scipy_stats.sem(values))
    assert (summary.ci_low, summary.ci_high) == pytest.approx((low, high))


def test_single_trial_has_nan_spread() -> None:
    summary = summarize_metric([0.25], proportion=False)
    assert summary.mean == 0.25
    assert math.isnan(summary.stderr) and math.isnan(summary.ci_low) and math.isnan(summary.ci_high)


def test_invalid_values_are_refused() -> None:
    with pytest.raises(InvalidParameterError, match="must be 0/1 per trial"):
        summarize_metric([0.0, 0.5], proportion=True, name="success")
    with pytest.raises(InvalidParameterError, match="must be finite"):
        summarize_metric([0.0, math.nan], proportion=False)
    with pytest.raises(InvalidParameterError, match="must not be empty"):
        summarize_metric([], proportion=False)


def test_the_closed_form_wilson_interval_is_scipys() -> None:
    from scipy.stats import binomtest

    for n in (1, 2, 7, 40, 1000):
        for successes in sorted({0, 1, n // 3, n // 2, n - 1, n}):
            for confidence in (0.9, 0.95, 0.99):
                reference = binomtest(successes, n).proportion_ci(confidence_level=confidence, method="wilson")
                low, high = wilson_interval(successes, n, confidence)
                assert abs(low - reference.low) < 1e-12 and abs(high - reference.high) < 1e-12
                assert 0.0 <= low <= high <= 1.0
