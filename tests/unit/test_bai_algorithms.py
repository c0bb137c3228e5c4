"""DP-BAI, DP-BAI-Gauss, Baseline, OD-LinBAI and DP-OD: mechanics on the paper's instances, budget,
ask/tell vs vectorised agreement, validation and guarantees."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpbandits._core.errors import (
    InvalidActionError,
    InvalidParameterError,
    NotFittedError,
    PaperVariantWarning,
    PrivacyWarning,
)
from dpbandits._core.rng import spawn_generators
from dpbandits.algorithms.bai.dp_bai import DPBAI, Baseline, DPBAIGauss
from dpbandits.algorithms.bai.dp_od import DPOD
from dpbandits.algorithms.bai.od_linbai import ODLinBAI
from dpbandits.algorithms.bai.schedule import InsufficientBudgetError
from dpbandits.algorithms.registry import get_algorithm
from dpbandits.envs.linear import LinearBandit, dp_bai_instance, dp_bai_two_arm_instance
from dpbandits.privacy.guarantees import ApproxDP, Neighbouring, PureDP


@pytest.fixture(scope="module")
def section5():
    return dp_bai_instance()


def _first_plan(algorithm):
    planner = algorithm.planner
    return planner.plan(0, planner.initial_state())


@pytest.mark.parametrize("budget", [500, 1000, 2001])
def test_dp_bai_section5_mechanics(section5, budget):
    algo = DPBAI(section5.features, budget, 0.1)
    plan = _first_plan(algo)
    m = math.ceil((budget - 2) / 2)
    assert algo.schedule.sizes == (30, 1) and algo.planner.effective_budget == budget - 2
    assert plan.info["branch"] == "max-det" and plan.pulled.tolist() == [0, 2]
    assert plan.pulls.tolist() == [m, m] and not plan.clipped
    np.testing.assert_allclose(plan.noise_scales, 1 / (0.1 * m))  # Lap(1/(ε m))
    np.testing.assert_allclose(plan.noise_weights[1], [0.9, 0.0], atol=1e-12)


@pytest.mark.parametrize("budget", [500, 1000, 2000, 3000])
def test_baseline_section5_uses_guard(section5, budget):
    plan = _first_plan(Baseline(section5.features, budget, 0.1))
    m = min(math.ceil((budget - 2) / 30), budget // 30)
    assert plan.pulled.tolist() == list(range(30)) and plan.pulls.tolist() == [m] * 30
    assert plan.clipped == (math.ceil((budget - 2) / 30) > budget // 30)
    assert plan.total_pulls <= budget


def test_od_linbai_and_dp_od_section5_allocation(section5):
    budget = 1000
    od_plan = _first_plan(ODLinBAI(section5.features, budget))
    dp_plan = _first_plan(DPOD(section5.features, budget, 0.1))
    for plan in (od_plan, dp_plan):
        assert plan.pulled.tolist() == [0, 2] and plan.pulls.tolist() == [math.ceil((budget - 3) / 2)] * 2
        assert plan.keep == 1
    assert dp_plan.info["sensitivity_bound"] == pytest.approx(10.0)  # L = ‖a_3‖₁ = 10
    np.testing.assert_allclose(dp_plan.noise_scales, 10.0 / 0.1)


def test_dp_od_l1_sensitivity_exceeds_paper_l2_for_diagonal_arms():
    features = np.array([[1.0, 1.0], [1.0, -1.0], [0.2, 0.1]])
    l1 = _first_plan(DPOD(features, 200, 1.0)).info["sensitivity_bound"]
    with pytest.warns(PaperVariantWarning):
        paper = DPOD(features, 200, 1.0, l_mode="paper")
    assert l1 == pytest.approx(2.0) and _first_plan(paper).info["sensitivity_bound"] == pytest.approx(math.sqrt(2))
    assert paper.privacy.epsilon == pytest.approx(math.sqrt(2))


def test_epsilon_infinity_dp_bai_equals_od_linbai_on_same_rewards(section5, seed):
    budget = 1000  # even: both pull arms 1 and 3 (T − 2)/2 times
    a = DPBAI(section5.features, budget, math.inf).simulate(section5, 300, seed, pull_consistent=True)
    b = ODLinBAI(section5.features, budget).simulate(section5, 300, seed, pull_consistent=True)
    np.testing.assert_array_equal(a.recommended, b.recommended)
    np.testing.assert_array_equal(a.pulls, b.pulls)


def _multi_phase_env(rng):
    features = rng.uniform(0.0, 1.0, size=(12, 3))
    theta = np.array([0.3, 0.25, 0.2])
    return LinearBandit(features, theta, reward="bernoulli")


def _child(seed, index):
    return np.random.SeedSequence(seed).spawn(index + 1)[index]


def _ask_tell(algorithm, env, seed, index=0):
    # the same (environment, algorithm, noise) streams as simulate(env, 1, _child(seed, index))
    env_rng = spawn_generators(_child(seed, index), 3)[0]
    streams = env.streams(env_rng, 1)
    agent = algorithm.agent(_child(seed, index), insecure_seeded_noise=True)
    while not agent.done:
        arm = agent.ask()
        agent.tell(arm, float(streams.pull(np.array([arm]))[0]))
    return agent


@pytest.mark.parametrize("name", ["dp-bai", "gauss", "baseline", "od-linbai", "dp-od"])
def test_ask_tell_and_vectorised_forms_agree_exactly(rng, seed, name):
    env = _multi_phase_env(rng)
    x, budget = env.features, 400
    algorithm = {
        "dp-bai": lambda: DPBAI(x, budget, 0.5),
        "gauss": lambda: DPBAIGauss(x, budget, 0.5, 1e-3),
        "baseline": lambda: Baseline(x, budget, 0.5),
        "od-linbai": lambda: ODLinBAI(x, budget),
        "dp-od": lambda: DPOD(x, budget, 0.5),
    }[name]()
    for child in range(4):
        # SeedSequence.spawn is stateful: build the child afresh for each form
        vectorised = algorithm.simulate(env, 1, _child(seed, child), pull_consistent=True)
        agent = _ask_tell(algorithm, env, seed, child)
        assert agent.recommendation == int(vectorised.recommended[0])
        np.testing.assert_array_equal(agent.pulls, vectorised.pulls[0])


@pytest.mark.parametrize("int_seed", [0, 12345])
def test_an_agent_seeded_by_an_int_is_simulate_with_that_int(rng, int_seed):
    # agent() builds only the algorithm and noise streams of an int seed (children 1 and 2 of simulate's
    # three); they must be simulate's streams, and the phase sums must be simulate's (segment sums)
    env = _multi_phase_env(rng)
    algorithm = DPBAI(env.features, 400, 0.5)
    vectorised = algorithm.simulate(env, 1, int_seed, pull_consistent=True)
    streams = env.streams(spawn_generators(int_seed, 3)[0], 1)
    agent = algorithm.agent(int_seed, insecure_seeded_noise=True)
    _, algorithm_rng, noise_rng = spawn_generators(int_seed, 3)
    assert agent._rng.bit_generator.state == algorithm_rng.bit_generator.state  # tie-break keys
    assert agent._noise.rng.bit_generator.state == noise_rng.bit_generator.state
    while not agent.done:
        arm = agent.ask()
        agent.tell(arm, float(streams.pull(np.array([arm]))[0]))
    assert len(agent.phase_log) >= 2
    assert agent.recommendation == int(vectorised.recommended[0])
    np.testing.assert_array_equal(agent.pulls, vectorised.pulls[0])


def test_an_agent_saved_in_mid_phase_resumes_with_the_sums_it_had(rng, tmp_path):
    env = _multi_phase_env(rng)
    algorithm = DPBAI(env.features, 400, 0.5)
    rewards = np.random.default_rng(3).random(400).tolist()
    whole, parted = (algorithm.agent(5, insecure_seeded_noise=True) for _ in range(2))
    for i in range(57):  # inside the first phase
        parted.tell(parted.ask(), rewards[i])
    sums = parted._get_state()["sums"]
    assert sums is not None and sums.sum() == pytest.approx(sum(rewards[:57]))
    parted = type(parted).load(parted.save(tmp_path / "agent.json"))
    np.testing.assert_allclose(parted._get_state()["sums"], sums, rtol=0, atol=1e-12)
    i = 57
    while not parted.done:
        parted.tell(parted.ask(), rewards[i])
        i += 1
    i = 0
    while not whole.done:
        whole.tell(whole.ask(), rewards[i])
        i += 1
    assert parted.recommendation == whole.recommendation
    for a, b in zip(parted.phase_log, whole.phase_log, strict=True):
        np.testing.assert_allclose(a["estimates"], b["estimates"], rtol=1e-12, atol=1e-12)


def test_multi_phase_dp_bai_uses_both_branches_and_logs_noise_scales(rng, seed):
    env = _multi_phase_env(rng)
    algo = DPBAI(env.features, 400, 0.5)
    agent = _ask_tell(algo, env, seed)
    assert algo.schedule.n_phases == len(agent.phase_log) >= 2
    for entry in agent.phase_log:
        assert entry["noise_scale"] == pytest.approx(1 / (0.5 * entry["pulls_per_arm"]))
    assert agent.pulls.sum() <= 400


def test_budget_never_exceeded_random_configurations(rng):
    checked = 0
    for _ in range(40):
        k, d = int(rng.integers(2, 40)), int(rng.integers(1, 7))
        features = rng.uniform(0.05, 1.0, size=(k, d))
        env = LinearBandit(features, np.full(d, 0.5 / d), reward="bernoulli")
        low = DPBAI(features, 10_000, 1.0).schedule.reserved  # just feasible: T' = 1
        budget = int(rng.integers(low + 1, low + 3 * k * max(d, 2) + 2))
        variants = [(DPBAI, (1.0,), {}), (Baseline, (1.0,), {}), (DPBAI, (1.0,), {"budget_mode": "strict"}),
                    (ODLinBAI, (), {}), (DPOD, (1.0,), {})]
        for cls, args, kwargs in variants:
            try:
                result = cls(features, budget, *args, **kwargs).simulate(env, 4, int(rng.integers(2**31)))
            except InsufficientBudgetError:
                continue
            checked += 1
            assert result.pulls_used.max() <= budget
    assert checked > 80


def test_paper_mode_clips_and_strict_mode_never_clips_on_counterexample(rng):
    features = rng.normal(size=(10, 4))
    env = LinearBandit(np.abs(features), np.full(4, 0.1), reward="bernoulli")
    paper = DPBAI(np.abs(features), 97, 1.0).simulate(env, 50, 1)
    strict = DPBAI(np.abs(features), 97, 1.0, budget_mode="strict").simulate(env, 50, 1)
    assert paper.clipped.any() and not strict.clipped.any()
    assert paper.pulls_used.max() <= 97 and strict.pulls_used.max() <= 97


def test_guarantees_state_unit_and_reference(section5):
    g = DPBAI(section5.features, 1000, 0.1).privacy
    assert isinstance(g, PureDP) and g.epsilon == 0.1 and g.neighbouring is Neighbouring.REPLACE_ONE
    assert "reward table" in g.unit and "Proposition 4.1" in g.reference
    assert Baseline(section5.features, 1000, 0.1).privacy.epsilon == 0.1
    assert DPOD(section5.features, 1000, 0.1).privacy.epsilon == 0.1
    assert math.isinf(DPBAI(section5.features, 1000, math.inf).privacy.epsilon)
    assert math.isinf(ODLinBAI(section5.features, 1000).privacy.epsilon)
    gauss = DPBAIGauss(section5.features, 1000, 0.5, 1e-5).privacy
    assert isinstance(gauss, ApproxDP) and (gauss.epsilon, gauss.delta) == (0.5, 1e-5)
    with pytest.warns(PrivacyWarning, match="epsilon < 1"):
        weak = DPBAIGauss(section5.features, 1000, 2.0, 1e-5)
    assert math.isinf(weak.privacy.epsilon)


def test_gauss_analytic_calibration_holds_for_large_epsilon(section5):
    from dpbandits.privacy.mechanisms import analytic_gaussian_sigma

    algo = DPBAIGauss(section5.features, 1000, 2.0, 1e-5, calibration="analytic")
    assert (algo.privacy.epsilon, algo.privacy.delta) == (2.0, 1e-5) and "Balle" in algo.privacy.reference
    np.testing.assert_allclose(_first_plan(algo).noise_scales, analytic_gaussian_sigma(1.0 / 499, 2.0, 1e-5),
                               rtol=1e-9)


def test_gauss_noise_scale(section5):
    plan = _first_plan(DPBAIGauss(section5.features, 1000, 0.5, 1e-3))
    m = 499
    np.testing.assert_allclose(plan.noise_scales, math.sqrt(2 * math.log(1.25 / 1e-3)) / (0.5 * m))


def test_out_of_range_rewards_refused_unless_asked():
    with pytest.warns(PaperVariantWarning):
        env = dp_bai_two_arm_instance(2.0, variant="paper")
    with pytest.raises(InvalidParameterError, match="reward_bounds"):
        DPBAI(env.features, 100, 1.0).simulate(env, 3, 0)
    loose = DPBAI(env.features, 100, 1.0, allow_out_of_range=True)
    assert loose.simulate(env, 3, 0).recommended.shape == (3,)
    assert math.isinf(loose.privacy.epsilon)
    clipped = DPBAI(env.features, 100, 1.0, clip_rewards=True).simulate(env, 3, 0)
    assert clipped.pulls_used.max() <= 100


@pytest.mark.parametrize("cls", [DPBAI, DPOD])
def test_allow_out_of_range_is_honoured_by_ask_tell_as_by_simulate(seed, cls):
    # Appendix E.2 as printed: arm 1's rewards reach 1.1; both forms must run it and agree
    with pytest.warns(PaperVariantWarning):
        env = dp_bai_two_arm_instance(5.0, variant="paper")
    algorithm = cls(env.features, 200, 0.5, allow_out_of_range=True)
    for child in range(3):
        vectorised = algorithm.simulate(env, 1, _child(seed, child), pull_consistent=True)
        agent = _ask_tell(algorithm, env, seed, child)
        assert agent.recommendation == int(vectorised.recommended[0])
        np.testing.assert_array_equal(agent.pulls, vectorised.pulls[0])
    strict = cls(env.features, 200, 0.5).agent(0)
    with pytest.raises(InvalidParameterError, match="reward"):
        strict.tell(strict.ask(), 1.05)


def test_agent_refuses_non_finite_rewards_with_infinite_bounds_and_counts_pulls_mid_phase(section5, tmp_path):
    # allow_out_of_range accepts any finite reward (the bounds are ±inf), never NaN or ±inf
    agent = DPBAI(section5.features, 200, 0.5, allow_out_of_range=True).agent(0)
    asked = []
    for reward in (7.5, -3.0, float("inf"), float("-inf"), float("nan"), np.float64("nan"), 0.25):
        arm = agent.ask()
        if math.isfinite(reward):
            agent.tell(arm, reward)
            asked.append(arm)
        else:
            with pytest.raises(InvalidParameterError, match="reward"):
                agent.tell(arm, reward)
    np.testing.assert_array_equal(agent.pulls, np.bincount(asked, minlength=30))
    loaded = type(agent).load(agent.save(tmp_path / "agent.json"))
    np.testing.assert_array_equal(loaded.pulls, agent.pulls)


class _LyingFloat(float):
    """A float whose comparisons say it lies within any bounds (5.0 here)."""

    def __le__(self, other: object) -> bool:
        return True

    def __ge__(self, other: object) -> bool:
        return True

    def __lt__(self, other: object) -> bool:
        return False

    def __gt__(self, other: object) -> bool:
        return False


def test_agent_checks_a_reward_by_its_value_not_by_its_comparisons(section5):
    # the reward bound is the sensitivity: a float subclass whose comparisons lie must not pass it
    # (the fast path of tell() takes only Python floats; others are compared as float(reward))
    agent = DPBAI(section5.features, 200, 0.5).agent(0)
    arm = agent.ask()
    with pytest.raises(InvalidParameterError, match="reward must lie in"):
        agent.tell(arm, _LyingFloat(5.0))
    agent.tell(arm, _LyingFloat(0.5))  # a subclass within the bounds is a reward like any other
    assert agent._rewards[0] == 0.5 and int(agent.pulls.sum()) == 1
    # NumPy's float64 itself takes the fast path (its comparisons are IEEE's); a subclass of it does not
    with pytest.raises(InvalidParameterError, match="reward must lie in"):
        agent.tell(agent.ask(), _LyingFloat64(5.0))
    with pytest.raises(InvalidParameterError, match="reward must lie in"):
        agent.tell(agent.ask(), np.float64(5.0))
    agent.tell(agent.ask(), np.float64(0.25))
    assert agent._rewards[1] == 0.25 and int(agent.pulls.sum()) == 2


class _LyingFloat64(np.float64):
    """NumPy's float64 whose comparisons say it lies within any bounds."""

    def __le__(self, other: object) -> bool:
        return True

    def __ge__(self, other: object) -> bool:
        return True


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"epsilon": -1.0}, "epsilon"), ({"epsilon": 0.0}, "epsilon"), ({"budget": 0}, "budget"),
    ({"budget_mode": "loose"}, "budget_mode"), ({"maxdet": "greedy"}, "maxdet"), ({"tie_break": "x"}, "tie_break"),
])
def test_invalid_parameters_raise_with_names(section5, kwargs, match):
    params = {"features": section5.features, "budget": 1000, "epsilon": 0.1, **kwargs}
    with pytest.raises(InvalidParameterError, match=match):
        DPBAI(**params)


