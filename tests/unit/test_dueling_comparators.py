"""Unit tests of the round-by-round dueling comparators: BTM, RMED1, D-TS, CCB, MaxInP, CoLSTIM.

Each has an ask/tell agent and a simulation that advances a batch of trials together; both run the
same step (``_rounds``) on counter-based coins, so an agent fed by a trial's feedback streams plays
exactly the simulation's pairs of that trial.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from dpbandits._core.errors import InvalidActionError, InvalidParameterError, PrivacyBudgetExceededError
from dpbandits.algorithms.dueling._common import ROUND_BY_ROUND_MAX_HORIZON
from dpbandits.algorithms.dueling._rounds import uniform_distinct_pair
from dpbandits.algorithms.dueling._streams import counter_beta, trial_seed_sequences, trial_streams
from dpbandits.algorithms.dueling.beat_the_mean import BeatTheMean, BeatTheMeanPolicy, simulate_beat_the_mean
from dpbandits.algorithms.dueling.colstim import CoLSTIM, simulate_colstim
from dpbandits.algorithms.dueling.copeland_confidence_bound import (
    CopelandConfidenceBound,
    simulate_copeland_confidence_bound,
)
from dpbandits.algorithms.dueling.double_thompson import DoubleThompsonSampling, simulate_double_thompson
from dpbandits.algorithms.dueling.maxinp import MaxInP, MaxInPPolicy, linear_dueling_settings, simulate_maxinp
from dpbandits.algorithms.dueling.rmed import RMED1, simulate_rmed1
from dpbandits.algorithms.dueling.rucb import simulate_rucb
from dpbandits.algorithms.registry import list_algorithms
from dpbandits.envs.dueling import UtilityDuelingEnvironment, finite_instance, unit_ball_environment

Agent = Callable[[UtilityDuelingEnvironment, int, Any], Any]
CASES: list[tuple[str, Callable[..., Any], Agent, dict[str, Any]]] = [
    ("beat-the-mean", simulate_beat_the_mean, lambda env, t, seq: BeatTheMean(env.n_arms, t, rng=seq), {}),
    ("rmed1", simulate_rmed1, lambda env, t, seq: RMED1(env.n_arms, t, rng=seq), {}),
    ("double-thompson-sampling", simulate_double_thompson,
     lambda env, t, seq: DoubleThompsonSampling(env.n_arms, t, rng=seq), {}),
    ("copeland-confidence-bound", simulate_copeland_confidence_bound,
     lambda env, t, seq: CopelandConfidenceBound(env.n_arms, t, rng=seq), {}),
    ("maxinp", simulate_maxinp,
     lambda env, t, seq: MaxInP(env.features, t, confidence_scale=0.05, rng=seq), {"confidence_scale": 0.05}),
    ("colstim", simulate_colstim, lambda env, t, seq: CoLSTIM(env.features, t, rng=seq), {}),
]


@pytest.mark.parametrize(("name", "simulate", "make_agent", "options"), CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("instance", ["f1", "f2"])
def test_ask_tell_and_batched_simulation_agree_exactly(
    name: str, simulate: Callable[..., Any], make_agent: Agent, options: dict[str, Any], instance: str, seed: int
) -> None:
    env, horizon = finite_instance(instance), 300
    metrics = simulate(env, n_trials=3, rng=seed, horizon=horizon, **options)
    for trial, seq in enumerate(trial_seed_sequences(seed, 3)):
        feedback = env.streams(trial_streams(seq).environment, 1)
        agent = make_agent(env, horizon, seq)
        counts = np.zeros((env.n_arms, env.n_arms))
        for _ in range(horizon):
            pair = agent.ask()
            assert agent.ask() == pair  # asking twice returns the same pair
            agent.tell(pair, first_wins=feedback.duel(*pair))
            counts[pair] += 1
        expected = env.regret_from_pair_counts(counts)
        for metric in ("reward_regret", "preference_regret"):
            assert metrics[metric][trial] == pytest.approx(expected[metric], rel=1e-12), (name, metric)
        assert metrics["identified_best"][trial] == float(agent.recommendation == env.best_arm)
        with pytest.raises(PrivacyBudgetExceededError):
            agent.ask()


def test_every_comparator_is_registered_as_non_private() -> None:
    registered = {spec.name: spec for spec in list_algorithms() if spec.family == "dueling"}
    for name, *_ in CASES:
        assert registered[name].privacy == "none (non-private)"


@pytest.mark.parametrize("simulate", [c[1] for c in CASES] + [simulate_rucb], ids=lambda f: f.__name__)
def test_a_horizon_beyond_the_round_by_round_limit_is_refused_up_front(simulate: Callable[..., Any]) -> None:
    with pytest.raises(InvalidParameterError, match=r"^horizon must be <= 100000000 for .*; got 1000000000$"):
        simulate(finite_instance("f1"), n_trials=1, rng=0, horizon=10 * ROUND_BY_ROUND_MAX_HORIZON)


def test_agent_protocol_errors() -> None:
    agent = RMED1(3, 5)
    pair = agent.ask()
    with pytest.raises(InvalidActionError):
        agent.tell((pair[1], pair[0]), first_wins=1)
    with pytest.raises(InvalidParameterError, match="alpha must lie in"):
        DoubleThompsonSampling(3, 10, alpha=0.5)
    with pytest.raises(InvalidParameterError, match="gamma must be a finite float > 0"):
        BeatTheMean(3, 10, gamma=0.0)
    with pytest.raises(InvalidParameterError, match="features must"):
        MaxInP([1.0, 2.0], 10)
    with pytest.raises(InvalidParameterError, match="env must be"):
        simulate_colstim(object(), n_trials=1, rng=0, horizon=5)  # type: ignore[arg-type]


def test_btm_eliminates_the_worst_arm_and_deletes_its_comparisons() -> None:
    policy = BeatTheMeanPolicy(3, np.array([1], dtype=np.uint64), horizon=100, gamma=1.0)
    # arm 0 beats every opponent, arm 2 loses every comparison: P̂ = (1, ½, 0); with c(n) =
    # 3·√(ln(2·100·3)/n), the worst arm goes once 2·c(n*) <= 1, i.e. n* >= 231 comparisons each
    for first, wins in ((0, 1), (1, None), (2, 0)):
        for j in range(300):
            second = j % 3
            outcome = wins if wins is not None else int(j % 2 == 0)
            policy.observe(np.array([first]), np.array([second]), np.array([outcome]), 1)
            if not policy.working[0, 2]:
                break
    assert policy.working[0].tolist() == [True, True, False]
    assert policy.comparisons[0, 2].sum() == 231
    # comparisons against arm 2 are gone from arms 0 and 1
    assert policy.comparison_sums[0, 0] == policy.comparisons[0, 0, :2].sum()
    assert policy.win_sums[0, 1] == policy.wins[0, 1, :2].sum()


def test_maxinp_candidates_and_most_informative_pair() -> None:
    features = np.array([[1.0, 0.0], [0.0, 1.0], [-0.6, -0.6]])
    settings = linear_dueling_settings(features, 1000, 0, 1.0, 1.0)
    policy = MaxInPPolicy(settings, np.array([3], dtype=np.uint64), confidence_scale=1e-3)
    # arms 0 and 1 tie with each other and beat arm 2 three times in four: θ̂ ≈ (a, a). With a
    # tiny width arm 2 leaves the candidate set (θ̂ᵀ(x_0 − x_2) = 2.2·a = ln 3), and the most informative pair of the candidates
    # (the only pair of distinct candidates, lowest row-major order on the tie of its two orders) is played
    duels = [(0, 2, 1)] * 3 + [(0, 2, 0)] + [(1, 2, 1)] * 3 + [(1, 2, 0)] + [(0, 1, 1), (0, 1, 0)]
    for _ in range(100):
        for first, second, outcome in duels:
            policy.model.add(np.array([first]), np.array([second]), np.array([outcome]))
    np.testing.assert_allclose(policy.model.fit()[0], [np.log(3) / 2.2] * 2, rtol=0.01)
    first, second = policy.choose(999)
    assert (int(first[0]), int(second[0])) == (0, 1)


def test_counter_helpers() -> None:
    coins = np.linspace(0.001, 0.999, 600)
    first, second = uniform_distinct_pair(coins, 4)
    assert np.all(first != second) and set(zip(first.tolist(), second.tolist(), strict=True)) == {
        (i, j) for i in range(4) for j in range(4) if i != j}
    keys = np.array([5, 6], dtype=np.uint64)[:, None]
    both = counter_beta(keys, np.array([[0, 1]]), np.array([[2.0, 3.0]]), np.array([[4.0, 1.0]]))
    alone = counter_beta(keys[1:], np.array([[1]]), np.array([[3.0]]), np.array([[1.0]]))
    assert both[1, 1] == alone[0, 0]  # a variate does not depend on which others are drawn with it
    with pytest.raises(InvalidParameterError, match="shape must be >= 1"):
        counter_beta(keys, np.array([[0]]), np.array([[0.5]]), np.array([[1.0]]))


def test_linear_baselines_run_on_a_net_of_the_unit_ball(seed: int) -> None:
    env = unit_ball_environment([0.6, 0.8], n_points=8)
    for simulate in (simulate_maxinp, simulate_colstim):
        out = simulate(env, n_trials=2, rng=seed, horizon=60)
        assert np.all(out["reward_regret"] >= 0)
