"""Relative Upper Confidence Bound (RUCB), a classic non-private dueling-bandit baseline.

Every round, with W the matrix of wins (w_ij = times i beat j) and N = W + Wᵀ:

    U = W/N + √(α·ln t / N)   (x/0 := 1 for both terms),   U_ii = ½,
    C = {c : U_cj >= ½ for all j}   (potential Condorcet winners),

the first arm a_c is drawn from C (uniformly from all arms if C = ∅; the hypothesised best arm B,
kept while it stays in C, gets probability ½), and the second arm is d = argmax_j U_jc (ties broken
uniformly, excluding c when tied). The whole step is written for a batch of independent trials
(batch dimension first); the ask/tell agent runs the same step on a batch of one, so both forms
agree exactly given the same seeds (:mod:`dpbandits.algorithms.dueling._rounds`). Random choices use
the algorithm's counter-based coins (:mod:`dpbandits.algorithms.dueling._streams`): coins 3t, 3t+1,
3t+2 at round t.

References
----------
M. Zoghi, S. Whiteson, R. Munos, M. de Rijke, "Relative Upper Confidence Bound for the K-Armed
Dueling Bandit Problem", ICML 2014, Algorithm 1 (α > ½; regret O(K² + K·log T)).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from dpbandits._core.rng import RNGLike
from dpbandits._core.typing import FloatArray, IntArray
from dpbandits._core.validation import check_in_interval, check_int
from dpbandits.algorithms.dueling._rounds import (
    RoundAgent,
    RoundPolicy,
    add_per_trial,
    register_comparator,
    simulate_comparator,
    uniform_pick,
)
from dpbandits.algorithms.dueling._streams import round_coins, trial_streams
from dpbandits.algorithms.registry import register_algorithm_class
from dpbandits.algorithms.sizes import check_pairwise_state
from dpbandits.envs.base import counter_uniform
from dpbandits.envs.dueling import UtilityDuelingEnvironment

__all__ = ["RUCB", "RUCBPolicy", "rucb_step", "rucb_upper", "simulate_rucb"]


def rucb_upper(wins: FloatArray, t: int, alpha: float) -> FloatArray:
    """U of a batch of win matrices (n_trials, K, K) at round t (the module docstring's formula)."""
    n_trials, k = wins.shape[0], wins.shape[1]
    totals = wins + np.swapaxes(wins, 1, 2)  # N = W + Wᵀ
    safe = np.maximum(totals, 1.0)  # = N wherever N > 0 (counts), so W/N and √(·/N) are unchanged there
    upper = np.where(totals > 0, wins / safe + np.sqrt(alpha * np.log(t) / safe), 2.0)  # U = W/N + √(α ln t / N); 1 + 1 at N = 0
    upper.reshape(n_trials, k * k)[:, :: k + 1] = 0.5  # U_ii = ½
    return upper


def rucb_step(
    wins: FloatArray, hypothesis: IntArray, t: int, keys: np.ndarray, alpha: float
) -> tuple[IntArray, IntArray, IntArray]:
    """Choose the pair of round t in every trial.

    Parameters
    ----------
    wins : ndarray (n_trials, K, K)
        w_ij: wins of i over j.
    hypothesis : ndarray (n_trials,)
        The hypothesised best arm B (−1 for none).
    t : int
        The round (>= 1).
    keys : ndarray of uint64 (n_trials,)
        Keys of the algorithm's coins.
    alpha : float
        α > ½.

    Returns
    -------
    first, second, hypothesis : ndarrays (n_trials,)
    """
    n_trials = wins.shape[0]
    upper = rucb_upper(wins, t, alpha)
    candidates = (upper >= 0.5).all(axis=2)  # C
    sizes = candidates.sum(axis=1)
    empty = sizes == 0
    candidates |= empty[:, None]  # C = ∅: a_c uniform over all arms
    rows = np.arange(n_trials)
    keep = candidates[rows, hypothesis] & (hypothesis >= 0) & ~empty  # B ← B ∩ C (index −1 reads the last arm: masked)
    single = sizes == 1
    coins = round_coins(keys, t, 3)
    others = candidates.copy()
    others[rows, hypothesis] &= ~keep  # C without B where B is kept
    first = uniform_pick(others, coins[:, 1])
    only = np.argmax(candidates, axis=1)
    # p(B) = ½ while B is kept; |C| = 1: B ← C
    first = np.where(single, only, np.where(keep & (coins[:, 0] < 0.5), hypothesis, first))
    hypothesis = np.where(single, only, np.where(keep, hypothesis, -1))
    column = upper[rows, :, first]  # U_jc
    best = column >= column.max(axis=1, keepdims=True)
    best[rows, first] &= best.sum(axis=1) == 1  # on ties d ≠ c
    second = uniform_pick(best, coins[:, 2])
    return first, second, hypothesis


class RUCBPolicy(RoundPolicy):
    """RUCB's state (wins W, hypothesis B) and step for a batch of trials (see :func:`rucb_step`)."""

    def __init__(self, n_arms: int, keys: np.ndarray, alpha: float) -> None:
        super().__init__(n_arms, keys)
        self.alpha = alpha
        self.wins = np.zeros((self.n_trials, n_arms, n_arms))
        self.hypothesis = np.full(self.n_trials, -1, dtype=np.int64)

    def choose(self, t: int) -> tuple[IntArray, IntArray]:
        """The pair of round t in every trial (the step in the module docstring)."""
        if self.n_trials == 1:
            return self._choose_one(t)
        first, second, self.hypothesis = rucb_step(self.wins, self.hypothesis, t, self.keys, self.alpha)
        return first, second

    def _choose_one(self, t: int) -> tuple[IntArray, IntArray]:
        """:func:`rucb_step` for a batch of one trial (an agent's step): U as there, the choices on Python scalars."""
        k = self.n_arms
        upper = rucb_upper(self.wins, t, self.alpha)[0]
        candidates = np.flatnonzero((upper >= 0.5).all(axis=1)).tolist()  # C
        key, hypothesis = int(self.keys[0]), int(self.hypothesis[0])
        if len(candidates) == 1:  # B ← C
            first = hypothesis = candidates[0]
        else:
            keep = hypothesis in candidates  # B ← B ∩ C (C = ∅: none kept)
            pool = candidates or list(range(k))  # C = ∅: a_c uniform over all arms
            others = [arm for arm in pool if not (keep and arm == hypothesis)]  # C without a kept B
            # coins 3t, 3t + 1 (round_coins); the ⌊u·count⌋-th arm as uniform_pick picks it
            picked = others[min(int(counter_uniform(key, 3 * t + 1) * len(others)), len(others) - 1)]
            first = hypothesis if keep and counter_uniform(key, 3 * t) < 0.5 else picked  # p(B) = ½
            hypothesis = hypothesis if keep else -1
        self.hypothesis[0] = hypothesis
        column = upper[:, first].tolist()  # U_jc
        top = max(column)
        best = [arm for arm in range(k) if column[arm] >= top]
        if len(best) > 1 and first in best:  # on ties d ≠ c
            best.remove(first)
        second = best[min(int(counter_uniform(key, 3 * t + 2) * len(best)), len(best) - 1)]  # coin 3t + 2
        return np.array([first]), np.array([second])

    def update(self, first: IntArray, second: IntArray, outcome: IntArray, t: int) -> None:
        """Record the outcomes of round t."""
        add_per_trial(self.wins, outcome, first, second)
        add_per_trial(self.wins, 1 - outcome, second, first)


@register_algorithm_class("rucb")
class RUCB(RoundAgent):
    """Ask/tell RUCB agent (non-private).

    Parameters
    ----------
    n_arms : int
        K >= 2.
    horizon : int
        T (only enforced: the algorithm itself is anytime).
    alpha : float, default 0.51
        α > ½.
    rng : int, SeedSequence, Generator or None
        The trial's seed (its algorithm stream gives the coins).

    Privacy
    -------
    None: a non-private baseline (it stores every raw outcome).

    References
    ----------
    Zoghi et al. (2014), Algorithm 1.

    Examples
    --------
    >>> from dpbandits.algorithms.dueling.rucb import RUCB
    >>> agent = RUCB(3, horizon=10, rng=0)
    >>> pair = agent.ask()
    >>> agent.tell(pair, first_wins=False)
    """

    def __init__(self, n_arms: int, horizon: int, alpha: float = 0.51, *, rng: RNGLike = None) -> None:
        k = check_int(n_arms, "n_arms", minimum=2)
        check_pairwise_state("rucb", k)
        alpha = check_in_interval(alpha, "alpha", 0.5, np.inf, closed="neither")
        self.alpha = alpha
        super().__init__(RUCBPolicy(k, np.array([trial_streams(rng).algorithm_key]), alpha), horizon)


@register_comparator("rucb")
def simulate_rucb(
    env: UtilityDuelingEnvironment,
    *,
    n_trials: int,
    rng: RNGLike,
    horizon: int,
    alpha: float = 0.51,
) -> Mapping[str, FloatArray]:
    """RUCB (Zoghi et al. 2014), all trials advanced together one round at a time.

    Parameters
    ----------
    env, n_trials, rng, horizon
        As for every round-by-round comparator: the environment, the number of trials, the seed (trial
        k uses ``trial_seed_sequences(rng, n_trials)[k]``) and T (at most 10⁸).
    alpha : float, default 0.51

    Returns
    -------
    dict of str to ndarray (n_trials,)
        Regret metrics and ``identified_best`` (the most frequent first arm is the best arm).

    Privacy
    -------
    None: a non-private baseline.

    References
    ----------
    Zoghi et al. (2014), Algorithm 1 (regret O(K² + K·log T)).
    """
    alpha = check_in_interval(alpha, "alpha", 0.5, np.inf, closed="neither")
    metrics, _ = simulate_comparator(env, n_trials, rng, horizon, lambda keys: RUCBPolicy(env.n_arms, keys, alpha),
                                     algorithm="rucb")
    return metrics
