"""A server process's agents: loaded from the store, and caught up with it when another process wrote.

An experiment's requests in one process work on its agent in memory (:class:`~dpbandits.serve.live.LiveAgent`);
:class:`Agents` finds it, loads it on a miss, and brings it up to the store when it is *stale*
(another server process on the same store wrote the experiment since). The store holds the agent's
state as a *snapshot* at some step (``applied``) and, for every step told since, the feedback row
with its payload (:mod:`dpbandits.serve.storage`).

Catching up
-----------
A stale agent catches up from the version it holds, not from scratch:

* if the store still holds the snapshot the agent stands on (other processes only told steps inside
  its window), the rows of the steps it has not applied are read (an index range from its own
  ``applied`` on) and replayed on it: no state is read or deserialised;
* else (another process stored a newer state: a window ended, or :data:`SNAPSHOT_EVERY
  <dpbandits.serve.service.SNAPSHOT_EVERY>` steps passed, and the raw feedback the agent lacks is
  erased) the stored state is loaded. A kind whose plans the process keeps (``warm_loads`` of its
  :class:`~dpbandits.serve.kinds.ExperimentKind`: DP-BAI's, keyed by public parameters only) reloads in the server process in a fraction of a second, whatever its state's size, once
  the process has held an agent of those parameters; other large states are loaded in a child
  process (:mod:`dpbandits.serve.workers`). A stored state is untrusted input: every load validates
  it in full (the kept plans only spare recomputing what public parameters determine).

Replayed steps lie in the window of actions known at the stored state (a snapshot is written
whenever a window is used up), so a replay draws no noise whose value left a process.

An experiment found written by another process is *contended* here: until :data:`QUIET_CHECKS`
catch-ups in a row find nothing new, each tell first catches up (one read of the row and of the
rows since) instead of being computed on a stale agent, failing its commit, and loading the agent
again. An experiment that only this process writes never pays that read.
"""

from __future__ import annotations

import contextlib
import json
import pickle
import threading
import time
from collections import OrderedDict
from typing import Any

from pydantic import BaseModel
from sqlalchemy import Connection, Engine, bindparam, select

from dpbandits.serve.errors import NotFound, Retry
from dpbandits.serve.jobs import load_job
from dpbandits.serve.kinds import ExperimentKind, get_kind
from dpbandits.serve.live import LiveAgent, LiveAgents
from dpbandits.serve.locking import ATTEMPTS, SELECT_ROW, backoff
from dpbandits.serve.packing import unpack
from dpbandits.serve.quotas import Quotas
from dpbandits.serve.storage import experiments, feedback
from dpbandits.serve.workers import run_isolated

__all__ = ["HEAVY_LOAD_FAMILIES", "LIGHT_STATE_BYTES", "MAX_LIVE", "QUIET_CHECKS", "UNPACK_LIMIT", "Agents",
           "NeedsThread"]

MAX_LIVE = 256
"""Agents kept in memory (least recently used ones are dropped and reloaded from the store)."""
LIGHT_STATE_BYTES = 32 * 1024
"""Agents stored in at most this many bytes are loaded in the server process (a child process costs
more than their load); larger ones, and those of :data:`HEAVY_LOAD_FAMILIES`, in a child process
(unless the process keeps their kind's plans, see the module docstring)."""
UNPACK_LIMIT = 256 * 2**20
"""Largest state a stored packed state may inflate to, whatever the state quota is now (it may have
been lowered since the state was written)."""
HEAVY_LOAD_FAMILIES = frozenset({"kernel"})
"""Families whose agents do seconds of set-up when loaded whatever their size (USCA rebuilds its
kernel approximation)."""
QUIET_CHECKS = 64
"""Catch-ups in a row that find the store at the agent's version before an experiment is no longer contended."""

# the owner alone: another key's experiment is refused after the same work as a missing one
_SELECT_OWNER = select(experiments.c.owner_id).where(experiments.c.id == bindparam("experiment_id"))
_SELECT_STATE = select(experiments.c.state).where(experiments.c.id == bindparam("experiment_id"),
                                                  experiments.c.version == bindparam("version"))
# the rows a stored state does not cover all have step >= its ``applied``: a range of the (experiment, step) index
_SELECT_PENDING = select(feedback.c.step, feedback.c.ticket, feedback.c.payload).where(
    feedback.c.experiment_id == bindparam("experiment_id"), feedback.c.step >= bindparam("since"),
    feedback.c.applied.is_(False))


class NeedsThread(Exception):
    """Raised by an ``inline`` call whose work would block an event loop: call again from a thread.

    Requests of an experiment whose agent is in memory with a small state (the common case) are
    computed on the event loop directly; a load, a catch-up, or a large state to serialise goes to
    a thread. Nothing was changed when it is raised.
    """


