"""A phase's plan, the planners that fix it, their cache, and the selection of a phase's survivors.

Shared by both drivers of the phased algorithms (:mod:`dpbandits.algorithms.bai.phased`, which
re-exports every public name here): the plan is a deterministic function of the planner's state, so
it is computed once per distinct state.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Protocol

import numpy as np

from dpbandits._core.errors import InvalidParameterError
from dpbandits._core.typing import FloatArray, IntArray

__all__ = [
    "PhasePlan",
    "Planner",
    "select_top",
]


@dataclass(frozen=True)
class PhasePlan:
    """What one phase does, for one state.

    Attributes
    ----------
    active : ndarray of int, shape (s,)
        The active arms A_p, ascending.
    pulled : ndarray of int, shape (n,)
        The arms pulled this phase, ascending (pulled in this order, all pulls of one arm in a row).
    pulls : ndarray of int, shape (n,)
        Pulls of each pulled arm.
    sum_weights : ndarray, shape (s, n)
        W_sum: estimate of each active arm per unit of each pulled arm's reward sum.
    noise_weights : ndarray, shape (s, q)
        W_noise (q = 0 for non-private algorithms).
    noise_scales : ndarray, shape (q,)
        Scale of each noise coordinate (Laplace scale b or Gaussian standard deviation σ).
    statistic_weights : ndarray, shape (q, n)
        M: the released statistic is z = M·S + ξ and the estimates are W_noise·z, so
        W_sum = W_noise·M (checked). The ask/tell agent releases z through the noise backend's
        ``add_*`` verb, which on the secure backend adds the noise inside OpenDP (floating-point
        safe); (q, n) zeros for non-private plans.
    keep : int
        Number of survivors.
    clipped : bool
        Whether the budget guard reduced the pulls (errata BAI-A11).
    info : dict
        Diagnostics (dimension, branch, noise scale, ...).
    """

    active: IntArray
    pulled: IntArray
    pulls: IntArray
    sum_weights: FloatArray
    noise_weights: FloatArray
    noise_scales: FloatArray
    keep: int
    statistic_weights: FloatArray = field(default_factory=lambda: np.zeros((0, 0)))
    clipped: bool = False
    info: dict[str, object] = field(default_factory=dict)
    diagonal: bool = field(init=False, default=False)
    """Whether both weight matrices are square and diagonal (each estimate uses its own arm only)."""

    @cached_property
    def queue_bytes(self) -> bytes:
        """The phase's pulls in order (each pulled arm ``pulls`` times, in a row) as int64 bytes.

        An agent's queue is a copy of these (computed once per plan, which every trial of an algorithm
        shares; a pure function of the plan, so computing it twice in two threads is harmless).
        """
        return np.repeat(self.pulled, self.pulls).astype(np.int64).tobytes()

    @cached_property
    def sum_layout(self) -> tuple[IntArray, int, IntArray, IntArray]:
        """Where each pull's reward goes in a table of one row per pulled arm (for the agent's phase sums).

        ``(rows, width, row_of_pull, column_of_pull)``: the positions of the arms with pulls, the most
        pulls of one arm, and each pull's row and column (from 1: column 0 holds the arm's start).
        """
        counts = self.pulls.reshape(-1)
        rows = np.flatnonzero(counts)
        lengths = counts[rows]
        width = int(lengths.max()) if rows.size else 0
        row_of_pull = np.repeat(np.arange(rows.size), lengths)
        column_of_pull = np.arange(1, int(lengths.sum()) + 1) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        return rows, width, row_of_pull, column_of_pull

    def __post_init__(self) -> None:
        def is_diagonal(w: FloatArray) -> bool:
            return w.shape[0] == w.shape[1] and not np.any(w - np.diag(np.diag(w)))

        object.__setattr__(self, "diagonal", is_diagonal(self.sum_weights) and is_diagonal(self.noise_weights))
        q, n = self.noise_scales.shape[0], self.pulled.shape[0]
        if q and (self.statistic_weights.shape != (q, n)
                  or not np.allclose(self.noise_weights @ self.statistic_weights, self.sum_weights,
                                     rtol=1e-9, atol=1e-12)):
            raise InvalidParameterError(
                f"statistic_weights must have shape ({q}, {n}) with noise_weights @ statistic_weights == "
                f"sum_weights; got shape {self.statistic_weights.shape}"
            )

    @cached_property
    def total_pulls(self) -> int:
        """Σ pulls of the phase (computed once per plan, which every trial shares)."""
        return int(self.pulls.sum())


class Planner(Protocol):
    """What a phased algorithm provides to the drivers."""

    n_arms: int
    n_phases: int
    noise_kind: str | None

    def initial_state(self) -> Hashable:
        """The state at the start of phase 0."""

    def plan(self, phase: int, state: Hashable) -> PhasePlan:
        """The plan of ``phase`` (0-based) in ``state``."""

    def next_state(self, phase: int, state: Hashable, plan: PhasePlan, survivors: tuple[int, ...]) -> Hashable:
        """The state after ``phase`` when ``survivors`` (ascending) stay active."""


class _PlanCache:
    """Memoises plans and state transitions of one planner."""

    def __init__(self, planner: Planner) -> None:
        self.planner = planner
        self.states: list[Hashable] = [planner.initial_state()]
        self._ids: dict[Hashable, int] = {self.states[0]: 0}
        self._plans: dict[tuple[int, int], PhasePlan] = {}
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        del state["_lock"]  # a lock cannot be pickled; the states and their ids are (agents refer to the ids)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def plan(self, phase: int, state_id: int) -> PhasePlan:
        key = (phase, state_id)
        if key not in self._plans:
            self._plans[key] = self.planner.plan(phase, self.states[state_id])
        return self._plans[key]

    def next_id(self, phase: int, state_id: int, survivors: tuple[int, ...]) -> int:
        state = self.planner.next_state(phase, self.states[state_id], self.plan(phase, state_id), survivors)
        return self.register(state)

    def register(self, state: Hashable) -> int:
        """The id of ``state``, registering it if it is new (under a lock: runs of one algorithm share the cache)."""
        found = self._ids.get(state)
        if found is not None:
            return found
        with self._lock:
            if state not in self._ids:
                self._ids[state] = len(self.states)
                self.states.append(state)
            return self._ids[state]


def select_top(estimates: FloatArray, keep: int, tie_keys: FloatArray | None) -> IntArray:
    """Column indices of the ``keep`` largest estimates of each row, ascending.

    Ties are broken by the smaller ``tie_keys`` (uniform random keys), or by the lower column when
    ``tie_keys`` is None.
    """
    keys = np.broadcast_to(np.arange(estimates.shape[-1]), estimates.shape) if tie_keys is None else tie_keys
    if keep == 1:  # fast path: among the maximal estimates, the smallest key
        top = estimates == estimates.max(axis=-1, keepdims=True)
        return np.argmin(np.where(top, keys, np.inf), axis=-1)[..., None]
    order = np.lexsort((keys, -estimates), axis=-1)
    return np.sort(order[..., :keep], axis=-1)
