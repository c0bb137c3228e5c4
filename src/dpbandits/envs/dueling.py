"""Dueling-bandit environments: utility-based preferences over finite arm sets and the unit ball.

Each arm i has features x_i ∈ ℝ^d and utility r_i = θ*ᵀx_i; a duel of (i, j) returns 1 iff i wins,
with probability P(i ≻ j) = F(r_i − r_j) for a link F (logistic σ by default; probit allowed). Both
links are strictly increasing with F(−u) = 1 − F(u) and F − ½ concave on [0, ∞), so preferences
satisfy strong stochastic transitivity and the stochastic triangle inequality.

Feedback streams (paired comparisons)
-------------------------------------
:meth:`UtilityDuelingEnvironment.streams` gives every (trial, unordered pair {i, j}) its own
counter-based uniform stream (the keyed SplitMix64 of :func:`dpbandits.envs.base.counter_uniforms`,
keys from ``as_seed_sequence(rng).generate_state``). The k-th duel of the pair {i, j} (i <= j) in a
trial uses the k-th uniform u of that pair's stream: i beats j iff u < P(i ≻ j), and (j, i) returns
the complement, so o(j, i) = 1 − o(i, j) on every draw. Self-duels (i, i) use their own stream and
return 1[u < ½]. Every algorithm run from the same environment seed therefore sees the *same*
outcome for the k-th comparison of each pair, whatever order it plays pairs in; an ask/tell agent
and a vectorised simulation see identical feedback. (A coupling uses one uniform per
round instead; per-pair streams give the same marginals and stronger pairing across algorithms,
as issue 6 asks.)

Regret: per round 2·r(x*) − r(x_t) − r(y_t) (``reward_regret``, primary), half of it
(``reward_regret_avg``), and the preference regrets ½(Δ(x)+Δ(y)), min and max with
Δ(x) = F(r(x*) − r(x)) − ½ (``preference_regret``, ``weak_regret``, ``strong_regret``).
:meth:`~UtilityDuelingEnvironment.pair_costs` gives each as a (K, K) matrix, so regret is
Σ_{ij} N_ij·cost_ij for a matrix of pair counts N.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from dpbandits._core.errors import InvalidActionError, InvalidParameterError
from dpbandits._core.resources import check_fits, squared
from dpbandits._core.rng import RNGLike, as_generator, as_seed_sequence
from dpbandits._core.typing import FloatArray, IntArray
from dpbandits._core.validation import check_array, check_int, check_one_of, check_positive_float
from dpbandits.envs.base import counter_uniforms
from dpbandits.envs.registry import register_environment

__all__ = [
    "LINKS",
    "REGRET_METRICS",
    "DuelStreams",
    "UtilityDuelingEnvironment",
    "ball_grid_net",
    "finite_instance",
    "sphere_net",
    "unit_ball_environment",
]

def _logistic(u: FloatArray) -> FloatArray:
    from scipy import special  # imported on first use: looking the environments up stays light

    return np.asarray(special.expit(u), dtype=np.float64)  # σ(u) = 1/(1+e^{−u})


def _probit(u: FloatArray) -> FloatArray:
    from scipy import special

    return np.asarray(special.ndtr(u), dtype=np.float64)  # Φ(u)


LINKS: dict[str, Callable[[FloatArray], FloatArray]] = {"logistic": _logistic, "probit": _probit}

REGRET_METRICS: tuple[str, ...] = (
    "reward_regret",
    "reward_regret_avg",
    "preference_regret",
    "weak_regret",
    "strong_regret",
)
"""The regret metrics of a duel: the keys of :meth:`UtilityDuelingEnvironment.pair_costs`."""


def _check_preference_matrix(n_arms: int) -> None:
    """Refuse K arms whose K×K preference matrix (and the utility differences it is computed from) cannot fit."""
    check_fits("n_arms", n_arms, 16.0 * squared(n_arms), what="the K×K preference matrix")


class UtilityDuelingEnvironment:
    """Finite-arm dueling bandit with utilities r_i = θ*ᵀx_i and preferences P(i ≻ j) = F(r_i − r_j).

    Parameters
    ----------
    features : array_like of shape (K, d)
        Arm features x_i (rows).
    theta : array_like of shape (d,)
        θ*, the utility parameter.
    link : {"logistic", "probit"}, default "logistic"
        The link F.
    best_reward : float, optional
        r(x*) used for regret. Default: max_i r_i. Pass a larger value when the arms are a net of a
        bigger decision space (regret is then measured against the true optimum, including the
        discretisation error).
    name : str, optional
        A label for descriptions.

    Attributes
    ----------
    utilities : ndarray (K,)
        r_i.
    preference_matrix : ndarray (K, K)
        P[i, j] = F(r_i − r_j); P[i, i] = ½.
    """

    kind = "dueling"

    def __init__(
        self,
        features: ArrayLike,
        theta: ArrayLike,
        *,
        link: str = "logistic",
        best_reward: float | None = None,
        name: str = "",
    ) -> None:
        x = check_array(features, "features", ndim=2)
        th = check_array(theta, "theta", ndim=1)
        if x.shape[1] != th.shape[0]:
            raise InvalidParameterError(
                f"theta must have length features.shape[1]={x.shape[1]}; got theta.shape={th.shape}"
            )
        self.link = check_one_of(link, "link", tuple(LINKS))
        _check_preference_matrix(x.shape[0])
        self.features = x
        self.theta = th
        self.name = name
        self.utilities: FloatArray = x @ th  # r_i = θ*ᵀx_i
        top = float(self.utilities.max())
        if best_reward is None:
            self.best_reward = top
        else:
            self.best_reward = float(best_reward)
            if not math.isfinite(self.best_reward) or self.best_reward < top - 1e-12:
                raise InvalidParameterError(
                    f"best_reward must be a finite float >= max utility {top!r}; got {best_reward!r}"
                )
        link_fn = LINKS[self.link]
        self.preference_matrix: FloatArray = link_fn(self.utilities[:, None] - self.utilities[None, :])
        np.fill_diagonal(self.preference_matrix, 0.5)
        # Δ(x) = F(r* − r(x)) − ½
        self.preference_gaps: FloatArray = link_fn(self.best_reward - self.utilities) - 0.5
        self.reward_gaps: FloatArray = self.best_reward - self.utilities  # g_i = r* − r_i
        for arr in (self.utilities, self.preference_matrix, self.preference_gaps, self.reward_gaps):
            arr.setflags(write=False)
        n = self.n_arms
        lo, hi = np.triu_indices(n)
        self._pair_index = np.zeros((n, n), dtype=np.int64)
        self._pair_index[lo, hi] = np.arange(lo.size)
        self._pair_index[hi, lo] = np.arange(lo.size)
        self._pair_index.setflags(write=False)

    # ------------------------------------------------------------------ description
    @property
    def n_arms(self) -> int:
        """Number of arms K."""
        return int(self.features.shape[0])

    @property
    def dim(self) -> int:
        """Dimension d of the features."""
        return int(self.features.shape[1])

    @property
    def best_arm(self) -> int:
        """The arm of largest utility (lowest index on ties)."""
        return int(np.argmax(self.utilities))

    @property
    def n_pair_streams(self) -> int:
        """K(K+1)/2: one stream per unordered pair, self-pairs included."""
        return self.n_arms * (self.n_arms + 1) // 2

    def describe(self) -> dict[str, Any]:
        """JSON-serialisable description."""
        return {
            "kind": self.kind,
            "name": self.name,
            "n_arms": self.n_arms,
            "dim": self.dim,
            "link": self.link,
            "theta": self.theta.tolist(),
            "best_reward": self.best_reward,
            "utilities": self.utilities.tolist(),
        }

    def __repr__(self) -> str:
        return f"UtilityDuelingEnvironment(name={self.name!r}, n_arms={self.n_arms}, dim={self.dim}, link={self.link!r})"

    def check_arms(self, arms: ArrayLike, name: str = "arms") -> IntArray:
        """Return ``arms`` as int64, raising :class:`InvalidActionError` if any is out of range."""
        arr = np.asarray(arms)
        if arr.dtype.kind not in "iu":
            raise InvalidActionError(f"{name} must be integer arm indices; got dtype {arr.dtype}")
        arr = arr.astype(np.int64, copy=False)
        if arr.size and (arr.min() < 0 or arr.max() >= self.n_arms):
            bad = arr[(arr < 0) | (arr >= self.n_arms)].ravel()[0]
            raise InvalidActionError(f"{name} must lie in [0, {self.n_arms - 1}]; got {int(bad)}")
        return arr

    # ------------------------------------------------------------------ preferences and regret
    def effective_borda_scores(self, active: ArrayLike | None = None, opponent: str = "with_self") -> FloatArray:
        """Effective Borda scores b_i(S) = mean_{j∈S} P(i, j) of the arms of S.

        Parameters
        ----------
        active : array_like of int, optional
            The set S (default: all arms).
        opponent : {"with_self", "without_self"}
            Whether j = i is included (P(i, i) = ½).

        Returns
        -------
        ndarray of shape (|S|,)
            b_i(S) for i in S, in the order of ``active``.
        """
        opponent = check_one_of(opponent, "opponent", ("with_self", "without_self"))
        s = self.check_arms(np.arange(self.n_arms) if active is None else active, "active")
        sub = self.preference_matrix[np.ix_(s, s)]
        if opponent == "with_self":
            return np.asarray(sub.mean(axis=1), dtype=np.float64)
        if s.size < 2:
            raise InvalidParameterError(f"active must hold >= 2 arms for without_self; got {s.size}")
        return np.asarray((sub.sum(axis=1) - 0.5) / (s.size - 1), dtype=np.float64)

    def pair_costs(self) -> dict[str, FloatArray]:
        """Per-round regret of playing (i, j), for every metric in :data:`REGRET_METRICS`, as (K, K)."""
        gaps_r = self.reward_gaps
        gaps_p = self.preference_gaps
        reward = gaps_r[:, None] + gaps_r[None, :]  # 2r* − r_i − r_j
        return {
            "reward_regret": reward,
            "reward_regret_avg": reward / 2.0,
            "preference_regret": (gaps_p[:, None] + gaps_p[None, :]) / 2.0,
            "weak_regret": np.minimum(gaps_p[:, None], gaps_p[None, :]),
            "strong_regret": np.maximum(gaps_p[:, None], gaps_p[None, :]),
        }

    def regret_from_pair_counts(self, pair_counts: ArrayLike) -> dict[str, FloatArray]:
        """Regret metrics from pair counts N of shape (..., K, K): Σ_ij N_ij·cost_ij."""
        counts = np.asarray(pair_counts, dtype=np.float64)
        if counts.shape[-2:] != (self.n_arms, self.n_arms):
            raise InvalidParameterError(
                f"pair_counts must have shape (..., {self.n_arms}, {self.n_arms}); got {counts.shape}"
            )
        return {k: np.asarray(np.einsum("...ij,ij->...", counts, c)) for k, c in self.pair_costs().items()}

    # ------------------------------------------------------------------ feedback
    def streams(self, rng: RNGLike, n_trials: int = 1) -> DuelStreams:
        """Per-(trial, unordered pair) feedback streams (see the module docstring).

        Parameters
        ----------
        rng : int, SeedSequence, Generator or None
            The environment stream. Keys are ``generate_state(n_trials·K(K+1)/2)`` in row-major
            (trial, pair) order, so a trial's keys do not depend on how many trials follow it.
        n_trials : int, default 1
        """
        n = check_int(n_trials, "n_trials", minimum=1)
        keys = as_seed_sequence(rng).generate_state(n * self.n_pair_streams, dtype=np.uint64)
        return DuelStreams(self, keys.reshape(n, self.n_pair_streams))

    def sample_wins(self, first: ArrayLike, second: ArrayLike, counts: ArrayLike, rng: RNGLike = None) -> IntArray:
        """Wins of ``first`` in ``counts`` fresh independent duels of each pair (one Binomial each).

        For phased algorithms with no adaptivity inside a phase. Not pull-consistent.
        """
        x = self.check_arms(first, "first")
        y = self.check_arms(second, "second")
        n = np.asarray(counts, dtype=np.int64)
        if n.size and n.min() < 0:
            raise InvalidParameterError(f"counts must be >= 0; got min {int(n.min())}")
        return np.asarray(as_generator(rng).binomial(n, self.preference_matrix[x, y]), dtype=np.int64)

    def outcome_from_uniform(self, first: IntArray, second: IntArray, uniforms: FloatArray) -> IntArray:
        """1 iff ``first`` wins, given the pair stream's uniform: lower index wins iff u < P(lo, hi)."""
        lo = np.minimum(first, second)
        hi = np.maximum(first, second)
        lower_wins = uniforms < self.preference_matrix[lo, hi]
        return np.where(first <= second, lower_wins, ~lower_wins).astype(np.int64)


