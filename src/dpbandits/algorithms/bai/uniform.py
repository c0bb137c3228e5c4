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

from dpbandits._core.errors import InvalidParameterError
from dpbandits._core.rng import RNGLike, spawn_generators
from dpbandits._core.typing import FloatArray, IntArray
from dpbandits._core.validation import check_int
from dpbandits.algorithms.bai.sequential_halving import (
    NON_PRIVATE_BAI,
    bai_metrics,
    check_reward_draws,
    draw_sums,
    top_k_random_ties,
)
from dpbandits.algorithms.registry import register_algorithm

__all__ = ["simulate_uniform_allocation", "uniform_counts"]


def uniform_counts(n_arms: int, budget: int) -> IntArray:
    """Round-robin pull counts: ``⌊T/K⌋`` each, one more for the first ``T mod K`` arms.

    Raises
    ------
    InvalidParameterError
        If ``budget < n_arms`` (some arm would never be pulled).
    """
    n_arms = check_int(n_arms, "n_arms", minimum=1)
    budget = check_int(budget, "budget", minimum=1)
    if budget < n_arms:
        raise InvalidParameterError(
            f"budget must be >= n_arms = {n_arms} for uniform allocation (one pull per arm); got {budget}"
        )
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
