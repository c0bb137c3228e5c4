"""Benchmark of DP-EBS-Elimination against RUCB's one-step loop (duelpy), printed as ratios.

Usage::

    python benchmarks/bench_dueling.py            # full size (lead's run)
    python benchmarks/bench_dueling.py --quick    # reduced size, to check the script works

Issue 6's targets, on instance F2 (K = 10 arms, spec §8.1) at epsilon = 1:

1. DP-EBS-Elimination (block-vectorised simulation) runs T = 10^6 rounds for 20 trials in < 30 s.
2. Per round it is >= 20× faster than RUCB's one-step-at-a-time loop in the duelpy package, run in
   the same process on the same preference matrix (``RelativeUCB(MatrixFeedback(P)).run()``).
   Our own batched RUCB (all trials advanced together, one round at a time) is timed as well.

duelpy 1.0.0 (2021) does not import on NumPy >= 1.24 (``np.float``) nor use ``np.infty`` on NumPy 2; the
shim ``np.float = float; np.infty = np.inf`` is applied here, before the import, and nowhere else in
the project. duelpy is not a dependency of dpbandits: install it in a benchmark-only environment::

    python -m venv --system-site-packages .venv-bench        # reuses the installed dpbandits + NumPy
    .venv-bench/bin/python -m pip install --no-deps duelpy==1.0.0
    .venv-bench/bin/python benchmarks/bench_dueling.py

Without duelpy the comparison is skipped (and said so); the other figures are still printed.

It also measures the per-round costs behind the horizon limits of
:mod:`dpbandits.algorithms.dueling._common` (a round-by-round simulation of 20 trials is assumed to
cost at most 5 ms per round, a block-vectorised elimination 0.05-0.2 us per arm and round when no
elimination happens), printing each measured cost as a ratio to the assumed bound.
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import numpy as np

from dpbandits.algorithms.dueling.dp_ebs_elimination import simulate_dp_ebs_elimination
from dpbandits.algorithms.dueling.rucb import simulate_rucb
from dpbandits.envs.dueling import finite_instance


def load_duelpy() -> Any:
    """Import duelpy's RUCB and feedback classes with the NumPy-alias shim, or return None."""
    setattr(np, "float", float)  # noqa: B010  (the alias NumPy removed; duelpy 1.0.0 still uses it)
    setattr(np, "infty", np.inf)  # noqa: B010  (removed in NumPy 2; duelpy Savage uses it)
    try:
        from duelpy.algorithms import RelativeUCB
        from duelpy.feedback import MatrixFeedback
    except ImportError:
        return None
    return RelativeUCB, MatrixFeedback


def _half(job: tuple[np.random.SeedSequence, int, int, float]) -> int:
    seed, n_trials, horizon, epsilon = job
    simulate_dp_ebs_elimination(finite_instance("f2"), n_trials=n_trials, rng=seed, horizon=horizon, epsilon=epsilon)
    return n_trials


