"""The built-in private algorithms audited by the same search as a user's algorithm.

The registry-wide contract (:mod:`dpbandits.audit.contract`) audits each built-in on pairs written
for it. This module holds the built-ins to what users' algorithms are held to: each is wrapped in
the public protocol (an ask/tell agent over K arms, or an offline policy with ``fit`` and
``sample``) and given to :func:`~dpbandits.audit.user.audit_algorithm`, whose search chooses the
neighbouring pairs and events itself (every stage of a run, asymmetric, threshold and random
inputs, a hill-climb) before certifying them on fresh runs. A negative control — DP-BAI whose noise
is sized for a hundred times the ε it claims — must be refuted by the same search. (Noise for twice
the claim shows a plug-in loss of about 1.2 against a claim of 1 on the pair the search finds, which
the contract's small run budget cannot certify: the contract keeps its runs few, not its search.)
"""

from __future__ import annotations

import copy
import itertools
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from dpbandits._core.rng import as_generator
from dpbandits.algorithms.bai.dp_bai import DPBAI, Baseline, DPBAIGauss
from dpbandits.algorithms.bai.dp_od import DPOD
from dpbandits.algorithms.dueling.dp_ebs_elimination import DPEBSElimination
from dpbandits.algorithms.dueling.goptimal_dpdb import GOptimalDPDB
from dpbandits.algorithms.dueling.ldp_ebs_elimination import LDPEBSElimination, randomised_response
from dpbandits.algorithms.kernel.usca import USCA
from dpbandits.algorithms.offline.accountants_mab import UNIT_MAB, mab_domain_sensitivity
from dpbandits.algorithms.offline.baselines import (
    ExponentialMechanismMAB,
    LaplaceStatisticsGreedyMAB,
    ReportNoisyMaxMAB,
)
from dpbandits.algorithms.offline.kl_mab import KLMABPolicy
from dpbandits.envs.kernel import KernelBanditEnvironment
from dpbandits.privacy.guarantees import Guarantee, Neighbouring, PureDP

__all__ = [
    "NOT_SEARCHED",
    "SEARCH_SUBJECTS",
    "BaselineAgent",
    "DPBAIAgent",
    "DPBAIGaussAgent",
    "DPODAgent",
    "GOptimalAgent",
    "KLMABDomainPolicy",
    "KLMABRepeatedPolicy",
    "LDPEBSAgent",
    "NoiseDroppedDPBAIAgent",
    "SearchSubject",
    "USCAAgent",
]


class DPBAIAgent:
    """DP-BAI's ask/tell agent over ``n_arms`` axis-aligned arms, in the protocol a user's agent has.

    ``noise_factor`` > 1 is the negative control: noise sized for ``noise_factor``·ε, ε claimed.
    """

    family: Any = DPBAI
    noise_factor = 1.0

    _built: ClassVar[dict[tuple[type, int, int, float], Any]] = {}

    def __init__(self, n_arms: int, budget: int, epsilon: float, *, rng: Any = None,
                 insecure_seeded_noise: bool = False) -> None:
        algorithm = self._cached(n_arms, budget, epsilon * self.noise_factor)
        self.privacy: Guarantee = self._cached(n_arms, budget, epsilon).privacy
        self._agent = algorithm.agent(rng, insecure_seeded_noise=insecure_seeded_noise)

    def _cached(self, n_arms: int, budget: int, epsilon: float) -> Any:
        """The algorithm (its data-independent plan), built once per configuration: each run is a fresh agent of it."""
        key = (type(self), n_arms, budget, epsilon)
        if key not in self._built:
            self._built[key] = self._algorithm(n_arms, budget, epsilon)
        return self._built[key]

    def _algorithm(self, n_arms: int, budget: int, epsilon: float) -> Any:
        return self.family(np.eye(n_arms), budget, epsilon)

    @property
    def done(self) -> bool:
        """Whether the budget is spent or one arm is left."""
        return bool(self._agent.done)

    def ask(self) -> int:
        """The next arm."""
        return int(self._agent.ask())

    def tell(self, arm: int, reward: float) -> None:
        """The reward of the arm asked for."""
        self._agent.tell(arm, reward)

    @property
    def recommendation(self) -> Any:
        """The arm recommended."""
        return self._agent.recommendation