class DuelStreams:
    """Pull-consistent duel outcomes of one environment for ``n_trials`` trials.

    The k-th duel of the unordered pair {i, j} in trial n reads uniform k of the key of (n, {i, j}).
    :meth:`peek` computes outcomes of a sequence of duels without consuming them; :meth:`advance`
    consumes them (an algorithm that looks ahead over a block of rounds and stops early consumes only
    the rounds it played); :meth:`duel` does both for one duel.

    Attributes
    ----------
    env : UtilityDuelingEnvironment
    keys : ndarray of uint64, shape (n_trials, K(K+1)/2)
    counts : ndarray of int64, shape (n_trials, K(K+1)/2)
        Duels consumed per (trial, pair stream).
    """

    def __init__(self, env: UtilityDuelingEnvironment, keys: np.ndarray) -> None:
        self.env = env
        self.keys = np.asarray(keys, dtype=np.uint64)
        self.keys.setflags(write=False)
        self.n_trials = int(self.keys.shape[0])
        self.counts = np.zeros(self.keys.shape, dtype=np.int64)

    def _check_trial(self, trial: int) -> int:
        return check_int(trial, "trial", minimum=0, maximum=self.n_trials - 1)

    def _ranks(self, pair_ids: IntArray) -> IntArray:
        """Occurrence index of each element among equal earlier elements (0, 1, 2, … per pair)."""
        order = np.argsort(pair_ids, kind="stable")
        sorted_ids = pair_ids[order]
        positions = np.arange(pair_ids.size)
        starts = np.flatnonzero(np.r_[True, sorted_ids[1:] != sorted_ids[:-1]])
        group_start = np.repeat(starts, np.diff(np.r_[starts, pair_ids.size]))
        ranks = np.empty_like(pair_ids)
        ranks[order] = positions - group_start
        return ranks

    def peek(self, first: ArrayLike, second: ArrayLike, trial: int = 0) -> IntArray:
        """Outcomes (1 iff first wins) of the duels (first[s], second[s]) played in this order, unconsumed."""
        n = self._check_trial(trial)
        x = self.env.check_arms(np.atleast_1d(first), "first")
        y = self.env.check_arms(np.atleast_1d(second), "second")
        if x.shape != y.shape or x.ndim != 1:
            raise InvalidParameterError(
                f"first and second must be 1-d of equal length; got shapes {x.shape} and {y.shape}"
            )
        pair_ids = self.env._pair_index[x, y]
        k = self.counts[n, pair_ids] + self._ranks(pair_ids)
        u = counter_uniforms(self.keys[n, pair_ids], k)
        return self.env.outcome_from_uniform(x, y, u)

    def advance(self, first: ArrayLike, second: ArrayLike, trial: int = 0) -> None:
        """Consume the duels (first[s], second[s])."""
        n = self._check_trial(trial)
        x = self.env.check_arms(np.atleast_1d(first), "first")
        y = self.env.check_arms(np.atleast_1d(second), "second")
        pair_ids = self.env._pair_index[x, y]
        self.counts[n] += np.bincount(pair_ids, minlength=self.env.n_pair_streams)

    def duel_trials(self, first: ArrayLike, second: ArrayLike) -> IntArray:
        """Play one duel in every trial at once (``first[n]`` vs ``second[n]`` in trial n) and consume it.

        Returns
        -------
        ndarray of int64, shape (n_trials,)
            1 where ``first`` won.
        """
        x = self.env.check_arms(np.asarray(first), "first")
        y = self.env.check_arms(np.asarray(second), "second")
        if x.shape != (self.n_trials,) or y.shape != (self.n_trials,):
            raise InvalidParameterError(
                f"first and second must have shape ({self.n_trials},); got {x.shape} and {y.shape}"
            )
        trials = np.arange(self.n_trials)
        pair_ids = self.env._pair_index[x, y]
        u = counter_uniforms(self.keys[trials, pair_ids], self.counts[trials, pair_ids])
        self.counts[trials, pair_ids] += 1
        return self.env.outcome_from_uniform(x, y, u)

    def duel(self, first: int, second: int, trial: int = 0) -> int:
        """Play one duel and return 1 iff ``first`` wins."""
        outcome = int(self.peek([first], [second], trial)[0])
        self.advance([first], [second], trial)
        return outcome


