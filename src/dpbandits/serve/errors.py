"""Errors of the service, each with its HTTP status and a stable machine-readable code."""

from __future__ import annotations

from dpbandits._core.errors import DPBanditsError, NotFittedError, PrivacyBudgetExceededError

__all__ = ["Cancelled", "Conflict", "InvalidRequest", "NotFound", "QuotaExceeded", "Retry", "ServiceError", "StoreSchemaError",
           "TimeLimitExceeded", "TooLarge", "library_error_status"]


class ServiceError(DPBanditsError):
    """A request the service refuses: ``status`` (4xx) and ``code`` go into the JSON error body."""

    status = 400
    code = "invalid_request"

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code


class StoreSchemaError(DPBanditsError):
    """A store this dpbandits cannot open: of another schema version (or none), or with tables missing.

    Raised when the store is opened (:func:`~dpbandits.serve.storage.make_engine`), before any
    request is served: a store is migrated or refused, never read with another layout.
    """


class InvalidRequest(ServiceError):
    """A malformed request body: a value of the wrong JSON type, a missing or unknown field.

    422, as the body models' own validation answers.
    """

    status = 422
    code = "invalid_request"


class NotFound(ServiceError):
    """No such experiment for this key (another key's experiment is reported the same way)."""

    status = 404
    code = "not_found"


class Conflict(ServiceError):
    """The request is well formed but the experiment's state refuses it (done, closed, told...)."""

    status = 409
    code = "conflict"


class TooLarge(ServiceError):
    """The request or the state it would store is over a size limit of the server (``--max-state-bytes``)."""

    status = 413
    code = "too_large"


class QuotaExceeded(ServiceError):
    """The key is over one of its quotas (experiments, concurrent requests): 429, retry later or close some."""

    status = 429
    code = "quota_exceeded"


class TimeLimitExceeded(ServiceError):
    """The request needed more than the server's time limit (``--time-limit``); nothing was recorded."""

    status = 400
    code = "time_limit"


class Cancelled(ServiceError):
    """The client went away while its request was being computed; the work was stopped, nothing recorded."""

    status = 499
    code = "cancelled"


class Retry(ServiceError):
    """A transient refusal (the experiment changed under the request, in another server process): retry."""

    status = 503
    code = "store_unavailable"


def library_error_status(exc: DPBanditsError) -> int:
    """The HTTP status of a library error raised while serving a request (4xx: the request's fault)."""
    if isinstance(exc, ServiceError):
        return exc.status
    if isinstance(exc, NotFittedError | PrivacyBudgetExceededError):
        return 409
    return 400
