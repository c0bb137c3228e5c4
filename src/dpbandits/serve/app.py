"""The HTTP API of ``dpbandits serve`` (FastAPI): routes, authentication, errors, request size limits.

Every ``/v1`` route needs an API key (``Authorization: Bearer <key>`` or ``X-API-Key``); an
experiment is visible to its owner's key only (another key gets 404, as for a missing one). Errors
are JSON ``{"error": {"code": ..., "message": ...}}`` with a 4xx status: 400 invalid values (and a
request over the server's time limit), 401 no or unknown key, 404 not found, 409 refused by the
experiment's state (done, closed, already told, over budget), 413 body or experiment state too
large, 422 malformed request, 429 over a quota of the key (``Retry-After``); 503 when the store
refused a transaction for a reason a retry can fix (nothing was recorded: retry; see
:mod:`dpbandits.serve.store_errors`), or when the process that serves the experiment went away
after the request was forwarded to it (``owner_unavailable``: it may have been recorded; retry, a
tell with its ticket counts once; see :mod:`dpbandits.serve.affinity`), and only then; 500 for a bug. No error closes the client's
connection, and none carries a server path or a stored value; the log of a store error names
its class only (never the statement's parameters). OpenAPI docs: ``/docs`` (Swagger UI) and
``/redoc``, served from files packaged with ``fastapi-offline`` (the network may be closed), and
``/openapi.json``. The status page is ``/status``.

Requests of one experiment enter their computation one at a time (an asyncio lock per experiment,
so waiting holds no thread); the computation runs on the event loop when the agent is in memory
and small (microseconds), else in the thread pool, and its commit is a job of the service's commit
thread, awaited as a future (group commit; see :mod:`dpbandits.serve.locking`). The heavy requests
(create, sample, upload, any request that must load a large agent, and the tell that ends a phase
of a heavy agent) run their CPU-heavy part in a child process with a time limit, killed as soon
as the client disconnects (:mod:`dpbandits.serve.workers`). Ask and tell, the requests of every
step, read the key headers and parse their body directly, without FastAPI's dependency solving.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
import traceback
from collections.abc import AsyncIterator, Callable
from concurrent.futures import Future
from typing import Annotated, Any, Literal, TypeVar

from fastapi import Depends, FastAPI, Header, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi_offline import FastAPIOffline
from pydantic import BaseModel, ValidationError
from sqlalchemy import Engine
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from dpbandits import __version__
from dpbandits._core.errors import DPBanditsError
from dpbandits.serve.affinity import Affinity, Forwarding
from dpbandits.serve.auth import KeyCache
from dpbandits.serve.errors import NotFound, QuotaExceeded, Retry, ServiceError
from dpbandits.serve.kinds import list_kinds
from dpbandits.serve.locking import backoff
from dpbandits.serve.quotas import ConcurrencyLimit, Quotas
from dpbandits.serve.schemas import CreateExperiment, SampleRequest, TellRequest
from dpbandits.serve.service import ATTEMPTS, ExperimentService, NeedsThread, library_error_status
from dpbandits.serve.status_routes import add_status_routes
from dpbandits.serve.store_errors import is_bad_value, is_retryable

__all__ = ["MAX_JSON_BYTES", "MAX_UPLOAD_BYTES", "create_app"]

MAX_JSON_BYTES = 64 * 1024
MAX_UPLOAD_BYTES = 64 * 1024 * 1024
LEASE_SECONDS = 10.0
_log = logging.getLogger("dpbandits.serve")
T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)


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


class RequestLog:
    """Log one line per request at DEBUG (``dpbandits serve -v``): method, path, status and milliseconds.

    Never the query string, a header or the body (they may hold a key or feedback).
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started, status = time.perf_counter(), 0

        async def tracked(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, tracked)
        finally:
            _log.debug("%s %s %d %.1f ms", scope.get("method"), scope.get("path"), status,
                       1000 * (time.perf_counter() - started))


