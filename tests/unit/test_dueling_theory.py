"""Unit tests of the theory curves."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpbandits.algorithms.dueling.dp_ebs_elimination import ebs_constants, simulate_dp_ebs_elimination
from dpbandits.algorithms.dueling.theory import (
    alg1_heuristic,
    alg1_upper,
    fit_shape,
    thm1_shape,
    thm2_lower_shape,
    thm3_shape,
)
from dpbandits.envs.dueling import finite_instance


def test_thm1_shape_formula_and_monotonicity() -> None:
    env = finite_instance("f1")
    t, eps = 10_000, 2.0
    gaps = env.preference_gaps[1:]
    expected = np.sum(math.log(5 * t) / gaps) + 5 * 14**1.5 * math.sqrt(math.log(5 * t)) / eps
    assert thm1_shape(env, t, eps) == pytest.approx(expected)
    assert thm1_shape(env, t, math.inf) == pytest.approx(np.sum(math.log(5 * t) / gaps))
    assert thm1_shape(env, t, 1.0) > thm1_shape(env, t, 2.0) > thm1_shape(env, t, math.inf)


def test_alg1_heuristic_solves_twice_the_width_equals_the_gap() -> None:
    env = finite_instance("f1")
    t, eps = 100_000, 5.0
    c = ebs_constants(5, t, eps)
    gaps, reward_gaps = env.preference_gaps[1:], env.reward_gaps[1:]
    total = alg1_heuristic(env, t, eps)
    plays = []
    for gap in gaps:  # bisection on 2·wid(n) = Δ
        lo, hi = 1.0, 1e12
        for _ in range(200):
            mid = math.sqrt(lo * hi)
            width = math.sqrt(c.confidence_log / (2 * mid)) + c.tree_bound / mid
            lo, hi = (mid, hi) if 2 * width > gap else (lo, mid)
        plays.append(min(lo, t))
    assert total == pytest.approx(float(np.sum(2 * reward_gaps * np.array(plays))), rel=1e-6)
    assert alg1_upper(env, t, eps) > total
    assert alg1_heuristic(env, t, 1.0) > alg1_heuristic(env, t, 5.0) > alg1_heuristic(env, t, math.inf)


@pytest.mark.statistical
def test_measured_non_private_regret_lies_below_the_upper_curve(seed: int) -> None:
    env, t = finite_instance("f1"), 100_000
    out = simulate_dp_ebs_elimination(env, n_trials=5, rng=seed, horizon=t, epsilon=math.inf)
    # Lemma 6 holds on the good event (probability >= 1 − 1e-5 per trial)
    assert out["reward_regret"].max() <= alg1_upper(env, t, math.inf)


def test_lower_bound_and_thm3_shapes() -> None:
    env = finite_instance("f4", n_arms=9)
    assert thm2_lower_shape(env, 1000, 0.001) == pytest.approx(8 / 0.001)
    assert thm2_lower_shape(env, 1000, math.inf) == pytest.approx(8 * math.log(1000) / env.preference_gaps[1])
    assert thm3_shape(10_000, 2, 0.1, 1.0, a=1.0, b=0.0) == pytest.approx(2 * 100 / 0.1)
    assert thm3_shape(10_000, 2, 0.1, 1.0, a=0.0, b=1.0) == pytest.approx(64 / 0.1)


def test_fit_shape_recovers_nonnegative_coefficients(rng: np.random.Generator) -> None:
    features = rng.uniform(1, 10, size=(12, 2))
    coefficients = fit_shape(features, features @ np.array([3.0, 0.5]))
    np.testing.assert_allclose(coefficients, [3.0, 0.5], rtol=1e-9)
    assert np.all(fit_shape(features, -features[:, 0]) >= 0)


def test_thm3_schedule_bound_lies_above_measured_goptimal_regret(seed: int) -> None:
    from dpbandits.algorithms.dueling.goptimal_dpdb import simulate_goptimal_dpdb
    from dpbandits.algorithms.dueling.theory import thm3_schedule_bound
    from dpbandits.envs.dueling import unit_ball_environment

    env = unit_ball_environment([0.6, 0.8], net="sphere", n_points=32)
    for horizon in (10**5, 10**7):
        for epsilon in (math.inf, 0.1):
            bound = thm3_schedule_bound(horizon, 2, env.n_arms, epsilon) + 2 * env.reward_gaps.min() * horizon
            measured = simulate_goptimal_dpdb(env, n_trials=2, rng=seed, horizon=horizon, epsilon=epsilon)
            assert measured["reward_regret"].max() <= bound
    assert thm3_schedule_bound(10**6, 2, 32, 0.1) > thm3_schedule_bound(10**6, 2, 32, 1.0)
    assert thm3_schedule_bound(100, 2, 32, 1.0) == pytest.approx(4 * 100 + 4 * 100 / 100)
