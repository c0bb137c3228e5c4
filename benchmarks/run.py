"""Run the benchmarks: every ``benchmarks/bench_*.py``, one after the other, each in its own process.

Usage::

    python benchmarks/run.py                 # every benchmark at full size
    python benchmarks/run.py --quick         # reduced sizes (each script's --quick), to check they work
    python benchmarks/run.py -k runner -k envs   # only benchmarks whose name contains one of these
    python benchmarks/run.py --list          # list the benchmarks found

Each benchmark script prints its own figures and ratios (medians of interleaved runs against a
reference run in the same process, see ``_harness.py``); this runner prints them as they come, then a
table of every benchmark's status and wall time, and finally every ratio. Every ratio a benchmark
reports (its ``#ratio`` lines) is also written, with the measured values (``#value`` lines), each
benchmark's status, the load average and the command, to ``benchmarks/results/ratios.md`` (a table)
and ``benchmarks/results/ratios.json`` (``--results DIR`` elsewhere). It exits with status 1 if any
benchmark failed or timed out.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"


def discover(selected: list[str]) -> list[Path]:
    scripts = sorted(HERE.glob("bench_*.py"))
    if selected:
        scripts = [path for path in scripts if any(word in path.stem for word in selected)]
    return scripts


def is_figure_line(line: str) -> bool:
    lowered = line.lower()
    return not line.startswith("#") and ("ratio" in lowered or "speed-up" in lowered or "speedup" in lowered)


def run_one(script: Path, quick: bool, timeout: float,
            records: list[dict[str, Any]]) -> tuple[str, float, list[str]]:
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
            kind, _, payload = line.partition(" ")
            if kind in ("#ratio", "#value"):  # machine lines: into the results table, not the console
                try:
                    records.append({"benchmark": script.stem, "kind": kind[1:], **json.loads(payload)})
                except ValueError:
                    print(line, end="", flush=True)
                continue
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


def _load() -> str:
    try:
        return "load average {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())
    except OSError:  # pragma: no cover - not on Linux
        return "load average unknown"


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=HERE,
                              check=False).stdout.strip() or "unknown"
    except OSError:
        return "unknown"


def write_results(directory: Path, results: list[tuple[str, str, float, list[str]]],
                  records: list[dict[str, Any]], *, quick: bool, load_before: str) -> tuple[Path, Path]:
    """Write every ratio (and measured value) to ``ratios.json`` and ``ratios.md`` in ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    meta = {
        "command": " ".join(["python", "benchmarks/run.py", *sys.argv[1:]]),
        "quick": quick,
        "finished": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": _commit(),
        "python": sys.version.split()[0],
        "cpu_count": os.cpu_count(),
        "load_before": load_before,
        "load_after": _load(),
        "benchmarks": [{"name": name, "status": status, "seconds": round(seconds, 1)}
                       for name, status, seconds, _ in results],
    }
    json_path = directory / "ratios.json"
    json_path.write_text(json.dumps({**meta, "records": records}, indent=2) + "\n", encoding="utf-8")
    lines = [
        "# Benchmark ratios",
        "",
        f"`{meta['command']}` at commit {meta['commit']}, finished {meta['finished']} "
        f"({'reduced sizes: a check that the benchmarks run, not the figures' if quick else 'full sizes'}); "
        f"{os.cpu_count()} cores, {load_before} before and {meta['load_after']} after.",
        "Each ratio is a ratio of medians of interleaved runs measured in the same process (see each "
        "benchmark's docstring for what is measured and against what).",
        "",
        "| benchmark | ratio | value | numerator | denominator | target | met | note |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for record in (r for r in records if r["kind"] == "ratio"):
        met = "" if record.get("met") is None else ("yes" if record["met"] else "**no**")
        lines.append(f"| {record['benchmark']} | {record['name']} | {record['value']:.3g} | {record['numerator']} "
                     f"| {record['denominator']} | {record.get('target') or ''} | {met} | {record.get('note', '')} |")
    values = [r for r in records if r["kind"] == "value"]
    if values:
        lines += ["", "## Measured values", "", "| benchmark | what | value | unit |", "|---|---|---|---|"]
        lines += [f"| {r['benchmark']} | {r['name']} | {r['value']:.4g} | {r['unit']} |" for r in values]
    lines += ["", "## Benchmarks", "", "| benchmark | status | seconds |", "|---|---|---|"]
    lines += [f"| {b['name']} | {b['status']} | {b['seconds']} |" for b in meta["benchmarks"]]
    markdown_path = directory / "ratios.md"
    markdown_path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return markdown_path, json_path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="pass --quick to every benchmark (reduced sizes)")
    parser.add_argument("-k", "--select", action="append", default=[], help="run benchmarks whose name contains this")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds allowed per benchmark")
    parser.add_argument("--list", action="store_true", help="list the benchmarks and exit")
    parser.add_argument("--results", type=Path, default=RESULTS, help="where ratios.md and ratios.json go")
    args = parser.parse_args()
    scripts = discover(args.select)
    if args.list or not scripts:
        for script in scripts:
            print(script.stem)
        if not scripts:
            print("no benchmark matches", file=sys.stderr)
            return 1
        return 0
    load_before = _load()
    records: list[dict[str, Any]] = []
    results = [(script.stem, *run_one(script, args.quick, args.timeout, records)) for script in scripts]
    print("\n=== summary ===")
    width = max(len(name) for name, *_ in results)
    for name, status, seconds, _ in results:
        print(f"{name:{width}s}  {status:12s} {seconds:8.1f} s")
    print("\n=== figures (ratios and speed-ups) ===")
    for name, _, _, figures in results:
        for line in figures:
            print(f"{name:{width}s}  {line}")
    markdown, table = write_results(args.results, results, records, quick=args.quick, load_before=load_before)
    print(f"\nratios written to {markdown} and {table}")
    return 0 if all(status == "ok" for _, status, _, _ in results) else 1


if __name__ == "__main__":
    sys.exit(main())
