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
from scipy import special

from dpbandits._core.errors import InvalidActionError, InvalidParameterError, PrivacyBudgetExceededError
from dpbandits.algorithms.dueling._common import ROUND_BY_ROUND_MAX_HORIZON
from dpbandits.algorithms.dueling._rounds import uniform_distinct_pair
from dpbandits.algorithms.dueling._streams import (
    counter_beta,
    counter_standard_gamma,
    trial_seed_sequences,
    trial_streams,
)
from dpbandits.algorithms.dueling.beat_the_mean import BeatTheMean, BeatTheMeanPolicy, simulate_beat_the_mean
from dpbandits.algorithms.dueling.colstim import CoLSTIM, simulate_colstim
from dpbandits.algorithms.dueling.copeland_confidence_bound import (
    CopelandConfidenceBound,
    simulate_copeland_confidence_bound,
)
from dpbandits.algorithms.dueling.double_thompson import (
    DoubleThompsonPolicy,
    DoubleThompsonSampling,
    confidence_bounds,
    simulate_double_thompson,
)
from dpbandits.algorithms.dueling.maxinp import MaxInP, MaxInPPolicy, linear_dueling_settings, simulate_maxinp
from dpbandits.algorithms.dueling.rmed import RMED1, simulate_rmed1
from dpbandits.algorithms.dueling.rucb import RUCBPolicy, rucb_upper, simulate_rucb
from dpbandits.algorithms.registry import list_algorithms
from dpbandits.envs.base import counter_uniform
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


def test_counter_gamma_follows_the_documented_counter_layout() -> None:
    # a scalar re-implementation: attempt a of variate `index` reads the uniforms at counters
    # 2⁶² | (index << 17) | (a << 1) | b, and the first accepted attempt gives d·v (one-element arrays:
    # the array functions' last bits, which Python floats' math may not share)
    def scalar_gamma(key: int, index: int, shape: float) -> float:
        d = np.array([shape]) - 1.0 / 3.0
        c = 1.0 / np.sqrt(9.0 * d)
        for attempt in range(1 << 16):
            counter = (1 << 62) | (index << 17) | (attempt << 1)
            x = special.ndtri(np.array([counter_uniform(key, counter)]))
            v = (1.0 + c * x) ** 3
            if v[0] > 0 and np.log(np.array([counter_uniform(key, counter | 1)]))[0] < (
                    0.5 * x * x + d - d * v + d * np.log(v))[0]:
                return float((d * v)[0])
        raise AssertionError("no attempt accepted")

    rng = np.random.default_rng(4)
    keys = rng.integers(0, 2**63, 300, dtype=np.uint64)
    indices = rng.integers(0, 2**45, 300)
    shapes = np.where(rng.random(300) < 0.5, 1.0, rng.uniform(1.0, 200.0, 300))  # shape 1: most rejections
    expected = [scalar_gamma(int(k), int(i), float(a)) for k, i, a in zip(keys, indices, shapes, strict=True)]
    assert counter_standard_gamma(keys, indices, shapes).tolist() == expected
    assert counter_standard_gamma(keys[0], indices[:5], shapes[:5]).tolist() == [
        scalar_gamma(int(keys[0]), int(i), float(a)) for i, a in zip(indices[:5], shapes[:5], strict=True)]


def _single_trial_runs_as_batched(one: Any, two: Any, preference: np.ndarray, steps: int) -> None:
    """Drive a policy of one trial and one of two (the first with the same key) on the same feedback."""
    u = np.random.default_rng(5).random(steps)
    for t in range(1, steps + 1):
        first, second = one.choose(t)
        both_first, both_second = two.choose(t)
        assert (int(first[0]), int(second[0])) == (int(both_first[0]), int(both_second[0])), t
        outcome = np.array([int(u[t - 1] < preference[first[0], second[0]])])
        one.observe(first, second, outcome, t)
        two.observe(both_first, both_second, np.concatenate([outcome, 1 - outcome]), t)
    for name, value in vars(one).items():  # every per-trial array (batch dimension first) of the two runs
        if isinstance(value, np.ndarray) and value.ndim and value.shape[0] == 1 and name != "rows":
            np.testing.assert_array_equal(value[0], getattr(two, name)[0], err_msg=name)