def _round_costs(quick: bool) -> None:
    """Per-round cost of every round-by-round comparator (20 trials, F2), against the assumed 5 ms."""
    from dpbandits.algorithms.dueling.beat_the_mean import simulate_beat_the_mean
    from dpbandits.algorithms.dueling.colstim import simulate_colstim
    from dpbandits.algorithms.dueling.copeland_confidence_bound import simulate_copeland_confidence_bound
    from dpbandits.algorithms.dueling.double_thompson import simulate_double_thompson
    from dpbandits.algorithms.dueling.maxinp import simulate_maxinp
    from dpbandits.algorithms.dueling.rmed import simulate_rmed1

    env, rounds = finite_instance("f2"), (300 if quick else 3_000)
    for simulate in (simulate_rucb, simulate_beat_the_mean, simulate_rmed1, simulate_double_thompson,
                     simulate_copeland_confidence_bound, simulate_maxinp, simulate_colstim):
        started = time.perf_counter()
        simulate(env, n_trials=20, rng=1, horizon=rounds)
        per_round = (time.perf_counter() - started) / rounds
        print(f"{simulate.__name__}: {per_round * 1e6:.0f} us per round (20 trials); "
              f"ratio to the assumed 5 ms: {per_round / 5e-3:.2f}")
    # worst case of the elimination simulations: eps so small that nothing is eliminated before T
    horizon = 100_000 if quick else 1_000_000
    started = time.perf_counter()
    simulate_dp_ebs_elimination(env, n_trials=1, rng=1, horizon=horizon, epsilon=0.01)
    per_arm_round = (time.perf_counter() - started) / (horizon * env.n_arms)
    print(f"DP-EBS-Elimination without eliminations: {per_arm_round * 1e9:.1f} ns per arm and round; "
          f"ratio to the assumed 200 ns: {per_arm_round / 200e-9:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="reduced sizes, to check the script works")
    args = parser.parse_args()
    horizon, trials = (100_000, 2) if args.quick else (1_000_000, 20)
    reference_rounds = 2_000 if args.quick else 20_000
    epsilon = 1.0
    env = finite_instance("f2")
    print(f"# instance F2: K = {env.n_arms}, epsilon = {epsilon}; DP-EBS: T = {horizon}, {trials} trials")

    started = time.perf_counter()
    out = simulate_dp_ebs_elimination(env, n_trials=trials, rng=20240322, horizon=horizon, epsilon=epsilon)
    ebs_seconds = time.perf_counter() - started
    ebs_per_round = ebs_seconds / (horizon * trials)
    print(f"DP-EBS-Elimination, 1 process: {ebs_seconds:.2f} s for {trials} trials x {horizon} rounds "
          f"({ebs_per_round * 1e9:.1f} ns per round); mean reward regret {out['reward_regret'].mean():.4g}")
    # the same trials split over 2 worker processes (2 cores), as the study runner's process backend does
    seeds = np.random.SeedSequence(20240322).spawn(2)
    started = time.perf_counter()
    with ProcessPoolExecutor(max_workers=2) as pool:
        halves = list(pool.map(_half, [(seed, trials // 2, horizon, epsilon) for seed in seeds]))
    parallel_seconds = time.perf_counter() - started
    print(f"DP-EBS-Elimination, 2 processes: {parallel_seconds:.2f} s for {sum(halves)} trials; "
          f"speed-up ratio vs 1 process: {ebs_seconds / parallel_seconds:.2f}")
    if not args.quick:
        best = min(ebs_seconds, parallel_seconds)
        verdict = "meets" if best < 30 else "MISSES"
        print(f"target 10^6 rounds x 20 trials < 30 s on 2 cores: {verdict} ({best:.1f} s)")

    started = time.perf_counter()
    simulate_rucb(env, n_trials=trials, rng=20240322, horizon=reference_rounds)
    ours_rucb_per_round = (time.perf_counter() - started) / (reference_rounds * trials)
    print(f"dpbandits RUCB (batched over {trials} trials): {ours_rucb_per_round * 1e6:.2f} us per round")
    print(f"ratio (dpbandits RUCB per round / DP-EBS per round): {ours_rucb_per_round / ebs_per_round:.1f}")

    _round_costs(args.quick)

    duelpy = load_duelpy()
    if duelpy is None:
        print("# duelpy is not importable here: the duelpy comparison is skipped (see the module docstring)")
        return
    relative_ucb, matrix_feedback = duelpy
    started = time.perf_counter()
    for seed in range(2 if args.quick else 3):
        state = np.random.RandomState(seed)
        feedback = matrix_feedback(env.preference_matrix.copy(), random_state=state)
        relative_ucb(feedback, time_horizon=reference_rounds, random_state=np.random.RandomState(seed)).run()
    runs = 2 if args.quick else 3
    duelpy_per_round = (time.perf_counter() - started) / (reference_rounds * runs)
    print(f"duelpy RelativeUCB (one step at a time): {duelpy_per_round * 1e6:.2f} us per round")
    ratio = duelpy_per_round / ebs_per_round
    print(f"ratio (duelpy RUCB per round / DP-EBS per round): {ratio:.1f} (target >= 20)")


if __name__ == "__main__":
    main()
