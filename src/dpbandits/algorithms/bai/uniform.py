"""Uniform allocation: the non-private fixed-budget best-arm identification baseline.

The budget ``T`` is spent round-robin over the ``K`` arms (arm ``a`` gets ``⌊T/K⌋`` pulls, plus one
for the first ``T mod K`` arms), and the arm with the largest empirical mean is recommended (ties
broken uniformly at random).

Seeding order: ``rng`` is split with ``SeedSequence.spawn`` into the environment stream (first)
and the algorithm stream (second, tie-breaking only). No noise stream: not private.

References
----------
S. Bubeck, R. Munos, G. Stoltz. "Pure exploration in finitely-armed and continuous-armed bandits."
Theoretical Computer Science 412 (2011), uniform allocation strategy.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np

from dpbandits._core.errors import InvalidActionError, InvalidParameterError, NotFittedError
from dpbandits._core.persistence import Persistable
from dpbandits._core.resources import check_fits
from dpbandits._core.rng import RNGLike, as_generator, spawn_generators
from dpbandits._core.schema import Array, Generator, Int, Maybe, StateSchema, rule
from dpbandits._core.typing import FloatArray, IntArray
from dpbandits._core.validation import MAX_EXACT_COUNT, check_arm, check_int, check_real
from dpbandits.algorithms.bai.sequential_halving import (
    NON_PRIVATE_BAI,
    bai_metrics,
    check_reward_draws,
    draw_sums,
    top_k_random_ties,
)
from dpbandits.algorithms.own_agent import OwnAgent
from dpbandits.algorithms.registry import register_algorithm, register_algorithm_class
from dpbandits.privacy.guarantees import NonPrivate

__all__ = ["UniformAllocation", "simulate_uniform_allocation", "uniform_counts"]


def uniform_counts(n_arms: int, budget: int) -> IntArray:
    """Round-robin pull counts: ``⌊T/K⌋`` each, one more for the first ``T mod K`` arms.

    Raises
    ------
    InvalidParameterError
        If ``budget < n_arms`` (some arm would never be pulled), or K arms' counts cannot fit in memory.
    """
    n_arms = check_int(n_arms, "n_arms", minimum=1)
    budget = check_int(budget, "budget", minimum=1, maximum=MAX_EXACT_COUNT)
    if budget < n_arms:
        raise InvalidParameterError(
            f"budget must be >= n_arms = {n_arms} for uniform allocation (one pull per arm); got {budget}"
        )
    check_fits("n_arms", n_arms, 16.0 * n_arms, what="uniform allocation's per-arm counts and reward sums")
    base, extra = divmod(budget, n_arms)
    counts = np.full(n_arms, base, dtype=np.int64)
    counts[:extra] += 1
    return counts


@register_algorithm(
    "uniform",
    description="Uniform allocation + empirical best arm, fixed budget, non-private",
    **NON_PRIVATE_BAI,  # type: ignore[arg-type]
)
def simulate_uniform_allocation(
    env: Any,
    *,
    n_trials: int,
    rng: RNGLike,
    budget: int,
    reward_draws: Literal["sums", "streams"] = "sums",
) -> dict[str, FloatArray]:
    """Run ``n_trials`` independent trials of uniform allocation at once.

    Parameters
    ----------
    env : BanditEnvironment
        A multi-armed environment with ``n_arms``, ``means`` and ``sample_sums``.
    n_trials : int
        Independent trials, ``>= 1``.
    rng : int, SeedSequence, Generator or None
        Split into (environment stream, algorithm stream) with ``SeedSequence.spawn``.
    budget : int
        Total pulls ``T >= n_arms``.
    reward_draws : {"sums", "streams"}, default "sums"
        Fresh exact sums (fastest) or the environment's pull-consistent streams.

    Returns
    -------
    dict of str to ndarray of shape (n_trials,)
        ``success`` (0/1) and ``simple_regret``.

    Raises
    ------
    InvalidParameterError
        If ``budget < n_arms`` or a parameter is invalid.

    Privacy
    -------
    None: this algorithm is not private.

    References
    ----------
    Bubeck, Munos & Stoltz (2011), uniform allocation.
    """
    n_trials = check_int(n_trials, "n_trials", minimum=1)
    reward_draws = check_reward_draws(reward_draws)  # type: ignore[assignment]
    per_arm = uniform_counts(env.n_arms, budget)
    env_rng, algo_rng = spawn_generators(rng, 2)  # order: environment, algorithm
    streams = env.streams(env_rng, n_trials) if reward_draws == "streams" else None
    counts = np.tile(per_arm, (n_trials, 1))
    sums = draw_sums(env, counts, env_rng, streams)
    means_hat = sums / counts  # μ̂_a = S_a / N_a
    recommended = top_k_random_ties(means_hat, 1, algo_rng)[:, 0]
    return bai_metrics(env, recommended)


@register_algorithm_class("uniform")
class UniformAllocation(OwnAgent, Persistable):
    """Uniform allocation in ask/tell form: round robin over the arms, then the empirical best arm.

    Pull ``t`` (from 0) asks arm ``t mod K``, so arm ``a`` gets the :func:`uniform_counts` pulls;
    once the budget is spent, :attr:`recommendation` is the arm of largest empirical mean
    μ̂_a = S_a / N_a (ties broken uniformly at random with ``rng``, once).

    Parameters
    ----------
    n_arms : int
        Number of arms ``K >= 1``.
    budget : int
        Total pulls ``T >= K``.
    rng : int, SeedSequence, Generator or None
        The algorithm stream (tie-breaking only).

    Privacy
    -------
    None: this algorithm is not private.

    References
    ----------
    Bubeck, Munos & Stoltz (2011), uniform allocation.

    Examples
    --------
    >>> agent = UniformAllocation(n_arms=3, budget=30, rng=0)
    >>> while not agent.done:
    ...     arm = agent.ask()
    ...     agent.tell(arm, [0.2, 0.9, 0.4][arm])
    >>> agent.recommendation
    1
    """

    _schema = StateSchema(
        _rng=Generator(),
        _position=Int(0, "budget"),
        _sums=Array("float64", ("n_arms",)),
        _pending=Maybe(Int(0, lambda u: u.n_arms - 1)),
        _recommended=Maybe(Int(0, lambda u: u.n_arms - 1)),
        rules=[rule("_pending is the arm of _position; _recommended is set exactly when the budget is spent",
                    lambda u, s: s["_pending"] in (None, s["_position"] % u.n_arms)
                    and (s["_recommended"] is None) == (s["_position"] < u.budget)),
               rule("_sums of an arm not pulled before _position is 0",
                    lambda u, s: not np.any(s["_sums"][min(s["_position"], u.n_arms):]))],
    )

    def __init__(self, n_arms: int, budget: int, *, rng: RNGLike = None) -> None:
        self._counts = uniform_counts(n_arms, budget)
        self.n_arms = int(n_arms)
        self.budget = int(budget)
        self._rng = as_generator(rng)
        self._position = 0
        self._sums = np.zeros(self.n_arms)
        self._pending: int | None = None
        self._recommended: int | None = None

    @property
    def privacy(self) -> NonPrivate:
        """None: uniform allocation is not private (:class:`~dpbandits.privacy.guarantees.NonPrivate`)."""
        return NonPrivate(unit="one entry of the reward table", reason="uniform allocation is non-private")

    def _progress(self) -> tuple[int, int]:
        """(pulls told, the budget)."""
        return self._position, self.budget

    def ask(self) -> int:
        """The next arm to pull (round robin).

        Raises
        ------
        NotFittedError
            If the previous pull was not told, or the budget is spent.
        """
        if self._pending is not None:
            raise NotFittedError(f"tell the reward of arm {self._pending} before asking again")
        if self._position >= self.budget:
            raise NotFittedError("uniform allocation has spent its budget; read recommendation")
        self._pending = self._position % self.n_arms
        return self._pending

    def tell(self, arm: int, reward: float) -> None:
        """Record the reward of the arm last asked.

        Raises
        ------
        InvalidActionError
            If ``arm`` is not the arm last asked.
        """
        pending = self._pending
        if pending is None or check_arm(arm, "arm", self.n_arms) != pending:
            raise InvalidActionError(f"arm must be the arm last asked ({pending}); got {arm!r}")
        self._sums[pending] += check_real(reward, "reward")
        self._pending = None
        self._position += 1
        if self._position == self.budget:  # μ̂_a = S_a / N_a; ties broken once, with the algorithm stream
            self._recommended = int(top_k_random_ties((self._sums / self._counts)[None, :], 1, self._rng)[0, 0])

    @property
    def recommendation(self) -> int:
        """The arm of largest empirical mean.

        Raises
        ------
        NotFittedError
            Before the budget is spent.
        """
        if self._recommended is None:
            raise NotFittedError(f"uniform allocation has told {self._position} of its {self.budget} pulls; "
                                 "keep asking and telling")
        return self._recommended