# ---------------------------------------------------------------------- nets of the unit ball
def ball_grid_net(dim: int, resolution: float) -> FloatArray:
    """η-net of the unit ball B_d(1) by a projected grid.

    Grid spacing h = 2η/√d; points g ∈ hℤ^d with ‖g‖ <= 1 + η are mapped to g / max(1, ‖g‖),
    deduplicated and sorted lexicographically. Coordinate rounding moves a point by <= h√d/2 = η and
    projection onto the ball is 1-Lipschitz, so every x ∈ B_d(1) is within η of the net.

    Parameters
    ----------
    dim : int
        d >= 1.
    resolution : float
        η in (0, 1].

    Examples
    --------
    >>> from dpbandits.envs.dueling import ball_grid_net
    >>> ball_grid_net(2, 0.2).shape
    (61, 2)
    """
    d = check_int(dim, "dim", minimum=1)
    eta = check_positive_float(resolution, "resolution")
    if eta > 1:
        raise InvalidParameterError(f"resolution must lie in (0, 1]; got {eta!r}")
    h = 2 * eta / math.sqrt(d)  # h = 2η/√d
    m = math.ceil((1 + eta) / h)
    # the (2m + 1)^d grid points are built before those outside the ball are dropped
    check_fits("resolution", eta, 8.0 * d * float(2 * m + 1) ** d, what=f"the η-net's grid of (2m + 1)^{d} points", advice="raise")
    axis = np.arange(-m, m + 1) * h
    grid = np.stack(np.meshgrid(*([axis] * d), indexing="ij"), axis=-1).reshape(-1, d)
    norms = np.linalg.norm(grid, axis=1)
    grid = grid[norms <= 1 + eta]
    projected = grid / np.maximum(1.0, np.linalg.norm(grid, axis=1))[:, None]
    unique = np.unique(np.round(projected, 12), axis=0)
    return np.asarray(unique, dtype=np.float64)


