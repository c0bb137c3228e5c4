"""What a command-line user waits for (issues 17, 38): start-up, an account of a small file, and Figure 1 with plots.

1. ``dpbandits --help``: median wall time of interleaved runs, each a fresh process, beside the
   interpreter alone (``python -c pass``) and ``python -c "import typer"``; target < 0.2 s.
2. ``dpbandits account mab`` on a 100-row CSV (issue 38), beside ``python -c "import numpy"``: median
   CPU time (user + system, of the child process, from ``resource.getrusage(RUSAGE_CHILDREN)``, which
   a busy machine disturbs less than wall time) of interleaved runs; target <= 4 × ``import numpy``.
3. ``dpbandits reproduce dp-bai-figure1 --backend process --workers 2`` end to end (start-up,
   simulation, summary, plots), against its simulation time, measured two ways in the same run:
   the run phase as the runner reports it (``complete: ... X s``: the simulations and the cell
   writes, worker start-up included) and the pure compute (the cells' simulation seconds recorded in
   the manifest, summed, divided by the 2 workers). Target: end to end <= 2 × the simulation time.

Usage::

    python benchmarks/bench_cli.py            # full: 15 start-up runs, Figure 1 three times (1000 trials)
    python benchmarks/bench_cli.py --quick    # fewer runs, Figure 1 once with 200 trials per cell
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _harness import dpbandits_command, load_average, report_ratio, report_value  # noqa: E402


def _wall(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def startup(runs: int) -> None:
    commands = {
        "dpbandits --help": [*dpbandits_command(), "--help"],
        "python -c pass": [sys.executable, "-c", "pass"],
        "python -c 'import typer'": [sys.executable, "-c", "import typer"],
    }
    for command in commands.values():
        _wall(command)  # warm the file cache
    times: dict[str, list[float]] = {name: [] for name in commands}
    for r in range(runs):
        names = list(commands)[r % len(commands):] + list(commands)[: r % len(commands)]
        for name in names:
            times[name].append(_wall(commands[name]))
    medians = {name: statistics.median(values) for name, values in times.items()}
    for name, seconds in medians.items():
        report_value(f"start-up: {name}", seconds * 1e3, "ms (median)")
    helped = medians["dpbandits --help"]
    report_ratio("dpbandits --help / the 0.2 s target", helped / 0.2, numerator=f"--help {helped * 1e3:.0f} ms",
                 denominator="200 ms", target="<= 1", met=helped <= 0.2)
    report_ratio("dpbandits --help / the bare interpreter", helped / medians["python -c pass"],
                 numerator=f"--help {helped * 1e3:.0f} ms",
                 denominator=f"python -c pass {medians['python -c pass'] * 1e3:.0f} ms")


def _cpu(command: list[str]) -> float:
    """CPU seconds (user + system) of one run of ``command`` and of every process it waited for."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def account(runs: int) -> None:
    folder = Path(tempfile.mkdtemp(prefix="bench_cli_account_"))
    try:
        data = folder / "logged.csv"
        data.write_text("action,reward\n" + "".join(f"{i % 3},{(i * 37 % 100) / 100:.2f}\n" for i in range(100)))
        commands = {
            "account mab (100-row CSV)": [*dpbandits_command(), "account", "mab", "--data", str(data), "--n-arms", "3", "--json"],
            "python -c 'import numpy'": [sys.executable, "-c", "import numpy"],
        }
        for command in commands.values():
            _cpu(command)  # warm the file cache
        times: dict[str, list[float]] = {name: [] for name in commands}
        for r in range(runs):
            for name in list(commands)[r % 2:] + list(commands)[: r % 2]:
                times[name].append(_cpu(commands[name]))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    medians = {name: statistics.median(values) for name, values in times.items()}
    for name, seconds in medians.items():
        report_value(f"CPU: {name}", seconds * 1e3, "ms (median)")
    used, numpy_cpu = medians["account mab (100-row CSV)"], medians["python -c 'import numpy'"]
    report_ratio("account mab (100-row CSV) / import numpy, CPU", used / numpy_cpu,
                 numerator=f"account mab {used * 1e3:.0f} ms CPU", denominator=f"import numpy {numpy_cpu * 1e3:.0f} ms CPU",
                 target="<= 4", met=used <= 4 * numpy_cpu)


def figure1(runs: int, trials: int | None) -> None:
    walls, phases, computes = [], [], []
    for _ in range(runs):
        folder = Path(tempfile.mkdtemp(prefix="bench_cli_"))
        try:
            command = [*dpbandits_command(), "reproduce", "dp-bai-figure1", "--backend", "process", "--workers", "2",
                       "--out", str(folder / "run"), "--progress", "log",
                       *(["--trials", str(trials)] if trials else [])]
            start = time.perf_counter()
            done = subprocess.run(command, capture_output=True, text=True, check=True)
            walls.append(time.perf_counter() - start)
            found = re.search(r"complete: .* ([0-9.]+) s \(process\)", done.stdout)
            if found is None:
                raise SystemExit(f"unexpected output of {' '.join(command)}:\n{done.stdout}")
            phases.append(float(found.group(1)))
            manifest = json.loads((folder / "run" / "manifest.json").read_text())
            computes.append(sum(cell["seconds"] for cell in manifest["cells"].values()) / 2)
            for line in (done.stdout + done.stderr).splitlines():
                if "process backend" in line:
                    print(f"  {line.strip()}")
            plots = sorted(p.name for p in (folder / "run" / "plots").iterdir())
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    wall, phase, compute = (statistics.median(values) for values in (walls, phases, computes))
    print(f"# dp-bai-figure1 ({trials or 1000} trials per cell), medians of {runs}: end to end {wall:.2f} s, "
          f"run phase {phase:.2f} s, simulation compute / 2 workers {compute:.2f} s; plots {plots}")
    report_value("Figure 1 end to end with plots", wall, "s")
    report_value("Figure 1 run phase (simulation, as the runner reports it)", phase, "s")
    report_value("Figure 1 simulation compute / 2 workers", compute, "s")
    report_ratio("Figure 1 end to end / its run phase", wall / phase, numerator=f"end to end {wall:.2f} s",
                 denominator=f"run phase {phase:.2f} s", target="<= 2", met=wall <= 2 * phase)
    report_ratio("Figure 1 end to end / its simulation compute on 2 workers", wall / compute,
                 numerator=f"end to end {wall:.2f} s", denominator=f"compute / 2 {compute:.2f} s", target="<= 2",
                 met=wall <= 2 * compute)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer runs and trials, to check that it runs")
    args = parser.parse_args()
    print(f"# {load_average()}")
    startup(5 if args.quick else 15)
    account(3 if args.quick else 15)
    figure1(1 if args.quick else 3, 200 if args.quick else None)
    print(f"# {load_average()}")


if __name__ == "__main__":
    main()
