"""Interleaved Filter 2 (IF2), a classic non-private explore-then-exploit dueling-bandit baseline.

A candidate b̂ (drawn uniformly) duels every remaining arm b ∈ W once per *sweep* (in index order).
After each sweep, with n comparisons per pair since b̂ became candidate, P̂_b the fraction won by b̂
and c = √(ln(1/δ)/n), δ = 1/(T·K²):

* every b with P̂_b − c > ½ (b̂ beats b confidently) leaves W;
* if some b' has P̂_b' + c < ½ (b' beats b̂ confidently), W is pruned of every b with P̂_b > ½
  (the IF2 pruning), b' becomes the candidate (the one with the smallest P̂, lowest index on ties)
  and the estimates restart.

When W is empty the algorithm plays (b̂, b̂) to the end. Within a candidate's phase nothing depends
on the outcomes until the next event, so :func:`simulate_interleaved_filter` evaluates blocks of
sweeps at once (pull-consistent per-pair feedback makes the outcomes of the k-th comparison of each
pair fixed) and agrees exactly with the ask/tell :class:`InterleavedFilter`.

References
----------
Y. Yue, J. Broder, R. Kleinberg, T. Joachims, "The K-armed dueling bandits problem", Journal of
Computer and System Sciences 78(5), 2012, Algorithm 1 (IF1) and §5 (IF2 pruning); expected regret
O(K·log T / Δ) under SST and STI.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from dpbandits._core.errors import PrivacyBudgetExceededError
from dpbandits._core.persistence import Persistable
from dpbandits._core.resources import check_fits
from dpbandits._core.rng import RNGLike
from dpbandits._core.schema import Array, Int, Maybe, StateSchema, Tuple, rule
from dpbandits._core.typing import BoolArray, FloatArray, IntArray
from dpbandits._core.validation import check_int
from dpbandits.algorithms.dueling._common import (
    check_dueling_env,
    check_elimination_horizon,
    check_told,
    elimination_horizon_precheck,
    non_private,
)
from dpbandits.algorithms.dueling._streams import trial_seed_sequences, trial_streams
from dpbandits.algorithms.own_agent import OwnAgent
from dpbandits.algorithms.registry import register_algorithm, register_algorithm_class
from dpbandits.algorithms.sizes import check_pairwise_state
from dpbandits.envs.base import counter_uniforms
from dpbandits.envs.dueling import REGRET_METRICS, DuelStreams, UtilityDuelingEnvironment
from dpbandits.privacy.guarantees import NonPrivate

__all__ = ["InterleavedFilter", "simulate_interleaved_filter"]

_BYTES_PER_ARM = 48.0
"""Lower bound of an agent's memory per arm: the remaining arms as int64 and their wins (16 B) and as a
list of Python ints (8 B pointers, 28 B int objects for ids above 256); refused up front when it cannot fit."""


def _log_inverse_delta(n_arms: int, horizon: int) -> float:
    return math.log(horizon * n_arms * n_arms)  # ln(1/δ), δ = 1/(T·K²)


def _rules(wins: FloatArray, sweeps: FloatArray | float, log_inv_delta: float) -> tuple[BoolArray, BoolArray, FloatArray]:
    """(b̂ beats b confidently, b beats b̂ confidently, P̂) elementwise."""
    estimate = wins / sweeps  # P̂_{b̂,b}
    radius = np.sqrt(log_inv_delta / sweeps)  # c = √(ln(1/δ)/n)
    return estimate - radius > 0.5, estimate + radius < 0.5, estimate


def _initial_candidate(key: np.uint64, n_arms: int) -> int:
    coin = float(counter_uniforms(np.array([key]), np.array([0]))[0])
    return min(int(coin * n_arms), n_arms - 1)


def _after_sweep(
    candidate: int, remaining: IntArray, wins: FloatArray, sweeps: int, log_inv_delta: float
) -> tuple[int, IntArray, FloatArray, bool]:
    """Apply IF2's rules after a sweep; returns (candidate, W, wins, restarted)."""
    beaten, beats, estimate = _rules(wins, float(sweeps), log_inv_delta)
    keep = ~beaten
    remaining, wins, beats, estimate = remaining[keep], wins[keep], beats[keep], estimate[keep]
    if not beats.any():
        return candidate, remaining, wins, False
    challengers = np.flatnonzero(beats)
    winner = int(challengers[np.argmin(estimate[challengers])])
    new_candidate = int(remaining[winner])
    pruned = remaining[(estimate <= 0.5) & (remaining != new_candidate)]  # IF2 pruning
    return new_candidate, pruned, np.zeros(pruned.size), True


