"""The built-in contract's negative controls, written as users' algorithms against the public protocol.

One broken algorithm per kind of control in :mod:`dpbandits.audit.cases` (noise too small, noise
dropped, sensitivity understated, seeded noise, noise scaled from the data, composition ignored,
float addition, a double-counted label, and the ledger's two: a per-instance ε spent as a plain
event, a loader that drops ``accountant=``), each kind beside a correct twin. The user-facing audit
(:func:`dpbandits.audit.user.audit_algorithm`) must refute every broken one and pass every twin.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
from scipy.stats import binom

from dpbandits import DPBAI, PureDP
from dpbandits._core.errors import PrivacyBudgetExceededError
from dpbandits.algorithms.bai.exact_distribution import exact_path_distribution
from dpbandits.algorithms.offline import KLMABPolicy
from dpbandits.algorithms.offline.baselines import ExponentialMechanismMAB, LaplaceStatisticsGreedyMAB
from dpbandits.privacy.accounting import Accountant, PureEvent, spend
from dpbandits.privacy.counters import BinaryTreeCounter
from dpbandits.privacy.noise import privacy_noise

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
from private_ucb import PrivateUCB


# ------------------------------------------------------------------ ask/tell agents, one reward
class SeededUCB(PrivateUCB):
    """Seeded noise: every agent seeds its counters with the same known seed."""

    def __init__(self, n_arms, budget, epsilon, **options):
        super().__init__(n_arms, budget, epsilon, **options)
        self.counters = [BinaryTreeCounter(budget, epsilon, 1.0, rng=np.random.default_rng(2024),
                                           insecure_seeded_noise=True) for _ in range(n_arms)]


class DataScaledUCB(PrivateUCB):
    """Noise scaled from the data: an arm's noise shrinks as its reward sum grows."""

    def __init__(self, n_arms, budget, epsilon, **options):
        super().__init__(n_arms, budget, epsilon, **options)
        self.exact = np.zeros(n_arms)
        self.noise = np.random.default_rng()

    def tell(self, arm, reward):
        self.exact[arm] += reward
        scale = 1.0 / (self.epsilon * (1.0 + 100.0 * self.exact[arm]))
        self.private_sums[arm] = self.exact[arm] + self.noise.laplace(scale=scale)
        self.pulls[arm] += 1


class DPBAIAgent:
    """DP-BAI's ask/tell agent on K axis-aligned arms, noise sized for ``noise_epsilon`` (ε if not given)."""

    def __init__(self, n_arms, budget, epsilon, noise_epsilon=None):
        self.algorithm = DPBAI(np.eye(n_arms), budget, noise_epsilon or epsilon)
        self.privacy = DPBAI(np.eye(n_arms), budget, epsilon).privacy  # what is claimed
        self.agent = self.algorithm.agent()
        self.ask, self.tell = self.agent.ask, self.agent.tell

    @property
    def done(self):
        return self.agent.done

    @property
    def recommendation(self):
        return self.agent.recommendation


def dpbai_law(n_arms, budget, epsilon):
    """The exact law of DP-BAI's path (survivor sets) on a reward table: the user's ``distribution``."""
    planner = DPBAI(np.eye(n_arms), budget, epsilon).planner
    return lambda feedback: exact_path_distribution(planner, feedback.data)


# ------------------------------------------------------------------ offline policies, one record
class SensitivityUnderstatedEM(ExponentialMechanismMAB):
    """Sensitivity understated: the exponential mechanism with a third of Δ(m)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.sensitivity /= 3.0


class NoiseDroppedLaplace(LaplaceStatisticsGreedyMAB):
    """Noise dropped: arm 0's utility is released with a thousandth of its noise (secure addition)."""

    def fit(self, data):
        self._fit_utilities(data)
        self.release_ = float(privacy_noise().add_laplace(self.utilities_[:1], self.noise_scale / 1000.0)[0])
        return self

    def sample(self):
        return self.release_


class ThreeDrawsEM(ExponentialMechanismMAB):
    """Composition ignored: releases three draws and claims the one-draw ε."""

    def probabilities(self):
        single = super().probabilities()
        return np.einsum("i,j,k->ijk", single, single, single).ravel()  # the law of (a₁, a₂, a₃)

    def sample(self):
        first, second, third = (int(a) for a in super().sample(size=3))
        return (first * self.n_arms + second) * self.n_arms + third


