"""Conformance suite over the registry: every algorithm plays its role (scikit-learn's check_estimator).

Every registered algorithm (every entry but the theory curves, which read no data:
``AlgorithmSpec.is_algorithm``) is checked against its protocol (:mod:`dpbandits.algorithms.protocols`),
constructed from its defaults (the required arguments only, on a small instance):

* an *algorithm* (best-arm identification, dueling, kernel) has ``privacy``, ``guarantee()``,
  ``agent()`` and ``simulate(env, n_trials, rng)``; its agent has ``ask``, ``tell``, ``done``,
  ``recommendation``, ``privacy``, ``save``, ``load`` and a ``repr`` that shows progress; a
  non-private one says so with a :class:`~dpbandits.privacy.guarantees.NonPrivate` guarantee;
  a *contextual* agent (kernel family) is driven by ``ask(context)`` / ``tell(context, reward)`` and
  its ``recommendation`` is the released policy, a function from a context to an action;
* the agent saved mid-run and loaded continues exactly (the same seeded noise and feedback give the
  same asks and the same recommendation);
* ``simulate`` and the agent agree in distribution (slow: a two-sample test with a declared
  false-failure rate);
* a fitted offline *policy* has ``fit``, ``sample``, ``privacy`` and ``guarantee``, and reloads to the
  same sampling law;
* one loop for every algorithm of a family: ``simulate(env, n_trials, rng)`` returns a
  :class:`~dpbandits.algorithms.results.SimulationResult` with the family's metrics (by key and by
  attribute), ``.agent(accountant=...)`` records the run's guarantee before any round (refused by a
  tight budget; refused in one line for a non-private algorithm), an unfinished agent's
  ``recommendation`` is an ``AttributeError`` (``hasattr`` answers), and a mistyped keyword names the
  closest parameter.
"""

from __future__ import annotations

import copy
import inspect
import math
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats

import dpbandits
from dpbandits import (
    Accountant,
    Agent,
    Algorithm,
    Guarantee,
    InsecureNoiseWarning,
    InvalidParameterError,
    NonPrivate,
    NotFittedError,
    OfflinePolicy,
    PerInstanceSpendError,
    PrivacyBudgetExceededError,
    UnknownParameterError,
    missing_members,
)
from dpbandits.algorithms.kernel.evaluation import grid_reward_table
from dpbandits.algorithms.own_agent import OwnAgent
from dpbandits.algorithms.registry import AlgorithmSpec, list_algorithms
from dpbandits.algorithms.results import FAMILY_METRICS, SimulationResult
from dpbandits.envs.offline import simulate_logged_bandit, simulate_logged_contextual, simulate_preferences
from dpbandits.envs.registry import make_environment

BAI_MEANS = [0.8, 0.5, 0.45, 0.3]
BUDGET = 400
HORIZON = 200
EPSILON = 2.0
FALSE_FAILURE_RATE = 1e-3
"""Per algorithm, of the two-sample test of simulate against the agent (conservative on ties)."""


def _bai_env() -> Any:
    return make_environment("bernoulli", means=BAI_MEANS)


def _dueling_env() -> Any:
    return make_environment("dueling-f1")


def _kernel_env() -> Any:
    return make_environment("kernel-rkhs")


Build = Callable[[Any, int], Any]
"""(env, seed) -> the algorithm, from its required arguments (and the seed of a one-trial agent)."""

K = len(BAI_MEANS)
EYE = np.eye(K)
KERNEL_HORIZON = 40
KERNEL = {"reward_bound": 1.5, "clip": True, "grid_points_per_dim": 32}
"""The small kernel instance: T = 40 rounds, a 32-point output grid, rewards clipped like the simulations'."""


def _usca(env: Any, seed: int, **options: Any) -> Any:
    return dpbandits.USCA(horizon=KERNEL_HORIZON, kernel=env.kernel, context_generator=env.sample_contexts,
                          rng=seed, **KERNEL, **options)


