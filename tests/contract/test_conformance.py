"""Conformance suite over the registry: every algorithm plays its role (scikit-learn's check_estimator).

Every registered algorithm that runs one trial at a time is checked against its protocol
(:mod:`dpbandits.algorithms.protocols`), constructed from its defaults (the required arguments only,
on a small instance):

* an *algorithm* (best-arm identification, dueling) has ``privacy``, ``guarantee()``, ``agent()`` and
  ``simulate(env, n_trials, rng)``; its agent has ``ask``, ``tell``, ``done``, ``recommendation``,
  ``privacy``, ``save``, ``load`` and a ``repr`` that shows progress; a non-private one says so with a
  :class:`~dpbandits.privacy.guarantees.NonPrivate` guarantee;
* the agent saved mid-run and loaded continues exactly (the same seeded noise and feedback give the
  same asks and the same recommendation);
* ``simulate`` and the agent agree in distribution (slow: a two-sample test with a declared
  false-failure rate);
* a fitted offline *policy* has ``fit``, ``sample``, ``privacy`` and ``guarantee``, and reloads to the
  same sampling law.

The registered entries without a one-trial class are listed, with the reason, in ``NO_CLASS``: a
new registration must either link its class (``@register_algorithm_class``) or be listed there.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats

import dpbandits
from dpbandits import Agent, Algorithm, Guarantee, NonPrivate, OfflinePolicy, missing_members
from dpbandits.algorithms.registry import AlgorithmSpec, list_algorithms
from dpbandits.envs.offline import simulate_logged_bandit, simulate_logged_contextual, simulate_preferences
from dpbandits.envs.registry import make_environment

NO_CLASS: dict[str, str] = {
    "uniform": "simulation-only baseline (uniform allocation, then the empirical best arm)",
    "theory-dp-ebs-heuristic": "a theory curve: uses no data",
    "theory-dp-ebs-upper": "a theory curve: uses no data",
    "theory-goptimal-schedule": "a theory curve: uses no data",
    "gp-uniform": "simulation-only kernel baseline",
    "cgp-ucb": "simulation-only kernel baseline",
    "private-feature-ridge": "a one-shot private release (PrivateFeatureRidge.release), not an agent",
    "usca": "USCA has ask/tell learning rounds and a per-context recommend(); not yet the agent protocol",
    "usca-nonprivate": "as usca",
    "usca-trivial-sensitivity": "as usca",
}

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


Build = Callable[[Any, int], Any]
"""(env, seed) -> the algorithm, from its required arguments (and the seed of a one-trial agent)."""

K = len(BAI_MEANS)
EYE = np.eye(K)
BUILD: dict[str, Build] = {
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
}
ENVIRONMENTS = {"bai": _bai_env, "dueling": _dueling_env}

SPECS = list_algorithms()
ONLINE = [spec for spec in SPECS if spec.family in ENVIRONMENTS and spec.algorithm_class is not None]
OFFLINE = [spec for spec in SPECS if spec.family == "offline"]


# ------------------------------------------------------------------------------------------ helpers
def _make(spec: AlgorithmSpec, seed: int, env: Any = None) -> tuple[Any, Any, Any]:
    """(environment, algorithm, agent) of a registered online algorithm."""
    env = ENVIRONMENTS[spec.family]() if env is None else env
    algorithm = BUILD[spec.name](env, seed)
    assert isinstance(algorithm, spec.algorithm_class)  # type: ignore[arg-type]
    agent = algorithm.agent(seed, insecure_seeded_noise=True) if spec.family == "bai" and not isinstance(
        algorithm, dpbandits.SequentialHalving) else algorithm.agent()
    return env, algorithm, agent


class Feedback:
    """The environment's answers to one agent: Bernoulli rewards of the arms' means, or duels won with
    the preference matrix's probabilities, from one seeded Generator (copied to replay them)."""

    def __init__(self, env: Any, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.means = np.asarray(getattr(env, "means", BAI_MEANS), dtype=float)
        self.preferences = getattr(env, "preference_matrix", None)

    def step(self, agent: Any) -> Any:
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


# ------------------------------------------------------------------------------------------ registry
def test_every_registered_algorithm_has_a_class_or_a_stated_reason() -> None:
    without = {spec.name for spec in SPECS if spec.algorithm_class is None}
    assert without == set(NO_CLASS)
    online = {spec.name for spec in SPECS if spec.family in ENVIRONMENTS and spec.algorithm_class is not None}
    assert online == set(BUILD), "add a small example to BUILD for each online algorithm"
    assert {spec.name for spec in OFFLINE} <= {spec.name for spec in SPECS if spec.algorithm_class is not None}


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
    assert 0 <= agent.recommendation < env.n_arms
    assert isinstance(agent.recommendation, int)


@pytest.mark.parametrize("spec", ONLINE, ids=lambda s: s.name)
def test_saved_agent_continues_exactly(spec: AlgorithmSpec, seed: int, tmp_path: Path) -> None:
    env, _, agent = _make(spec, seed)
    feedback = Feedback(env, seed)
    _run(agent, feedback, max_steps=37)
    assert not agent.done
    loaded = type(agent).load(agent.save(tmp_path / "agent.npz"))
    assert type(dpbandits.load(tmp_path / "agent.npz")) is type(agent)
    twin = copy.deepcopy(feedback)
    assert _run(loaded, twin, max_steps=120) == _run(agent, feedback, max_steps=120)
    _run(agent, feedback)
    _run(loaded, twin)
    assert loaded.recommendation == agent.recommendation


def _success_of_simulation(algorithm: Any, env: Any, n: int, seed: int) -> np.ndarray:
    out = algorithm.simulate(env, n, seed)
    if isinstance(out, dict):
        return np.asarray(out["success"] if "success" in out else out["reward_regret"], dtype=float)
    return (out.recommended == env.best_arm).astype(float)


def _agent_outcome(spec: AlgorithmSpec, env: Any, seed: int) -> float:
    _, _, agent = _make(spec, seed, env)
    feedback = Feedback(env, seed + 1)
    if spec.family == "bai":
        _run(agent, feedback)
        return float(agent.recommendation == env.best_arm)
    counts = np.zeros((env.n_arms, env.n_arms))
    while not agent.done:
        first, second = feedback.step(agent)
        counts[first, second] += 1
    return float(env.regret_from_pair_counts(counts[None])["reward_regret"][0])


@pytest.mark.slow
@pytest.mark.statistical
@pytest.mark.parametrize("spec", ONLINE, ids=lambda s: s.name)
def test_simulate_and_agent_agree_in_distribution(spec: AlgorithmSpec, seed: int) -> None:
    # success (best-arm identification) or reward regret (dueling) of 120 simulated trials against
    # 50 independent agent runs; two-sample Kolmogorov-Smirnov at FALSE_FAILURE_RATE (exact or
    # conservative on tied, discrete values)
    env, algorithm, _ = _make(spec, seed)
    simulated = _success_of_simulation(algorithm, env, 120, seed)
    seeds = np.random.SeedSequence(seed).generate_state(50)
    agents = np.array([_agent_outcome(spec, env, int(s)) for s in seeds])
    result = stats.ks_2samp(simulated, agents)
    assert result.pvalue > FALSE_FAILURE_RATE, (simulated.mean(), agents.mean(), result)


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
