"""DP-EBS-Elimination: ε-DP dueling bandits on K arms by Effective-Borda-Score elimination.

Every round the left arm x_t goes round-robin over the active set A and the right arm y_t is drawn
uniformly from A (or A without x_t). The left-arm wins w_i of each active arm against currently
active opponents feed one binary-tree counter per arm; the noisy counts w̃_i give noisy effective
Borda scores b̃_i = w̃_i / n_i (n_i = retained left plays, data-free). An arm whose upper bound falls
below another arm's lower bound is eliminated; the statistics of eliminated opponents are removed
from every surviving counter through the counter's own stream (a subtraction element at the next
round); with one arm left the algorithm commits to (a, a).

The paper's formulas were lost in conversion; this module follows the reconstruction of
the paper errata DUEL-3 to DUEL-8 and DUEL-26.

Constants for K arms, horizon T, failure probability δ (default 1/T):

    L_T = ⌊log₂T⌋ + 1,  ε_c = ε/4 ("quarter", default) or ε/2 ("half"),
    λ = ln(4K²T/δ)  ("paper")   or   ln(4K·2^K·T/δ)  ("rigorous": union over all active sets),
    β = δ/(2KT),  B = B_tree(T, ε_c, β)  (CSS bound by default; 0 when ε = ∞),
    wid(n) = √(λ/(2n)) + B/n,  wid(0) = ∞.

Two forms that agree exactly (same pairs, same eliminations) given the same seeds:
:class:`DPEBSElimination` (ask/tell, one round at a time) and :func:`simulate_dp_ebs_elimination`
(vectorised over blocks of rounds: within a block the active set is fixed, so pairs, outcomes,
counter releases and bounds of every round are array operations; a block is cut at the first round
with an elimination and the next block starts after it).
"""

from __future__ import annotations

import bisect
import math
from typing import Any

import numpy as np

from dpbandits._core.errors import PrivacyBudgetExceededError
from dpbandits._core.persistence import Persistable
from dpbandits._core.resources import check_fits
from dpbandits._core.rng import RNGLike
from dpbandits._core.schema import (
    Array,
    Int,
    ListOf,
    MappingOf,
    Maybe,
    Nested,
    Record,
    StateSchema,
    Tuple,
    rule,
)
from dpbandits._core.validation import (
    check_int,
)
from dpbandits.algorithms.dueling import _ebs_replay as replay
from dpbandits.algorithms.dueling._common import (
    check_told,
)
from dpbandits.algorithms.dueling._ebs_rules import REFERENCE as REFERENCE
from dpbandits.algorithms.dueling._ebs_rules import STATS_REMOVAL as STATS_REMOVAL
from dpbandits.algorithms.dueling._ebs_rules import (
    EBSConstants,
    _check_options,
    _opponents,
    _scalar_width,
    dp_ebs_guarantee,
    ebs_confidence_bounds,
    ebs_constants,
    ebs_widths,
)
from dpbandits.algorithms.dueling._ebs_simulation import SIMULATION_METRICS as SIMULATION_METRICS
from dpbandits.algorithms.dueling._ebs_simulation import run_trial as run_trial
from dpbandits.algorithms.dueling._ebs_simulation import simulate_dp_ebs_elimination, simulate_ebs_elimination
from dpbandits.algorithms.dueling._streams import fresh_seed_sequence, trial_streams
from dpbandits.algorithms.own_agent import OwnAgent
from dpbandits.algorithms.registry import register_algorithm_class
from dpbandits.envs.base import counter_uniform
from dpbandits.privacy.accounting import Accountant, spend
from dpbandits.privacy.counters import (
    BinaryTreeCounterBank,
)
from dpbandits.privacy.guarantees import PureDP
from dpbandits.privacy.noise import NoiseBackend, NumpyNoise

__all__ = [
    "DPEBSElimination",
    "EBSConstants",
    "dp_ebs_guarantee",
    "ebs_confidence_bounds",
    "ebs_constants",
    "ebs_widths",
    "simulate_dp_ebs_elimination",
    "simulate_ebs_elimination",
]


def _arms(agent: DPEBSElimination) -> int:
    return int(agent.constants.n_arms)