BUILD: dict[str, Build] = {
    "uniform": lambda env, seed: dpbandits.UniformAllocation(env.n_arms, BUDGET, rng=seed),
    "dp-bai": lambda env, seed: dpbandits.DPBAI(EYE, BUDGET, EPSILON),
    "dp-bai-baseline": lambda env, seed: dpbandits.Baseline(EYE, BUDGET, EPSILON),
    "dp-bai-gauss": lambda env, seed: dpbandits.DPBAIGauss(EYE, BUDGET, 0.5, 1e-3),
    "dp-od": lambda env, seed: dpbandits.DPOD(EYE, BUDGET, EPSILON),
    "od-linbai": lambda env, seed: dpbandits.ODLinBAI(EYE, BUDGET),
    "sequential-halving": lambda env, seed: dpbandits.SequentialHalving(env.n_arms, BUDGET, rng=seed),
    "rucb": lambda env, seed: dpbandits.RUCB(env.n_arms, HORIZON, rng=seed),
    "rmed1": lambda env, seed: dpbandits.RMED1(env.n_arms, HORIZON, rng=seed),
    "beat-the-mean": lambda env, seed: dpbandits.BeatTheMean(env.n_arms, HORIZON, rng=seed),
    "copeland-confidence-bound": lambda env, seed: dpbandits.CopelandConfidenceBound(env.n_arms, HORIZON, rng=seed),
    "double-thompson-sampling": lambda env, seed: dpbandits.DoubleThompsonSampling(env.n_arms, HORIZON, rng=seed),
    "interleaved-filter": lambda env, seed: dpbandits.InterleavedFilter(env.n_arms, HORIZON, rng=seed),
    "colstim": lambda env, seed: dpbandits.CoLSTIM(env.features, HORIZON, rng=seed),
    "maxinp": lambda env, seed: dpbandits.MaxInP(env.features, HORIZON, rng=seed),
    "dp-ebs-elimination": lambda env, seed: dpbandits.DPEBSElimination(
        env.n_arms, HORIZON, EPSILON, rng=seed, insecure_seeded_noise=True),
    "ebs-elimination": lambda env, seed: dpbandits.DPEBSElimination(env.n_arms, HORIZON, math.inf, rng=seed),
    # local DP: the users randomise their reports, the learner draws no privacy noise
    "ldp-ebs-elimination": lambda env, seed: dpbandits.LDPEBSElimination(env.n_arms, HORIZON, EPSILON, rng=seed),
    "goptimal-dpdb": lambda env, seed: dpbandits.GOptimalDPDB(
        env.features, HORIZON, EPSILON, rng=seed, insecure_seeded_noise=True),
    "goptimal-dpdb-nonprivate": lambda env, seed: dpbandits.GOptimalDPDB(env.features, HORIZON, math.inf, rng=seed),
    "usca": lambda env, seed: _usca(env, seed, epsilon=EPSILON),
    "usca-nonprivate": lambda env, seed: _usca(env, seed, epsilon=math.inf),
    "usca-trivial-sensitivity": lambda env, seed: _usca(env, seed, epsilon=EPSILON, sup_method="trivial"),
    "gp-uniform": lambda env, seed: dpbandits.UniformFeatureRidge(
        horizon=KERNEL_HORIZON, epsilon=math.inf, kernel=env.kernel, rng=seed, **KERNEL),
    "private-feature-ridge": lambda env, seed: dpbandits.UniformFeatureRidge(
        horizon=KERNEL_HORIZON, epsilon=EPSILON, kernel=env.kernel, rng=seed, insecure_seeded_noise=True, **KERNEL),
    "cgp-ucb": lambda env, seed: dpbandits.CGPUCB(
        horizon=KERNEL_HORIZON, kernel=env.kernel, rng=seed, ucb_grid_points_per_dim=16, **KERNEL),
}
ENVIRONMENTS = {"bai": _bai_env, "dueling": _dueling_env, "kernel": _kernel_env}
CONTEXTUAL = {"kernel"}
"""Families whose agents are contextual: ask(context), tell(context, reward), recommendation(context)."""

SPECS = list_algorithms()
ALGORITHMS = [spec for spec in SPECS if spec.is_algorithm]
ONLINE = [spec for spec in ALGORITHMS if spec.family in ENVIRONMENTS]
OFFLINE = [spec for spec in ALGORITHMS if spec.family == "offline"]


# ------------------------------------------------------------------------------------------ helpers
def _make(spec: AlgorithmSpec, seed: int, env: Any = None, **agent_options: Any) -> tuple[Any, Any, Any]:
    """(environment, algorithm, agent) of a registered online algorithm (``agent_options``: accountant=)."""
    env = ENVIRONMENTS[spec.family]() if env is None else env
    algorithm = BUILD[spec.name](env, seed)
    assert isinstance(algorithm, spec.algorithm_class)  # type: ignore[arg-type]
    if isinstance(algorithm, OwnAgent):
        return env, algorithm, algorithm.agent(**agent_options)
    return env, algorithm, algorithm.agent(seed, insecure_seeded_noise=True, **agent_options)


