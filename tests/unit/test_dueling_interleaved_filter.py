"""Unit tests of the Interleaved Filter 2 baseline (Yue et al. 2012)."""

from __future__ import annotations

import numpy as np
import pytest

from dpbandits._core.errors import InvalidActionError
from dpbandits.algorithms.dueling._streams import trial_seed_sequences, trial_streams
from dpbandits.algorithms.dueling.interleaved_filter import InterleavedFilter, simulate_interleaved_filter
from dpbandits.envs.dueling import finite_instance


@pytest.mark.parametrize(("instance", "horizon"), [("f1", 2500), ("f2", 1501)])
def test_ask_tell_and_block_simulation_agree_exactly(instance: str, horizon: int, seed: int) -> None:
    env = finite_instance(instance)
    metrics = simulate_interleaved_filter(env, n_trials=2, rng=seed, horizon=horizon, block=16)
    for trial, seq in enumerate(trial_seed_sequences(seed, 2)):
        feedback = env.streams(trial_streams(seq).environment, 1)
        agent = InterleavedFilter(env.n_arms, horizon, rng=seq)
        counts = np.zeros((env.n_arms, env.n_arms))
        for _ in range(horizon):
            pair = agent.ask()
            agent.tell(pair, first_wins=feedback.duel(*pair))
            counts[pair] += 1
        assert counts.sum() == horizon
        expected = env.regret_from_pair_counts(counts)["reward_regret"]
        assert metrics["reward_regret"][trial] == pytest.approx(expected, rel=1e-12)
        assert metrics["identified_best"][trial] == float(agent.candidate == env.best_arm)


@pytest.mark.statistical
def test_interleaved_filter_finds_the_best_arm(seed: int) -> None:
    out = simulate_interleaved_filter(finite_instance("f1"), n_trials=20, rng=seed, horizon=100_000)
    # IF2 fails with probability <= 1/T per trial (Yue et al. Thm 1): <= 20 × 1e-5 = 2e-4 here,
    # and the confidence radius is conservative, so the real rate is far lower
    assert out["identified_best"].min() == 1.0


def test_protocol_errors() -> None:
    agent = InterleavedFilter(3, 5, rng=0)
    pair = agent.ask()
    with pytest.raises(InvalidActionError):
        agent.tell((pair[1], pair[0]), first_wins=1)
