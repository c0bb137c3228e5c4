"""Budget cases of every algorithm that takes ``accountant=`` (see :mod:`dpbandits.audit.budgets`).

Each case makes the algorithm's deployed release (secure noise) on the two inputs of adversarial
neighbour pairs, under a fresh ledger with the same budget, until the ledger refuses; the number of
releases, how the run stopped, ``spent()`` and the recorded entries must be identical.

* Offline: the KL policies fit the input themselves (fitting is part of what must not leak). The
  MAB pairs are the issue-23 instance (the least-covered arm's 11th record removed: η = 0.5, β0 =
  0.1, budget 1.7, per-instance 0.8063 vs 0.8963 per sample), a reward at the bound added at the
  floor, and — with no domain declared — a record of an unseen arm added (both inputs must be
  refused alike, before any statistic is read). Linear: a record removed, an extreme record added.
  RLHF: the first and the last label flipped; for the rejection sampler at its default U = B,
  label flips whose fit lies on the sphere ‖θ‖ = B. The baselines: the least-covered record removed.
* BAI: a whole ask/tell run per release (its guarantee is spent when the agent is built), on a
  reward table and its neighbour with one entry moved from the top to the bottom of the range.
* Dueling: a run of the agent per release on the table where the lower index always wins, and its
  neighbour where user 1 answers the opposite (user 1's label is in every node of its counter).
* Kernel: USCA fitted on the contract's adversarial rounds (reward +B → −B at the grid point of
  largest posterior variance); the feature ridge on rewards moved from +B to −B.

Forks: each algorithm's saved object (a fitted policy or baseline, an agent a few rounds into its
run) is loaded twice under one ledger; the second load must be refused, and a charged one must
cost the same on both inputs. Loads: the saved object, built without a ledger, loaded under one:
an agent (BAI, dueling) must pay the rest of its run there once (what one run costs), a policy
nothing (it pays per sample).

Negative controls: the KL MAB policy spending its per-instance Theorem 1 ε as a bare event (the
defect of issue 23), which the ledger cannot tell from a domain event (the audit must tell the
issue's neighbours apart: 2 vs 1 releases), a loader that drops ``accountant=`` (a fork
continues for free), and a DP-EBS loader that records the continuation but not the run (issue 32:
an agent built without a ledger runs for free under the one it is loaded under).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import numpy as np

from dpbandits._core.persistence import CONTINUATION_WINDOW
from dpbandits.algorithms.bai.dp_bai import DPBAI, Baseline, DPBAIGauss
from dpbandits.algorithms.bai.dp_od import DPOD
from dpbandits.algorithms.bai.phased import PhasedAlgorithm
from dpbandits.algorithms.dueling.dp_ebs_elimination import DPEBSElimination
from dpbandits.algorithms.dueling.ldp_ebs_elimination import LDPEBSElimination
from dpbandits.algorithms.kernel.baselines import PrivateFeatureRidge
from dpbandits.algorithms.kernel.features import quadrature_fourier_features
from dpbandits.algorithms.offline import KLLinearPolicy, KLMABPolicy, KLRLHFPolicy
from dpbandits.algorithms.offline.accountants import rejection_sampling_guarantee
from dpbandits.algorithms.offline.baselines import (
    ExponentialMechanismMAB,
    LaplaceStatisticsGreedyMAB,
    ReportNoisyMaxMAB,
)
from dpbandits.audit.budgets import BudgetCase, register_budget_cases
from dpbandits.audit.cases.bai import _THREE_ARMS
from dpbandits.audit.cases.dueling import _drive, ebs_factory, flip_user, goptimal_factory, lower_index_wins
from dpbandits.audit.cases.kernel import ENVIRONMENT, _fit, adversarial_usca_pairs, audited_usca_agents
from dpbandits.audit.cases.offline import _mab, _memo
from dpbandits.audit.contract import NeighbourPair
from dpbandits.envs.offline import LoggedContextualData, PreferenceData, simulate_logged_contextual
from dpbandits.privacy.accounting import Accountant, PureEvent, spend

__all__ = ["ISSUE_BUDGET", "bai_budget_cases", "dueling_budget_cases", "kernel_budget_cases",
           "offline_budget_cases"]

ISSUE_BUDGET = 1.7
ACTIONS = np.array([[1.0, 0.0], [0.0, 1.0], [0.6, 0.6]])

Release = Callable[[Any, Accountant], Any]


# ------------------------------------------------------------------------------------------ offline
ISSUE_PAIR = NeighbourPair("the least-covered arm's 11th record removed (issue 23: 0.8063 vs 0.8963 per sample)",
                           _mab([11, 14, 20], [[0.0, 1.0]] * 3), _mab([10, 14, 20], [[0.0, 1.0]] * 3))
AT_THE_FLOOR = NeighbourPair("a reward R added to the arm at the floor, all its rewards 0",
                             _mab([10, 14, 20], [0.0, [0.0, 1.0], [0.0, 1.0]]),
                             _mab([11, 14, 20], [[0.0] * 10 + [1.0], [0.0, 1.0], [0.0, 1.0]]))
UNSEEN_ARM = NeighbourPair("a record of the unseen arm 2 added (no domain declared)",
                           _mab([12, 15, 0], [[0.0, 1.0]] * 3), _mab([12, 15, 1], [[0.0, 1.0], [0.0, 1.0], 1.0]))


def _kl_mab_fit(min_count: int | None) -> Callable[[Any], KLMABPolicy]:
    return _memo(lambda data: KLMABPolicy(3, eta=0.5, beta0=0.1, min_count=min_count).fit(data))


def _kl_mab(min_count: int | None, size: int | None = None) -> Release:
    fit = _kl_mab_fit(min_count)

    def release(data: Any, accountant: Accountant) -> Any:
        return fit(data).sample(size=size, accountant=accountant)

    return release


def _per_instance_as_bare_event(data: Any, accountant: Accountant) -> Any:
    """Broken (the issue-23 defect): the per-instance Theorem 1 ε recorded as a plain pure event."""
    policy = KLMABPolicy(3, eta=0.5, beta0=0.1).fit(data)
    spend(accountant, PureEvent(policy.privacy.epsilon))
    return policy.sample()


class _DropsTheAccountant:
    """Broken (the issue-23 defect 3): a saved policy whose loader silently drops ``accountant=``."""

    def __init__(self, policy: KLMABPolicy) -> None:
        self.policy = policy

    def to_bytes(self) -> bytes:
        return self.policy.to_bytes()

    @classmethod
    def from_bytes(cls, data: bytes, *, accountant: Any = None, on_fork: str = "refuse") -> KLMABPolicy:
        return KLMABPolicy.from_bytes(data)


class _LoadsWithoutTheRun:
    """Broken (issue 32, defect 4): a loader that records the continuation but never charges the agent's run."""

    def __init__(self, agent: Any) -> None:
        self.agent = agent

    def to_bytes(self) -> bytes:
        return self.agent.to_bytes()

    @classmethod
    def from_bytes(cls, data: bytes, *, accountant: Any = None, on_fork: str = "refuse") -> Any:
        agent = DPEBSElimination.from_bytes(data)  # loaded without the ledger
        if accountant is not None:
            accountant.record_continuation(agent.lineage, agent.generation, on_fork=on_fork,
                                           charge=agent.privacy if on_fork == "charge" else None)
            agent._generation += CONTINUATION_WINDOW
        return agent


