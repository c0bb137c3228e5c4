"""The service's offline and sampling operations: fit a policy to an upload, release samples.

These two operations release through a child process and the experiment's ledger, not through the
ask/tell feedback path; :class:`~dpbandits.serve.service.ExperimentService` takes them from
:class:`OfflineReleases`, which uses only the service's store, quotas, locks, agents and commit queue.
"""

from __future__ import annotations

import json
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import Connection, Engine, bindparam, update

from dpbandits._core.errors import NotFittedError
from dpbandits.privacy.guarantees import Guarantee
from dpbandits.serve.catchup import Agents
from dpbandits.serve.errors import Conflict, Retry
from dpbandits.serve.jobs import portable, sample_job, upload_job
from dpbandits.serve.leases import forget_applied
from dpbandits.serve.ledger import budget_json, finite_or_none, open_ledger, spend_or_refuse
from dpbandits.serve.locking import ATTEMPTS, ExperimentLocks, backoff, compare_and_set
from dpbandits.serve.packing import pack
from dpbandits.serve.quotas import Quotas
from dpbandits.serve.storage import feedback
from dpbandits.serve.workers import run_isolated

__all__ = ["OfflineReleases", "cover", "guarantee_json"]

_MARK_COVERED = (update(feedback).where(feedback.c.experiment_id == bindparam("covered_experiment"),
                                       feedback.c.step >= bindparam("since"), feedback.c.step < bindparam("covered"),
                                       feedback.c.applied.is_(False))
                 .values(applied=True, payload=None))


def guarantee_json(guarantee: Guarantee) -> dict[str, Any]:
    """A guarantee as the service's JSON shows it."""
    return {"epsilon": finite_or_none(guarantee.epsilon), "delta": guarantee.delta, "unit": guarantee.unit,
            "neighbouring": str(getattr(guarantee.neighbouring, "value", guarantee.neighbouring)),
            "reference": guarantee.reference, "per_instance": bool(guarantee.per_instance),
            "description": str(guarantee)}