class DPBAIGaussAgent(DPBAIAgent):
    """DP-BAI-Gauss ((ε, δ)-DP) as an ask/tell agent (δ fixed at 1e-3)."""

    def _algorithm(self, n_arms: int, budget: int, epsilon: float) -> Any:
        return DPBAIGauss(np.eye(n_arms), budget, epsilon, 1e-3)


class BaselineAgent(DPBAIAgent):
    """DP-BAI's Baseline (every active arm pulled in every phase) as an ask/tell agent."""

    family = Baseline


class DPODAgent(DPBAIAgent):
    """DP-OD (optimal-design phases, Laplace on each phase's estimate) as an ask/tell agent."""

    family = DPOD


class _DuelingWrapper:
    """What the dueling subjects below share: their learner (``_agent``) asks and recommends."""

    _agent: Any

    @property
    def done(self) -> bool:
        """Whether the horizon is reached."""
        return bool(self._agent.done)

    def ask(self) -> tuple[int, int]:
        """The next duel."""
        first, second = self._agent.ask()
        return int(first), int(second)

    @property
    def recommendation(self) -> int:
        """The arm recommended."""
        return int(self._agent.recommendation)


class GOptimalAgent(_DuelingWrapper):
    """GOptimal-DPDB over three arms in d = 2 as an ask/tell dueling agent for one preference label.

    The arms' features are those of the privacy contract's GOptimal case; ``play_count_scale`` keeps a
    phase to a few dozen rounds so that a short horizon reaches later phases.
    """

    features = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]])

    def __init__(self, n_arms: int, horizon: int, epsilon: float, *, play_count_scale: float = 0.0004,
                 rng: Any = None, insecure_seeded_noise: bool = False) -> None:
        if n_arms != self.features.shape[0]:
            raise ValueError(f"GOptimalAgent has {self.features.shape[0]} arms; got n_arms={n_arms}")
        self._agent = GOptimalDPDB(self.features, horizon, epsilon, play_count_scale=play_count_scale, rng=rng,
                                   insecure_seeded_noise=insecure_seeded_noise)
        self.privacy: Guarantee = self._agent.privacy

    def tell(self, pair: tuple[int, int], winner: int | None = None, *, first_wins: bool | None = None) -> None:
        """The user's answer."""
        self._agent.tell(pair, winner, first_wins=first_wins)


class LDPEBSAgent(_DuelingWrapper):
    """The local-DP EBS baseline as deployed: each user randomises its own answer, the learner sees the report.

    :class:`~dpbandits.algorithms.dueling.ldp_ebs_elimination.LDPEBSElimination` is the learner; its
    ``tell`` takes the user's *randomised* report. The audit's runner tells the user's true answer,
    so this agent applies the user's randomised response (ε-LDP) before the learner sees it — the
    system whose claim is tested, one preference label changed.
    """

    def __init__(self, n_arms: int, horizon: int, epsilon: float, *, conf_scale: float = 1.0, rng: Any = None,
                 insecure_seeded_noise: bool = False) -> None:
        coins, noise = np.random.SeedSequence(int(as_generator(rng).integers(2**63))).spawn(2)
        self._agent = LDPEBSElimination(n_arms, horizon, epsilon, conf_scale=conf_scale, rng=coins)
        self._epsilon, self._seeded = epsilon, insecure_seeded_noise
        self._flips = np.random.default_rng(noise) if insecure_seeded_noise else None
        self.privacy: Guarantee = self._agent.privacy

    def tell(self, pair: tuple[int, int], winner: int | None = None, *, first_wins: bool | None = None) -> None:
        """The user's true answer, randomised by the user before the learner sees it."""
        truth = int(first_wins) if first_wins is not None else int(winner == pair[0])
        report = randomised_response(truth, self._epsilon, self._flips, insecure_seeded_noise=self._seeded)
        self._agent.tell(pair, first_wins=bool(report))