class Feedback:
    """The environment's answers to one agent: Bernoulli rewards of the arms' means, or duels won with
    the preference matrix's probabilities, from one seeded Generator (copied to replay them)."""

    def __init__(self, env: Any, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.means = np.asarray(getattr(env, "means", BAI_MEANS), dtype=float)
        self.preferences = getattr(env, "preference_matrix", None)
        if hasattr(env, "kernel"):
            self.env = env

    def step_contextual(self, agent: Any) -> tuple[float, ...]:
        """One round: a context from the context law, the agent's action, a noisy reward f(x, c) + R·η."""
        context = self.env.sample_contexts(1, self.rng)[0]
        action = agent.ask(context)
        agent.tell(context, float(self.env.mean_reward(action, context) + self.env.noise_std * self.rng.standard_normal()))
        return tuple(action)

    def step(self, agent: Any) -> Any:
        if hasattr(self, "env"):
            return self.step_contextual(agent)
        action = agent.ask()
        if isinstance(action, tuple):  # a duel
            first, second = action
            agent.tell(action, first_wins=bool(self.rng.random() < self.preferences[first, second]))
        else:
            agent.tell(action, float(self.rng.random() < self.means[action]))
        return action


def _run(agent: Any, feedback: Feedback, max_steps: int | None = None) -> list[Any]:
    asks = []
    while not agent.done and (max_steps is None or len(asks) < max_steps):
        asks.append(feedback.step(agent))
    return asks


RECOMMEND_AT = np.array([[0.1], [0.5], [0.9]])
"""Contexts at which a contextual agent's released policy is compared."""


def _recommended(agent: Any, seed: int = 0) -> Any:
    """The recommendation, comparable with ``==``: a contextual agent's policy evaluated at RECOMMEND_AT
    (with seeded noise where each evaluation is a private draw)."""
    recommendation = agent.recommendation
    if not callable(recommendation):
        return recommendation
    seeded = "insecure_seeded_noise" in inspect.signature(recommendation).parameters
    options = {"rng": seed, "insecure_seeded_noise": True} if seeded else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureNoiseWarning)
        return [tuple(recommendation(c, **options)) for c in RECOMMEND_AT]


def _load(agent: Any, path: Path, env: Any, loader: Any) -> Any:
    """Load with the constructor arguments a file cannot hold (USCA's context law, a callable)."""
    unsaved = {"context_generator": env.sample_contexts} if "context_generator" in getattr(agent, "_unsaved_params", ()) else {}
    return loader(path, **unsaved)


# ------------------------------------------------------------------------------------------ registry
def test_every_registered_algorithm_has_a_class() -> None:
    # an entry is an algorithm unless the registry marks it a theory curve (it reads no data)
    assert all(spec.algorithm_class is not None for spec in ALGORITHMS)
    assert all(spec.algorithm_class is None for spec in SPECS if not spec.is_algorithm)
    assert {spec.name for spec in ONLINE} == set(BUILD), "add a small example to BUILD for each online algorithm"
    assert {spec.name for spec in ALGORITHMS} == {spec.name for spec in ONLINE + OFFLINE}


# ------------------------------------------------------------------------------------------ online
@pytest.mark.parametrize("spec", ONLINE, ids=lambda s: s.name)
def test_algorithm_and_agent_follow_the_protocols(spec: AlgorithmSpec, seed: int) -> None:
    env, algorithm, agent = _make(spec, seed)
    assert missing_members(algorithm, Algorithm) == []
    assert missing_members(agent, Agent) == []
    assert isinstance(algorithm.privacy, Guarantee) and algorithm.guarantee() == algorithm.privacy
    assert agent.privacy == algorithm.privacy
    non_private = spec.privacy.startswith("none")
    assert isinstance(algorithm.privacy, NonPrivate) == non_private
    assert algorithm.privacy.is_finite != non_private
    assert not agent.done
    before = repr(agent)
    Feedback(env, seed).step(agent)
    assert repr(agent) != before, "the repr shows progress"
    _run(agent, Feedback(env, seed + 1))
    assert agent.done
    if spec.family in CONTEXTUAL:  # the released policy: a function from a context to an action
        for action in _recommended(agent, seed):
            assert len(action) == env.action_dim and all(0.0 <= x <= 1.0 for x in action)
        return
    assert 0 <= agent.recommendation < env.n_arms
    assert isinstance(agent.recommendation, int)


