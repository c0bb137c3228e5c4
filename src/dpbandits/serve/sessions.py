"""Status-page sessions: a random session id in the cookie, stored hashed with its expiry.

Signing in on the status page with an API key creates a **session**: 32 random bytes (OS CSPRNG)
sent to the browser in an ``HttpOnly``, ``SameSite=Strict`` cookie (``Secure`` when served over
TLS). The store keeps the id's SHA-256 hash, the key it belongs to and its expiry
(:data:`SESSION_SECONDS`) — never the key: a stolen cookie is a session that expires, that signing
out ends, and that revoking the key ends too; it never reveals the key.

Forms are protected against cross-site request forgery: the sign-out form carries a token derived
from the session (:func:`csrf_token`); the sign-in form, shown before any session exists, carries a
random token that must equal the one in a separate short-lived cookie (double submit).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time

from sqlalchemy import Engine, delete, insert, select

from dpbandits.serve.storage import api_keys, sessions

__all__ = ["COOKIE", "CSRF_COOKIE", "SESSION_SECONDS", "SessionStore", "csrf_token", "new_csrf_token", "same_token"]

COOKIE = "dpbandits_session"
"""The session cookie (a random id; the API key never leaves the sign-in form)."""
CSRF_COOKIE = "dpbandits_csrf"
"""The sign-in form's double-submit token."""
SESSION_SECONDS = 8 * 3600.0
"""A session ends this long after sign-in."""



def _digest(session_id: str) -> str:
    return hashlib.sha256(session_id.encode("utf-8")).hexdigest()


def csrf_token(session_id: str) -> str:
    """The session's form token: a hash of the id under a label (the id itself is never in a page)."""
    return hashlib.sha256(b"dpbandits-csrf\x00" + session_id.encode("utf-8")).hexdigest()


def new_csrf_token() -> str:
    """A random token for the sign-in form and its cookie."""
    return secrets.token_urlsafe(32)


def same_token(given: str | None, expected: str | None) -> bool:
    """Constant-time equality of two tokens (False when either is missing)."""
    return bool(given) and bool(expected) and hmac.compare_digest(str(given), str(expected))


class SessionStore:
    """Sessions of the status page in the store (the table is created on first use)."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        sessions.create(engine, checkfirst=True)

    def create(self, owner_id: int, *, now: float | None = None) -> str:
        """Open a session for key ``owner_id``; return its id (shown once, to the browser)."""
        session_id = secrets.token_urlsafe(32)
        now = time.time() if now is None else now
        with self._engine.begin() as connection:
            connection.execute(delete(sessions).where(sessions.c.expires_at < now))  # expired ones
            connection.execute(insert(sessions).values(id_hash=_digest(session_id), owner_id=owner_id,
                                                       created_at=now, expires_at=now + SESSION_SECONDS))
        return session_id

    def owner(self, session_id: str | None, *, now: float | None = None) -> int | None:
        """The key id of a live session (None: missing, unknown, expired, or its key was revoked)."""
        if not session_id or len(session_id) > 100:
            return None
        now = time.time() if now is None else now
        query = (select(sessions.c.owner_id, api_keys.c.revoked)
                 .join(api_keys, api_keys.c.id == sessions.c.owner_id)
                 .where(sessions.c.id_hash == _digest(session_id), sessions.c.expires_at > now))
        with self._engine.connect() as connection:
            row = connection.execute(query).first()
        return None if row is None or row[1] else int(row[0])

    def end(self, session_id: str | None) -> None:
        """Delete the session (signing out); unknown ids are ignored."""
        if session_id and len(session_id) <= 100:
            with self._engine.begin() as connection:
                connection.execute(delete(sessions).where(sessions.c.id_hash == _digest(session_id)))
