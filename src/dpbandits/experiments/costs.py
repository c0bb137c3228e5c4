"""Up-front cost estimates of a study run: refuse what cannot fit before anything is written.

:func:`check_study_cost` estimates, before a run starts, the memory and the CPU time the study
needs and raises :class:`~dpbandits._core.errors.StudyError` — one line naming the parameter, its
value and the limit — when the study cannot run on this machine: ``trials = 10**12``,
``budget = 10**14`` with an algorithm that draws one reward per pull, a grid of a billion points.
Without it such runs die with ``MemoryError`` or ``OverflowError`` deep in NumPy.

The estimates are **lower bounds** (conservative in the sense that a study is refused only when
it certainly cannot run, never because of a pessimistic guess):

* the runner's own memory is counted exactly: the tasks it queues, and one cell's per-trial values
  held twice (the chunks and their concatenation) while the cell is written;
* each task's memory and time come from a small cost model per algorithm
  (:data:`ALGORITHM_COSTS`), measured on this code base with ``tracemalloc`` and timers and
  rounded *down*: e.g. the phased best-arm algorithms keep 8 bytes per pull of every trial of a
  chunk, and take at least 1 ns per pull. An algorithm without an entry costs only its floor
  (:data:`TRIAL_FLOOR_SECONDS` per trial); its own validation then guards its sizes;
* memory is compared with what this process may use: the physical memory, lowered by a finite
  ``RLIMIT_AS`` or a cgroup ``memory.max`` where they exist; ``workers`` tasks run at once, beside
  the local worker processes' own memory (:data:`BYTES_PER_WORKER_PROCESS` each, measured);
* time is compared with :data:`MAX_CPU_SECONDS` (100 CPU-years: no study on any machine).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from dpbandits._core.errors import StudyError
from dpbandits._core.resources import format_bytes, memory_limit
from dpbandits.algorithms.sizes import PAIRWISE_COSTS
from dpbandits.experiments.config import Cell, Study

__all__ = ["ALGORITHM_COSTS", "MAX_CPU_SECONDS", "PAIRWISE_ALGORITHMS", "TRIAL_FLOOR_SECONDS", "TrialCost",
           "check_study_cost", "dueling_arms", "memory_limit"]

MAX_CPU_SECONDS = 100 * 365.25 * 86400.0
"""A run whose CPU time is certainly above this (100 CPU-years) is refused."""

TRIAL_FLOOR_SECONDS = 1e-8
"""Every trial of every algorithm takes at least this long (10 ns)."""

BYTES_PER_TASK = 100
"""A queued task (its dataclass and its entry in the runner's list) takes at least this much memory."""

BYTES_PER_CELL = 200
"""An expanded cell (grid point, parameters, manifest entry) takes at least this much memory."""

BYTES_PER_WORKER_PROCESS = 13e6
"""A local worker process takes at least this much memory: its proportional set size (PSS: its private
pages plus its share of the pages it shares with the fork server and the other workers), measured by
``python benchmarks/measure_sizes.py workers`` (``/proc/PID/smaps_rollup`` of the idle workers of a
2-worker process backend): 13-15 MB with the runner and one algorithm family imported (RSS 36 MB,
private 3-7.5 MB), 23 MB with every family (RSS 65 MB). A worker that has run DP-BAI tasks keeps its
allocator's memory (RSS 86 MB, private 49 MB): that memory is the tasks', counted by their own cost
model. RSS counts the shared pages once per worker, so W workers' RSS overstates what they use."""

_COPIES_OF_A_CELL = 2  # a finished cell's chunks, then their concatenation, are held while it is written


@dataclass(frozen=True)
class TrialCost:
    """Lower bounds of what one trial of one cell costs.

    Attributes
    ----------
    seconds : float
        CPU time of one trial.
    bytes_per_trial : float
        Memory held per trial of a chunk (algorithms vectorised across trials).
    bytes_per_task : float
        Memory of a task independent of its number of trials (e.g. one logged data set).
    driver : str or None
        The parameter that sets the cost (named in refusals), e.g. ``"budget"``.
    value : object, optional
        Its value, when it is not a parameter of the cell itself (e.g. the number of arms K of a
        dueling environment given by its features).
    """

    seconds: float = 0.0
    bytes_per_trial: float = 0.0
    bytes_per_task: float = 0.0
    driver: str | None = None
    value: Any = None


def _size(params: Mapping[str, Any], name: str, default: float = 0.0) -> float:
    """A size parameter as a float (0 when absent or not a number: its validation reports it)."""
    value = params.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return default
    return float(max(value, 0))


def _phased_bai(params: Mapping[str, Any]) -> TrialCost:
    # DP-BAI, DP-OD, OD-LinBAI: one reward per pull, kept for every trial of the chunk
    # (measured 8.0 B and >= 3 ns per pull and trial).
    budget = _size(params, "budget")
    return TrialCost(seconds=1e-9 * budget, bytes_per_trial=8.0 * budget, driver="budget")


def _mab_bai(params: Mapping[str, Any]) -> TrialCost:
    # Uniform allocation and Sequential Halving: exact sums (O(arms)) by default; pull-consistent
    # streams draw every pull (measured 16.5-33 B and >= 14 ns per pull and trial).
    if params.get("reward_draws") != "streams":
        return TrialCost()
    budget = _size(params, "budget")
    return TrialCost(seconds=1e-9 * budget, bytes_per_trial=16.0 * budget, driver="budget")


def _dueling(params: Mapping[str, Any]) -> TrialCost:
    # One duel per round (measured >= 40 ns per round); memory is the dueling simulation's concern.
    return TrialCost(seconds=1e-8 * _size(params, "horizon"), driver="horizon")


_DUELING_INSTANCE_ARMS = {"dueling-f1": 5, "dueling-f2": 10, "dueling-f3": 8}


def dueling_arms(environment: str, params: Mapping[str, Any]) -> float:
    """K of a dueling environment from its parameters, without building it (a lower bound: 2 if unknown)."""
    if environment in _DUELING_INSTANCE_ARMS:
        return float(_DUELING_INSTANCE_ARMS[environment])
    if environment == "dueling-f4":
        return max(_size(params, "n_arms", default=8.0), 2.0)
    if environment == "dueling-utility":
        features = params.get("features")
        return float(len(features)) if isinstance(features, list | tuple) and len(features) >= 2 else 2.0
    if environment == "dueling-unit-ball" and params.get("net") == "sphere":
        return max(_size(params, "n_points", default=32.0), 2.0)
    return 2.0  # the ball net: its size depends on the dimension and resolution (at least two points)


def _pairwise(name: str) -> Callable[[Mapping[str, Any], float], TrialCost]:
    """The cost of a dueling algorithm with K×K state: :data:`~dpbandits.algorithms.sizes.PAIRWISE_COSTS`."""
    cost = PAIRWISE_COSTS[name]

    def rule(params: Mapping[str, Any], n_arms: float) -> TrialCost:
        horizon = _size(params, "horizon")
        return TrialCost(seconds=max(cost.trial_seconds(n_arms, horizon), 1e-8 * horizon),
                         bytes_per_trial=cost.trial_bytes(n_arms), driver="n_arms", value=int(n_arms))

    return rule


def _theory(params: Mapping[str, Any]) -> TrialCost:
    # closed-form bounds and schedules: no simulation (the floor)
    return TrialCost()


def _kernel(params: Mapping[str, Any]) -> TrialCost:
    # A kernel or feature update per round (measured >= 400 µs per round at T = 200);
    # the kernel backends refuse their own oversized matrices. A trial draws its T contexts first
    # (8 B per round and context coordinate).
    horizon = _size(params, "horizon")
    return TrialCost(seconds=1e-6 * horizon, bytes_per_task=8.0 * horizon * max(_size(params, "context_dim", 1.0), 1.0),
                     driver="horizon")


def _offline(params: Mapping[str, Any]) -> TrialCost:
    # One logged data set per trial, drawn and fitted one trial at a time (measured 25 B per record),
    # plus Monte-Carlo or repeated samples. The linear and preference data sets of a given
    # dimension d hold d features per record, and their policies a d x d covariance (8 B each).
    records = _size(params, "n_records", default=0.0)
    samples = _size(params, "mc_samples") + _size(params, "n_samples")
    dimension = _size(params, "dimension", default=1.0)
    data, covariance = 8.0 * records * dimension, 8.0 * dimension**2 if "dimension" in params else 0.0
    return TrialCost(seconds=1e-9 * (records + samples), bytes_per_task=data + covariance,
                     driver="dimension" if covariance > data else "n_records")


ALGORITHM_COSTS: dict[str, Callable[[Mapping[str, Any]], TrialCost]] = {
    **dict.fromkeys(("dp-bai", "dp-bai-baseline", "dp-bai-gauss", "dp-od", "od-linbai"), _phased_bai),
    **dict.fromkeys(("uniform", "sequential-halving"), _mab_bai),
    **dict.fromkeys(("dp-ebs-elimination", "ebs-elimination", "ldp-ebs-elimination", "goptimal-dpdb",
                     "goptimal-dpdb-nonprivate"), _dueling),
    **dict.fromkeys(("theory-dp-ebs-heuristic", "theory-dp-ebs-upper", "theory-goptimal-schedule"), _theory),
    **dict.fromkeys(("usca", "usca-nonprivate", "usca-trivial-sensitivity", "gp-uniform", "cgp-ucb",
                     "private-feature-ridge"), _kernel),
    **dict.fromkeys(("em-mab", "rnm-mab", "laplace-greedy-mab", "greedy-mab", "kl-mab", "kl-mab-repeated",
                     "kl-linear", "kl-rlhf", "kl-linear-classification"), _offline),
}
"""Cost model per registered algorithm: ``params -> TrialCost`` (lower bounds; see the module docstring).
``params`` are the cell's environment parameters updated with its algorithm parameters. The dueling
algorithms with K×K state are in :data:`PAIRWISE_ALGORITHMS`. Every registered algorithm has an
entry in one of the two (a test checks)."""

PAIRWISE_ALGORITHMS: dict[str, Callable[[Mapping[str, Any], float], TrialCost]] = {
    name: _pairwise(name) for name in PAIRWISE_COSTS
}
"""Cost model of the dueling algorithms with K×K state: ``(params, K) -> TrialCost``, K from the
cell's environment (:func:`dueling_arms`); memory and time from :mod:`dpbandits.algorithms.sizes`."""


def trial_cost(cell: Cell) -> TrialCost:
    """The cost model's lower bounds for one trial of ``cell`` (the floor for unknown algorithms)."""
    params = {**cell.environment_params, **cell.algorithm_params}
    rule = ALGORITHM_COSTS.get(cell.algorithm)
    pairwise = PAIRWISE_ALGORITHMS.get(cell.algorithm)
    if pairwise is not None:
        cost = pairwise(params, dueling_arms(cell.environment, cell.environment_params))
    else:
        cost = rule(params) if rule is not None else TrialCost()
    return TrialCost(max(cost.seconds, TRIAL_FLOOR_SECONDS), cost.bytes_per_trial, cost.bytes_per_task,
                     cost.driver, cost.value)


# ------------------------------------------------------------------------------ limits
def _cpu_time(seconds: float) -> str:
    year = 365.25 * 86400.0
    if seconds >= year:
        return f"{seconds / year:.3g} CPU-years"
    if seconds >= 3600:
        return f"{seconds / 3600:.3g} CPU-hours"
    return f"{seconds:.3g} CPU-seconds"


# ------------------------------------------------------------------------------ the check
def _count_cells(study: Study) -> int:
    """Cells of the study without expanding the grid (a product of lengths)."""
    grid = study.grid
    if grid.mode == "cases":
        points = len(grid.cases)
    elif grid.mode == "zip":
        points = max((len(values) for values in grid.parameters.values()), default=1)
    else:
        points = math.prod(len(values) for values in grid.parameters.values())
    return points * len(study.algorithms)


def check_study_cost(study: Study, *, workers: int = 1, local_processes: int = 0,
                     limit_bytes: float | None = None) -> None:
    """Refuse a study that cannot run here: too much memory, or more than 100 CPU-years.

    Parameters
    ----------
    study : Study
    workers : int, default 1
        Tasks that run at once (their memory adds up).
    local_processes : int, default 0
        Worker processes started on this machine (process backend, local dask cluster).
    limit_bytes : float, optional
        Memory available (default: :func:`memory_limit`).

    Raises
    ------
    StudyError
        One line naming the parameter, its value, the estimate and the limit.
    """
    limit = memory_limit() if limit_bytes is None else float(limit_bytes)
    where = f"more than the {format_bytes(limit)} of memory available here"
    processes = local_processes * BYTES_PER_WORKER_PROCESS  # held beside the tasks' own memory
    if processes > limit:
        raise StudyError(f"workers: {local_processes} worker processes need at least "
                         f"{format_bytes(processes)}, {where}; lower --workers")
    n_cells = _count_cells(study)
    if n_cells * BYTES_PER_CELL > limit:
        raise StudyError(f"grid: {n_cells:,} cells (grid points × algorithms) need at least "
                         f"{format_bytes(n_cells * BYTES_PER_CELL)} to expand, {where}; sweep fewer values")
    n_metrics = max(len(study.metrics_of(index)) for index in range(len(study.algorithms)))
    held = _COPIES_OF_A_CELL * 8.0 * n_metrics * study.trials
    n_chunks = -(-study.trials // study.chunk_size)
    queued = n_cells * n_chunks * BYTES_PER_TASK
    if held > limit or (queued + held > limit and study.chunk_size >= study.trials):
        raise StudyError(f"trials: {study.trials} trials per cell need at least {format_bytes(queued + held)} to hold a "
                         f"cell's {n_metrics} metric(s) per trial, {where}; lower trials")
    if queued + held > limit:
        raise StudyError(f"chunk_size: {study.chunk_size} with trials = {study.trials} makes {n_chunks:,} tasks "
                         f"per cell, which need at least {format_bytes(queued + held)} to queue, {where}; raise "
                         "chunk_size or lower trials")
    chunk = min(study.chunk_size, study.trials)
    total_seconds = 0.0
    slowest: tuple[float, Cell, TrialCost] | None = None
    for cell in study.cells():
        cost = trial_cost(cell)
        task_bytes = cost.bytes_per_task + chunk * (cost.bytes_per_trial + 8.0 * n_metrics)
        if processes + queued + held + workers * task_bytes > limit:
            name = cost.driver or "chunk_size"
            value = cost.value if cost.value is not None else {**cell.environment_params,
                                                               **cell.algorithm_params}.get(name, study.chunk_size)
            running = f"{workers} tasks of {chunk} trials at once" if workers > 1 else f"a task of {chunk} trials"
            raise StudyError(f"{name}: {value} (algorithm {cell.label!r}, grid point {cell.point}) needs at least "
                             f"{format_bytes(processes + queued + held + workers * task_bytes)} to run {running}"
                             f"{f' in {local_processes} worker processes' if local_processes else ''}, {where}; "
                             f"lower {name}, chunk_size or --workers")
        cell_seconds = cost.seconds * study.trials
        total_seconds += cell_seconds
        if slowest is None or cell_seconds > slowest[0]:
            slowest = (cell_seconds, cell, cost)
    if total_seconds > MAX_CPU_SECONDS and slowest is not None:
        _, cell, cost = slowest
        params = {**cell.environment_params, **cell.algorithm_params}
        name = cost.driver if cost.driver is not None and cost.seconds > TRIAL_FLOOR_SECONDS else "trials"
        value = study.trials if name == "trials" else cost.value if cost.value is not None else params.get(name)
        raise StudyError(f"{name}: {value} makes the study need at least {_cpu_time(total_seconds)} (slowest: "
                         f"algorithm {cell.label!r} at grid point {cell.point}, {study.trials} trials), more than "
                         f"the {_cpu_time(MAX_CPU_SECONDS)} a run may take; lower {name}"
                         + (" or trials" if name != "trials" else ""))
