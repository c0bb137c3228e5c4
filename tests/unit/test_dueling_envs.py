"""Unit tests of the dueling environments."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from dpbandits._core.errors import InvalidActionError, InvalidParameterError
from dpbandits.envs.dueling import (
    REGRET_METRICS,
    UtilityDuelingEnvironment,
    ball_grid_net,
    finite_instance,
    sphere_net,
    unit_ball_environment,
)
from dpbandits.envs.registry import make_environment


def test_f1_and_f2_match_the_spec_tables() -> None:
    f1 = finite_instance("f1")
    np.testing.assert_allclose(f1.preference_gaps, [0, 0.0987, 0.1900, 0.2685, 0.3320], atol=5e-5)
    np.testing.assert_allclose(f1.effective_borda_scores(), [0.6778, 0.5917, 0.5, 0.4083, 0.3222], atol=5e-5)
    f2 = finite_instance("f2")
    np.testing.assert_allclose(f2.utilities[[0, 1, 9]], [0.7420, 0.2914, -0.9507], atol=2e-4)
    np.testing.assert_allclose(f2.preference_gaps[[1, 4, 9]], [0.1108, 0.2233, 0.3446], atol=2e-4)
    f4 = finite_instance("f4", n_arms=6)
    np.testing.assert_allclose(f4.preference_gaps[1:], 0.19, atol=5e-5)
    assert f4.n_arms == 6 and f4.best_arm == 0


@pytest.mark.parametrize("link", ["logistic", "probit"])
def test_sst_and_sti_hold_on_random_utilities(link: str, rng: np.random.Generator) -> None:
    for _ in range(20):
        env = UtilityDuelingEnvironment(rng.uniform(-1, 1, size=(6, 1)), [1.5], link=link)
        order = np.argsort(-env.utilities)
        p = env.preference_matrix
        for i, j, k in itertools.combinations(order, 3):  # i ≻ j ≻ k
            assert p[i, k] >= max(p[i, j], p[j, k]) - 1e-12
            assert p[i, k] - 0.5 <= (p[i, j] - 0.5) + (p[j, k] - 0.5) + 1e-12
        np.testing.assert_allclose(p + p.T, 1.0, atol=1e-12)


@pytest.mark.parametrize("opponent", ["with_self", "without_self"])
def test_effective_borda_score_properties(opponent: str, rng: np.random.Generator) -> None:
    for _ in range(20):
        env = UtilityDuelingEnvironment(rng.uniform(-1, 1, size=(7, 1)), [2.0])
        active = np.sort(rng.choice(7, size=rng.integers(2, 8), replace=False))
        scores = env.effective_borda_scores(active, opponent)
        utilities = env.utilities[active]
        best, worst = int(np.argmax(utilities)), int(np.argmin(utilities))
        # (E0) same order as the utilities
        assert np.all(np.argsort(scores, kind="stable") == np.argsort(utilities, kind="stable"))
        p = env.preference_matrix
        # (E1) b_best − b_worst >= Δ_{best, worst}
        assert scores[best] - scores[worst] >= p[active[best], active[worst]] - 0.5 - 1e-12
        # (E2) b_best − b_i >= (2/|S|)·Δ_{best, i}  (|S| − 1 without self)
        size = active.size if opponent == "with_self" else active.size - 1
        deltas = p[active[best], active] - 0.5
        assert np.all(scores[best] - scores >= 2 / size * deltas - 1e-12)


@pytest.mark.parametrize(("dim", "eta", "size"), [(2, 0.2, 61), (2, 0.1, 185), (3, 0.3, 251)])
def test_ball_grid_net_sizes_and_covering_radius(dim: int, eta: float, size: int, rng: np.random.Generator) -> None:
    net = ball_grid_net(dim, eta)
    assert net.shape == (size, dim)
    assert np.all(np.linalg.norm(net, axis=1) <= 1 + 1e-12)
    points = rng.standard_normal((4000, dim))
    points *= (rng.uniform(size=(4000, 1)) ** (1 / dim)) / np.linalg.norm(points, axis=1, keepdims=True)
    distances = np.linalg.norm(points[:, None, :] - net[None, :, :], axis=2).min(axis=1)
    assert distances.max() <= eta


def test_sphere_nets_are_unit_norm(seed: int) -> None:
    for dim, m in ((2, 32), (3, 64), (5, 20)):
        net = sphere_net(dim, m, seed)
        assert net.shape == (m, dim)
        np.testing.assert_allclose(np.linalg.norm(net, axis=1), 1.0, atol=1e-12)
    env = unit_ball_environment([0.6, 0.8], net="sphere", n_points=32)
    assert env.best_reward == pytest.approx(1.0)
    assert 0 < env.reward_gaps.min() < 2e-3  # discretisation gap of the 32-point circle


def test_streams_are_pull_consistent_and_antisymmetric(seed: int) -> None:
    env = finite_instance("f3")
    first = np.array([0, 2, 0, 5, 2, 0, 7, 7])
    second = np.array([2, 0, 2, 5, 0, 1, 1, 7])
    a = env.streams(seed, n_trials=3)
    b = env.streams(seed, n_trials=3)
    outcomes = a.peek(first, second, trial=1)
    # the same duels played one by one give the same outcomes
    assert [b.duel(int(x), int(y), trial=1) for x, y in zip(first, second, strict=True)] == outcomes.tolist()
    # the k-th duel of a pair does not depend on the other pairs interleaved with it
    c = env.streams(seed, n_trials=3)
    only_02 = c.peek([0, 2, 0, 2], [2, 0, 2, 0], trial=1)
    pair_02 = (np.minimum(first, second) == 0) & (np.maximum(first, second) == 2)
    assert only_02.tolist() == outcomes[pair_02].tolist()
    # (2, 0) is the complement of (0, 2) on the same draw
    d = env.streams(seed, n_trials=3)
    assert d.peek([2], [0], trial=1)[0] == 1 - d.peek([0], [2], trial=1)[0]
    # peek does not consume; advance does
    assert a.counts.sum() == 0
    a.advance(first, second, trial=1)
    assert a.counts.sum() == first.size


@pytest.mark.statistical
def test_duel_frequencies_match_preferences(seed: int) -> None:
    env = finite_instance("f1")
    streams = env.streams(seed, n_trials=1)
    n = 200_000
    for i, j in ((0, 4), (3, 1), (2, 2)):
        wins = streams.peek(np.full(n, i), np.full(n, j)).mean()
        p = env.preference_matrix[i, j]
        # |mean − p| <= 5 s.e.: false failure 5.7e-7 per pair
        assert abs(wins - p) <= 5 * np.sqrt(p * (1 - p) / n)


def test_regret_metrics_from_pair_counts() -> None:
    env = finite_instance("f1")
    counts = np.zeros((2, 5, 5))
    counts[0, 0, 0] = 10
    counts[1, 1, 4] = 3
    metrics = env.regret_from_pair_counts(counts)
    assert set(metrics) == set(REGRET_METRICS)
    np.testing.assert_allclose(metrics["reward_regret"], [0.0, 3 * (0.4 + 1.6)])
    np.testing.assert_allclose(metrics["reward_regret_avg"], [0.0, 3.0])
    gaps = env.preference_gaps
    np.testing.assert_allclose(metrics["preference_regret"], [0.0, 1.5 * (gaps[1] + gaps[4])])
    np.testing.assert_allclose(metrics["weak_regret"], [0.0, 3 * gaps[1]])
    np.testing.assert_allclose(metrics["strong_regret"], [0.0, 3 * gaps[4]])


def test_registry_and_validation() -> None:
    assert make_environment("dueling-f2").n_arms == 10
    assert make_environment("dueling-f4", n_arms=3).n_arms == 3
    assert make_environment("dueling-unit-ball", theta=[0.6, 0.8], net="ball", resolution=0.2).n_arms == 61
    env = make_environment("dueling-utility", features=[[1.0], [0.0]], theta=[1.0], link="probit")
    assert env.link == "probit"
    with pytest.raises(InvalidParameterError, match="theta must have length"):
        UtilityDuelingEnvironment([[1.0, 0.0]], [1.0])
    with pytest.raises(InvalidParameterError, match="link must be one of"):
        UtilityDuelingEnvironment([[1.0]], [1.0], link="cauchy")
    with pytest.raises(InvalidParameterError, match="best_reward must be"):
        UtilityDuelingEnvironment([[1.0]], [1.0], best_reward=0.5)
    with pytest.raises(InvalidActionError, match=r"first must lie in \[0, 4\]"):
        env5 = finite_instance("f1")
        env5.streams(0).peek([5], [0])
    with pytest.raises(InvalidParameterError, match="resolution must lie in"):
        ball_grid_net(2, 1.5)