def _linear_data() -> tuple[LoggedContextualData, list[NeighbourPair]]:
    data = simulate_logged_contextual(np.array([0.3, 0.2]), 300, rng=np.random.default_rng(23))
    removed = LoggedContextualData(data.features[1:], data.rewards[1:], data.reward_bound)
    added = LoggedContextualData(np.vstack([data.features, [[1.0, 0.0]]]), np.append(data.rewards, 1.0),
                                 data.reward_bound)
    return data, [NeighbourPair("the first record removed", data, removed),
                  NeighbourPair("a record at feature e1 with reward R added", data, added)]


_LINEAR_FIT = _memo(lambda data: KLLinearPolicy(eta=1.0, beta0=0.5, min_eigenvalue=20.0, max_records=400).fit(data))


def _linear(rejection: bool) -> Release:
    fit = _LINEAR_FIT

    def propose(generator: np.random.Generator, m: int) -> Any:
        return ACTIONS[generator.integers(0, len(ACTIONS), size=m)]

    def release(data: Any, accountant: Accountant) -> Any:
        policy = fit(data)
        if rejection:
            return policy.sample_by_rejection(propose, n_proposals=200, theta_norm_bound=1.0, accountant=accountant)
        return policy.sample(ACTIONS, accountant=accountant)

    return release


