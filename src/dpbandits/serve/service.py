"""The operations of ``dpbandits serve``, independent of HTTP.

Create, ask, tell, status, ledger, close, upload, sample.

Sharing one experiment between clients
--------------------------------------
An agent takes feedback in a fixed order (step 0, 1, 2, ...). ``ask`` hands out a *step* of the
agent's schedule (:meth:`Family.schedule <dpbandits.serve.kinds.Family.schedule>`: the actions
known without further feedback) with a signed ticket, on a *lease* (10 s by default): a step never
handed out if there is one, else the least recently handed-out untold step whose lease expired.
So with a data-independent schedule (a DP-BAI phase, a GOptimal-DPDB phase, USCA's learning
rounds) many clients hold different steps at once; when every scheduled step is out on its lease
(at the end of a phase, or always for DP-EBS-Elimination, which knows one duel ahead) the HTTP
``ask`` waits until a tell frees one (clients then take turns) or a lease expires (the step of a
client that went away is handed out again). The first ``tell`` of a step counts; a later tell of
*another* ticket for the same step (a client slower than its lease) gets 409 ``step_already_told``
(ask again); a retried tell of the *same* ticket gets the original acknowledgement back. Feedback
of a step that arrives before an earlier step's is stored and applied in order as soon as the gap
is filled.

Durability
----------
A ``tell`` stores the feedback row, applies every step that is now in order, and writes the agent's
new state (which holds every value released so far: noisy phase statistics, counter outputs), all
in one transaction, shared with the other jobs queued meanwhile (group commit,
:class:`~dpbandits.serve.locking.GroupCommitter`); the acknowledgement is returned only after the
commit, and so is every action handed out by ``ask`` (a next phase's arms depend on the last
phase's noisy release). After a crash the agent is rebuilt from the stored state and the stored, not yet applied
feedback: nothing acknowledged is lost, nothing is counted twice (a step is unique in the feedback
table), and noise is never drawn again for a value that left the process — a value drawn by a
transaction that did not commit never left it. Releases on demand (samples) spend the budget,
record their ledger row and store the state in the transaction that draws them.

Privacy
-------
Responses hold only actions, acknowledgements, progress, and values already released by the
private algorithms (recommendations, released noisy estimates, samples); never raw feedback, noise
or sufficient statistics. Raw feedback is kept in the store only until it is applied.
"""

from __future__ import annotations

import hashlib
import json
import math
import secrets
import tempfile
import time
from collections import OrderedDict
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ValidationError
from sqlalchemy import Connection, Engine, bindparam, insert, select, update

from dpbandits._core.errors import (
    DPBanditsError,
    NotFittedError,
    PrivacyBudgetExceededError,
)
from dpbandits.privacy.accounting import Accountant, guarantee_event, spend
from dpbandits.privacy.guarantees import Guarantee
from dpbandits.serve.errors import Conflict, NotFound, ServiceError
from dpbandits.serve.kinds import Action, ExperimentKind, Feedback, get_kind
from dpbandits.serve.ledger import encode_event, finite_or_none, rebuild_accountant
from dpbandits.serve.limits import check_release_affordable
from dpbandits.serve.locking import SELECT_ROW, GroupCommitter, lock_experiment_row
from dpbandits.serve.storage import experiments, feedback, ledger, ticket_secret
from dpbandits.serve.tickets import issue_ticket, parse_ticket, ticket_matches

__all__ = ["ExperimentService"]

MAX_LIVE = 256
"""Agents kept in memory (least recently used ones are dropped and reloaded from the store)."""

# The statements of the frequent requests, built once (SQLAlchemy reuses their compiled form and cache key).
_SELECT_STATE = select(experiments.c.state).where(experiments.c.id == bindparam("experiment_id"))
_SELECT_PENDING = select(feedback.c.step, feedback.c.ticket, feedback.c.payload).where(
    feedback.c.experiment_id == bindparam("experiment_id"), feedback.c.applied.is_(False))
_SELECT_TOLD_TICKET = select(feedback.c.feedback_hash, feedback.c.ack).where(feedback.c.ticket == bindparam("ticket_text"))
_INSERT_FEEDBACK = insert(feedback)
_MARK_APPLIED = update(feedback).where(feedback.c.ticket == bindparam("applied_ticket")).values(applied=True, payload=None)
_COUNT_TELL = update(experiments).where(experiments.c.id == bindparam("experiment_id")).values(
    told=bindparam("new_told"), version=bindparam("new_version"))
