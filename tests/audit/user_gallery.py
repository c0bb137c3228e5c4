"""A gallery of broken private bandit algorithms, each written as a user would, and their correct twins.

Every broken one is a realistic bug that a search of neighbouring inputs must find: the audit must
REFUTE each at its default settings, and never refute a correct one. They are ask/tell agents over
K arms for one entry of the reward table (replace-one), like ``examples/private_ucb.py``.

* :class:`PrivateHalving` — a correct private successive halving: each phase pulls the surviving arms
  equally on fresh rewards and halves them on Laplace-noised means (every reward enters one phase's
  mean once: ε-DP by parallel composition); the recommendation is the last survivor.
* :class:`ExactFinalPhase` — the same, but the final phase is decided on exact means ("only two arms
  are left, so the noise is not needed").
* :class:`RawMeansRecommendation` — correct choices, but the recommendation carries the last phase's
  raw means as a progress report.
* :class:`LargestRewardScale` — uniform exploration and report-noisy-max (ties broken at random) whose
  sensitivity is the largest reward seen so far ("rewards never exceed what we have seen"): equal in
  law to the correct mechanism on every table whose arms tie.
* :class:`ExactGapStop` — round-robin that stops as soon as the exact gap between the two best
  empirical means reaches 0.5 (from the third round on), then reports the noisy max.
* :class:`HalfClaimRelease` — releases arm 0's mean through the library's own ``LaplaceMechanism``,
  correctly noised for 2ε, and claims ε (a factor of two lost in the accounting).
* :class:`LaplaceMeanRelease` — its correct twin (noise for ε, claims ε): float-safe with the deployed
  noise; seeded when the audit asks.
"""

from __future__ import annotations

import math

import numpy as np

from dpbandits import PureDP
from dpbandits.privacy.mechanisms import LaplaceMechanism


def _reward_claim(epsilon):
    return PureDP(epsilon=epsilon, unit="one entry of the reward table", neighbouring="replace-one")