def _rlhf() -> tuple[Release, list[NeighbourPair], float, Callable[[Any], Any]]:
    rng = np.random.default_rng(5)
    z = rng.normal(size=(200, 2))
    z *= 2.0 / np.maximum(2.0, np.linalg.norm(z, axis=1, keepdims=True))
    labels = (z @ np.array([0.5, -0.3]) > 0).astype(float)
    pairs = []
    for index in (0, len(labels) - 1):
        flipped = labels.copy()
        flipped[index] = 1.0 - flipped[index]
        pairs.append(NeighbourPair(f"label {index} flipped", PreferenceData(z, labels), PreferenceData(z, flipped)))
    fit = _memo(lambda data: KLRLHFPolicy(eta=1.0, norm_bound=0.5).fit(data))

    def release(data: Any, accountant: Accountant) -> Any:
        return fit(data).sample(ACTIONS, accountant=accountant)

    epsilon = fit(pairs[0].data).sample_guarantee(ACTIONS).epsilon
    return release, pairs, epsilon, fit


def _rlhf_rejection() -> tuple[Release, list[NeighbourPair], float, float]:
    """The rejection sampler at its default U = B on label flips that put the fit on the sphere ‖θ‖ = B.

    Issue 32, defect 6: the fit's rescaling onto the sphere left ‖θ̂‖ = B + 1 ulp on one input of
    these pairs (0.45000000000000007) and B − 1 ulp on the other, and the check ‖θ̂‖ <= U refused one
    and served the other.
    """
    rng = np.random.default_rng(0)
    z = rng.normal(size=(30, 2))
    z /= np.maximum(1.0, np.linalg.norm(z, axis=1, keepdims=True))
    labels = (z @ np.array([2.0, -1.0]) > 0).astype(float)
    pairs = []
    for index in (1, 2):
        flipped = labels.copy()
        flipped[index] = 1.0 - flipped[index]
        pairs.append(NeighbourPair(f"label {index} flipped (the fit lies on ||theta|| = B = 0.45)",
                                   PreferenceData(z, labels), PreferenceData(z, flipped)))
    fit = _memo(lambda data: KLRLHFPolicy(eta=1.0, norm_bound=0.45).fit(data))
    proposals = 50

    def propose(generator: np.random.Generator, m: int) -> Any:
        return ACTIONS[generator.integers(0, len(ACTIONS), size=m)]

    def release(data: Any, accountant: Accountant) -> Any:
        return fit(data).sample_by_rejection(propose, n_proposals=proposals, accountant=accountant)

    policy = fit(pairs[0].data)  # the charge is public: the same on every input
    charge = rejection_sampling_guarantee(policy.sample_guarantee(), policy.rejection_failure_bound(proposals))
    probe = Accountant(delta_budget=0.01)
    probe.spend(charge, 3)
    return release, pairs, probe.spent().epsilon * (1.0 + 1e-9), 0.01  # three releases fit, a fourth does not


def _baseline(cls: type, *, fit_releases: bool = False) -> tuple[Release, Callable[[Any], Any]]:
    fit = _memo(lambda data: cls(3, epsilon=1.0, min_count=10).fit(data))

    def release(data: Any, accountant: Accountant) -> Any:
        if fit_releases:  # the Laplace statistics are released by fit itself
            return cls(3, epsilon=1.0, min_count=10).fit(data, accountant=accountant)
        return fit(data).sample(accountant=accountant)

    return release, fit


@register_budget_cases("kl-mab", "kl-mab-repeated", "kl-linear", "kl-linear-classification", "kl-rlhf",
                       "em-mab", "rnm-mab", "laplace-greedy-mab")
