"""Measure what the size checks and the study cost model assume (not a timed benchmark: run by hand).

``python benchmarks/measure_sizes.py pairwise`` prints, for every dueling algorithm with K×K state,
the peak memory (``tracemalloc``) and the time of ``simulate`` per trial, per arm pair (K²) and per
round at K = 50, 200, 400 (T = 300, 4 trials): the figures behind
:data:`dpbandits.algorithms.sizes.PAIRWISE_COSTS` (which keeps the smallest, rounded down).

``python benchmarks/measure_sizes.py workers`` (``workers-all``) starts a 2-worker process backend,
lets its workers import the runner and one algorithm family (every family) and prints each idle worker's RSS,
PSS and private memory from ``/proc/PID/smaps_rollup`` (Linux): PSS is the figure behind
:data:`dpbandits.experiments.costs.BYTES_PER_WORKER_PROCESS`.
"""

from __future__ import annotations

import sys
import time
import tracemalloc

from dpbandits.algorithms.registry import get_algorithm
from dpbandits.algorithms.sizes import PAIRWISE_COSTS
from dpbandits.envs.dueling import finite_instance
from dpbandits.experiments.backends import ProcessBackend

FAMILIES = ("dpbandits.algorithms.dueling.rucb", "dpbandits.algorithms.offline.simulate",
            "dpbandits.algorithms.kernel.usca")


def pairwise(horizon: int = 300, n_trials: int = 4) -> None:
    for name in PAIRWISE_COSTS:
        for k in (50, 200, 400):
            env = finite_instance("f4", n_arms=k)
            tracemalloc.start()
            started = time.perf_counter()
            get_algorithm(name).simulate(env, n_trials=n_trials, rng=0, horizon=horizon)
            seconds = time.perf_counter() - started
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            per_round = seconds / (n_trials * horizon)
            print(f"{name:26s} K = {k:3d}: {per_round:.2e} s per round and trial ({per_round / k**2:.2e} per K²), "
                  f"peak {peak / (n_trials * k * k):.1f} B per K² and trial")


def _rollup(pid: int) -> dict[str, int]:
    found = {}
    with open(f"/proc/{pid}/smaps_rollup", encoding="ascii") as handle:
        for line in handle:
            parts = line.split()
            if len(parts) >= 3 and parts[-1] == "kB":
                found[parts[0].rstrip(":")] = int(parts[1]) * 1024
    return found


def workers(every_family: bool = False) -> None:
    # (the fork server imports its modules when it starts, once per process: one setting per run)
    for modules in (["dpbandits.algorithms.bai.dp_bai", *(FAMILIES if every_family else ())],):
        backend = ProcessBackend(2, start_method="forkserver")  # workers of a fork server (forked ones share more)
        with backend:
            backend._start_workers(["__main__", "dpbandits.experiments.runner", *modules])
            backend._join_starter()
            for pid in backend._pool._processes if backend._pool is not None else ():
                memory = _rollup(pid)
                private = memory["Private_Clean"] + memory["Private_Dirty"]
                print(f"{len(modules)} famil{'y' if len(modules) == 1 else 'ies'}: idle worker RSS "
                      f"{memory['Rss'] / 1e6:.1f} MB, PSS {memory['Pss'] / 1e6:.1f} MB, private {private / 1e6:.1f} MB")


if __name__ == "__main__":
    {"pairwise": pairwise, "workers": workers, "workers-all": lambda: workers(every_family=True)}[
        sys.argv[1] if len(sys.argv) > 1 else "workers"]()
