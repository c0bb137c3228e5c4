"""What the plots cost (issues 26, 38): a run with its plots against the same run without them.

1. ``dpbandits reproduce dp-bai-figure1 --backend process --workers 2`` with its plots (the default)
   against the same command with ``--no-plot``: the ratio of their median wall times over interleaved
   runs, each a fresh process into a fresh run directory. Target: <= 1.3.
2. ``plot_run`` alone on the finished run (both figures, PNG and PDF), in this process after a
   warm-up: the drawing cost the ratio pays, with matplotlib already imported.
3. ``dpbandits reproduce quickstart`` (a run of a few seconds, most of it start-up) with its plot
   against ``--no-plot``: median wall time (target <= 1.3) and median CPU of the whole process tree
   (the run, the drawing process; ``_harness.tree_cpu``) over interleaved runs.

Usage::

    python benchmarks/bench_plots.py            # full: 1000 trials per cell, 3 rounds; quickstart 7 rounds
    python benchmarks/bench_plots.py --quick    # 200 trials per cell, 1 round; quickstart 1 round
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _harness import dpbandits_command, interleaved, load_average, report_ratio, report_value, tree_cpu  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="200 trials per cell, one round")
    args = parser.parse_args()
    trials, rounds = (200, 1) if args.quick else (1000, 3)
    print(f"# Figure 1 with and without plots, {trials} trials per cell, {rounds} round(s); {load_average()}")
    base = [*dpbandits_command(), "reproduce", "dp-bai-figure1", "--backend", "process", "--workers", "2",
            "--trials", str(trials), "--progress", "none"]
    with tempfile.TemporaryDirectory() as scratch:
        counter = iter(range(10_000))

        def run(*extra: str) -> None:
            out = Path(scratch) / f"run{next(counter)}"
            subprocess.run([*base, "--out", str(out), *extra], check=True, stdout=subprocess.DEVNULL)

        times = interleaved({"plots": lambda: run(), "no-plot": lambda: run("--no-plot")}, rounds,
                            warmup=not args.quick)
        report_value("Figure 1 with plots", times["plots"], "s")
        report_value("Figure 1 --no-plot", times["no-plot"], "s")
        report_ratio("Figure 1: plots / --no-plot wall", times["plots"] / times["no-plot"],
                     numerator="with plots", denominator="--no-plot", target="<= 1.3")
        from dpbandits.experiments.plots import plot_run

        finished = Path(scratch) / "finished"
        subprocess.run([*base, "--out", str(finished), "--no-plot"], check=True, stdout=subprocess.DEVNULL)
        plot_run(finished, out_dir=Path(scratch) / "warm")  # imports and caches
        start = time.perf_counter()
        written = plot_run(finished, out_dir=Path(scratch) / "plots")
        report_value(f"plot_run alone ({len(written)} files)", time.perf_counter() - start, "s")
        quickstart(Path(scratch), 1 if args.quick else 7, warmup=not args.quick)


def quickstart(scratch: Path, rounds: int, *, warmup: bool) -> None:
    """The quickstart with its plot against ``--no-plot``: wall and CPU of the process tree, interleaved."""
    counter = iter(range(10_000))
    variants = {"plots": [], "no-plot": ["--no-plot"]}
    cpu: dict[str, list[float]] = {name: [] for name in variants}
    wall: dict[str, list[float]] = {name: [] for name in variants}
    for r in range(rounds + warmup):  # a first round, when asked, warms the file caches
        for name in list(variants)[r % 2:] + list(variants)[: r % 2]:
            out = scratch / f"quickstart{next(counter)}"
            seconds, elapsed = tree_cpu([*dpbandits_command(), "reproduce", "quickstart", "--progress", "none", "--out", str(out),
                                         *variants[name]])
            if r >= warmup:
                cpu[name].append(seconds)
                wall[name].append(elapsed)
    walls = {name: statistics.median(values) for name, values in wall.items()}
    cpus = {name: statistics.median(values) for name, values in cpu.items()}
    for name in variants:
        report_value(f"quickstart {name}: wall", walls[name], "s (median)")
        report_value(f"quickstart {name}: CPU of the process tree", cpus[name], "s (median)")
    ratio = walls["plots"] / walls["no-plot"]
    report_ratio("quickstart: plots / --no-plot wall", ratio, numerator=f"with plots {walls['plots']:.2f} s",
                 denominator=f"--no-plot {walls['no-plot']:.2f} s", target="<= 1.3", met=ratio <= 1.3)
    report_ratio("quickstart: plots / --no-plot CPU", cpus["plots"] / cpus["no-plot"],
                 numerator=f"with plots {cpus['plots']:.2f} s CPU", denominator=f"--no-plot {cpus['no-plot']:.2f} s CPU",
                 note="CPU counts matplotlib's import, which the wall time overlaps with the run on an idle core")


if __name__ == "__main__":
    main()