def _first_possible_event(log_inv_delta: float) -> int:
    """n₀: the first sweep after which an arm can beat, or be beaten by, the candidate confidently."""
    n = max(int(4.0 * log_inv_delta) - 2, 1)  # c < ½ needs n > 4·ln(1/δ); the rule's own floats decide
    while not _rules(np.array([float(n)]), float(n), log_inv_delta)[0][0]:
        n += 1
    return n


def _no_event_pending(agent: InterleavedFilter, state: dict[str, Any]) -> bool:
    """Whether no arm of ``remaining`` crossed a rule at the last completed sweep (see the schema)."""
    wins, sweeps, position = state["_wins"], state["_sweeps"], state["_position"]
    if sweeps == 0 or wins.size == 0:
        return True
    met = np.arange(wins.size) < position  # already duelled in the current sweep: one outcome more

    def quiet(counts: FloatArray) -> BoolArray:
        beaten, beats, _ = _rules(counts, float(sweeps), agent._log_inv_delta)
        return np.asarray(~beaten & ~beats & (counts <= sweeps))

    return bool(np.all(quiet(wins) | (met & (wins >= 1) & quiet(wins - 1.0))))


def _time_reachable(agent: InterleavedFilter, state: dict[str, Any]) -> bool:
    """Whether ``time`` is the length of some run to this state (see the schema's rule)."""
    k, width = agent.n_arms, state["remaining"].size
    sweeps, position, time = state["_sweeps"], state["_position"], state["time"]
    current = sweeps * width + position  # the rounds of the current candidate's sweeps with today's arms
    first = state.get("_first")
    if first is not None and first != state["candidate"] and first in state["remaining"]:
        return False  # a former candidate never returns to the remaining arms
    left = k - 1 - width  # arms that left (eliminated, pruned, or former candidates)
    if left == 0:  # nothing left: no sweep acted, and this is the first candidate's first phase
        return time == current
    n0 = _first_possible_event(agent._log_inv_delta)
    if first is None:  # an older file: the weakest history (each arm that left took n₀ sweeps at least)
        return time >= current + left * n0
    if state["candidate"] != first:  # restarted: the first candidate's n₀ sweeps at least came before
        return time >= current + n0 * (k - 1)
    # the only phase: each arm that left took n₀ ... _sweeps sweeps
    if sweeps < n0:
        return False
    return time >= current + left * n0 and (width == 0 or time <= sweeps * (k - 1) + position)


def _last_arm(agent: InterleavedFilter) -> int:
    return agent.n_arms - 1


