"""``dpbandits serve`` on several processes and with a heavy tenant (issue 34).

Each figure is a ratio against a reference measured in the same run:

* **Heavy neighbour**: tenant B drives a K = 8 DP-BAI experiment (8 client threads) alone, then while
  tenant A tells *valid* feedback to a K = 1000 DP-BAI experiment (an 8 MB state, snapshotted every
  64 steps) from 4 threads. Reported per store and process count: B's round (ask + tell) p99 with A
  ÷ B's p99 alone; target <= 2.
* **Spread** (PostgreSQL): one K = 8 experiment, 16 clients; tells/s with every request landing on a
  random one of 2 processes ÷ the same clients on 1 process (after a warm-up; measured half before
  and half after the two-process phases), and the share of 503 answers; target
  >= 0.8 and <= 1 %; the same with each client sticking to one of the 2 processes. The processes
  run as ``dpbandits serve`` does by default: the one that does not own the experiment forwards its
  requests to the owner (``dpbandits.serve.affinity``).
* **Heavy spread** (PostgreSQL): the K = 1000 experiment, 4 clients spread per request on 2 processes
  ÷ on 1 process (tells/s).
* **404 timing**: ``ask`` on another tenant's experiment that is in the server's memory ÷ on an id that
  does not exist (medians of interleaved requests); target within 0.8–1.25.

The machine's load average is printed; on a shared machine (2 cores for the clients, the servers and
PostgreSQL) the figures are noisy.

Usage::

    python benchmarks/bench_serve_scale.py            # 15 s per phase
    python benchmarks/bench_serve_scale.py --quick    # 3 s per phase; the stall on SQLite, 1 process; no K = 1000 spread
    python benchmarks/bench_serve_scale.py --only spread --no-forward   # each process serves what it receives
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import httpx
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import interleaved, load_average, report_ratio

from dpbandits.serve.auth import create_key
from dpbandits.serve.storage import make_engine
from dpbandits.serve.testing import LocalPostgres, ServerProcess, feedback_for, postgres_binaries


class Load:
    """What :func:`drive` saw."""

    def __init__(self) -> None:
        self.latencies: list[float] = []
        self.statuses: Counter[int] = Counter()
        self.failures: Counter[str] = Counter()
        self.seconds = 0.0
        self.guard = threading.Lock()

    @property
    def rate(self) -> float:
        return len(self.latencies) / self.seconds if self.seconds else 0.0

    def p99(self) -> float:
        return float(np.percentile(np.array(self.latencies) * 1e3, 99)) if self.latencies else float("nan")

    def share_503(self) -> float:
        total = sum(self.statuses.values())
        return self.statuses[503] / total if total else 0.0


def drive(urls: list[str], key: str, experiment: str, n_clients: int, seconds: float,
          stop: threading.Event | None = None, load: Load | None = None, seed: int = 0, sticky: bool = False) -> Load:
    """``n_clients`` threads doing ask -> tell rounds, each request on a random one of ``urls``.

    With ``sticky`` each client sends all its requests to one of ``urls`` (client i to ``urls[i % n]``).
    """
    load = load or Load()
    stop = stop or threading.Event()
    ready = threading.Barrier(n_clients + 1)  # the clock starts once every client is built (seconds, loaded)
    go = threading.Event()
    deadline = [0.0]

    def client(index: int) -> None:
        rng = np.random.default_rng([seed, index])
        mine = [urls[index % len(urls)]] if sticky else urls
        clients = [httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=300)
                   for url in mine]
        ready.wait()
        go.wait()
        try:
            while not stop.is_set() and time.monotonic() < deadline[0]:
                started = time.perf_counter()
                asked = clients[int(rng.integers(len(clients)))].post(f"/v1/experiments/{experiment}/ask")
                with load.guard:
                    load.statuses[asked.status_code] += 1
                if asked.status_code != 200:
                    time.sleep(0.01)
                    continue
                handed = asked.json()
                action = {k: v for k, v in handed.items() if k in ("arm", "pair")}
                body = {"ticket": handed["ticket"], **feedback_for(handed["step"], action)}
                told = clients[int(rng.integers(len(clients)))].post(f"/v1/experiments/{experiment}/tell", json=body)
                with load.guard:
                    load.statuses[told.status_code] += 1
                    if told.status_code == 200:
                        load.latencies.append(time.perf_counter() - started)
        except httpx.HTTPError as exc:  # counted by class: a server that dropped a request, a timeout
            with load.guard:
                load.failures[type(exc).__name__] += 1
        finally:
            for http in clients:
                http.close()

    threads = [threading.Thread(target=client, args=(i,)) for i in range(n_clients)]
    for thread in threads:
        thread.start()
    ready.wait()
    deadline[0] = time.monotonic() + seconds
    started = time.perf_counter()
    go.set()
    for thread in threads:
        thread.join()
    load.seconds = time.perf_counter() - started
    return load


def _merged(first: Load, second: Load) -> Load:
    """Two measurements of the same setting as one (their requests and seconds added)."""
    merged = Load()
    merged.latencies = first.latencies + second.latencies
    merged.statuses = first.statuses + second.statuses
    merged.failures = first.failures + second.failures
    merged.seconds = first.seconds + second.seconds
    return merged


def _key(db: str, name: str) -> str:
    engine = make_engine(db)
    key = create_key(engine, name)[1]
    engine.dispose()
    return key


def _create(url: str, key: str, n_arms: int) -> str:
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=900) as http:
        response = http.post("/v1/experiments", json={"kind": "dp-bai", "params": {
            "n_arms": n_arms, "budget": 10_000_000, "epsilon": 1.0}})
        assert response.status_code == 201, response.text
        return str(response.json()["id"])


def bench_neighbour(db: str, label: str, processes: int, seconds: float, log: Path) -> None:
    key_a, key_b = _key(db, "tenant A"), _key(db, "tenant B")
    servers = [ServerProcess(db, log=log).start(timeout=600) for _ in range(processes)]
    try:
        urls = [server.url for server in servers]
        small, large = _create(urls[0], key_b, 8), _create(urls[0], key_a, 1000)
        for url in urls:  # the heavy agent in every process's memory (a first load on the others: seconds)
            drive([url], key_a, large, 1, 1.0)
        alone = drive(urls, key_b, small, 8, seconds)
        stop, heavy = threading.Event(), Load()
        driver = threading.Thread(target=drive, args=(urls, key_a, large, 4, 10 * seconds + 600),
                                  kwargs={"stop": stop, "load": heavy, "seed": 1})
        driver.start()
        time.sleep(0.5)
        beside = drive(urls, key_b, small, 8, seconds)
        stop.set()
        driver.join()
    finally:
        for server in servers:
            server.stop()
    print(f"{label}, {processes} process(es): B alone {alone.rate:.0f} rounds/s p99 {alone.p99():.1f} ms; "
          f"beside A (K=1000, {heavy.rate:.1f} valid tells/s, statuses {dict(heavy.statuses)}): "
          f"{beside.rate:.0f} rounds/s p99 {beside.p99():.1f} ms")
    ratio = beside.p99() / alone.p99()
    report_ratio(f"neighbour: B's p99 beside A's K=1000 tells / alone ({label}, {processes} proc)", ratio,
                 numerator=f"{beside.p99():.1f} ms", denominator=f"{alone.p99():.1f} ms", target="<= 2",
                 met=ratio <= 2)


def bench_spread(db: str, seconds: float, log: Path, *, heavy_too: bool, forward: bool = True) -> None:
    key = _key(db, "spread")
    options = () if forward else ("--no-forward",)
    with ServerProcess(db, log=log, options=options) as first, ServerProcess(db, log=log, options=options) as second:
        light = _create(first.url, key, 8)
        drive([first.url, second.url], key, light, 16, 2.0, seed=7)  # warm: both processes, the owner's agent
        # the reference is measured before and after the two-process phases (its mean), so that neither a
        # cold start nor a drift of the run favours one side
        before = drive([first.url], key, light, 16, seconds / 2)
        two = drive([first.url, second.url], key, light, 16, seconds, seed=2)
        sticky = drive([first.url, second.url], key, light, 16, seconds, seed=5, sticky=True)
        one = _merged(before, drive([first.url], key, light, 16, seconds / 2, seed=6))
        if heavy_too:  # minutes: a K = 1000 agent is loaded again whenever the other process stored a state
            heavy = _create(first.url, key, 1000)
            drive([first.url, second.url], key, heavy, 1, 1.0)  # both processes hold the heavy agent
            heavy_before = drive([first.url], key, heavy, 4, seconds / 2, seed=3)
            heavy_two = drive([first.url, second.url], key, heavy, 4, seconds, seed=4)
            heavy_one = _merged(heavy_before, drive([first.url], key, heavy, 4, seconds / 2, seed=8))
    print(f"PostgreSQL K=8: 1 process {one.rate:.0f} tells/s {dict(one.statuses)}; 2 processes spread per request "
          f"{two.rate:.0f} tells/s {dict(two.statuses)}; client failures {dict(one.failures + two.failures)}")
    report_ratio("spread: K=8 tells/s on 2 processes (per request) / on 1 (PostgreSQL)", two.rate / one.rate,
                 numerator=f"{two.rate:.0f} tells/s", denominator=f"{one.rate:.0f} tells/s", target=">= 0.8",
                 met=two.rate >= 0.8 * one.rate, note=f"503 share {100 * two.share_503():.2f} % (target <= 1 %)")
    print(f"PostgreSQL K=8: 2 processes, each client sticking to one: {sticky.rate:.0f} tells/s {dict(sticky.statuses)}")
    report_ratio("spread: K=8 tells/s on 2 processes (each client on one) / on 1 (PostgreSQL)", sticky.rate / one.rate,
                 numerator=f"{sticky.rate:.0f} tells/s", denominator=f"{one.rate:.0f} tells/s", target=">= 0.8",
                 met=sticky.rate >= 0.8 * one.rate, note=f"503 share {100 * sticky.share_503():.2f} % (target <= 1 %)")
    if not heavy_too:
        return
    print(f"PostgreSQL K=1000: 1 process {heavy_one.rate:.1f} tells/s {dict(heavy_one.statuses)}; 2 processes "
          f"{heavy_two.rate:.1f} tells/s {dict(heavy_two.statuses)}; client failures "
          f"{dict(heavy_one.failures + heavy_two.failures)}")
    if heavy_one.rate > 0:
        report_ratio("spread: K=1000 tells/s on 2 processes (per request) / on 1 (PostgreSQL)",
                     heavy_two.rate / heavy_one.rate, numerator=f"{heavy_two.rate:.1f} tells/s",
                     denominator=f"{heavy_one.rate:.1f} tells/s", target=">= 1", met=heavy_two.rate >= heavy_one.rate)


def bench_not_found(db: str, rounds: int, log: Path) -> None:
    key_a, key_b = _key(db, "owner"), _key(db, "other")
    with ServerProcess(db, log=log) as server:
        theirs = _create(server.url, key_a, 8)
        with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {key_b}"}, timeout=60) as http:
            def ask(experiment: str) -> None:
                for _ in range(20):
                    assert http.post(f"/v1/experiments/{experiment}/ask").status_code == 404

            medians = interleaved({"theirs": lambda: ask(theirs), "missing": lambda: ask("0" * 32)}, rounds, per=20)
    ratio = medians["theirs"] / medians["missing"]
    report_ratio("404: another tenant's experiment in memory / a missing id (ask)", ratio,
                 numerator=f"{1e3 * medians['theirs']:.2f} ms", denominator=f"{1e3 * medians['missing']:.2f} ms",
                 target="0.8-1.25", met=0.8 <= ratio <= 1.25)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 s per phase; the stall on SQLite, 1 process")
    parser.add_argument("--only", choices=("neighbour", "spread", "404"))
    parser.add_argument("--no-forward", action="store_true",
                        help="spread: the servers serve every request where it lands (the reference before forwarding)")
    args = parser.parse_args()
    seconds = 3.0 if args.quick else 15.0
    print(f"# {seconds:g} s per phase; {load_average()}")
    postgres = None if postgres_binaries() is None else LocalPostgres().start()
    try:
        with tempfile.TemporaryDirectory() as directory:
            log = Path(directory) / "servers.log"
            if args.only in (None, "404"):
                bench_not_found(str(Path(directory) / "notfound.db"), 10 if args.quick else 40, log)
            if args.only in (None, "neighbour"):
                bench_neighbour(str(Path(directory) / "sqlite1.db"), "SQLite", 1, seconds, log)
                if not args.quick:
                    bench_neighbour(str(Path(directory) / "sqlite2.db"), "SQLite", 2, seconds, log)
                    if postgres is not None:
                        for processes in (1, 2):
                            bench_neighbour(_database(postgres, f"neighbour{processes}"), "PostgreSQL",
                                            processes, seconds, log)
            if args.only in (None, "spread") and postgres is not None:
                bench_spread(_database(postgres, "spread"), seconds, log, heavy_too=not args.quick,
                             forward=not args.no_forward)
    finally:
        if postgres is not None:
            postgres.stop()
    print(f"# after: {load_average()}")


def _database(cluster: LocalPostgres, name: str) -> str:
    import psycopg

    with psycopg.connect(f"host=127.0.0.1 port={cluster.port} user=postgres dbname=postgres",
                         autocommit=True) as connection:
        connection.execute(f"CREATE DATABASE {name}")
    return cluster.url.rsplit("/", 1)[0] + "/" + name


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