_WRITE_STATE = update(experiments).where(experiments.c.id == bindparam("experiment_id")).values(
    told=bindparam("new_told"), version=bindparam("new_version"), state=bindparam("new_state"),
    applied=bindparam("new_applied"), summary=bindparam("new_summary"))


@dataclass
class _Live:
    """An experiment's agent in memory, valid for one stored ``version``."""

    id: str
    owner_id: int
    kind: ExperimentKind
    params: BaseModel
    agent: Any
    version: int
    applied: int
    told: int
    closed: bool
    insecure_seed: int | None
    buffered: dict[int, tuple[str, dict[str, Any]]]  # step -> (ticket, payload): told, not yet applied
    issued: dict[int, float] = field(default_factory=dict)  # step -> monotonic time of its latest hand-out
    fresh: int = 0  # every step from applied to fresh - 1 was handed out at least once
    _window: tuple[int, list[Action]] = (-1, [])  # (first step, actions) of the cached schedule

    def schedule(self) -> list[Action]:
        """The actions of steps ``applied, applied + 1, ...`` known now (the family's schedule).

        Computed once per window and sliced as steps are applied: a family's schedule after applying
        its first step is the rest of it, until the window is used up (a phase ends).
        """
        start, actions = self._window
        offset = self.applied - start
        if start < 0 or offset >= len(actions):
            self._window = (self.applied, self.kind.family.schedule(self.agent))
            return self._window[1]
        return actions[offset:] if offset else actions

    def next_step(self, now: float, lease: float) -> int | None:
        """The step to hand out, or None when every scheduled step is out on a lease.

        A step never handed out if there is one, else the least recently handed-out untold step whose
        lease (seconds since its hand-out) has expired.
        """
        size = len(self.schedule())
        end = self.applied + size
        fresh = max(self.applied, self.fresh)
        while fresh < end and (fresh in self.issued or fresh in self.buffered):
            fresh += 1
        self.fresh = fresh
        if fresh < end:
            return fresh
        expired = [s for s in range(self.applied, end)
                   if s not in self.buffered and now - self.issued.get(s, -math.inf) >= lease]
        return min(expired, key=lambda s: self.issued.get(s, -math.inf)) if expired else None


