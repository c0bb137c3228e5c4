"""The operations of ``dpbandits serve``, independent of HTTP.

Create, ask, tell, status, ledger, close, upload, sample.

Sharing one experiment between clients
--------------------------------------
An agent takes feedback in a fixed order (step 0, 1, 2, ...). ``ask`` hands out a *step* of the
agent's schedule (:meth:`Family.schedule <dpbandits.serve.kinds.Family.schedule>`: the actions
known without further feedback) with a signed ticket, on a *lease* (10 s by default) kept in the
store (:mod:`dpbandits.serve.leases`, shared by every server process): a step never handed out if
there is one, else the least recently handed-out untold step whose lease expired.
So with a data-independent schedule (a DP-BAI phase, a GOptimal-DPDB phase, USCA's learning
rounds) many clients hold different steps at once; when every scheduled step is out on its lease
(at the end of a phase, or always for DP-EBS-Elimination, which knows one duel ahead) the HTTP
``ask`` waits until a tell frees one (clients then take turns) or a lease expires (the step of a
client that went away is handed out again). The first ``tell`` of a step counts; a later tell of
*another* ticket for the same step (a client slower than its lease) gets 409 ``step_already_told``
(ask again); a retried tell of the *same* ticket gets the original acknowledgement back. Feedback
of a step that arrives before an earlier step's is stored and applied in order as soon as the gap
is filled.

Isolation
---------
The requests of one experiment are serialised in a server process, those of different experiments
are not (:mod:`dpbandits.serve.locking`): a ``tell`` validates the feedback *before* touching the
agent (a refused tell leaves the agent in memory as it was) and applies it under the experiment's
lock; building, loading large agents, sampling, and the tell that ends a window of a heavy agent
(its phase's release and the next phase's set-up, and the state's serialisation) run in child
processes with a time limit, killed when the client goes away (:mod:`dpbandits.serve.workers`);
only the rows computed go through the shared commit. What an ask or tell still computes in the
server process, under no timer, is: a step inside a window (no release), at most
:data:`~dpbandits.serve.kinds.SCHEDULE_LIMIT` actions of a schedule, loading or serialising a state
of at most :data:`~dpbandits.serve.catchup.LIGHT_STATE_BYTES` (larger states are serialised there at most every
:data:`SNAPSHOT_EVERY` steps, within the state-size quota), and the phase end of an agent with such
a small state — bounded by the limits checked at creation (:mod:`dpbandits.serve.limits`), not by
``time_limit``. Quotas per key: :mod:`dpbandits.serve.quotas`.

Durability
----------
A ``tell`` stores the feedback row (with its feedback) and applies every step that is now in
order, in one transaction shared with the other jobs queued meanwhile (group commit,
:class:`~dpbandits.serve.locking.GroupCommitter`); the acknowledgement is returned only after the
commit. The agent's state (which holds every value released so far: noisy phase statistics,
counter outputs) is written — a *snapshot*, in the same transaction as the tell that calls for it —
when the window of actions known in advance is used up (a phase ends: its noisy release is drawn,
and the next actions depend on it), when the public summary changes, when the run is done, and at
least every :data:`SNAPSHOT_EVERY` steps; a snapshot erases the raw feedback it covers. Every
action handed out by ``ask`` is also returned only after the commit (a next phase's arms depend on
the last phase's noisy release, which is in the stored state before any of them leaves). Each
commit checks the experiment's stored version is the one its computation started from, so several
server processes on one store keep these guarantees (a request that lost the race is recomputed
from the stored state); once a commit computed on an agent fails, every later commit computed on
it fails too (:mod:`dpbandits.serve.live`: its own next version number may be the one another
process wrote). A refusal by a process's agent (a ticket of a window it has not reached, a step it
believes told) is checked against the store first: the agent catches up
(:mod:`dpbandits.serve.catchup`: the feedback stored since its own step is replayed when the store
holds the same state, else the stored agent is loaded) and the ticket is judged again; a tell of an
experiment another process writes, or of a large agent, catches up before it is computed. Stored states over 32 kB are compressed
(:mod:`dpbandits.serve.packing`). After a crash, or in another process, the agent is the stored
state with the feedback stored since replayed in step order: nothing acknowledged is lost, nothing is counted
twice (a step is unique in the feedback table), and noise is never drawn again for a value that
left the process — the replayed steps lie inside one window, where no value is released, and a
value drawn by a transaction that did not commit never left it. Releases on demand (samples) spend
the budget on the experiment's durable ledger (:mod:`dpbandits.serve.ledger`) and store the state in
one transaction.

Privacy
-------
Responses hold only actions, acknowledgements, progress, and values already released by the
private algorithms (recommendations, released noisy estimates, samples); never raw feedback, noise
or sufficient statistics. Raw feedback rows are kept in the store only until a stored state covers
them (at most :data:`SNAPSHOT_EVERY` steps, or the rest of a phase). A stored state holds what its
algorithm keeps of the feedback: statistics (counts, sums, the current phase's sums) for most kinds,
and for USCA the contexts and rewards of its learning rounds, from which its estimator is computed
at the horizon and against which ``load`` checks the stored state; they stay in the store with it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import pickle
import secrets
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

from pydantic import ValidationError
from sqlalchemy import Connection, Engine, bindparam, insert, select, update

from dpbandits._core.errors import (
    PrivacyBudgetExceededError,
)
from dpbandits.privacy.accounting import Accountant
from dpbandits.privacy.guarantees import Guarantee
from dpbandits.serve import catchup
from dpbandits.serve.catchup import Agents, NeedsThread
from dpbandits.serve.errors import (
    Conflict,
    InvalidRequest,
    NotFound,
    QuotaExceeded,
    Retry,
    ServiceError,
    library_error_status,
)
from dpbandits.serve.jobs import apply_job, build_job, portable
from dpbandits.serve.kinds import Feedback, get_kind
from dpbandits.serve.leases import pick_step
from dpbandits.serve.ledger import ledger_report, open_ledger, spend_or_refuse
from dpbandits.serve.limits import check_release_affordable
from dpbandits.serve.live import LiveAgent
from dpbandits.serve.locking import (
    ATTEMPTS,
    ExperimentLocks,
    GroupCommitter,
    compare_and_set,
    done_future,
    lock_experiment_row,
    lock_version,
    retrying,
    then,
    write_transaction,
)
from dpbandits.serve.packing import pack
from dpbandits.serve.quotas import Quotas
from dpbandits.serve.releases import OfflineReleases, cover, guarantee_json
from dpbandits.serve.storage import api_keys, experiments, feedback, is_sqlite, ticket_secret
from dpbandits.serve.tickets import Ticket, issue_ticket, parse_ticket, ticket_matches
from dpbandits.serve.workers import run_isolated

__all__ = ["ATTEMPTS", "ExperimentService", "NeedsThread", "library_error_status"]

T = TypeVar("T")
U = TypeVar("U")

SNAPSHOT_EVERY = 64
"""At most this many applied steps between two stored states of an agent (the feedback a load replays)."""

# The statements of the frequent requests, built once (SQLAlchemy reuses their compiled form and cache key).
_SELECT_TOLD_TICKET = select(feedback.c.feedback_hash, feedback.c.ack).where(feedback.c.ticket == bindparam("ticket_text"))
_INSERT_FEEDBACK = insert(feedback)
_SAME_VERSION = (experiments.c.id == bindparam("experiment_id")) & (experiments.c.version == bindparam("expected"))
_COUNT_TELL = update(experiments).where(_SAME_VERSION).values(told=bindparam("new_told"), version=bindparam("new_version"))
_WRITE_STATE = update(experiments).where(_SAME_VERSION).values(
    told=bindparam("new_told"), version=bindparam("new_version"), state=bindparam("new_state"),
    applied=bindparam("new_applied"), summary=bindparam("new_summary"))
_LOCK_KEY = select(api_keys.c.id).where(api_keys.c.id == bindparam("owner_id"))


def _feedback_hash(payload: Feedback) -> str:
    text = json.dumps(payload.model_dump(exclude_none=True), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


class ExperimentService(OfflineReleases):
    """The service's operations on a store (see the module docstring).

    Parameters
    ----------
    engine : sqlalchemy.Engine
        From :func:`dpbandits.serve.storage.make_engine`.
    allow_insecure_seeded_noise : bool, default False
        Accept experiments created with ``insecure_seed`` (seeded NumPy noise: reproducible, **not
        private**; for tests that replay a run exactly).
    quotas : Quotas, optional
        Per-key limits (default :class:`~dpbandits.serve.quotas.Quotas`).
    time_limit : float, default 60
        Seconds a child-process job (build, load, sample, upload) may run before it is killed.
    """

    def __init__(self, engine: Engine, *, allow_insecure_seeded_noise: bool = False, quotas: Quotas | None = None,
                 time_limit: float = 60.0) -> None:
        self.engine = engine
        self.allow_insecure_seeded_noise = allow_insecure_seeded_noise
        self.quotas = quotas or Quotas()
        self._agents = Agents(engine, self.quotas, time_limit)
        self._live = self._agents.live
        self._secret = ticket_secret(engine)
        # agents arrive from child processes pickled, without running the code that enables OpenDP's
        # "contrib" measurements (the secure noise backend) in this process: enable it here
        import opendp.mod

        opendp.mod.enable_features("contrib")
        self._locks = ExperimentLocks()
        self._writer = GroupCommitter(engine, on_abort=self._live.forget_all)

    @property
    def time_limit(self) -> float:
        """Seconds a child-process job (build, load, sample, upload) may run before it is killed."""
        return self._agents.time_limit

    @time_limit.setter
    def time_limit(self, seconds: float) -> None:
        self._agents.time_limit = seconds

    # ------------------------------------------------------------------------------ live agents
    def _submit(self, key: str, work: Callable[[Connection], T], live: LiveAgent | None = None, *,
                changed: bool = True, connection: Connection | None = None) -> Future[T]:
        """Queue ``work``, computed on ``live``, on the commit thread (or run it now on ``connection``).

        ``work`` fails with :class:`Retry`, writing nothing, if a commit computed on ``live`` before
        it failed (``live`` is broken: ``work`` may depend on what that commit held). If ``work``
        itself fails, ``live`` is broken and dropped when the computation ``changed`` it (it is
        ahead of the store); else (an ask) it is only marked stale when the store was ahead.
        """
        if live is None:
            return self._writer.submit(key, work)

        def job(connection: Connection) -> T:
            if live.broken:
                raise Retry("the experiment changed in another server process; retry")
            try:
                return work(connection)
            except Retry:
                self._agents.mark_contended(live.id)  # another process wrote: later tells catch up first
                if changed:
                    self._agents.discard(live)
                else:
                    live.stale = True
                raise
            except BaseException:
                self._agents.discard(live)
                raise

        if connection is not None:  # in the caller's transaction, which commits it
            ran: Future[T] = Future()
            try:
                ran.set_result(job(connection))
            except Exception as exc:
                ran.set_exception(exc)
            return ran
        return self._writer.submit(key, job)

    def _locked_row(self, connection: Connection, owner_id: int, experiment_id: str) -> Any:
        """The experiment's row, locked for the transaction, if ``owner_id`` owns it."""
        row = lock_experiment_row(connection, experiment_id)
        if row["owner_id"] != owner_id:
            raise NotFound(f"experiment {experiment_id!r} does not exist for this API key")
        return row

    # ------------------------------------------------------------------------------ create
    def create(self, owner_id: int, kind_name: str, params: dict[str, Any], *, name: str = "",
               epsilon_budget: float | None = None, delta_budget: float = 0.0,
               insecure_seed: int | None = None, cancel: threading.Event | None = None) -> dict[str, Any]:
        """Create an experiment; return its status.

        For ask/tell kinds the run's guarantee is spent on the experiment's budget now (the whole
        transcript is one release); for sampling kinds (``usca``, ``kl-mab``) each sample spends
        its guarantee later, and ``epsilon_budget`` is required. The agent is built in a child
        process (time limit, ``cancel``).

        Raises
        ------
        ServiceError
            On invalid parameters (the message names them), an over-budget run, ``insecure_seed``
            on a server that does not allow it, a state over the size quota (413) or a key over
            its experiments quota (429).
        """
        kind = get_kind(kind_name)
        try:
            model = kind.params.model_validate(params)
        except ValidationError as exc:
            # a wrong JSON type, a missing or unknown field: malformed (422, as every body's type error); else
            # a value out of range (400)
            error = InvalidRequest if any(_is_type_error(e["type"]) for e in exc.errors()) else ServiceError
            raise error(f"invalid parameters for kind {kind_name!r}: {_validation_message(exc)}") from None
        if insecure_seed is not None and not self.allow_insecure_seeded_noise:
            raise ServiceError("insecure_seed is refused: this server runs secure noise only (start it with "
                               "--allow-insecure-seeded-noise for tests)", code="insecure_refused")
        if not kind.family.run_event and epsilon_budget is None:
            raise ServiceError(f"epsilon_budget is required for kind {kind_name!r}: every sample spends privacy")
        params_json = model.model_dump_json()
        built = run_isolated(build_job, kind_name, params_json, insecure_seed, time_limit=self.time_limit,
                             cancel=cancel)
        try:  # a finite guarantee, and a budget (ε and δ) that affords one release (ask/tell kinds: the run)
            check_release_affordable(built["release_guarantee"], epsilon_budget, delta_budget)
        except PrivacyBudgetExceededError as exc:
            raise Conflict(str(exc), code="budget_exceeded") from None
        state: bytes = built["state"]
        self.quotas.check_state(state)
        guarantee: Guarantee | None = built["guarantee"]
        privacy: dict[str, Any] | None = None
        if guarantee is not None:  # ask/tell kinds: the run is one release, paid now
            privacy = guarantee_json(guarantee)
            if not guarantee.is_finite:
                raise ServiceError(f"these parameters give no finite privacy guarantee ({guarantee}); "
                                   "the service runs private experiments only", code="not_private")
            spend_or_refuse(Accountant(epsilon_budget, delta_budget), guarantee, 1, label="run")  # before storing
        experiment_id = secrets.token_hex(16)
        now = time.time()
        summary = self._summary(built["summary"], privacy=privacy, insecure=insecure_seed is not None)
        quota = self.quotas.experiments

        def insert_experiment(connection: Connection) -> None:
            # the key's row is locked (PostgreSQL) or the database is (SQLite): the count cannot race
            connection.execute(_LOCK_KEY if is_sqlite(connection.engine) else _LOCK_KEY.with_for_update(),
                               {"owner_id": owner_id})
            held = connection.execute(select(experiments.c.id).where(experiments.c.owner_id == owner_id)
                                      .limit(quota)).all()
            if len(held) >= quota:
                raise QuotaExceeded(f"this API key holds {quota} experiments, the server's limit "
                                    "(dpbandits serve --max-experiments)", code="too_many_experiments")
            connection.execute(insert(experiments).values(
                id=experiment_id, owner_id=owner_id, name=name or kind_name, kind=kind_name,
                params=params_json, created_at=now, closed=False, insecure_seed=insecure_seed,
                epsilon_budget=epsilon_budget, delta_budget=delta_budget, state=pack(state), applied=0,
                told=0, version=1, summary=json.dumps(summary),
            ))
            accountant = open_ledger(self.engine, experiment_id, connection=connection, create=True,
                                     epsilon_budget=epsilon_budget, delta_budget=delta_budget)
            if guarantee is not None:
                spend_or_refuse(accountant, guarantee, 1, label="run", connection=connection)

        self._writer.submit(f"!{owner_id:012d}", insert_experiment).result()  # "!": key rows lock first
        if built["agent"] is not None:  # kept: the first ask needs no load
            self._agents.keep(LiveAgent(experiment_id, owner_id, kind, model, pickle.loads(built["agent"]), len(state),
                                     1, 0, 0, False, insecure_seed, {}, summary))
        return self.status(owner_id, experiment_id)

    @staticmethod
    def _summary(public: dict[str, Any], *, privacy: dict[str, Any] | None = None, insecure: bool = False,
                 previous: dict[str, Any] | None = None) -> dict[str, Any]:
        summary = {**(previous or {}), **public}
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
            row = self._agents.owned_row(connection, owner_id, experiment_id)
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
            row = self._agents.owned_row(connection, owner_id, experiment_id)
        return ledger_report(self.engine, experiment_id, json.loads(row["summary"]))

    # ------------------------------------------------------------------------------ ask
    def ask(self, owner_id: int, experiment_id: str, *, lease: float = 0.0) -> dict[str, Any] | None:
        """Hand out a step of the schedule with a ticket (see the module docstring).

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
        return retrying(lambda: self.ask_later(owner_id, experiment_id, lease=lease))

    def ask_later(self, owner_id: int, experiment_id: str, *, lease: float = 0.0, inline: bool = False) -> Future[Any]:
        """:meth:`ask` as a future (it completes once the lease is committed; :class:`Retry`: call again).

        ``inline``: called from an event loop, which must not wait (see :class:`NeedsThread`).
        """
        with self._locks.hold(experiment_id):
            live = self._agents.get(owner_id, experiment_id, inline=inline)
            if live.closed:
                raise Conflict("the experiment is closed", code="closed")
            if not live.kind.family.interactive:
                raise Conflict(f"a {live.kind.name} experiment takes no ask/tell: upload data, then sample",
                               code="not_interactive")
            schedule = live.schedule()
            if not schedule:
                raise Conflict("the experiment is done: read its status for the recommendation", code="done")
            version, applied = live.version, live.applied
            # the agent is built on a committed stored state: other processes' tells do not stale its window
            snapshot = live.snapshot if live.snapshot_committed else None

        def lease_a_step(connection: Connection) -> int | None:
            return pick_step(connection, experiment_id, applied, len(schedule), version=version, lease=lease,
                             snapshot=snapshot)

        def handed(step: int | None) -> dict[str, Any] | None:
            if step is None:
                return None
            action = schedule[step - applied]
            return {"ticket": issue_ticket(self._secret, experiment_id, step, action), "step": step, **action}

        # an ask changes no agent: if the store is ahead, the agent is only stale (caught up next time)
        return then(self._submit(experiment_id, lease_a_step, live, changed=False), handed)

    # ------------------------------------------------------------------------------ tell
    def tell(self, owner_id: int, experiment_id: str, ticket_text: str, reported: Feedback) -> dict[str, Any]:
        """Record one step's feedback; return the acknowledgement, after it is committed.

        Idempotent by ticket: a retry with the same feedback returns the original acknowledgement
        and counts nothing; the same ticket with other feedback is a 409.

        Raises
        ------
        ServiceError, Conflict, NotFound
        """
        return retrying(lambda: self.tell_later(owner_id, experiment_id, ticket_text, reported))

    def tell_later(self, owner_id: int, experiment_id: str, ticket_text: str, reported: Feedback, *,
                   inline: bool = False) -> Future[Any]:
        """:meth:`tell` as a future (it completes once the acknowledged feedback is committed).

        The feedback is validated before the agent is touched: a refused tell leaves it as it was.
        ``inline``: called from an event loop, which must not wait (see :class:`NeedsThread`).
        """
        ticket = parse_ticket(ticket_text)
        if ticket.experiment_id != experiment_id:
            raise ServiceError("ticket was issued for another experiment", code="invalid_ticket")
        digest = _feedback_hash(reported)
        with self._locks.hold(experiment_id):
            live = self._agents.get(owner_id, experiment_id, inline=inline)
            if live.state_bytes > catchup.LIGHT_STATE_BYTES or self._agents.contended(experiment_id):
                # catch up before changing the agent (a large one, or one another process writes): a tell
                # computed on a stale agent fails at its commit, and the agent is then loaded again
                if inline:
                    raise NeedsThread(experiment_id)
                if live.state_bytes > catchup.LIGHT_STATE_BYTES or is_sqlite(self.engine):
                    # (a large agent reloads, if it must, before the row lock: not while others wait for it)
                    live = self._agents.catch_up(owner_id, live) or live
                if (self._agents.contended(experiment_id) and not is_sqlite(self.engine)
                        and not self._may_end_heavy_window(live, ticket)):
                    return self._tell_locked(owner_id, live, ticket, digest, reported)
            for _attempt in range(ATTEMPTS):
                try:
                    return self._tell_on(live, ticket, digest, reported, inline=inline)
                except _Refusal as refusal:
                    # refused by the agent in memory, which may be behind the store (another process told
                    # since): refused only if the stored state refuses it too
                    if inline:
                        raise NeedsThread(experiment_id) from None
                    caught_up = self._agents.catch_up(owner_id, live)
                    if caught_up is None:
                        raise refusal.error from None
                    live = caught_up
            raise Retry("the experiment keeps changing in other server processes; retry")

    @staticmethod
    def _may_end_heavy_window(live: LiveAgent, ticket: Ticket) -> bool:
        """Whether the tell of ``ticket`` may end a window of a heavy agent (seconds in a child process).

        Such a tell is not computed under the experiment's row lock (everyone else's requests of the
        experiment, and the commits queued behind them, would wait for it): it stays optimistic.
        Conservative: the buffered steps may fill the window with it.
        """
        heavy = live.state_bytes > catchup.LIGHT_STATE_BYTES or live.kind.family.name in catchup.HEAVY_LOAD_FAMILIES
        return heavy and ticket.step + 1 + len(live.buffered) >= live.applied + len(live.schedule())

    def _tell_locked(self, owner_id: int, live: LiveAgent, ticket: Ticket, digest: str,
                     reported: Feedback) -> Future[Any]:
        """:meth:`tell_later` of an experiment another process writes, on PostgreSQL: under its row lock.

        The experiment's row is locked (``SELECT ... FOR UPDATE``) in a transaction of this tell's
        own; the agent catches up with the store, which no other process can change meanwhile, the
        tell is computed and written in that transaction, and committed. Processes sharing an
        experiment thus take turns on it instead of computing tells on stale agents whose commits
        fail (each failure dropping an agent that is then loaded again). The commits of this
        agent's earlier tells settle first, so nothing here waits for this
        process's commit thread, which may itself wait for the lock. Not on SQLite, where a write
        transaction locks the whole store.
        """
        for _digest, in_flight in list(live.in_flight.values()):  # this agent's commits settle first
            with contextlib.suppress(Exception):
                in_flight.result()
        computed = False
        try:
            with write_transaction(self.engine) as connection:
                lock_experiment_row(connection, live.id)
                live = self._agents.catch_up(owner_id, live) or live
                for _attempt in range(ATTEMPTS):
                    try:
                        committed = self._tell_on(live, ticket, digest, reported, inline=False, connection=connection)
                        computed = True
                        break
                    except _Refusal as refusal:
                        caught_up = self._agents.catch_up(owner_id, live)
                        if caught_up is None:
                            raise refusal.error from None
                        live = caught_up
                else:
                    raise Retry("the experiment keeps changing in other server processes; retry")
                failure = committed.exception()
                if failure is not None:
                    raise failure  # (the job dropped the agent) the transaction rolls back
        except BaseException:
            if computed:
                self._agents.discard(live)  # computed on, and not committed: ahead of the store
            raise
        return committed

    def _tell_on(self, live: LiveAgent, ticket: Ticket, digest: str, reported: Feedback, *,
                 inline: bool, connection: Connection | None = None) -> Future[Any]:
        """:meth:`tell_later` on the agent ``live``; :class:`_Refusal` if this agent refuses the ticket."""
        experiment_id = live.id
        in_flight = live.in_flight.get(ticket.text)
        if in_flight is not None:  # a retry while the first tell is being committed
            return then(in_flight[1], lambda ack: _retried(ack, in_flight[0], digest))
        if live.closed:
            raise Conflict("the experiment is closed", code="closed")
        if ticket.step < live.applied or ticket.step in live.buffered:
            earlier = self._told_before(ticket.text)
            if earlier is None:
                raise _Refusal(Conflict("this step was already told through another ticket; ask again",
                                        code="step_already_told"))
            return done_future(_retried(json.loads(earlier[1]), earlier[0], digest))
        schedule = live.schedule()
        index = ticket.step - live.applied
        if index >= len(schedule) or not ticket_matches(self._secret, ticket, schedule[index]):
            raise _Refusal(ServiceError("ticket is not valid for this experiment (not issued by this server)",
                                        code="invalid_ticket"))
        payload = live.kind.family.check_feedback(live.agent, schedule[index], reported)
        steps = _in_order(live, ticket.text, ticket.step, payload)
        isolated = bool(steps) and self._heavy_step(live, len(steps), schedule)
        if isolated and inline:
            raise NeedsThread(experiment_id)
        try:  # from here on the agent changes: any failure drops it (the store holds the last commit)
            work = self._apply(live, ticket.text, ticket.step, payload, digest, schedule, steps, isolated)
        except BaseException:
            self._agents.discard(live)
            raise
        committed = self._submit(experiment_id, work, live, connection=connection)
        live.in_flight[ticket.text] = (digest, committed)
        snapshot = live.snapshot

        def settled(future: Future[Any]) -> None:
            live.in_flight.pop(ticket.text, None)
            if future.exception() is None and live.snapshot == snapshot:
                live.snapshot_committed = True  # (on a failure the agent is dropped)

        committed.add_done_callback(settled)
        return committed

    def _told_before(self, ticket_text: str) -> Any:
        """The stored (feedback hash, acknowledgement) of a told ticket, or None."""
        with self.engine.connect() as connection:
            return connection.execute(_SELECT_TOLD_TICKET, {"ticket_text": ticket_text}).first()

    def _heavy_step(self, live: LiveAgent, count: int, schedule: list[Any]) -> bool:
        """Whether applying ``count`` steps runs in a child process (see :meth:`_apply`)."""
        heavy = live.state_bytes > catchup.LIGHT_STATE_BYTES or live.kind.family.name in catchup.HEAVY_LOAD_FAMILIES
        return heavy and count >= len(schedule)  # the window is used up: a phase ends

    def _apply(self, live: LiveAgent, ticket_text: str, step: int, payload: dict[str, Any], digest: str,
               schedule: list[Any], steps: list[tuple[str, dict[str, Any]]],
               isolated: bool) -> Callable[[Connection], dict[str, Any]]:
        """Apply a validated tell to the agent; the commit job that stores it.

        ``steps`` are the (ticket, payload) of the steps now in order (:func:`_in_order`). The
        feedback row is stored with its payload; the agent's state is written (a *snapshot*, which
        erases the payloads it covers) only when :meth:`_needs_snapshot` says so, not on every tell:
        serialising a state costs more than the rest of a tell. With ``isolated`` (an agent whose
        state is large, or whose family does seconds of work per phase, at the end of a window:
        the step that may start a phase's heavy computation) the steps are applied, and the state
        serialised, in a child process with the server's time limit
        (:func:`~dpbandits.serve.workers.run_isolated`); if it is exceeded, nothing was changed
        or recorded.
        """
        family, experiment_id = live.kind.family, live.id
        start = live.applied
        fresh: dict[str, Any] | None = None
        if isolated:
            fresh = run_isolated(apply_job, live.kind.name, live.params.model_dump_json(), portable(live.agent),
                                 [(schedule[i], step_payload) for i, (_text, step_payload) in enumerate(steps)],
                                 time_limit=self.time_limit)
            live.agent = self._agents.adopt(live.kind, live.params, fresh["state"], fresh["agent"])
        else:
            for i, (_text, step_payload) in enumerate(steps):
                family.apply(live.agent, schedule[i], step_payload)
        for i in range(len(steps)):
            live.buffered.pop(start + i, None)
        if not steps:  # a step after a missing one: applied when the gap is filled
            live.buffered[step] = (ticket_text, payload)
        live.applied += len(steps)
        live.told += 1
        done = family.done(live.agent)
        ack = {"ticket": ticket_text, "step": step, "counted": True, "steps_told": live.told,
               "steps_applied": live.applied, "done": done}
        values: dict[str, Any] = {"experiment_id": experiment_id, "expected": live.version, "new_told": live.told,
                                  "new_version": live.version + 1}
        public = fresh["summary"] if fresh is not None else family.summary(live.agent) if steps else None
        snapshot = public is not None and (self._needs_snapshot(live, public, done) or fresh is not None)
        since = live.snapshot  # the rows of steps below it are covered by the stored state already
        if snapshot:
            if done:
                live.summary.setdefault("done_at", time.time())
            state = live.agent.to_bytes() if fresh is None else fresh["state"]
            live.state_bytes = len(state)
            self.quotas.check_state(state)
            # packed: a large state's snapshot holds up less the commit other experiments' tells share
            values.update(new_state=pack(state), new_applied=live.applied, new_summary=json.dumps(live.summary))
            live.snapshot, live.snapshot_committed = live.applied, False
        covered = snapshot and step < live.applied  # this step's payload is in the state written
        row = {"ticket": ticket_text, "experiment_id": experiment_id, "step": step, "feedback_hash": digest,
               "payload": None if covered else json.dumps(payload), "applied": covered,
               "ack": json.dumps(ack), "created_at": time.time()}
        live.version += 1
        applied = live.applied

        def store(connection: Connection) -> dict[str, Any]:
            if connection.execute(_WRITE_STATE if snapshot else _COUNT_TELL, values).rowcount != 1:
                raise Retry("the experiment changed in another server process; retry")
            connection.execute(_INSERT_FEEDBACK, row)
            if snapshot:
                cover(connection, experiment_id, since, applied)
            return ack

        return store

    def _needs_snapshot(self, live: LiveAgent, public: dict[str, Any], done: bool) -> bool:
        """Whether the agent's state must be stored with this tell (``live.summary`` gets ``public``).

        Yes when the run is done, when the window of actions known in advance is used up (the
        agent may have drawn noise — a phase's release — on which the next actions depend: it must
        be stored before any of them is handed out, so that it is never drawn again), when the
        public summary changed (a released value is shown), and every :data:`SNAPSHOT_EVERY`
        steps (a bound on the feedback replayed at a load). Otherwise the tell's feedback row is
        enough: a load replays it on the stored state.
        """
        summary = self._summary(public, previous=live.summary)
        changed = summary != live.summary
        live.summary = summary
        return (done or changed or live.window_used_up() or live.applied - live.snapshot >= SNAPSHOT_EVERY)

    # ------------------------------------------------------------------------------ close
    def close(self, owner_id: int, experiment_id: str) -> dict[str, Any]:
        """Close the experiment: no further ask, tell, upload or sample. Idempotent."""
        retrying(lambda: self.close_later(owner_id, experiment_id))
        return self.status(owner_id, experiment_id)

    def close_later(self, owner_id: int, experiment_id: str) -> Future[Any]:
        """:meth:`close` as a future (of None)."""
        with self._locks.hold(experiment_id):
            live = self._live.get(experiment_id)
            if live is None or live.owner_id != owner_id:
                def close_row(connection: Connection) -> None:
                    row = self._locked_row(connection, owner_id, experiment_id)
                    if not row["closed"]:
                        compare_and_set(connection, experiment_id, row["version"], closed=True)

                return self._submit(experiment_id, close_row)
            expected, closing = live.version, not live.closed
            if closing:
                live.closed, live.version = True, live.version + 1

            def close_live(connection: Connection) -> None:
                if closing:
                    compare_and_set(connection, experiment_id, expected, closed=True)
                else:
                    lock_version(connection, experiment_id, expected)

            return self._submit(experiment_id, close_live, live)


class _Refusal(Exception):
    """A tell refused by the agent in memory: ``error`` is the answer if the stored state refuses it too."""

    def __init__(self, error: ServiceError) -> None:
        super().__init__(str(error))
        self.error = error


def _in_order(live: LiveAgent, ticket_text: str, step: int, payload: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The (ticket, payload) of the steps a tell of ``step`` puts in order (none if one before is missing).

    From ``live.applied`` on: this step, then the buffered ones after it.
    """
    if step != live.applied:
        return []
    steps = [(ticket_text, payload)]
    while live.applied + len(steps) in live.buffered:
        steps.append(live.buffered[live.applied + len(steps)])
    return steps


def _retried(ack: dict[str, Any], told_hash: str, digest: str) -> dict[str, Any]:
    """The original acknowledgement of a retried tell, or a 409 if its feedback differs."""
    if told_hash != digest:
        raise Conflict("this ticket was already told with other feedback", code="ticket_already_told")
    return {**ack, "duplicate": True}


def _is_type_error(error_type: str) -> bool:
    """Whether a pydantic error type says the request is malformed rather than a value out of range."""
    return (error_type.endswith(("_type", "_parsing")) or error_type in ("missing", "extra_forbidden")
            or error_type.startswith("is_instance"))


def _validation_message(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(str(p) for p in error['loc']) or 'params'}: {error['msg']}"
                     for error in exc.errors()[:10])
