"""Relative Upper Confidence Bound (RUCB), a classic non-private dueling-bandit baseline.

Every round, with W the matrix of wins (w_ij = times i beat j) and N = W + Wᵀ:

    U = W/N + √(α·ln t / N)   (x/0 := 1 for both terms),   U_ii = ½,
    C = {c : U_cj >= ½ for all j}   (potential Condorcet winners),

the first arm a_c is drawn from C (uniformly from all arms if C = ∅; the hypothesised best arm B,
kept while it stays in C, gets probability ½), and the second arm is d = argmax_j U_jc (ties broken
uniformly, excluding c when tied). The whole step is written for a batch of independent trials
(batch dimension first); the ask/tell agent runs the same step on a batch of one, so both forms
agree exactly given the same seeds. Random choices use the algorithm's counter-based coins
(:mod:`dpbandits.algorithms.dueling._streams`): coins 3t, 3t+1, 3t+2 at round t.

References
----------
M. Zoghi, S. Whiteson, R. Munos, M. de Rijke, "Relative Upper Confidence Bound for the K-Armed
Dueling Bandit Problem", ICML 2014, Algorithm 1 (α > ½; regret O(K² + K·log T)).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from dpbandits._core.errors import PrivacyBudgetExceededError
from dpbandits._core.persistence import Persistable
from dpbandits._core.rng import RNGLike
from dpbandits._core.typing import BoolArray, FloatArray, IntArray
from dpbandits._core.validation import check_in_interval, check_int
from dpbandits.algorithms.dueling._common import check_dueling_env, check_told
from dpbandits.algorithms.dueling._streams import trial_seed_sequences, trial_streams
from dpbandits.algorithms.registry import register_algorithm
from dpbandits.envs.base import counter_uniforms
from dpbandits.envs.dueling import REGRET_METRICS, DuelStreams, UtilityDuelingEnvironment

__all__ = ["RUCB", "rucb_step", "simulate_rucb"]


def _pick(mask: BoolArray, coins: FloatArray) -> IntArray:
    """Per row, the ⌊u·count⌋-th True column of ``mask`` (a uniform choice among the True entries)."""
    counts = mask.sum(axis=1)
    target = np.minimum((coins * counts).astype(np.int64), counts - 1)
    ranks = np.cumsum(mask, axis=1) - 1
    return np.asarray(np.argmax(mask & (ranks == target[:, None]), axis=1), dtype=np.int64)


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
    n_trials, k = wins.shape[0], wins.shape[1]
    totals = wins + np.swapaxes(wins, 1, 2)  # N = W + Wᵀ
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(totals > 0, wins / totals, 1.0)
        bonus = np.where(totals > 0, np.sqrt(alpha * np.log(t) / totals), 1.0)
    upper = ratio + bonus  # U = W/N + √(α ln t / N)
    diagonal = np.arange(k)
    upper[:, diagonal, diagonal] = 0.5
    candidates = np.all(upper >= 0.5, axis=2)  # C
    empty = ~candidates.any(axis=1)
    candidates[empty] = True  # C = ∅: a_c uniform over all arms
    rows = np.arange(n_trials)
    keep = (hypothesis >= 0) & ~empty & candidates[rows, np.maximum(hypothesis, 0)]
    hypothesis = np.where(keep, hypothesis, -1)  # B ← B ∩ C
    single = (candidates.sum(axis=1) == 1) & ~empty
    coins = counter_uniforms(keys[:, None], 3 * t + np.arange(3)[None, :])
    others = candidates.copy()
    others[rows[keep], hypothesis[keep]] = False
    first = _pick(others, coins[:, 1])
    first = np.where(keep & (coins[:, 0] < 0.5), hypothesis, first)  # p(B) = ½
    only = np.argmax(candidates, axis=1)
    first = np.where(single, only, first)
    hypothesis = np.where(single, only, hypothesis)  # |C| = 1: B ← C
    column = upper[rows, :, first]  # U_jc
    best = column >= column.max(axis=1, keepdims=True)
    tied = best.sum(axis=1) > 1
    best[rows[tied], first[tied]] = False  # on ties d ≠ c
    second = _pick(best, coins[:, 2])
    return first, second, hypothesis


class RUCB(Persistable):
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

    _state_fields = ("_keys", "wins", "_hypothesis", "first_counts", "time", "_asked")

    def __init__(self, n_arms: int, horizon: int, alpha: float = 0.51, *, rng: RNGLike = None) -> None:
        self.n_arms = check_int(n_arms, "n_arms", minimum=2)
        self.horizon = check_int(horizon, "horizon", minimum=1)
        self.alpha = check_in_interval(alpha, "alpha", 0.5, np.inf, closed="neither")
        self._keys = np.array([trial_streams(rng).algorithm_key], dtype=np.uint64)
        self.wins = np.zeros((1, self.n_arms, self.n_arms))
        self._hypothesis = np.array([-1], dtype=np.int64)
        self.first_counts = np.zeros(self.n_arms, dtype=np.int64)
        self.time = 0
        self._asked: tuple[int, int] | None = None

    @property
    def recommendation(self) -> int:
        """The arm most often chosen as first arm (lowest index on ties)."""
        return int(np.argmax(self.first_counts))

    def ask(self) -> tuple[int, int]:
        """Return the next pair (a_c, a_d)."""
        if self._asked is not None:
            return self._asked
        if self.time >= self.horizon:
            raise PrivacyBudgetExceededError(f"horizon={self.horizon} rounds were played")
        first, second, self._hypothesis = rucb_step(self.wins, self._hypothesis, self.time + 1, self._keys, self.alpha)
        self._asked = (int(first[0]), int(second[0]))
        return self._asked

    def tell(self, pair: tuple[int, int], winner: int | None = None, *, first_wins: int | bool | None = None) -> None:
        """Record the outcome: ``winner`` is the arm that won, or ``first_wins`` is True iff ``pair[0]`` won.

        See :meth:`DPEBSElimination.tell <dpbandits.algorithms.dueling.dp_ebs_elimination.DPEBSElimination.tell>`.
        """
        told, outcome = check_told(self._asked, pair, winner, first_wins)
        c, d = told
        self.wins[0, c, d] += outcome
        self.wins[0, d, c] += 1 - outcome
        self.first_counts[c] += 1
        self.time += 1
        self._asked = None


@register_algorithm(
    "rucb",
    family="dueling",
    privacy="none (non-private)",
    metrics=(*REGRET_METRICS, "identified_best"),
    proportion_metrics=("identified_best",),
    environments=("dueling-f1", "dueling-f2", "dueling-f3", "dueling-f4", "dueling-utility", "dueling-unit-ball"),
)
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
    env : UtilityDuelingEnvironment
    n_trials : int
    rng : int, SeedSequence, Generator or None
        Trial k uses ``trial_seed_sequences(rng, n_trials)[k]`` (environment, algorithm streams).
    horizon : int
        T.
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
    check_dueling_env(env)
    n = check_int(n_trials, "n_trials", minimum=1)
    horizon = check_int(horizon, "horizon", minimum=1)
    alpha = check_in_interval(alpha, "alpha", 0.5, np.inf, closed="neither")
    k = env.n_arms
    parts = [trial_streams(seq) for seq in trial_seed_sequences(rng, n)]
    keys = np.array([p.algorithm_key for p in parts], dtype=np.uint64)
    env_keys = np.concatenate([env.streams(p.environment, 1).keys for p in parts])
    feedback = DuelStreams(env, env_keys)
    wins = np.zeros((n, k, k))
    pair_counts = np.zeros((n, k * k))
    first_counts = np.zeros((n, k))
    hypothesis = np.full(n, -1, dtype=np.int64)
    rows = np.arange(n)
    for t in range(1, horizon + 1):
        first, second, hypothesis = rucb_step(wins, hypothesis, t, keys, alpha)
        outcome = feedback.duel_trials(first, second)
        wins[rows, first, second] += outcome
        wins[rows, second, first] += 1 - outcome
        pair_counts[rows, first * k + second] += 1
        first_counts[rows, first] += 1
    metrics = env.regret_from_pair_counts(pair_counts.reshape(n, k, k))
    identified = (np.argmax(first_counts, axis=1) == env.best_arm).astype(np.float64)
    return {**metrics, "identified_best": identified}
