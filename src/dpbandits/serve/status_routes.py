"""The status page's routes: sign-in with an API key into a session, the overview, one experiment's page.

Signing in exchanges the API key for a session (:mod:`dpbandits.serve.sessions`): the cookie holds a
random session id, ``HttpOnly``, ``SameSite=Strict``, and ``Secure`` when the request came over TLS
(``https``, also as reported by a trusted proxy's ``X-Forwarded-Proto``) or the server was started
with ``behind_tls``. Both forms carry an anti-forgery token. Each page is one query
(:mod:`dpbandits.serve.dashboard`).
"""

from __future__ import annotations

from urllib.parse import parse_qs

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from sqlalchemy import Engine

from dpbandits.serve.auth import KeyCache
from dpbandits.serve.dashboard import detail, overview
from dpbandits.serve.sessions import (
    COOKIE,
    CSRF_COOKIE,
    SESSION_SECONDS,
    SessionStore,
    csrf_token,
    new_csrf_token,
    same_token,
)
from dpbandits.serve.status_page import render_detail, render_login, render_status

__all__ = ["add_status_routes"]

_LOGIN_SECONDS = 3600  # the sign-in form's token cookie


def add_status_routes(app: FastAPI, engine: Engine, keys: KeyCache, *, behind_tls: bool = False) -> None:
    """Add ``/``, ``/status``, ``/status/experiments/{id}``, ``/status/login`` and ``/status/logout`` to ``app``."""
    store = SessionStore(engine)

    def secure(request: Request) -> bool:
        return behind_tls or request.url.scheme == "https"

    def login_page(request: Request, message: str = "", status: int = 200) -> Response:
        token = new_csrf_token()
        response = HTMLResponse(render_login(token, message), status_code=status)
        response.set_cookie(CSRF_COOKIE, token, max_age=_LOGIN_SECONDS, path="/status", httponly=True,
                            samesite="strict", secure=secure(request))
        return response

    def session(request: Request) -> tuple[int, str] | None:
        session_id = request.cookies.get(COOKIE)
        who = store.owner(session_id)
        return None if who is None or session_id is None else (who, session_id)

    @app.get("/", include_in_schema=False)
    def root() -> RedirectResponse:
        return RedirectResponse("/status", status_code=303)

    @app.get("/status", response_class=HTMLResponse, tags=["status page"])
    def status_page(request: Request) -> Response:
        """The signed-in key's experiments (a sign-in form without a session)."""
        signed_in = session(request)
        if signed_in is None:
            return login_page(request)
        who, session_id = signed_in
        return HTMLResponse(render_status(overview(engine, who), csrf_token(session_id)))

    @app.get("/status/experiments/{experiment_id}", response_class=HTMLResponse, tags=["status page"])
    def experiment_page(experiment_id: str, request: Request) -> Response:
        """One experiment: its ledger over time and its released estimates, as charts."""
        signed_in = session(request)
        if signed_in is None:
            return RedirectResponse("/status", status_code=303)
        who, session_id = signed_in
        found = detail(engine, who, experiment_id) if len(experiment_id) == 32 else None
        if found is None:  # another key's experiment looks exactly like a missing one
            return HTMLResponse("<!DOCTYPE html><p>No such experiment for this key. <a href='/status'>Back</a></p>",
                                status_code=404)
        return HTMLResponse(render_detail(found, csrf_token(session_id)))

    @app.post("/status/login", include_in_schema=False)
    async def login(request: Request) -> Response:
        form = parse_qs((await request.body()).decode("utf-8", "replace"))
        if not same_token((form.get("csrf") or [""])[0], request.cookies.get(CSRF_COOKIE)):
            return login_page(request, "The sign-in form expired or came from another site: sign in again.", 403)
        who = keys.owner((form.get("key") or [""])[0].strip())
        if who is None:
            return login_page(request, "Unknown or revoked API key.", 401)
        response = RedirectResponse("/status", status_code=303)
        response.set_cookie(COOKIE, store.create(who), max_age=int(SESSION_SECONDS), path="/", httponly=True,
                            samesite="strict", secure=secure(request))
        response.delete_cookie(CSRF_COOKIE, path="/status")
        return response

    @app.post("/status/logout", include_in_schema=False)
    async def logout(request: Request) -> Response:
        form = parse_qs((await request.body()).decode("utf-8", "replace"))
        signed_in = session(request)
        if signed_in is None or not same_token((form.get("csrf") or [""])[0], csrf_token(signed_in[1])):
            return HTMLResponse("<!DOCTYPE html><p>Sign-out refused: the form did not come from this page.</p>",
                                status_code=403)
        store.end(signed_in[1])
        response = RedirectResponse("/status", status_code=303)
        response.delete_cookie(COOKIE, path="/")
        return response