def _rounds_counted(agent: DPEBSElimination, s: dict[str, Any]) -> int:
    """Rounds whose duels the statistics hold: since the last restart, until one arm was left."""
    rounds = s["elimination_rounds"]
    last = max(rounds.values(), default=0)
    end = last if len(rounds) == agent.constants.n_arms - 1 else s["time"]
    return int(end - (last if agent.stats_removal == "restart" else 0))


def _pairs_replayed(agent: DPEBSElimination, s: dict[str, Any]) -> bool:
    """Whether ``_pair_counts`` and the transcript's rounds and pairs are the replay of the public coins."""
    rounds = s["elimination_rounds"]
    k, last = agent.constants.n_arms, max(rounds.values(), default=0)
    end = last if len(rounds) == k - 1 else s["time"]
    start = last if agent.stats_removal == "restart" else 0
    transcript = s["transcript"]
    if agent.record_transcript and len(transcript) != end:
        return False
    counts = np.zeros(k * k, dtype=np.int64)
    for times, left, right in replay.replayed_pairs(int(s["_key"]), k, rounds, end, agent.opponent, _opponents):
        kept = times > start
        counts += np.bincount(left[kept] * k + right[kept], minlength=k * k)
        for t, x, y in zip(times.tolist(), left.tolist(), right.tolist(), strict=True) if transcript else ():
            entry = transcript[t - 1]
            if entry["round"] != t or tuple(entry["pair"]) != (x, y):
                return False
    return np.array_equal(counts.reshape(k, k), s["_pair_counts"])


def _counters_hold_the_wins(agent: DPEBSElimination, s: dict[str, Any]) -> bool:
    """Whether each active arm's counter sums its wins as left against the active arms (+ pending)."""
    rounds, active = s["elimination_rounds"], s["_active"]
    nodes = s["_counters"]._nodes
    total = np.sum([node[1] for node in nodes], axis=0)
    wins = replay.left_counts(s["_pair_wins"], rounds) + replay.pending(s["_pair_wins"], rounds, s["time"])
    return bool(np.array_equal(total[active], wins[active]))


def _last_arm(agent: DPEBSElimination) -> int:
    return int(agent.constants.n_arms) - 1


def _horizon(agent: DPEBSElimination) -> int:
    return int(agent.constants.horizon)


