"""Benchmark of the study runner, printed as ratios against direct calls run in the same process.

Usage::

    python benchmarks/bench_runner.py            # full size (lead's run)
    python benchmarks/bench_runner.py --quick    # reduced size, to check the script works
    python benchmarks/bench_runner.py --dask     # also time a local dask cluster (process workers)

1. Overhead of the runner: ``run_study`` on the serial backend (building environments, seeding,
   checking outputs, atomic cell writes, manifest and summary.csv) against calling the simulation
   entry point directly for the same (cell, chunk) tasks with the same seeds. Printed as the fixed
   cost of a run, the marginal cost per task (two studies with the same cells and 4x the chunks),
   and the ratio runner / direct for a light and a heavy task size.
2. Speed-up of the ``process`` backend on all cores: serial time / process time on one study
   (and the ideal, the number of cores).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import load_average, report_ratio

from dpbandits.algorithms.registry import get_algorithm
from dpbandits.envs.registry import make_environment
from dpbandits.experiments.backends import DaskBackend
from dpbandits.experiments.config import Study
from dpbandits.experiments.runner import chunk_seed_sequence, make_tasks, run_study


def make_study(name: str, *, trials: int, chunk_size: int, budgets: list[int]) -> Study:
    return Study.from_mapping({
        "name": name,
        "seed": 12345,
        "trials": trials,
        "chunk_size": chunk_size,
        # Uniform[0, 2μ] arms: the cost of a task grows with trials × budget (Bernoulli sums would not).
        "environment": {"name": "uniform", "means": [0.5, 0.45, 0.4, 0.35, 0.3, 0.25, 0.2, 0.15]},
        "algorithms": [{"name": "uniform"}, {"name": "sequential-halving"}],
        "grid": {"budget": budgets},
    })


def direct_calls(study: Study) -> float:
    """Time of calling every task's simulation entry point directly (environments prebuilt)."""
    tasks = make_tasks(study, study.cells())
    prepared: list[tuple[Any, Any, dict[str, Any], int, int, int]] = []
    for task in tasks:
        cell = task.cell
        env = make_environment(cell.environment, **cell.environment_params)
        simulate = get_algorithm(cell.algorithm).simulate
        prepared.append((simulate, env, cell.algorithm_params, task.n_trials, cell.point_index, task.chunk_index))
    start = time.perf_counter()
    for simulate, env, params, n_trials, point, chunk in prepared:
        simulate(env, n_trials=n_trials, rng=chunk_seed_sequence(study.seed, point, chunk), **params)
    return time.perf_counter() - start


def runner_time(study: Study, backend: Any = "serial", workers: int | None = None) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        run_study(study, Path(tmp) / "run", backend=backend, workers=workers, progress="none")
        return time.perf_counter() - start


def medians(repeats: int, **runs: Any) -> dict[str, float]:
    """Median seconds of each ``name=(fn, *args)``, timed by the functions themselves, in interleaved rounds."""
    times: dict[str, list[float]] = {name: [] for name in runs}
    names = list(runs)
    for r in range(repeats):
        for name in names[r % len(names):] + names[: r % len(names)]:
            fn, *args = runs[name]
            times[name].append(fn(*args))
    return {name: sorted(values)[len(values) // 2] for name, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="reduced size (a smoke run)")
    parser.add_argument("--dask", action="store_true", help="also time a local dask cluster")
    args = parser.parse_args()
    repeats = 1 if args.quick else 3
    cores = os.cpu_count() or 1
    print(f"# medians of {repeats} interleaved runs; {load_average()}")

    print("# 1. runner overhead (serial backend vs direct simulate calls, same tasks and seeds)")
    runner_time(make_study("warm-up", trials=10, chunk_size=10, budgets=[64]))  # imports (scipy, ...)

    def overhead(study: Study) -> tuple[float, float, int]:
        timed = medians(repeats, direct=(direct_calls, study), runner=(runner_time, study))
        return timed["direct"], timed["runner"], len(study.cells()) * study.n_chunks()

    tiny = make_study("tiny", trials=50, chunk_size=50, budgets=[64])
    direct, ran, _ = overhead(tiny)
    fixed = ran - direct
    print(f"fixed cost of a run (run dir, manifest, summary; 2 cells): {fixed * 1e3:7.1f} ms")
    few = make_study("few", trials=250, chunk_size=50, budgets=[64, 128, 256, 512])
    many = make_study("many", trials=250 if args.quick else 1000, chunk_size=10 if args.quick else 50,
                      budgets=[64, 128, 256, 512])
    direct_few, ran_few, n_few = overhead(few)
    direct_many, ran_many, n_many = overhead(many)
    per_task = ((ran_many - direct_many) - (ran_few - direct_few)) / (n_many - n_few)
    print(f"marginal cost per task (seed derivation, env build, output checks): {per_task * 1e3:7.3f} ms "
          f"({n_few} vs {n_many} tasks, same 8 cells)")
    heavy_budgets = [4096, 8192] if args.quick else [8192, 16384, 32768, 65536]
    heavy = make_study("heavy", trials=400 if args.quick else 4000, chunk_size=200, budgets=heavy_budgets)
    for study in (many, heavy):
        direct, ran, n_tasks = overhead(study)
        print(f"{study.name:6s} {n_tasks:4d} tasks of {study.chunk_size} trials: direct {direct * 1e3:9.1f} ms | "
              f"runner {ran * 1e3:9.1f} ms")
        report_ratio(f"runner / direct calls, {study.name} ({n_tasks} tasks)", ran / direct,
                     numerator=f"runner {ran * 1e3:.1f} ms", denominator=f"direct {direct * 1e3:.1f} ms")

    print(f"# 2. process backend speed-up on {cores} cores (serial time / process time; ideal {cores})")
    big = make_study("speedup", trials=1000 if args.quick else 8000, chunk_size=500,
                     budgets=[8192, 16384] if args.quick else [16384, 32768, 65536, 131072])
    runs: dict[str, Any] = {"serial": (runner_time, big, "serial"), "process": (runner_time, big, "process", cores)}
    if args.dask:
        runs["dask"] = (runner_time, big, DaskBackend(workers=cores, processes=True))
    timed = medians(repeats, **runs)
    serial, process = timed["serial"], timed["process"]
    print(f"serial {serial:7.2f} s | process ({cores} workers) {process:7.2f} s")
    report_ratio(f"process backend speed-up on {cores} cores (serial / process)", serial / process,
                 numerator=f"serial {serial:.2f} s", denominator=f"process {process:.2f} s", target=f"-> {cores}")
    if args.dask:
        dask = timed["dask"]
        report_ratio(f"dask local cluster speed-up on {cores} cores, incl. start-up (serial / dask)", serial / dask,
                     numerator=f"serial {serial:.2f} s", denominator=f"dask {dask:.2f} s")


if __name__ == "__main__":
    main()