def sphere_net(dim: int, n_points: int, rng: RNGLike = None) -> FloatArray:
    """Practical net of the unit sphere (a labelled practical variant, not the paper's 1/T-net; errata DUEL-14).

    d = 2: M equispaced angles; d = 3: Fibonacci lattice; d >= 4: M seeded Gaussian directions.

    Parameters
    ----------
    dim : int
    n_points : int
        M >= 2.
    rng : int, SeedSequence, Generator or None
        Used only for d >= 4.
    """
    d = check_int(dim, "dim", minimum=2)
    m = check_int(n_points, "n_points", minimum=2)
    if d == 2:
        angles = 2 * np.pi * np.arange(m) / m
        return np.stack([np.cos(angles), np.sin(angles)], axis=1)
    if d == 3:
        i = np.arange(m) + 0.5
        phi = np.arccos(1 - 2 * i / m)  # φ_k = arccos(1 − 2i/M)
        vartheta = np.pi * (1 + math.sqrt(5)) * i  # ϑ_k = π(1 + √5)·i
        return np.stack([np.cos(vartheta) * np.sin(phi), np.sin(vartheta) * np.sin(phi), np.cos(phi)], axis=1)
    directions = as_generator(rng).standard_normal((m, d))
    return np.asarray(directions / np.linalg.norm(directions, axis=1, keepdims=True), dtype=np.float64)