@register_algorithm_class("interleaved-filter")
class InterleavedFilter(OwnAgent, Persistable):
    """Ask/tell Interleaved Filter 2 agent (non-private).

    Parameters
    ----------
    n_arms : int
        K >= 2.
    horizon : int
        T (sets δ = 1/(T·K²)).
    rng : int, SeedSequence, Generator or None
        The trial's seed (its algorithm stream draws the first candidate).

    Privacy
    -------
    None: a non-private baseline.

    References
    ----------
    Yue et al. (2012), Algorithm 1 with the IF2 pruning.

    Examples
    --------
    >>> from dpbandits.algorithms.dueling.interleaved_filter import InterleavedFilter
    >>> agent = InterleavedFilter(4, horizon=100, rng=0)
    >>> agent.tell(agent.ask(), first_wins=True)
    """

    _schema = StateSchema(
        candidate=Int(0, _last_arm),
        remaining=Array("int64", (None,), low=0, high=_last_arm),
        _wins=Array("float64", (None,), low=0, high="horizon", integral=True),
        _sweeps=Int(0, "horizon"),
        _position=Int(0, "n_arms"),
        time=Int(0, "horizon"),
        _asked=Maybe(Tuple(Int(0, _last_arm), Int(0, _last_arm))),
        _first=Maybe(Int(0, _last_arm)),
        rules=[rule("remaining: distinct arms other than candidate, in index order (a sweep's order), one win count "
                    "each, _position < their number (or 0), _wins <= _sweeps (+1 for the arms already met in the "
                    "current sweep) and _sweeps <= time",
                    lambda f, s: len(set(s["remaining"].tolist()) | {s["candidate"]}) == s["remaining"].size + 1
                    and bool(np.all(np.diff(s["remaining"]) > 0))
                    and s["_wins"].shape == s["remaining"].shape
                    and s["_position"] <= max(s["remaining"].size - 1, 0)
                    and (s["_wins"] <= s["_sweeps"] + (np.arange(s["_wins"].size) < s["_position"])).all()
                    and s["_sweeps"] * s["remaining"].size + s["_position"] <= s["time"]),
               rule("_wins: after _sweeps sweeps no remaining arm beats or is beaten by candidate confidently (the "
                    "filter would have acted at that sweep)", lambda f, s: _no_event_pending(f, s)),
               rule("time: the rounds of the sweeps since the first candidate: exactly _sweeps·(n_arms − 1) + "
                    "_position while no arm has left, at least n₀ sweeps (the first sweep at which the filter can "
                    "act) of each arm that left (of all n_arms − 1 once the candidate is not _first, the first "
                    "candidate), and at most _sweeps·(n_arms − 1) + _position while _first is the candidate and "
                    "arms remain; a former _first is not among the remaining arms", lambda f, s: _time_reachable(f, s))],
        optional=("_first",),  # files saved before it was stored: the rule assumes the weakest history
    )
    """Beyond the rules, every state that passes them is reached by some sequence of outcomes: after n
    sweeps an arm's win count lies in [n/2 − √(n·ln(1/δ)), n/2 + √(n·ln(1/δ))] ∩ [0, n], whose lower
    end rises by less than one per sweep and whose upper end rises by less than one wherever it is
    below n, so every count inside it after ``_sweeps`` sweeps is reached by a path that stays
    inside it at every earlier sweep; ``_first``, the first candidate (drawn from the coins), is any
    arm for some seed, and a state whose candidate is still ``_first`` has never restarted (a former
    candidate never returns to ``remaining``)."""

    def __init__(self, n_arms: int, horizon: int, *, rng: RNGLike = None) -> None:
        self.n_arms = check_int(n_arms, "n_arms", minimum=2)
        check_fits("n_arms", self.n_arms, _BYTES_PER_ARM * self.n_arms, what="interleaved-filter's remaining arms")
        self.horizon = check_int(horizon, "horizon", minimum=1)
        self._log_inv_delta = _log_inverse_delta(self.n_arms, self.horizon)
        self.candidate = _initial_candidate(trial_streams(rng).algorithm_key, self.n_arms)
        self.remaining = np.array([a for a in range(self.n_arms) if a != self.candidate], dtype=np.int64)
        self._wins = np.zeros(self.remaining.size)
        self._sweeps = 0
        self._position = 0
        self.time = 0
        self._asked: tuple[int, int] | None = None
        self._first: int | None = self.candidate  # the first candidate: while it is the candidate, the filter never restarted
        self._remaining_list: list[int] = self.remaining.tolist()  # W as Python ints (asked every round)

    def _set_state(self, state: dict[str, Any]) -> None:
        super()._set_state(state)
        if state.get("_first") is None:  # an older file: a candidate with every other arm remaining never restarted
            self._first = self.candidate if self.remaining.size == self.n_arms - 1 else None
        self._remaining_list = self.remaining.tolist()

    @property
    def exploiting(self) -> bool:
        """Whether W is empty (the agent plays (b̂, b̂) from now on)."""
        return bool(self.remaining.size == 0)

    @property
    def privacy(self) -> NonPrivate:
        """None: a non-private comparator (:class:`~dpbandits.privacy.guarantees.NonPrivate`)."""
        return non_private("Interleaved Filter")

    @property
    def recommendation(self) -> int:
        """The current candidate (the arm named best once the filter has run)."""
        return int(self.candidate)

    def ask(self) -> tuple[int, int]:
        """Return the next pair (b̂, b)."""
        if self._asked is not None:
            return self._asked
        if self.time >= self.horizon:
            raise PrivacyBudgetExceededError(f"horizon={self.horizon} rounds were played")
        opponent = self.candidate if self.exploiting else self._remaining_list[self._position]
        self._asked = (self.candidate, opponent)
        return self._asked

    def tell(self, pair: tuple[int, int], winner: int | None = None, *, first_wins: int | bool | None = None) -> None:
        """Record the outcome: ``winner`` is the arm that won, or ``first_wins`` is True iff ``pair[0]`` won.

        See :meth:`DPEBSElimination.tell <dpbandits.algorithms.dueling.dp_ebs_elimination.DPEBSElimination.tell>`.
        """
        _, outcome = check_told(self._asked, pair, winner, first_wins)
        self._asked = None
        self.time += 1
        if self.exploiting:
            return
        self._wins[self._position] += outcome
        self._position += 1
        if self._position < self.remaining.size:
            return
        self._position = 0
        self._sweeps += 1
        self.candidate, self.remaining, self._wins, restarted = _after_sweep(
            self.candidate, self.remaining, self._wins, self._sweeps, self._log_inv_delta
        )
        if restarted:
            self._sweeps = 0
        self._remaining_list = self.remaining.tolist()


