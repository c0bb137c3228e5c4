"""Run the benchmarks: every ``benchmarks/bench_*.py``, one after the other, each in its own process.

Usage::

    python benchmarks/run.py                 # every benchmark at full size
    python benchmarks/run.py --quick         # reduced sizes (each script's --quick), to check they work
    python benchmarks/run.py -k runner -k envs   # only benchmarks whose name contains one of these
    python benchmarks/run.py --list          # list the benchmarks found

Each benchmark script prints its own figures and ratios (measured against a reference run in the same
process); this runner prints them as they come, then a table of every benchmark's status and wall
time, and finally every line that reports a ratio or a speed-up, so the figures can be read at a
glance. It exits with status 1 if any benchmark failed or timed out.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def discover(selected: list[str]) -> list[Path]:
    scripts = sorted(HERE.glob("bench_*.py"))
    if selected:
        scripts = [path for path in scripts if any(word in path.stem for word in selected)]
    return scripts


def is_figure_line(line: str) -> bool:
    lowered = line.lower()
    return not line.startswith("#") and ("ratio" in lowered or "speed-up" in lowered or "speedup" in lowered)


def run_one(script: Path, quick: bool, timeout: float) -> tuple[str, float, list[str]]:
    command = [sys.executable, str(script), *(["--quick"] if quick else [])]
    print(f"\n=== {script.stem} ({' '.join(command[1:])}) ===", flush=True)
    start = time.perf_counter()
    figures: list[str] = []
    try:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=HERE.parent)
    except OSError as exc:
        print(f"cannot start: {exc}")
        return "error", 0.0, figures
    assert process.stdout is not None
    try:
        deadline = start + timeout
        for line in process.stdout:
            print(line, end="", flush=True)
            if is_figure_line(line):
                figures.append(line.rstrip())
            if time.perf_counter() > deadline:
                raise subprocess.TimeoutExpired(command, timeout)
        process.wait(timeout=max(deadline - time.perf_counter(), 1.0))
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        return "timeout", time.perf_counter() - start, figures
    finally:
        process.stdout.close()
    status = "ok" if process.returncode == 0 else f"failed ({process.returncode})"
    return status, time.perf_counter() - start, figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="pass --quick to every benchmark (reduced sizes)")
    parser.add_argument("-k", "--select", action="append", default=[], help="run benchmarks whose name contains this")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds allowed per benchmark")
    parser.add_argument("--list", action="store_true", help="list the benchmarks and exit")
    args = parser.parse_args()
    scripts = discover(args.select)
    if args.list or not scripts:
        for script in scripts:
            print(script.stem)
        if not scripts:
            print("no benchmark matches", file=sys.stderr)
            return 1
        return 0
    results = [(script.stem, *run_one(script, args.quick, args.timeout)) for script in scripts]
    print("\n=== summary ===")
    width = max(len(name) for name, *_ in results)
    for name, status, seconds, _ in results:
        print(f"{name:{width}s}  {status:12s} {seconds:8.1f} s")
    print("\n=== figures (ratios and speed-ups) ===")
    for name, _, _, figures in results:
        for line in figures:
            print(f"{name:{width}s}  {line}")
    return 0 if all(status == "ok" for _, status, _, _ in results) else 1


if __name__ == "__main__":
    sys.exit(main())
