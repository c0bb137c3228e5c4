"""A textbook private UCB, written outside dpbandits against its public agent protocol.

Each arm's reward sum is released by a binary-tree counter (Chan, Shi & Song 2011) and the index
adds the counter's error bound to the usual exploration bonus (Mishra & Thakurta 2015). The guide
"Your own algorithm" runs it in a study beside DP-BAI and audits its claim:

    dpbandits run private_ucb_study.toml --out runs/private-ucb
    dpbandits audit private_ucb:PrivateUCB --epsilon 1 --n-arms 3 --param budget=24
"""

import math

import numpy as np

from dpbandits import PureDP
from dpbandits.privacy.counters import BinaryTreeCounter, binary_tree_error_bound


class PrivateUCB:
    """ε-DP UCB for one entry of the reward table, recommending the arm with the best private mean."""

    def __init__(self, n_arms, budget, epsilon, *, reward_bound=1.0, rng=None, insecure_seeded_noise=False):
        self.n_arms, self.budget, self.epsilon = n_arms, budget, epsilon
        streams = np.random.default_rng(rng).spawn(n_arms) if rng is not None else [None] * n_arms
        # one counter per arm: a reward enters one counter once, so each release sequence is ε-DP
        self.counters = [BinaryTreeCounter(budget, epsilon, reward_bound, rng=stream,
                                           insecure_seeded_noise=insecure_seeded_noise) for stream in streams]
        self.pulls = np.zeros(n_arms, dtype=np.int64)
        self.private_sums = np.zeros(n_arms)
        # B: |noisy sum − sum| <= B for each release with probability 1 − 1/T²
        self.noise_bound = binary_tree_error_bound(budget, epsilon, beta=1.0 / budget**2, sensitivity=reward_bound)
        self.privacy = PureDP(epsilon=epsilon, unit="one entry of the reward table", neighbouring="replace-one",
                              reference="Mishra & Thakurta (2015), tree-based private UCB")

    @property
    def done(self):
        return int(self.pulls.sum()) >= self.budget

    def ask(self):
        if self.pulls.min() == 0:
            return int(np.argmin(self.pulls))                 # pull every arm once first
        t = int(self.pulls.sum())
        means = self.private_sums / self.pulls               # μ̃_a = S̃_a / N_a
        bonus = np.sqrt(2 * math.log(t) / self.pulls) + self.noise_bound / self.pulls
        return int(np.argmax(means + bonus))

    def tell(self, arm, reward):
        self.private_sums[arm] = self.counters[arm].update(reward)  # the counter's noisy prefix sum
        self.pulls[arm] += 1

    @property
    def recommendation(self):
        return int(np.argmax(self.private_sums / np.maximum(self.pulls, 1)))
