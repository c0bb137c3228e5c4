"""The vectorised driver of a phased algorithm: every trial at once, one plan per group of trials.

Trials that share a planner state share a plan; per phase it makes one ``sample_sums`` call and one
noise draw (the ask/tell driver, :class:`~dpbandits.algorithms.bai.phased.PhasedAgent`, draws the
same numbers for one trial). Public from :mod:`dpbandits.algorithms.bai.phased`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from dpbandits._core.errors import InvalidParameterError
from dpbandits._core.typing import BoolArray, FloatArray, IntArray
from dpbandits.algorithms.bai._plans import Planner, _PlanCache, select_top
from dpbandits.algorithms.results import SimulationResult
from dpbandits.envs.base import BanditEnvironment
from dpbandits.privacy.noise import NoiseBackend

__all__ = [
    "PhasedResult",
    "SumSampler",
    "run_vectorised",
]

SumSampler = Callable[[IntArray], FloatArray]


def _draw_noise(noise: NoiseBackend | None, kind: str | None, scales: FloatArray) -> FloatArray:
    if kind is None or scales.shape[-1] == 0:
        return np.zeros(scales.shape)
    if noise is None:
        raise InvalidParameterError("noise must be a NoiseBackend for a private algorithm; got None")
    if kind == "laplace":
        return noise.laplace(scales, size=scales.shape)
    return noise.gaussian(scales, size=scales.shape)


class PhasedResult(SimulationResult):
    """Outcome of a vectorised run: per-trial metrics (a :class:`~dpbandits.algorithms.results.SimulationResult`).

    As a mapping (``result["success"]``, like every algorithm's ``simulate``): ``pulls_used`` and,
    when the environment is known (:meth:`~dpbandits.algorithms.bai.phased.PhasedAlgorithm.simulate`), ``success`` (the recommended arm
    is ``env.best_arm``, as the registered simulations count it) and ``simple_regret`` (the best mean
    less the recommended arm's).

    Attributes
    ----------
    recommended : ndarray of int, shape (n_trials,)
        Î_T of each trial.
    pulls : ndarray of int, shape (n_trials, n_arms)
        Pulls per arm.
    clipped : ndarray of bool, shape (n_trials,)
        Whether the budget guard clipped some phase.
    """

    recommended: IntArray
    pulls: IntArray
    clipped: BoolArray

    def __init__(self, recommended: IntArray, pulls: IntArray, clipped: BoolArray, *,
                 env: BanditEnvironment | None = None) -> None:
        metrics: dict[str, np.ndarray] = {}
        if env is not None:
            means = np.asarray(env.means, dtype=np.float64)
            metrics["success"] = (recommended == env.best_arm).astype(np.float64)
            metrics["simple_regret"] = means.max() - means[recommended]
        metrics["pulls_used"] = np.asarray(pulls.sum(axis=1), dtype=np.float64)
        super().__init__(metrics)
        # instance attributes, found before the mapping's keys
        self.__dict__.update(recommended=recommended, pulls=pulls, clipped=clipped)

    def __reduce__(self) -> Any:
        return _phased_result, (self.recommended, self.pulls, self.clipped, dict(self))

    @property
    def pulls_used(self) -> IntArray:
        """Total pulls per trial (int; ``result["pulls_used"]`` holds them as floats, like every metric)."""
        return np.asarray(self.pulls.sum(axis=1), dtype=np.int64)


def _phased_result(recommended: IntArray, pulls: IntArray, clipped: BoolArray,
                   metrics: dict[str, np.ndarray]) -> PhasedResult:
    result = PhasedResult(recommended, pulls, clipped)
    result.update(metrics)
    return result


def _group_members(inverse: IntArray, n_groups: int) -> list[IntArray]:
    """Row indices of each group, from the group label of every row (one stable sort)."""
    order = np.argsort(inverse, kind="stable")
    bounds = np.searchsorted(inverse[order], np.arange(n_groups + 1))
    return [order[bounds[g]:bounds[g + 1]] for g in range(n_groups)]


def _unique_rows(rows: IntArray, n_arms: int) -> tuple[IntArray, IntArray]:
    """Distinct rows of ascending arm indices and the index of each row's distinct row.

    Sets of arms below 63 are encoded as bit masks so that one 1-d ``np.unique`` suffices.
    """
    if n_arms <= 62:
        masks = np.bitwise_or.reduce(np.left_shift(np.int64(1), rows), axis=1)
        _, first, back = np.unique(masks, return_index=True, return_inverse=True)
        return rows[first], np.reshape(back, -1)
    distinct, back = np.unique(rows, axis=0, return_inverse=True)
    return distinct, np.reshape(back, -1)


def run_vectorised(planner: Planner, n_trials: int, sample_sums: SumSampler, noise: NoiseBackend | None,
                   algorithm_rng: np.random.Generator, *, tie_break: str = "random",
                   plan_cache: _PlanCache | None = None) -> PhasedResult:
    """Run ``n_trials`` independent trials of a phased algorithm at once.

    Parameters
    ----------
    planner : Planner
    n_trials : int
    sample_sums : callable
        ``counts (n_trials, n_arms) -> sums (n_trials, n_arms)`` of fresh rewards (environment stream).
    noise : NoiseBackend or None
        Privacy-noise stream (None for non-private planners).
    algorithm_rng : numpy.random.Generator
        Algorithm stream (tie-break keys).
    tie_break : {"random", "index"}
    plan_cache : optional
        The plans of ``planner`` already computed (shared by the runs of one algorithm); default a new one.

    Returns
    -------
    PhasedResult
    """
    cache = _PlanCache(planner) if plan_cache is None else plan_cache
    k = planner.n_arms
    state_ids = np.zeros(n_trials, dtype=np.int64)
    pulls = np.zeros((n_trials, k), dtype=np.int64)
    clipped = np.zeros(n_trials, dtype=bool)
    survivors_all = np.zeros((n_trials, 1), dtype=np.int64)
    for phase in range(planner.n_phases):
        groups, inverse = np.unique(state_ids, return_inverse=True)
        plans = [cache.plan(phase, int(g)) for g in groups]
        counts = np.zeros((n_trials, k), dtype=np.int64)
        n_noise = max(p.noise_scales.shape[0] for p in plans)
        n_active = max(p.active.shape[0] for p in plans)
        scales = np.ones((n_trials, n_noise))
        members = _group_members(inverse, len(groups))
        for plan, rows in zip(plans, members, strict=True):
            counts[np.ix_(rows, plan.pulled)] = plan.pulls
            scales[np.ix_(rows, np.arange(plan.noise_scales.shape[0]))] = plan.noise_scales
            clipped[rows] |= plan.clipped
        sums = sample_sums(counts)
        xi = _draw_noise(noise, planner.noise_kind, scales)
        tie_keys = algorithm_rng.random((n_trials, n_active))
        pulls += counts
        keep = plans[0].keep  # the survivor count depends on the phase only, not on the state
        survivors_all = np.zeros((n_trials, keep), dtype=np.int64)
        new_ids = np.empty(n_trials, dtype=np.int64)
        for plan, rows, gid in zip(plans, members, groups, strict=True):
            q, s = plan.noise_scales.shape[0], plan.active.shape[0]
            # μ̃ = W_sum·S + W_noise·ξ for every trial of the group (elementwise when both are diagonal)
            if plan.diagonal:
                estimates = sums[np.ix_(rows, plan.pulled)] * np.diag(plan.sum_weights)
                estimates += xi[rows, :q] * np.diag(plan.noise_weights)
            else:
                estimates = sums[np.ix_(rows, plan.pulled)] @ plan.sum_weights.T
                if q:
                    estimates += xi[rows, :q] @ plan.noise_weights.T
            keys = tie_keys[rows, :s] if tie_break == "random" else None
            chosen = plan.active[select_top(estimates, plan.keep, keys)]
            survivors_all[rows] = chosen
            distinct, back = _unique_rows(chosen, k)
            ids = np.array([cache.next_id(phase, int(gid), tuple(int(a) for a in row)) for row in distinct])
            new_ids[rows] = ids[back]
        state_ids = new_ids
    return PhasedResult(survivors_all[:, 0].copy(), pulls, clipped)