@register_algorithm_class("dp-ebs-elimination", non_private="ebs-elimination")
class DPEBSElimination(OwnAgent, Persistable):
    """Ask/tell DP-EBS-Elimination agent.

    Parameters
    ----------
    n_arms : int
        K >= 2.
    horizon : int
        T >= 1 (sets the tree depth and the confidence).
    epsilon : float
        ε > 0, or ``inf`` for the non-private twin (same code path, exact counters, B = 0).
    failure_probability : float, optional
        δ of the good event (default 1/T); not a DP parameter: the guarantee is pure ε-DP.
    opponent : {"with_self", "without_self"}, default "with_self"
        Whether the random right arm may equal the left arm.
    counter_epsilon : {"quarter", "half", "whole"}, default "quarter"
        ε_c = ε/4, ε/2 or (restart only) ε per counter (see :func:`dp_ebs_guarantee`).
    tree_bound : {"css", "union"}, default "css"
    union_bound : {"paper", "rigorous"}, default "paper"
    conf_scale : float, default 1.0
        Multiplier of the confidence widths. Change it only for privacy audits (privacy does not
        depend on the widths; regret guarantees do).
    stats_removal : {"subtract", "restart"}, default "subtract"
        Subtract eliminated opponents' wins through the counters' streams (the paper), or, as an
        ablation, restart every surviving counter (fresh tree, fresh noise, counts and
        wins discarded) at each elimination. Restarted counters take their node noise from the next
        children spawned from the trial's noise stream.
    check_every : int, default 1
        Screen for eliminations only in rounds t with t ≡ 0 (mod ``check_every``) (ablation; the
        paper screens every round). The counters still release every round.
    rng : int, SeedSequence, Generator or None
        The trial's seed; split as in :mod:`dpbandits.algorithms.dueling._streams` (the environment
        child is not used by the agent). It seeds the opponents' coins; the counters' privacy noise
        only with ``insecure_seeded_noise=True``.
    noise_backend : NoiseBackend, optional
        Source of the counters' noise; default the secure OpenDP backend (exact discrete Laplace,
        one call per round for all live counters).
    insecure_seeded_noise : bool, default False
        Seed the counters' noise from ``rng`` (one NumPy stream per counter, so the agent reproduces
        the vectorised simulation exactly). Simulation only: not private in deployment; warns.
    accountant : Accountant, optional
        Records the run's guarantee before any noise is drawn (an over-budget run raises
        :class:`PrivacyBudgetExceededError` at construction). A saved agent loaded under another
        ledger (``load(path, accountant=)``) pays the rest of its run there.
    record_transcript : bool, default False
        Keep, per round, the counters' released values and (for audits only, it is raw data) their
        stream elements.

    Attributes
    ----------
    privacy : PureDP
        ε-DP for one preference label.
    active_arms : list of int
        The current active set A (sorted).
    elimination_rounds : dict
        Arm -> round at which it was eliminated.

    Privacy
    -------
    Pure ε-DP (central model) for one round's preference feedback (the user's whole response
    function), with the pairs played, eliminations and recommendation as output: each user changes
    <= 2 elements, by <= 1, of one arm's binary-tree counter.

    References
    ----------
    A. Saha and H. Asi, "DP-Dueling: Learning from Preference Feedback without Compromising User
    Privacy", arXiv:2403.15045 (2024), Algorithm 1, Lemma 2 (privacy), Theorem 1 (regret
    O(Σ_i log(KT)/Δ_i + K·polylog(T)/ε)). Constants reconstructed in errata DUEL-6: the elimination rule
    UCB_i < max_j LCB_j with wid(n) = √(λ/(2n)) + B/n.

    Examples
    --------
    >>> from dpbandits.algorithms.dueling.dp_ebs_elimination import DPEBSElimination
    >>> agent = DPEBSElimination(3, horizon=100, epsilon=1.0, rng=0)
    >>> pair = agent.ask()
    >>> agent.tell(pair, first_wins=True)
    >>> agent.time
    1
    """

    _schema = StateSchema(
        _key=Int(0, 2**64 - 1),
        _counters=Nested("_counters"),
        _active=Array("int64", (None,), low=0, high=_last_arm),
        _released=Array("int64", (_arms,)),
        _pair_counts=Array("int64", (_arms, _arms), low=0, high=_horizon),
        _pair_wins=Array("int64", (_arms, _arms), low=0, high=_horizon),
        elimination_rounds=MappingOf(Int(0, _last_arm), Int(0, _horizon), max_length=_arms),
        time=Int(0, _horizon),
        _asked=Maybe(Tuple(Int(0, _last_arm), Int(0, _last_arm))),
        transcript=ListOf(Record(round=Int(1, _horizon), pair=Tuple(Int(0, _last_arm), Int(0, _last_arm)),
                                 released=MappingOf(Int(0, _last_arm), Int(), max_length=_arms),
                                 stream_elements=MappingOf(Int(0, _last_arm), Int(), max_length=_arms)),
                          max_length=_horizon),
        rules=[rule("_active: distinct sorted arms, at least one; eliminated arms are the others",
                    lambda a, s: s["_active"].size >= 1 and (np.diff(s["_active"]) > 0).all()
                    and set(s["elimination_rounds"]).isdisjoint(s["_active"].tolist())
                    and len(s["elimination_rounds"]) + s["_active"].size == a.constants.n_arms),
               rule("eliminations at screened rounds (multiples of check_every) <= time",
                    lambda a, s: all(1 <= v <= s["time"] and v % a.check_every == 0
                                     for v in s["elimination_rounds"].values())),
               rule("sum(_pair_counts) = the rounds fed to _counters = the rounds played since the last restart "
                    "(stats_removal='restart') until one arm was left",
                    lambda a, s: int(s["_pair_counts"].sum()) == s["_counters"].time == _rounds_counted(a, s)),
               rule("_pair_wins <= _pair_counts", lambda a, s: (s["_pair_wins"] <= s["_pair_counts"]).all()),
               rule("_pair_counts (and a transcript's rounds and pairs) the pairs of the rounds since the last "
                    "restart until one arm was left, replayed from _key, the round robin and elimination_rounds",
                    _pairs_replayed),
               rule("the exact sum of each active arm's counter = its wins as left against the arms not "
                    "eliminated before it, with the subtraction pending", _counters_hold_the_wins),
               rule("_released equal to the releases of _counters (the values the screen reads are released values)",
                    lambda a, s: np.array_equal(s["_released"], s["_counters"]._released)),
               rule("a transcript only when record_transcript, at most one entry per round",
                    lambda a, s: (a.record_transcript or not s["transcript"]) and len(s["transcript"]) <= s["time"]),
               ],
        # recomputed from the pair tables, the elimination rounds and the time (see _ebs_replay)
        derived=("_pointer", "_left_counts", "_pending", "_restarts"),
    )

    def __init__(
        self,
        n_arms: int,
        horizon: int,
        epsilon: float,
        *,
        failure_probability: float | None = None,
        opponent: str = "with_self",
        counter_epsilon: str = "quarter",
        tree_bound: str = "css",
        union_bound: str = "paper",
        conf_scale: float = 1.0,
        stats_removal: str = "subtract",
        check_every: int = 1,
        rng: RNGLike = None,
        noise_backend: NoiseBackend | None = None,
        insecure_seeded_noise: bool = False,
        record_transcript: bool = False,
        accountant: Accountant | None = None,
    ) -> None:
        k = check_int(n_arms, "n_arms", minimum=2)
        check_fits("n_arms", k, 16.0 * k * k, what="DP-EBS-Elimination's K×K pair counts and wins (int64)")
        self.constants = ebs_constants(
            n_arms, horizon, epsilon, failure_probability, counter_epsilon=counter_epsilon,
            tree_bound=tree_bound, union_bound=union_bound, stats_removal=stats_removal,
        )
        self.opponent, self.conf_scale, self.check_every = _check_options(opponent, conf_scale, check_every)
        self.counter_epsilon_rule = counter_epsilon
        self.stats_removal = stats_removal
        if math.isfinite(self.privacy.epsilon):
            # the whole run is one ε-DP release, spent before any noise, with the lineage that a load
            # under the same ledger recognises (it then does not pay again)
            spend(accountant, self.privacy, label=type(self).__name__, lineage=self.lineage)
        k = self.constants.n_arms
        streams = trial_streams(rng)
        self._key = streams.algorithm_key
        self._noise_seed = streams.noise
        self._noise_backend = noise_backend
        self._insecure_seeded_noise = bool(insecure_seeded_noise)
        self._restarts = 0  # counter generations started after the first (stats_removal="restart")
        self._counters = self._new_counters()
        self._active = np.arange(k, dtype=np.int64)
        self._pointer = -1
        self._left_counts = np.zeros(k, dtype=np.int64)  # n_i
        self._pending = np.zeros(k, dtype=np.int64)  # subtraction entering counter i at the next round
        self._released = np.zeros(k, dtype=np.int64)  # w̃_i (exact integer releases)
        self._pair_counts = np.zeros((k, k), dtype=np.int64)  # N_ik
        self._pair_wins = np.zeros((k, k), dtype=np.int64)  # W_ik
        self._derive_step_state()
        self.elimination_rounds: dict[int, int] = {}
        self.time = 0
        self._asked: tuple[int, int] | None = None
        self.record_transcript = bool(record_transcript)
        self.transcript: list[dict[str, Any]] = []
        self._flip_probability = 0.0  # > 0 only in the local-DP baseline (reports are randomised)

    _charges_run = True  # the run's guarantee is spent when built, and when loaded under another ledger

    def _run_finished(self) -> bool:
        return self.time >= self.constants.horizon

    def _derive_step_state(self) -> None:
        """Derive the per-step caches from the saved state.

        The active set as a list, wid(n_i) per arm, and whether some active arm is unplayed (n_i = 0).
        """
        self._active_list: list[int] = self._active.tolist()
        self._widths = ebs_widths(self._left_counts, self.constants, self.conf_scale)
        self._unplayed = bool((self._left_counts[self._active] == 0).any())

    def _set_state(self, state: dict[str, Any]) -> None:
        super()._set_state(state)
        k, rounds = self.constants.n_arms, self.elimination_rounds
        self._pointer = replay.pointer(k, rounds, self.time)
        self._left_counts = replay.left_counts(self._pair_counts, rounds)
        self._pending = replay.pending(self._pair_wins, rounds, self.time)
        self._restarts = replay.restarts(rounds, self.stats_removal)
        self._derive_step_state()

    def _counter_epsilon(self) -> float:
        """ε_c given to every counter (a test's broken variant overrides this, never the library)."""
        return self.constants.counter_epsilon

    def _new_counters(self) -> BinaryTreeCounterBank:
        """One fresh counter per arm (generation g = number of restarts so far).

        With ``insecure_seeded_noise`` counter i of generation g draws from child g·K + i of the
        trial's noise stream (as the simulation's successive ``spawn(K)`` calls); a saved and loaded
        agent rebuilds the same children from ``_restarts``.
        """
        k = self.constants.n_arms
        backend: NoiseBackend | list[NoiseBackend] | None = self._noise_backend
        if self._insecure_seeded_noise and backend is None:  # one stream per counter, as TreeNoiseTable
            children = fresh_seed_sequence(self._noise_seed).spawn((self._restarts + 1) * k)[self._restarts * k:]
            backend = [NumpyNoise(child) for child in children]
        # each counter's stream: win indicators minus removed wins, integers with Δ = 1
        return BinaryTreeCounterBank(k, self.constants.horizon, self._counter_epsilon(), integer=True,
                                     backend=backend, insecure_seeded_noise=self._insecure_seeded_noise)

    @property
    def privacy(self) -> PureDP:
        """The guarantee (see :func:`dp_ebs_guarantee`)."""
        return dp_ebs_guarantee(self.constants.epsilon, self.counter_epsilon_rule, self.stats_removal)

    @property
    def active_arms(self) -> list[int]:
        """The active set A."""
        return [int(a) for a in self._active]

    @property
    def committed(self) -> bool:
        """Whether one arm is left (the agent plays (a, a) from now on)."""
        return bool(self._active.size == 1)

    @property
    def recommendation(self) -> int:
        """The committed arm, else the active arm of largest noisy EBS (lowest index on ties)."""
        if self.committed:
            return int(self._active[0])
        n = self._left_counts[self._active]
        with np.errstate(divide="ignore", invalid="ignore"):
            scores = np.where(n > 0, self._released[self._active] / n, -np.inf)
        return int(self._active[int(np.argmax(scores))])

    def ask(self) -> tuple[int, int]:
        """Return the next pair (x_t, y_t); asking again before ``tell`` returns the same pair."""
        if self._asked is not None:
            return self._asked
        t = self.time + 1
        if t > self.constants.horizon:
            raise PrivacyBudgetExceededError(
                f"horizon={self.constants.horizon} rounds were played; round {t} is beyond the horizon"
            )
        if self.committed:
            arm = int(self._active[0])
            self._asked = (arm, arm)
            return self._asked
        active = self._active_list
        m = len(active)
        left_index = bisect.bisect_right(active, self._pointer) % m  # next active arm after x_{t−1}
        coin = counter_uniform(int(self._key), t)  # the same number as the simulation's counter_uniforms
        # y_t ~ Unif(A) or Unif(A without x_t), as _opponents computes it
        if self.opponent == "with_self":
            right = active[min(int(coin * m), m - 1)]
        else:
            j = min(int(coin * (m - 1)), m - 2)
            right = active[j + (j >= left_index)]
        self._asked = (active[left_index], right)
        return self._asked

    def scheduled(self, limit: int | None = None) -> list[tuple[int, int]]:
        """The pairs known before the next feedback, in order; ``ask()`` is the first.

        ``[ask()]`` (each round may eliminate arms), the committed self-duel up to the horizon (at
        most ``limit`` of them) once one arm is left, ``[]`` after the horizon.
        """
        left = self.constants.horizon - self.time
        if limit is not None:
            left = min(left, max(int(limit), 0))
        if left <= 0:
            return []
        return [self.ask()] * (left if self.committed else 1)

    def tell(self, pair: tuple[int, int], winner: int | None = None, *, first_wins: int | bool | None = None) -> None:
        """Record the outcome of the asked pair.

        Parameters
        ----------
        pair : (int, int)
            The pair returned by the last :meth:`ask`.
        winner : int, optional
            The arm that won (one of ``pair``).
        first_wins : bool, optional
            Instead of ``winner``: True iff ``pair[0]`` won; needed for a self-duel (i, i), whose
            winning arm does not say which side won.

        Raises
        ------
        InvalidActionError
            If ``pair`` is not the pair returned by the last :meth:`ask`.
        InvalidParameterError
            If not exactly one of ``winner`` and ``first_wins`` is given, or it is not valid
            (see :func:`dpbandits.algorithms.dueling._common.check_told`).
        """
        told, outcome = check_told(self._asked, pair, winner, first_wins)
        left, right = told
        self._asked = None
        self.time += 1
        if self.committed:
            return
        self._pointer = left
        self._pair_counts[left, right] += 1
        self._pair_wins[left, right] += outcome
        self._left_counts[left] += 1
        self._widths[left] = _scalar_width(int(self._left_counts[left]), self.constants, self.conf_scale)
        # v_i = o_t·1[i = x_t] − pending_i for every live counter (retired ones ignore theirs)
        elements = -self._pending
        self._pending[:] = 0
        elements[left] += outcome
        self._released = self._counters.update(elements)
        if self.record_transcript:
            self.transcript.append({
                "round": self.time,
                "pair": (left, right),
                "released": {int(i): int(self._released[i]) for i in self._active},
                "stream_elements": {int(i): int(elements[i]) for i in self._active},
            })
        if self.time % self.check_every == 0:
            self._screen()

    def _screen(self) -> None:
        """Eliminate every arm whose UCB is below the largest LCB; remove their statistics."""
        active = self._active
        whole = active.size == self.constants.n_arms  # no elimination yet: no gather needed
        released = self._released if whole else self._released[active]
        counts = self._left_counts if whole else self._left_counts[active]
        if self._unplayed:  # some active arm has n = 0 (the first rounds): bounds ±∞ there
            self._unplayed = bool((counts == 0).any())
            upper, lower = ebs_confidence_bounds(released, counts, self.constants, self.conf_scale,
                                                 flip_probability=self._flip_probability)
        else:  # the same floating-point numbers as ebs_confidence_bounds, widths kept per arm
            estimate = released / counts  # b̃_i = w̃_i / n_i
            if self._flip_probability:
                estimate = (estimate - self._flip_probability) / (1.0 - 2.0 * self._flip_probability)
            widths = self._widths if whole else self._widths[active]
            upper, lower = estimate + widths, estimate - widths
        below = upper < lower.max()
        if not below.any():
            return
        eliminated = active[below]
        self._active = active[~below]
        self._active_list = self._active.tolist()
        for arm in eliminated:
            self.elimination_rounds[int(arm)] = self.time
        if self.stats_removal == "restart":  # fresh counters; every statistic is discarded
            self._restarts += 1
            self._counters = self._new_counters()
            self._counters.retire(np.setdiff1d(np.arange(self.constants.n_arms), self._active))
            for table in (self._left_counts, self._pending, self._released, self._pair_counts, self._pair_wins):
                table[...] = 0
            self._widths = ebs_widths(self._left_counts, self.constants, self.conf_scale)
            self._unplayed = True
            return
        self._counters.retire(eliminated)
        survivors = self._active
        self._pending[survivors] += self._pair_wins[np.ix_(survivors, eliminated)].sum(axis=1)
        self._left_counts[survivors] -= self._pair_counts[np.ix_(survivors, eliminated)].sum(axis=1)
        self._widths = ebs_widths(self._left_counts, self.constants, self.conf_scale)
        self._unplayed = bool((self._left_counts[survivors] == 0).any())