def test_agent_protocol_errors(section5):
    agent = DPBAI(section5.features, 10, 1.0).agent(0)
    arm = agent.ask()
    with pytest.raises(InvalidActionError, match="arm"):
        agent.tell(arm + 1, 0.5)
    with pytest.raises(InvalidParameterError, match="reward"):
        agent.tell(arm, 1.5)
    with pytest.raises(NotFittedError):
        _ = agent.recommendation
    while not agent.done:
        agent.tell(agent.ask(), 0.5)
    assert 0 <= agent.recommendation < 30
    with pytest.raises(NotFittedError):
        agent.ask()


def test_insufficient_budget(section5):
    with pytest.raises(InsufficientBudgetError):
        DPBAI(section5.features, 2, 1.0)
    with pytest.raises(InsufficientBudgetError):
        ODLinBAI(section5.features, 3)


def test_registered_entry_points_return_per_trial_metrics(section5, seed):
    for name, params in [("dp-bai", {"epsilon": 1.0}), ("dp-bai-baseline", {"epsilon": 1.0}),
                         ("dp-bai-gauss", {"epsilon": 0.5, "delta": 1e-4}), ("od-linbai", {}),
                         ("dp-od", {"epsilon": 1.0})]:
        out = get_algorithm(name).simulate(section5, n_trials=7, rng=np.random.SeedSequence(seed), budget=500,
                                           **params)
        assert set(out) == {"success", "pulls_used"} and out["success"].shape == (7,)
        assert set(np.unique(out["success"])) <= {0.0, 1.0} and out["pulls_used"].max() <= 500