def unit_ball_environment(
    theta: ArrayLike,
    *,
    net: str = "sphere",
    resolution: float = 0.2,
    n_points: int = 32,
    net_seed: int = 0,
    link: str = "logistic",
) -> UtilityDuelingEnvironment:
    """Dueling environment on a net of the unit ball, with regret against the true optimum ‖θ*‖.

    Parameters
    ----------
    theta : array_like (d,)
        θ*.
    net : {"ball", "sphere"}
        ``"ball"``: :func:`ball_grid_net` with ``resolution`` (faithful); ``"sphere"``:
        :func:`sphere_net` with ``n_points`` (practical; labelled so in descriptions).
    resolution, n_points, net_seed, link
        See :func:`ball_grid_net`, :func:`sphere_net` and :class:`UtilityDuelingEnvironment`.
    """
    th = check_array(theta, "theta", ndim=1)
    net = check_one_of(net, "net", ("ball", "sphere"))
    points = ball_grid_net(th.size, resolution) if net == "ball" else sphere_net(th.size, n_points, net_seed)
    # x* = θ*/‖θ*‖ on B_d(1), so r(x*) = ‖θ*‖
    return UtilityDuelingEnvironment(
        points, th, link=link, best_reward=float(np.linalg.norm(th)), name=f"unit-ball[{net}]"
    )


