"""Test and benchmark helpers: a ``dpbandits serve`` process and a throw-away PostgreSQL server.

Both listen on the loopback interface only, on free ports, in a temporary directory, and are
stopped by the caller (``kill()`` sends SIGKILL: the crash the durability tests simulate).

PostgreSQL comes from the system (Debian's ``postgresql`` package: ``initdb`` and ``pg_ctl``, found
on ``PATH`` or under ``/usr/lib/postgresql/*/bin``). PostgreSQL refuses to run as root, so as root
the cluster is created and started as the ``postgres`` user (``runuser``), which the package creates.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

__all__ = [
    "Acknowledged",
    "LoadResult",
    "LocalPostgres",
    "ServerProcess",
    "drive_clients",
    "feedback_for",
    "free_port",
    "postgres_binaries",
]


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ServerProcess:
    """``python -m dpbandits.serve`` (what ``dpbandits serve`` runs) in a child process, on 127.0.0.1.

    Parameters
    ----------
    db : str
        Path or URL of the store.
    allow_insecure_seeded_noise : bool, default False
    synchronous : {"full", "normal"}, default "full"
    port : int, optional
        Default: a free port.
    log : Path, optional
        Where the server's output goes (default: nowhere).
    options : tuple of str
        More options of ``dpbandits serve`` (``("--workers", "2")``).
    """

    def __init__(self, db: str, *, allow_insecure_seeded_noise: bool = False, synchronous: str = "full",
                 port: int | None = None, log: Path | None = None, options: tuple[str, ...] = ()) -> None:
        self.db = db
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        # python -m dpbandits.serve: the options of `dpbandits serve`, without the CLI's other imports
        self.command = [sys.executable, "-m", "dpbandits.serve", "--db", db, "--port", str(self.port),
                        "--sqlite-synchronous", synchronous]
        if allow_insecure_seeded_noise:
            self.command.append("--allow-insecure-seeded-noise")
        self.command.extend(options)
        self.log = log
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 60.0) -> ServerProcess:
        """Start the server and wait until it answers ``/healthz``."""
        if self.log is None:
            self.process = subprocess.Popen(self.command, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        else:
            with self.log.open("ab") as output:  # the child keeps its own descriptor
                self.process = subprocess.Popen(self.command, stdout=output, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"dpbandits serve exited with status {self.process.returncode}")
            try:
                if httpx.get(self.url + "/healthz", timeout=1.0).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        self.kill()
        raise RuntimeError(f"dpbandits serve did not answer within {timeout} s")

    def kill(self) -> None:
        """SIGKILL the server (no clean shutdown) and reap it."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=30)

    def stop(self) -> None:
        """Stop the server cleanly (SIGTERM), or kill it after 10 s."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()

    def __enter__(self) -> ServerProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def postgres_binaries() -> tuple[str, str] | None:
    """Paths of ``initdb`` and ``pg_ctl``, or None when PostgreSQL's server is not installed."""
    directories = [None, *sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)]
    for directory in directories:
        initdb = shutil.which("initdb", path=directory)
        pg_ctl = shutil.which("pg_ctl", path=directory)
        if initdb and pg_ctl:
            return initdb, pg_ctl
    return None


class LocalPostgres:
    """A PostgreSQL cluster in ``directory``, listening on 127.0.0.1 only, trust authentication.

    Use :meth:`start`, then ``url`` (the SQLAlchemy URL of a database ``dpbandits``), then
    :meth:`stop` (which removes the directory).
    """

    def __init__(self, directory: Path | None = None) -> None:
        binaries = postgres_binaries()
        if binaries is None:
            raise RuntimeError("PostgreSQL's initdb/pg_ctl are not installed (Debian package: postgresql)")
        self.initdb, self.pg_ctl = binaries
        # its own directory under the system temp dir: the postgres user must reach it (pytest's is 0700)
        self.directory = Path(tempfile.mkdtemp(prefix="dpbandits-pg-")) if directory is None else Path(directory)
        self.data = self.directory / "data"
        self.port = free_port()
        self.url = f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/dpbandits"

    def _run(self, *args: str) -> None:
        command = list(args)
        if os.geteuid() == 0:  # PostgreSQL refuses root: run as the package's postgres user
            command = ["runuser", "-u", "postgres", "--", *command]
        subprocess.run(command, check=True, capture_output=True, timeout=120)

    def start(self) -> LocalPostgres:
        """initdb, start, create the database."""
        self.directory.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            shutil.chown(self.directory, "postgres", "postgres")
        self._run(self.initdb, "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8",
                  "--no-sync")
        options = f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.directory} -c max_connections=200"
        self._run(self.pg_ctl, "-D", str(self.data), "-o", options, "-l", str(self.directory / "log"), "-w", "start")
        import psycopg

        with psycopg.connect(f"host=127.0.0.1 port={self.port} user=postgres dbname=postgres",
                             autocommit=True) as connection:
            connection.execute("CREATE DATABASE dpbandits")
        return self

    def stop(self) -> None:
        """Stop the cluster immediately."""
        with contextlib.suppress(subprocess.CalledProcessError, subprocess.TimeoutExpired):
            self._run(self.pg_ctl, "-D", str(self.data), "-m", "immediate", "stop")
        shutil.rmtree(self.directory, ignore_errors=True)


