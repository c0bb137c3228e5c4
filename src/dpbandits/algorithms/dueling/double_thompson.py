"""Double Thompson Sampling (D-TS), a classic non-private dueling-bandit baseline.

With B the matrix of wins (b_ij = times i beat j), N = B + Bᵀ and, elementwise,

    U = B/N + √(α·ln t/N),   L = B/N − √(α·ln t/N)   (N = 0: U = +∞, L = −∞),   u_ii = l_ii = ½,

every round of D-TS (Wu & Liu 2016, Algorithm 1) is:

1. *first candidate*: the upper Copeland scores ζ̂_i = #{j ≠ i : u_ij > ½}/(K − 1) give the candidate
   set C = argmax ζ̂; samples θ⁽¹⁾_ij ~ Beta(b_ij + 1, b_ji + 1) (i < j; θ⁽¹⁾_ji = 1 − θ⁽¹⁾_ij) give
   a⁽¹⁾ = argmax_{i ∈ C} #{j ≠ i : θ⁽¹⁾_ij > ½} (ties broken uniformly at random);
2. *second candidate*: samples θ⁽²⁾_i ~ Beta(b_{i a⁽¹⁾} + 1, b_{a⁽¹⁾ i} + 1) for i ≠ a⁽¹⁾,
   θ⁽²⁾_{a⁽¹⁾} = ½, give a⁽²⁾ = argmax θ⁽²⁾_i over the arms i with l_{i a⁽¹⁾} <= ½ (a⁽¹⁾ is one);
   ties go to the lowest index (continuous samples make them a null event, except at ½).

The Beta samples are counter-based (:func:`dpbandits.algorithms.dueling._streams.counter_beta`): a
pure function of (trial key, round, pair), so a sample that the round does not need (|C| = 1, or a
single eligible second arm) is simply not drawn, without shifting any other draw, and the ask/tell
:class:`DoubleThompsonSampling` reproduces the batched simulation exactly. Coin t (one per round)
breaks the ties of step 1.

References
----------
H. Wu and X. Liu, "Double Thompson Sampling for Dueling Bandits", NeurIPS 2016, Algorithm 1 (D-TS,
α > ½; the paper's experiments use α = 0.51); regret O(K·log T + K²·log log T) in Condorcet dueling
bandits (Theorem 2 and Corollary 1).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from dpbandits._core.errors import InvalidParameterError
from dpbandits._core.rng import RNGLike
from dpbandits._core.typing import FloatArray, IntArray
from dpbandits._core.validation import check_in_interval, check_int
from dpbandits.algorithms.dueling._common import (
    check_dueling_env,
    check_round_horizon,
)
from dpbandits.algorithms.dueling._rounds import (
    RoundAgent,
    RoundPolicy,
    add_per_trial,
    register_comparator,
    simulate_comparator,
    uniform_pick,
)
from dpbandits.algorithms.dueling._streams import GAMMA_INDEX_LIMIT, counter_beta, round_coins, trial_streams
from dpbandits.algorithms.registry import register_algorithm_class
from dpbandits.algorithms.sizes import check_pairwise_state
from dpbandits.envs.base import counter_uniform
from dpbandits.envs.dueling import UtilityDuelingEnvironment

_READ_AHEAD_LIMIT = 1024  # θ⁽²⁾ variates read ahead with θ⁽¹⁾ (trials with several candidates × K²)
# an agent's step reads θ⁽²⁾ of every a⁽¹⁾ ∈ C ahead (|C|·K variates, ~0.15 µs each) up to this many,
# rather than make a second Beta call (~25 µs of fixed cost)
_SINGLE_READ_AHEAD_LIMIT = 160

__all__ = ["DoubleThompsonPolicy", "DoubleThompsonSampling", "simulate_double_thompson"]


def confidence_bounds(wins: FloatArray, t: int, alpha: float) -> tuple[FloatArray, FloatArray]:
    """U and L of a batch of win matrices (n, K, K) at round t: B/N ± √(α ln t/N), ±∞ where N = 0, ½ on the diagonal."""
    totals = wins + np.swapaxes(wins, 1, 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = wins / totals
        radius = np.sqrt(alpha * np.log(t) / totals)
    upper = np.where(totals > 0, ratio + radius, np.inf)
    lower = np.where(totals > 0, ratio - radius, -np.inf)
    diagonal = np.arange(wins.shape[1])
    upper[:, diagonal, diagonal] = 0.5
    lower[:, diagonal, diagonal] = 0.5
    return upper, lower


class DoubleThompsonPolicy(RoundPolicy):
    """D-TS's state (the win matrix B) and step for a batch of trials.

    The Beta sample of pair slot s at round t has variate index t·2K² + s, with slots
    s = i·K + j (first candidate, i < j) and K² + i·K + a⁽¹⁾ (second candidate).
    """

    def __init__(self, n_arms: int, keys: np.ndarray, alpha: float) -> None:
        super().__init__(n_arms, keys)
        self.alpha = alpha
        self.wins = np.zeros((self.n_trials, n_arms, n_arms))
        self._slots = 2 * n_arms * n_arms
        self._pairs = np.triu_indices(n_arms, k=1)
        self._off_diagonal = ~np.eye(n_arms, dtype=bool)
        self._arms_by_k = np.arange(n_arms) * n_arms  # i·K of the θ⁽²⁾ slots K² + i·K + a⁽¹⁾
        # one trial's step (_choose_one): slots i·K + j of the pairs i < j, slot of (j, i) for slot (i, j),
        # and the slots and index offsets of a round whose C holds every arm
        self._pair_slots = self._pairs[0] * n_arms + self._pairs[1]
        self._transposed = np.arange(n_arms * n_arms).reshape(n_arms, n_arms).T.ravel()
        self._all_slots = np.concatenate([self._pair_slots, (self._arms_by_k[None, :] + np.arange(n_arms)[:, None]).ravel()])
        self._all_offsets = self._all_slots.copy()
        self._all_offsets[self._pair_slots.size:] += n_arms * n_arms

    def choose(self, t: int) -> tuple[IntArray, IntArray]:
        """The pair of round t in every trial (the step in the module docstring)."""
        if self.n_trials == 1:
            return self._choose_one(t)
        k, n = self.n_arms, self.n_trials
        rows = np.arange(n)
        upper, lower = confidence_bounds(self.wins, t, self.alpha)
        off_diagonal = self._off_diagonal
        copeland = ((upper > 0.5) & off_diagonal).sum(axis=2)  # (K − 1)·ζ̂_i
        candidates = copeland == copeland.max(axis=1, keepdims=True)  # C
        first = np.asarray(np.argmax(candidates, axis=1), dtype=np.int64)
        several = np.flatnonzero(candidates.sum(axis=1) > 1)
        known = np.full(n, -1)  # row of `ahead` holding a trial's θ⁽²⁾, read together with its θ⁽¹⁾
        ahead = np.empty((0, k, k))
        if several.size:  # sample θ⁽¹⁾ only where C has more than one arm, for the pairs that touch C
            lo, hi = self._pairs
            cand = candidates[several]
            trial, pair = np.nonzero(cand[:, lo] | cand[:, hi])
            owner, lo_arm, hi_arm = several[trial], lo[pair], hi[pair]
            keys, index = self.keys[owner], t * self._slots + lo_arm * k + hi_arm
            a, b = self.wins[owner, lo_arm, hi_arm] + 1, self.wins[owner, hi_arm, lo_arm] + 1
            if several.size * k * k <= _READ_AHEAD_LIMIT:
                # few trials (an agent's step): θ⁽²⁾ of every candidate a⁽¹⁾ in the same call (a variate
                # does not depend on which others are drawn with it), so that the round makes one call
                sub, column = np.nonzero(cand)
                sub, column, arm = np.repeat(sub, k), np.repeat(column, k), np.tile(np.arange(k), sub.size)
                owner2 = several[sub]
                theta = counter_beta(np.concatenate([keys, self.keys[owner2]]),
                                     np.concatenate([index, t * self._slots + k * k + arm * k + column]),
                                     np.concatenate([a, self.wins[owner2, arm, column] + 1]),
                                     np.concatenate([b, self.wins[owner2, column, arm] + 1]), check=False)
                ahead = np.zeros((several.size, k, k))
                ahead[sub, arm, column] = theta[trial.size:]
                known[several] = np.arange(several.size)
                theta = theta[: trial.size]
            else:
                theta = counter_beta(keys, index, a, b, check=False)
            beats = np.zeros((several.size, k, k), dtype=bool)
            beats[trial, lo_arm, hi_arm] = theta > 0.5
            beats[trial, hi_arm, lo_arm] = theta < 0.5  # θ⁽¹⁾_ji = 1 − θ⁽¹⁾_ij > ½
            score = np.where(cand, beats.sum(axis=2), -1)
            best = score == score.max(axis=1, keepdims=True)
            first[several] = uniform_pick(best, round_coins(self.keys[several], t, 1)[:, 0])
        eligible = lower[rows, :, first] <= 0.5  # l_{i a⁽¹⁾} <= ½ (a⁽¹⁾ itself: ½)
        second = first.copy()
        several = np.flatnonzero(eligible.sum(axis=1) > 1)
        if several.size:
            a1, arms, sub = first[several][:, None], np.arange(k)[None, :], np.arange(several.size)[:, None]
            theta = np.empty((several.size, k))
            read = known[several] >= 0
            theta[read] = ahead[known[several[read]], :, first[several[read]]]
            draw = np.flatnonzero(~read)
            if draw.size:
                rows_d, a1_d = several[draw][:, None], a1[draw]
                wins = self.wins[several[draw]]
                sub_d = np.arange(draw.size)[:, None]
                index = t * self._slots + k * k + arms * k + a1_d
                theta[draw] = counter_beta(self.keys[rows_d], index, wins[sub_d, arms, a1_d] + 1,
                                           wins[sub_d, a1_d, arms] + 1, check=False)
            theta[sub[:, 0], a1[:, 0]] = 0.5  # θ⁽²⁾_{a⁽¹⁾ a⁽¹⁾} = ½
            second[several] = np.argmax(np.where(eligible[several], theta, -np.inf), axis=1)
        return first, second

    def _choose_one(self, t: int) -> tuple[IntArray, IntArray]:
        """:meth:`choose` for a batch of one trial (an agent's step): the same numbers with fewer array calls.

        Only the signs the step compares are computed (u_ij > ½ and the column l_{i a⁽¹⁾} <= ½, with
        the same float operations as :func:`confidence_bounds`), and θ⁽²⁾ of every candidate a⁽¹⁾
        is drawn with θ⁽¹⁾ in one call when C has several arms and |C|·K is small (a variate does
        not depend on which others are drawn with it).
        """
        k, key, wins = self.n_arms, self.keys[0], self.wins[0]
        totals = wins + wins.T
        seen = np.maximum(totals, 1.0)  # = N where N > 0 (counts), so the same ratio and radius there
        ratio = wins / seen
        radius = np.sqrt(self.alpha * np.log(t) / seen)
        upper_above = ratio + radius > 0.5
        upper_above |= totals == 0  # N = 0: u = +∞
        upper_above &= self._off_diagonal
        copeland = upper_above.sum(axis=1)  # (K − 1)·ζ̂_i
        candidates = np.flatnonzero(copeland == copeland.max())  # C
        theta2: FloatArray | None = None
        if candidates.size > 1:
            # pair slots s = i·K + j of θ⁽¹⁾ (pairs i < j touching C), then, read ahead when they are
            # few, i·K + c of θ⁽²⁾ (c ∈ C, every i): the variate of slot s is Beta(b_s + 1, bᵀ_s + 1),
            # its index t·2K² + s (+ K² for θ⁽²⁾)
            ahead = candidates.size * k <= _SINGLE_READ_AHEAD_LIMIT
            if candidates.size == k:
                slots, offsets = (self._all_slots, self._all_offsets) if ahead else (self._pair_slots,) * 2
                n_pairs = self._pair_slots.size
            else:
                in_c = np.zeros(k, dtype=bool)
                in_c[candidates] = True
                lo, hi = self._pairs
                slots = self._pair_slots[in_c[lo] | in_c[hi]]
                n_pairs = slots.size
                if ahead:
                    slots = np.concatenate([slots, (self._arms_by_k[None, :] + candidates[:, None]).ravel()])
                offsets = slots.copy()
                offsets[n_pairs:] += k * k
            flat = wins.ravel()
            theta = counter_beta(key, offsets + t * self._slots, flat[slots] + 1, flat[self._transposed[slots]] + 1,
                                 check=False)
            theta1, lo_arm, hi_arm = theta[:n_pairs], slots[:n_pairs] // k, slots[:n_pairs] % k
            score = (np.bincount(lo_arm[theta1 > 0.5], minlength=k)  # #{j : θ⁽¹⁾_ij > ½}
                     + np.bincount(hi_arm[theta1 < 0.5], minlength=k))  # θ⁽¹⁾_ji = 1 − θ⁽¹⁾_ij > ½
            in_score = score[candidates]
            best = candidates[in_score == in_score.max()]
            pick = min(int(counter_uniform(int(key), t) * best.size), best.size - 1)  # coin t (round_coins)
            first = int(best[pick])
            if ahead:
                row = n_pairs + int(np.searchsorted(candidates, first)) * k
                theta2 = theta[row: row + k]
        else:
            first = int(candidates[0])
        eligible = ratio[:, first] - radius[:, first] <= 0.5  # l_{i a⁽¹⁾} <= ½
        eligible |= totals[:, first] == 0  # N = 0: l = −∞
        eligible[first] = True  # l_{a⁽¹⁾ a⁽¹⁾} = ½
        second = first
        if eligible.sum() > 1:
            if theta2 is None:
                theta2 = counter_beta(key, t * self._slots + k * k + self._arms_by_k + first,
                                      wins[:, first] + 1, wins[first] + 1, check=False)
            theta2[first] = 0.5  # θ⁽²⁾_{a⁽¹⁾ a⁽¹⁾} = ½ (theta2 is this round's own array)
            theta2[~eligible] = -np.inf
            second = int(np.argmax(theta2))
        return np.array([first]), np.array([second])

    def update(self, first: IntArray, second: IntArray, outcome: IntArray, t: int) -> None:
        """Record the outcomes of round t."""
        if self.n_trials == 1:  # an agent's step: the same additions on scalars
            winner_first, played_first, played_second = int(outcome[0]), int(first[0]), int(second[0])
            if played_first != played_second:
                self.wins[0, played_first, played_second] += winner_first
                self.wins[0, played_second, played_first] += 1 - winner_first
            return
        real = first != second  # a self-duel carries no information (adds 0)
        won = outcome * real
        add_per_trial(self.wins, won, first, second)
        add_per_trial(self.wins, real - won, second, first)


def _check(n_arms: int, horizon: int, alpha: float) -> tuple[int, float]:
    horizon = check_int(horizon, "horizon", minimum=1)
    if 4 * n_arms * n_arms >= GAMMA_INDEX_LIMIT // 2:  # not one round fits the counter space
        raise InvalidParameterError(
            f"n_arms must be < {math.isqrt(GAMMA_INDEX_LIMIT // 8)} for double-thompson-sampling (the Beta "
            f"samples' counter space); got {n_arms}"
        )
    if (horizon + 1) * 2 * n_arms * n_arms >= GAMMA_INDEX_LIMIT // 2:
        raise InvalidParameterError(
            f"horizon must be < {GAMMA_INDEX_LIMIT // (4 * n_arms * n_arms)} with K = {n_arms} arms "
            f"(the Beta samples' counter space); got {horizon}"
        )
    return horizon, check_in_interval(alpha, "alpha", 0.5, np.inf, closed="neither")


@register_algorithm_class("double-thompson-sampling")
class DoubleThompsonSampling(RoundAgent):
    """Ask/tell Double Thompson Sampling agent (non-private).

    Parameters
    ----------
    n_arms : int
        K >= 2.
    horizon : int
        T (only enforced: D-TS is anytime).
    alpha : float, default 0.51
        α > ½ of the confidence bounds.
    rng : int, SeedSequence, Generator or None
        The trial's seed (its algorithm stream gives the Beta samples and coins).

    Privacy
    -------
    None: a non-private baseline (it stores every raw outcome).

    References
    ----------
    Wu & Liu (2016), Algorithm 1.

    Examples
    --------
    >>> from dpbandits.algorithms.dueling.double_thompson import DoubleThompsonSampling
    >>> agent = DoubleThompsonSampling(3, horizon=100, rng=0)
    >>> agent.tell(agent.ask(), first_wins=True)
    """

    def __init__(self, n_arms: int, horizon: int, alpha: float = 0.51, *, rng: RNGLike = None) -> None:
        k = check_int(n_arms, "n_arms", minimum=2)
        check_pairwise_state("double-thompson-sampling", k)
        horizon, alpha = _check(k, horizon, alpha)
        super().__init__(DoubleThompsonPolicy(k, np.array([trial_streams(rng).algorithm_key]), alpha), horizon)


@register_comparator("double-thompson-sampling")
def simulate_double_thompson(
    env: UtilityDuelingEnvironment,
    *,
    n_trials: int,
    rng: RNGLike,
    horizon: int,
    alpha: float = 0.51,
) -> Mapping[str, FloatArray]:
    """Double Thompson Sampling (Wu & Liu 2016), all trials advanced together one round at a time.

    Parameters
    ----------
    env, n_trials, rng, horizon
        As for every round-by-round comparator: the environment, the number of trials, the seed (trial
        k uses ``trial_seed_sequences(rng, n_trials)[k]``) and T (at most 10⁸).
    alpha : float, default 0.51

    Returns
    -------
    dict of str to ndarray (n_trials,)
        Regret metrics and ``identified_best`` (the most frequent first candidate is the best arm).

    Privacy
    -------
    None: a non-private baseline.

    References
    ----------
    Wu & Liu (2016), Algorithm 1, Theorem 2 (regret O(K·log T + K²·log log T) with a Condorcet
    winner).
    """
    check_dueling_env(env)
    horizon, alpha = _check(env.n_arms, check_round_horizon(horizon, "double-thompson-sampling"), alpha)
    metrics, _ = simulate_comparator(env, n_trials, rng, horizon,
                                     lambda keys: DoubleThompsonPolicy(env.n_arms, keys, alpha),
                                     algorithm="double-thompson-sampling")
    return metrics
