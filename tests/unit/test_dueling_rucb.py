"""Unit tests of the RUCB baseline (Zoghi et al. 2014)."""

from __future__ import annotations

import numpy as np
import pytest

from dpbandits._core.errors import InvalidActionError, InvalidParameterError
from dpbandits.algorithms.dueling._streams import trial_seed_sequences, trial_streams
from dpbandits.algorithms.dueling.rucb import RUCB, rucb_step, simulate_rucb
from dpbandits.envs.dueling import finite_instance


def test_ask_tell_and_batched_simulation_agree_exactly(seed: int) -> None:
    env, horizon = finite_instance("f1"), 300
    metrics = simulate_rucb(env, n_trials=2, rng=seed, horizon=horizon)
    for trial, seq in enumerate(trial_seed_sequences(seed, 2)):
        feedback = env.streams(trial_streams(seq).environment, 1)
        agent = RUCB(env.n_arms, horizon, rng=seq)
        counts = np.zeros((env.n_arms, env.n_arms))
        for _ in range(horizon):
            pair = agent.ask()
            agent.tell(pair, first_wins=feedback.duel(*pair))
            counts[pair] += 1
        expected = env.regret_from_pair_counts(counts)["reward_regret"]
        assert metrics["reward_regret"][trial] == pytest.approx(expected, rel=1e-12)


def test_step_rules_on_a_hand_made_state() -> None:
    k = 3
    wins = np.zeros((1, k, k))
    # arm 0 beat arm 1 and arm 2 many times: only arm 0 is a potential Condorcet winner
    wins[0, 0, 1] = wins[0, 0, 2] = 400
    wins[0, 1, 0] = wins[0, 2, 0] = 10
    wins[0, 1, 2] = wins[0, 2, 1] = 50
    keys = np.array([7], dtype=np.uint64)
    first, second, hypothesis = rucb_step(wins, np.array([-1]), 1000, keys, 0.51)
    assert first[0] == 0 and hypothesis[0] == 0  # |C| = 1: B ← C
    # no arm can optimistically beat arm 0 (U_j0 < ½ = U_00): RUCB duels arm 0 with itself
    assert second[0] == 0
    # with no data every U is 1 (x/0 := 1) off the diagonal: C = all arms, and the opponent is
    # drawn among the tied maximisers j != c
    first, second, _ = rucb_step(np.zeros((1, k, k)), np.array([-1]), 1, keys, 0.51)
    assert second[0] != first[0]


@pytest.mark.statistical
@pytest.mark.slow
def test_rucb_finds_the_condorcet_winner(seed: int) -> None:
    out = simulate_rucb(finite_instance("f1"), n_trials=8, rng=seed, horizon=4000)
    # RUCB's regret is O(K² + K log T): after 4000 rounds on F1 the best arm is the most frequent
    # first arm in every trial (observed margin is large; failure rate well below 1e-4 per trial)
    assert out["identified_best"].min() == 1.0
    uniform_play = 4000 * 2 * finite_instance("f1").reward_gaps.mean()  # regret of random pairs
    assert out["reward_regret"].max() < 0.3 * uniform_play


def test_validation() -> None:
    with pytest.raises(InvalidParameterError, match="alpha must lie in"):
        RUCB(3, 10, alpha=0.5)
    agent = RUCB(3, 10, rng=0)
    pair = agent.ask()
    with pytest.raises(InvalidActionError, match="pair must be the last asked pair"):
        agent.tell((pair[1], pair[0]) if pair[0] != pair[1] else (0, 1), first_wins=1)
    with pytest.raises(InvalidParameterError, match="env must be"):
        simulate_rucb(object(), n_trials=1, rng=0, horizon=5)  # type: ignore[arg-type]
