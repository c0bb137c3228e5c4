"""DP-BAI phase schedule (errata BAI-A1 to BAI-A3) and the budget guard (BAI-A11)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpbandits._core.errors import InvalidParameterError
from dpbandits.algorithms.bai.schedule import InsufficientBudgetError, dp_bai_schedule, guard_pulls

# (K, d, λ, h, g, M1, M, s, T - T'), worked out by hand from eqs. (4)-(8)
VECTORS = [
    (10000, 16, 27.6496, (9936, 359, 13, 0), (64, 32, 16, 8, 4, 2, 1), 3, 9,
     (10000, 423, 77, 64, 32, 16, 8, 4, 2, 1), 432),
    (30, 2, 128.764, (29, 0), (1,), 1, 1, (30, 1), 2),
    (10, 4, 3.64181, (6, 1, 0), (4, 2, 1), 2, 4, (10, 5, 4, 2, 1), 16),
    (5, 4, 2.0, (1, 0), (4, 2, 1), 1, 3, (5, 4, 2, 1), 12),
    (100, 3, 64.3336, (97, 1, 0), (3, 2, 1), 2, 4, (100, 4, 3, 2, 1), 12),
    (50, 10, 4.04685, (25, 6, 1, 0), (25, 13, 7, 4, 2, 1), 3, 8, (50, 31, 26, 25, 13, 7, 4, 2, 1), 155),
    (1000, 5, 72.7963, (993, 13, 0), (7, 4, 2, 1), 2, 5, (1000, 20, 7, 4, 2, 1), 31),
    (20, 20, 2.0, (0,), (20, 10, 5, 3, 2, 1), 0, 5, (20, 10, 5, 3, 2, 1), 500),
    (2, 2, 2.0, (1, 0), (1,), 1, 1, (2, 1), 2),
    (3, 1, math.inf, (2, 0), (1,), 1, 1, (3, 1), 1),
]


@pytest.mark.parametrize(("k", "d", "lam", "h", "g", "m1", "m", "sizes", "reserved"), VECTORS)
def test_canonical_schedule_matches_spec_vectors(k, d, lam, h, g, m1, m, sizes, reserved):
    plan = dp_bai_schedule(k, d)
    if math.isinf(lam):
        assert math.isinf(plan.lam)
    else:
        assert plan.lam == pytest.approx(lam, abs=5e-4)
    assert (plan.h, plan.g, plan.n_stage1, plan.n_phases, plan.sizes, plan.reserved) == (h, g, m1, m, sizes, reserved)
    assert plan.effective_budget(10_000) == 10_000 - reserved


def test_appendix_b_example():
    plan = dp_bai_schedule(10000, 16)
    assert 27.64 < plan.lam < 27.66
    assert plan.sizes == (10000, 423, 77, 64, 32, 16, 8, 4, 2, 1)


def test_literal_schedule_skips_g0_and_reserves_368_in_appendix_b():
    plan = dp_bai_schedule(10000, 16, schedule="literal")
    assert plan.sizes == (10000, 423, 77, 32, 16, 8, 4, 2, 1)
    assert plan.reserved == 368 and plan.n_phases == 8


@pytest.mark.parametrize(("k", "d"), [(30, 2), (20, 20), (2, 2), (8, 2)])
def test_literal_and_canonical_coincide_when_k_small_or_d_at_most_two(k, d):
    a, b = dp_bai_schedule(k, d), dp_bai_schedule(k, d, schedule="literal")
    assert a.sizes == b.sizes


def test_strict_reservation_is_larger_than_paper_on_the_counterexample():
    plan = dp_bai_schedule(10, 4)
    assert plan.effective_budget(97) == 81
    # ν = (10, 5, 4, 2) (every s_p <= d² = 16): T'_strict = 97 + 1 - 21
    assert plan.effective_budget(97, budget_mode="strict") == 77


def test_insufficient_budget_raises_with_values_in_message():
    with pytest.raises(InsufficientBudgetError, match="budget=16"):
        dp_bai_schedule(10, 4).effective_budget(16)


def test_guard_clips_and_flags_only_on_overflow():
    m, clipped = guard_pulls(np.array([34, 5]), np.array([30, 2]), np.array([0, 0]), 1000, budget_mode="paper")
    assert m.tolist() == [33, 5] and clipped.tolist() == [True, False]
    with pytest.raises(InvalidParameterError, match="strict"):
        guard_pulls(np.array([34]), np.array([30]), np.array([0]), 1000, budget_mode="strict")
    with pytest.raises(InsufficientBudgetError):
        guard_pulls(np.array([3]), np.array([30]), np.array([990]), 1000, budget_mode="paper")


@pytest.mark.parametrize("bad", [0, -3, 1.5, "x"])
def test_invalid_arguments_raise_typed_errors(bad):
    with pytest.raises(InvalidParameterError, match="n_arms"):
        dp_bai_schedule(bad, 2)
    with pytest.raises(InvalidParameterError, match="schedule"):
        dp_bai_schedule(5, 2, schedule="other")