def _feedback_hash(payload: Feedback) -> str:
    text = json.dumps(payload.model_dump(exclude_none=True), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def _guarantee_json(guarantee: Guarantee) -> dict[str, Any]:
    return {"epsilon": finite_or_none(guarantee.epsilon), "delta": guarantee.delta, "unit": guarantee.unit,
            "neighbouring": str(getattr(guarantee.neighbouring, "value", guarantee.neighbouring)),
            "reference": guarantee.reference, "per_instance": bool(guarantee.per_instance),
            "description": str(guarantee)}


class ExperimentService:
    """The service's operations on a store (see the module docstring).

    Parameters
    ----------
    engine : sqlalchemy.Engine
        From :func:`dpbandits.serve.storage.make_engine`.
    allow_insecure_seeded_noise : bool, default False
        Accept experiments created with ``insecure_seed`` (seeded NumPy noise: reproducible, **not
        private**; for tests that replay a run exactly).
    """

    def __init__(self, engine: Engine, *, allow_insecure_seeded_noise: bool = False) -> None:
        self.engine = engine
        self.allow_insecure_seeded_noise = allow_insecure_seeded_noise
        self._secret = ticket_secret(engine)
        self._live: OrderedDict[str, _Live] = OrderedDict()  # touched by the writer thread only
        self._writer = GroupCommitter(engine, on_abort=self._forget_all)

    # ------------------------------------------------------------------------------ live agents
    def _load(self, row: Any, connection: Connection) -> _Live:
        kind = get_kind(row["kind"])
        params = kind.params.model_validate_json(row["params"])
        state = connection.execute(_SELECT_STATE, {"experiment_id": row["id"]}).scalar_one()
        agent = kind.load(params, bytes(state))
        pending = connection.execute(_SELECT_PENDING, {"experiment_id": row["id"]}).all()
        live = _Live(row["id"], row["owner_id"], kind, params, agent, row["version"], row["applied"], row["told"],
                     bool(row["closed"]), row["insecure_seed"],
                     {int(step): (ticket, json.loads(payload)) for step, ticket, payload in pending})
        self._live[live.id] = live
        self._live.move_to_end(live.id)
        while len(self._live) > MAX_LIVE:
            self._live.popitem(last=False)
        return live

    def _forget(self, experiment_id: str) -> None:
        self._live.pop(experiment_id, None)

    def _forget_all(self, experiment_ids: set[str]) -> None:
        for experiment_id in experiment_ids:
            self._forget(experiment_id)

    def _current(self, row: Any, connection: Connection) -> _Live:
        """The live agent of ``row`` (reloaded if another process wrote a newer version)."""
        live = self._live.get(row["id"])
        if live is not None:
            self._live.move_to_end(row["id"])
        if live is None or live.version != row["version"]:
            live = self._load(row, connection)
        return live

    def _owned_row(self, connection: Connection, owner_id: int, experiment_id: str) -> Any:
        row = connection.execute(SELECT_ROW, {"experiment_id": experiment_id}).mappings().first()
        if row is None or row["owner_id"] != owner_id:  # another key's experiment does not exist for this key
            raise NotFound(f"experiment {experiment_id!r} does not exist for this API key")
        return row

    def _locked_row(self, connection: Connection, owner_id: int, experiment_id: str) -> Any:
        """The experiment's row, locked for the transaction, if ``owner_id`` owns it."""
        row = lock_experiment_row(connection, experiment_id)
        if row["owner_id"] != owner_id:
            raise NotFound(f"experiment {experiment_id!r} does not exist for this API key")
        return row

    def _job(self, experiment_id: str, work: Any, *, reload_after: bool = False) -> Future[Any]:
        """Run ``work(connection)`` on the writer (see :class:`~dpbandits.serve.locking.GroupCommitter`).

        On an error the experiment's agent is reloaded from the store by the next job (its in-memory
        state may be ahead of what was stored); with ``reload_after``, after success too.
        """
        def job(connection: Connection) -> Any:
            try:
                result = work(connection)
            except BaseException:
                self._forget(experiment_id)
                raise
            if reload_after:
                self._forget(experiment_id)
            return result

        return self._writer.submit(experiment_id, job)

    # ------------------------------------------------------------------------------ create
    def create(self, owner_id: int, kind_name: str, params: dict[str, Any], *, name: str = "",
               epsilon_budget: float | None = None, delta_budget: float = 0.0,
               insecure_seed: int | None = None) -> dict[str, Any]:
        """Create an experiment; return its status.

        For ask/tell kinds the run's guarantee is spent on the experiment's budget now (the whole
        transcript is one release); for sampling kinds (``usca``, ``kl-mab``) each sample spends
        its guarantee later, and ``epsilon_budget`` is required.

        Raises
        ------
        ServiceError
            On invalid parameters (the message names them), an over-budget run, or ``insecure_seed``
            on a server that does not allow it.
        """
        kind = get_kind(kind_name)
        try:
            model = kind.params.model_validate(params)
        except ValidationError as exc:
            raise ServiceError(f"invalid parameters for kind {kind_name!r}: {_validation_message(exc)}") from None
        if insecure_seed is not None and not self.allow_insecure_seeded_noise:
            raise ServiceError("insecure_seed is refused: this server runs secure noise only (start it with "
                               "--allow-insecure-seeded-noise for tests)", code="insecure_refused")
        if not kind.family.run_event and epsilon_budget is None:
            raise ServiceError(f"epsilon_budget is required for kind {kind_name!r}: every sample spends privacy")
        try:
            agent = kind.build(model, insecure_seed)
            # a finite guarantee, and a budget (ε and δ) that affords one release (for ask/tell kinds: the run)
            check_release_affordable(kind.family.release_guarantee(agent, model), epsilon_budget, delta_budget)
        except PrivacyBudgetExceededError as exc:
            raise Conflict(str(exc), code="budget_exceeded") from None
        accountant = Accountant(epsilon_budget, delta_budget)
        run_event = None
        privacy: dict[str, Any] | None = None
        if kind.family.run_event:
            guarantee = kind.family.guarantee(agent)
            privacy = _guarantee_json(guarantee)
            if not guarantee.is_finite:
                raise ServiceError(f"these parameters give no finite privacy guarantee ({guarantee}); "
                                   "the service runs private experiments only", code="not_private")
            run_event = guarantee_event(guarantee)
            try:
                spend(accountant, run_event)
            except PrivacyBudgetExceededError as exc:
                raise Conflict(str(exc), code="budget_exceeded") from None
        experiment_id = secrets.token_hex(16)
        now = time.time()
        summary = self._summary(kind, agent, privacy=privacy, insecure=insecure_seed is not None)

        def insert_experiment(connection: Connection) -> None:
            connection.execute(insert(experiments).values(
                id=experiment_id, owner_id=owner_id, name=name or kind_name, kind=kind_name,
                params=model.model_dump_json(), created_at=now, closed=False, insecure_seed=insecure_seed,
                epsilon_budget=epsilon_budget, delta_budget=delta_budget, state=agent.to_bytes(), applied=0,
                told=0, version=1, summary=json.dumps(summary),
            ))
            if kind.family.run_event:
                connection.execute(insert(ledger).values(
                    experiment_id=experiment_id, created_at=now, release="run", count=1,
                    event=None if run_event is None else encode_event(run_event),
                    note="the whole run (every value it releases, its recommendation) is one release",
                ))

        self._job(experiment_id, insert_experiment).result()
        return self.status(owner_id, experiment_id)

    def _summary(self, kind: ExperimentKind, agent: Any, *, privacy: dict[str, Any] | None = None,
                 insecure: bool = False, previous: dict[str, Any] | None = None) -> dict[str, Any]:
        summary = {**(previous or {}), **kind.family.summary(agent)}
        if privacy is not None:
            summary["privacy"] = privacy
        if previous is None:
            summary["noise"] = ("INSECURE seeded NumPy noise (tests only: not private)" if insecure
                                else "secure: OpenDP, OS CSPRNG")
        return summary

    # ------------------------------------------------------------------------------ reads
    def experiments(self, owner_id: int) -> list[dict[str, Any]]:
        """Every experiment of ``owner_id``, newest first (status without re-reading each)."""
        with self.engine.connect() as connection:
            rows = connection.execute(
                select(experiments.c.id, experiments.c.name, experiments.c.kind, experiments.c.created_at,
                       experiments.c.closed, experiments.c.told, experiments.c.summary,
                       experiments.c.epsilon_budget, experiments.c.insecure_seed)
                .where(experiments.c.owner_id == owner_id).order_by(experiments.c.created_at.desc())
            ).mappings().all()
        return [self._status_json(row) for row in rows]

    def status(self, owner_id: int, experiment_id: str) -> dict[str, Any]:
        """Progress, done, recommendation once done, released estimates, privacy summary."""
        with self.engine.connect() as connection:
            row = self._owned_row(connection, owner_id, experiment_id)
        return self._status_json(row)

    @staticmethod
    def _status_json(row: Any) -> dict[str, Any]:
        summary = json.loads(row["summary"])
        total = summary.get("steps_total")
        return {
            "id": row["id"], "name": row["name"], "kind": row["kind"], "family": get_kind(row["kind"]).family.name,
            "created_at": row["created_at"], "closed": bool(row["closed"]), "done": bool(summary.get("done")),
            "progress": {"steps_told": row["told"], "steps_total": total,
                         "fraction": None if not total else min(1.0, row["told"] / total)},
            "recommendation": summary.get("recommendation"), "estimates": summary.get("estimates"),
            "fitted": summary.get("fitted"), "privacy": summary.get("privacy"), "noise": summary.get("noise"),
            "epsilon_budget": row["epsilon_budget"],
        }

    def ledger(self, owner_id: int, experiment_id: str) -> dict[str, Any]:
        """The privacy ledger: guarantee, events (releases) and the budget spent / remaining."""
        with self.engine.connect() as connection:
            row = self._owned_row(connection, owner_id, experiment_id)
            rows = connection.execute(
                select(ledger).where(ledger.c.experiment_id == experiment_id).order_by(ledger.c.id)
            ).mappings().all()
        accountant = rebuild_accountant(row["epsilon_budget"], row["delta_budget"],
                                        [(r["event"], r["count"]) for r in rows])
        spent, remaining = accountant.spent(), accountant.remaining()
        return {
            "experiment": experiment_id,
            "guarantee": json.loads(row["summary"]).get("privacy"),
            "budget": {"epsilon": row["epsilon_budget"], "delta": row["delta_budget"]},
            "spent": {"epsilon": finite_or_none(spent.epsilon), "delta": spent.delta},
            "remaining": {"epsilon": finite_or_none(remaining.epsilon), "delta": remaining.delta},
            "events": [{"release": r["release"], "created_at": r["created_at"], "count": r["count"],
                        "event": None if r["event"] is None else json.loads(r["event"]), "note": r["note"]}
                       for r in rows],
        }

    # ------------------------------------------------------------------------------ ask
    def ask(self, owner_id: int, experiment_id: str, *, lease: float = 0.0) -> dict[str, Any] | None:
        """Hand out a step of the schedule with a ticket (see the module docstring); writes nothing.

        Parameters
        ----------
        lease : float, default 0
            Seconds during which a handed-out step is not handed out again; with every scheduled
            step out on its lease, None is returned (the HTTP layer then waits for a tell).

        Raises
        ------
        Conflict
            If the experiment is closed, done, or takes no feedback (offline kinds).
        """
        return self.ask_later(owner_id, experiment_id, lease=lease).result()

    def ask_later(self, owner_id: int, experiment_id: str, *, lease: float = 0.0) -> Future[Any]:
        """:meth:`ask` as a future (it completes once every earlier write is committed)."""
        return self._job(experiment_id, lambda connection: self._ask(connection, owner_id, experiment_id, lease))

    def _ask(self, connection: Connection, owner_id: int, experiment_id: str, lease: float) -> dict[str, Any] | None:
        row = self._owned_row(connection, owner_id, experiment_id)
        live = self._current(row, connection)
        if live.closed:
            raise Conflict("the experiment is closed", code="closed")
        if not live.kind.family.interactive:
            raise Conflict(f"a {live.kind.name} experiment takes no ask/tell: upload data, then sample",
                           code="not_interactive")
        if not live.schedule():
            raise Conflict("the experiment is done: read its status for the recommendation", code="done")
        now = time.monotonic()
        step = live.next_step(now, lease)
        if step is None:
            return None
        live.issued[step] = now
        if len(live.issued) > 4 * len(live.schedule()) + 64:  # forget hand-outs of applied steps
            live.issued = {s: t for s, t in live.issued.items() if s >= live.applied}
        action = live.schedule()[step - live.applied]
        return {"ticket": issue_ticket(self._secret, experiment_id, step, action), "step": step, **action}

    # ------------------------------------------------------------------------------ tell
    def tell(self, owner_id: int, experiment_id: str, ticket_text: str, reported: Feedback) -> dict[str, Any]:
        """Record one step's feedback; return the acknowledgement, after it is committed.

        Idempotent by ticket: a retry with the same feedback returns the original acknowledgement
        and counts nothing; the same ticket with other feedback is a 409.

        Raises
        ------
        ServiceError, Conflict, NotFound
        """
        return self.tell_later(owner_id, experiment_id, ticket_text, reported).result()

    def tell_later(self, owner_id: int, experiment_id: str, ticket_text: str, reported: Feedback) -> Future[Any]:
        """:meth:`tell` as a future (it completes once the acknowledged feedback is committed)."""
        ticket = parse_ticket(ticket_text)
        if ticket.experiment_id != experiment_id:
            raise ServiceError("ticket was issued for another experiment", code="invalid_ticket")
        digest = _feedback_hash(reported)
        return self._job(experiment_id,
                         lambda connection: self._tell(connection, owner_id, experiment_id, ticket, reported, digest))

    def _tell(self, connection: Connection, owner_id: int, experiment_id: str, ticket: Any, reported: Feedback,
              digest: str) -> dict[str, Any]:
        row = self._locked_row(connection, owner_id, experiment_id)
        earlier = connection.execute(_SELECT_TOLD_TICKET, {"ticket_text": ticket.text}).first()
        if earlier is not None:
            if earlier[0] != digest:
                raise Conflict("this ticket was already told with other feedback", code="ticket_already_told")
            return {**json.loads(earlier[1]), "duplicate": True}
        live = self._current(row, connection)
        if live.closed:
            raise Conflict("the experiment is closed", code="closed")
        if ticket.step < live.applied or ticket.step in live.buffered:
            raise Conflict("this step was already told through another ticket; ask again",
                           code="step_already_told")
        schedule = live.schedule()
        index = ticket.step - live.applied
        if index >= len(schedule) or not ticket_matches(self._secret, ticket, schedule[index]):
            raise ServiceError("ticket is not valid for this experiment (not issued by this server)",
                               code="invalid_ticket")
        family = live.kind.family
        payload = family.check_feedback(live.agent, schedule[index], reported)
        start = live.applied
        live.buffered[ticket.step] = (ticket.text, payload)
        newly_applied: list[str] = []
        while live.applied in live.buffered:  # apply every step that is now in order
            text, step_payload = live.buffered.pop(live.applied)
            family.apply(live.agent, schedule[live.applied - start], step_payload)
            live.applied += 1
            newly_applied.append(text)
        live.told += 1
        done = family.done(live.agent)
        ack = {"ticket": ticket.text, "step": ticket.step, "counted": True, "steps_told": live.told,
               "steps_applied": live.applied, "done": done}
        own_applied = ticket.step < live.applied
        connection.execute(_INSERT_FEEDBACK, {
            "ticket": ticket.text, "experiment_id": experiment_id, "step": ticket.step, "feedback_hash": digest,
            "payload": None if own_applied else json.dumps(payload), "applied": own_applied,
            "ack": json.dumps(ack), "created_at": time.time(),
        })
        others = [{"applied_ticket": t} for t in newly_applied if t != ticket.text]
        if others:  # raw feedback is kept only until it is applied
            connection.execute(_MARK_APPLIED, others)
        values: dict[str, Any] = {"experiment_id": experiment_id, "new_told": live.told,
                                  "new_version": live.version + 1}
        if newly_applied:
            summary = self._summary(live.kind, live.agent, previous=json.loads(row["summary"]))
            values.update(new_state=live.agent.to_bytes(), new_applied=live.applied,
                          new_summary=json.dumps(summary))
            if done and summary.get("recommendation") is not None:
                connection.execute(insert(ledger).values(
                    experiment_id=experiment_id, created_at=time.time(), release="recommendation",
                    event=None, count=1,
                    note=f"recommendation {json.dumps(summary['recommendation'])}: post-processing, "
                         "covered by the run's guarantee",
                ))
        connection.execute(_WRITE_STATE if newly_applied else _COUNT_TELL, values)
        live.version += 1
        return ack

    # ------------------------------------------------------------------------------ close
    def close(self, owner_id: int, experiment_id: str) -> dict[str, Any]:
        """Close the experiment: no further ask, tell, upload or sample. Idempotent."""
        self.close_later(owner_id, experiment_id).result()
        return self.status(owner_id, experiment_id)

    def close_later(self, owner_id: int, experiment_id: str) -> Future[Any]:
        """:meth:`close` as a future (of None)."""
        def close(connection: Connection) -> None:
            row = self._locked_row(connection, owner_id, experiment_id)
            if not row["closed"]:
                connection.execute(update(experiments).where(experiments.c.id == experiment_id)
                                   .values(closed=True, version=row["version"] + 1))

        return self._job(experiment_id, close, reload_after=True)

    # ------------------------------------------------------------------------------ offline data
    def upload(self, owner_id: int, experiment_id: str, data: bytes, *, file_format: str,
               action_column: str = "action", reward_column: str = "reward", clip: bool = False) -> dict[str, Any]:
        """Fit an offline experiment's policy to uploaded logged data (CSV or Parquet), once.

        The data never leaves the server and nothing about it is returned: the response is the
        status (fitted, and the guarantee of one sample over the declared domain).
        """
        with self.engine.connect() as connection:  # what to parse: the experiment's kind and parameters
            row = self._owned_row(connection, owner_id, experiment_id)
        kind = get_kind(row["kind"])
        family: Any = kind.family
        if family.interactive or not callable(getattr(family, "read_upload", None)):
            raise Conflict(f"a {kind.name} experiment takes ask/tell feedback, not an upload", code="not_offline")
        with tempfile.TemporaryDirectory() as directory:  # parsed here, not on the writer thread
            path = Path(directory) / f"upload.{file_format}"
            path.write_bytes(data)
            statistics = family.read_upload(kind.params.model_validate_json(row["params"]), str(path),
                                            file_format=file_format, action_column=action_column,
                                            reward_column=reward_column, clip=clip)

        def fit(connection: Connection) -> None:
            row = self._locked_row(connection, owner_id, experiment_id)
            live = self._current(row, connection)
            if live.closed:
                raise Conflict("the experiment is closed", code="closed")
            if family.done(live.agent):
                raise Conflict("logged data was already uploaded to this experiment", code="already_fitted")
            family.fit(live.agent, statistics)
            privacy = _guarantee_json(family.guarantee(live.agent))
            summary = self._summary(live.kind, live.agent, privacy=privacy, previous=json.loads(row["summary"]))
            connection.execute(update(experiments).where(experiments.c.id == experiment_id).values(
                state=live.agent.to_bytes(), summary=json.dumps(summary), version=row["version"] + 1))

        self._job(experiment_id, fit, reload_after=True).result()
        return self.status(owner_id, experiment_id)

    # ------------------------------------------------------------------------------ sample
    def sample(self, owner_id: int, experiment_id: str, size: int, context: list[float] | None) -> dict[str, Any]:
        """Release ``size`` private samples (KL-offline actions, USCA recommendations at ``context``).

        The budget is spent, the samples drawn, the ledger row and the state written in one
        transaction; over budget, nothing is drawn (409 ``budget_exceeded``).

        Privacy
        -------
        Each sample is one use of the kind's mechanism and spends its guarantee (KL-MAB: ε over the
        declared domain N(a) >= min_count, add/remove of one logged record; USCA: ε-joint-DP for one
        round's context and reward); samples compose on the experiment's accountant.
        """
        def release(connection: Connection) -> tuple[list[Any], Accountant]:
            row = self._locked_row(connection, owner_id, experiment_id)
            live = self._current(row, connection)
            family = live.kind.family
            if family.run_event:
                raise Conflict(f"a {live.kind.name} experiment releases its recommendation in its "
                               "status, not by sampling", code="not_sampling")
            if live.closed:
                raise Conflict("the experiment is closed", code="closed")
            try:
                event = guarantee_event(family.guarantee(live.agent))
            except NotFittedError as exc:
                raise Conflict(str(exc), code="not_ready") from None
            rows = connection.execute(select(ledger.c.event, ledger.c.count)
                                      .where(ledger.c.experiment_id == experiment_id)
                                      .order_by(ledger.c.id)).all()
            accountant = rebuild_accountant(row["epsilon_budget"], row["delta_budget"],
                                            [(r[0], r[1]) for r in rows])
            try:
                accountant.spend(event, size)  # before anything is drawn
            except PrivacyBudgetExceededError as exc:
                raise Conflict(str(exc), code="budget_exceeded") from None
            seed = (None if live.insecure_seed is None
                    else np.random.SeedSequence([live.insecure_seed, len(rows)]))
            try:
                samples = family.sample(live.agent, size, context, seed)
            except NotFittedError as exc:
                raise Conflict(str(exc), code="not_ready") from None
            connection.execute(insert(ledger).values(
                experiment_id=experiment_id, created_at=time.time(), release="sample",
                event=encode_event(event), count=size, note=f"{size} sample(s)"))
            connection.execute(update(experiments).where(experiments.c.id == experiment_id).values(
                state=live.agent.to_bytes(), version=row["version"] + 1))
            return samples, accountant

        samples, accountant = self._job(experiment_id, release, reload_after=True).result()
        spent, remaining = accountant.spent(), accountant.remaining()
        return {"samples": samples, "spent": {"epsilon": finite_or_none(spent.epsilon), "delta": spent.delta},
                "remaining": {"epsilon": finite_or_none(remaining.epsilon), "delta": remaining.delta}}


def _validation_message(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(str(p) for p in error['loc']) or 'params'}: {error['msg']}"
                     for error in exc.errors()[:10])


def library_error_status(exc: DPBanditsError) -> int:
    """The HTTP status of a library error raised while serving a request (4xx: the request's fault)."""
    if isinstance(exc, ServiceError):
        return exc.status
    if isinstance(exc, NotFittedError | PrivacyBudgetExceededError):
        return 409
    return 400
