"""Uniform allocation and Sequential Halving: schedules, budgets, tie-breaking, ask/tell agreement."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from dpbandits._core.errors import InvalidActionError, InvalidParameterError, NotFittedError
from dpbandits._core.rng import spawn_generators
from dpbandits.algorithms.bai.sequential_halving import (
    SequentialHalving,
    halving_schedule,
    simulate_sequential_halving,
    top_k_random_ties,
)
from dpbandits.algorithms.bai.uniform import simulate_uniform_allocation, uniform_counts
from dpbandits.algorithms.registry import get_algorithm
from dpbandits.envs.mab import BernoulliBandit


class CountingBandit:
    """Deterministic rewards (the arm's mean) that records every count array requested."""

    def __init__(self, means: list[float]) -> None:
        self.means = np.asarray(means, dtype=float)
        self.n_arms = self.means.size
        self.requests: list[np.ndarray] = []

    def sample_sums(self, counts: np.ndarray, rng: Any) -> np.ndarray:
        self.requests.append(np.array(counts))
        return counts * self.means


def test_halving_schedule_follows_karnin_et_al() -> None:
    # K = 8, T = 96: R = 3 rounds, t_r = ⌊96/(|S_r|·3)⌋
    assert halving_schedule(8, 96) == [(8, 4), (4, 8), (2, 16)]
    assert halving_schedule(5, 60) == [(5, 4), (3, 6), (2, 10)]
    with pytest.raises(InvalidParameterError, match=r"budget must be >= n_arms·⌈log2 n_arms⌉ = 24 .* got 23"):
        halving_schedule(8, 23)
    with pytest.raises(InvalidParameterError, match="n_arms must be an int >= 2"):
        halving_schedule(1, 10)


def test_sequential_halving_pulls_the_schedule_and_stays_within_budget(seed: int) -> None:
    env = CountingBandit([0.1, 0.9, 0.3, 0.5, 0.2, 0.8, 0.4])
    out = simulate_sequential_halving(env, n_trials=6, rng=seed, budget=100)
    per_round = list(env.requests)
    assert [int((c[0] > 0).sum()) for c in per_round] == [7, 4, 2]
    assert [int(c[0].max()) for c in per_round] == [t for _, t in halving_schedule(7, 100)]
    assert int(sum(c.sum(axis=1) for c in per_round).max()) <= 100
    np.testing.assert_array_equal(out["success"], np.ones(6))
    np.testing.assert_array_equal(out["simple_regret"], np.zeros(6))


def test_uniform_allocation_is_round_robin(seed: int) -> None:
    np.testing.assert_array_equal(uniform_counts(3, 10), [4, 3, 3])
    env = CountingBandit([0.2, 0.7, 0.5])
    out = simulate_uniform_allocation(env, n_trials=4, rng=seed, budget=10)
    np.testing.assert_array_equal(env.requests[0], np.tile([4, 3, 3], (4, 1)))
    np.testing.assert_array_equal(out["success"], np.ones(4))
    with pytest.raises(InvalidParameterError, match=r"budget must be >= n_arms = 3 .* got 2"):
        uniform_counts(3, 2)


@pytest.mark.parametrize("algorithm", ["uniform", "sequential-halving"])
@pytest.mark.parametrize("reward_draws", ["sums", "streams"])
def test_obvious_instance_is_always_solved(algorithm: str, reward_draws: str, seed: int) -> None:
    env = BernoulliBandit([0.0, 0.0, 1.0, 0.0, 0.0])
    out = get_algorithm(algorithm).simulate(env, n_trials=50, rng=seed, budget=60, reward_draws=reward_draws)
    np.testing.assert_array_equal(out["success"], np.ones(50))
    np.testing.assert_array_equal(out["simple_regret"], np.zeros(50))


def test_same_seed_same_numbers(seed: int) -> None:
    env = BernoulliBandit([0.5, 0.45, 0.4, 0.3])
    a = simulate_sequential_halving(env, n_trials=200, rng=np.random.SeedSequence(seed), budget=80)
    b = simulate_sequential_halving(env, n_trials=200, rng=np.random.SeedSequence(seed), budget=80)
    np.testing.assert_array_equal(a["simple_regret"], b["simple_regret"])


def test_ties_are_broken_uniformly(rng: np.random.Generator) -> None:
    n, k = 20_000, 4
    chosen = top_k_random_ties(np.zeros((n, k)), 1, rng)[:, 0]
    counts = np.bincount(chosen, minlength=k)
    # Each count ~ Binomial(20000, 1/4): sd ≈ 61.2; a 6-sd band fails with prob < 4·2e-9.
    assert np.all(np.abs(counts - n / k) < 6 * np.sqrt(n * 0.25 * 0.75))
    # the k largest come first, in decreasing order
    values = np.array([[0.1, 0.9, 0.5, 0.7]])
    np.testing.assert_array_equal(top_k_random_ties(values, 3, rng), [[1, 3, 2]])


@pytest.mark.parametrize("reuse_samples", [False, True])
def test_ask_tell_agrees_exactly_with_the_vectorised_form(reuse_samples: bool, seed: int) -> None:
    means = np.array([0.5, 0.45, 0.4, 0.35, 0.3])
    env = BernoulliBandit(means)
    for trial_seed in np.random.SeedSequence(seed).generate_state(25):
        vectorised = simulate_sequential_halving(
            env, n_trials=1, rng=np.random.SeedSequence(int(trial_seed)), budget=60,
            reuse_samples=reuse_samples, reward_draws="streams",
        )
        env_rng, algo_rng = spawn_generators(np.random.SeedSequence(int(trial_seed)), 2)
        streams = env.streams(env_rng, 1)
        agent = SequentialHalving(5, 60, rng=algo_rng, reuse_samples=reuse_samples)
        pulls = 0
        while not agent.done:
            arm = agent.ask()
            agent.tell(arm, float(streams.pull(np.array([arm]))[0]))
            pulls += 1
        assert pulls <= 60
        assert means.max() - means[agent.recommendation] == vectorised["simple_regret"][0]


def test_ask_tell_protocol_errors(seed: int) -> None:
    agent = SequentialHalving(4, 16, rng=seed)
    with pytest.raises(NotFittedError, match="has not finished"):
        _ = agent.recommendation
    arm = agent.ask()
    with pytest.raises(NotFittedError, match="tell the reward"):
        agent.ask()
    with pytest.raises(InvalidActionError, match="arm must be the arm last asked"):
        agent.tell(arm + 1, 0.0)
    agent.tell(arm, float(arm == 0))
    while not agent.done:
        arm = agent.ask()
        agent.tell(arm, float(arm == 0))
    assert agent.recommendation == 0
    with pytest.raises(NotFittedError, match="has finished"):
        agent.ask()
