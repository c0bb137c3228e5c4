"""Run the service with uvicorn: what ``dpbandits serve`` and ``python -m dpbandits.serve`` call.

With ``workers > 1`` uvicorn starts that many server processes on one socket; each builds its own
application from the settings passed in the environment (:func:`app_from_environment`). They share
nothing but the store, which holds everything a request needs (experiments, feedback, leases,
ledger), so several processes — or several hosts on one PostgreSQL — serve one set of experiments
with the same guarantees as one (see :mod:`dpbandits.serve.locking`). On SQLite every write takes
the database's write lock, so more processes mostly add parallel reads and computation.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import logging
import os
import sys
from dataclasses import asdict
from typing import Any

from dpbandits._core.errors import DPBanditsError, InvalidParameterError
from dpbandits.serve.affinity import OWNER_LEASE_SECONDS

__all__ = ["AGENT_MODULES", "app_from_environment", "configure_logging", "main", "run", "store_label", "warm_up"]

_SETTINGS = "DPBANDITS_SERVE_SETTINGS"
_log = logging.getLogger("dpbandits.serve")
AGENT_MODULES = ("dpbandits.algorithms.bai", "dpbandits.algorithms.dueling", "dpbandits.algorithms.offline",
                 "dpbandits.serve.jobs")
"""Imported by a server process before it listens: the agents it loads itself (small states) are
built from them, and their first import takes seconds, which the first request would pay."""


def store_label(db: str) -> str:
    """The store ``db`` as a log line shows it: a SQLite file's path, or a URL without its password."""
    from sqlalchemy.engine import make_url

    from dpbandits.serve.storage import database_url

    url = make_url(database_url(db))
    if url.get_backend_name() == "sqlite":
        return f"SQLite {url.database}"
    return url.render_as_string(hide_password=True)


def configure_logging(level: int) -> None:
    """Log lines of ``dpbandits`` at ``level`` and above on stderr (unless the command line set a handler)."""
    logger = logging.getLogger("dpbandits")
    if not logger.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("[dpbandits] %(message)s"))
        logger.addHandler(handler)
    logger.setLevel(level)


def warm_up() -> None:
    """Import the agents' modules now (see :data:`AGENT_MODULES`)."""
    for name in AGENT_MODULES:
        importlib.import_module(name)


def _application(settings: dict[str, Any]) -> Any:
    from dpbandits.serve.app import create_app
    from dpbandits.serve.quotas import Quotas
    from dpbandits.serve.storage import make_engine
    from dpbandits.serve.workers import start_workers

    if settings.get("log_level") is not None:  # a worker process of --workers N: the parent's level
        configure_logging(settings["log_level"])
    engine = make_engine(settings["db"], synchronous=settings["sqlite_synchronous"])
    start_workers()  # before listening: the first heavy request does not wait for the library's import
    warm_up()  # nor the first request that loads a small agent in this process
    affinity = None
    if settings.get("forward", True):
        from dpbandits.serve.affinity import Affinity

        affinity = Affinity(engine, host=settings.get("internal_host", "127.0.0.1"),
                            lease=settings.get("owner_lease_seconds", OWNER_LEASE_SECONDS),
                            read_timeout=settings["time_limit"] + 60.0)
    return create_app(engine, allow_insecure_seeded_noise=settings["allow_insecure_seeded_noise"],
                      lease_seconds=settings["lease_seconds"], quotas=Quotas(**settings["quotas"]),
                      time_limit=settings["time_limit"], behind_tls=settings["behind_tls"],
                      log_requests=logging.getLogger("dpbandits.serve").isEnabledFor(logging.DEBUG),
                      affinity=affinity)


def app_from_environment() -> Any:
    """The application of one server process of ``--workers N`` (settings from the environment)."""
    return _application(json.loads(os.environ[_SETTINGS]))