class PrivateHalving:
    """Private successive halving over ``n_arms`` arms in ``budget`` pulls (ε-DP for one reward)."""

    def __init__(self, n_arms, budget, epsilon, *, rng=None):
        self.n_arms, self.budget, self.epsilon = n_arms, budget, epsilon
        self.privacy = _reward_claim(epsilon)
        self.noise = np.random.default_rng(rng)  # seeded only when a simulation asks (rng=...)
        self.active = list(range(n_arms))
        self.phases = max(1, math.ceil(math.log2(n_arms)))
        self.pulls_total = 0
        self._start_phase()

    def _start_phase(self):
        self.per_arm = max(1, self.budget // (len(self.active) * self.phases))
        self.queue = [arm for arm in self.active for _ in range(self.per_arm)]
        self.sums = dict.fromkeys(self.active, 0.0)

    @property
    def done(self):
        return len(self.active) == 1 or self.pulls_total >= self.budget

    def ask(self):
        return self.queue[0]

    def tell(self, arm, reward):
        self.queue.pop(0)
        self.sums[arm] += reward
        self.pulls_total += 1
        if not self.queue:
            self._end_phase()

    def phase_means(self):
        """Each active arm's mean this phase, with Laplace noise of sensitivity 1/per_arm."""
        scale = 1.0 / (self.epsilon * self.per_arm)
        return {arm: self.sums[arm] / self.per_arm + self.noise.laplace(scale=scale) for arm in self.active}

    def _end_phase(self):
        means = self.phase_means()
        keep = math.ceil(len(self.active) / 2)
        self.last_means = {arm: self.sums[arm] / self.per_arm for arm in self.active}
        self.active = sorted(sorted(self.active, key=lambda arm: -means[arm])[:keep])
        if len(self.active) > 1:
            self._start_phase()

    @property
    def recommendation(self):
        return self.active[0]


class ExactFinalPhase(PrivateHalving):
    """Broken: the final phase (two arms left) compares exact means."""

    def phase_means(self):
        if len(self.active) == 2:
            return {arm: self.sums[arm] / self.per_arm for arm in self.active}  # no noise needed for two arms
        return super().phase_means()


class RawMeansRecommendation(PrivateHalving):
    """Broken: the recommendation reports the last phase's raw means beside the arm."""

    @property
    def recommendation(self):
        return {"arm": self.active[0], "last phase means": tuple(sorted(self.last_means.values()))}


class _UniformThenNoisyMax:
    """Pull the arms round-robin for ``budget`` pulls, then report the noisy max of the sums."""

    def __init__(self, n_arms, budget, epsilon, *, rng=None):
        self.n_arms, self.budget, self.epsilon = n_arms, budget, epsilon
        self.privacy = _reward_claim(epsilon)
        self.noise = np.random.default_rng(rng)  # seeded only when a simulation asks (rng=...)
        self.sums, self.pulls = np.zeros(n_arms), np.zeros(n_arms, dtype=int)
        self.stopped = False

    @property
    def done(self):
        return self.stopped or int(self.pulls.sum()) >= self.budget

    def ask(self):
        return int(np.argmin(self.pulls))

    def tell(self, arm, reward):
        self.sums[arm] += reward
        self.pulls[arm] += 1

    def sensitivity(self):
        return 1.0

    @property
    def recommendation(self):
        # report-noisy-max with Laplace(2Δ/ε): ε-DP for one reward
        noisy = self.sums + self.noise.laplace(scale=2.0 * self.sensitivity() / self.epsilon, size=self.n_arms)
        return int(self.noise.choice(np.flatnonzero(noisy == noisy.max())))  # ties broken at random


class LargestRewardScale(_UniformThenNoisyMax):
    """Broken: the sensitivity is the largest reward seen so far, not the bound of the rewards."""

    def __init__(self, n_arms, budget, epsilon, *, rng=None):
        super().__init__(n_arms, budget, epsilon, rng=rng)
        self.largest = 0.0

    def tell(self, arm, reward):
        super().tell(arm, reward)
        self.largest = max(self.largest, reward)  # rewards never exceed what we have seen

    def sensitivity(self):
        return self.largest


class ExactGapStop(_UniformThenNoisyMax):
    """Broken: stops as soon as the exact gap between the two best empirical means reaches 0.5."""

    def tell(self, arm, reward):
        super().tell(arm, reward)
        if self.pulls.min() >= 3 and self.pulls.min() == self.pulls.max():
            means = np.sort(self.sums / self.pulls)
            self.stopped = bool(means[-1] - means[-2] >= 0.5)  # clearly separated: stop early


class LaplaceMeanRelease:
    """Round-robin; the recommendation is arm 0's mean released by the Laplace mechanism (ε-DP)."""

    noise_factor = 1.0

    def __init__(self, n_arms, budget, epsilon, *, rng=None, insecure_seeded_noise=False):
        self.n_arms, self.budget, self.epsilon = n_arms, budget, epsilon
        self.rng, self.insecure_seeded_noise = rng, insecure_seeded_noise
        self.privacy = _reward_claim(epsilon)
        self.sums, self.pulls = np.zeros(n_arms), np.zeros(n_arms, dtype=int)

    @property
    def done(self):
        return int(self.pulls.sum()) >= self.budget

    def ask(self):
        return int(np.argmin(self.pulls))

    def tell(self, arm, reward):
        self.sums[arm] += reward
        self.pulls[arm] += 1

    @property
    def recommendation(self):
        n = max(int(self.pulls[0]), 1)
        mechanism = LaplaceMechanism(sensitivity=1.0 / n, epsilon=self.noise_factor * self.epsilon)
        released = mechanism.release(self.sums[0] / n, rng=self.rng, insecure_seeded_noise=self.insecure_seeded_noise)
        return float(released)


class HalfClaimRelease(LaplaceMeanRelease):
    """Broken: the noise is sized for 2ε (correct for that), but ε is claimed."""

    noise_factor = 2.0

