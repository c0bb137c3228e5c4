"""Errors of the service, each with its HTTP status and a stable machine-readable code."""

from __future__ import annotations

from dpbandits._core.errors import DPBanditsError

__all__ = ["Conflict", "NotFound", "ServiceError"]


class ServiceError(DPBanditsError):
    """A request the service refuses: ``status`` (4xx) and ``code`` go into the JSON error body."""

    status = 400
    code = "invalid_request"

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code


class NotFound(ServiceError):
    """No such experiment for this key (another key's experiment is reported the same way)."""

    status = 404
    code = "not_found"


class Conflict(ServiceError):
    """The request is well formed but the experiment's state refuses it (done, closed, told...)."""

    status = 409
    code = "conflict"
