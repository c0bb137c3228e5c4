"""``dpbandits serve``: one tenant's stalls on another, and two server processes against one (issue 25).

Two measurements, each against a reference taken in the same run:

* **Stall**: tenant B drives a small DP-BAI experiment (K = 8) with 8 client threads, alone, then
  while tenant A (another API key) sends bad tells (reward 2.0, each a correct 400) to a K = 1000
  DP-BAI experiment (an 8 MB state) from 4 threads. Reported: B's round (ask + tell) p99 with A
  ÷ B's p99 alone; target <= 2. Before issue 25 a bad tell evicted A's agent and reloaded it on
  the one writer thread every tenant shared.
* **Scale-out** (PostgreSQL): acknowledged tells/s of 32 clients on 2 server processes (16 each, one
  store, 4 experiments) ÷ the same on 1 process; and each against its own ``/healthz`` rounds/s.

The machine's load average is printed; on a shared machine the figures are a lower bound (the
clients, the servers and PostgreSQL share the same cores).

Usage::

    python benchmarks/bench_serve_isolation.py            # 15 s per phase
    python benchmarks/bench_serve_isolation.py --quick    # 3 s per phase
    python benchmarks/bench_serve_isolation.py --only stall
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
from bench_serve import _health_rounds

from dpbandits.serve.auth import create_key
from dpbandits.serve.storage import make_engine
from dpbandits.serve.testing import LoadResult, LocalPostgres, ServerProcess, drive_clients, postgres_binaries


def _keys(db: str, *names: str) -> list[str]:
    engine = make_engine(db)
    keys = [create_key(engine, name)[1] for name in names]
    engine.dispose()
    return keys


def _experiments(url: str, key: str, n_arms: int, count: int) -> list[str]:
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=600) as http:
        return [http.post("/v1/experiments", json={"kind": "dp-bai", "params": {
            "n_arms": n_arms, "budget": 10_000_000, "epsilon": 1.0}}).json()["id"] for _ in range(count)]


def _p99(latencies: list[float]) -> float:
    return float(np.percentile(np.array(latencies) * 1e3, 99)) if latencies else float("nan")


def _bad_tells(url: str, key: str, experiment: str, stop: threading.Event, counts: list[int]) -> None:
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=60) as http:
        while not stop.is_set():
            asked = http.post(f"/v1/experiments/{experiment}/ask")
            if asked.status_code != 200:
                time.sleep(0.01)
                continue
            told = http.post(f"/v1/experiments/{experiment}/tell", json={"ticket": asked.json()["ticket"],
                                                                         "reward": 2.0})
            counts.append(told.status_code)


def bench_stall(seconds: float) -> None:
    with tempfile.TemporaryDirectory() as directory:
        db = str(Path(directory) / "stall.db")
        key_a, key_b = _keys(db, "tenant A", "tenant B")
        with ServerProcess(db, log=Path(directory) / "server.log") as server:
            small = _experiments(server.url, key_b, 8, 1)
            large = _experiments(server.url, key_a, 1000, 1)[0]
            alone = drive_clients(server.url, key_b, small, n_clients=8, max_seconds=seconds)
            stop, counts = threading.Event(), []
            attackers = [threading.Thread(target=_bad_tells, args=(server.url, key_a, large, stop, counts))
                         for _ in range(4)]
            for attacker in attackers:
                attacker.start()
            time.sleep(0.5)
            attacked = drive_clients(server.url, key_b, small, n_clients=8, max_seconds=seconds)
            stop.set()
            for attacker in attackers:
                attacker.join()
    refused = sum(1 for c in counts if c == 400)
    p99_alone, p99_attacked = _p99(alone.latencies), _p99(attacked.latencies)
    print(f"tenant B alone: {len(alone.latencies) / alone.seconds:.0f} rounds/s, p99 {p99_alone:.1f} ms; "
          f"with tenant A's bad tells ({refused} refused with 400, {len(counts) - refused} other): "
          f"{len(attacked.latencies) / attacked.seconds:.0f} rounds/s, p99 {p99_attacked:.1f} ms")
    report_ratio("stall: B's p99 with A's bad tells (K=1000) / B's p99 alone", p99_attacked / p99_alone,
                 numerator=f"{p99_attacked:.1f} ms", denominator=f"{p99_alone:.1f} ms", target="<= 2",
                 met=p99_attacked <= 2 * p99_alone)


def _rate(urls: list[str], key: str, ids: list[str], seconds: float) -> tuple[float, float, list[str]]:
    """Acknowledged tells/s of 32 clients split over ``urls``, and the healthz rounds/s of the same split."""
    load = LoadResult()
    started = time.perf_counter()
    drivers = [threading.Thread(target=drive_clients, args=(url, key, ids),
                                kwargs={"n_clients": 32 // len(urls), "max_seconds": seconds, "result": load})
               for url in urls]
    for driver in drivers:
        driver.start()
    for driver in drivers:
        driver.join()
    rate = len(load.acknowledged) / (time.perf_counter() - started)
    health: list[float] = []
    started = time.perf_counter()
    threads = [threading.Thread(target=lambda url=url: health.extend(_health_rounds(url, seconds / 2, 32 // len(urls))))
               for url in urls]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return rate, len(health) / (time.perf_counter() - started), load.errors[:3]


def bench_scale(seconds: float) -> None:
    if postgres_binaries() is None:
        print("scale-out: skipped (PostgreSQL's initdb/pg_ctl are not installed: apt-get install postgresql)")
        return
    cluster = LocalPostgres().start()
    try:
        (key,) = _keys(cluster.url, "bench")
        with tempfile.TemporaryDirectory() as directory:
            log = Path(directory) / "server.log"
            with ServerProcess(cluster.url, log=log) as first:
                ids = _experiments(first.url, key, 8, 4)
                one, health_one, errors_one = _rate([first.url], key, ids, seconds)
                with ServerProcess(cluster.url, log=log) as second:
                    two, health_two, errors_two = _rate([first.url, second.url], key, ids, seconds)
    finally:
        cluster.stop()
    if not (one > 0 and health_one > 0 and health_two > 0):
        print(f"scale-out: no rate measured (1 process: {one} tells/s, errors {errors_one + errors_two})")
        return
    print(f"PostgreSQL, 1 process: {one:.0f} tells/s (healthz rounds {health_one:.0f}/s); "
          f"2 processes: {two:.0f} tells/s (healthz rounds {health_two:.0f}/s); errors {errors_one + errors_two}")
    report_ratio("scale-out: tells/s on 2 processes / on 1 (PostgreSQL)", two / one, numerator=f"{two:.0f} tells/s",
                 denominator=f"{one:.0f} tells/s", note="2 cores shared by clients, servers and PostgreSQL")
    report_ratio("scale-out: 1 process tells/s / healthz rounds/s", one / health_one,
                 numerator=f"{one:.0f} tells/s", denominator=f"{health_one:.0f} rounds/s")
    report_ratio("scale-out: 2 processes tells/s / healthz rounds/s", two / health_two,
                 numerator=f"{two:.0f} tells/s", denominator=f"{health_two:.0f} rounds/s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 s per phase instead of 15 s")
    parser.add_argument("--only", choices=("stall", "scale"), help="one of the two measurements")
    args = parser.parse_args()
    seconds = 3.0 if args.quick else 15.0
    print(f"# {seconds:g} s per phase, {os.cpu_count()} cores, load average before: {os.getloadavg()[0]:.2f}")
    if args.only in (None, "stall"):
        bench_stall(seconds)
    if args.only in (None, "scale"):
        bench_scale(seconds)
    print(f"# load average after: {os.getloadavg()[0]:.2f} (other processes on the machine share the cores)")


if __name__ == "__main__":
    main()
