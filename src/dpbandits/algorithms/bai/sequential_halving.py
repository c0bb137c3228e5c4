"""Sequential Halving (Karnin, Koren & Somekh 2013): non-private fixed-budget best-arm identification.

With ``K`` arms and budget ``T``, Sequential Halving runs ``R = ⌈log₂ K⌉`` rounds. Round ``r``
pulls every surviving arm ``t_r = ⌊T / (|S_r|·R)⌋`` times and keeps the ``⌈|S_r|/2⌉`` arms with the
largest round-``r`` empirical means (ties broken uniformly at random). The survivor of the last
round is recommended. Total pulls never exceed ``T``.

Two forms:

* :func:`simulate_sequential_halving` — vectorised across trials (batch dimension first),
  registered as ``"sequential-halving"`` for the study runner;
* :class:`SequentialHalving` — ask/tell, driven one pull at a time against any reward source.

Seeding order (both forms): ``rng`` is split with ``SeedSequence.spawn`` into the environment
stream (first) and the algorithm stream (second, used only to break ties). There is no noise
stream: the algorithm is not private.

References
----------
Z. Karnin, T. Koren, O. Somekh. "Almost optimal exploration in multi-armed bandits." ICML 2013,
Algorithm 1 and Theorem 4.1. Per-round averages are used (errata BAI-D2).
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np

from dpbandits._core.errors import InvalidActionError, InvalidParameterError, NotFittedError
from dpbandits._core.persistence import Persistable
from dpbandits._core.resources import check_fits
from dpbandits._core.rng import RNGLike, as_generator, spawn_generators
from dpbandits._core.schema import Array, Bool, Generator, Int, Maybe, StateSchema, rule
from dpbandits._core.typing import FloatArray, IntArray
from dpbandits._core.validation import check_arm, check_int, check_one_of, check_real
from dpbandits.algorithms.own_agent import OwnAgent, deprecated_alias
from dpbandits.algorithms.registry import register_algorithm, register_algorithm_class
from dpbandits.privacy.guarantees import NonPrivate

__all__ = [
    "BAI_METRICS",
    "NON_PRIVATE_BAI",
    "SequentialHalving",
    "bai_metrics",
    "check_reward_draws",
    "draw_sums",
    "halving_schedule",
    "simulate_sequential_halving",
    "top_k_random_ties",
]

BAI_METRICS: tuple[str, ...] = ("success", "simple_regret")
"""Per-trial metrics of the fixed-budget BAI simulations: 0/1 success and simple regret."""

REWARD_DRAWS: tuple[str, ...] = ("sums", "streams")

NON_PRIVATE_BAI = {
    "family": "bai",
    "privacy": "none (non-private)",
    "metrics": BAI_METRICS,
    "proportion_metrics": ("success",),
    "environments": ("bernoulli", "uniform", "beta", "clipped-gaussian"),
}
"""Registry fields shared by the non-private multi-armed BAI baselines."""


def top_k_random_ties(values: FloatArray, k: int, rng: np.random.Generator) -> IntArray:
    """Column indices of the ``k`` largest entries of each row, ties broken uniformly at random.

    Parameters
    ----------
    values : ndarray of shape (n_trials, n)
    k : int
        ``1 <= k <= n``.
    rng : numpy.random.Generator
        Draws one uniform tie-break key per entry (``n_trials · n`` draws, row-major).

    Returns
    -------
    ndarray of int64, shape (n_trials, k)
        In decreasing order of value.
    """
    tie_keys = rng.random(values.shape)
    # lexsort sorts by the last key first: by -value, then by the random key among equal values.
    order = np.lexsort((tie_keys, -values), axis=-1)
    return np.ascontiguousarray(order[:, :k]).astype(np.int64)


def halving_schedule(n_arms: int, budget: int) -> list[tuple[int, int]]:
    """``(|S_r|, t_r)`` for every round r of Sequential Halving.

    ``R = ⌈log₂ K⌉`` rounds; ``t_r = ⌊T / (|S_r|·R)⌋``; ``|S_{r+1}| = ⌈|S_r| / 2⌉``.

    Raises
    ------
    InvalidParameterError
        If ``n_arms < 2`` or the budget leaves a round with no pull (``t_0 < 1``, i.e.
        ``budget < n_arms·⌈log₂ n_arms⌉``).
    """
    n_arms = check_int(n_arms, "n_arms", minimum=2)
    budget = check_int(budget, "budget", minimum=1)
    n_rounds = math.ceil(math.log2(n_arms))  # R = ⌈log₂ K⌉
    schedule = []
    size = n_arms
    for _ in range(n_rounds):
        schedule.append((size, budget // (size * n_rounds)))  # t_r = ⌊T/(|S_r|·R)⌋
        size = -(-size // 2)  # |S_{r+1}| = ⌈|S_r|/2⌉
    if schedule[0][1] < 1:
        minimum = n_arms * n_rounds
        raise InvalidParameterError(
            f"budget must be >= n_arms·⌈log2 n_arms⌉ = {minimum} for Sequential Halving on "
            f"{n_arms} arms (every round needs one pull per arm); got {budget}"
        )
    return schedule


def check_reward_draws(reward_draws: str) -> str:
    """Validate ``reward_draws``: ``"sums"`` (fast exact sums) or ``"streams"`` (pull-consistent)."""
    return str(check_one_of(reward_draws, "reward_draws", REWARD_DRAWS))


def draw_sums(env: Any, counts: IntArray, env_rng: np.random.Generator, streams: Any | None) -> FloatArray:
    """Sums of the next ``counts`` rewards: from pull-consistent ``streams`` if given, else fresh."""
    if streams is not None:
        return np.asarray(streams.pull_counts(counts), dtype=np.float64)
    return np.asarray(env.sample_sums(counts, env_rng), dtype=np.float64)


def bai_metrics(env: Any, recommended: IntArray) -> dict[str, FloatArray]:
    """Per-trial ``success`` (recommended arm has the largest mean) and ``simple_regret``."""
    means = np.asarray(env.means, dtype=np.float64)
    best_mean = means.max()
    recommended_means = means[recommended]
    return {
        "success": (recommended_means == best_mean).astype(np.float64),
        "simple_regret": best_mean - recommended_means,  # μ* − μ_{recommended}
    }


@register_algorithm(
    "sequential-halving",
    description="Sequential Halving (Karnin et al. 2013), fixed budget, non-private",
    **NON_PRIVATE_BAI,  # type: ignore[arg-type]
)
def simulate_sequential_halving(
    env: Any,
    *,
    n_trials: int,
    rng: RNGLike,
    budget: int,
    reuse_samples: bool = False,
    reward_draws: Literal["sums", "streams"] = "sums",
) -> dict[str, FloatArray]:
    """Run ``n_trials`` independent trials of Sequential Halving at once.

    Parameters
    ----------
    env : BanditEnvironment
        A multi-armed environment with ``n_arms >= 2``, ``means`` and ``sample_sums``.
    n_trials : int
        Independent trials, ``>= 1``.
    rng : int, SeedSequence, Generator or None
        Split into (environment stream, algorithm stream) with ``SeedSequence.spawn``.
    budget : int
        Total number of pulls ``T >= n_arms·⌈log₂ n_arms⌉``.
    reuse_samples : bool, default False
        Rank arms by the mean of all their samples so far instead of the current round's only
        (a common variant; the paper uses round samples only).
    reward_draws : {"sums", "streams"}, default "sums"
        ``"sums"`` draws exact sums of fresh rewards (fastest); ``"streams"`` uses the environment's
        pull-consistent streams so that other algorithms run on the same seed see the same rewards.

    Returns
    -------
    dict of str to ndarray of shape (n_trials,)
        ``success`` (0/1) and ``simple_regret``.

    Raises
    ------
    InvalidParameterError
        On a budget too small for one pull per arm per round, or invalid parameters.

    Privacy
    -------
    None: this algorithm is not private. It is the ε → ∞ analogue of the DP-BAI baseline.

    References
    ----------
    Karnin, Koren & Somekh (2013), Algorithm 1.
    """
    n_trials = check_int(n_trials, "n_trials", minimum=1)
    reward_draws = check_reward_draws(reward_draws)  # type: ignore[assignment]
    schedule = halving_schedule(env.n_arms, budget)
    env_rng, algo_rng = spawn_generators(rng, 2)  # order: environment, algorithm
    streams = env.streams(env_rng, n_trials) if reward_draws == "streams" else None
    n_arms = env.n_arms
    surviving = np.tile(np.arange(n_arms, dtype=np.int64), (n_trials, 1))  # S_0 = [K], per trial
    total_sums = np.zeros((n_trials, n_arms))
    total_counts = np.zeros((n_trials, n_arms), dtype=np.int64)
    for size, pulls in schedule:
        counts = np.zeros((n_trials, n_arms), dtype=np.int64)
        np.put_along_axis(counts, surviving, pulls, axis=1)
        sums = draw_sums(env, counts, env_rng, streams)
        if reuse_samples:
            total_sums += sums
            total_counts += counts
            means_hat = np.take_along_axis(total_sums / np.maximum(total_counts, 1), surviving, axis=1)
        else:
            means_hat = np.take_along_axis(sums, surviving, axis=1) / pulls  # p̂_i^r, round samples
        keep = top_k_random_ties(means_hat, -(-size // 2), algo_rng)
        # S_{r+1}, kept sorted by arm index so that tie-break keys map to arms as in the ask/tell form
        surviving = np.sort(np.take_along_axis(surviving, keep, axis=1), axis=1)
    return bai_metrics(env, surviving[:, 0])


def _counts_match(sh: SequentialHalving, s: dict[str, Any]) -> bool:
    """Whether a state's ``_total_counts`` are the ones its schedule, round and survivors imply.

    An arm still in play has the pulls of every round before ``_round``; an arm dropped after round
    ``j`` has those of rounds ``0..j``, and ``size_j − size_{j+1}`` arms were dropped there.
    """
    rounds = s["_round"]
    sizes = [size for size, _ in sh._schedule] + [1]
    done = np.cumsum([0] + [pulls for _, pulls in sh._schedule])  # pulls of each arm through round j
    counts = s["_total_counts"].copy()
    if sh.reuse_samples and "_counts_added_at_round_end" not in s and rounds < len(sh._schedule):
        queue = np.tile(s["_surviving"], sh._schedule[rounds][1])[: s["_position"]]
        np.add.at(counts, queue, -1)  # older files counted the current round's pulls as they were told
    alive = np.zeros(sh.n_arms, dtype=bool)
    alive[s["_surviving"]] = True
    expected = np.repeat(done[1:rounds + 1], [sizes[j] - sizes[j + 1] for j in range(rounds)])
    return bool(np.all(counts[alive] == done[rounds])
                and np.array_equal(np.sort(counts[~alive]), expected))


@register_algorithm_class("sequential-halving")
class SequentialHalving(OwnAgent, Persistable):
    """Sequential Halving in ask/tell form, for one trial driven by external rewards.

    Pulls are asked in round-robin order over the surviving arms (sorted by index) until each has
    its ``t_r`` pulls; then the round's top half survives (ties broken with ``rng``).

    Parameters
    ----------
    n_arms : int
        Number of arms ``K >= 2``.
    budget : int
        Total pulls ``T >= K·⌈log₂ K⌉``.
    rng : int, SeedSequence, Generator or None
        The algorithm stream (tie-breaking only).
    reuse_samples : bool, default False
        Rank by all samples so far instead of the round's only.

    Privacy
    -------
    None: this algorithm is not private.

    References
    ----------
    Karnin, Koren & Somekh (2013), Algorithm 1.

    Examples
    --------
    >>> import numpy as np
    >>> from dpbandits.algorithms.bai.sequential_halving import SequentialHalving
    >>> agent = SequentialHalving(n_arms=4, budget=80, rng=0)
    >>> means = np.array([0.9, 0.1, 0.2, 0.3])
    >>> while not agent.done:
    ...     arm = agent.ask()
    ...     agent.tell(arm, float(means[arm]))
    >>> agent.recommendation
    0
    """

    _schema = StateSchema(
        _rng=Generator(),
        _round=Int(0, lambda sh: len(sh._schedule)),
        _surviving=Array("int64", (None,), low=0, high=lambda sh: sh.n_arms - 1),
        _round_sums=Array("float64", ("n_arms",)),
        _total_sums=Array("float64", ("n_arms",)),
        _total_counts=Array("int64", ("n_arms",), low=0, high="budget"),
        _position=Int(0, "budget"),
        _pending=Maybe(Int(0, lambda sh: sh.n_arms - 1)),
        _counts_added_at_round_end=Bool(),
        optional=("_counts_added_at_round_end",),  # files of older versions lack it
        rules=[rule("_surviving: distinct arms in ascending order (the round robin's), as many as the schedule keeps in "
                    "_round (1 after the last)",
                    lambda sh, s: bool(np.all(np.diff(s["_surviving"]) > 0))
                    and s["_surviving"].size == (sh._schedule[s["_round"]][0] if s["_round"] < len(sh._schedule) else 1)),
               rule("_position < the pulls of the round, _pending the arm asked there",
                    lambda sh, s: (s["_round"] == len(sh._schedule) and s["_position"] == 0 and s["_pending"] is None)
                    or (s["_round"] < len(sh._schedule)
                    and s["_position"] < s["_surviving"].size * sh._schedule[s["_round"]][1]
                    and s["_pending"] in (None, int(s["_surviving"][s["_position"] % s["_surviving"].size])))),
               rule("_round_sums is 0 outside the arms asked before _position in _round",
                    lambda sh, s: not np.any(np.delete(s["_round_sums"],
                                                       s["_surviving"][: s["_position"]])) if s["_round"] < len(
                        sh._schedule) else not np.any(s["_round_sums"])),
               rule("_total_counts: the pulls of the rounds before _round of each arm, by the schedule and "
                    "_surviving (with the pulls told in _round in files of older versions)",
                    lambda sh, s: _counts_match(sh, s))],
    )

    def __init__(self, n_arms: int, budget: int, *, rng: RNGLike = None, reuse_samples: bool = False) -> None:
        self.n_arms = check_int(n_arms, "n_arms", minimum=2)
        self.budget = check_int(budget, "budget", minimum=1)
        self._schedule = halving_schedule(self.n_arms, self.budget)
        size, pulls = self._schedule[0]  # a round's pulls are queued as a list (8 B per pull)
        check_fits("budget", self.budget, 8.0 * size * pulls, what="Sequential Halving's queue of its first round's pulls")
        self._rng = as_generator(rng)
        self.reuse_samples = bool(reuse_samples)
        self._round = 0
        self._surviving = np.arange(self.n_arms, dtype=np.int64)
        self._round_sums = np.zeros(self.n_arms)
        self._total_sums = np.zeros(self.n_arms)
        self._total_counts = np.zeros(self.n_arms, dtype=np.int64)
        self._counts_added_at_round_end = True  # (state format: files without it counted pulls as told)
        self._position = 0  # pulls asked in the current round
        self._pending: int | None = None
        self._derive_step_state()

    @property
    def done(self) -> bool:
        """Whether every round is done (then :attr:`recommendation` is available)."""
        return not self._queue  # a round has at least one pull

    @property
    def surviving_arms(self) -> IntArray:
        """The arms still in play (a copy)."""
        return self._surviving.copy()

    def ask(self) -> int:
        """The next arm to pull.

        Raises
        ------
        NotFittedError
            If the previous pull was not told, or the algorithm has finished.
        """
        if self._pending is not None:
            raise NotFittedError(f"tell the reward of arm {self._pending} before asking again")
        try:  # the queue is empty once finished
            arm = self._pending = self._queue[self._position]
        except IndexError:
            raise NotFittedError("Sequential Halving has finished; read recommendation") from None
        return arm

    def tell(self, arm: int, reward: float) -> None:
        """Record the reward of the arm last asked.

        Raises
        ------
        InvalidActionError
            If ``arm`` is not the arm last asked.
        """
        pending = self._pending
        # an int that is the arm asked for passes at once; anything else gets the full check
        if (arm.__class__ is not int or arm != pending) and (
                pending is None or check_arm(arm, "arm", self.n_arms) != pending):
            raise InvalidActionError(f"arm must be the arm last asked ({pending}); got {arm!r}")
        # the common case: a finite float (NumPy's too; x − x is 0 exactly when x is finite); else the full check
        if not (isinstance(reward, float) and (value := float(reward)) - value == 0.0):
            value = check_real(reward, "reward")
        self._pending = None
        self._round_list[pending] += value
        if self._total_list is not None:  # reuse_samples: every sample so far, added in pull order
            self._total_list[pending] += value
        position = self._position + 1
        self._position = position
        if position == len(self._queue):
            self._end_round()

    def _end_round(self) -> None:
        size, pulls = self._schedule[self._round]
        self._sync_arrays()
        if self.reuse_samples:
            self._total_counts[self._surviving] += pulls
            means_hat = self._total_sums[self._surviving] / self._total_counts[self._surviving]
        else:  # the totals are kept per round (they are only read with reuse_samples)
            self._total_sums += self._round_sums
            self._total_counts[self._surviving] += pulls
            means_hat = self._round_sums[self._surviving] / pulls
        keep = top_k_random_ties(means_hat[None, :], -(-size // 2), self._rng)[0]
        self._surviving = np.sort(self._surviving[keep])
        self._round_sums = np.zeros(self.n_arms)
        self._position = 0
        self._round += 1
        self._derive_step_state()

    def _sync_arrays(self) -> None:
        """Copy the per-pull Python sums into the arrays that are saved and read at a round's end."""
        self._round_sums = np.array(self._round_list)
        if self._total_list is not None:
            self._total_sums = np.array(self._total_list)

    def _derive_step_state(self) -> None:
        """Derive the round's per-pull state: Python values read and added once per pull.

        The round's pull order (round robin over the survivors, sorted; empty once finished), its sums
        and, with ``reuse_samples``, the totals.
        """
        surviving: list[int] = self._surviving.tolist()
        rounds_left = self._round < len(self._schedule)
        self._queue: list[int] = surviving * self._schedule[self._round][1] if rounds_left else []
        self._round_list: list[float] = self._round_sums.tolist()
        self._total_list: list[float] | None = self._total_sums.tolist() if self.reuse_samples else None

    def _get_state(self) -> dict[str, Any]:
        self._sync_arrays()
        return super()._get_state()

    def _set_state(self, state: dict[str, Any]) -> None:
        super()._set_state(state)
        self._derive_step_state()
        if self.reuse_samples and "_counts_added_at_round_end" not in state and self._position:
            # a file saved before the totals' counts moved to the round's end counted each pull of
            # the current round as it was told: take those out, or the round's end adds them again
            np.add.at(self._total_counts, np.asarray(self._queue[: self._position], dtype=np.intp), -1)
        self._counts_added_at_round_end = True

    @property
    def recommendation(self) -> int:
        """The recommended arm.

        Raises
        ------
        NotFittedError
            Before the last round has finished.
        """
        if not self.done:
            raise NotFittedError("Sequential Halving has not finished; keep asking and telling")
        return int(self._surviving[0])

    @property
    def privacy(self) -> NonPrivate:
        """None: Sequential Halving is not private (:class:`~dpbandits.privacy.guarantees.NonPrivate`)."""
        return NonPrivate(unit="one entry of the reward table", reason="Sequential Halving is non-private")

    def _progress(self) -> tuple[int, int]:
        """(pulls told, pulls in all)."""
        pulls = [size * per_arm for size, per_arm in self._schedule]
        return sum(pulls[: self._round]) + self._position, sum(pulls)

    @property
    def finished(self) -> bool:
        """Deprecated spelling of :attr:`done` (removed in the next release)."""
        return deprecated_alias("SequentialHalving.finished", "done", self.done)

    def recommend(self) -> int:
        """Deprecated spelling of :attr:`recommendation` (removed in the next release)."""
        return deprecated_alias("SequentialHalving.recommend()", "recommendation", self.recommendation)
