"""Copeland Confidence Bound (CCB), a classic non-private dueling-bandit baseline for Copeland winners.

With W the matrix of wins, N = W + Wᵀ, U = W/N + √(α·ln t/N) and L = W/N − √(α·ln t/N) (x/0 := 1 in
both terms, as in RUCB: an unseen pair has u = 2, l = 0), u_ii = l_ii = ½, the optimistic and
pessimistic Copeland scores are Cpld⁺(i) = #{k ≠ i : u_ik >= ½} and Cpld⁻(i) = #{k ≠ i : l_ik >= ½},
and C_t = argmax Cpld⁺. CCB keeps a set B of potential Copeland winners, for every arm i a set B^i
of arms that might beat it, and L_C, the estimated number of losses of a Copeland winner. Every
round (Zoghi, Karnin, Whiteson & de Rijke 2015, Algorithm 1):

A. *reset disproven hypotheses*: if l_ij > ½ for some i and j ∈ B^i, reset B = all arms, B^k = ∅,
   L_C = K;
B. *remove non-Copeland winners*: every i ∈ B with Cpld⁺(i) < max_j Cpld⁻(j) leaves B, and
   B^i ← {k : u_ik < ½} unless |B^i| = L_C + 1; if B becomes empty, reset as in A;
C. *add Copeland winners*: for every i ∈ C_t with Cpld⁺(i) = Cpld⁻(i): B ← B ∪ {i}, B^i ← ∅,
   L_C ← K − 1 − Cpld⁺(i), and for every j ≠ i, B^j ← ∅ if |B^j| < L_C + 1, or B^j keeps L_C + 1 of its
   arms chosen uniformly at random if |B^j| > L_C + 1. Every i ∈ C_t has the same Cpld⁺(i) (C_t is its
   argmax), so L_C does not depend on the order, and after the first trimming every other B^j has 0 or
   L_C + 1 arms, so later i trim nothing: the step is B ← B ∪ S for the set S of such i, B^i ← ∅ on S,
   and one trimming of the other B^j;
1. with probability ¼ the pair (c, d) is drawn uniformly from {(i, j) : j ∈ B^i, ½ ∈ [l_ij, u_ij]}
   (when that set is not empty) and played;
2. otherwise: if B ∩ C_t ≠ ∅, C_t ← B ∩ C_t with probability ⅔; c ~ Unif(C_t); with probability ½
   the opponent set is B^c, else all arms (all arms as well when B^c = ∅); d = argmax of u_jc over
   it, ties broken uniformly at random among j ≠ c.

Coins of round t (8 per round plus K² for the random subsets of step C): see :class:`CCBPolicy`.
Where the paper leaves a choice open it is settled as stated above (an empty B^c falls back to all
arms).

References
----------
M. Zoghi, Z. Karnin, S. Whiteson and M. de Rijke, "Copeland Dueling Bandits", NeurIPS 2015,
Algorithm 1 (CCB, α > ½); regret O(K² + (C + L_C)·K·ln T/Δ²) with C the number of Copeland
winners (Theorem 3).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from dpbandits._core.rng import RNGLike
from dpbandits._core.typing import BoolArray, FloatArray, IntArray
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
from dpbandits.envs.base import counter_uniforms
from dpbandits.envs.dueling import UtilityDuelingEnvironment

__all__ = ["CCBPolicy", "CopelandConfidenceBound", "simulate_copeland_confidence_bound"]

_COINS = 8  # ¼ test, pair pick, ⅔ test, c pick, ½ test, d tie-break; two spare


def ccb_bounds(wins: FloatArray, t: int, alpha: float) -> tuple[FloatArray, FloatArray]:
    """U and L at round t: W/N ± √(α ln t/N) with x/0 := 1 in both terms; ½ on the diagonal."""
    totals = wins + np.swapaxes(wins, 1, 2)
    seen = totals > 0
    safe = np.maximum(totals, 1.0)  # = N wherever N > 0 (counts): the same quotients there, no 0/0
    ratio = np.where(seen, wins / safe, 1.0)
    radius = np.where(seen, np.sqrt(alpha * np.log(t) / safe), 1.0)
    upper, lower = ratio + radius, ratio - radius
    diagonal = np.arange(wins.shape[1])
    upper[:, diagonal, diagonal] = 0.5
    lower[:, diagonal, diagonal] = 0.5
    return upper, lower


class CCBPolicy(RoundPolicy):
    """CCB's state for a batch of trials.

    Attributes
    ----------
    wins : ndarray (n_trials, K, K)
    best_set : ndarray of bool (n_trials, K)
        B, the potential Copeland winners.
    beaters : ndarray of bool (n_trials, K, K)
        Row i is B^i.
    max_losses : ndarray of int (n_trials,)
        L_C.

    Coins of round t: ``round_coins(keys, t, 8 + K²)``: 0 the ¼ test, 1 the pair of step 1, 2 the ⅔
    test, 3 the choice of c, 4 the ½ test, 5 the tie-break of d, 8 + i·K + j the random key of arm j
    in B^i when step C trims B^i.
    """

    def __init__(self, n_arms: int, keys: np.ndarray, alpha: float) -> None:
        super().__init__(n_arms, keys)
        self.alpha = alpha
        n, k = self.n_trials, n_arms
        self.wins = np.zeros((n, k, k))
        self.best_set = np.ones((n, k), dtype=bool)
        self.beaters = np.zeros((n, k, k), dtype=bool)
        self.max_losses = np.full(n, k, dtype=np.int64)
        self._off_diagonal = ~np.eye(k, dtype=bool)[None]

    def _reset(self, rows: BoolArray) -> None:
        self.best_set[rows] = True
        self.beaters[rows] = False
        self.max_losses[rows] = self.n_arms

    def choose(self, t: int) -> tuple[IntArray, IntArray]:
        """The pair of round t in every trial (the step in the module docstring)."""
        n, k = self.n_trials, self.n_arms
        rows = np.arange(n)
        per_round = _COINS + k * k
        coins = round_coins(self.keys, t, per_round, _COINS)  # the first coins (the trimming keys follow)
        upper, lower = ccb_bounds(self.wins, t, self.alpha)
        off = self._off_diagonal
        optimistic = ((upper >= 0.5) & off).sum(axis=2)  # Cpld⁺
        pessimistic = ((lower >= 0.5) & off).sum(axis=2)  # Cpld⁻
        candidates = optimistic == optimistic.max(axis=1, keepdims=True)  # C_t
        # A. reset disproven hypotheses
        self._reset(np.asarray((self.beaters & (lower > 0.5)).any(axis=(1, 2))))
        # B. remove non-Copeland winners
        drop = self.best_set & (optimistic < pessimistic.max(axis=1, keepdims=True))
        refill = drop & (self.beaters.sum(axis=2) != (self.max_losses + 1)[:, None])
        self.beaters = np.where(refill[:, :, None], upper < 0.5, self.beaters)
        self.best_set &= ~drop
        self._reset(np.asarray(~self.best_set.any(axis=1)))
        # C. add Copeland winners: every settled i ∈ C_t joins B (B ← B ∪ {i}), B^i ← ∅
        settled = candidates & (optimistic == pessimistic)
        found = settled.any(axis=1)
        if found.any():
            f = np.flatnonzero(found)
            winners = settled[f]
            self.best_set[f] |= winners
            self.beaters[f] &= ~winners[:, :, None]
            self.max_losses[f] = k - 1 - optimistic[f].max(axis=1)  # Cpld⁺ is the same on all of C_t
            keep = (self.max_losses[f] + 1)[:, None]
            sizes = self.beaters[f].sum(axis=2)
            others = ~winners
            self.beaters[f] &= ~(others & (sizes < keep))[:, :, None]
            trim = others & (sizes > keep)
            if trim.any():  # keep L_C + 1 arms of B^j chosen uniformly at random (smallest random keys)
                # the round's coins _COINS + i·K + j (read only when some B^i is trimmed)
                trim_keys = counter_uniforms(self.keys[f, None], t * per_round + _COINS + np.arange(k * k))
                keys = np.where(self.beaters[f], trim_keys.reshape(f.size, k, k), np.inf)
                ranks = np.argsort(np.argsort(keys, axis=2), axis=2)
                self.beaters[f] = np.where(trim[:, :, None], self.beaters[f] & (ranks < keep[:, :, None]),
                                           self.beaters[f])
        # 1. with probability ¼, an unresolved pair (c, d) with d ∈ B^c
        open_pairs = (self.beaters & (lower <= 0.5) & (upper >= 0.5)).reshape(n, k * k)
        explore = (coins[:, 0] < 0.25) & open_pairs.any(axis=1)
        flat = uniform_pick(np.where(explore[:, None], open_pairs, True), coins[:, 1])
        # 2. c from C_t (restricted to B ∩ C_t with probability ⅔), d the optimistic challenger of c
        both = candidates & self.best_set
        restrict = both.any(axis=1) & (coins[:, 2] < 2.0 / 3.0)
        pool = np.where(restrict[:, None], both, candidates)
        first = uniform_pick(pool, coins[:, 3])
        own = self.beaters[rows, first]
        use_own = (coins[:, 4] < 0.5) & own.any(axis=1)
        opponents = np.where(use_own[:, None], own, True)
        column = np.where(opponents, upper[rows, :, first], -np.inf)  # u_jc
        best = column >= column.max(axis=1, keepdims=True)
        tied = best.sum(axis=1) > 1
        best[rows[tied], first[tied]] = False  # on ties d ≠ c
        second = uniform_pick(best, coins[:, 5])
        first = np.where(explore, flat // k, first)
        second = np.where(explore, flat % k, second)
        return first, second

    def update(self, first: IntArray, second: IntArray, outcome: IntArray, t: int) -> None:
        """Record the outcomes of round t."""
        add_per_trial(self.wins, outcome, first, second)
        add_per_trial(self.wins, 1 - outcome, second, first)


@register_algorithm_class("copeland-confidence-bound")
class CopelandConfidenceBound(RoundAgent):
    """Ask/tell Copeland Confidence Bound agent (non-private).

    Parameters
    ----------
    n_arms : int
        K >= 2.
    horizon : int
        T (only enforced: CCB is anytime).
    alpha : float, default 0.51
        α > ½.
    rng : int, SeedSequence, Generator or None
        The trial's seed (its algorithm stream gives the coins).

    Privacy
    -------
    None: a non-private baseline (it stores every raw outcome).

    References
    ----------
    Zoghi et al. (2015), Algorithm 1.

    Examples
    --------
    >>> from dpbandits.algorithms.dueling.copeland_confidence_bound import CopelandConfidenceBound
    >>> agent = CopelandConfidenceBound(3, horizon=100, rng=0)
    >>> agent.tell(agent.ask(), first_wins=True)
    """

    def __init__(self, n_arms: int, horizon: int, alpha: float = 0.51, *, rng: RNGLike = None) -> None:
        k = check_int(n_arms, "n_arms", minimum=2)
        check_pairwise_state("copeland-confidence-bound", k)
        alpha = check_in_interval(alpha, "alpha", 0.5, np.inf, closed="neither")
        super().__init__(CCBPolicy(k, np.array([trial_streams(rng).algorithm_key]), alpha), horizon)


@register_comparator("copeland-confidence-bound")
def simulate_copeland_confidence_bound(
    env: UtilityDuelingEnvironment,
    *,
    n_trials: int,
    rng: RNGLike,
    horizon: int,
    alpha: float = 0.51,
) -> Mapping[str, FloatArray]:
    """Copeland Confidence Bound (Zoghi et al. 2015), all trials advanced together one round at a time.

    Parameters
    ----------
    env, n_trials, rng, horizon
        As for every round-by-round comparator: the environment, the number of trials, the seed (trial
        k uses ``trial_seed_sequences(rng, n_trials)[k]``) and T (at most 10⁸).
    alpha : float, default 0.51

    Returns
    -------
    dict of str to ndarray (n_trials,)
        Regret metrics and ``identified_best`` (the most frequent first arm is the best arm, the
        Condorcet and hence Copeland winner of a utility environment).

    Privacy
    -------
    None: a non-private baseline.

    References
    ----------
    Zoghi et al. (2015), Algorithm 1, Theorem 3 (regret O(K² + (C + L_C)·K·ln T/Δ²)).
    """
    alpha = check_in_interval(alpha, "alpha", 0.5, np.inf, closed="neither")
    metrics, _ = simulate_comparator(env, n_trials, rng, horizon, lambda keys: CCBPolicy(env.n_arms, keys, alpha),
                                     algorithm="copeland-confidence-bound")
    return metrics
