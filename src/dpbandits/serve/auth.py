"""API keys of ``dpbandits serve``: created by the CLI, shown once, stored hashed.

A key is ``dpb_`` followed by 32 random bytes in URL-safe base64 (256 bits from the OS CSPRNG). The
store keeps only its SHA-256 hash: a high-entropy random key cannot be guessed from its hash, so a
slow password hash adds nothing here, and a fast one keeps every request cheap. A request presents
the key as ``Authorization: Bearer <key>`` (or ``X-API-Key: <key>``); the status page keeps it in an
HttpOnly cookie. Lookups are cached for a few seconds, so a revoked key stops working within
:data:`CACHE_SECONDS`.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
from dataclasses import dataclass

from sqlalchemy import Engine, insert, select, update

from dpbandits._core.errors import InvalidParameterError
from dpbandits.serve.storage import api_keys

__all__ = ["CACHE_SECONDS", "KEY_PREFIX", "ApiKey", "KeyCache", "create_key", "hash_key", "list_keys", "revoke_key"]

KEY_PREFIX = "dpb_"
"""Prefix of every API key (so a leaked key is recognisable)."""
CACHE_SECONDS = 5.0
"""How long a key's lookup is cached: a revoked key keeps working for at most this long."""


@dataclass(frozen=True)
class ApiKey:
    """A stored key (never the key itself)."""

    id: int
    name: str
    prefix: str
    created_at: float
    revoked: bool


def hash_key(key: str) -> str:
    """SHA-256 of the key, hex."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def create_key(engine: Engine, name: str) -> tuple[ApiKey, str]:
    """Create a key named ``name``; return its record and the key, which is not stored anywhere.

    Raises
    ------
    InvalidParameterError
        If ``name`` is empty or longer than 200 characters.
    """
    if not name or len(name) > 200 or not name.isprintable():
        raise InvalidParameterError(f"name must be 1 to 200 printable characters; got {name!r}")
    key = KEY_PREFIX + secrets.token_urlsafe(32)
    created = time.time()
    with engine.begin() as connection:
        key_id = connection.execute(
            insert(api_keys).values(name=name, key_hash=hash_key(key), prefix=key[:12], created_at=created,
                                    revoked=False)
        ).inserted_primary_key[0]  # type: ignore[index]
    return ApiKey(int(key_id), name, key[:12], created, False), key


def list_keys(engine: Engine) -> list[ApiKey]:
    """Every key's record (no key, no hash)."""
    with engine.connect() as connection:
        rows = connection.execute(select(api_keys).order_by(api_keys.c.id)).mappings().all()
    return [ApiKey(row["id"], row["name"], row["prefix"], row["created_at"], bool(row["revoked"])) for row in rows]


def revoke_key(engine: Engine, key_id: int) -> None:
    """Revoke key ``key_id`` (its experiments stay, reachable by no key).

    Raises
    ------
    InvalidParameterError
        If no key has that id.
    """
    with engine.begin() as connection:
        done = connection.execute(update(api_keys).where(api_keys.c.id == key_id).values(revoked=True)).rowcount
    if not done:
        raise InvalidParameterError(f"key id must be one of the listed keys; got {key_id!r}")


class KeyCache:
    """Key -> owner id, read from the store and cached for :data:`CACHE_SECONDS`."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._cache: dict[str, tuple[int | None, float]] = {}
        self._lock = threading.Lock()

    def owner(self, key: str | None) -> int | None:
        """The id of the key's row, or None for a missing, unknown or revoked key."""
        if not key or not key.startswith(KEY_PREFIX) or len(key) > 100:
            return None
        digest = hash_key(key)
        now = time.monotonic()
        with self._lock:
            cached = self._cache.get(digest)
        if cached is not None and now - cached[1] < CACHE_SECONDS:
            return cached[0]
        with self._engine.connect() as connection:
            row = connection.execute(
                select(api_keys.c.id, api_keys.c.key_hash, api_keys.c.revoked).where(api_keys.c.key_hash == digest)
            ).first()
        owner = row[0] if row is not None and not row[2] and hmac.compare_digest(row[1], digest) else None
        with self._lock:
            if len(self._cache) > 10_000:
                self._cache.clear()
            self._cache[digest] = (owner, now)
        return owner