def test_agent_with_secure_noise_backend(section5):
    pytest.importorskip("opendp")
    from dpbandits.privacy.noise import get_noise_backend

    agent = DPBAI(section5.features, 100, 1.0).agent(0, noise_backend=get_noise_backend("opendp"))
    streams = section5.streams(0, 1)
    while not agent.done:
        arm = agent.ask()
        agent.tell(arm, float(streams.pull(np.array([arm]))[0]))
    assert 0 <= agent.recommendation < 30 and agent.pulls.sum() <= 100


def test_literal_schedule_and_effective_dimension_options(rng):
    features = rng.uniform(0.0, 1.0, size=(100, 3))
    env = LinearBandit(features, np.array([0.3, 0.3, 0.3]), reward="bernoulli")
    literal = DPBAI(features, 600, 1.0, schedule="literal")
    assert literal.schedule.sizes == (100, 4, 2, 1)
    assert literal.simulate(env, 20, 0).pulls_used.max() <= 600
    flat = rng.uniform(0.0, 1.0, size=(12, 2)) @ np.array([[1.0, 0.0, 0.5, 0.2, 0.1], [0.0, 1.0, 0.3, 0.1, 0.4]])
    assert DPBAI(flat, 500, 1.0, use_effective_dimension=True).schedule.dim == 2
    assert DPBAI(flat, 500, 1.0).schedule.dim == 5