class ErrorBoundary:
    """Answer every exception the routes did not (store errors, bugs) without closing the connection.

    A store failure a retry can fix is a 503, a value the store cannot hold a 400, anything else a
    500; the log line names the exception's class and where it was raised, never its message (a
    store error's message may hold a statement's values, an exception's text the request's data).
    Unlike an exception handler for ``Exception`` (which Starlette re-raises, and uvicorn then
    closes the connection), the client's connection stays usable.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracked(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, tracked)
        except Exception as exc:
            where = f"{scope.get('method')} {scope.get('path')}"
            if is_retryable(exc):
                _log.warning("store error on %s: %s (retryable, answered 503)", where, _named(exc))
                response = _error(503, "store_unavailable",
                                  "the store refused the transaction; nothing was recorded: retry")
            elif is_bad_value(exc):
                _log.warning("store refused a value on %s: %s (answered 400)", where, _named(exc))
                response = _error(400, "invalid_value", "a value of the request cannot be stored (text must "
                                                        "not contain NUL or control characters)")
            else:
                _log.error("unexpected error on %s: %s", where, _named(exc))
                response = _error(500, "internal_error", "internal error (logged on the server)")
            if not started:
                await response(scope, receive, send)


def _named(exc: BaseException) -> str:
    """The exception's class and the innermost place it was raised (no message: it may carry data)."""
    frames = traceback.extract_tb(exc.__traceback__)
    place = f" at {frames[-1].filename}:{frames[-1].lineno}" if frames else ""
    cause = exc.__cause__ or exc.__context__
    return f"{type(exc).__module__}.{type(exc).__qualname__}{place}" + (
        f" (from {type(cause).__module__}.{type(cause).__qualname__})" if cause is not None else "")


def _validation_text(exc: RequestValidationError) -> str:
    parts = []
    for error in exc.errors()[:10]:
        where = ".".join(str(p) for p in error.get("loc", ()) if p != "body")
        parts.append(f"{where or 'body'}: {error.get('msg', 'invalid')}")
    return "; ".join(parts)


def _key_owner(request: Request, authorization: str | None, x_api_key: str | None) -> int:
    """The id of the request's API key (401 without a valid one; on the event loop: a cached lookup)."""
    key = x_api_key
    if authorization is not None and authorization.lower().startswith("bearer "):
        key = authorization[7:].strip()
    found = request.app.state.keys.owner(key)
    if found is None:
        raise StarletteHTTPException(401, "an API key is required: Authorization: Bearer <key> "
                                          "(create one with `dpbandits api-key create`)")
    return int(found)


async def _owner(request: Request, authorization: Annotated[str | None, Header()] = None,
                 x_api_key: Annotated[str | None, Header()] = None) -> int:
    """The id of the request's API key (the dependency of every route but ask and tell)."""
    return _key_owner(request, authorization, x_api_key)


def _hot_owner(request: Request) -> int:
    """:func:`_owner` without FastAPI's dependency machinery (ask and tell: the requests of every step).

    Solving a dependency with two header parameters costs more than the rest of an ask; these
    routes read the same headers directly and document them with :data:`_KEY_HEADERS`.
    """
    headers = request.headers
    return _key_owner(request, headers.get("authorization"), headers.get("x-api-key"))


_KEY_HEADERS: list[dict[str, Any]] = [{"name": name, "in": "header", "required": False, "schema": {"type": "string"}}
                                      for name in ("authorization", "x-api-key")]
"""The OpenAPI description of the key headers of the routes that read them directly."""


async def _json_body(request: Request, model: type[M]) -> M:
    """The request's JSON body as ``model`` (pydantic parses the bytes at once); 422 as FastAPI's if invalid."""
    try:
        return model.model_validate_json(await request.body())
    except ValidationError as exc:
        raise RequestValidationError([{**error, "loc": ("body", *error["loc"])} for error in exc.errors()]) from None


Owner = Annotated[int, Depends(_owner)]


async def _admitted(request: Request, who: Owner) -> AsyncIterator[int]:
    """The key's id, counted as one of its requests in progress (429 beyond its quota)."""
    with request.app.state.concurrency.hold(who):
        yield who


Admitted = Annotated[int, Depends(_admitted)]


class _Gates:
    """One asyncio lock per experiment: its requests enter their computation one at a time."""

    def __init__(self) -> None:
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}

    @contextlib.asynccontextmanager
    async def hold(self, experiment_id: str) -> AsyncIterator[None]:
        lock, users = self._locks.get(experiment_id, (None, 0))
        lock = lock or asyncio.Lock()
        self._locks[experiment_id] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[experiment_id]
            if users == 1:
                del self._locks[experiment_id]
            else:
                self._locks[experiment_id] = (lock, users - 1)


