"""Round-by-round dueling algorithms: one step written for a batch of trials, two drivers.

An algorithm whose every round depends on the previous round's outcome (RUCB, Beat-the-Mean, RMED1,
Double Thompson Sampling, Copeland Confidence Bound, MaxInP, CoLSTIM) is written once as a
:class:`RoundPolicy`: ``choose(t)`` returns the pair of round t in every trial (batch dimension
first) and ``observe(first, second, outcome)`` records the outcomes. Two drivers run it:

* :func:`simulate_policy` advances every trial of a simulation together, one round at a time (all
  trials in one array operation per round), and fast-forwards once every trial has committed to a
  self-duel (a, a) for the rest of the horizon;
* :class:`RoundAgent` is the ask/tell form: the same policy on a batch of one trial.

Random choices read the counter-based coins of :mod:`dpbandits.algorithms.dueling._streams`, which
are pure functions of (trial key, round), so both drivers make the same choices from the same seeds
and an agent reproduces the simulation's trial exactly. A simulation's memory is constant in the
horizon (a few (n_trials, K, K) arrays, whatever T); an agent also keeps one bit per round told.

An agent saves and loads like every dpbandits agent (:class:`~dpbandits._core.persistence.Persistable`).
What it saves is what decides its run: its key (the coins) and the outcome of every round, one bit
each (the pair of a round is a function of the key and the outcomes before it); ``load`` replays the
rounds with the agent's own ``ask`` and ``tell``, so every statistic, candidate set, hypothesis and
fitted model is recomputed, never read, and a loaded agent is exactly one a run reaches. A replay
costs what the run's own steps cost; the file holds T/8 bytes of outcomes.
"""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from dpbandits._core.errors import PrivacyBudgetExceededError
from dpbandits._core.persistence import Persistable
from dpbandits._core.rng import RNGLike
from dpbandits._core.schema import Array, Bool, Int, StateSchema, rule
from dpbandits._core.typing import BoolArray, FloatArray, IntArray
from dpbandits._core.validation import check_int
from dpbandits.algorithms.dueling._common import (
    DUELING_ENVIRONMENTS,
    check_dueling_env,
    check_round_horizon,
    check_told,
    non_private,
    round_horizon_precheck,
)
from dpbandits.algorithms.dueling._streams import trial_seed_sequences, trial_streams
from dpbandits.algorithms.own_agent import OwnAgent
from dpbandits.algorithms.registry import register_algorithm
from dpbandits.algorithms.sizes import check_pairwise_state
from dpbandits.envs.dueling import REGRET_METRICS, DuelStreams, UtilityDuelingEnvironment
from dpbandits.privacy.guarantees import NonPrivate

__all__ = ["COMPARATOR_METRICS", "RoundAgent", "RoundPolicy", "add_per_trial", "register_comparator", "simulate_comparator",
           "simulate_policy", "uniform_distinct_pair", "uniform_pick"]


def add_per_trial(target: np.ndarray, value: Any, *index: IntArray) -> None:
    """``target[n, index[0][n], index[1][n], ...] += value[n]`` for every trial n (``value`` may be a scalar).

    Every trial updates its own row, so no entry repeats and the fancy-indexed ``+=`` is exact. A
    batch of one (an ask/tell agent's step) takes a scalar index instead: the same addition of the
    same numbers, without the ~2 µs of a fancy-indexed update.
    """
    if target.shape[0] == 1:
        target[(0, *[int(i[0]) for i in index])] += value[0] if isinstance(value, np.ndarray) else value
        return
    target[(np.arange(target.shape[0]), *index)] += value