def test_plain_multi_armed_bandit_uses_identity_features(seed):
    from dpbandits.envs.mab import BernoulliBandit

    env = BernoulliBandit([0.9, 0.8, 0.7, 0.6, 0.5, 0.4])
    # d = K: every phase takes the all-arms branch, so DP-BAI and Baseline coincide exactly
    a = get_algorithm("dp-bai").simulate(env, n_trials=50, rng=np.random.SeedSequence(seed), budget=600, epsilon=1.0)
    b = get_algorithm("dp-bai-baseline").simulate(env, n_trials=50, rng=np.random.SeedSequence(seed), budget=600,
                                                  epsilon=1.0)
    np.testing.assert_array_equal(a["success"], b["success"])
    assert a["pulls_used"].max() <= 600


def test_sequential_halving_loads_a_state_saved_when_counts_were_added_per_pull():
    """Files written before the totals' counts moved to the round's end continue exactly."""
    import copy

    from dpbandits.algorithms.bai.sequential_halving import SequentialHalving

    original = SequentialHalving(6, 120, rng=3, reuse_samples=True)
    rewards = np.random.default_rng(0)
    for _ in range(27):  # mid-way through the first round (20 pulls per arm)
        original.tell(original.ask(), float(rewards.random()))
    state = copy.deepcopy(original._get_state())
    old = {key: value for key, value in state.items() if key != "_counts_added_at_round_end"}
    old["_total_counts"] = old["_total_counts"].copy()
    np.add.at(old["_total_counts"], np.asarray(original._queue[: original._position]), 1)  # the old layout
    loaded = SequentialHalving._rebuild(original.get_params(), old, {})
    while not original.done:
        reward = float(rewards.random())
        arm = original.ask()
        assert loaded.ask() == arm
        original.tell(arm, reward)
        loaded.tell(arm, reward)
    assert loaded.recommendation == original.recommendation
    np.testing.assert_array_equal(loaded._total_counts, original._total_counts)


