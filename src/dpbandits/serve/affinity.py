"""Experiment affinity: each experiment's requests served by one process, whichever process they reach.

Several server processes on one store serve every experiment correctly (:mod:`dpbandits.serve.catchup`),
but an experiment whose requests land on two processes runs at a fraction of its speed on one: each
process must read what the other wrote before computing the next tell, and their commits cannot
share a transaction. So each process forwards an experiment's agent requests (``ask``, ``tell``,
``close``) to the experiment's *owner* (:mod:`dpbandits.serve.owners`), which keeps the agent in
memory and group-commits its tells as if it were the only process:

* every process listens on an internal address of its own (``--internal-host``, the loopback
  interface by default: processes of one host; a port chosen at start) and registers it in the store;
* a request of an experiment with no owner, or whose owner's lease expired, makes the process that
  received it the owner; the owner is cached per process (one read of the store per experiment and
  lease period, not per request), and a process's own leases are renewed by its heartbeat;
* the request is authenticated and its key's ownership of the experiment checked **before** it is
  forwarded: another key's experiment and a missing id are both answered locally (404), after the
  same work (one read of the store);
* it is forwarded with its method, path, key headers and body unchanged (:mod:`dpbandits.serve.relay`:
  kept-alive connections), to an address read from
  the store (only ``http(s)://host:port``; never one a client supplied), with a hop header: a
  forwarded request is served where it arrives, never forwarded again (no loop);
* the owner authenticates it again and answers; its answer is relayed as it is. An owner that
  cannot be reached (refused connection: a killed process) is skipped — the request is served
  locally, and the process takes the lease once it expires. An owner lost *after* the request was
  sent is answered 503 (``owner_unavailable``): the request may have been recorded, and the client
  retries it (a retried tell of the same ticket is acknowledged once); the process never resends
  it on its own.

Correctness never depends on the owner: a process serving an experiment another one owns, or two
processes that both believe they own it, take the catch-up path, slower but with every guarantee.
"""

from __future__ import annotations

import contextlib
import logging
import re
import secrets
import socket
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, Response
from sqlalchemy import Engine
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from dpbandits.serve.errors import QuotaExceeded
from dpbandits.serve.owners import Owner, Registry, checked_url
from dpbandits.serve.relay import Lost, NotSent, Relay

__all__ = ["HOP_HEADER", "OWNER_LEASE_SECONDS", "Affinity"]

HOP_HEADER = "x-dpbandits-forwarded"
"""Marks a request forwarded by another server process (it is served where it arrives)."""
OWNER_LEASE_SECONDS = 5.0
"""Default seconds an experiment's owner lease runs past the owner's latest heartbeat."""
_FORWARDED_HEADERS = ("authorization", "x-api-key", "content-type", "accept")
_FORWARDABLE = re.compile(r"/v1/experiments/([0-9a-f]{32})/(ask|tell|close)")
_HOP = HOP_HEADER.encode()
_RELAYED_HEADERS = ("content-type", "retry-after")
_MAX_ROUTES = 4096
_log = logging.getLogger("dpbandits.serve")


@dataclass
class _Route:
    owner: Owner
    until: float  # time.monotonic() after which the store is read again