def uniform_pick(mask: BoolArray, coins: FloatArray) -> IntArray:
    """Per row, the ⌊u·count⌋-th True column of ``mask`` (a uniform choice among the True entries).

    Rows of ``mask`` must hold at least one True (an empty row gives column 0); ``coins`` holds one
    uniform u per row.
    """
    if mask.shape[0] == 1:  # one trial (an ask/tell agent's step): the same choice with fewer array calls
        columns = mask[0].nonzero()[0]
        if columns.size == 0:
            return np.zeros(1, dtype=np.int64)
        return columns[min(int(coins[0] * columns.size), columns.size - 1) : None][:1]
    ranks = np.cumsum(mask, axis=1)  # rank + 1 of each True entry; the last column holds the count
    counts = ranks[:, -1]
    target = np.minimum((coins * counts).astype(np.int64), counts - 1) + 1
    return np.asarray(np.argmax(mask & (ranks == target[:, None]), axis=1), dtype=np.int64)


def uniform_distinct_pair(coins: FloatArray, n_arms: int) -> tuple[IntArray, IntArray]:
    """One ordered pair (i, j), i != j, drawn uniformly per coin u: pair ⌊u·K(K−1)⌋ in row-major order."""
    index = np.minimum((coins * n_arms * (n_arms - 1)).astype(np.int64), n_arms * (n_arms - 1) - 1)
    first, offset = np.divmod(index, n_arms - 1)
    return first, offset + (offset >= first)  # skip j = i


class RoundPolicy(ABC):
    """The state and step of a round-by-round dueling algorithm for ``n_trials`` independent trials.

    Parameters
    ----------
    n_arms : int
        K.
    keys : ndarray of uint64 (n_trials,)
        Each trial's algorithm key (its coins).
    """

    def __init__(self, n_arms: int, keys: np.ndarray) -> None:
        self.n_arms = int(n_arms)
        self.keys = np.asarray(keys, dtype=np.uint64)
        self.n_trials = int(self.keys.shape[0])
        self.first_counts = np.zeros((self.n_trials, self.n_arms), dtype=np.int64)
        self.rows = np.arange(self.n_trials)  # the trial index of every row (fancy indexing)

    @abstractmethod
    def choose(self, t: int) -> tuple[IntArray, IntArray]:
        """The pair (first, second) of round t >= 1 in every trial, arrays of shape (n_trials,)."""

    @abstractmethod
    def update(self, first: IntArray, second: IntArray, outcome: IntArray, t: int) -> None:
        """Record the outcomes of round t (``outcome[n] = 1`` iff ``first[n]`` won in trial n)."""

    def observe(self, first: IntArray, second: IntArray, outcome: IntArray, t: int) -> None:
        """Record round t: count the first arms, then :meth:`update`."""
        add_per_trial(self.first_counts, 1, first)
        self.update(first, second, outcome, t)

    def committed_arms(self) -> IntArray:
        """Per trial, the arm a it plays as (a, a) in every later round, or −1 (default: never)."""
        return np.full(self.n_trials, -1, dtype=np.int64)

    def recommendation(self) -> IntArray:
        """Per trial, the arm the algorithm would name best now (default: its most frequent first arm)."""
        return np.asarray(np.argmax(self.first_counts, axis=1), dtype=np.int64)