@pytest.mark.parametrize("spec", ONLINE, ids=lambda s: s.name)
def test_saved_agent_continues_exactly(spec: AlgorithmSpec, seed: int, tmp_path: Path) -> None:
    env, _, agent = _make(spec, seed)
    feedback = Feedback(env, seed)
    _run(agent, feedback, max_steps=37)
    assert not agent.done
    loaded = _load(agent, agent.save(tmp_path / "agent.npz"), env, type(agent).load)
    assert type(_load(agent, tmp_path / "agent.npz", env, dpbandits.load)) is type(agent)
    twin = copy.deepcopy(feedback)
    assert _run(loaded, twin, max_steps=120) == _run(agent, feedback, max_steps=120)
    _run(agent, feedback)
    _run(loaded, twin)
    assert _recommended(loaded, seed) == _recommended(agent, seed)


def _success_of_simulation(algorithm: Any, env: Any, n: int, seed: int) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureNoiseWarning)
        out = algorithm.simulate(env, n, seed)
    for metric in ("success", "reward_regret", "sampled_regret"):
        if metric in out:
            return np.asarray(out[metric], dtype=float)
    raise AssertionError(f"simulate returned none of the family metrics: {sorted(out)}")


def _agent_outcome(spec: AlgorithmSpec, env: Any, seed: int) -> float:
    _, _, agent = _make(spec, seed, env)
    feedback = Feedback(env, seed + 1)
    if spec.family == "bai":
        _run(agent, feedback)
        return float(agent.recommendation == env.best_arm)
    if spec.family in CONTEXTUAL:  # the regret of one released action at a fresh context (sampled_regret)
        _run(agent, feedback)
        context = env.sample_contexts(1, feedback.rng)[0]
        action = np.array(_recommended_at(agent, context, seed + 2))
        best = float(grid_reward_table(env, agent.grid, context[None, :]).max())
        return best - float(env.mean_reward(action, context))
    counts = np.zeros((env.n_arms, env.n_arms))
    while not agent.done:
        first, second = feedback.step(agent)
        counts[first, second] += 1
    return float(env.regret_from_pair_counts(counts[None])["reward_regret"][0])


def _recommended_at(agent: Any, context: np.ndarray, seed: int) -> Any:
    recommendation = agent.recommendation
    if "insecure_seeded_noise" in inspect.signature(recommendation).parameters:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", InsecureNoiseWarning)
            return recommendation(context, rng=seed, insecure_seeded_noise=True)
    return recommendation(context)


TRIALS = {"kernel": (30, 20)}
"""(simulated trials, agent runs) per family; default (120, 50). A kernel trial costs ~0.1-0.5 s."""


@pytest.mark.slow
@pytest.mark.statistical
@pytest.mark.parametrize("spec", ONLINE, ids=lambda s: s.name)
def test_simulate_and_agent_agree_in_distribution(spec: AlgorithmSpec, seed: int) -> None:
    # success (best-arm identification), reward regret (dueling) or the regret of one released action
    # (kernel) of simulated trials against independent agent runs; two-sample Kolmogorov-Smirnov at
    # FALSE_FAILURE_RATE (exact or conservative on tied, discrete values)
    env, algorithm, _ = _make(spec, seed)
    n_simulated, n_agents = TRIALS.get(spec.family, (120, 50))
    simulated = _success_of_simulation(algorithm, env, n_simulated, seed)
    seeds = np.random.SeedSequence(seed).generate_state(n_agents)
    agents = np.array([_agent_outcome(spec, env, int(s)) for s in seeds])
    result = stats.ks_2samp(simulated, agents)
    assert result.pvalue > FALSE_FAILURE_RATE, (simulated.mean(), agents.mean(), result)


# ------------------------------------------------------------------------------------------ one loop
SIMULATED_TRIALS = 2
EXPENSIVE = {"usca", "usca-nonprivate", "usca-trivial-sensitivity", "cgp-ucb"}
"""Kernel algorithms whose construction costs seconds: run with --run-slow (their family stays covered)."""


def _one_loop() -> list[Any]:
    return [pytest.param(spec, marks=pytest.mark.slow) if spec.name in EXPENSIVE else spec for spec in ONLINE]