class Agents:
    """The agents of one server process (see the module docstring).

    Parameters
    ----------
    engine : sqlalchemy.Engine
    quotas : Quotas
        The state-size quota bounds what a stored state may inflate to.
    time_limit : float
        Seconds a child process may take to load a state.
    """

    def __init__(self, engine: Engine, quotas: Quotas, time_limit: float) -> None:
        self.engine = engine
        self.quotas = quotas
        self.time_limit = time_limit
        self.live = LiveAgents(MAX_LIVE)
        self._contended: OrderedDict[str, int] = OrderedDict()  # experiment id -> catch-ups in a row that found nothing
        self._held: OrderedDict[str, None] = OrderedDict()  # experiments whose agent this process held lately
        self._guard = threading.Lock()

    # ------------------------------------------------------------------------------ contention
    def contended(self, experiment_id: str) -> bool:
        """Whether another process wrote the experiment lately (a tell then catches up first)."""
        return experiment_id in self._contended

    def mark_contended(self, experiment_id: str) -> None:
        """Another process wrote the experiment (a commit found the store ahead, or a catch-up did)."""
        with self._guard:
            self._contended[experiment_id] = 0
            self._contended.move_to_end(experiment_id)
            while len(self._contended) > MAX_LIVE:
                self._contended.popitem(last=False)

    def _quiet(self, experiment_id: str) -> None:
        with self._guard:
            if experiment_id in self._contended:
                self._contended[experiment_id] += 1
                if self._contended[experiment_id] >= QUIET_CHECKS:
                    del self._contended[experiment_id]

    # ------------------------------------------------------------------------------ agents
    def keep(self, live: LiveAgent) -> None:
        """Keep ``live`` in memory (its experiment is then *held*: a later load of it is warm)."""
        with self._guard:
            self._held[live.id] = None
            self._held.move_to_end(live.id)
            while len(self._held) > 4 * MAX_LIVE:
                self._held.popitem(last=False)
        self.live.put(live)

    def get(self, owner_id: int, experiment_id: str, cancel: threading.Event | None = None, *,
            inline: bool = False) -> LiveAgent:
        """The experiment's agent in memory, up to date (loaded on a miss); call with the experiment's lock held.

        An agent marked stale catches up first (:meth:`catch_up`). Another key's experiment takes
        the path of a missing one (its owner is read, then it is refused), so the two answer 404 in the same
        time. With ``inline`` (the caller is the event loop) a miss, a stale agent, another key's
        experiment, or an agent whose state is not small raises :class:`NeedsThread` instead of
        doing slow work.
        """
        live = self.live.get(experiment_id)
        if live is not None and live.owner_id != owner_id:
            live = None  # another key's experiment does not exist for this key: read as a missing one
        if inline and (live is None or live.stale or live.state_bytes > LIGHT_STATE_BYTES):
            raise NeedsThread(experiment_id)
        if live is None:
            return self.load(owner_id, experiment_id, cancel, warm=experiment_id in self._held)
        if live.stale:
            return self.catch_up(owner_id, live, cancel) or live
        return live

    def load(self, owner_id: int, experiment_id: str, cancel: threading.Event | None = None, *,
             warm: bool = False) -> LiveAgent:
        """Load the stored agent and replay the feedback stored since its state; keep it in memory.

        ``warm``: the process held this experiment's agent lately (its kind's plans, if it keeps them,
        are in memory, unless dropped since for others'): a kind whose
        :class:`~dpbandits.serve.kinds.ExperimentKind` has ``warm_loads`` loads in the server
        process whatever its state's size (no time limit: a fraction of a second with its plans kept,
        the kind's plan computation if they were dropped).
        """
        with self.engine.connect() as connection:
            row, state = self.stored(connection, owner_id, experiment_id)
            pending = connection.execute(_SELECT_PENDING, {"experiment_id": experiment_id,
                                                           "since": row["applied"]}).all()
        kind = get_kind(row["kind"])
        params = kind.params.model_validate_json(row["params"])
        cheap = len(state) <= LIGHT_STATE_BYTES or (warm and kind.warm_loads)
        if cheap and kind.family.name not in HEAVY_LOAD_FAMILIES:
            agent = kind.load(params, state)  # cheaper than a child process
        else:
            agent = self.adopt(kind, params, state, run_isolated(load_job, kind.name, row["params"], state,
                                                                 time_limit=self.time_limit, cancel=cancel))
        live = LiveAgent(row["id"], row["owner_id"], kind, params, agent, len(state),
                         row["version"], row["applied"], row["told"], bool(row["closed"]), row["insecure_seed"],
                         {int(step): (ticket, json.loads(payload)) for step, ticket, payload in pending},
                         json.loads(row["summary"]), snapshot=row["applied"])
        self.replay(live)
        self.keep(live)
        return live

    def stored(self, connection: Connection, owner_id: int, experiment_id: str) -> tuple[Any, bytes]:
        """The experiment's row (without its state) and its state, of one version."""
        # the owner alone first: another key's experiment is refused after the same work as a missing one
        # (one statement returning one integer or nothing), whatever the size of its row and state
        if connection.execute(_SELECT_OWNER, {"experiment_id": experiment_id}).scalar() != owner_id:
            raise NotFound(f"experiment {experiment_id!r} does not exist for this API key")
        for attempt in range(ATTEMPTS):
            row = self.owned_row(connection, owner_id, experiment_id)
            state = connection.execute(_SELECT_STATE, {"experiment_id": experiment_id,
                                                      "version": row["version"]}).scalar()
            if state is not None:
                return row, unpack(bytes(state), max(self.quotas.state_bytes, UNPACK_LIMIT))
            time.sleep(backoff(attempt))  # written meanwhile by another process: read again
        raise Retry("the experiment changed in another server process; retry")

    def catch_up(self, owner_id: int, live: LiveAgent, cancel: threading.Event | None = None) -> LiveAgent | None:
        """Bring ``live`` up to the stored state; None if it is up to date already.

        First this process's own commits of the agent in flight settle (one that fails breaks it).
        A broken or dropped agent is loaded again. If the store holds the same state the agent
        stands on (the same snapshot step: other processes only told steps inside its window), the
        feedback stored from the agent's own ``applied`` step on is replayed on it — no state is
        read or deserialised; else (a newer snapshot: a window ended, or its feedback is erased)
        the stored agent is loaded. The row is read before the feedback, so the version taken is
        never newer than the feedback replayed (a commit computed on it fails, at worst, and is
        recomputed).
        """
        for _digest, in_flight in list(live.in_flight.values()):
            with contextlib.suppress(Exception):
                in_flight.result()
        if live.broken or self.live.get(live.id) is not live:
            self.live.forget(live.id, live)
            return self.load(owner_id, live.id, cancel, warm=live.id in self._held)
        with self.engine.connect() as connection:
            row = self.owned_row(connection, owner_id, live.id)
            if row["version"] == live.version:
                live.stale = False
                self._quiet(live.id)
                return None
            if row["applied"] != live.snapshot or not live.snapshot_committed or row["applied"] > live.applied:
                pending = None
            else:
                pending = connection.execute(_SELECT_PENDING, {"experiment_id": live.id,
                                                               "since": live.applied}).all()
        self.mark_contended(live.id)
        if pending is None:
            self.live.forget(live.id, live)
            return self.load(owner_id, live.id, cancel, warm=live.id in self._held)
        for step, ticket_text, payload in pending:
            if int(step) >= live.applied and int(step) not in live.buffered:
                live.buffered[int(step)] = (ticket_text, json.loads(payload))
        try:
            self.replay(live)
        except BaseException:
            self.discard(live)
            raise
        live.version, live.told, live.closed = row["version"], row["told"], bool(row["closed"])
        live.summary = json.loads(row["summary"])
        live.stale = False
        return live

    @staticmethod
    def replay(live: LiveAgent) -> None:
        """Apply the stored feedback of the steps after the stored state's (told since its snapshot), in order.

        These steps lie in the window of actions known at the snapshot (a snapshot is written whenever
        a window is used up, see :meth:`ExperimentService._apply
        <dpbandits.serve.service.ExperimentService._apply>`), so replaying them draws no noise whose
        value left the process.
        """
        while live.applied in live.buffered:
            _text, payload = live.buffered.pop(live.applied)
            live.kind.family.apply(live.agent, live.next_action(), payload)
            live.applied += 1

    @staticmethod
    def adopt(kind: ExperimentKind, params: BaseModel, state: bytes, pickled: bytes | None) -> Any:
        """The agent a child process built or loaded (from the state itself if it could not be pickled)."""
        return pickle.loads(pickled) if pickled is not None else kind.load(params, state)

    def discard(self, live: LiveAgent) -> None:
        """``live`` is ahead of the store or unusable: mark it broken and drop it (the next request loads)."""
        live.broken = True
        self.live.forget(live.id, live)

    def owned_row(self, connection: Connection, owner_id: int, experiment_id: str) -> Any:
        """The experiment's row without its state, if ``owner_id`` owns it (else :class:`NotFound`)."""
        row = connection.execute(SELECT_ROW, {"experiment_id": experiment_id}).mappings().first()
        if row is None or row["owner_id"] != owner_id:  # another key's experiment does not exist for this key
            raise NotFound(f"experiment {experiment_id!r} does not exist for this API key")
        return row