def simulate_policy(
    env: UtilityDuelingEnvironment,
    n_trials: int,
    rng: RNGLike,
    horizon: int,
    make_policy: Callable[[np.ndarray], RoundPolicy],
    *,
    algorithm: str,
) -> tuple[dict[str, FloatArray], RoundPolicy]:
    """Run a round-by-round policy on every trial together; return regret metrics and the final policy.

    Parameters
    ----------
    env : UtilityDuelingEnvironment
    n_trials : int
    rng : int, SeedSequence, Generator or None
        Trial k uses ``trial_seed_sequences(rng, n_trials)[k]`` (environment, algorithm streams).
    horizon : int
        T (at most :data:`dpbandits.algorithms.dueling._common.ROUND_BY_ROUND_MAX_HORIZON`).
    make_policy : callable
        Builds the policy from the trials' algorithm keys.
    algorithm : str
        The algorithm's name, for error messages.

    Returns
    -------
    (metrics, policy)
        The regret metrics of the pair counts plus ``identified_best`` (the policy's recommendation
        is the best arm), and the policy after the last round.
    """
    check_dueling_env(env)
    n = check_int(n_trials, "n_trials", minimum=1)
    horizon = check_round_horizon(horizon, algorithm)
    k = env.n_arms
    parts = [trial_streams(seq) for seq in trial_seed_sequences(rng, n)]
    keys = np.array([p.algorithm_key for p in parts], dtype=np.uint64)
    env_keys = np.concatenate([env.streams(p.environment, 1).keys for p in parts])
    feedback = DuelStreams(env, env_keys)
    policy = make_policy(keys)
    pair_counts = np.zeros((n, k * k))
    rows = np.arange(n)
    for t in range(1, horizon + 1):
        committed = policy.committed_arms()
        if np.all(committed >= 0):  # every trial plays (a, a) to the end: fast-forward
            pair_counts[rows, committed * k + committed] += horizon - t + 1
            break
        first, second = policy.choose(t)
        outcome = feedback.duel_trials(first, second)
        policy.observe(first, second, outcome, t)
        pair_counts[rows, first * k + second] += 1
    metrics = env.regret_from_pair_counts(pair_counts.reshape(n, k, k))
    identified = (policy.recommendation() == env.best_arm).astype(np.float64)
    return {**metrics, "identified_best": identified}, policy


COMPARATOR_METRICS: tuple[str, ...] = (*REGRET_METRICS, "identified_best")
"""What every round-by-round comparator's simulation returns: the regrets of its duels and whether
its recommendation is the best arm."""

F = TypeVar("F", bound=Callable[..., Any])


def register_comparator(name: str, *, also: tuple[str, ...] = ()) -> Callable[[F], F]:
    """Register a non-private round-by-round comparator's simulation (RUCB, RMED1, Beat-the-Mean, ...).

    The registry fields every comparator shares, written once: the dueling family, no privacy, the
    utility-based dueling environments, :data:`COMPARATOR_METRICS` (0/1 ``identified_best``) and a
    precheck of the horizon a round-by-round simulation can run.

    Parameters
    ----------
    name : str
        The registry name.
    also : tuple of str
        More 0/1 metrics it returns (Beat-the-Mean's ``committed``).
    """
    return register_algorithm(
        name, precheck=functools.partial(round_horizon_precheck, algorithm=name), family="dueling",
        privacy="none (non-private)", metrics=(*COMPARATOR_METRICS, *also),
        proportion_metrics=("identified_best", *also), environments=DUELING_ENVIRONMENTS,
    )


def simulate_comparator(env: UtilityDuelingEnvironment, n_trials: int, rng: RNGLike, horizon: int,
                        make_policy: Callable[[np.ndarray], RoundPolicy], *,
                        algorithm: str) -> tuple[dict[str, FloatArray], RoundPolicy]:
    """The simulation every comparator runs: its pair state checked to fit, then :func:`simulate_policy`.

    Its arguments are those of every comparator's registered simulation: ``env`` a utility-based
    dueling environment, ``n_trials`` trials, ``rng`` the seed (trial k uses
    ``trial_seed_sequences(rng, n_trials)[k]``: environment, then algorithm streams) and ``horizon``
    T (at most 10⁸, :data:`~dpbandits.algorithms.dueling._common.ROUND_BY_ROUND_MAX_HORIZON`).
    """
    check_pairwise_state(algorithm, check_dueling_env(env).n_arms, n_trials)
    return simulate_policy(env, n_trials, rng, horizon, make_policy, algorithm=algorithm)


