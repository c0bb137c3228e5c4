"""DP-EBS-Elimination's vectorised simulation and its two registered entry points (private and not).

It agrees exactly with the ask/tell agent (:mod:`dpbandits.algorithms.dueling.dp_ebs_elimination`,
which re-exports the entry points) on the same seeds: within a block of rounds the active set is
fixed, so pairs, outcomes, counter releases and bounds are array operations, and a block is cut at
the first round with an elimination.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from dpbandits._core.rng import RNGLike
from dpbandits._core.typing import FloatArray, IntArray
from dpbandits._core.validation import (
    check_epsilon,
    check_int,
)
from dpbandits.algorithms.dueling._common import (
    check_dueling_env,
    check_elimination_horizon,
    elimination_horizon_precheck,
)
from dpbandits.algorithms.dueling._ebs_rules import (
    EBSConstants,
    _check_options,
    _opponents,
    ebs_confidence_bounds,
    ebs_constants,
)
from dpbandits.algorithms.dueling._streams import trial_seed_sequences, trial_streams
from dpbandits.algorithms.registry import register_algorithm
from dpbandits.envs.base import counter_uniforms
from dpbandits.envs.dueling import REGRET_METRICS, DuelStreams, UtilityDuelingEnvironment
from dpbandits.privacy.counters import (
    TreeNoiseTable,
)

__all__ = [
    "SIMULATION_METRICS",
    "run_trial",
    "simulate_dp_ebs_elimination",
    "simulate_ebs_elimination",
]

SIMULATION_METRICS: tuple[str, ...] = (*REGRET_METRICS, "identified_best", "committed", "last_elimination_round")
# ---------------------------------------------------------------------- vectorised simulation
@dataclass
class _TrialResult:
    pair_counts: IntArray
    elimination_rounds: IntArray  # horizon + 1 for arms never eliminated
    active: IntArray


def run_trial(
    streams: DuelStreams,
    trial: int,
    constants: EBSConstants,
    algorithm_key: np.uint64,
    noise: TreeNoiseTable,
    *,
    opponent: str = "with_self",
    conf_scale: float = 1.0,
    block: int = 16384,
    first_block: int = 256,
    flip_key: np.uint64 | None = None,
    flip_probability: float = 0.0,
    check_every: int = 1,
    renew_noise: Callable[[], TreeNoiseTable] | None = None,
) -> _TrialResult:
    """Simulate one trial by blocks of rounds; identical to :class:`~dpbandits.algorithms.dueling.dp_ebs_elimination.DPEBSElimination` on the same seeds.

    Parameters
    ----------
    streams : DuelStreams
        Feedback of the environment (``trial`` selects the row).
    trial : int
    constants : EBSConstants
    algorithm_key : numpy.uint64
        Key of the opponent coins.
    noise : TreeNoiseTable
        Node noise of the K counters (one Generator per counter, as the agent's).
    opponent, conf_scale
        As in :class:`~dpbandits.algorithms.dueling.dp_ebs_elimination.DPEBSElimination`.
    block : int, default 16384
        Largest block of rounds evaluated at once.
    first_block : int, default 256
        Block length right after an elimination (doubling up to ``block``), so that frequent early
        eliminations do not waste long look-aheads.
    flip_key, flip_probability
        Local-DP baseline only: user t reports the opposite outcome iff
        ``counter_uniforms(flip_key, t) < flip_probability``, and the estimates are debiased.
    check_every : int, default 1
        Screen only in rounds t ≡ 0 (mod ``check_every``).
    renew_noise : callable, optional
        ``stats_removal="restart"``: returns the node noise of the next phase's fresh counters (as
        the agent's next K noise children); every statistic restarts at each elimination and the
        counters' times count from the restart. None: the paper's subtraction.
    """
    k, horizon = constants.n_arms, constants.horizon
    active = np.arange(k, dtype=np.int64)
    left_counts = np.zeros(k, dtype=np.int64)
    pending = np.zeros(k)
    exact_sums = np.zeros(k)
    pair_counts = np.zeros(k * k, dtype=np.int64)  # every round played (the regret)
    stat_counts = np.zeros(k * k, dtype=np.int64)  # N_ik and W_ik since the last restart (all rounds if none)
    stat_wins = np.zeros(k * k, dtype=np.int64)
    elimination_rounds = np.full(k, horizon + 1, dtype=np.int64)
    pointer, t, length = -1, 0, first_block
    phase_start = 0  # counters' time 0 (the last restart)
    block = min(block, max(first_block, (1 << 21) // k))  # bound the (arms × rounds) arrays to ~2M cells
    while t < horizon:
        m = active.size
        if m == 1:
            pair_counts[active[0] * k + active[0]] += horizon - t  # commit: (a, a) to the end
            break
        size = min(length, horizon - t)
        local = t - phase_start  # counter time of the round before the block
        chunk_end = (((local + 1) // noise.chunk) + 1) * noise.chunk  # keep a block inside one noise chunk
        size = min(size, chunk_end - (local + 1))
        times = np.arange(t + 1, t + size + 1)
        start = int(np.searchsorted(active, pointer, side="right")) % m
        left_index = (start + np.arange(size)) % m
        left = active[left_index]
        right = _opponents(counter_uniforms(algorithm_key, times), active, left_index, opponent)
        outcome = streams.peek(left, right, trial)
        if flip_key is not None and flip_probability:  # randomised response by the users (local model)
            outcome = outcome ^ (counter_uniforms(flip_key, times) < flip_probability)
        is_left = left[None, :] == active[:, None]  # (m, size)
        elements = is_left * outcome.astype(np.float64)
        elements[:, 0] -= pending[active]
        sums = exact_sums[active][:, None] + np.cumsum(elements, axis=1)
        errors = noise.errors(local + 1, local + size + 1)
        released = sums + (errors if m == k else errors[active])
        counts = left_counts[active][:, None] + np.cumsum(is_left, axis=1)
        # widths computed per block (a table of wid(n) for n = 0..T would hold memory linear in T)
        upper, lower = ebs_confidence_bounds(released, counts, constants, conf_scale,
                                             flip_probability=flip_probability)
        eliminate = upper < lower.max(axis=0)[None, :]
        if check_every > 1:
            eliminate[:, times % check_every != 0] = False  # screen only every check_every rounds
        hits = np.flatnonzero(eliminate.any(axis=0))
        played = int(hits[0]) + 1 if hits.size else size
        streams.advance(left[:played], right[:played], trial)
        flat = left[:played] * k + right[:played]
        pair_counts += np.bincount(flat, minlength=k * k)
        stat_counts += np.bincount(flat, minlength=k * k)
        stat_wins += np.bincount(flat, weights=outcome[:played], minlength=k * k).astype(np.int64)
        left_counts[active] = counts[:, played - 1]
        exact_sums[active] = sums[:, played - 1]
        pending[active] = 0.0
        pointer = int(left[played - 1])
        t += played
        if not hits.size:
            length = min(2 * length, block)
            continue
        gone = active[eliminate[:, played - 1]]
        elimination_rounds[gone] = t
        active = active[~np.isin(active, gone)]
        length = first_block
        if renew_noise is not None:  # restart: fresh counters, every statistic discarded
            for table in (left_counts, pending, exact_sums, stat_counts, stat_wins):
                table[...] = 0
            noise, phase_start = renew_noise(), t
            for arm in np.setdiff1d(np.arange(k), active):
                noise.retire(int(arm))
            continue
        wins = stat_wins.reshape(k, k)
        plays = stat_counts.reshape(k, k)
        pending[active] += wins[np.ix_(active, gone)].sum(axis=1)
        left_counts[active] -= plays[np.ix_(active, gone)].sum(axis=1)
        for arm in gone:
            noise.retire(int(arm))
    return _TrialResult(pair_counts.reshape(k, k), elimination_rounds, active)


def _simulate(
    env: UtilityDuelingEnvironment,
    n_trials: int,
    rng: RNGLike,
    horizon: int,
    epsilon: float,
    failure_probability: float | None,
    opponent: str,
    counter_epsilon: str,
    tree_bound: str,
    union_bound: str,
    conf_scale: float,
    block: int,
    stats_removal: str = "subtract",
    check_every: int = 1,
) -> dict[str, FloatArray]:
    check_dueling_env(env)
    eps = check_epsilon(epsilon, allow_inf=True)
    check_elimination_horizon(horizon, env.n_arms, "ebs-elimination" if math.isinf(eps) else "dp-ebs-elimination")
    n = check_int(n_trials, "n_trials", minimum=1)
    constants = ebs_constants(
        env.n_arms, horizon, epsilon, failure_probability, counter_epsilon=counter_epsilon,
        tree_bound=tree_bound, union_bound=union_bound, stats_removal=stats_removal,
    )
    opponent, conf_scale, check_every = _check_options(opponent, conf_scale, check_every)
    size = check_int(block, "block", minimum=1)
    pair_counts = np.zeros((n, env.n_arms, env.n_arms))
    identified = np.zeros(n)
    committed = np.zeros(n)
    last_elimination = np.zeros(n)
    for trial, seq in enumerate(trial_seed_sequences(rng, n)):
        parts = trial_streams(seq)
        feedback = env.streams(parts.environment, 1)
        def next_table(noise_seed: np.random.SeedSequence = parts.noise) -> TreeNoiseTable:
            generators = [np.random.default_rng(s) for s in noise_seed.spawn(env.n_arms)]  # as the agent's
            return TreeNoiseTable(constants.horizon, constants.counter_epsilon, generators, chunk=size, integer=True)

        result = run_trial(feedback, 0, constants, parts.algorithm_key, next_table(), opponent=opponent,
                           conf_scale=conf_scale, block=size, first_block=min(256, size), check_every=check_every,
                           renew_noise=next_table if stats_removal == "restart" else None)
        pair_counts[trial] = result.pair_counts
        committed[trial] = float(result.active.size == 1)
        identified[trial] = float(result.active.size == 1 and result.active[0] == env.best_arm)
        gone = result.elimination_rounds[result.elimination_rounds <= constants.horizon]
        last_elimination[trial] = float(gone.max()) if gone.size else 0.0
    metrics = env.regret_from_pair_counts(pair_counts)
    return {
        **metrics,
        "identified_best": identified,
        "committed": committed,
        "last_elimination_round": last_elimination,
    }


_DUELING_ENVS = ("dueling-f1", "dueling-f2", "dueling-f3", "dueling-f4", "dueling-utility", "dueling-unit-ball")


@register_algorithm(
    "dp-ebs-elimination",
    precheck=functools.partial(elimination_horizon_precheck, algorithm="dp-ebs-elimination"),
    family="dueling",
    privacy="ε-DP for one preference label",
    metrics=SIMULATION_METRICS,
    proportion_metrics=("identified_best", "committed"),
    environments=_DUELING_ENVS,
)
def simulate_dp_ebs_elimination(
    env: UtilityDuelingEnvironment,
    *,
    n_trials: int,
    rng: RNGLike,
    horizon: int,
    epsilon: float,
    failure_probability: float | None = None,
    opponent: str = "with_self",
    counter_epsilon: str = "quarter",
    tree_bound: str = "css",
    union_bound: str = "paper",
    conf_scale: float = 1.0,
    stats_removal: str = "subtract",
    check_every: int = 1,
    block: int = 16384,
) -> Mapping[str, FloatArray]:
    """DP-EBS-Elimination (Saha & Asi 2024, Algorithm 1), simulated for many trials.

    Parameters
    ----------
    env : UtilityDuelingEnvironment
    n_trials : int
    rng : int, SeedSequence, Generator or None
        Trial k uses ``trial_seed_sequences(rng, n_trials)[k]``, split into (environment,
        algorithm, privacy noise); see :mod:`dpbandits.algorithms.dueling._streams`.
    horizon : int
        T.
    epsilon : float
        ε > 0 (``inf`` is the non-private twin).
    failure_probability, opponent, counter_epsilon, tree_bound, union_bound, conf_scale
        As in :class:`~dpbandits.algorithms.dueling.dp_ebs_elimination.DPEBSElimination`.
    stats_removal, check_every
        Ablations (restart the counters at each elimination; screen every k rounds), as
        in :class:`~dpbandits.algorithms.dueling.dp_ebs_elimination.DPEBSElimination`; the defaults are the paper's algorithm.
    block : int, default 16384
        Largest block of rounds evaluated at once (and noise chunk length).

    Returns
    -------
    dict of str to ndarray of shape (n_trials,)
        The regret metrics of :data:`dpbandits.envs.dueling.REGRET_METRICS`, ``identified_best``
        (committed to the best arm), ``committed`` and ``last_elimination_round`` (0 if none).

    Privacy
    -------
    ε-DP for one preference label per trial (see :class:`~dpbandits.algorithms.dueling.dp_ebs_elimination.DPEBSElimination` and
    :func:`~dpbandits.algorithms.dueling.dp_ebs_elimination.dp_ebs_guarantee`, which covers both ways of removing statistics).

    References
    ----------
    Saha & Asi (2024), Algorithm 1, Lemma 2, Theorem 1.
    """
    return _simulate(env, n_trials, rng, horizon, epsilon, failure_probability, opponent,
                     counter_epsilon, tree_bound, union_bound, conf_scale, block, stats_removal, check_every)


@register_algorithm(
    "ebs-elimination",
    precheck=functools.partial(elimination_horizon_precheck, algorithm="ebs-elimination"),
    family="dueling",
    privacy="none (non-private)",
    metrics=SIMULATION_METRICS,
    proportion_metrics=("identified_best", "committed"),
    environments=_DUELING_ENVS,
)
def simulate_ebs_elimination(
    env: UtilityDuelingEnvironment,
    *,
    n_trials: int,
    rng: RNGLike,
    horizon: int,
    failure_probability: float | None = None,
    opponent: str = "with_self",
    union_bound: str = "paper",
    conf_scale: float = 1.0,
    stats_removal: str = "subtract",
    check_every: int = 1,
    block: int = 16384,
) -> Mapping[str, FloatArray]:
    """Non-private EBS-Elimination: the ε = ∞ twin of DP-EBS-Elimination (exact counts, B = 0).

    Same code path and the same seeds as :func:`simulate_dp_ebs_elimination` with
    ``epsilon=inf``; see that function for the parameters and metrics.

    Privacy
    -------
    None: the counters are exact (ε = ∞). A reference point for the private algorithm.

    References
    ----------
    Saha & Asi (2024), Algorithm 1 with ε = ∞ (regret O(Σ_i log(KT)/Δ_i), Theorem 1).
    """
    return _simulate(env, n_trials, rng, horizon, math.inf, failure_probability, opponent,
                     "quarter", "css", union_bound, conf_scale, block, stats_removal, check_every)