class USCAAgent:
    """USCA as an ask/tell agent for one reward: each round's context is a public constant.

    USCA's learning actions are its own coins (data-independent), so the arm asked is the round
    modulo K (the table's row answers the round's reward). The coins are public and fixed (one seed,
    as in the privacy contract's USCA cases: the guarantee holds for every value of them), so one
    USCA is set up per (budget, ε) and copied for each run. The release is one prediction,
    ``recommendation(c)`` at a public context c — one ε-joint-DP draw. Changing one reward with the
    context fixed is a neighbour of USCA's unit (one round's context and reward), so a violation
    found here is one of its claim; the contexts themselves are not searched.
    """

    context = np.array([0.5])
    _templates: ClassVar[dict[tuple[int, float], USCA]] = {}

    @classmethod
    def _template(cls, budget: int, epsilon: float) -> USCA:
        """USCA's state before any round, public coins from a fixed seed (built once: its set-up is costly)."""
        key = (budget, epsilon)
        if key not in cls._templates:
            environment = KernelBanditEnvironment(function_seed=4)
            cls._templates[key] = USCA(horizon=budget, epsilon=epsilon, reward_bound=1.0, kernel=environment.kernel,
                                       context_generator=environment.sample_contexts, backend="kernel",
                                       grid_points_per_dim=32, rng=np.random.SeedSequence(20261122))
        return cls._templates[key]

    def __init__(self, n_arms: int, budget: int, epsilon: float, *, rng: Any = None,
                 insecure_seeded_noise: bool = False) -> None:
        self.n_arms = n_arms
        self._agent = copy.deepcopy(self._template(budget, epsilon))
        self._seeded = insecure_seeded_noise
        self._draw = np.random.default_rng(as_generator(rng).integers(2**63)) if insecure_seeded_noise else None
        self.privacy: Guarantee = self._agent.privacy
        self._round = 0

    @property
    def done(self) -> bool:
        """Whether every learning round is observed."""
        return self._round >= self._agent.horizon

    def ask(self) -> int:
        """The round's row of the table (USCA's learning action is its own coin)."""
        self._agent.ask(self.context)
        return self._round % self.n_arms

    def tell(self, arm: int, reward: float) -> None:
        """The round's reward, at the public context."""
        self._agent.tell(self.context, reward)
        self._round += 1

    @property
    def recommendation(self) -> float:
        """One prediction at the public context: the action USCA recommends there."""
        action = self._agent.recommend(self.context, rng=self._draw, insecure_seeded_noise=self._seeded)
        return float(np.asarray(action).ravel()[0])


class KLMABDomainPolicy:
    """The KL-regularised MAB policy over the declared floor ``min_count``: one sample, its domain guarantee.

    The per-instance ε of :class:`~dpbandits.algorithms.offline.kl_mab.KLMABPolicy` depends on the
    data set; the guarantee an accountant records per sample (``sample_guarantee()``, Δ(m)/η over
    every data set with at least m records per arm) is one number for every input, so it is the
    claim the search can test.
    """

    samples: int | None = None

    def __init__(self, n_arms: int, eta: float, min_count: int, beta0: float = 0.0, *, rng: Any = None,
                 insecure_seeded_noise: bool = False) -> None:
        self._policy = KLMABPolicy(n_arms, eta, beta0=beta0, min_count=min_count)
        self._rng, self._seeded = rng, insecure_seeded_noise
        # sample_guarantee()'s ε, Δ(m)/η, from the public parameters (the policy computes it only once fitted)
        once = mab_domain_sensitivity(min_count, reward_bound=self._policy.reward_bound, beta0=beta0) / eta
        self.privacy: Guarantee = PureDP(
            epsilon=(self.samples or 1) * once, unit=UNIT_MAB, neighbouring=Neighbouring.ADD_REMOVE,
            reason="Delta(m)/eta over the declared floor m" + (f", {self.samples} samples composed"
                                                                 if self.samples else ""))

    def fit(self, actions: Any, rewards: Any) -> KLMABDomainPolicy:
        """Fit the policy on the logged data."""
        self._policy.fit(actions, rewards)
        return self

    def sample(self) -> Any:
        """One sampled arm (or ``samples`` of them, as a tuple)."""
        drawn = self._policy.sample(self._rng, self.samples, insecure_seeded_noise=self._seeded)
        return int(drawn) if self.samples is None else tuple(int(a) for a in drawn)

    def probabilities(self) -> dict[Any, float]:
        """The law of what :meth:`sample` releases (the exact audit's input): independent draws of the policy."""
        single = np.exp(self._policy.log_probabilities_)
        if self.samples is None:
            return {arm: float(p) for arm, p in enumerate(single)}
        return {draws: float(np.prod(single[list(draws)]))
                for draws in itertools.product(range(single.size), repeat=self.samples)}


