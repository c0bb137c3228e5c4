"""RMED1 (Relative Minimum Empirical Divergence), a classic non-private dueling-bandit baseline.

With N_ij the comparisons of i and j, μ̂_ij the fraction won by i, d(p, q) the Bernoulli KL divergence
and Ô_i = {j ≠ i : μ̂_ij <= ½} (the arms i does not beat), the *empirical divergence*

    I_i(t) = Σ_{j ∈ Ô_i} N_ij·d(μ̂_ij, ½)

measures how unlikely it is that i is the Condorcet winner; î* = argmin_i I_i and J_i = I_i − I_î*.
RMED (Komiyama et al. 2015, Algorithm 1) first draws every pair once (L = 1, in index order), then
runs loops: the arms l of the current loop set L_C are taken in index order; for each, the
challenger m is chosen by RMED1's rule (Algorithm 2)

    m = î*                          if Ô_l = ∅ or î* ∈ Ô_l,
    m = argmin_{j ≠ l} μ̂_lj         otherwise (the arm l loses to most; lowest index on ties),

(l, m) is drawn, l leaves the remaining set L_R, and every arm j ∉ L_R with J_j(t) <= ln t + f(K)
joins the next loop's set L_N; when L_R is empty, L_C = L_R = L_N and L_N = ∅. With f(K) = 0.3·K^1.01
(the paper's experiments). A self-duel (î*, î*) carries no information and does not change N.
Ties of î* go to the lowest index (the paper leaves them open).

The batched form advances all trials one round at a time (RMED1 uses no randomness); the ask/tell
:class:`RMED1` runs the same step on a batch of one (:mod:`dpbandits.algorithms.dueling._rounds`).

References
----------
J. Komiyama, J. Honda, H. Kashima and H. Nakagawa, "Regret Lower Bound and Optimal Algorithm in
Dueling Bandit Problem", COLT 2015, Algorithms 1–2 and Theorem 3: under a Condorcet winner (arm 1)
RMED1's regret (per-round ½(Δ_1l + Δ_1m), Δ_1i = μ_1i − ½) satisfies
R(T) <= Σ_{i ≠ 1} Δ_1i/(2·d(μ_i1, ½))·ln T·(1 + o(1)) when arm 1 is the arm that beats each i most,
which is the case under strong stochastic transitivity.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from scipy import special

from dpbandits._core.rng import RNGLike
from dpbandits._core.typing import FloatArray, IntArray
from dpbandits._core.validation import check_int, check_positive_float
from dpbandits.algorithms.dueling._rounds import (
    RoundAgent,
    RoundPolicy,
    add_per_trial,
    register_comparator,
    simulate_comparator,
)
from dpbandits.algorithms.dueling._streams import trial_streams
from dpbandits.algorithms.registry import register_algorithm_class
from dpbandits.algorithms.sizes import check_pairwise_state
from dpbandits.envs.dueling import UtilityDuelingEnvironment

__all__ = ["RMED1", "RMED1Policy", "bernoulli_kl_to_half", "rmed1_asymptotic_constant", "simulate_rmed1"]


def bernoulli_kl_to_half(p: FloatArray) -> FloatArray:
    """d(p, ½) = p·ln(2p) + (1 − p)·ln(2(1 − p)), with 0·ln 0 = 0."""
    q = np.asarray(p, dtype=np.float64)
    return np.asarray(special.xlogy(q, 2.0 * q) + special.xlogy(1.0 - q, 2.0 * (1.0 - q)))


def rmed1_asymptotic_constant(env: UtilityDuelingEnvironment) -> float:
    """C = Σ_{i ≠ 1} Δ_1i/(2·d(μ_i1, ½)): RMED1's regret is C·ln T·(1 + o(1)) (preference regret).

    Komiyama et al. (2015), Theorem 3, with the challenger of every arm being the best arm (strong
    stochastic transitivity: the best arm beats every arm most). Δ_1i = P(1 ≻ i) − ½ are the
    environment's ``preference_gaps`` and μ_i1 = ½ − Δ_1i.
    """
    gaps = np.asarray(env.preference_gaps)[np.arange(env.n_arms) != env.best_arm]
    gaps = gaps[gaps > 0]
    return float(np.sum(gaps / (2.0 * bernoulli_kl_to_half(0.5 - gaps))))


class RMED1Policy(RoundPolicy):
    """RMED1's state for a batch of trials.

    Attributes
    ----------
    wins : ndarray (n_trials, K, K)
        w_ij: times i beat j.
    remaining, next_loop : ndarray of bool (n_trials, K)
        L_R and L_N. The current loop set L_C is not stored: its arms are drawn in index order and
        leave L_R as they are drawn, so the next arm of the loop is always the first arm of L_R.
    """

    def __init__(self, n_arms: int, keys: np.ndarray, tolerance: float) -> None:
        super().__init__(n_arms, keys)
        self.tolerance = tolerance  # f(K)
        k, n = n_arms, self.n_trials
        self.wins = np.zeros((n, k, k))
        self.remaining = np.ones((n, k), dtype=bool)
        self.next_loop = np.zeros((n, k), dtype=bool)
        first, second = np.triu_indices(k, k=1)
        self._initial = (first, second)  # the initial phase: every pair once, in index order
        self._means = np.full((n, k, k), 0.5)  # μ̂_ij after the last update (½ while unseen)
        self._divergence = np.zeros((n, k))
        self._leader = np.zeros(n, dtype=np.int64)  # î*
        self._off_diagonal = ~np.eye(k, dtype=bool)

    def _opponents(self, means: FloatArray) -> np.ndarray:
        """Ô_i = {j ≠ i : μ̂_ij <= ½}, shape (n_trials, K, K)."""
        return (means <= 0.5) & self._off_diagonal

    def _derive(self) -> None:
        """μ̂_ij, I_i and î* from the wins (after each update, and on load: they are never read from a file)."""
        totals = self.wins + np.swapaxes(self.wins, 1, 2)  # N_ij
        means = np.where(totals > 0, self.wins / np.maximum(totals, 1), 0.5)  # μ̂_ij (½ while unseen)
        self._means = means
        opponents = self._opponents(means)
        # I_i = Σ_{j ∈ Ô_i} N_ij·d(μ̂_ij, ½)
        self._divergence = np.sum(np.where(opponents, totals * bernoulli_kl_to_half(means), 0.0), axis=2)
        self._leader = np.asarray(np.argmin(self._divergence, axis=1), dtype=np.int64)  # î* (lowest on ties)

    def choose(self, t: int) -> tuple[IntArray, IntArray]:
        """The pair of round t in every trial (the step in the module docstring)."""
        n_initial = self._initial[0].size
        if t <= n_initial:
            return (np.full(self.n_trials, self._initial[0][t - 1], dtype=np.int64),
                    np.full(self.n_trials, self._initial[1][t - 1], dtype=np.int64))
        rows = self.rows
        first = np.asarray(np.argmax(self.remaining, axis=1), dtype=np.int64)  # next l_t of L_C, index order
        means = self._means
        opponents = self._opponents(means)[rows, first]  # Ô_{l_t}
        leader = self._leader
        to_leader = ~opponents.any(axis=1) | opponents[rows, leader]
        row_means = means[rows, first].copy()
        row_means[rows, first] = np.inf  # j ≠ l_t
        weakest = np.asarray(np.argmin(row_means, axis=1), dtype=np.int64)  # argmin_j μ̂_{l_t j}
        return first, np.where(to_leader, leader, weakest)

    def update(self, first: IntArray, second: IntArray, outcome: IntArray, t: int) -> None:
        """Record the outcomes of round t."""
        real = first != second  # a self-duel carries no information (adds 0)
        won = outcome * real
        add_per_trial(self.wins, won, first, second)
        add_per_trial(self.wins, real - won, second, first)
        self._derive()
        if t <= self._initial[0].size:  # initial phase; then the first loop runs over every arm
            return
        self.remaining[self.rows, first] = False  # l_t leaves L_R; candidates for the next loop join L_N
        gap = self._divergence - self._divergence[self.rows, self._leader][:, None]  # J_j
        self.next_loop |= ~self.remaining & (gap <= np.log(t) + self.tolerance)
        done = ~self.remaining.any(axis=1)  # the loop is finished: L_C = L_R = L_N, L_N = ∅
        self.remaining[done] = self.next_loop[done]
        self.next_loop[done] = False

    def recommendation(self) -> IntArray:
        """î*: the arm of least empirical divergence."""
        return self._leader.copy()


def _tolerance(n_arms: int, tolerance: float | None) -> float:
    if tolerance is None:
        return 0.3 * n_arms**1.01  # f(K) = 0.3·K^1.01 (the paper's experiments)
    return check_positive_float(tolerance, "tolerance")


@register_algorithm_class("rmed1")
class RMED1(RoundAgent):
    """Ask/tell RMED1 agent (non-private).

    Parameters
    ----------
    n_arms : int
        K >= 2.
    horizon : int
        T (only enforced: RMED1 is anytime).
    tolerance : float, optional
        f(K) >= 0 of the candidate rule J_j <= ln t + f(K); default 0.3·K^1.01.
    rng : int, SeedSequence, Generator or None
        Accepted for a uniform signature; RMED1 uses no randomness.

    Privacy
    -------
    None: a non-private baseline (it stores every raw outcome).

    References
    ----------
    Komiyama et al. (2015), Algorithms 1–2.

    Examples
    --------
    >>> from dpbandits.algorithms.dueling.rmed import RMED1
    >>> agent = RMED1(3, horizon=100)
    >>> agent.ask()
    (0, 1)
    """

    def __init__(self, n_arms: int, horizon: int, tolerance: float | None = None, *, rng: RNGLike = None) -> None:
        k = check_int(n_arms, "n_arms", minimum=2)
        check_pairwise_state("rmed1", k)
        keys = np.array([trial_streams(rng).algorithm_key])
        super().__init__(RMED1Policy(k, keys, _tolerance(k, tolerance)), horizon)


@register_comparator("rmed1")
def simulate_rmed1(
    env: UtilityDuelingEnvironment,
    *,
    n_trials: int,
    rng: RNGLike,
    horizon: int,
    tolerance: float | None = None,
) -> Mapping[str, FloatArray]:
    """RMED1 (Komiyama et al. 2015), all trials advanced together one round at a time.

    Parameters
    ----------
    env, n_trials, rng, horizon
        As for every round-by-round comparator: the environment, the number of trials, the seed (trial
        k uses ``trial_seed_sequences(rng, n_trials)[k]``) and T (at most 10⁸).
    tolerance : float, optional
        f(K); default 0.3·K^1.01.

    Returns
    -------
    dict of str to ndarray (n_trials,)
        Regret metrics and ``identified_best`` (î* at T is the best arm).

    Privacy
    -------
    None: a non-private baseline.

    References
    ----------
    Komiyama et al. (2015), Algorithms 1–2, Theorem 3 (asymptotically optimal regret
    Σ_i Δ_1i/(2·d(μ_i1, ½))·ln T under strong stochastic transitivity).
    """
    metrics, _ = simulate_comparator(
        env, n_trials, rng, horizon, lambda keys: RMED1Policy(env.n_arms, keys, _tolerance(env.n_arms, tolerance)),
        algorithm="rmed1")
    return metrics