class Affinity:
    """Forwarding of one server process (see the module docstring).

    Parameters
    ----------
    engine : sqlalchemy.Engine
    host : str
        Interface of the internal listener, and the host other processes reach it at.
    lease : float
        Seconds of an owner lease (renewed every third of it).
    read_timeout : float
        Seconds a forwarded request may take at the owner (its time limit and more).
    """

    def __init__(self, engine: Engine, *, host: str = "127.0.0.1", lease: float = OWNER_LEASE_SECONDS,
                 read_timeout: float = 120.0) -> None:
        self.engine, self.host, self.lease, self.read_timeout = engine, host, lease, read_timeout
        self.process_id = secrets.token_hex(16)
        self.registry: Registry | None = None
        self._routes: OrderedDict[str, _Route] = OrderedDict()
        self._owned: set[str] = set()
        self._renewed_until = 0.0
        self._relay: Relay | None = None
        self._server: Any = None
        self._stop = threading.Event()
        self._beat: threading.Thread | None = None
        self.forwarded = 0  # requests this process sent to an owner (what the tests check)

    # ------------------------------------------------------------------------------ lifetime
    async def start(self, app: Any) -> None:
        """Listen on the internal address, register this process, start the heartbeat."""
        import uvicorn

        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, 0))
        port = sock.getsockname()[1]
        # connections kept open by the other processes' relays are not closed after uvicorn's 5 idle seconds
        config = uvicorn.Config(app, lifespan="off", log_level="warning", access_log=False, proxy_headers=False,
                                timeout_keep_alive=3600)
        config.load()
        server = uvicorn.Server(config)
        server.lifespan = config.lifespan_class(config)
        await server.startup(sockets=[sock])
        self._server = server
        host = f"[{self.host}]" if ":" in self.host else self.host
        self.registry = Registry(self.engine, self.process_id, f"http://{host}:{port}", self.lease)
        await run_in_threadpool(self.registry.register)
        self._renewed_until = time.monotonic() + self.lease
        self._relay = Relay(connect_timeout=1.0, read_timeout=self.read_timeout)
        self._beat = threading.Thread(target=self._heartbeats, name="dpbandits-heartbeat", daemon=True)
        self._beat.start()

    async def stop(self) -> None:
        """Stop the heartbeat, give up this process's leases, close the listener and the client."""
        self._stop.set()
        if self._beat is not None:
            await run_in_threadpool(self._beat.join, 10.0)
        if self.registry is not None:
            with contextlib.suppress(Exception):
                await run_in_threadpool(self.registry.leave)
        if self._relay is not None:
            self._relay.close()
        if self._server is not None:
            self._server.force_exit = True
            await self._server.shutdown()

    def _heartbeats(self) -> None:
        while not self._stop.wait(self.lease / 3):
            assert self.registry is not None
            started = time.monotonic()
            try:
                self._owned = self.registry.heartbeat()
            except Exception as exc:  # the store is away: leases lapse, requests are served locally meanwhile
                _log.warning("heartbeat of the process registry failed: %s", type(exc).__name__)
                continue
            self._renewed_until = started + self.lease

    # ------------------------------------------------------------------------------ routing
    async def owner_of(self, who: int, experiment_id: str) -> Owner | None:
        """The experiment's owner, if the key ``who`` owns the experiment (None: serve locally)."""
        now = time.monotonic()
        route = self._routes.get(experiment_id)
        if route is not None and route.owner.tenant == who:
            mine = route.owner.process_id == self.process_id
            if (mine and experiment_id in self._owned and now < self._renewed_until) or (not mine and now < route.until):
                return route.owner
        assert self.registry is not None
        # a key that does not own the experiment reads the store as for a missing id: the same work, one read
        found = await run_in_threadpool(self.registry.lookup, experiment_id)
        if found is None or found.tenant != who:
            return None
        if found.process_id is None or found.seconds_left <= 0 or found.process_id == self.process_id:
            found = await run_in_threadpool(self.registry.take, experiment_id, who)
        if found.process_id == self.process_id:
            self._owned.add(experiment_id)
        self._remember(experiment_id, found, now + max(0.0, min(found.seconds_left, self.lease)))
        return found

    def _remember(self, experiment_id: str, owner: Owner, until: float) -> None:
        self._routes[experiment_id] = _Route(owner, until)
        self._routes.move_to_end(experiment_id)
        while len(self._routes) > _MAX_ROUTES:
            self._routes.popitem(last=False)

    async def forward(self, scope: Scope, receive: Receive, send: Send, who: int, experiment_id: str,
                      action: str) -> Receive | None:
        """Answer the request with its owner's answer (None), or leave it to this process (the ``receive`` to use).

        ``who`` owns a valid key; the request is ``POST /v1/experiments/{experiment_id}/{action}`` (see
        :class:`Forwarding`).
        """
        owner = await self.owner_of(who, experiment_id)
        if owner is None or owner.process_id in (None, self.process_id) or self._relay is None:
            return receive
        url = checked_url(owner.url)
        if url is None:
            return receive
        raw = dict(scope["headers"])
        headers = [(name, raw[name.encode()].decode("latin-1")) for name in _FORWARDED_HEADERS if name.encode() in raw]
        if any("\r" in value or "\n" in value for _, value in headers):
            return receive  # (the HTTP parser refuses these before a request reaches the application)
        headers.append((HOP_HEADER, self.process_id))
        chunks = []
        while True:  # the body (its size is limited by the middleware around this one)
            message = await receive()
            if message["type"] != "http.request":
                return None  # the client went away: nothing to answer
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        self.forwarded += 1
        try:
            status, answer_headers, content = await self._relay.exchange(
                url, "POST", f"/v1/experiments/{experiment_id}/{action}", headers, body)
        except NotSent:
            # no connection (a killed owner refuses them): served here; the owner is read again in a second
            # (its lease lapses meanwhile, and this process takes it)
            self._remember(experiment_id, Owner(owner.tenant, None, None, 0.0), time.monotonic() + min(self.lease, 1.0))
            return _replaying(body, receive)
        except Lost as exc:  # sent, and no answer: it may have been recorded; the client retries, never this process
            self._routes.pop(experiment_id, None)
            _log.warning("the owner of an experiment did not answer a forwarded request: %s", exc)
            answer: Response = JSONResponse({"error": {"code": "owner_unavailable", "message": (
                "the server process serving this experiment did not answer; the request may or may not have "
                "been recorded: retry it (a tell retried with the same ticket is counted once)")}},
                status_code=503, headers={"Retry-After": "1"})
        else:
            relayed = {name: value for name, value in answer_headers if name in _RELAYED_HEADERS}
            answer = Response(content, status_code=status, headers=relayed)
        await answer(scope, receive, send)
        return None

    @property
    def url(self) -> str | None:
        """The internal address of this process (once started)."""
        return None if self.registry is None else self.registry.url