def _run_trial(
    env: UtilityDuelingEnvironment, feedback: DuelStreams, key: np.uint64, horizon: int, block: int
) -> tuple[IntArray, int]:
    k = env.n_arms
    log_inv_delta = _log_inverse_delta(k, horizon)
    candidate = _initial_candidate(key, k)
    remaining = np.array([a for a in range(k) if a != candidate], dtype=np.int64)
    wins = np.zeros(remaining.size)
    sweeps, t = 0, 0
    pair_counts = np.zeros(k * k, dtype=np.int64)
    while t < horizon:
        w = remaining.size
        if w == 0:
            pair_counts[candidate * k + candidate] += horizon - t
            break
        full = (horizon - t) // w
        if full == 0:  # the horizon ends inside a sweep
            opponents = remaining[: horizon - t]
            feedback.advance(np.full(opponents.size, candidate), opponents)
            pair_counts[candidate * k + opponents] += 1
            break
        n_sweeps = min(block, full)
        opponents = np.tile(remaining, n_sweeps)
        outcome = feedback.peek(np.full(opponents.size, candidate), opponents).reshape(n_sweeps, w)
        cumulative = wins[None, :] + np.cumsum(outcome, axis=0)
        counts = sweeps + np.arange(1, n_sweeps + 1, dtype=np.float64)[:, None]
        beaten, beats, _ = _rules(cumulative, counts, log_inv_delta)
        events = np.flatnonzero((beaten | beats).any(axis=1))
        done = int(events[0]) + 1 if events.size else n_sweeps
        played = opponents[: done * w]
        feedback.advance(np.full(played.size, candidate), played)
        pair_counts += np.bincount(candidate * k + played, minlength=k * k)
        t += done * w
        sweeps += done
        wins = cumulative[done - 1].copy()
        if events.size:
            candidate, remaining, wins, restarted = _after_sweep(candidate, remaining, wins, sweeps, log_inv_delta)
            if restarted:
                sweeps = 0
    return pair_counts.reshape(k, k), candidate


@register_algorithm(
    "interleaved-filter",
    precheck=functools.partial(elimination_horizon_precheck, algorithm="interleaved-filter"),
    family="dueling",
    privacy="none (non-private)",
    metrics=(*REGRET_METRICS, "identified_best"),
    proportion_metrics=("identified_best",),
    environments=("dueling-f1", "dueling-f2", "dueling-f3", "dueling-f4", "dueling-utility", "dueling-unit-ball"),
)
def simulate_interleaved_filter(
    env: UtilityDuelingEnvironment,
    *,
    n_trials: int,
    rng: RNGLike,
    horizon: int,
    block: int = 4096,
) -> Mapping[str, FloatArray]:
    """Interleaved Filter 2 (Yue et al. 2012), simulated by blocks of sweeps per trial.

    Parameters
    ----------
    env : UtilityDuelingEnvironment
    n_trials : int
    rng : int, SeedSequence, Generator or None
        Trial k uses ``trial_seed_sequences(rng, n_trials)[k]``.
    horizon : int
        T.
    block : int, default 4096
        Largest number of sweeps evaluated at once.

    Returns
    -------
    dict of str to ndarray (n_trials,)
        Regret metrics and ``identified_best`` (the final candidate is the best arm).

    Privacy
    -------
    None: a non-private baseline.

    References
    ----------
    Yue et al. (2012), Algorithm 1 and §5 (IF2), expected regret O(K·log T/Δ).
    """
    check_pairwise_state("interleaved-filter", check_dueling_env(env).n_arms, n_trials)
    check_elimination_horizon(horizon, env.n_arms, "interleaved-filter")
    n = check_int(n_trials, "n_trials", minimum=1)
    horizon = check_int(horizon, "horizon", minimum=1)
    size = check_int(block, "block", minimum=1)
    pair_counts = np.zeros((n, env.n_arms, env.n_arms))
    identified = np.zeros(n)
    for trial, seq in enumerate(trial_seed_sequences(rng, n)):
        parts = trial_streams(seq)
        counts, candidate = _run_trial(env, env.streams(parts.environment, 1), parts.algorithm_key, horizon, size)
        pair_counts[trial] = counts
        identified[trial] = float(candidate == env.best_arm)
    return {**env.regret_from_pair_counts(pair_counts), "identified_best": identified}