def feedback_for(step: int, action: dict[str, Any]) -> dict[str, Any]:
    """Deterministic feedback of a step (so that a replay knows what every step was told).

    BAI: a reward in [0, 1) from (step, arm), larger on average for higher arms; dueling: the pair's
    lower arm wins two times in three.
    """
    if "arm" in action:
        arm = int(action["arm"])
        return {"reward": ((step * 7919 + arm * 104729) % 1000) / 2000 + arm / (2 * (arm + 4))}
    first, second = action["pair"]
    if first == second:
        return {"first_wins": step % 2 == 0}
    lower_wins = (step * 7 + first + second) % 3 != 0
    return {"winner": min(first, second) if lower_wins else max(first, second)}


@dataclass(frozen=True)
class Acknowledged:
    """A tell the server acknowledged."""

    experiment: str
    step: int
    ticket: str
    feedback: dict[str, Any]


@dataclass
class LoadResult:
    """What :func:`drive_clients` saw: acknowledgements, round latencies (ask + tell), refusals."""

    acknowledged: list[Acknowledged] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)
    superseded: int = 0
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0


def drive_clients(url: str, key: str, experiment_ids: list[str], *, n_clients: int, max_seconds: float,
                  stop: threading.Event | None = None, result: LoadResult | None = None) -> LoadResult:
    """Run ``n_clients`` threads doing ask/tell on the experiments until all are done, time is up or ``stop``.

    Client ``i`` starts on experiment ``i mod len(experiment_ids)`` and moves to the next unfinished
    one when its experiment is done. Feedback comes from :func:`feedback_for`. Connection errors
    (a killed server) end the client; a 503 is retried (the same request: a tell with its ticket), as the
    documented client does; a 409 ``step_already_told`` is counted and the client asks again.
    ``result`` (default: a new one) is filled as the clients go, so another thread can watch it.
    """
    result = LoadResult() if result is None else result
    guard = threading.Lock()
    stop = stop or threading.Event()
    finished: set[str] = set()
    deadline = time.monotonic() + max_seconds

    def post(http: httpx.Client, path: str, body: dict[str, Any] | None = None) -> httpx.Response:
        for _attempt in range(100):
            answer = http.post(path, json=body)
            if answer.status_code != 503:
                break
            time.sleep(0.05)  # retryable (the store refused, or the experiment's server process went away)
        return answer

    def client(index: int) -> None:
        headers = {"Authorization": f"Bearer {key}"}
        with httpx.Client(base_url=url, headers=headers, timeout=30.0) as http:
            position = index % len(experiment_ids)
            while not stop.is_set() and time.monotonic() < deadline:
                if len(finished) == len(experiment_ids):
                    return
                experiment = experiment_ids[position]
                if experiment in finished:
                    position = (position + 1) % len(experiment_ids)
                    continue
                try:
                    started = time.perf_counter()
                    asked = post(http, f"/v1/experiments/{experiment}/ask")
                    if asked.status_code == 409:
                        with guard:
                            finished.add(experiment)
                        continue
                    if asked.status_code != 200:
                        with guard:
                            result.errors.append(f"ask {asked.status_code}: {asked.text[:200]}")
                        return
                    ticket = asked.json()
                    action = {k: v for k, v in ticket.items() if k in ("arm", "pair", "action")}
                    feedback = feedback_for(ticket["step"], action)
                    told = post(http, f"/v1/experiments/{experiment}/tell", {"ticket": ticket["ticket"], **feedback})
                    elapsed = time.perf_counter() - started
                except httpx.HTTPError:
                    return  # the server went away
                if told.status_code == 200:
                    with guard:
                        result.acknowledged.append(Acknowledged(experiment, ticket["step"], ticket["ticket"], feedback))
                        result.latencies.append(elapsed)
                elif told.status_code == 409 and told.json()["error"]["code"] == "step_already_told":
                    with guard:
                        result.superseded += 1
                else:
                    with guard:
                        result.errors.append(f"tell {told.status_code}: {told.text[:200]}")
                    return

    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(n_clients)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(max_seconds + 60)
    result.seconds = time.perf_counter() - started
    return result
