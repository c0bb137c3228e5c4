"""``dpbandits serve`` and ``dpbandits api-key``: run the experiment service, manage its API keys.

``dpbandits api-key create --db PATH --name NAME`` prints a new key once (only its hash is stored);
``api-key list`` and ``api-key revoke ID`` manage them. ``dpbandits serve --db PATH|URL [--host
127.0.0.1] [--port 8000] [--workers N]`` runs the HTTP API and the status page with uvicorn, on a
SQLite file (WAL mode) or a PostgreSQL URL (``postgresql+psycopg://user@host/db``), with per-key
quotas (``--max-experiments``, ``--max-concurrent-requests``, ``--max-state-bytes``) and a time
limit on a request's CPU-heavy part (``--time-limit``). See :mod:`dpbandits.serve`.
"""

from __future__ import annotations

import importlib.util
from typing import Annotated

import typer

from dpbandits._core.errors import DependencyNotInstalledError
from dpbandits._core.extras import install_advice

__all__ = ["register"]

DbOption = Annotated[str, typer.Option("--db", help="SQLite file path, or a database URL (postgresql+psycopg://...).")]


def _require_serve_extra() -> None:
    missing = [name for name in ("fastapi", "uvicorn", "sqlalchemy") if importlib.util.find_spec(name) is None]
    if missing:
        raise DependencyNotInstalledError(
            f"dpbandits serve needs {', '.join(missing)}: {install_advice('serve')}")


def register(app: typer.Typer) -> None:
    """Add the ``serve`` and ``api-key`` commands to the ``dpbandits`` application."""
    keys = typer.Typer(help="Create, list and revoke the API keys of a dpbandits serve store.",
                       no_args_is_help=True)

    @keys.command("create")
    def create_command(db: DbOption, name: Annotated[str, typer.Option("--name", help="Who the key is for.")]) -> None:
        """Create an API key and print it (it is shown once: only its hash is stored)."""
        _require_serve_extra()
        from dpbandits.serve.auth import create_key
        from dpbandits.serve.storage import make_engine

        record, key = create_key(make_engine(db), name)
        typer.echo(key)
        typer.echo(f"key id {record.id} ({record.name}); store it now: it cannot be shown again", err=True)

    @keys.command("list")
    def list_command(db: DbOption) -> None:
        """List the keys (id, prefix, name, revoked); never a key."""
        _require_serve_extra()
        from dpbandits.serve.auth import list_keys
        from dpbandits.serve.storage import make_engine

        for record in list_keys(make_engine(db)):
            typer.echo(f"{record.id}\t{record.prefix}…\t{record.name}\t{'revoked' if record.revoked else 'active'}")

    @keys.command("revoke")
    def revoke_command(db: DbOption, key_id: Annotated[int, typer.Argument(help="The key's id (see list).")]) -> None:
        """Revoke a key (its requests are refused within a few seconds)."""
        _require_serve_extra()
        from dpbandits.serve.auth import revoke_key
        from dpbandits.serve.storage import make_engine

        revoke_key(make_engine(db), key_id)
        typer.echo(f"key {key_id} revoked")

    app.add_typer(keys, name="api-key")

    @app.command("serve")
    def serve_command(
        db: DbOption,
        host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
        port: Annotated[int, typer.Option("--port", min=0, max=65535, help="Port to listen on.")] = 8000,
        sqlite_synchronous: Annotated[str, typer.Option(
            "--sqlite-synchronous", help="full (survives power loss) or normal (survives a killed process).")] = "full",
        lease_seconds: Annotated[float, typer.Option(
            "--lease-seconds", help="How long a handed-out step is reserved for its client.")] = 10.0,
        workers: Annotated[int, typer.Option(
            "--workers", min=1, help="Server processes sharing the store (and the port).")] = 1,
        time_limit: Annotated[float, typer.Option(
            "--time-limit", min=0.001, help="Seconds a request's CPU-heavy part (build, load, sample, upload) "
                                            "may run before it is stopped.")] = 60.0,
        max_experiments: Annotated[int, typer.Option(
            "--max-experiments", min=1, help="Experiments an API key may hold.")] = 1000,
        max_concurrent_requests: Annotated[int, typer.Option(
            "--max-concurrent-requests", min=1, help="Requests an API key may have in progress per process.")] = 64,
        max_state_bytes: Annotated[int, typer.Option(
            "--max-state-bytes", min=1, help="Largest stored state of one experiment, in bytes.")] = 64 * 2**20,
        allow_insecure_seeded_noise: Annotated[bool, typer.Option(
            "--allow-insecure-seeded-noise", hidden=True,
            help="Accept experiments with insecure_seed (seeded noise, NOT private): tests only.")] = False,
        behind_tls: Annotated[bool, typer.Option(
            "--behind-tls", help="Clients reach the server over TLS (a proxy terminates it): the status "
                                 "page's cookies are Secure.")] = False,
        forward: Annotated[bool, typer.Option(
            "--forward/--no-forward", help="Forward each experiment's ask, tell and close to the server process "
                                           "that owns it (several processes then serve it about as fast as "
                                           "one).")] = True,
        internal_host: Annotated[str, typer.Option(
            "--internal-host", help="IP address of this host where each server process listens for requests "
                                    "forwarded by the others (loopback: processes of this host only).")] = "127.0.0.1",
        owner_lease_seconds: Annotated[float, typer.Option(
            "--owner-lease-seconds", min=0.001, help="Seconds an experiment stays with its owner process after "
                                                      "the owner's last heartbeat.")] = 5.0,
    ) -> None:
        """Run the experiment service (HTTP API, OpenAPI docs at /docs, status page at /status)."""
        _require_serve_extra()
        from dpbandits.serve.quotas import Quotas
        from dpbandits.serve.server import run

        quotas = Quotas(experiments=max_experiments, concurrent_requests=max_concurrent_requests,
                        state_bytes=max_state_bytes)
        run(db, host=host, port=port, sqlite_synchronous=sqlite_synchronous, lease_seconds=lease_seconds,
            allow_insecure_seeded_noise=allow_insecure_seeded_noise, behind_tls=behind_tls, workers=workers,
            time_limit=time_limit, quotas=quotas, forward=forward, internal_host=internal_host,
            owner_lease_seconds=owner_lease_seconds)