@pytest.mark.parametrize("spec", _one_loop(), ids=lambda s: s.name)
def test_simulate_returns_the_family_metrics_for_every_algorithm(spec: AlgorithmSpec, seed: int) -> None:
    # one loop compares every algorithm of a family: the same kind of result, the same metric names
    env, algorithm, _ = _make(spec, seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureNoiseWarning)
        out = algorithm.simulate(env, SIMULATED_TRIALS, seed)
    assert isinstance(out, SimulationResult)
    assert set(FAMILY_METRICS[spec.family]) <= set(out), sorted(out)
    for metric in FAMILY_METRICS[spec.family]:
        assert np.shape(out[metric]) == (SIMULATED_TRIALS,)
        np.testing.assert_array_equal(getattr(out, metric), out[metric])  # attribute access too
    with pytest.raises(AttributeError, match="no metric"):
        _ = out.no_such_metric


@pytest.mark.parametrize("spec", _one_loop(), ids=lambda s: s.name)
def test_every_algorithm_takes_agent_accountant(spec: AlgorithmSpec, seed: int) -> None:
    # the budget goes in one place for every algorithm: .agent(accountant=...)
    env = ENVIRONMENTS[spec.family]()
    if spec.privacy.startswith("none"):  # nothing finite to record: refused in one line, not ignored
        with pytest.raises(InvalidParameterError, match="no finite guarantee"):
            _make(spec, seed, env, accountant=Accountant())
        return
    epsilon = BUILD[spec.name](env, seed).privacy.epsilon
    tight = Accountant(epsilon_budget=0.5 * epsilon, delta_budget=1e-2)
    with pytest.raises(PrivacyBudgetExceededError):  # at .agent() (a run's release) or at the first release
        _, _, agent = _make(spec, seed, env, accountant=tight)
        _run(agent, Feedback(env, seed))
        _recommended(agent, seed)
    ledger = Accountant(delta_budget=1e-2)
    _, algorithm, agent = _make(spec, seed, env, accountant=ledger)
    _run(agent, Feedback(env, seed))
    _recommended(agent, seed)
    assert ledger.spent().epsilon >= algorithm.privacy.epsilon > 0.0
    if isinstance(algorithm, OwnAgent):  # its own agent: the accountant must come before the first round
        with pytest.raises(InvalidParameterError, match="before the first round"):
            algorithm.agent(accountant=Accountant())


@pytest.mark.parametrize("spec", _one_loop(), ids=lambda s: s.name)
def test_an_unfinished_recommendation_is_an_attribute_error(spec: AlgorithmSpec, seed: int) -> None:
    _, _, agent = _make(spec, seed)
    try:
        agent.recommendation  # noqa: B018 (some agents have an answer at every round: the dueling ones)
    except NotFittedError as error:
        assert isinstance(error, AttributeError)  # as scikit-learn's: hasattr, getattr(default) answer
        assert not hasattr(agent, "recommendation")
        assert getattr(agent, "recommendation", "unset") == "unset"
    else:
        assert spec.family == "dueling"


def _first_keyword(cls: type) -> str:
    return next(name for name, p in inspect.signature(cls).parameters.items()
                if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and len(name) > 3)


@pytest.mark.parametrize("spec", ALGORITHMS, ids=lambda s: s.name)
def test_a_mistyped_keyword_names_the_closest_parameter(spec: AlgorithmSpec) -> None:
    cls = spec.algorithm_class
    assert cls is not None
    meant = _first_keyword(cls)
    typo = meant + meant[-1]  # epsilon -> epsilonn
    with pytest.raises(UnknownParameterError, match=f"'{typo}'; did you mean '{meant}'") as raised:
        cls(**{typo: 1})
    assert isinstance(raised.value, TypeError)  # what Python raises for an unexpected keyword


# ------------------------------------------------------------------------------------------ offline
THETA = [0.3, 0.4]
ACTIONS = np.array([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]])
MIN_COUNT = 5


def _mab_data(seed: int) -> Any:
    return simulate_logged_bandit(BAI_MEANS, 200, min_pulls=MIN_COUNT, rng=seed)


