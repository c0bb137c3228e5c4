"""``dpbandits serve`` under load: ask+tell throughput and latency with 32 concurrent clients (issue 16).

Target: >= 500 acknowledged tells/s on SQLite on 2 cores with p99 < 50 ms.

For each store — SQLite with ``synchronous=FULL`` (the default: a commit survives a power loss),
SQLite with ``synchronous=NORMAL`` (survives a killed process, not a power loss) and PostgreSQL
(Debian's package, a throw-away cluster on loopback) — a server process runs, 4 DP-BAI experiments
(K = 8, budgets large enough never to finish) are created, and 32 client threads (httpx, one process,
beside the server on the same 2 cores) do ask → tell rounds for a fixed time. Reported: acknowledged
tells/s, p50/p99 of one round (ask + tell, as a client sees it), the CPU time per tell of the
server and of the clients (both share the 2 cores), and, as the reference in the same run, the rounds/s of the same 32 clients doing two ``GET /healthz``
per round on the same server (the HTTP stack alone): the ratio says how much of the ceiling the
service's own work (validation, the agent, the transaction) leaves. The machine's load average is
printed: on a shared machine the figures are a lower bound.

Usage::

    python benchmarks/bench_serve.py            # 15 s per store
    python benchmarks/bench_serve.py --quick    # 3 s per store, to check the script works
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import report_ratio

from dpbandits.serve.auth import create_key
from dpbandits.serve.storage import make_engine
from dpbandits.serve.testing import LocalPostgres, ServerProcess, drive_clients, postgres_binaries

N_CLIENTS = 32


def _health_rounds(url: str, seconds: float, n_clients: int = N_CLIENTS) -> list[float]:
    latencies: list[float] = []
    guard = threading.Lock()
    deadline = time.monotonic() + seconds

    def health() -> None:
        with httpx.Client(base_url=url, timeout=60) as http:
            while time.monotonic() < deadline:
                started = time.perf_counter()
                http.get("/healthz")
                http.get("/healthz")
                with guard:
                    latencies.append(time.perf_counter() - started)

    threads = [threading.Thread(target=health) for _ in range(n_clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return latencies


def _load(url: str, key: str, ids: list[str], seconds: float, mode: str) -> tuple[float, float, float, list[str]]:
    started = time.perf_counter()
    errors: list[str] = []
    if mode == "service":
        result = drive_clients(url, key, ids, n_clients=N_CLIENTS, max_seconds=seconds)
        latencies, errors = result.latencies, result.errors[:3]
    else:
        latencies = _health_rounds(url, seconds)
    wall = time.perf_counter() - started
    milliseconds = np.array(latencies) * 1e3
    return (len(latencies) / wall, float(np.percentile(milliseconds, 50)), float(np.percentile(milliseconds, 99)),
            errors)


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def bench(label: str, db: str, seconds: float, synchronous: str = "full") -> float:
    engine = make_engine(db)
    _, key = create_key(engine, "bench")
    engine.dispose()
    with tempfile.TemporaryDirectory() as directory, ServerProcess(
            db, synchronous=synchronous, log=Path(directory) / "server.log") as server:
        with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {key}"}, timeout=300) as http:
            ids = [http.post("/v1/experiments", json={"kind": "dp-bai", "params": {
                "n_arms": 8, "budget": 10_000_000, "epsilon": 1.0}}).json()["id"] for _ in range(4)]
        assert server.process is not None
        health_rate, health_p50, health_p99, _ = _load(server.url, key, ids, seconds / 2, "health")
        cpu_before, client_before = _cpu_seconds(server.process.pid), time.process_time()
        rate, p50, p99, errors = _load(server.url, key, ids, seconds, "service")
        cpu = _cpu_seconds(server.process.pid) - cpu_before
        client_cpu = time.process_time() - client_before
    print(f"{label:28s} {rate:8.0f} tells/s   p50 {p50:6.1f} ms   p99 {p99:6.1f} ms   "
          f"CPU per tell: server {1e3 * cpu / max(rate * seconds, 1):4.2f} ms, clients "
          f"{1e3 * client_cpu / max(rate * seconds, 1):4.2f} ms   errors {len(errors)}")
    print(f"{'':28s} reference: 2 x GET /healthz rounds {health_rate:8.0f}/s (p50 {health_p50:.1f} ms, "
          f"p99 {health_p99:.1f} ms); ratio tells/s : healthz rounds/s = {rate / health_rate:.2f}")
    if errors:
        print(f"{'':28s} first errors: {errors}")
    # for run.py's table of ratios (issue 17); one timed run per store, the reference in the same run
    report_ratio(f"{label}: tells/s / healthz rounds/s", rate / health_rate, numerator=f"{rate:.0f} tells/s",
                 denominator=f"{health_rate:.0f} healthz rounds/s", target=">= 0.5 (issue 25)",
                 met=rate / health_rate >= 0.5)
    report_ratio(f"{label}: tells/s / the 500 tells/s target", rate / 500.0, numerator=f"{rate:.0f} tells/s",
                 denominator="500 tells/s", target=">= 1", met=rate >= 500.0)
    return rate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 s per store instead of 15 s")
    args = parser.parse_args()
    seconds = 3.0 if args.quick else 15.0
    print(f"# {N_CLIENTS} client threads, {seconds:g} s per store, {os.cpu_count()} cores, "
          f"load average before: {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory() as directory:
        bench("SQLite, synchronous=FULL", str(Path(directory) / "full.db"), seconds, "full")
        bench("SQLite, synchronous=NORMAL", str(Path(directory) / "normal.db"), seconds, "normal")
    if postgres_binaries() is None:
        print("PostgreSQL: skipped (initdb/pg_ctl not installed: apt-get install postgresql)")
    else:
        cluster = LocalPostgres().start()
        try:
            bench("PostgreSQL", cluster.url, seconds)
        finally:
            cluster.stop()
    print(f"# load average after: {os.getloadavg()[0]:.2f} (other processes on the machine share the cores)")


if __name__ == "__main__":
    main()
