"""Run the service with uvicorn: what ``dpbandits serve`` and ``python -m dpbandits.serve`` call."""

from __future__ import annotations

import argparse

from dpbandits._core.errors import InvalidParameterError

__all__ = ["main", "run"]


def run(db: str, *, host: str = "127.0.0.1", port: int = 8000, sqlite_synchronous: str = "full",
        lease_seconds: float = 10.0, allow_insecure_seeded_noise: bool = False, behind_tls: bool = False) -> None:
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
    """
    import uvicorn

    from dpbandits.serve.app import create_app
    from dpbandits.serve.storage import make_engine

    engine = make_engine(db, synchronous=sqlite_synchronous)
    if not lease_seconds > 0:
        raise InvalidParameterError(f"lease_seconds must be > 0; got {lease_seconds!r}")
    application = create_app(engine, allow_insecure_seeded_noise=allow_insecure_seeded_noise,
                             lease_seconds=lease_seconds, behind_tls=behind_tls)
    uvicorn.run(application, host=host, port=port, log_level="warning", access_log=False)


def main(argv: list[str] | None = None) -> None:
    """``python -m dpbandits.serve``: the same options as ``dpbandits serve``, without the CLI's imports."""
    parser = argparse.ArgumentParser(prog="python -m dpbandits.serve", description=run.__doc__)
    parser.add_argument("--db", required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--sqlite-synchronous", choices=("full", "normal"), default="full")
    parser.add_argument("--lease-seconds", type=float, default=10.0)
    parser.add_argument("--allow-insecure-seeded-noise", action="store_true")
    parser.add_argument("--behind-tls", action="store_true")
    options = parser.parse_args(argv)
    run(options.db, host=options.host, port=options.port, sqlite_synchronous=options.sqlite_synchronous,
        lease_seconds=options.lease_seconds, allow_insecure_seeded_noise=options.allow_insecure_seeded_noise,
        behind_tls=options.behind_tls)
