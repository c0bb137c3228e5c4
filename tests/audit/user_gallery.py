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
* :class:`TreatmentArmReport` — round-robin over K arms and report-noisy-max, but the recommendation
  also reports the raw mean of the "treatment" arm K − 2 (with K = 6: arm 5 of 6); only a pair that
  changes a reward of that arm shows it.

One preference label (label-only), dueling agents that ask pairs ``(i, j)``:

* :class:`PrivateDuelingFinal` — a round-robin tournament on the first half of the users, the two
  arms of most Laplace-noised wins go to a final on the second half, decided on noised wins too
  (a user's label enters one arm pair's counts once: ε-DP by parallel composition).
* :class:`RawFinalDueling` — the same, but the final is decided on raw wins and the margin is
  reported ("two arms, half the users: the noise is not needed"); only a label of the second half
  shows it.

One logged record (add/remove), offline policies with ``fit(actions, rewards)`` and ``sample()``:

* :class:`NoisyMeanPolicy` — Laplace-noised mean reward per arm (sensitivity R/m over the declared
  floor m of records per arm), its argmax sampled.
* :class:`PopularArmPolicy` — the arm the log played most (argmax of raw counts: "the counts are
  not the private part"), noisy means only breaking ties.
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



class TreatmentArmReport(_UniformThenNoisyMax):
    """Broken: the recommendation reports the treatment arm's (arm K − 2's) raw mean beside the noisy max."""

    @property
    def recommendation(self):
        treatment = self.n_arms - 2
        mean = self.sums[treatment] / max(int(self.pulls[treatment]), 1)
        return {"best": super().recommendation, "treatment mean": round(float(mean), 6)}


def _label_claim(epsilon):
    return PureDP(epsilon=epsilon, unit="one preference label", neighbouring="label-only")


class PrivateDuelingFinal:
    """A private dueling tournament over ``n_arms`` arms and ``horizon`` users (ε-DP for one label).

    Users 1..T/2 duel every pair in turn; the two arms of most noisy wins (Laplace(2/ε): one label
    moves two arms' wins by one) meet in a final played by the other users, whose winner is the arm
    of most noisy wins of the final. Disjoint users feed the two releases: ε-DP by parallel composition.
    """

    def __init__(self, n_arms, horizon, epsilon, *, rng=None):
        self.n_arms, self.horizon, self.epsilon = n_arms, horizon, epsilon
        self.privacy = _label_claim(epsilon)
        self.noise = np.random.default_rng(rng)  # seeded only when a simulation asks (rng=...)
        self.pairs = [(i, j) for i in range(n_arms) for j in range(i + 1, n_arms)]
        self.wins = np.zeros(n_arms)
        self.final_wins = {}
        self.round = 0
        self.final = None

    @property
    def done(self):
        return self.round >= self.horizon

    def ask(self):
        if self.final is not None:
            return self.final
        return self.pairs[self.round % len(self.pairs)]

    def tell(self, pair, winner=None, *, first_wins=None):
        winner = pair[0] if first_wins else winner if winner is not None else pair[1]
        if self.final is None:
            self.wins[winner] += 1
        else:
            self.final_wins[winner] += 1
        self.round += 1
        if self.round == self.horizon // 2:
            noisy = self.wins + self.noise.laplace(scale=2.0 / self.epsilon, size=self.n_arms)
            top = np.argsort(-noisy, kind="stable")[:2]
            self.final = (int(min(top)), int(max(top)))
            self.final_wins = dict.fromkeys(self.final, 0)

    def decide_final(self):
        noisy = {arm: wins + self.noise.laplace(scale=2.0 / self.epsilon) for arm, wins in self.final_wins.items()}
        return max(noisy, key=noisy.get)

    @property
    def recommendation(self):
        return self.decide_final()


class RawFinalDueling(PrivateDuelingFinal):
    """Broken: the final is decided on raw wins, and its margin reported."""

    @property
    def recommendation(self):
        (a, wins_a), (b, wins_b) = self.final_wins.items()  # two arms, half the users: no noise needed
        return (a if wins_a >= wins_b else b, abs(wins_a - wins_b))


def _record_claim(epsilon):
    return PureDP(epsilon=epsilon, unit="one logged record", neighbouring="add/remove")


class NoisyMeanPolicy:
    """Offline policy: argmax of Laplace-noised mean rewards, every arm at least ``min_count`` records.

    Adding or removing one record moves one arm's mean by at most R/m (m = ``min_count``), so
    Laplace(R/(m·ε)) on each mean makes the noisy means, and their argmax, ε-DP.
    """

    def __init__(self, n_arms, epsilon, min_count, reward_bound=1.0, *, rng=None):
        self.n_arms, self.epsilon, self.min_count, self.reward_bound = n_arms, epsilon, min_count, reward_bound
        self.privacy = _record_claim(epsilon)
        self.noise = np.random.default_rng(rng)  # seeded only when a simulation asks (rng=...)

    def fit(self, actions, rewards):
        actions, rewards = np.asarray(actions), np.asarray(rewards, dtype=float)
        self.counts = np.bincount(actions, minlength=self.n_arms)
        if self.counts.min() < self.min_count:
            raise ValueError(f"every arm needs at least {self.min_count} records")
        means = np.bincount(actions, weights=rewards, minlength=self.n_arms) / self.counts
        scale = self.reward_bound / (self.min_count * self.epsilon)
        self.noisy_means = means + self.noise.laplace(scale=scale, size=self.n_arms)
        return self

    def sample(self):
        return int(np.argmax(self.noisy_means))


class PopularArmPolicy(NoisyMeanPolicy):
    """Broken: the arm logged most often (raw counts), the noisy means only breaking ties."""

    def sample(self):
        most = np.flatnonzero(self.counts == self.counts.max())  # the counts are not the private part
        return int(most[np.argmax(self.noisy_means[most])])
