"""The HTTP API of ``dpbandits serve`` (FastAPI): routes, authentication, errors, request size limits.

Every ``/v1`` route needs an API key (``Authorization: Bearer <key>`` or ``X-API-Key``); an
experiment is visible to its owner's key only (another key gets 404, as for a missing one). Errors
are JSON ``{"error": {"code": ..., "message": ...}}`` with a 4xx status: 400 invalid values, 401 no
or unknown key, 404 not found, 409 refused by the experiment's state (done, closed, already told,
over budget), 413 body too large, 422 malformed request; 503 when the store refused a
transaction (nothing was recorded: retry). OpenAPI docs: ``/docs`` (Swagger UI) and
``/redoc``, served from files packaged with ``fastapi-offline`` (the network may be closed), and
``/openapi.json``. The status page is ``/status``.

Handlers of the frequent requests (ask, tell, close, status, ledger) run on the event loop: reads
go to the store directly, and writes are jobs of the service's writer thread, awaited as futures
(group commit: one transaction, one fsync, for every job queued meanwhile; see
:mod:`dpbandits.serve.locking`). The heavy ones (create, which may build a design or a kernel
approximation; sample; upload, which parses the file) run in the thread pool.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Annotated, Any, Literal

from fastapi import Depends, FastAPI, Header, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi_offline import FastAPIOffline
from sqlalchemy import Engine
from sqlalchemy.exc import DBAPIError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from dpbandits import __version__
from dpbandits._core.errors import DPBanditsError
from dpbandits.serve.auth import KeyCache
from dpbandits.serve.errors import NotFound, ServiceError
from dpbandits.serve.kinds import list_kinds
from dpbandits.serve.schemas import CreateExperiment, SampleRequest, TellRequest
from dpbandits.serve.service import ExperimentService, library_error_status
from dpbandits.serve.status_routes import add_status_routes

__all__ = ["MAX_JSON_BYTES", "MAX_UPLOAD_BYTES", "create_app"]

MAX_JSON_BYTES = 64 * 1024
MAX_UPLOAD_BYTES = 64 * 1024 * 1024
LEASE_SECONDS = 10.0
_log = logging.getLogger("dpbandits.serve")


def _error(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status)


class BodyLimit:
    """Refuse request bodies over a limit (413), by Content-Length and by counting streamed bytes."""

    def __init__(self, app: ASGIApp, *, json_limit: int, upload_limit: int) -> None:
        self.app, self.json_limit, self.upload_limit = app, json_limit, upload_limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.upload_limit if scope["path"].endswith("/data") else self.json_limit
        length = dict(scope.get("headers") or []).get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > limit):
            await _error(413, "too_large", f"request body must be at most {limit} bytes")(scope, receive, send)
            return
        seen = 0

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise _TooLarge(limit)
            return message

        try:
            await self.app(scope, counted, send)
        except _TooLarge as exc:
            await _error(413, "too_large", f"request body must be at most {exc.limit} bytes")(scope, receive, send)


class _TooLarge(Exception):
    def __init__(self, limit: int) -> None:
        self.limit = limit


def _validation_text(exc: RequestValidationError) -> str:
    parts = []
    for error in exc.errors()[:10]:
        where = ".".join(str(p) for p in error.get("loc", ()) if p != "body")
        parts.append(f"{where or 'body'}: {error.get('msg', 'invalid')}")
    return "; ".join(parts)


async def _owner(request: Request, authorization: Annotated[str | None, Header()] = None,
                 x_api_key: Annotated[str | None, Header()] = None) -> int:
    """The id of the request's API key (401 without a valid one; on the event loop: a cached lookup)."""
    key = x_api_key
    if authorization is not None and authorization.lower().startswith("bearer "):
        key = authorization[7:].strip()
    found = request.app.state.keys.owner(key)
    if found is None:
        raise StarletteHTTPException(401, "an API key is required: Authorization: Bearer <key> "
                                          "(create one with `dpbandits api-key create`)")
    return int(found)


Owner = Annotated[int, Depends(_owner)]