def run(db: str, *, host: str = "127.0.0.1", port: int = 8000, sqlite_synchronous: str = "full",
        lease_seconds: float = 10.0, allow_insecure_seeded_noise: bool = False, behind_tls: bool = False,
        workers: int = 1, time_limit: float = 60.0, quotas: Any = None, forward: bool = True,
        internal_host: str = "127.0.0.1", owner_lease_seconds: float = OWNER_LEASE_SECONDS) -> None:
    """Serve the HTTP API and the status page on ``host:port`` from the store ``db`` (blocks).

    Parameters
    ----------
    db : str
        SQLite file path, or a database URL (``postgresql+psycopg://user@host/dbname``).
    host, port
        Where to listen (the loopback interface by default).
    sqlite_synchronous : {"full", "normal"}
        See :func:`dpbandits.serve.storage.make_engine`.
    lease_seconds : float
        How long a handed-out step is reserved for its client (see :mod:`dpbandits.serve.service`).
    allow_insecure_seeded_noise : bool
        Accept experiments with seeded noise (tests only: not private).
    behind_tls : bool
        Clients reach the server over TLS (a proxy terminates it): the status page's cookies are
        ``Secure``. Without it they are ``Secure`` when the request's scheme is https (uvicorn takes
        it from a trusted proxy's ``X-Forwarded-Proto``).
    workers : int, default 1
        Server processes (see the module docstring).
    time_limit : float, default 60
        Seconds a request's CPU-heavy part may run (:mod:`dpbandits.serve.workers`).
    quotas : Quotas, optional
        Per-key limits (:mod:`dpbandits.serve.quotas`).
    forward : bool, default True
        Forward each experiment's ask, tell and close to the server process that owns it
        (:mod:`dpbandits.serve.affinity`): several processes on one store then serve an experiment
        about as fast as one. Without it each request is served where it arrives (correct, slower).
    internal_host : str, default "127.0.0.1"
        Interface (an address of this host) where each server process listens for the requests
        the others forward to it, on a port chosen at start; the loopback interface reaches the
        processes of this host only: set an address the other hosts reach when several hosts
        share a store.
    owner_lease_seconds : float, default 5
        How long an experiment stays with its owner process after the owner's last heartbeat
        (after a crash, its requests are served where they arrive meanwhile).
    """
    import ipaddress

    import uvicorn

    from dpbandits.serve.quotas import Quotas
    from dpbandits.serve.storage import make_engine

    if not lease_seconds > 0:
        raise InvalidParameterError(f"lease_seconds must be > 0; got {lease_seconds!r}")
    if not time_limit > 0:
        raise InvalidParameterError(f"time_limit must be > 0; got {time_limit!r}")
    if not owner_lease_seconds > 0:
        raise InvalidParameterError(f"owner_lease_seconds must be > 0; got {owner_lease_seconds!r}")
    try:
        ipaddress.ip_address(internal_host)
    except ValueError:
        raise InvalidParameterError(f"internal_host must be an IP address of this host; got {internal_host!r}") from None
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise InvalidParameterError(f"workers must be an integer >= 1; got {workers!r}")
    settings = {"db": db, "sqlite_synchronous": sqlite_synchronous, "lease_seconds": lease_seconds,
                "allow_insecure_seeded_noise": allow_insecure_seeded_noise, "time_limit": time_limit,
                "behind_tls": behind_tls, "log_level": logging.getLogger("dpbandits").getEffectiveLevel(),
                "quotas": asdict(quotas or Quotas()), "forward": forward, "internal_host": internal_host,
                "owner_lease_seconds": owner_lease_seconds}
    make_engine(db, synchronous=sqlite_synchronous).dispose()  # the schema exists before any worker starts
    verbose = _log.isEnabledFor(logging.DEBUG)
    started = (f"dpbandits serve: http://{host}:{port}, store {store_label(db)}, {workers} worker "
               f"process{'' if workers == 1 else 'es'}" + (" (each request logged)" if verbose else ""))
    if workers == 1:
        application = _application(settings)
        _log.info("%s", started)
        uvicorn.run(application, host=host, port=port, log_level="warning", access_log=False)
        return
    os.environ[_SETTINGS] = json.dumps(settings)  # inherited by uvicorn's worker processes
    _log.info("%s", started)
    # uvicorn (>= 0.30) kills a worker that has not answered its supervisor's ping within this many
    # seconds, with the requests it was serving: 5 s by default, which a worker's import or a busy machine
    # can exceed (the ping is answered by a thread, which needs the GIL)
    patience: dict[str, Any] = ({"timeout_worker_healthcheck": 60}
                if "timeout_worker_healthcheck" in inspect.signature(uvicorn.run).parameters else {})
    uvicorn.run("dpbandits.serve.server:app_from_environment", factory=True, workers=workers, host=host,
                port=port, log_level="warning", access_log=False, **patience)


def main(argv: list[str] | None = None) -> None:
    """``python -m dpbandits.serve``: the same options as ``dpbandits serve``, without the CLI's imports."""
    from dpbandits.serve.quotas import Quotas

    defaults = Quotas()
    parser = argparse.ArgumentParser(prog="python -m dpbandits.serve", description=run.__doc__)
    parser.add_argument("--db", required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--sqlite-synchronous", choices=("full", "normal"), default="full")
    parser.add_argument("--lease-seconds", type=float, default=10.0)
    parser.add_argument("--allow-insecure-seeded-noise", action="store_true")
    parser.add_argument("--behind-tls", action="store_true")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--max-experiments", type=int, default=defaults.experiments)
    parser.add_argument("--max-concurrent-requests", type=int, default=defaults.concurrent_requests)
    parser.add_argument("--max-state-bytes", type=int, default=defaults.state_bytes)
    parser.add_argument("--no-forward", action="store_true")
    parser.add_argument("--internal-host", default="127.0.0.1")
    parser.add_argument("--owner-lease-seconds", type=float, default=OWNER_LEASE_SECONDS)
    parser.add_argument("-v", "--verbose", action="store_true", help="Log each request.")
    parser.add_argument("-q", "--quiet", action="store_true", help="Log warnings and errors only.")
    options = parser.parse_args(argv)
    configure_logging(logging.WARNING if options.quiet else logging.DEBUG if options.verbose else logging.INFO)
    quotas = Quotas(experiments=options.max_experiments, concurrent_requests=options.max_concurrent_requests,
                    state_bytes=options.max_state_bytes)
    try:
        run(options.db, host=options.host, port=options.port, sqlite_synchronous=options.sqlite_synchronous,
            lease_seconds=options.lease_seconds, allow_insecure_seeded_noise=options.allow_insecure_seeded_noise,
            behind_tls=options.behind_tls, workers=options.workers, time_limit=options.time_limit, quotas=quotas,
            forward=not options.no_forward, internal_host=options.internal_host,
            owner_lease_seconds=options.owner_lease_seconds)
    except DPBanditsError as exc:  # a refused store or option: one line, as `dpbandits serve` prints it
        parser.exit(1, f"Error: {exc}\n")