def offline_budget_cases() -> list[BudgetCase]:
    """Budget cases of the KL policies (domain declared, and not) and the MAB baselines."""
    _, linear_pairs = _linear_data()
    rlhf_release, rlhf_pairs, rlhf_epsilon, rlhf_fit = _rlhf()
    rejection, rejection_pairs, rejection_budget, rejection_delta = _rlhf_rejection()
    baseline_pairs = [ISSUE_PAIR]
    em, em_fit = _baseline(ExponentialMechanismMAB)
    rnm, rnm_fit = _baseline(ReportNoisyMaxMAB)
    greedy, greedy_fit = _baseline(LaplaceStatisticsGreedyMAB, fit_releases=True)
    cases = [
        BudgetCase("kl-mab", "min_count = 10, eta = 0.5, beta0 = 0.1, one sample per release",
                   [ISSUE_PAIR, AT_THE_FLOOR], _kl_mab(10), ISSUE_BUDGET, saved=_kl_mab_fit(10)),
        BudgetCase("kl-mab", "no domain declared: refused alike, before any statistic is read",
                   [UNSEEN_ARM, ISSUE_PAIR], _kl_mab(None), ISSUE_BUDGET),
        BudgetCase("kl-mab-repeated", "min_count = 10, three samples per release", [ISSUE_PAIR, AT_THE_FLOOR],
                   _kl_mab(10, size=3), ISSUE_BUDGET, saved=_kl_mab_fit(10)),
        BudgetCase("kl-linear", "min_eigenvalue = 20, max_records = 400, at a public context", linear_pairs,
                   _linear(rejection=False), 2.5, saved=_LINEAR_FIT),
        BudgetCase("kl-linear", "rejection sampler, T = 200", linear_pairs, _linear(rejection=True), 3.0,
                   delta_budget=1e-6),
        BudgetCase("kl-linear-classification", "the linear policy at a public context", linear_pairs,
                   _linear(rejection=False), 2.5, saved=_LINEAR_FIT),
        BudgetCase("kl-rlhf", "label DP over the public comparisons", rlhf_pairs, rlhf_release, 3.5 * rlhf_epsilon,
                   saved=rlhf_fit),
        BudgetCase("kl-rlhf", "rejection sampler at U = B, T = 50, the fit on the sphere", rejection_pairs, rejection,
                   rejection_budget, delta_budget=rejection_delta),
        BudgetCase("em-mab", "min_count = 10, eps = 1", baseline_pairs, em, 2.5, saved=em_fit),
        BudgetCase("rnm-mab", "min_count = 10, eps = 1", baseline_pairs, rnm, 2.5, saved=rnm_fit),
        BudgetCase("laplace-greedy-mab", "min_count = 10, eps = 1 (fit releases)", baseline_pairs, greedy, 2.5,
                   saved=greedy_fit),
        # negative controls: the defects of issue 23
        BudgetCase("kl-mab", "per-instance Theorem 1 eps spent as a bare event", [ISSUE_PAIR],
                   _per_instance_as_bare_event, ISSUE_BUDGET, broken=True,
                   notes={"control": "per-instance spend"}),
        BudgetCase("kl-mab", "a loader that drops accountant= (forks are free)", [ISSUE_PAIR], _kl_mab(10),
                   ISSUE_BUDGET, saved=lambda data: _DropsTheAccountant(_kl_mab_fit(10)(data)), broken=True,
                   notes={"control": "free fork"}),
    ]
    return cases


# ---------------------------------------------------------------------------------------------- BAI
def _bai_run(algorithm: PhasedAlgorithm, table: Any, accountant: Accountant | None, steps: int | None) -> Any:
    """An ask/tell agent fed ``table`` to the end (or for ``steps`` steps)."""
    agent = algorithm.agent(accountant=accountant)
    position = np.zeros(algorithm.planner.n_arms, dtype=np.int64)
    while not agent.done and (steps is None or int(position.sum()) < steps):
        arm = agent.ask()
        agent.tell(arm, float(table[arm, position[arm] % table.shape[1]]))
        position[arm] += 1
    return agent


def _bai_release(algorithm: PhasedAlgorithm) -> Release:
    def release(table: Any, accountant: Accountant) -> Any:
        return _bai_run(algorithm, table, accountant, None).recommendation

    return release


def _bai_case(name: str, description: str, algorithm: PhasedAlgorithm, **options: Any) -> BudgetCase:
    return BudgetCase(name, description, _bai_pair(3), _bai_release(algorithm), 2.5,
                      saved=lambda table: _bai_run(algorithm, table, None, 9), run_charged=True, **options)


def _bai_pair(n_arms: int, bound: float = 1.0) -> list[NeighbourPair]:
    table = np.full((n_arms, 40), bound)
    moved = table.copy()
    moved[0, 0] = 0.0
    return [NeighbourPair("the best arm's first reward moved from the top to the bottom of the range", table, moved)]


@register_budget_cases("dp-bai", "dp-bai-baseline", "dp-bai-gauss", "dp-od")
def bai_budget_cases() -> list[BudgetCase]:
    """A whole secure ask/tell run per release."""
    gauss = DPBAIGauss(_THREE_ARMS, 20, 1.0, 1e-4, calibration="analytic")
    return [
        _bai_case("dp-bai", "K = 3, budget 20", DPBAI(_THREE_ARMS, 20, 1.0)),
        _bai_case("dp-bai-baseline", "K = 3, budget 20", Baseline(_THREE_ARMS, 20, 1.0)),
        _bai_case("dp-bai-gauss", "K = 3, (1, 1e-4), analytic", gauss, delta_budget=1e-3),
        _bai_case("dp-od", "K = 3, budget 16", DPOD(np.eye(3), 16, 1.0)),
    ]


# ------------------------------------------------------------------------------------------ dueling
def _dueling_release(factory: Callable[..., Any]) -> Release:
    def release(table: Any, accountant: Accountant) -> Any:
        return _drive(factory(accountant=accountant), table)

    return release