class KLMABRepeatedPolicy(KLMABDomainPolicy):
    """``kl-mab-repeated``: three samples of the KL policy, claiming three times one sample's guarantee."""

    samples = 3


class NoiseDroppedDPBAIAgent(DPBAIAgent):
    """Negative control: DP-BAI's noise sized for 100ε (almost none), ε claimed."""

    noise_factor = 100.0


@dataclass(frozen=True)
class SearchSubject:
    """A built-in, wrapped for the search, with the audit's options; ``broken`` for a negative control."""

    name: str
    cls: type
    options: dict[str, Any] = field(default_factory=dict)
    broken: bool = False


_AGENT = {"epsilon": 1.0, "n_arms": 3, "params": {"budget": 24}}
_SHORT = {**_AGENT, "params": {"budget": 12}}
_POLICY = {"epsilon": 1.0, "n_arms": 3, "params": {"beta0": 0.0, "min_count": 2}}
_DUEL = {"epsilon": 1.0, "n_arms": 3, "unit": "label", "params": {"horizon": 48, "conf_scale": 0.1}}
_KL = {"n_arms": 3, "params": {"eta": 2.0, "min_count": 2, "beta0": 0.0}}

SEARCH_SUBJECTS: tuple[SearchSubject, ...] = (
    SearchSubject("dp-bai", DPBAIAgent, _AGENT),
    SearchSubject("dp-bai-baseline", BaselineAgent, _SHORT),
    SearchSubject("dp-bai-gauss", DPBAIGaussAgent, {**_AGENT, "epsilon": 0.5, "delta": 1e-3}),
    SearchSubject("dp-od", DPODAgent, _SHORT),
    SearchSubject("dp-ebs-elimination", DPEBSElimination, _DUEL),
    SearchSubject("ldp-ebs-elimination", LDPEBSAgent, {**_DUEL, "runs": 500}),  # at 200 runs: no power
    SearchSubject("goptimal-dpdb", GOptimalAgent, {**_DUEL, "params": {"horizon": 120}}),
    SearchSubject("usca", USCAAgent, {"epsilon": 1.0, "n_arms": 2, "unit": "reward", "params": {"budget": 8}}),
    SearchSubject("em-mab", ExponentialMechanismMAB, _POLICY),
    SearchSubject("rnm-mab", ReportNoisyMaxMAB, _POLICY),
    SearchSubject("laplace-greedy-mab", LaplaceStatisticsGreedyMAB, _POLICY),
    SearchSubject("kl-mab", KLMABDomainPolicy, _KL),
    SearchSubject("kl-mab-repeated", KLMABRepeatedPolicy, _KL),
    SearchSubject("dp-bai (noise for 100 epsilon, epsilon claimed)", NoiseDroppedDPBAIAgent, _AGENT, broken=True),
)
"""The built-ins the search audits (by registry name), and its negative control."""

NOT_SEARCHED: dict[str, str] = {
    "kl-linear": "its records carry a context (a feature vector per action): the search's logged-record inputs are "
                 "K-armed data sets of (action, reward); audited exactly by the privacy contract",
    "kl-linear-classification": "its records carry a context (a feature vector per action): the search's "
                                "logged-record inputs are K-armed data sets of (action, reward); audited exactly by "
                                "the privacy contract",
    "kl-rlhf": "its unit is one preference label of a prompt's response pair: the search has no prompts or response "
               "features; audited exactly by the privacy contract",
    "private-feature-ridge": "its release is a ridge fit of (context, reward) rounds on a feature map: the search's "
                             "reward tables carry no contexts, and no ask/tell agent runs it one round at a time",
    "usca-trivial-sensitivity": "the same class as usca with a larger (trivial) sensitivity, so more noise: the "
                                "search of usca covers its code path",
}
"""Registered private algorithms the search does not drive, each with the reason (the privacy contract audits them)."""
