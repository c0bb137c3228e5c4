"""Speed of the DP-BAI family (issue 4), printed as ratios against references run in this process.

1. The full bundled ``dp-bai-figure1`` study (60 grid points x 4 algorithms = 240 cells, 1000 trials
   each) through the study runner on the process backend with 2 workers, no plots; target < 20 s.
   (Serial time printed beside it.)
2. Vectorised DP-BAI against a straightforward one-pull-at-a-time implementation of the same algorithm
   (its ask/tell form, one scalar NumPy reward draw per pull), per trial; target >= 50x.
3. Vectorised DP-BAI against NumPy drawing just one reward per pull for the same trials (the
   exact Uniform[0, 2 mu] rewards, one ``Generator.random`` call); target <= 3x.

Usage::

    python benchmarks/bench_dp_bai.py           # full size
    python benchmarks/bench_dp_bai.py --quick   # reduced sizes, to check that it runs
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from dpbandits.algorithms.bai.dp_bai import DPBAI
from dpbandits.algorithms.registry import get_algorithm
from dpbandits.envs.linear import dp_bai_instance
from dpbandits.experiments.bundled import load_bundled_study
from dpbandits.experiments.runner import run_study

BENCH_SEED = 20240117


def best_of(repeats: int, fn) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def study_seconds(trials: int, backend: str, workers: int | None) -> float:
    study = load_bundled_study("dp-bai-figure1").with_overrides(trials=trials)
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        run_study(study, Path(tmp) / "run", backend=backend, workers=workers, progress="none")
        return time.perf_counter() - start


def one_pull_at_a_time(features: np.ndarray, widths: np.ndarray, budget: int, epsilon: float, n_trials: int) -> None:
    algorithm = DPBAI(features, budget, epsilon)
    generator = np.random.default_rng(BENCH_SEED)
    for trial in range(n_trials):
        agent = algorithm.agent(np.random.SeedSequence(BENCH_SEED).spawn(trial + 1)[trial])
        while not agent.done:
            arm = agent.ask()
            agent.tell(arm, widths[arm] * generator.random())  # Uniform[0, 2 mu_arm]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="reduced sizes")
    args = parser.parse_args()
    trials = 300 if args.quick else 1000
    loop_trials = 5 if args.quick else 20
    repeats = 2 if args.quick else 5
    budget, epsilon = 1000, 0.1

    env = dp_bai_instance()
    widths = 2.0 * env.means
    simulate = get_algorithm("dp-bai").simulate

    # 1. the whole study
    process = study_seconds(trials, "process", 2)
    serial = study_seconds(trials, "serial", None)
    print(f"dp-bai-figure1 study, {trials} trials/cell, 240 cells: process backend (2 workers) {process:.2f} s, "
          f"serial {serial:.2f} s")
    print(f"study time ratio to the 20 s target (process, 2 workers): {process / 20.0:.3f} (target <= 1)")

    # 2. vectorised vs one pull at a time
    vectorised = best_of(repeats, lambda: simulate(env, n_trials=trials, rng=np.random.SeedSequence(BENCH_SEED),
                                                   budget=budget, epsilon=epsilon))
    loop = best_of(1, lambda: one_pull_at_a_time(env.features, widths, budget, epsilon, loop_trials))
    per_trial_vectorised, per_trial_loop = vectorised / trials, loop / loop_trials
    print(f"DP-BAI T={budget}: vectorised {per_trial_vectorised * 1e6:.1f} us/trial, "
          f"one pull at a time {per_trial_loop * 1e6:.1f} us/trial")
    print(f"speed-up ratio vectorised vs one-pull-at-a-time: {per_trial_loop / per_trial_vectorised:.1f}x (target >= 50)")

    # 3. vectorised vs just drawing one reward per pull
    pulls = DPBAI(env.features, budget, epsilon).planner.plan(0, (tuple(range(30)), 0)).total_pulls
    generator = np.random.default_rng(BENCH_SEED)
    draw = best_of(repeats, lambda: generator.random(trials * pulls) * widths[0])
    print(f"numpy drawing {trials} x {pulls} rewards: {draw * 1e3:.2f} ms; vectorised DP-BAI {vectorised * 1e3:.2f} ms")
    print(f"time ratio vectorised DP-BAI / numpy reward draws: {vectorised / draw:.2f} (target <= 3)")


if __name__ == "__main__":
    main()