# ---------------------------------------------------------------------- named instances
_F2_FEATURES = [
    (0.4444, 0.1568, 0.3595, -0.1006, 0.7991),
    (0.7263, -0.1100, 0.4606, 0.0682, -0.4935),
    (0.2105, 0.5041, 0.2578, 0.1204, -0.7878),
    (0.5809, -0.4061, -0.6937, 0.1111, -0.0640),
    (-0.5081, 0.4674, -0.0005, 0.2353, -0.6841),
    (-0.1477, -0.8732, 0.0566, 0.4511, -0.0947),
    (-0.5295, -0.6736, 0.5044, -0.0345, -0.1017),
    (-0.5433, -0.5920, 0.3936, -0.1617, -0.4164),
    (-0.5134, 0.1163, -0.6769, -0.1862, -0.4796),
    (-0.5462, -0.1721, -0.4668, -0.3940, -0.5468),
]


_FIXED_SIZES = {"f1": 5, "f2": 10, "f3": 8}


def finite_instance(name: str, n_arms: int | None = None, link: str = "logistic") -> UtilityDuelingEnvironment:
    """The finite instances F1–F4 of the bundled dueling studies.

    Parameters
    ----------
    name : {"f1", "f2", "f3", "f4"}
        F1 "spread" (K = 5), F2 "random sphere" (K = 10, d = 5), F3 "hard circle" (K = 8, d = 2),
        F4 "constant gap" (d = 1, any K >= 2: x_1 = 1, x_i = 0.2).
    n_arms : int, optional
        K for F4 (default 8). F1–F3 have a fixed K: another value is refused, never ignored.
    link : str, default "logistic"

    Examples
    --------
    >>> from dpbandits.envs.dueling import finite_instance
    >>> [round(float(x), 4) for x in finite_instance("f1").preference_gaps]
    [0.0, 0.0987, 0.19, 0.2685, 0.332]
    """
    key = check_one_of(name, "name", ("f1", "f2", "f3", "f4"))
    if key in _FIXED_SIZES and n_arms is not None and check_int(n_arms, "n_arms", minimum=2) != _FIXED_SIZES[key]:
        raise InvalidParameterError(f"n_arms: instance {key.upper()} has a fixed K = {_FIXED_SIZES[key]} arms "
                                    f"(only F4 takes n_arms); got {n_arms!r}")
    if key == "f1":
        features = np.array([[1 - 0.4 * i, 0.0, 0.0] for i in range(5)])
        theta = np.array([1.0, 0.0, 0.0])
    elif key == "f2":
        features = np.array(_F2_FEATURES)
        theta = np.full(5, 0.4472)
    elif key == "f3":
        angles = np.arange(8) * np.pi / 8
        features = np.stack([np.cos(angles), np.sin(angles)], axis=1)
        theta = np.array([1.0, 0.0])
    else:
        k = check_int(8 if n_arms is None else n_arms, "n_arms", minimum=2)
        _check_preference_matrix(k)
        features = np.r_[[1.0], np.full(k - 1, 0.2)][:, None]
        theta = np.array([1.0])
    return UtilityDuelingEnvironment(features, theta, link=link, name=key)


def _make_utility(features: Any, theta: Any, link: str = "logistic") -> UtilityDuelingEnvironment:
    return UtilityDuelingEnvironment(features, theta, link=link, name="utility")


def _make_instance(name: str) -> Callable[..., UtilityDuelingEnvironment]:
    # a partial of a module-level function, not a closure: the runner's process backend pickles it;
    # F1–F3 have a fixed size: their factory takes no n_arms (a study's n_arms is then refused, not ignored)
    return functools.partial(_instance_factory if name == "f4" else _fixed_instance_factory, name)


def _instance_factory(name: str, n_arms: int = 8, link: str = "logistic") -> UtilityDuelingEnvironment:
    return finite_instance(name, n_arms=n_arms, link=link)


def _fixed_instance_factory(name: str, link: str = "logistic") -> UtilityDuelingEnvironment:
    return finite_instance(name, link=link)


register_environment(
    "dueling-utility",
    kind="dueling",
    factory=_make_utility,
    description="utility-based dueling, P(i≻j) = F(θᵀ(x_i − x_j)); params: features, theta, link",
)
for _key, _text in (
    ("f1", "F1 'spread' (K=5)"),
    ("f2", "F2 'random sphere' (K=10, d=5)"),
    ("f3", "F3 'hard circle' (K=8, d=2)"),
    ("f4", "F4 'constant gap' (d=1); params: n_arms"),
):
    register_environment(
        f"dueling-{_key}", kind="dueling", factory=_make_instance(_key), description=f"{_text}; params: link"
    )
register_environment(
    "dueling-unit-ball",
    kind="dueling",
    factory=unit_ball_environment,
    description="net of the unit ball, regret vs ‖θ‖; params: theta, net ('ball'|'sphere'), resolution, n_points",
)