def test_sequential_halving_old_spellings_warn_and_agree(seed: int) -> None:
    # issue 26: done / recommendation, as every agent; finished / recommend() kept one release
    from dpbandits.algorithms.bai.sequential_halving import SequentialHalving

    agent = SequentialHalving(n_arms=4, budget=80, rng=seed)
    with pytest.warns(DeprecationWarning, match=r"finished is deprecated.*use done"):
        assert agent.finished is False
    while not agent.done:
        arm = agent.ask()
        agent.tell(arm, 1.0 if arm == 2 else 0.0)
    with pytest.warns(DeprecationWarning, match=r"recommend\(\) is deprecated.*use recommendation"):
        assert agent.recommend() == agent.recommendation == 2


def test_simulate_reuses_a_cell_s_build_and_plans_with_the_same_results(section5):
    from dpbandits.algorithms.bai import dp_bai as module

    module._BUILT.clear()
    simulate = get_algorithm("dp-bai").simulate
    first = simulate(section5, n_trials=50, rng=7, budget=1000, epsilon=0.1)
    assert len(module._BUILT) == 1
    (built,) = module._BUILT.values()
    assert built._plan_cache is not None and built._plan_cache.states  # its plans are kept with it
    again = simulate(section5, n_trials=50, rng=7, budget=1000, epsilon=0.1)
    assert list(module._BUILT.values()) == [built]  # the same build, not a second one
    module._BUILT.clear()
    fresh = simulate(section5, n_trials=50, rng=7, budget=1000, epsilon=0.1)
    for name in first:
        np.testing.assert_array_equal(first[name], again[name])
        np.testing.assert_array_equal(first[name], fresh[name])
    simulate(section5, n_trials=5, rng=7, budget=1000, epsilon=0.2)  # other parameters: another build
    assert len(module._BUILT) == 2


def test_a_build_that_warns_warns_on_every_simulate_call(section5):
    from dpbandits.algorithms.bai import dp_bai as module

    module._BUILT.clear()
    simulate = get_algorithm("dp-bai-gauss").simulate
    for _ in range(2):
        with pytest.warns(PrivacyWarning, match="classical Gaussian"):
            simulate(section5, n_trials=5, rng=1, budget=1000, epsilon=2.0, delta=1e-3)
    assert module._BUILT == {}


def test_a_pickled_agent_in_a_later_phase_continues_as_the_original(rng):
    # the plan cache an agent shares with its algorithm pickles with its states (the agent refers to their ids)
    import pickle

    env = _multi_phase_env(rng)
    agent = DPBAI(env.features, 400, 0.5).agent(3, insecure_seeded_noise=True)
    while len(agent.phase_log) < 1:
        agent.tell(agent.ask(), 0.5)
    agent.tell(agent.ask(), 0.25)
    copy = pickle.loads(pickle.dumps(agent))
    for one in (agent, copy):
        while not one.done:
            one.tell(one.ask(), 0.5)
    assert copy.recommendation == agent.recommendation and len(copy.phase_log) == len(agent.phase_log) >= 2