class OfflineReleases:
    """Upload and sample, for :class:`~dpbandits.serve.service.ExperimentService`.

    The attributes and methods annotated below are the service's (set in its ``__init__``).
    """

    engine: Engine
    quotas: Quotas
    time_limit: float
    _agents: Agents
    _locks: ExperimentLocks
    _submit: Callable[..., Future[Any]]
    status: Callable[[int, str], dict[str, Any]]
    _summary: Callable[..., dict[str, Any]]

    # ------------------------------------------------------------------------------ offline data
    def upload(self, owner_id: int, experiment_id: str, data: bytes, *, file_format: str,
               action_column: str = "action", reward_column: str = "reward", clip: bool = False,
               cancel: threading.Event | None = None) -> dict[str, Any]:
        """Fit an offline experiment's policy to uploaded logged data (CSV or Parquet), once.

        The data never leaves the server and nothing about it is returned: the response is the
        status (fitted, and the guarantee of one sample over the declared domain). Parsed and fitted
        in a child process (time limit, ``cancel``); error messages name "the uploaded file", never
        a path of the server.
        """
        with self._locks.hold(experiment_id):
            live = self._agents.get(owner_id, experiment_id, cancel)
            family: Any = live.kind.family
            if family.interactive or not callable(getattr(family, "read_upload", None)):
                raise Conflict(f"a {live.kind.name} experiment takes ask/tell feedback, not an upload",
                               code="not_offline")
            if live.closed:
                raise Conflict("the experiment is closed", code="closed")
            if family.done(live.agent):
                raise Conflict("logged data was already uploaded to this experiment", code="already_fitted")
            options = {"file_format": file_format, "action_column": action_column, "reward_column": reward_column,
                       "clip": clip}
            with tempfile.TemporaryDirectory() as directory:
                path = Path(directory) / f"upload.{file_format}"
                path.write_bytes(data)
                fitted = run_isolated(upload_job, live.kind.name, live.params.model_dump_json(), portable(live.agent),
                                      str(path), options, time_limit=self.time_limit, cancel=cancel)
            self.quotas.check_state(fitted["state"])
            summary = self._summary(fitted["summary"], privacy=guarantee_json(fitted["guarantee"]),
                                    previous=live.summary)
            expected = live.version
            self._submit(experiment_id, lambda connection: compare_and_set(
                connection, experiment_id, expected, state=pack(fitted["state"]), summary=json.dumps(summary)),
                live).result()
            live.agent = self._agents.adopt(live.kind, live.params, fitted["state"], fitted["agent"])
            live.version, live.summary = expected + 1, summary
        return self.status(owner_id, experiment_id)

    # ------------------------------------------------------------------------------ sample
    def sample(self, owner_id: int, experiment_id: str, size: int, context: list[float] | None,
               cancel: threading.Event | None = None) -> dict[str, Any]:
        """Release ``size`` private samples (KL-offline actions, USCA recommendations at ``context``).

        The budget is checked before anything is drawn (over budget: 409 ``budget_exceeded``); the
        samples are drawn in a child process (time limit, ``cancel``); the ledger row, the budget
        check again (another process may have spent meanwhile) and the new state are written in one
        transaction. Samples drawn by a transaction that did not commit never leave the server.

        Privacy
        -------
        Each sample is one use of the kind's mechanism and spends its guarantee (KL-MAB: ε over the
        declared domain N(a) >= min_count, add/remove of one logged record; USCA: ε-joint-DP for one
        round's context and reward); samples compose on the experiment's accountant.
        """
        for attempt in range(ATTEMPTS):
            try:
                return self._sample_once(owner_id, experiment_id, size, context, cancel)
            except Retry:
                if attempt == ATTEMPTS - 1:
                    raise
                time.sleep(backoff(attempt))
        raise AssertionError("unreachable")

    def _sample_once(self, owner_id: int, experiment_id: str, size: int, context: list[float] | None,
                     cancel: threading.Event | None) -> dict[str, Any]:
        with self._locks.hold(experiment_id):
            live = self._agents.get(owner_id, experiment_id, cancel)
            family = live.kind.family
            if family.run_event:
                raise Conflict(f"a {live.kind.name} experiment releases its recommendation in its "
                               "status, not by sampling", code="not_sampling")
            if live.closed:
                raise Conflict("the experiment is closed", code="closed")
            try:
                guarantee = family.guarantee(live.agent)
            except NotFittedError as exc:
                raise Conflict(str(exc), code="not_ready") from None
            accountant = open_ledger(self.engine, experiment_id)
            if not accountant.can_spend(guarantee, size):  # before anything is drawn
                spent = accountant.spent().epsilon
                raise Conflict(f"{size} sample(s) of ε = {guarantee.epsilon:g} each would exceed the "
                               f"experiment's epsilon_budget = {accountant.epsilon_budget:g} (spent: {spent:g})",
                               code="budget_exceeded")
            seed = (None if live.insecure_seed is None
                    else np.random.SeedSequence([live.insecure_seed, len(accountant.entries())]))
            try:
                drawn = run_isolated(sample_job, live.kind.name, live.params.model_dump_json(), portable(live.agent),
                                     size, context, seed, time_limit=self.time_limit, cancel=cancel)
            except NotFittedError as exc:
                raise Conflict(str(exc), code="not_ready") from None
            self.quotas.check_state(drawn["state"])
            expected, since, applied = live.version, live.snapshot, live.applied

            def release(connection: Connection) -> dict[str, Any]:
                # the state drawn from covers every applied step: it is a snapshot (see _apply)
                compare_and_set(connection, experiment_id, expected, state=pack(drawn["state"]), applied=applied)
                cover(connection, experiment_id, since, applied)
                accountant = open_ledger(self.engine, experiment_id, connection=connection)
                spend_or_refuse(accountant, guarantee, size, label="sample", connection=connection)  # authoritative
                return budget_json(accountant, connection=connection)

            budget = self._submit(experiment_id, release, live).result()
            live.agent = self._agents.adopt(live.kind, live.params, drawn["state"], drawn["agent"])
            live.version, live.snapshot, live.snapshot_committed = expected + 1, applied, True
        return {"samples": drawn["samples"], **budget}


def cover(connection: Connection, experiment_id: str, since: int, covered: int) -> None:
    """A state covering the steps below ``covered`` was written: erase their raw feedback and leases.

    The rows below ``since`` (the previous stored state's step) are covered already.
    """
    connection.execute(_MARK_COVERED, {"covered_experiment": experiment_id, "since": since, "covered": covered})
    forget_applied(connection, experiment_id, covered)