def _replaying(body: bytes, receive: Receive) -> Receive:
    """``receive`` that first returns ``body`` again (already read from the client), then the client's messages."""
    pending = [body]

    async def replay() -> Message:
        if pending:
            return {"type": "http.request", "body": pending.pop(), "more_body": False}
        return await receive()

    return replay


class Forwarding:
    """ASGI middleware: an experiment's ask, tell and close, answered by its owner if another process owns it.

    ``POST /v1/experiments/{id}/ask|tell|close`` goes through :meth:`Affinity.forward`; everything
    else goes to the application. Before the application's routes (its routing costs about as much as the forwarding itself), and
    after the limit on the body's size. A request this middleware does not forward — no valid key, an
    experiment the key does not own or that does not exist, a key over its concurrency quota, a request
    forwarded once already (the hop header), no reachable owner — is left to the application, which
    answers it as it would without forwarding.
    """

    def __init__(self, app: ASGIApp, *, affinity: Affinity, keys: Any, concurrency: Any) -> None:
        self.app, self.affinity, self.keys, self.concurrency = app, affinity, keys, concurrency

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            match = _FORWARDABLE.fullmatch(scope["path"])
            if match is not None:
                headers = dict(scope["headers"])
                who = None if _HOP in headers else self.keys.owner(_key(headers))
                if who is not None:
                    try:
                        with self.concurrency.hold(who):
                            left = await self.affinity.forward(scope, receive, send, who, match[1], match[2])
                    except QuotaExceeded:  # the application answers it (429)
                        left = receive
                    if left is None:
                        return
                    receive = left
        await self.app(scope, receive, send)


def _key(headers: dict[bytes, bytes]) -> str | None:
    """The API key of the request's headers (as the application reads it), or None."""
    authorization = headers.get(b"authorization")
    if authorization is not None and authorization[:7].lower() == b"bearer ":
        return authorization[7:].decode("latin-1").strip()
    key = headers.get(b"x-api-key")
    return None if key is None else key.decode("latin-1")