def _strong_order(k: int, gap: float) -> np.ndarray:
    preference = np.full((k, k), 0.5)
    upper = np.triu_indices(k, 1)
    preference[upper], preference[upper[::-1]] = 0.5 + gap, 0.5 - gap
    return preference


def test_beat_the_mean_single_trial_step_is_the_batched_step() -> None:
    keys = np.array([11, 12], dtype=np.uint64)
    one, two = BeatTheMeanPolicy(4, keys[:1], 5, 1.0), BeatTheMeanPolicy(4, keys, 5, 1.0)
    _single_trial_runs_as_batched(one, two, _strong_order(4, 0.45), 2500)
    assert one.working[0].sum() == 1  # every elimination was compared, up to the commitment


def test_rucb_single_trial_step_is_the_batched_step() -> None:
    # a strong order (|C| = 1, B kept) and a Condorcet cycle (C = ∅ once the cycle is resolved)
    cycle = _strong_order(4, 0.4)
    cycle[0, 3], cycle[3, 0] = 0.1, 0.9
    keys = np.array([11, 12], dtype=np.uint64)
    for preference in (_strong_order(5, 0.3), cycle):
        one, two = RUCBPolicy(len(preference), keys[:1], 0.51), RUCBPolicy(len(preference), keys, 0.51)
        sizes = set()
        original_choose = one.choose

        def choose(t: int, one: Any = one, original_choose: Any = original_choose, sizes: set[int] = sizes) -> Any:
            upper = rucb_upper(one.wins, t, 0.51)
            sizes.add(min(int((upper >= 0.5).all(axis=2).sum()), 2))
            return original_choose(t)

        one.choose = choose
        _single_trial_runs_as_batched(one, two, preference, 1500)
        assert sizes == ({1, 2} if preference is not cycle else {0, 1, 2}), sizes
    # ties: at t = 1 (ln t = 0) with w_ij = w_ji every U_jc is ½, c included, and d ≠ c is drawn
    for key in range(20):
        one, two = RUCBPolicy(4, np.array([key], dtype=np.uint64), 0.51), RUCBPolicy(4, np.array([key, 0], dtype=np.uint64), 0.51)
        one.wins[:], two.wins[:] = 1.0, 1.0
        (first,), (second,) = one.choose(1)
        assert first != second and (first, second) == tuple(int(x[0]) for x in two.choose(1))


def test_double_thompson_single_trial_step_is_the_batched_step() -> None:
    # an agent's step (_choose_one) against the batched step on a batch of two, on the same feedback;
    # a Condorcet cycle keeps C partial and a clear winner makes |C| = 1, so every branch is compared
    k = 6
    preference = np.full((k, k), 0.5)
    upper = np.triu_indices(k, 1)
    preference[upper], preference[upper[::-1]] = 0.8, 0.2
    preference[0, 5], preference[5, 0] = 0.2, 0.8
    keys = np.array([11, 12], dtype=np.uint64)
    one, two = DoubleThompsonPolicy(k, keys[:1], 0.51), DoubleThompsonPolicy(k, keys, 0.51)
    u = np.random.default_rng(5).random(700)
    sizes = set()
    for t in range(1, 701):
        upper_bound, _ = confidence_bounds(one.wins, t, 0.51)
        copeland = ((upper_bound > 0.5) & ~np.eye(k, dtype=bool)).sum(axis=2)[0]
        sizes.add(min(int((copeland == copeland.max()).sum()), 2) if copeland.max() < k - 1 else 1)
        first, second = one.choose(t)
        both_first, both_second = two.choose(t)
        assert (int(first[0]), int(second[0])) == (int(both_first[0]), int(both_second[0])), t
        outcome = np.array([int(u[t - 1] < preference[first[0], second[0]])])
        one.observe(first, second, outcome, t)
        two.observe(both_first, both_second, np.concatenate([outcome, outcome]), t)
    np.testing.assert_array_equal(one.wins[0], two.wins[0])
    assert sizes == {1, 2}
    # K = 18: |C|·K above the read-ahead limit, θ⁽²⁾ drawn in a second call
    keys = np.array([13, 14], dtype=np.uint64)
    _single_trial_runs_as_batched(DoubleThompsonPolicy(18, keys[:1], 0.51), DoubleThompsonPolicy(18, keys, 0.51),
                                  _strong_order(18, 0.3), 60)