async def _cancellable(request: Request, function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``function(*args, cancel=event, **kwargs)`` in the thread pool; ``event`` is set if the client goes away."""
    cancel = threading.Event()

    async def watch() -> None:
        while (await request.receive())["type"] != "http.disconnect":
            pass
        cancel.set()

    watcher = asyncio.create_task(watch())
    try:
        return await run_in_threadpool(function, *args, cancel=cancel, **kwargs)
    finally:
        watcher.cancel()


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
               quotas: Quotas | None = None, time_limit: float = 60.0, behind_tls: bool = False,
               log_requests: bool = False, affinity: Affinity | None = None) -> FastAPI:
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
    quotas : Quotas, optional
        Per-key limits (:mod:`dpbandits.serve.quotas`).
    time_limit : float, default 60
        Seconds a request's CPU-heavy part may run (:mod:`dpbandits.serve.workers`).
    behind_tls : bool, default False
        The server is reached over TLS (a proxy terminates it): the status page's cookies are
        ``Secure`` whatever the request's scheme (see :mod:`dpbandits.serve.status_routes`).
    log_requests : bool, default False
        Log each request at DEBUG (:class:`RequestLog`).
    affinity : Affinity, optional
        Forward each experiment's ask, tell and close to the process that owns it
        (:mod:`dpbandits.serve.affinity`; ``dpbandits serve`` does); started and stopped with the
        application. Without it every request is served where it arrives.

    Returns
    -------
    fastapi.FastAPI
    """
    quotas = quotas or Quotas()
    service = ExperimentService(engine, allow_insecure_seeded_noise=allow_insecure_seeded_noise, quotas=quotas,
                                time_limit=time_limit)
    steps_freed = _StepsFreed()
    gates = _Gates()
    keys = KeyCache(engine)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if affinity is not None:
            await affinity.start(app)
        try:
            yield
        finally:
            if affinity is not None:
                await affinity.stop()

    # FastAPIOffline: the same FastAPI app, its /docs and /redoc pages served from packaged files (no CDN)
    app = FastAPIOffline(lifespan=lifespan, title="dpbandits serve", version=__version__,
                  description="Differentially private bandit experiments as a service: ask/tell agents "
                              "(best-arm identification, dueling, USCA) and KL-offline policies, with a "
                              "privacy ledger. Authenticate with `Authorization: Bearer <API key>`.")
    app.state.service = service
    app.state.affinity = affinity
    app.state.keys = keys
    app.state.concurrency = concurrency = ConcurrencyLimit(quotas.concurrent_requests)

    async def committed(experiment_id: str, request: Callable[[bool], Future[T]]) -> T:
        """Compute under the experiment's gate, then await the commit; recompute on Retry.

        ``request(inline)`` runs on the event loop when the agent is in memory and small, else (it
        raised :class:`~dpbandits.serve.catchup.NeedsThread`) in the thread pool.
        """
        for attempt in range(ATTEMPTS):
            async with gates.hold(experiment_id):
                try:
                    future = request(True)
                except NeedsThread:
                    future = await run_in_threadpool(request, False)
            try:
                return await asyncio.wrap_future(future)
            except Retry:
                if attempt == ATTEMPTS - 1:
                    raise
                await asyncio.sleep(backoff(attempt))
        raise AssertionError("unreachable")

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        return _error(422, "invalid_request", _validation_text(exc))

    @app.exception_handler(DPBanditsError)
    async def _refused(request: Request, exc: DPBanditsError) -> JSONResponse:
        code = exc.code if isinstance(exc, ServiceError) else "invalid_value"
        response = _error(library_error_status(exc), code, str(exc))
        if isinstance(exc, QuotaExceeded | Retry):
            response.headers["Retry-After"] = "1"
        return response

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        codes = {401: "unauthorized", 404: "not_found", 405: "method_not_allowed"}
        return _error(exc.status_code, codes.get(exc.status_code, "http_error"), str(exc.detail))

    @app.get("/healthz", tags=["service"])
    async def health() -> dict[str, str]:
        """Liveness: the process answers."""
        return {"status": "ok", "version": __version__}

    @app.get("/v1/kinds", tags=["experiments"])
    def kinds(who: Admitted) -> list[dict[str, Any]]:
        """The experiment kinds, with the JSON schema of their parameters."""
        return [{"kind": k.name, "family": k.family.name, "description": k.description,
                 "interactive": k.family.interactive, "params": k.params.model_json_schema()} for k in list_kinds()]

    @app.post("/v1/experiments", status_code=201, tags=["experiments"])
    async def create(body: CreateExperiment, who: Admitted, request: Request) -> dict[str, Any]:
        """Create an experiment; for ask/tell kinds its whole run's guarantee is spent now."""
        return await _cancellable(request, service.create, who, body.kind, body.params, name=body.name,
                                  epsilon_budget=body.epsilon_budget, delta_budget=body.delta_budget,
                                  insecure_seed=body.insecure_seed)

    @app.get("/v1/experiments", tags=["experiments"])
    async def experiments(who: Admitted) -> list[dict[str, Any]]:
        """The experiments of this key."""
        return service.experiments(who)

    path = "/v1/experiments/{experiment_id}"

    @app.get(path, tags=["experiments"])
    async def status(experiment_id: str, who: Admitted) -> JSONResponse:
        """Progress, done, the recommendation once done, released estimates, privacy summary."""
        return JSONResponse(service.status(who, _checked_id(experiment_id)))  # no response model: skips re-validation

    @app.post(path + "/ask", tags=["ask/tell"], openapi_extra={"parameters": _KEY_HEADERS})
    async def ask(experiment_id: str, request: Request) -> JSONResponse:
        """The next action (``arm``, ``pair`` or ``action``) and its ticket.

        When every scheduled step is out on its lease, waits (at most the lease) for a tell to free
        one or a lease to expire.
        """
        who = _hot_owner(request)
        experiment_id = _checked_id(experiment_id)
        with concurrency.hold(who):
            while (handed := await committed(experiment_id, lambda inline: service.ask_later(
                    who, experiment_id, lease=lease_seconds, inline=inline))) is None:
                await steps_freed.wait(experiment_id, timeout=min(lease_seconds, 1.0))
        return JSONResponse(handed)  # no response model: nothing to re-validate

    @app.post(path + "/tell", tags=["ask/tell"], openapi_extra={
        "parameters": _KEY_HEADERS,
        "requestBody": {"required": True, "content": {"application/json": {"schema": TellRequest.model_json_schema()}}}})
    async def tell(experiment_id: str, request: Request) -> JSONResponse:
        """Feedback of a ticket's step; acknowledged once committed. A retry returns the same acknowledgement."""
        who = _hot_owner(request)
        experiment_id = _checked_id(experiment_id)
        with concurrency.hold(who):
            body = await _json_body(request, TellRequest)
            reported = body.feedback()
            acknowledged = await committed(experiment_id, lambda inline: service.tell_later(
                who, experiment_id, body.ticket, reported, inline=inline))
        steps_freed.notify(experiment_id)
        return JSONResponse(acknowledged)

    @app.get(path + "/ledger", tags=["privacy"])
    def ledger(experiment_id: str, who: Admitted) -> dict[str, Any]:  # in the thread pool: it opens the ledger
        """The privacy ledger: guarantee, releases, budget spent and remaining."""
        return service.ledger(who, _checked_id(experiment_id))

    @app.post(path + "/close", tags=["experiments"])
    async def close(experiment_id: str, who: Admitted) -> dict[str, Any]:
        """Close the experiment (no further ask, tell, upload or sample)."""
        experiment_id = _checked_id(experiment_id)
        await committed(experiment_id, lambda _inline: service.close_later(who, experiment_id))
        steps_freed.notify(experiment_id)  # waiting asks see it closed
        return service.status(who, experiment_id)

    @app.post(path + "/data", tags=["offline"], openapi_extra={"requestBody": {
        "required": True, "content": {"text/csv": {"schema": {"type": "string"}},
                                      "application/vnd.apache.parquet": {"schema": {"type": "string",
                                                                                    "format": "binary"}}}}})
    async def upload(experiment_id: str, request: Request, who: Admitted,
                     file_format: Annotated[Literal["csv", "parquet"] | None, Query(alias="format")] = None,
                     action_column: Annotated[str, Query(max_length=200)] = "action",
                     reward_column: Annotated[str, Query(max_length=200)] = "reward",
                     clip: bool = False) -> dict[str, Any]:
        """Upload logged data (CSV or Parquet body) to a KL-offline experiment; fits its policy, once."""
        data = await request.body()
        fmt = file_format or ("parquet" if "parquet" in request.headers.get("content-type", "") else "csv")
        experiment_id = _checked_id(experiment_id)
        async with gates.hold(experiment_id):  # the experiment's requests on the event loop never wait for it
            return await _cancellable(request, service.upload, who, experiment_id, data, file_format=fmt,
                                      action_column=action_column, reward_column=reward_column, clip=clip)

    @app.post(path + "/sample", tags=["offline"])
    async def sample(experiment_id: str, body: SampleRequest, who: Admitted, request: Request) -> dict[str, Any]:
        """Release private samples (KL-offline actions, USCA recommendations), each spending the budget."""
        experiment_id = _checked_id(experiment_id)
        async with gates.hold(experiment_id):  # the experiment's requests on the event loop never wait for it
            return await _cancellable(request, service.sample, who, experiment_id, body.size, body.context)

    add_status_routes(app, engine, keys, behind_tls=behind_tls)
    if affinity is not None:  # inside the body limit: a forwarded body is limited as any other
        app.add_middleware(Forwarding, affinity=affinity, keys=keys, concurrency=concurrency)
    app.add_middleware(BodyLimit, json_limit=json_limit, upload_limit=upload_limit)
    app.add_middleware(ErrorBoundary)  # inside Starlette's ServerErrorMiddleware: it never re-raises
    if log_requests:
        app.add_middleware(RequestLog)  # outermost: it sees the status every other layer answered
    return app


def _checked_id(experiment_id: str) -> str:
    if len(experiment_id) != 32 or any(c not in "0123456789abcdef" for c in experiment_id):
        raise NotFound(f"experiment id must be 32 hexadecimal digits; got {experiment_id[:40]!r}")
    return experiment_id