def _dueling_saved(factory: Callable[..., Any]) -> Callable[[Any], Any]:
    """The agent after 6 rounds of the table (what a deployer saves mid-run)."""

    def saved(table: Any) -> Any:
        agent = factory()
        _drive(agent, table[:6])
        return agent

    return saved


@register_budget_cases("dp-ebs-elimination", "goptimal-dpdb", "ldp-ebs-elimination")
def dueling_budget_cases() -> list[BudgetCase]:
    """A secure ask/tell run per release; user 1 answers the opposite in the neighbour."""
    table = lower_index_wins(32, 3)
    pairs = [NeighbourPair("user 1 answers the opposite of every pair", table, flip_user(table, 1))]
    ebs = ebs_factory(horizon=32)
    goptimal = goptimal_factory()

    def ldp(**options: Any) -> LDPEBSElimination:
        return LDPEBSElimination(3, 32, 1.0, **options)
    return [
        BudgetCase("dp-ebs-elimination", "K = 3, T = 32, eps = 1", pairs, _dueling_release(ebs), 2.5,
                   saved=_dueling_saved(ebs), run_charged=True),
        BudgetCase("goptimal-dpdb", "d = 2, three arms", pairs, _dueling_release(goptimal), 2.5,
                   saved=_dueling_saved(goptimal), run_charged=True),
        BudgetCase("ldp-ebs-elimination", "K = 3, T = 32, eps = 1", pairs, _dueling_release(ldp), 2.5,
                   saved=_dueling_saved(ldp), run_charged=True),
        # negative control: issue 32's defect 4 (an agent loaded under a ledger runs without paying)
        BudgetCase("dp-ebs-elimination", "a loader that never charges the run", pairs, _dueling_release(ebs), 2.5,
                   saved=lambda table: _LoadsWithoutTheRun(_dueling_saved(ebs)(table)), run_charged=True,
                   broken=True, notes={"control": "free run"}),
    ]


# ------------------------------------------------------------------------------------------- kernel
def _usca_case(name: str, description: str, agent: Any) -> BudgetCase:
    def fitted(data: Any) -> Any:  # one fitted copy per input: releases from several threads share it
        _fit(agent, data)
        return copy.deepcopy(agent)

    fit = _memo(fitted)

    def release(data: Any, accountant: Accountant) -> Any:
        return fit(data).recommend(data.next_context, accountant=accountant)

    def observed(data: Any) -> Any:
        # what the fork checks save: the input's contexts and rewards observed under the agent's OWN
        # learning actions, a state a run reaches (the releases above condition on the pair's actions,
        # which the agent's recorded coins do not replay, so a file of that state is rightly refused)
        fresh = copy.deepcopy(agent)
        fresh.reset_data()
        fresh.observe(data.contexts, data.rewards)
        return fresh

    return BudgetCase(name, description, adversarial_usca_pairs(agent, n_random=0)[:1], release, 2.5,
                      saved=_memo(observed), load_options={"context_generator": ENVIRONMENT.sample_contexts})


def _ridge_release(model: PrivateFeatureRidge) -> Release:
    def release(data: Any, accountant: Accountant) -> Any:
        points, rewards = data
        return model.release(points, rewards, accountant=accountant)

    return release


@register_budget_cases("usca", "usca-trivial-sensitivity", "private-feature-ridge")
def kernel_budget_cases() -> list[BudgetCase]:
    """USCA's secure recommendation after a fit, and the feature ridge's Gaussian release."""
    from dpbandits.envs.kernel import StationaryKernel

    agents = audited_usca_agents()
    exact, trivial = agents["kernel"], agents["trivial"]
    ridge = PrivateFeatureRidge(quadrature_fourier_features(StationaryKernel("se", 0.2), 2, nodes_per_axis=4),
                                 epsilon=1.0, delta=1e-6, reward_bound=1.5)
    points = np.random.default_rng(3).random((6, 2))
    high = np.full(6, 1.5)
    low = high.copy()
    low[0] = -1.5
    ridge_pairs = [NeighbourPair("one reward moved from +B to -B", (points, high), (points, low))]
    return [
        _usca_case("usca", "exact kernel surrogate, one recommendation per release", exact),
        _usca_case("usca-trivial-sensitivity", "trivial sup bound", trivial),
        BudgetCase("private-feature-ridge", "eps = 1, delta = 1e-6", ridge_pairs, _ridge_release(ridge), 2.5,
                   delta_budget=1e-3),
    ]