def test_linear_baselines_run_on_a_net_of_the_unit_ball(seed: int) -> None:
    env = unit_ball_environment([0.6, 0.8], n_points=8)
    for simulate in (simulate_maxinp, simulate_colstim):
        out = simulate(env, n_trials=2, rng=seed, horizon=60)
        assert np.all(out["reward_regret"] >= 0)


def test_ccb_step_c_adds_every_settled_copeland_winner_to_b() -> None:
    """Zoghi et al. (2015), Algorithm 1, step C: B ← B ∪ {i} for every i ∈ C_t with Cpld⁺(i) = Cpld⁻(i).

    Every pair is resolved: 0 beats 1 and 2, 1 beats 2 and 3, 2 beats 3, 3 beats 0, so arms 0 and 1
    both have the largest Copeland score 2, settled. B = {0, 2} before the round; step B drops 2
    (Cpld⁺(2) = 1 < 2). Step C must give B = {0, 1} (the old code kept only the lowest index, B = {0}),
    empty B^0 and B^1, set L_C = K − 1 − 2 = 1, and empty every other B^j with fewer than 2 arms.
    """
    from dpbandits.algorithms.dueling.copeland_confidence_bound import CCBPolicy

    k, n = 4, 10_000.0
    beats = [(0, 1), (0, 2), (1, 2), (1, 3), (2, 3), (3, 0)]
    wins = np.zeros((1, k, k))
    for i, j in beats:
        wins[0, i, j] = n
    policy = CCBPolicy(k, np.array([7], dtype=np.uint64), alpha=0.51)
    policy.wins = wins
    policy.best_set[:] = np.array([[True, False, True, False]])
    policy.beaters[0, 0, 3] = True  # B^0 = {3}: 3 does beat 0, no hypothesis disproven
    policy.beaters[0, 3, 1] = True  # B^3 = {1}: fewer than L_C + 1 = 2 arms, emptied by step C
    policy.max_losses[:] = 3
    policy.choose(t=20_000)
    assert policy.best_set[0].tolist() == [True, True, False, False]
    assert not policy.beaters[0, 0].any() and not policy.beaters[0, 1].any()
    assert policy.max_losses[0] == 1
    assert not policy.beaters[0, 3].any()


@pytest.mark.slow
def test_maxinp_default_width_beats_uniformly_random_pairs_and_the_paper_width_is_one_argument_away() -> None:
    """A comparator must not be a strawman: on F2 (Bradley–Terry, K = 10, d = 5) at T = 2000 MaxInP's
    default (tuned) width pays less regret per round than uniformly random pairs of distinct arms (1.93
    per round, computed exactly); the paper's width (``confidence_scale=1``) is still available and
    behaves as measured (about 1.8 per round: its candidate set still holds every arm)."""
    from dpbandits.algorithms.dueling.maxinp import PAPER_CONFIDENCE_SCALE, PRACTICAL_CONFIDENCE_SCALE
    from dpbandits.envs.dueling import finite_instance

    env = finite_instance("f2")
    u = np.asarray(env.features) @ np.asarray(env.theta)
    k, horizon = u.size, 2000
    random_pairs = np.mean([2 * u.max() - u[i] - u[j] for i in range(k) for j in range(k) if i != j])
    tuned = simulate_maxinp(env, n_trials=2, rng=1, horizon=horizon)["reward_regret"] / horizon
    paper = simulate_maxinp(env, n_trials=2, rng=1, horizon=horizon,
                            confidence_scale=PAPER_CONFIDENCE_SCALE)["reward_regret"] / horizon
    assert PRACTICAL_CONFIDENCE_SCALE < PAPER_CONFIDENCE_SCALE == 1.0
    assert tuned.max() < 0.25 * random_pairs
    assert paper.min() > 0.8 * random_pairs
