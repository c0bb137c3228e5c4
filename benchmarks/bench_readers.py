"""Reading logged data at scale: ``dpbandits account mab`` on a 10^7-row CSV (issue 13, item 9).

Target: 10^7 rows in < 5 s of wall time and < 3× the file size in memory. Every figure is measured
in a fresh process (peak resident memory from ``os.wait4``), beside references in the same run:

* the same ``account`` command on a 2-row file: the fixed cost (interpreter, imports); the memory the
  data costs is the peak minus this baseline, reported as a ratio to the file size;
* in a process of its own each, after imports and a warm-up: ``read_bandit_statistics`` (what
  ``account mab`` reads with), ``pyarrow.csv.read_csv`` of the same file into a table (a vectorised
  parser alone, no checks: the reference of the ratios) and ``read_logged_bandit`` (the records in
  memory, for the library), each with the growth of the peak memory it causes.

The file holds ``action,reward`` rows with K = 100 arms and 0/1 rewards (about 5 bytes a row, the
hardest case for a memory ratio against the file size).

Usage::

    python benchmarks/bench_readers.py            # 10^7 rows (the lead's run, ~1 minute)
    python benchmarks/bench_readers.py --quick    # 2·10^5 rows, to check the script works
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import load_average, report_ratio

N_ARMS = 100


def write_logged_csv(path: Path, n_rows: int, seed: int = 20261125) -> None:
    import pyarrow as pa
    from pyarrow import csv as pa_csv

    rng = np.random.default_rng(seed)
    with path.open("wb") as handle:
        handle.write(b"action,reward\n")
        for start in range(0, n_rows, 1_000_000):
            size = min(1_000_000, n_rows - start)
            table = pa.table({"action": rng.integers(0, N_ARMS, size), "reward": rng.integers(0, 2, size)})
            pa_csv.write_csv(table, handle, write_options=pa_csv.WriteOptions(include_header=False))


def measure(command: list[str]) -> tuple[float, float, str]:
    """Wall seconds, peak resident MB and stdout of one process."""
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - start
    out = process.stdout.read() if process.stdout else ""
    err = process.stderr.read() if process.stderr else ""
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({process.returncode}):\n{err}")
    return seconds, usage.ru_maxrss / 1024, out


def median(values: list[float]) -> float:
    return sorted(values)[len(values) // 2]


def best(command: list[str], repeats: int) -> tuple[float, float]:
    """Median wall seconds and median peak MB of ``repeats`` runs of a command."""
    runs = [measure(command)[:2] for _ in range(repeats)]
    return median([r[0] for r in runs]), median([r[1] for r in runs])


# In a fresh process: import, warm up on the 2-row file (code pages, pools), then time one call and
# take the growth of the peak resident memory it causes.
IN_PROCESS = f"""
import json, resource, sys, time
from pyarrow import csv
from dpbandits.envs.readers import read_bandit_statistics, read_logged_bandit
calls = {{
    "statistics": lambda path: read_bandit_statistics(path, n_arms={N_ARMS}),
    "records": lambda path: read_logged_bandit(path, n_arms={N_ARMS}),
    "pyarrow": lambda path: csv.read_csv(path),
}}
call = calls[sys.argv[1]]
call(sys.argv[3])
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.perf_counter()
call(sys.argv[2])
seconds = time.perf_counter() - start
print(json.dumps({{"seconds": seconds, "mb": (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024}}))
"""


def in_process(name: str, big: Path, tiny: Path, repeats: int) -> tuple[float, float]:
    import json

    runs = [json.loads(measure([sys.executable, "-c", IN_PROCESS, name, str(big), str(tiny)])[2])
            for _ in range(repeats)]
    return median([r["seconds"] for r in runs]), median([r["mb"] for r in runs])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2·10^5 rows, to check the script works")
    parser.add_argument("--rows", type=int, default=None, help="number of rows (default 10^7)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    n_rows = args.rows or (200_000 if args.quick else 10_000_000)
    full_size = n_rows >= 10_000_000
    repeats = 1 if args.quick else args.repeats
    dpbandits = shutil.which("dpbandits", path=str(Path(sys.executable).parent)) or shutil.which("dpbandits")
    cli = [dpbandits] if dpbandits else [sys.executable, "-m", "dpbandits"]
    folder = Path(tempfile.mkdtemp(prefix="bench_readers_"))
    try:
        big, tiny = folder / "logged.csv", folder / "tiny.csv"
        write_logged_csv(big, n_rows)
        tiny.write_text("action,reward\n0,1\n1,0\n")
        size_mb = big.stat().st_size / 2**20
        account = [*cli, "account", "mab", "--n-arms", str(N_ARMS), "--eta", "0.5", "--beta0", "0.1", "--json"]
        assert '"epsilon0"' in measure([*account, "--data", str(big)])[2]
        base_s, base_mb = best([*account, "--data", str(tiny)], repeats)
        cli_s, cli_mb = best([*account, "--data", str(big)], repeats)
        stats_s, stats_mb = in_process("statistics", big, tiny, repeats)
        arrow_s, arrow_mb = in_process("pyarrow", big, tiny, repeats)
        records_s, records_mb = in_process("records", big, tiny, repeats)
    finally:
        shutil.rmtree(folder, ignore_errors=True)

    print(f"# medians of {repeats} runs (each in a fresh process, run one after the other); {load_average()}")
    print(f"file: {n_rows:,} rows, {size_mb:.1f} MB (action,reward; K = {N_ARMS})")
    print(f"dpbandits account mab, whole command: {cli_s:6.2f} s, peak {cli_mb:6.1f} MB "
          f"(on a 2-row file: {base_s:5.2f} s, {base_mb:6.1f} MB)")
    print(f"read_bandit_statistics (what account reads with): {stats_s:6.2f} s, +{stats_mb:6.1f} MB")
    print(f"pyarrow.csv.read_csv (reference, parse only):     {arrow_s:6.2f} s, +{arrow_mb:6.1f} MB")
    print(f"read_logged_bandit (the records, for the library): {records_s:5.2f} s, +{records_mb:6.1f} MB")
    report_ratio("read_bandit_statistics / pyarrow read_csv, time", stats_s / arrow_s,
                 numerator=f"ours {stats_s:.2f} s", denominator=f"pyarrow {arrow_s:.2f} s")
    report_ratio("read_bandit_statistics / pyarrow read_csv, memory", stats_mb / max(arrow_mb, 0.1),
                 numerator=f"ours +{stats_mb:.1f} MB", denominator=f"pyarrow +{arrow_mb:.1f} MB")
    if full_size:
        report_ratio("account mab: memory of the data / file size", (cli_mb - base_mb) / size_mb,
                     numerator=f"{cli_mb - base_mb:.1f} MB", denominator=f"file {size_mb:.1f} MB", target="< 3",
                     met=(cli_mb - base_mb) / size_mb < 3)
    target = " (target < 3)" if full_size else " (a small file: allocator noise, no target)"
    print(f"ratio memory of the data / file size: account {(cli_mb - base_mb) / size_mb:5.2f}{target}, "
          f"read_bandit_statistics {stats_mb / size_mb:5.2f}, pyarrow table {arrow_mb / size_mb:5.2f}, "
          f"records {records_mb / size_mb:5.2f}")
    if full_size:
        print(f"target 10^7 rows in < 5 s: {'met' if cli_s < 5 else 'MISSED'} ({cli_s:.2f} s, whole command); "
              f"target < 3x file size: {'met' if cli_mb - base_mb < 3 * size_mb else 'MISSED'}")
    else:
        print("targets are stated at 10^7 rows: run without --quick")


if __name__ == "__main__":
    main()
