"""Agents kept in a server process's memory between requests, each valid for one stored version.

A request of an experiment finds its agent here (loaded from the store on a miss, by a child
process: see :mod:`dpbandits.serve.workers`), works on it under the experiment's lock, and bumps
its ``version`` as it computes a write; the write's commit checks that the store still holds the
version the computation started from. When a commit fails, the agent (which is then ahead of the
store) is *broken*: it is dropped, the next request loads the stored one, and every commit computed
on it after the failed one fails too. (A version number alone does not name a stored state: the
store reaches version ``v + 1`` through another process's write as well, so a commit computed on
this agent's own uncommitted ``v + 1`` would pass a version check it must fail.) When a check
finds the store ahead while the agent itself is intact (an ask changes no agent), the agent is
*stale*: the next request catches it up by replaying the feedback stored since, or reloads it. A
request the service refuses before changing the agent (feedback out of range, a wrong ticket)
leaves it in place.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from dpbandits.serve.kinds import Action, ExperimentKind

__all__ = ["LiveAgent", "LiveAgents"]


@dataclass
class LiveAgent:
    """An experiment's agent in memory, valid for one stored ``version``."""

    id: str
    owner_id: int
    kind: ExperimentKind
    params: BaseModel
    agent: Any
    state_bytes: int  # size of its stored state (what serialising it costs)
    version: int
    applied: int
    told: int
    closed: bool
    insecure_seed: int | None
    buffered: dict[int, tuple[str, dict[str, Any]]]  # step -> (ticket, payload): told, not yet applied
    summary: dict[str, Any] = field(default_factory=dict)
    snapshot: int = 0  # steps applied to the stored state (<= applied: later ones are replayed from the log)
    snapshot_committed: bool = True  # False while the write of the state at ``snapshot`` is not committed
    in_flight: dict[str, tuple[str, Future[Any]]] = field(default_factory=dict)  # ticket -> (hash, commit)
    # a commit computed on this agent failed: the agent is ahead of the store, and so is every later
    # computation on it (their commits fail too, whatever version number the store holds meanwhile)
    broken: bool = False
    # a version check found the store ahead (another process wrote): catch up before the next request
    stale: bool = False
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

    def next_action(self) -> Action:
        """The action of step ``applied`` (the first of :meth:`schedule`, without slicing the window)."""
        start, actions = self._window
        offset = self.applied - start
        if start < 0 or offset >= len(actions):
            return self.schedule()[0]
        return actions[offset]

    def window_used_up(self) -> bool:
        """Whether every step of the cached window is applied: the next actions may depend on a new release."""
        start, actions = self._window
        return start < 0 or self.applied - start >= len(actions)


class LiveAgents:
    """The process's agents, least recently used dropped beyond ``capacity`` (thread-safe)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._agents: OrderedDict[str, LiveAgent] = OrderedDict()
        self._guard = threading.Lock()

    def get(self, experiment_id: str) -> LiveAgent | None:
        """The experiment's agent, or None (it becomes the most recently used)."""
        with self._guard:
            live = self._agents.get(experiment_id)
            if live is not None:
                self._agents.move_to_end(experiment_id)
            return live

    def put(self, live: LiveAgent) -> None:
        """Keep ``live`` (dropping the least recently used agent beyond the capacity)."""
        with self._guard:
            self._agents[live.id] = live
            self._agents.move_to_end(live.id)
            while len(self._agents) > self.capacity:
                self._agents.popitem(last=False)

    def forget(self, experiment_id: str, live: LiveAgent | None = None) -> None:
        """Drop the experiment's agent (only if it is still ``live``, when given)."""
        with self._guard:
            if live is None or self._agents.get(experiment_id) is live:
                self._agents.pop(experiment_id, None)

    def forget_all(self, experiment_ids: set[str]) -> None:
        """Drop the agents of ``experiment_ids`` (after a failed commit of theirs); they are broken."""
        with self._guard:
            for experiment_id in experiment_ids:
                live = self._agents.pop(experiment_id, None)
                if live is not None:
                    live.broken = True
