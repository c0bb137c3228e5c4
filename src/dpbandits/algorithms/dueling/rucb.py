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

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from dpbandits._core.rng import RNGLike
from dpbandits._core.schema import Array, rule
from dpbandits._core.typing import FloatArray, IntArray
from dpbandits._core.validation import check_in_interval, check_int
from dpbandits.algorithms.dueling._rounds import (
    WINS,
    WINS_SUM_IS_TIME,
    RoundAgent,
    RoundPolicy,
    _arm,
    add_per_trial,
    register_comparator,
    round_schema,
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


def _first_single_round(n_arms: int, alpha: float) -> tuple[int, int]:
    """(s, m): no round before s can have C = one arm, and one with C = {h} at round >= s needs m losses.

    At round s the step reads the wins of the first s − 1 rounds. An arm i is outside C when
    U_ij < ½ for some j ≠ i, with w wins and l losses against j: w/n + √(α·ln s/n) < ½ (n = w + l).
    Then w < l, so α·ln s < (l − w)²/(4n) <= l/4: i lost more than 4α·ln s duels to one arm. C is one
    arm only when the K − 1 others each did, in distinct entries of the wins, so s − 1 >= (K − 1)·m(s)
    with m(s) the least integer above 4α·ln s (and s >= 2: round 1 reads no wins, C is every arm).
    The least such s is at least the least s >= 2 with s − 1 >= (K − 1)·4α·ln s (found by bisection:
    s − 1 − c·ln s increases for s > c), and m is non-decreasing in s, so (s, m(s)) at that s are bounds
    every round with a single candidate obeys. A relative slack of 1e-9 keeps rounding on the side of
    accepting.
    """
    slack = 1.0 - 1e-9
    c = (n_arms - 1) * 4.0 * alpha * slack

    def enough(s: int) -> bool:  # false on [2, root), true after (s − 1 − c·ln s is 0 at 1, convex)
        return s - 1 >= c * math.log(s)

    low, high = 2, 2
    while not enough(high):
        high *= 2
    while low < high:  # bisection: the least s >= 2 with s − 1 >= c·ln s
        middle = (low + high) // 2
        low, high = (low, middle) if enough(middle) else (middle + 1, high)
    return low, max(1, math.ceil(4.0 * alpha * math.log(low) * slack))


def _hypothesis_consistent(agent: RUCB, state: dict[str, Any]) -> bool:
    """Whether the last step could leave ``hypothesis`` (see the schema's rule)."""
    wins, h, time = state["policy"]["wins"][0], int(state["policy"]["hypothesis"][0]), state["time"]
    if h >= 0:  # set at some round s (up to the asked one) when C = {h}: enough rounds, and others' losses
        first, losses = _first_single_round(wins.shape[0], agent.alpha)
        others = np.where(np.eye(wins.shape[0], dtype=bool), 0.0, wins)  # self-duels decide nothing
        beaten = others.max(axis=0) >= losses  # arm i lost at least `losses` duels to one arm j (wins[j, i])
        if first > time + (state["_asked"] is not None) or not np.delete(beaten, h).all():
            return False
    if state["_asked"] is not None:  # the step of round time + 1 read today's wins
        candidates = (rucb_upper(wins[None], time + 1, agent.alpha)[0] >= 0.5).all(axis=1)
        return (h == -1 and candidates.sum() != 1) or (h >= 0 and bool(candidates[h]))
    if time == 0:
        return h == -1
    # the step of round `time` read the wins less one outcome: any entry w_ij >= 1 (i = j: a self-duel)
    upper = rucb_upper(wins[None], time, agent.alpha)[0]
    ok = upper >= 0.5
    bad = (~ok).sum(axis=1)  # per arm, the arms it is not optimistic against
    member = bad == 0  # C today
    if np.any(np.diagonal(wins) >= 1) and ((h == -1 and member.sum() != 1) or (h >= 0 and member[h])):
        return True  # the last round was a self-duel: the step read today's wins
    totals = wins + wins.T - 1.0  # N_ij after removing one outcome of the pair
    scale = np.sqrt(agent.alpha * np.log(time) / np.maximum(totals, 1.0))
    with np.errstate(invalid="ignore", divide="ignore"):
        upper_ij = np.where(totals > 0, (wins - 1.0) / np.maximum(totals, 1.0) + scale, 2.0)  # U_ij after w_ij − 1
        upper_ji = np.where(totals > 0, wins.T / np.maximum(totals, 1.0) + scale, 2.0)  # U_ji after w_ij − 1
    row_i = bad[:, None] - (~ok) + (upper_ij < 0.5) == 0  # i ∈ C after removing a win of i over j
    row_j = bad[None, :] - (~ok).T + (upper_ji < 0.5) == 0  # j ∈ C after it (indexed [i, j])
    removable = (wins >= 1) & ~np.eye(wins.shape[0], dtype=bool)
    count = member.sum() - member[:, None] - member[None, :] + row_i + row_j
    if h == -1:
        return bool(np.any(removable & (count != 1)))
    arms = np.arange(wins.shape[0])
    in_c = np.where(arms[:, None] == h, row_i, np.where(arms[None, :] == h, row_j, member[h]))
    return bool(np.any(removable & in_c))


class RUCBPolicy(RoundPolicy):
    """RUCB's state (wins W, hypothesis B) and step for a batch of trials (see :func:`rucb_step`)."""

    _state_fields = (*RoundPolicy._state_fields, "wins", "hypothesis")

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

    _schema = round_schema({"wins": WINS, "hypothesis": Array("int64", (1,), low=-1, high=_arm)}, (
        WINS_SUM_IS_TIME,
        rule("hypothesis: as the last step left it: −1 before the first step and while C is not a single arm, the "
             "arm of C when C is one arm, else an arm of C (C of the wins the step read: today's wins with a pair "
             "asked, else today's wins less the last round's outcome) that an earlier round could have had as its "
             "only candidate (enough rounds, and every other arm beaten often enough by one arm)",
             lambda a, s: _hypothesis_consistent(a, s))))
    # Not checked (not derivable from the wins): whether some earlier round's C was {hypothesis} and it
    # stayed in C since; that depends on the order of the outcomes, which the agent does not keep.


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
