"""Beat-the-Mean (BTM, online), a classic non-private explore-then-exploit dueling-bandit baseline.

BTM keeps a working set W of arms and, for each b ∈ W, the wins w_b and comparisons n_b of b (as the
arm played) against opponents drawn uniformly from W: P̂_b = w_b/n_b estimates the probability that
b beats the *mean bandit* of W (the average of P(b ≻ b') over b' ∈ W, b' = b included, P(b ≻ b) = ½).
Every round (Yue & Joachims 2011, Algorithm 1 with Algorithm 2's online constants):

* b ← argmin_{b ∈ W} n_b (ties broken uniformly at random), b' ~ Unif(W), duel (b, b');
* with n* = min_{b ∈ W} n_b and c* = c(n*) (c* = 1 if n* = 0), where
  c(n) = 3γ²·√(ln(1/δ)/n) and δ = 1/(2TK): if min_b P̂_b + c* <= max_b P̂_b − c*, the arm
  b' = argmin_b P̂_b (lowest index on ties) leaves W and every comparison against it is deleted from
  the other arms' w_b, n_b.

When |W| = 1 the algorithm exploits: it plays (b̂, b̂) to the end (regret counted against the best
arm, as every dueling algorithm here). P̂_b = ½ while n_b = 0. This is the EBS estimate of
DP-EBS-Elimination, which is built on BTM (with a round-robin instead of least-played first arm and
an elimination rule on every arm instead of the worst only).

The batched form advances all trials one round at a time and fast-forwards once every trial has
committed; the ask/tell :class:`BeatTheMean` runs the same step on a batch of one
(:mod:`dpbandits.algorithms.dueling._rounds`). Coins: 2t (tie-break of b), 2t + 1 (b').

References
----------
Y. Yue and T. Joachims, "Beat the Mean Bandit", ICML 2011, Algorithm 1 (Beat-the-Mean) and
Algorithm 2 (online: δ = 1/(2TK), c_{δ,γ}(n) = 3γ²√(ln(1/δ)/n)); expected regret
O(γ⁷·K·log T/ε*) under relaxed SST (γ) and the stochastic triangle inequality, with ε* the smallest
gap to the best arm (Theorem 2).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from dpbandits._core.errors import InvalidParameterError
from dpbandits._core.rng import RNGLike
from dpbandits._core.typing import FloatArray, IntArray
from dpbandits._core.validation import check_int, check_positive_float
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

__all__ = ["BeatTheMean", "BeatTheMeanPolicy", "btm_radius", "simulate_beat_the_mean"]


def btm_radius(comparisons: FloatArray | float, n_arms: int, horizon: int, gamma: float = 1.0) -> FloatArray:
    """c(n) = 3γ²·√(ln(1/δ)/n) with δ = 1/(2TK); c(0) = 1 (Yue & Joachims 2011, Algorithm 2)."""
    n = np.asarray(comparisons, dtype=np.float64)
    log_inv_delta = math.log(2 * horizon * n_arms)  # ln(1/δ), δ = 1/(2TK) (BeatTheMeanPolicy keeps a copy)
    return np.asarray(np.where(n > 0, 3.0 * gamma**2 * np.sqrt(log_inv_delta / np.maximum(n, 1)), 1.0))


class BeatTheMeanPolicy(RoundPolicy):
    """BTM's state for a batch of trials: working sets, per-pair wins and comparisons.

    Attributes
    ----------
    working : ndarray of bool (n_trials, K)
        W.
    wins, comparisons : ndarray (n_trials, K, K)
        Wins and comparisons of arm b (played first) against opponent b'.
    win_sums, comparison_sums : ndarray (n_trials, K)
        w_b and n_b: the same summed over the opponents still in W (kept up to date incrementally).
    """

    def __init__(self, n_arms: int, keys: np.ndarray, horizon: int, gamma: float) -> None:
        super().__init__(n_arms, keys)
        self.horizon, self.gamma = horizon, gamma
        self._log_inv_delta = math.log(2 * horizon * n_arms)  # ln(1/δ), δ = 1/(2TK), as in btm_radius
        self.working = np.ones((self.n_trials, n_arms), dtype=bool)
        self.wins = np.zeros((self.n_trials, n_arms, n_arms))
        self.comparisons = np.zeros((self.n_trials, n_arms, n_arms))
        self.win_sums = np.zeros((self.n_trials, n_arms))
        self.comparison_sums = np.zeros((self.n_trials, n_arms))

    def _estimates(self) -> FloatArray:
        """P̂_b = w_b/n_b (½ while n_b = 0), shape (n_trials, K)."""
        counts = self.comparison_sums  # counts: max(n_b, 1) = n_b wherever n_b > 0
        return np.where(counts > 0, self.win_sums / np.maximum(counts, 1.0), 0.5)

    def committed_arms(self) -> IntArray:
        """The arm a trial plays as (a, a) from now on (one arm left), else −1."""
        single = self.working.sum(axis=1) == 1
        return np.where(single, np.argmax(self.working, axis=1), -1).astype(np.int64)

    def choose(self, t: int) -> tuple[IntArray, IntArray]:
        """The pair of round t in every trial (the step in the module docstring)."""
        if self.n_trials == 1:
            return self._choose_one(t)
        coins = round_coins(self.keys, t, 2)
        masked = np.where(self.working, self.comparison_sums, np.inf)
        least = self.working & (masked == masked.min(axis=1, keepdims=True))  # argmin n_b, ties
        first = uniform_pick(least, coins[:, 0])
        second = uniform_pick(self.working, coins[:, 1])  # b' ~ Unif(W), b' = b allowed
        return first, second

    def _choose_one(self, t: int) -> tuple[IntArray, IntArray]:
        """:meth:`choose` for a batch of one trial (an agent's step): the same choice on Python scalars."""
        key, working = int(self.keys[0]), np.flatnonzero(self.working[0]).tolist()
        counts = self.comparison_sums[0].tolist()
        fewest = min(counts[b] for b in working)
        least = [b for b in working if counts[b] == fewest]  # argmin n_b over W, ties
        # coins 2t and 2t + 1 (round_coins), each picking the ⌊u·count⌋-th arm as uniform_pick does
        first = least[min(int(counter_uniform(key, 2 * t) * len(least)), len(least) - 1)]
        second = working[min(int(counter_uniform(key, 2 * t + 1) * len(working)), len(working) - 1)]
        return np.array([first]), np.array([second])

    def _update_one(self, first: int, second: int, outcome: int) -> None:
        """:meth:`update` for a batch of one trial: the same additions and comparisons on Python scalars."""
        working = np.flatnonzero(self.working[0]).tolist()
        if len(working) == 1:  # committed: the statistics stay as they are
            return
        self.wins[0, first, second] += outcome
        self.comparisons[0, first, second] += 1.0
        self.win_sums[0, first] += outcome
        self.comparison_sums[0, first] += 1.0
        counts, win_sums = self.comparison_sums[0].tolist(), self.win_sums[0].tolist()
        estimate = [win_sums[b] / counts[b] if counts[b] > 0 else 0.5 for b in working]  # P̂_b over W
        least_count = min(counts[b] for b in working)  # n*
        radius = (3.0 * self.gamma**2 * math.sqrt(self._log_inv_delta / least_count)  # c* (btm_radius)
                  if least_count > 0 else 1.0)
        low = min(estimate)
        if not low + radius <= max(estimate) - radius:
            return
        gone = working[estimate.index(low)]  # b' = argmin P̂_b (lowest index on ties)
        self.working[0, gone] = False
        self.win_sums[0] -= self.wins[0, :, gone]  # delete comparisons with b'
        self.comparison_sums[0] -= self.comparisons[0, :, gone]

    def update(self, first: IntArray, second: IntArray, outcome: IntArray, t: int) -> None:
        """Record the outcomes of round t."""
        if self.n_trials == 1:
            self._update_one(int(first[0]), int(second[0]), int(outcome[0]))
            return
        live = self.working.sum(axis=1) > 1  # trials with one arm left (committed) keep their statistics
        played = live.astype(np.float64)
        won = outcome * played
        add_per_trial(self.wins, won, first, second)
        add_per_trial(self.comparisons, played, first, second)
        add_per_trial(self.win_sums, won, first)  # b' ∈ W always
        add_per_trial(self.comparison_sums, played, first)
        estimate = self._estimates()
        least_count = np.where(self.working, self.comparison_sums, np.inf).min(axis=1)  # n*
        radius = btm_radius(least_count, self.n_arms, self.horizon, self.gamma)  # c*
        low = np.where(self.working, estimate, np.inf)
        high = np.where(self.working, estimate, -np.inf).max(axis=1)
        eliminate = live & (low.min(axis=1) + radius <= high - radius)
        if not eliminate.any():
            return
        worst = np.argmin(low, axis=1)  # b' = argmin P̂_b (lowest index on ties)
        gone_rows, gone = np.flatnonzero(eliminate), worst[eliminate]
        self.working[gone_rows, gone] = False
        self.win_sums[gone_rows] -= self.wins[gone_rows, :, gone]  # delete comparisons with b'
        self.comparison_sums[gone_rows] -= self.comparisons[gone_rows, :, gone]

    def recommendation(self) -> IntArray:
        """The committed arm, else the working arm of largest P̂ (lowest index on ties)."""
        return np.asarray(np.argmax(np.where(self.working, self._estimates(), -np.inf), axis=1), dtype=np.int64)


def _check(horizon: int, gamma: float) -> tuple[int, float]:
    gamma = check_positive_float(gamma, "gamma")
    if gamma > _MAX_GAMMA:  # 3γ² overflows; far earlier the radius is > 1 and nothing is ever eliminated
        raise InvalidParameterError(f"gamma must be at most {_MAX_GAMMA:g} (3·gamma² must be a finite float); got {gamma!r}")
    return check_int(horizon, "horizon", minimum=1), gamma


_MAX_GAMMA = 1e150


@register_algorithm_class("beat-the-mean")
class BeatTheMean(RoundAgent):
    """Ask/tell Beat-the-Mean agent (online version; non-private).

    Parameters
    ----------
    n_arms : int
        K >= 2.
    horizon : int
        T (sets δ = 1/(2TK)).
    gamma : float, default 1.0
        γ >= 1 of relaxed stochastic transitivity (1: strong stochastic transitivity, which the
        utility environments satisfy).
    rng : int, SeedSequence, Generator or None
        The trial's seed (its algorithm stream gives the coins).

    Privacy
    -------
    None: a non-private baseline (it stores every raw outcome).

    References
    ----------
    Yue & Joachims (2011), Algorithms 1 and 2.

    Examples
    --------
    >>> from dpbandits.algorithms.dueling.beat_the_mean import BeatTheMean
    >>> agent = BeatTheMean(3, horizon=100, rng=0)
    >>> agent.tell(agent.ask(), first_wins=True)
    """

    def __init__(self, n_arms: int, horizon: int, gamma: float = 1.0, *, rng: RNGLike = None) -> None:
        horizon, gamma = _check(horizon, gamma)
        keys = np.array([trial_streams(rng).algorithm_key])
        k = check_int(n_arms, "n_arms", minimum=2)
        check_pairwise_state("beat-the-mean", k)
        super().__init__(BeatTheMeanPolicy(k, keys, horizon, gamma), horizon)

    @property
    def working_set(self) -> list[int]:
        """The working set W."""
        return [int(a) for a in np.flatnonzero(self._policy.working[0])]  # type: ignore[attr-defined]


@register_comparator("beat-the-mean", also=("committed",))
def simulate_beat_the_mean(
    env: UtilityDuelingEnvironment,
    *,
    n_trials: int,
    rng: RNGLike,
    horizon: int,
    gamma: float = 1.0,
) -> Mapping[str, FloatArray]:
    """Beat-the-Mean (Yue & Joachims 2011, online), all trials advanced together one round at a time.

    Parameters
    ----------
    env, n_trials, rng, horizon
        As for every round-by-round comparator: the environment, the number of trials, the seed (trial
        k uses ``trial_seed_sequences(rng, n_trials)[k]``) and T (at most 10⁸); once every trial has one arm left the rest is fast-forwarded.
    gamma : float, default 1.0
        γ of relaxed stochastic transitivity.

    Returns
    -------
    dict of str to ndarray (n_trials,)
        Regret metrics, ``identified_best`` (the recommended arm is the best arm) and ``committed``
        (one arm left before T).

    Privacy
    -------
    None: a non-private baseline.

    References
    ----------
    Yue & Joachims (2011), Algorithms 1–2, Theorem 2 (regret O(γ⁷·K·log T/ε*)).
    """
    horizon, gamma = _check(horizon, gamma)
    metrics, policy = simulate_comparator(
        env, n_trials, rng, horizon, lambda keys: BeatTheMeanPolicy(env.n_arms, keys, horizon, gamma),
        algorithm="beat-the-mean",
    )
    return {**metrics, "committed": (policy.committed_arms() >= 0).astype(np.float64)}
