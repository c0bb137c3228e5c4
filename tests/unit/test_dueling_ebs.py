"""Unit tests of DP-EBS-Elimination."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpbandits._core.errors import InvalidActionError, InvalidParameterError, PrivacyBudgetExceededError
from dpbandits.algorithms.dueling._streams import trial_seed_sequences, trial_streams
from dpbandits.algorithms.dueling.dp_ebs_elimination import (
    DPEBSElimination,
    dp_ebs_guarantee,
    ebs_constants,
    run_trial,
    simulate_dp_ebs_elimination,
    simulate_ebs_elimination,
)
from dpbandits.algorithms.registry import get_algorithm
from dpbandits.envs.dueling import finite_instance
from dpbandits.privacy.counters import TreeNoiseTable, binary_tree_error_bound, tree_levels
from dpbandits.privacy.guarantees import Neighbouring


def _play_agent(env, agent, feedback, horizon):  # type: ignore[no-untyped-def]
    counts = np.zeros((env.n_arms, env.n_arms), dtype=np.int64)
    for _ in range(horizon):
        pair = agent.ask()
        agent.tell(pair, first_wins=feedback.duel(*pair))
        counts[pair] += 1
    return counts


@pytest.mark.parametrize(
    ("epsilon", "opponent", "conf_scale"),
    [(math.inf, "with_self", 0.2), (4.0, "without_self", 0.01), (2.0, "with_self", 0.005)],
)
def test_ask_tell_and_vectorised_simulation_agree_exactly(
    epsilon: float, opponent: str, conf_scale: float, seed: int
) -> None:
    env, horizon = finite_instance("f1"), 1500
    constants = ebs_constants(env.n_arms, horizon, epsilon)
    seq = trial_seed_sequences(seed, 3)[1]
    parts = trial_streams(seq)
    generators = [np.random.default_rng(s) for s in parts.noise.spawn(env.n_arms)]
    table = TreeNoiseTable(horizon, constants.counter_epsilon, generators, chunk=64, integer=True)
    result = run_trial(env.streams(parts.environment, 1), 0, constants, parts.algorithm_key, table,
                       opponent=opponent, conf_scale=conf_scale, block=128, first_block=4)
    agent = DPEBSElimination(env.n_arms, horizon, epsilon, opponent=opponent, conf_scale=conf_scale, rng=seq,
                             insecure_seeded_noise=True)
    counts = _play_agent(env, agent, env.streams(trial_streams(seq).environment, 1), horizon)
    np.testing.assert_array_equal(counts, result.pair_counts)
    assert agent.active_arms == result.active.tolist()
    expected = {a: int(r) for a, r in enumerate(result.elimination_rounds) if r <= horizon}
    assert agent.elimination_rounds == expected
    assert len(expected) >= 1  # the comparison exercised at least one elimination
    # the registered entry point runs the same trials
    metrics = simulate_dp_ebs_elimination(env, n_trials=3, rng=seed, horizon=horizon, epsilon=epsilon,
                                          opponent=opponent, conf_scale=conf_scale, block=128)
    assert metrics["reward_regret"][1] == pytest.approx(env.regret_from_pair_counts(counts)["reward_regret"])


def test_bookkeeping_invariants_round_robin_and_commit(seed: int) -> None:
    env, horizon = finite_instance("f2"), 2500
    agent = DPEBSElimination(env.n_arms, horizon, math.inf, conf_scale=0.2, rng=seed, record_transcript=True)
    feedback = env.streams(trial_streams(trial_seed_sequences(seed, 1)[0]).environment, 1)
    stream_sums = np.zeros(env.n_arms)
    previous_left, previous_active = None, list(range(env.n_arms))
    for t in range(1, horizon + 1):
        pair = agent.ask()
        committed = agent.committed
        active_before = agent.active_arms
        agent.tell(pair, first_wins=feedback.duel(*pair))
        if committed:
            assert pair[0] == pair[1] == active_before[0]
            continue
        # round robin: the next active index after the previous left arm, cyclically
        if previous_left is not None:
            later = [a for a in active_before if a > previous_left]
            assert pair[0] == (later[0] if later else active_before[0])
        previous_left = pair[0]
        record = agent.transcript[-1]
        assert record["round"] == t and set(record["stream_elements"]) == set(active_before)
        for arm, element in record["stream_elements"].items():
            stream_sums[arm] += element
        # with noise off the release is the prefix sum of the stream
        for arm, released in record["released"].items():
            assert released == stream_sums[arm]
        active = agent.active_arms
        for i in active:  # n_i and the (pending-adjusted) stream match the retained statistics
            assert agent._left_counts[i] == agent._pair_counts[i, active].sum()
            assert stream_sums[i] - agent._pending[i] == agent._pair_wins[i, active].sum()
        assert set(active) <= set(previous_active)
        previous_active = active
    assert agent.committed and agent.recommendation == env.best_arm
    assert sorted(agent.elimination_rounds) == [a for a in range(env.n_arms) if a != env.best_arm]


@pytest.mark.statistical
def test_non_private_twin_finds_the_best_arm(seed: int) -> None:
    env = finite_instance("f1")
    out = simulate_ebs_elimination(env, n_trials=10, rng=seed, horizon=200_000)
    # on the good event (probability >= 1 − δ = 1 − 5e-6 per trial) arm 1 is never eliminated and
    # every other arm is gone long before T: false failure <= 10 × 5e-6 = 5e-5
    assert out["identified_best"].min() == 1.0
    assert np.all(out["last_elimination_round"] < 100_000)
    private = simulate_dp_ebs_elimination(env, n_trials=10, rng=seed, horizon=200_000, epsilon=math.inf)
    for key, value in out.items():
        np.testing.assert_array_equal(value, private[key])


def test_constants_match_the_spec_formulas() -> None:
    k, horizon, eps = 5, 10_000, 2.0
    c = ebs_constants(k, horizon, eps)
    delta = 1 / horizon
    assert c.counter_epsilon == eps / 4 and c.levels == 14
    assert c.confidence_log == pytest.approx(math.log(4 * k * k * horizon / delta))
    assert c.beta == pytest.approx(delta / (2 * k * horizon))
    assert c.tree_bound == pytest.approx(binary_tree_error_bound(horizon, eps / 4, c.beta, "css"))
    assert c.counter_scale == pytest.approx(14 / (eps / 4))
    rigorous = ebs_constants(k, horizon, eps, union_bound="rigorous", counter_epsilon="half", tree_bound="union")
    assert rigorous.confidence_log == pytest.approx(math.log(4 * k * 2**k * horizon / delta))
    assert rigorous.counter_epsilon == eps / 2
    assert rigorous.tree_bound == pytest.approx(binary_tree_error_bound(horizon, eps / 2, c.beta, "union"))
    assert ebs_constants(k, horizon, math.inf).tree_bound == 0.0


def test_guarantee() -> None:
    g = dp_ebs_guarantee(1.5)
    assert g.epsilon == 1.5 and g.delta == 0.0 and g.neighbouring is Neighbouring.LABEL_ONLY
    assert "preference label" in g.unit and "Lemma 2" in g.reference
    assert DPEBSElimination(3, 10, 1.5, counter_epsilon="half").privacy.epsilon == 1.5
    assert not dp_ebs_guarantee(math.inf).is_finite
    spec = get_algorithm("dp-ebs-elimination")
    assert spec.family == "dueling" and "reward_regret" in spec.metrics
    assert get_algorithm("ebs-elimination").privacy.startswith("none")


def test_validation_errors() -> None:
    agent = DPEBSElimination(3, 2, 1.0, rng=0)
    pair = agent.ask()
    assert agent.ask() == pair
    with pytest.raises(InvalidActionError, match="pair must be the last asked pair"):
        agent.tell((pair[0], (pair[1] + 1) % 3) if pair[0] == pair[1] else pair[::-1], first_wins=1)
    with pytest.raises(InvalidParameterError, match="first_wins must be 0 or 1"):
        agent.tell(pair, first_wins=2)
    with pytest.raises(InvalidParameterError, match="exactly one of winner"):
        agent.tell(pair)
    with pytest.raises(InvalidParameterError, match="exactly one of winner"):
        agent.tell(pair, pair[0], first_wins=True)
    outsider = next(arm for arm in range(3) if arm not in pair)
    with pytest.raises(InvalidParameterError, match="winner must be one of the asked arms"):
        agent.tell(pair, outsider)
    agent.tell(pair, first_wins=0)
    agent.tell(agent.ask(), first_wins=1)
    with pytest.raises(PrivacyBudgetExceededError, match="beyond the horizon"):
        agent.ask()
    with pytest.raises(InvalidParameterError, match="n_arms must be an int >= 2"):
        DPEBSElimination(1, 10, 1.0)
    with pytest.raises(InvalidParameterError, match="counter_epsilon must be one of"):
        DPEBSElimination(3, 10, 1.0, counter_epsilon="full")
    with pytest.raises(InvalidParameterError, match="failure_probability must lie in"):
        DPEBSElimination(3, 10, 1.0, failure_probability=1.0)
    with pytest.raises(InvalidParameterError, match="conf_scale must lie in"):
        DPEBSElimination(3, 10, 1.0, conf_scale=-1.0)
    with pytest.raises(InvalidParameterError, match="env must be a UtilityDuelingEnvironment"):
        simulate_dp_ebs_elimination(object(), n_trials=1, rng=0, horizon=10, epsilon=1.0)  # type: ignore[arg-type]


def test_agents_run_on_the_secure_noise_backend(seed: int) -> None:
    from dpbandits.algorithms.dueling.goptimal_dpdb import GOptimalDPDB
    from dpbandits.privacy.noise import OpenDPNoise

    env = finite_instance("f1")
    feedback = env.streams(seed, 1)
    agent = DPEBSElimination(env.n_arms, 50, 1.0, noise_backend=OpenDPNoise())
    for _ in range(50):
        pair = agent.ask()
        agent.tell(pair, first_wins=feedback.duel(*pair))
    assert agent.time == 50 and agent.privacy.epsilon == 1.0
    features = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]])
    g_agent = GOptimalDPDB(features, 200, 1.0, play_count_scale=0.0004, noise_backend=OpenDPNoise())
    while g_agent.time < 200:
        pair = g_agent.ask()
        g_agent.tell(pair, first_wins=1 if pair[0] <= pair[1] else 0)
    assert any("noisy_wins" in p.diagnostics for p in g_agent.phases)


def test_tell_by_winning_arm_records_the_same_outcome_as_first_wins(seed: int) -> None:
    # the form tell(pair, winner): the winning arm's index, never read as a 0/1 flag
    by_winner = DPEBSElimination(3, 300, 1.0, rng=seed, opponent="without_self")
    by_flag = DPEBSElimination(3, 300, 1.0, rng=seed, opponent="without_self")
    outcomes = np.random.default_rng(seed)
    for _ in range(300):
        pair = by_winner.ask()
        assert by_flag.ask() == pair
        first_wins = bool(outcomes.random() < 0.7)
        by_winner.tell(pair, pair[0] if first_wins else pair[1])
        by_flag.tell(pair, first_wins=first_wins)
    np.testing.assert_array_equal(by_winner._pair_wins, by_flag._pair_wins)
    assert by_winner.active_arms == by_flag.active_arms


def test_a_self_duel_must_be_told_with_first_wins() -> None:
    agent = DPEBSElimination(2, 100, 1.0, rng=0, opponent="with_self")
    while True:
        pair = agent.ask()
        if pair[0] == pair[1]:
            break
        agent.tell(pair, pair[0])
    with pytest.raises(InvalidParameterError, match="self-duel"):
        agent.tell(pair, pair[0])
    agent.tell(pair, first_wins=True)


@pytest.mark.parametrize(("stats_removal", "counter_epsilon", "check_every", "epsilon"), [
    ("restart", "whole", 1, 4.0),
    ("restart", "quarter", 1, math.inf),
    ("subtract", "quarter", 7, 4.0),
    ("restart", "whole", 5, 4.0),
])
def test_ablations_agree_between_agent_and_simulation(
    stats_removal: str, counter_epsilon: str, check_every: int, epsilon: float, seed: int
) -> None:
    env, horizon, scale = finite_instance("f1"), 3000, 0.2 if math.isinf(epsilon) else 0.02
    options = {"stats_removal": stats_removal, "check_every": check_every, "conf_scale": scale}
    metrics = simulate_dp_ebs_elimination(env, n_trials=2, rng=seed, horizon=horizon, epsilon=epsilon,
                                          counter_epsilon=counter_epsilon, block=256, **options)
    seq = trial_seed_sequences(seed, 2)[1]
    agent = DPEBSElimination(env.n_arms, horizon, epsilon, counter_epsilon=counter_epsilon, rng=seq,
                             insecure_seeded_noise=True, **options)
    counts = _play_agent(env, agent, env.streams(trial_streams(seq).environment, 1), horizon)
    assert metrics["reward_regret"][1] == pytest.approx(env.regret_from_pair_counts(counts)["reward_regret"],
                                                        rel=1e-12)
    assert len(agent.elimination_rounds) >= 2  # several eliminations (restarts) were exercised
    assert all(r % check_every == 0 for r in agent.elimination_rounds.values())
    assert metrics["committed"][1] == float(agent.committed)


def test_restart_discards_every_statistic_and_accounts_one_counter_once() -> None:
    agent = DPEBSElimination(3, 400, 2.0, stats_removal="restart", counter_epsilon="whole", conf_scale=0.05, rng=3,
                             insecure_seeded_noise=True)
    while not agent.elimination_rounds:
        pair = agent.ask()
        agent.tell(pair, first_wins=pair[0] <= pair[1])
    # right after the restart every survivor starts from zero with a fresh counter
    assert np.all(agent._left_counts == 0) and np.all(agent._pair_counts == 0)
    assert agent._counters.time == 0 and agent._restarts == 1
    assert agent._counters.scale == pytest.approx(tree_levels(400) / 2.0)  # ε_c = ε
    assert agent.privacy.epsilon == 2.0 and "restart" in agent.privacy.reason
    restart = ebs_constants(3, 400, 2.0, stats_removal="restart", counter_epsilon="whole")
    assert restart.beta == pytest.approx(ebs_constants(3, 400, 2.0).beta / 3)  # β = δ/(2K²T)
    with pytest.raises(InvalidParameterError, match="counter_epsilon must be 'quarter' or 'half' with "
                                                    "stats_removal='subtract'"):
        DPEBSElimination(3, 400, 2.0, counter_epsilon="whole")
    with pytest.raises(InvalidParameterError, match="check_every must be an int >= 1"):
        DPEBSElimination(3, 400, 2.0, check_every=0)