def _outcomes_fit(agent: RoundAgent, state: dict[str, Any]) -> bool:
    """Whether ``outcomes`` holds one bit per round played and nothing after (see the schema's rule)."""
    time, packed = state["time"], state["outcomes"]
    return packed.shape[0] == -(-time // 8) and not (time % 8 and int(packed[-1]) & (0xFF >> (time % 8)))


class RoundAgent(OwnAgent, Persistable):
    """Ask/tell form of a round-by-round policy (a batch of one trial).

    Parameters
    ----------
    policy : RoundPolicy
        Built with one key (``trial_streams(rng).algorithm_key``).
    horizon : int
        T; asking beyond it raises :class:`~dpbandits._core.errors.PrivacyBudgetExceededError`.
    """

    _schema = StateSchema(
        time=Int(0, "horizon"),
        asked=Bool(),
        key=Array("uint64", (1,)),
        outcomes=Array("uint8", (None,)),
        rules=[rule("outcomes: one bit per round played (numpy.packbits order: round 1 is the highest bit of byte "
                    "0), the bits after the last round 0", _outcomes_fit),
               rule("asked only before the horizon", lambda a, s: not s["asked"] or s["time"] < a.horizon)],
        retired={"policy": "saved by an earlier version of dpbandits, as statistics without the outcome of each "
                           "round, which cannot be checked against a run; load it with the version that saved "
                           "it, or start a new run"},
    )
    # Everything else (statistics, candidate sets, hypotheses, fitted models, the asked pair) is replayed
    # from the key and the outcomes by the agent's own ask and tell (see _set_state): derived, never read.

    def __init__(self, policy: RoundPolicy, horizon: int) -> None:
        self._policy = policy
        self.n_arms = policy.n_arms
        self.horizon = check_int(horizon, "horizon", minimum=1)
        self.time = 0
        self._asked: tuple[int, int] | None = None
        self._outcomes = bytearray()  # one bit per round told, packed as numpy.packbits packs them

    @property
    def recommendation(self) -> int:
        """The arm the algorithm names best now."""
        return int(self._policy.recommendation()[0])

    @property
    def privacy(self) -> NonPrivate:
        """None: every round-by-round comparator is non-private (:class:`~dpbandits.privacy.guarantees.NonPrivate`)."""
        return non_private(type(self).__name__)

    def _get_state(self) -> dict[str, Any]:
        return {"time": self.time, "asked": self._asked is not None, "key": self._policy.keys.copy(),
                "outcomes": np.frombuffer(bytes(self._outcomes), dtype=np.uint8)}

    def _set_state(self, state: dict[str, Any]) -> None:
        """Replay the saved rounds with the saved key: the policy's whole state is recomputed, as the run computed it."""
        self._policy.keys[:] = state["key"]  # the agent was just built: its policy is at round 0
        outcomes = np.unpackbits(state["outcomes"])[: state["time"]].tolist()
        for outcome in outcomes:
            self.tell(self.ask(), first_wins=bool(outcome))
        if state["asked"]:
            self.ask()

    def ask(self) -> tuple[int, int]:
        """Return the next pair; asking again before ``tell`` returns the same pair."""
        if self._asked is not None:
            return self._asked
        if self.time >= self.horizon:
            raise PrivacyBudgetExceededError(f"horizon={self.horizon} rounds were played")
        first, second = self._policy.choose(self.time + 1)
        self._asked = (int(first[0]), int(second[0]))
        return self._asked

    def tell(self, pair: tuple[int, int], winner: int | None = None, *, first_wins: int | bool | None = None) -> None:
        """Record the outcome: ``winner`` is the arm that won, or ``first_wins`` is True iff ``pair[0]`` won.

        See :meth:`DPEBSElimination.tell <dpbandits.algorithms.dueling.dp_ebs_elimination.DPEBSElimination.tell>`.
        """
        told, outcome = check_told(self._asked, pair, winner, first_wins)
        self._asked = None
        if not self.time % 8:
            self._outcomes.append(0)
        if outcome:
            self._outcomes[-1] |= 0x80 >> (self.time % 8)
        self.time += 1
        self._policy.observe(np.array([told[0]]), np.array([told[1]]), np.array([outcome]), self.time)
