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

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpbandits.algorithms.bai.dp_bai import DPBAI, DPBAIGauss
from dpbandits.algorithms.offline.baselines import (
    ExponentialMechanismMAB,
    LaplaceStatisticsGreedyMAB,
    ReportNoisyMaxMAB,
)
from dpbandits.privacy.guarantees import Guarantee

__all__ = ["SEARCH_SUBJECTS", "DPBAIAgent", "DPBAIGaussAgent", "NoiseDroppedDPBAIAgent", "SearchSubject"]


class DPBAIAgent:
    """DP-BAI's ask/tell agent over ``n_arms`` axis-aligned arms, in the protocol a user's agent has.

    ``noise_factor`` > 1 is the negative control: noise sized for ``noise_factor``·ε, ε claimed.
    """

    family: Any = DPBAI
    noise_factor = 1.0

    def __init__(self, n_arms: int, budget: int, epsilon: float, *, rng: Any = None,
                 insecure_seeded_noise: bool = False) -> None:
        algorithm = self._algorithm(n_arms, budget, epsilon * self.noise_factor)
        self.privacy: Guarantee = self._algorithm(n_arms, budget, epsilon).privacy
        self._agent = algorithm.agent(rng, insecure_seeded_noise=insecure_seeded_noise)

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
_POLICY = {"epsilon": 1.0, "n_arms": 3, "params": {"beta0": 0.0, "min_count": 2}}

SEARCH_SUBJECTS: tuple[SearchSubject, ...] = (
    SearchSubject("dp-bai", DPBAIAgent, _AGENT),
    SearchSubject("dp-bai-gauss", DPBAIGaussAgent, {**_AGENT, "epsilon": 0.5, "delta": 1e-3}),
    SearchSubject("em-mab", ExponentialMechanismMAB, _POLICY),
    SearchSubject("rnm-mab", ReportNoisyMaxMAB, _POLICY),
    SearchSubject("laplace-greedy-mab", LaplaceStatisticsGreedyMAB, _POLICY),
    SearchSubject("dp-bai (noise for 100 epsilon, epsilon claimed)", NoiseDroppedDPBAIAgent, _AGENT, broken=True),
)
"""The built-ins the search audits, and its negative control."""