FIT: dict[str, Callable[[int], Any]] = {
    "kl-mab": lambda seed: dpbandits.KLMABPolicy(K, 1.0).fit(_mab_data(seed)),
    "kl-mab-repeated": lambda seed: dpbandits.KLMABPolicy(K, 1.0).fit(_mab_data(seed)),
    "kl-linear": lambda seed: dpbandits.KLLinearPolicy(1.0).fit(simulate_logged_contextual(THETA, 200, rng=seed)),
    "kl-linear-classification": lambda seed: dpbandits.KLLinearPolicy(1.0).fit(
        simulate_logged_contextual(THETA, 200, rng=seed)),
    "kl-rlhf": lambda seed: dpbandits.KLRLHFPolicy(1.0).fit(simulate_preferences(THETA, 200, rng=seed)),
    "em-mab": lambda seed: dpbandits.ExponentialMechanismMAB(K, 1.0, min_count=MIN_COUNT).fit(_mab_data(seed)),
    "rnm-mab": lambda seed: dpbandits.ReportNoisyMaxMAB(K, 1.0, min_count=MIN_COUNT).fit(_mab_data(seed)),
    "laplace-greedy-mab": lambda seed: dpbandits.LaplaceStatisticsGreedyMAB(K, 1.0, min_count=MIN_COUNT).fit(
        _mab_data(seed), seed, insecure_seeded_noise=True),
    "greedy-mab": lambda seed: dpbandits.PessimisticGreedyMAB(K).fit(_mab_data(seed)),
}


def _law(policy: Any) -> np.ndarray:
    """The sampling law of a fitted policy (at ACTIONS for a contextual one)."""
    if not hasattr(policy, "probabilities"):  # greedy on a released vector: a point mass
        return np.eye(K)[int(policy.sample())]
    try:
        return np.asarray(policy.probabilities())
    except TypeError:
        return np.asarray(policy.probabilities(ACTIONS))


def test_every_offline_entry_has_an_example() -> None:
    assert {spec.name for spec in OFFLINE} == set(FIT)


REFUSED_AT_AGENT = {
    "kl-mab": "declare min_count", "kl-mab-repeated": "declare min_count",  # a per-instance guarantee only
    "kl-linear": "declare min_eigenvalue", "kl-linear-classification": "declare min_eigenvalue",
    "laplace-greedy-mab": "already happened",  # its one release was at fit
    "greedy-mab": "no finite guarantee",  # non-private
}
"""The examples of FIT whose .agent(accountant=) is refused in one line, and why (nothing recorded)."""


def _release(policy: Any, seed: int) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureNoiseWarning)
        try:
            policy.sample(rng=seed, insecure_seeded_noise=True)
        except TypeError:  # a contextual policy samples among candidate actions
            policy.sample(ACTIONS, rng=seed, insecure_seeded_noise=True)


@pytest.mark.parametrize("spec", OFFLINE, ids=lambda s: s.name)
def test_every_offline_policy_takes_agent_accountant(spec: AlgorithmSpec, seed: int) -> None:
    # the budget goes in the same place as for every algorithm: .agent(accountant=...)
    policy = FIT[spec.name](seed)
    ledger = Accountant(delta_budget=1e-2)
    if spec.name in REFUSED_AT_AGENT:
        with pytest.raises((InvalidParameterError, PerInstanceSpendError), match=REFUSED_AT_AGENT[spec.name]):
            policy.agent(accountant=ledger)
        assert ledger.events == ()
        return
    assert policy.agent(accountant=ledger) is policy
    _release(policy, seed)
    _release(policy, seed + 1)
    assert len(ledger.events) == 2 and ledger.spent().epsilon > 0.0  # one record per sample, before it is drawn


def test_a_declared_kl_policy_records_each_sample_in_the_agent_accountant(seed: int) -> None:
    policy = dpbandits.KLMABPolicy(K, 1.0, min_count=MIN_COUNT).fit(_mab_data(seed))
    tight = Accountant(epsilon_budget=1.5 * policy.sample_guarantee().epsilon)
    policy.agent(accountant=tight)
    _release(policy, seed)
    with pytest.raises(PrivacyBudgetExceededError):  # the second sample would exceed the budget: refused, not drawn
        _release(policy, seed)
    assert len(tight.events) == 1


@pytest.mark.parametrize("spec", OFFLINE, ids=lambda s: s.name)
def test_offline_policy_follows_the_protocol_and_reloads(spec: AlgorithmSpec, seed: int, tmp_path: Path) -> None:
    policy = FIT[spec.name](seed)
    assert isinstance(policy, spec.algorithm_class)  # type: ignore[arg-type]
    assert missing_members(policy, OfflinePolicy) == []
    assert isinstance(policy.privacy, Guarantee) and policy.guarantee() == policy.privacy
    assert isinstance(policy.privacy, NonPrivate) == spec.privacy.startswith("none")
    law = _law(policy)
    assert law.shape[-1] in (K, len(ACTIONS)) and np.isclose(law.sum(), 1.0)
    loaded = dpbandits.load(policy.save(tmp_path / "policy.npz"))
    assert type(loaded) is type(policy)
    np.testing.assert_array_equal(_law(loaded), law)
