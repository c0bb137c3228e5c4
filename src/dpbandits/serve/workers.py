"""CPU-heavy work of the service in child processes: a time limit, and killed when its client goes away.

Building an agent (a G-optimal design, USCA's kernel set-up), loading a stored one, drawing samples
and fitting uploaded data can take seconds of CPU. Each such job runs in a fresh child process
(forked from a ``forkserver`` that has the library imported, so a job starts in milliseconds and
holds none of the server's locks or threads), while the server process waits for the result
without holding anything else: other experiments and other tenants go on, and the job's CPU is
not the server's. A job still running after ``time_limit`` seconds, or whose ``cancel`` event is
set (the HTTP layer sets it when the client disconnects), is killed with SIGKILL: its CPU stops at
once, and nothing it computed is stored or released.

A job's function gets and returns picklable values. As with every ``multiprocessing`` start method
but ``fork``, a script that uses the service in-process must guard its entry point with ``if
__name__ == "__main__":`` (a job's process imports the main module); ``dpbandits serve`` does. Library errors raised in the child come back
as the same error class with the same one-line message; any other exception is a bug, reported by
its class only (:class:`IsolatedWorkFailed`), since its message may hold the job's data.
"""

from __future__ import annotations

import multiprocessing
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from multiprocessing.context import ForkServerContext
from typing import Any, TypeVar

from dpbandits._core import errors as library_errors
from dpbandits._core.errors import DPBanditsError, InvalidParameterError
from dpbandits.serve.errors import Cancelled, ServiceError, TimeLimitExceeded

__all__ = ["IsolatedWorkFailed", "run_isolated", "start_workers"]

T = TypeVar("T")

_POLL_SECONDS = 0.05
_PRELOAD = ["dpbandits.serve.jobs", "dpbandits.algorithms.bai", "dpbandits.algorithms.dueling",
            "dpbandits.algorithms.kernel", "dpbandits.algorithms.offline.simulate"]
"""Imported once by the fork server, not by every job (the heavy optional libraries — scikit-learn
for USCA's kernels, pandas and pyarrow for uploads — are imported by the jobs that need them: a
server that never sees those kinds does not pay for them)."""
_CONTEXT: ForkServerContext | None = None
_GUARD = threading.Lock()


class IsolatedWorkFailed(RuntimeError):
    """A job died or raised something other than a library error (named by its class only)."""


def _context() -> ForkServerContext:
    global _CONTEXT
    with _GUARD:
        if _CONTEXT is None:
            context = multiprocessing.get_context("forkserver")
            assert isinstance(context, ForkServerContext)
            context.set_forkserver_preload(_PRELOAD)
            _CONTEXT = context
        return _CONTEXT


def start_workers() -> None:
    """Start the fork server now (its first job would otherwise pay for importing the library)."""
    from multiprocessing import forkserver

    _context()
    forkserver.ensure_running()


def _child(connection: Connection, function: Callable[..., Any], args: tuple[Any, ...]) -> None:
    try:
        outcome: tuple[str, Any] = ("ok", function(*args))
    except ServiceError as exc:
        outcome = ("service", (exc.status, exc.code, str(exc)))
    except DPBanditsError as exc:
        outcome = ("library", (type(exc).__name__, str(exc)))
    except MemoryError:
        outcome = ("memory", None)
    except BaseException as exc:  # a bug: its class only (the message may hold the job's data)
        outcome = ("bug", type(exc).__name__)
    connection.send(outcome)
    connection.close()


def _raise(kind: str, payload: Any) -> Any:
    if kind == "service":
        status, code, message = payload
        error = ServiceError(message, code=code)
        error.status = status
        raise error
    if kind == "library":
        name, message = payload
        cls = getattr(library_errors, name, None)
        if isinstance(cls, type) and issubclass(cls, DPBanditsError):
            raise cls(message)
        raise InvalidParameterError(message)
    if kind == "memory":
        raise ServiceError("the request needs more memory than the server allows", code="too_large")
    raise IsolatedWorkFailed(f"a job of the service failed ({payload})")


def run_isolated(function: Callable[..., T], *args: Any, time_limit: float,
                 cancel: threading.Event | None = None) -> T:
    """``function(*args)`` in a child process; its result.

    Raises
    ------
    TimeLimitExceeded
        After ``time_limit`` seconds (the child is killed).
    Cancelled
        When ``cancel`` is set (the child is killed).
    IsolatedWorkFailed
        If the child died or raised an unexpected exception.
    """
    context = _context()
    receiver, sender = context.Pipe(duplex=False)
    process = context.Process(target=_child, args=(sender, function, args), daemon=True)
    deadline = time.monotonic() + time_limit
    try:
        process.start()
        sender.close()
        while not receiver.poll(max(0.0, min(_POLL_SECONDS, deadline - time.monotonic()))):
            if cancel is not None and cancel.is_set():
                raise Cancelled("the client went away; the work was stopped and nothing was recorded")
            if time.monotonic() > deadline:
                raise TimeLimitExceeded(
                    f"the request needs more than the server's time limit of {time_limit:g} s "
                    "(dpbandits serve --time-limit); nothing was recorded")
            if not process.is_alive() and not receiver.poll():
                raise IsolatedWorkFailed(f"a job of the service died (exit code {process.exitcode})")
        try:
            kind, payload = receiver.recv()
        except EOFError:
            raise IsolatedWorkFailed("a job of the service died before answering") from None
    finally:
        if process.is_alive():
            process.kill()
        process.join()
        receiver.close()
    if kind != "ok":
        _raise(kind, payload)
    return payload
