"""Speed of the DP-BAI family (issue 4), as ratios of medians of interleaved runs against references.

1. The full bundled ``dp-bai-figure1`` study (60 grid points x 4 algorithms = 240 cells, 1000 trials
   each) through the study runner on the process backend with 2 workers and on the serial backend, no
   plots; target < 20 s.
2. Vectorised DP-BAI against a plain per-pull NumPy loop of the same algorithm
   (``plain_loops.dp_bai``: one Python iteration per pull, no validation), per trial; target >= 50.
   (The ask/tell agent's cost per pull against the same plain loop is in ``bench_agents.py``.)
3. Vectorised DP-BAI against NumPy drawing just one reward per pull for the same trials (the
   exact Uniform[0, 2 mu] rewards, one ``Generator.random`` call); target <= 3.
4. The registered ``simulate`` (1000 trials, one call: the algorithm's build, its plans, the
   grouping of trials by state) against the tightest vectorised NumPy of the same algorithm on this
   instance (issue 38): its one phase's plan computed beforehand from the public features, then the
   same reward sums (``env.sample_sums``), one Laplace draw, two matrix products and the tie-broken
   argmax; target <= 1.3 (the fixed cost per call small against 1000 trials).

Usage::

    python benchmarks/bench_dp_bai.py           # full size
    python benchmarks/bench_dp_bai.py --quick   # reduced sizes, to check that it runs
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import plain_loops
from _harness import interleaved, load_average, report_ratio, report_value

from dpbandits._core.rng import spawn_generators
from dpbandits.algorithms.bai.dp_bai import DPBAI
from dpbandits.algorithms.registry import get_algorithm
from dpbandits.envs.linear import dp_bai_instance
from dpbandits.experiments.bundled import load_bundled_study
from dpbandits.experiments.runner import run_study

BENCH_SEED = 20240117


def study_seconds(trials: int, backend: str, workers: int | None) -> float:
    study = load_bundled_study("dp-bai-figure1").with_overrides(trials=trials)
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        run_study(study, Path(tmp) / "run", backend=backend, workers=workers, progress="none")
        return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="reduced sizes")
    args = parser.parse_args()
    trials = 300 if args.quick else 1000
    loop_trials = 5 if args.quick else 20
    rounds = 3 if args.quick else 7
    budget, epsilon = 1000, 0.1
    print(f"# medians of interleaved runs; {load_average()}")

    env = dp_bai_instance()
    widths = 2.0 * env.means
    simulate = get_algorithm("dp-bai").simulate

    # 1. the whole study (each run is a fresh run directory; warm-up: the first process pool and imports)
    timed: dict[str, list[float]] = {"process": [], "serial": []}
    study_seconds(20, "serial", None)
    for r in range(1 if args.quick else 3):
        for backend in (("process", "serial") if r % 2 == 0 else ("serial", "process")):
            timed[backend].append(study_seconds(trials, backend, 2 if backend == "process" else None))
    process, serial = (float(np.median(timed[name])) for name in ("process", "serial"))
    print(f"dp-bai-figure1 study, {trials} trials/cell, 240 cells: process backend (2 workers) {process:.2f} s, "
          f"serial {serial:.2f} s (medians of {len(timed['serial'])})")
    report_ratio("dp-bai-figure1 study (process, 2 workers) / the 20 s target", process / 20.0,
                 numerator=f"study {process:.2f} s", denominator="20 s", target="<= 1", met=process <= 20.0)
    report_ratio("dp-bai-figure1 study: serial / process (2 workers)", serial / process,
                 numerator=f"serial {serial:.2f} s", denominator=f"process {process:.2f} s")

    # 2.–3. vectorised vs a plain per-pull loop of DP-BAI, and vs the reward draws alone
    u = np.random.default_rng(BENCH_SEED).random(budget * loop_trials).tolist()
    pulls = DPBAI(env.features, budget, epsilon).planner.plan(0, (tuple(range(30)), 0)).total_pulls
    generator = np.random.default_rng(BENCH_SEED)

    def plain_loop() -> int:
        rng = np.random.default_rng(BENCH_SEED)
        for trial in range(loop_trials):
            plain_loops.dp_bai(env.features, budget, epsilon, widths, u[trial * budget:], rng)
        return loop_trials

    medians = interleaved({
        "vectorised": lambda: simulate(env, n_trials=trials, rng=np.random.SeedSequence(BENCH_SEED), budget=budget,
                                       epsilon=epsilon) and trials,
        "plain loop": plain_loop,
        "reward draws": lambda: generator.random(trials * pulls) is not None and trials,
    }, rounds)
    vectorised, loop, draw = medians["vectorised"], medians["plain loop"], medians["reward draws"]
    report_value("DP-BAI T=1000 vectorised", vectorised * 1e6, "us/trial")
    report_value("DP-BAI T=1000 plain per-pull loop", loop * 1e6, "us/trial")
    report_ratio("DP-BAI: plain per-pull loop / vectorised (speed-up, per trial)", loop / vectorised,
                 numerator=f"plain loop {loop * 1e6:.1f} us", denominator=f"vectorised {vectorised * 1e6:.1f} us",
                 target=">= 50", met=loop / vectorised >= 50)
    report_ratio(f"DP-BAI: vectorised / NumPy drawing its {pulls} rewards per trial", vectorised / draw,
                 numerator=f"vectorised {vectorised * 1e6:.1f} us", denominator=f"reward draws {draw * 1e6:.1f} us",
                 target="<= 3", met=vectorised / draw <= 3)
    tightest_numpy(env, simulate, trials, budget, epsilon, 9 if args.quick else 21)
    print(f"# {load_average()}")


def tightest_numpy(env: object, simulate: object, trials: int, budget: int, epsilon: float, rounds: int) -> None:
    """``simulate`` against the same one-phase DP-BAI written as tight NumPy (its plan computed beforehand)."""
    planner = DPBAI(env.features, budget, epsilon).planner  # type: ignore[attr-defined]
    if planner.n_phases != 1:
        raise SystemExit(f"the tight reference is written for one phase; this instance has {planner.n_phases}")
    plan = planner.plan(0, planner.initial_state())
    to_sums, to_noise = np.ascontiguousarray(plan.sum_weights.T), np.ascontiguousarray(plan.noise_weights.T)
    counts = np.zeros((trials, env.n_arms), dtype=np.int64)  # type: ignore[attr-defined]
    counts[:, plan.pulled] = plan.pulls
    q, active = plan.noise_scales.shape[0], plan.active
    seeds = iter(range(10**6))

    def tight() -> int:
        env_rng, algorithm_rng, noise_rng = spawn_generators(next(seeds), 3)
        sums = env.sample_sums(counts, env_rng)[:, plan.pulled]  # type: ignore[attr-defined]
        estimates = sums @ to_sums + noise_rng.laplace(0.0, plan.noise_scales, size=(trials, q)) @ to_noise
        keys = algorithm_rng.random((trials, active.shape[0]))
        top = estimates == estimates.max(axis=1, keepdims=True)
        best = active[np.argmin(np.where(top, keys, np.inf), axis=1)]
        return trials if best.shape == (trials,) else 0

    def ours() -> int:
        simulate(env, n_trials=trials, rng=next(seeds), budget=budget, epsilon=epsilon)  # type: ignore[operator]
        return trials

    medians = interleaved({"simulate": ours, "tight NumPy": tight}, rounds)
    mine, floor = medians["simulate"], medians["tight NumPy"]
    report_ratio(f"DP-BAI simulate ({trials} trials) / the tightest vectorised NumPy", mine / floor,
                 numerator=f"simulate {mine * trials * 1e3:.2f} ms", denominator=f"tight NumPy {floor * trials * 1e3:.2f} ms",
                 target="<= 1.3", met=mine / floor <= 1.3)


if __name__ == "__main__":
    main()