class PerInstanceSpend:
    """Per-instance spend: a ledger of ε spends KL-MAB's per-instance Theorem 1 ε per sample (a plain event).

    The number of samples released before the ledger refuses depends on the data: 2 on a data set
    whose per-instance ε is 1.62, 1 on its neighbour's 2.03 (a 6-record arm's record removed), at ε = 3.3.
    """

    def __init__(self, n_arms, epsilon):
        self.n_arms, self.epsilon = n_arms, epsilon
        self.privacy = PureDP(epsilon=epsilon, unit="one logged record", neighbouring="add/remove")

    def fit(self, data):
        self.policy = KLMABPolicy(self.n_arms, eta=0.5, beta0=0.1).fit(data)
        return self

    def sample(self):
        ledger, released = Accountant(epsilon_budget=self.epsilon), []
        per_instance = self.policy.privacy.epsilon
        while math.isfinite(per_instance):  # no finite per-instance bound: the ledger refuses the first
            try:
                spend(ledger, PureEvent(per_instance))
            except PrivacyBudgetExceededError:
                break
            released.append(int(self.policy.sample()))
        return tuple(released)


class FreeForks:
    """Free forks: the fitted exponential mechanism saved and loaded twice without ``accountant=``.

    The original and each fork release a sample: three draws under the one-draw ε.
    """

    def __init__(self, n_arms, epsilon, beta0, min_count):
        self.n_arms = n_arms
        self.policy = ExponentialMechanismMAB(n_arms, epsilon=epsilon, beta0=beta0, min_count=min_count)
        self.privacy = self.policy.privacy

    def fit(self, data):
        self.policy.fit(data)
        return self

    def probabilities(self):
        single = self.policy.probabilities()
        return np.einsum("i,j,k->ijk", single, single, single).ravel()  # the law of (a₁, a₂, a₃)

    def sample(self):
        saved = self.policy.to_bytes()
        forks = [ExponentialMechanismMAB.from_bytes(saved) for _ in range(2)]  # the loader drops accountant=
        first, second, third = (int(policy.sample()) for policy in (self.policy, *forks))
        return (first * self.n_arms + second) * self.n_arms + third


class FloatLaplaceRelease(LaplaceStatisticsGreedyMAB):
    """Float addition: releases arm 0's utility plus textbook NumPy Laplace noise (a float)."""

    def fit(self, data):
        self._fit_utilities(data)
        return self

    def sample(self):
        return float(self.utilities_[0] + np.random.default_rng().laplace(scale=self.noise_scale))


class SecureLaplaceRelease(LaplaceStatisticsGreedyMAB):
    """The correct twin of both: arm 0's utility with its full noise, added inside OpenDP."""

    def sample(self):
        return float(self.noisy_utilities_[0])


# ------------------------------------------------------------------ dueling agents, one label
class RandomisedResponseVote:
    """One duel of arms 0 and 1; the label passes randomised response (ε-DP), ``reports`` times.

    With ``reports = 2`` one label is counted twice (the double-counted-label control): 2ε, not ε.
    The recommendation is the arm most reports preferred (arm 0 on a tie).
    """

    def __init__(self, n_arms, horizon, epsilon, reports=1):
        self.n_arms, self.horizon, self.epsilon, self.reports = n_arms, horizon, epsilon, reports
        self.privacy = PureDP(epsilon=epsilon, unit="one preference label", neighbouring="label-only")
        self.first_votes, self.told = 0, 0

    @property
    def done(self):
        return self.told >= self.horizon

    def ask(self):
        return (0, 1)

    def tell(self, pair, winner=None, first_wins=None):
        keep = math.exp(self.epsilon) / (1.0 + math.exp(self.epsilon))  # keep the bit w.p. e^ε/(1 + e^ε)
        truth = winner == pair[0] if first_wins is None else bool(first_wins)
        coins = np.random.default_rng().random(self.reports) < keep
        self.first_votes += int(np.sum(coins == truth))
        self.told += 1

    @property
    def recommendation(self):
        return 0 if 2 * self.first_votes >= self.reports * self.told else 1


def vote_law(epsilon, reports):
    """The exact law of :class:`RandomisedResponseVote`'s recommendation on a response table."""
    keep = math.exp(epsilon) / (1.0 + math.exp(epsilon))

    def law(feedback):
        truths = [bool(row[0, 1]) for row in feedback.data]
        wins = sum(truths) * reports  # reports of "arm 0 won" that are kept come from these
        losses = (len(truths) - sum(truths)) * reports
        total = reports * len(truths)
        votes = np.convolve(binom.pmf(np.arange(wins + 1), wins, keep),
                            binom.pmf(np.arange(losses + 1), losses, 1.0 - keep))
        first = float(votes[np.arange(votes.size) * 2 >= total].sum())
        return {0: first, 1: 1.0 - first}

    return law
