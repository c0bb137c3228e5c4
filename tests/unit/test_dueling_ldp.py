"""Unit tests of the local-DP randomised-response baseline (errata DUEL-30)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpbandits.algorithms.dueling._streams import trial_seed_sequences, trial_streams
from dpbandits.algorithms.dueling.dp_ebs_elimination import simulate_ebs_elimination
from dpbandits.algorithms.dueling.ldp_ebs_elimination import (
    LDPEBSElimination,
    flip_probability,
    ldp_guarantee,
    simulate_ldp_ebs,
)
from dpbandits.envs.base import counter_uniforms
from dpbandits.envs.dueling import finite_instance


def test_ask_tell_and_simulation_agree_exactly(seed: int) -> None:
    env, horizon, epsilon = finite_instance("f1"), 3000, 3.0
    metrics = simulate_ldp_ebs(env, n_trials=2, rng=seed, horizon=horizon, epsilon=epsilon, conf_scale=0.3,
                               block=128)
    seq = trial_seed_sequences(seed, 2)[1]
    parts = trial_streams(seq)
    key = parts.noise.generate_state(1, dtype=np.uint64)[0]
    feedback = env.streams(parts.environment, 1)
    agent = LDPEBSElimination(env.n_arms, horizon, epsilon, conf_scale=0.3, rng=seq)
    counts = np.zeros((env.n_arms, env.n_arms))
    q = flip_probability(epsilon)
    for t in range(1, horizon + 1):
        pair = agent.ask()
        report = feedback.duel(*pair) ^ int(counter_uniforms(np.array([key]), np.array([t]))[0] < q)
        agent.tell(pair, first_wins=report)
        counts[pair] += 1
    assert agent.elimination_rounds  # eliminations happened on both sides
    assert metrics["reward_regret"][1] == pytest.approx(env.regret_from_pair_counts(counts)["reward_regret"])


def test_large_epsilon_matches_the_non_private_twin(seed: int) -> None:
    env = finite_instance("f1")
    local = simulate_ldp_ebs(env, n_trials=3, rng=seed, horizon=100_000, epsilon=40.0)
    twin = simulate_ebs_elimination(env, n_trials=3, rng=seed, horizon=100_000)
    # q = 1/(1 + e^40) ≈ 4e-18: no report is flipped and the widths grow by a factor 1 + 1e-17
    np.testing.assert_allclose(local["reward_regret"], twin["reward_regret"], rtol=1e-12)


def test_guarantee_and_flip_probability() -> None:
    assert flip_probability(math.log(3.0)) == pytest.approx(0.25)
    g = ldp_guarantee(0.5)
    assert g.epsilon == 0.5 and "local model" in g.unit
    assert LDPEBSElimination(3, 10, 0.5).privacy == g