class _StepsFreed:
    """Wakes the asks waiting on an experiment when a tell (or close) may have freed a step."""

    def __init__(self) -> None:
        self._events: dict[str, asyncio.Event] = {}

    async def wait(self, experiment_id: str, timeout: float) -> None:
        event = self._events.setdefault(experiment_id, asyncio.Event())
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(event.wait(), timeout)

    def notify(self, experiment_id: str) -> None:
        event = self._events.pop(experiment_id, None)
        if event is not None:
            event.set()


def create_app(engine: Engine, *, allow_insecure_seeded_noise: bool = False, json_limit: int = MAX_JSON_BYTES,
               upload_limit: int = MAX_UPLOAD_BYTES, lease_seconds: float = LEASE_SECONDS,
               behind_tls: bool = False) -> FastAPI:
    """Build the application on a store (see :func:`dpbandits.serve.storage.make_engine`).

    Parameters
    ----------
    engine : sqlalchemy.Engine
    allow_insecure_seeded_noise : bool, default False
        Accept ``insecure_seed`` in experiment creation (tests only; not private).
    json_limit, upload_limit : int
        Largest JSON body and largest uploaded data file, in bytes.
    lease_seconds : float
        How long a handed-out step is not handed out again (see :mod:`dpbandits.serve.service`).
    behind_tls : bool, default False
        The server is reached over TLS (a proxy terminates it): the status page's cookies are
        ``Secure`` whatever the request's scheme (see :mod:`dpbandits.serve.status_routes`).

    Returns
    -------
    fastapi.FastAPI
    """
    service = ExperimentService(engine, allow_insecure_seeded_noise=allow_insecure_seeded_noise)
    steps_freed = _StepsFreed()
    keys = KeyCache(engine)
    # FastAPIOffline: the same FastAPI app, its /docs and /redoc pages served from packaged files (no CDN)
    app = FastAPIOffline(title="dpbandits serve", version=__version__,
                  description="Differentially private bandit experiments as a service: ask/tell agents "
                              "(best-arm identification, dueling, USCA) and KL-offline policies, with a "
                              "privacy ledger. Authenticate with `Authorization: Bearer <API key>`.")
    app.state.service = service
    app.state.keys = keys

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        return _error(422, "invalid_request", _validation_text(exc))

    @app.exception_handler(DPBanditsError)
    async def _refused(request: Request, exc: DPBanditsError) -> JSONResponse:
        code = exc.code if isinstance(exc, ServiceError) else "invalid_value"
        return _error(library_error_status(exc), code, str(exc))

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        codes = {401: "unauthorized", 404: "not_found", 405: "method_not_allowed"}
        return _error(exc.status_code, codes.get(exc.status_code, "http_error"), str(exc.detail))

    @app.exception_handler(DBAPIError)
    async def _store(request: Request, exc: DBAPIError) -> JSONResponse:
        # a transaction the store refused (a deadlock between server processes, a lost connection):
        # nothing of it was committed or acknowledged, the client may retry
        _log.warning("store error on %s %s: %s", request.method, request.url.path, exc)
        return _error(503, "store_unavailable", "the store refused the transaction; nothing was recorded: retry")

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:  # a bug: logged, never a traceback
        _log.exception("unexpected error on %s %s", request.method, request.url.path)
        return _error(500, "internal_error", "internal error (logged on the server)")


    @app.get("/healthz", tags=["service"])
    async def health() -> dict[str, str]:
        """Liveness: the process answers."""
        return {"status": "ok", "version": __version__}

    @app.get("/v1/kinds", tags=["experiments"])
    def kinds(who: Owner) -> list[dict[str, Any]]:
        """The experiment kinds, with the JSON schema of their parameters."""
        return [{"kind": k.name, "family": k.family.name, "description": k.description,
                 "interactive": k.family.interactive, "params": k.params.model_json_schema()} for k in list_kinds()]

    @app.post("/v1/experiments", status_code=201, tags=["experiments"])
    def create(body: CreateExperiment, who: Owner) -> dict[str, Any]:
        """Create an experiment; for ask/tell kinds its whole run's guarantee is spent now."""
        return service.create(who, body.kind, body.params, name=body.name, epsilon_budget=body.epsilon_budget,
                              delta_budget=body.delta_budget, insecure_seed=body.insecure_seed)

    @app.get("/v1/experiments", tags=["experiments"])
    async def experiments(who: Owner) -> list[dict[str, Any]]:
        """The experiments of this key."""
        return service.experiments(who)

    path = "/v1/experiments/{experiment_id}"

    @app.get(path, tags=["experiments"])
    async def status(experiment_id: str, who: Owner) -> JSONResponse:
        """Progress, done, the recommendation once done, released estimates, privacy summary."""
        return JSONResponse(service.status(who, _checked_id(experiment_id)))  # no response model: skips re-validation

    @app.post(path + "/ask", tags=["ask/tell"])
    async def ask(experiment_id: str, who: Owner) -> JSONResponse:
        """The next action (``arm``, ``pair`` or ``action``) and its ticket.

        When every scheduled step is out on its lease, waits (at most the lease) for a tell to free
        one or a lease to expire.
        """
        experiment_id = _checked_id(experiment_id)
        while (handed := await asyncio.wrap_future(service.ask_later(who, experiment_id, lease=lease_seconds))) is None:
            await steps_freed.wait(experiment_id, timeout=min(lease_seconds, 1.0))
        return JSONResponse(handed)  # no response model: nothing to re-validate

    @app.post(path + "/tell", tags=["ask/tell"])
    async def tell(experiment_id: str, body: TellRequest, who: Owner) -> JSONResponse:
        """Feedback of a ticket's step; acknowledged once committed. A retry returns the same acknowledgement."""
        experiment_id = _checked_id(experiment_id)
        acknowledged = await asyncio.wrap_future(service.tell_later(who, experiment_id, body.ticket, body.feedback()))
        steps_freed.notify(experiment_id)
        return JSONResponse(acknowledged)

    @app.get(path + "/ledger", tags=["privacy"])
    async def ledger(experiment_id: str, who: Owner) -> dict[str, Any]:
        """The privacy ledger: guarantee, releases, budget spent and remaining."""
        return service.ledger(who, _checked_id(experiment_id))

    @app.post(path + "/close", tags=["experiments"])
    async def close(experiment_id: str, who: Owner) -> dict[str, Any]:
        """Close the experiment (no further ask, tell, upload or sample)."""
        await asyncio.wrap_future(service.close_later(who, _checked_id(experiment_id)))
        steps_freed.notify(experiment_id)  # waiting asks see it closed
        return service.status(who, experiment_id)

    @app.post(path + "/data", tags=["offline"], openapi_extra={"requestBody": {
        "required": True, "content": {"text/csv": {"schema": {"type": "string"}},
                                      "application/vnd.apache.parquet": {"schema": {"type": "string",
                                                                                    "format": "binary"}}}}})
    async def upload(experiment_id: str, request: Request, who: Owner,
                     file_format: Annotated[Literal["csv", "parquet"] | None, Query(alias="format")] = None,
                     action_column: Annotated[str, Query(max_length=200)] = "action",
                     reward_column: Annotated[str, Query(max_length=200)] = "reward",
                     clip: bool = False) -> dict[str, Any]:
        """Upload logged data (CSV or Parquet body) to a KL-offline experiment; fits its policy, once."""
        data = await request.body()
        fmt = file_format or ("parquet" if "parquet" in request.headers.get("content-type", "") else "csv")
        return await run_in_threadpool(service.upload, who, _checked_id(experiment_id), data, file_format=fmt,
                                       action_column=action_column, reward_column=reward_column, clip=clip)

    @app.post(path + "/sample", tags=["offline"])
    def sample(experiment_id: str, body: SampleRequest, who: Owner) -> dict[str, Any]:
        """Release private samples (KL-offline actions, USCA recommendations), each spending the budget."""
        return service.sample(who, _checked_id(experiment_id), body.size, body.context)

    add_status_routes(app, engine, keys, behind_tls=behind_tls)
    app.add_middleware(BodyLimit, json_limit=json_limit, upload_limit=upload_limit)
    return app


def _checked_id(experiment_id: str) -> str:
    if len(experiment_id) != 32 or any(c not in "0123456789abcdef" for c in experiment_id):
        raise NotFound(f"experiment id must be 32 hexadecimal digits; got {experiment_id[:40]!r}")
    return experiment_id
