"""What the process and dask backends cost on one machine (issue 38): CPU of the whole process tree.

Figure 1 (``dpbandits reproduce dp-bai-figure1 --no-plot``, 240 cells) run on the ``serial`` backend,
the ``process`` backend with 2 workers and a local ``dask`` cluster of 2 workers, interleaved, each a
fresh process into a fresh run directory. Measured: user + system CPU seconds of every process of the
run (the command, its forked workers -- or a fork server and its workers where the command cannot
fork --, dask's workers; see ``_harness.tree_cpu``), and wall time. Ratios of medians:

1. process (2 workers) / serial, CPU: the work the pool adds (its start-up, the workers' page faults,
   the batches' round trips). Target <= 1.1.
2. dask local cluster / process backend, CPU. Target <= 1.5. Skipped without ``dask.distributed``.

Usage::

    python benchmarks/bench_backends.py            # 1000 trials per cell, 3 interleaved rounds
    python benchmarks/bench_backends.py --quick    # 100 trials per cell, 1 round (a check that it runs)
"""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _harness import dpbandits_command, load_average, report_ratio, report_value, tree_cpu  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100 trials per cell, one round")
    args = parser.parse_args()
    trials, rounds = (100, 1) if args.quick else (1000, 3)
    backends = {"serial": ["--backend", "serial"], "process": ["--backend", "process", "--workers", "2"]}
    if importlib.util.find_spec("distributed") is not None:
        backends["dask"] = ["--backend", "dask", "--workers", "2"]
    print(f"# Figure 1, {trials} trials per cell, {rounds} interleaved round(s); {load_average()}")
    cpu: dict[str, list[float]] = {name: [] for name in backends}
    wall: dict[str, list[float]] = {name: [] for name in backends}
    with tempfile.TemporaryDirectory() as scratch:
        counter = iter(range(10_000))

        def run(name: str) -> tuple[float, float]:
            out = Path(scratch) / f"run{next(counter)}"
            command = [*dpbandits_command(), "reproduce", "dp-bai-figure1", *backends[name], "--trials", str(trials),
                       "--no-plot", "--progress", "none", "--out", str(out)]
            measured = tree_cpu(command)
            shutil.rmtree(out, ignore_errors=True)
            return measured

        if not args.quick:
            for name in backends:  # warm-up: file caches
                run(name)
        names = list(backends)
        for r in range(rounds):
            for name in names[r % len(names):] + names[: r % len(names)]:
                seconds, elapsed = run(name)
                cpu[name].append(seconds)
                wall[name].append(elapsed)
    median_cpu = {name: statistics.median(values) for name, values in cpu.items()}
    for name in backends:
        report_value(f"Figure 1 {name}: CPU of the process tree", median_cpu[name], "s (median)")
        report_value(f"Figure 1 {name}: wall", statistics.median(wall[name]), "s (median)")
    ratio = median_cpu["process"] / median_cpu["serial"]
    report_ratio("Figure 1: process backend (2 workers) / serial, CPU", ratio,
                 numerator=f"process {median_cpu['process']:.2f} s CPU", denominator=f"serial {median_cpu['serial']:.2f} s CPU",
                 target="<= 1.1", met=ratio <= 1.1)
    if "dask" in backends:
        ratio = median_cpu["dask"] / median_cpu["process"]
        report_ratio("Figure 1: dask local cluster (2 workers) / process backend, CPU", ratio,
                     numerator=f"dask {median_cpu['dask']:.2f} s CPU", denominator=f"process {median_cpu['process']:.2f} s CPU",
                     target="<= 1.5", met=ratio <= 1.5)
    else:
        print("# dask.distributed is not installed: no dask ratio")
    pool_start_and_stop()
    print(f"# {load_average()}")


def pool_start_and_stop() -> None:
    """CPU of forking 2 workers and stopping them (this process and its children), in this process."""
    import resource

    import dpbandits.experiments.runner  # noqa: F401  (the command's process has it imported when it forks)
    from dpbandits.experiments.backends import ProcessBackend, fork_is_safe

    if not fork_is_safe():
        print("# this process cannot fork its workers: no start-and-stop measure")
        return

    def cpu() -> float:
        own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime

    samples = []
    for _ in range(7):
        before = cpu()
        with ProcessBackend(workers=2):
            pass
        samples.append(cpu() - before)
    report_value("process backend: fork and stop 2 workers, CPU (this process and the workers)",
                 statistics.median(samples) * 1e3, "ms (median of 7)")


if __name__ == "__main__":
    main()
