"""Phase schedules of DP-BAI (eqs. 4–8) and the budget guard shared by the fixed-budget BAI algorithms.

DP-BAI's phase schedule depends only on the number of arms ``K``, the dimension ``d`` and the budget
``T``; it is therefore computed once per grid cell and shared by every trial. The printed eqs. (7)–(8)
of the paper disagree with its Appendix B and with the proof of Theorem 4.2 by one index; the
canonical reading (``schedule="canonical"``, the default) is the one consistent with all three
(errata BAI-A1 to BAI-A3); the literal reading is available as
``schedule="literal"``.

The paper's reservation ``T − T'`` does not always cover the ceilings of the per-phase pull counts
(errata BAI-A11): :func:`guard_pulls` clips a phase's pull count so that the total never exceeds ``T``
(``budget_mode="paper"``), while ``budget_mode="strict"`` reserves enough up front that clipping is
never needed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpbandits._core.errors import DPBanditsError, InvalidParameterError
from dpbandits._core.typing import BoolArray, IntArray
from dpbandits._core.validation import check_int, check_one_of

__all__ = [
    "BUDGET_MODES",
    "SCHEDULES",
    "DegenerateInstanceError",
    "InsufficientBudgetError",
    "PhaseSchedule",
    "dp_bai_schedule",
    "guard_pulls",
]

SCHEDULES = ("canonical", "literal")
BUDGET_MODES = ("paper", "strict")


class InsufficientBudgetError(DPBanditsError, ValueError):
    """The budget ``T`` is too small for the algorithm's schedule (some phase would get no pull)."""


class DegenerateInstanceError(DPBanditsError, ValueError):
    """The active arms' features are all zero, so the instance has no unique best arm to find."""


def _lambda(n_arms: int, dim: int) -> float:
    """Return λ = inf{β >= 2 : β^{ln d} >= K − ⌈d²/4⌉} (eq. 4, natural log; errata BAI-A6 for d = 1)."""
    excess = n_arms - math.ceil(dim * dim / 4)  # K − c_d
    if excess <= 1:
        return 2.0
    if dim == 1:
        return math.inf  # ln 1 = 0: the defining set is empty (errata BAI-A6)
    # λ = max{2, (K − c_d)^{1/ln d}}
    return max(2.0, excess ** (1.0 / math.log(dim)))


@dataclass(frozen=True)
class PhaseSchedule:
    """The deterministic phase structure of DP-BAI for given ``(K, d)``.

    Attributes
    ----------
    n_arms : int
        K.
    dim : int
        d, the dimension used by the schedule (ambient unless the effective one was asked for).
    lam : float
        λ of eq. (4).
    h : tuple of int
        h_0, h_1, ... down to the first 0 (eq. 6, with the clamp at 0).
    g : tuple of int
        g_0, g_1, ... down to the first 1 (eq. 5).
    n_stage1 : int
        M_1, the number of λ-reduction phases.
    n_phases : int
        M, the total number of phases.
    sizes : tuple of int
        s_1, ..., s_{M+1}: the active-set size at the start of each phase, ``sizes[-1] == 1``.
    reserved : int
        T − T' = M_1·d + (M − M_1)·⌈d²/4⌉ (eq. 8).
    schedule : str
        ``"canonical"`` or ``"literal"``.
    """

    n_arms: int
    dim: int
    lam: float
    h: tuple[int, ...]
    g: tuple[int, ...]
    n_stage1: int
    n_phases: int
    sizes: tuple[int, ...]
    reserved: int
    schedule: str

    def effective_budget(self, budget: int, *, budget_mode: str = "paper", max_pulled: IntArray | None = None
                         ) -> int:
        """Return T', the budget shared out between the phases.

        Parameters
        ----------
        budget : int
            T.
        budget_mode : {"paper", "strict"}
            ``"paper"``: T' = T − M_1·d − (M − M_1)·⌈d²/4⌉ (eq. 8). ``"strict"``:
            T' = T + 1 − Σ_p ν_p with ν_p the largest number of arms phase p can pull, so that
            Σ_p ν_p·⌈T'/(M·ν_p)⌉ <= T whatever happens (errata BAI-A11).
        max_pulled : array of int, optional
            ν_1..ν_M for ``"strict"``; default ν_p = s_p if s_p <= d² else d (DP-BAI's bound).

        Raises
        ------
        InsufficientBudgetError
            If T' < 1.
        """
        if budget_mode == "paper":
            t_prime = budget - self.reserved
        else:
            nu = self.max_pulled_dp_bai() if max_pulled is None else np.asarray(max_pulled)
            t_prime = budget + 1 - int(np.sum(nu))  # T'_strict = T + 1 − Σ ν_p
        if t_prime < 1:
            raise InsufficientBudgetError(
                f"budget must leave T' >= 1 pulls after the reservation of DP-BAI's schedule "
                f"(K={self.n_arms}, d={self.dim}, {budget_mode} mode); got budget={budget}, T'={t_prime}"
            )
        return t_prime

    def max_pulled_dp_bai(self) -> IntArray:
        """Return ν_p, the largest number of arms DP-BAI can pull in phase p (s_p if s_p <= d², else d)."""
        s = np.asarray(self.sizes[:-1], dtype=np.int64)
        return np.where(s <= self.dim * self.dim, s, self.dim)


def dp_bai_schedule(n_arms: int, dim: int, *, schedule: str = "canonical") -> PhaseSchedule:
    """Compute DP-BAI's phase schedule (eqs. 4–8).

    Parameters
    ----------
    n_arms : int
        K >= 1.
    dim : int
        d >= 1.
    schedule : {"canonical", "literal"}
        Canonical: M_1 = H* = min{i >= 0: h_i = 0}, M = H* + G*, and s_p includes g_0 (the reading
        consistent with Appendix B and the proof of Theorem 4.2). Literal: eqs. (7)–(8) with indices
        starting at 1, which skips the size g_0 when K > ⌈d²/4⌉ and d >= 3 (errata BAI-A1).

    Returns
    -------
    PhaseSchedule

    Examples
    --------
    >>> from dpbandits.algorithms.bai.schedule import dp_bai_schedule
    >>> dp_bai_schedule(10000, 16).sizes
    (10000, 423, 77, 64, 32, 16, 8, 4, 2, 1)
    """
    k = check_int(n_arms, "n_arms", minimum=1)
    d = check_int(dim, "dim", minimum=1)
    check_one_of(schedule, "schedule", SCHEDULES)
    c_d = math.ceil(d * d / 4)  # c_d = ⌈d²/4⌉
    lam = _lambda(k, d)
    g = [min(k, c_d)]  # g_0 = min{K, c_d}
    while g[-1] > 1:
        g.append(math.ceil(g[-1] / 2))  # g_i = ⌈g_{i−1}/2⌉
    h = [max(k - c_d, 0)]  # h_0 = max{K − c_d, 0}
    while h[-1] > 0:
        h.append(max(math.ceil((h[-1] + 1) / lam) - 1, 0))  # h_i = ⌈(h_{i−1}+1)/λ⌉ − 1
    h_star, g_star = len(h) - 1, len(g) - 1
    if schedule == "canonical":
        m1, m = h_star, h_star + g_star
        sizes = [g[0] + h[p - 1] for p in range(1, m1 + 1)] + [g[p - m1 - 1] for p in range(m1 + 1, m + 2)]
    else:
        h_ext = [*h, 0]
        g_ext = [*g, 1]
        m1 = max(h_star, 1)  # min{i >= 1 : h_i = 0}
        g_first_one = max(g_star, 1)  # min{i >= 1 : g_i = 1}
        m = m1 + g_first_one - 1
        sizes = [g[0] + h_ext[p - 1] for p in range(1, m1 + 1)]
        sizes += [g_ext[p - m1] for p in range(m1 + 1, m + 2)]
        if k == 1:
            m, sizes = 0, [1]
    reserved = m1 * d + (m - m1) * c_d  # T − T' = M_1·d + (M − M_1)·c_d
    return PhaseSchedule(
        n_arms=k, dim=d, lam=lam, h=tuple(h), g=tuple(g), n_stage1=m1, n_phases=m,
        sizes=tuple(int(s) for s in sizes), reserved=reserved, schedule=schedule,
    )


def guard_pulls(pulls_per_arm: IntArray, n_pulled: IntArray, used: IntArray, budget: int,
                *, budget_mode: str) -> tuple[IntArray, BoolArray]:
    """Apply the runtime budget guard (errata BAI-A11) to one phase, per trial.

    Parameters
    ----------
    pulls_per_arm : array of int, shape (n,)
        m_p, the planned pulls per pulled arm.
    n_pulled : array of int, shape (n,)
        n_p, the number of arms pulled in this phase.
    used : array of int, shape (n,)
        Pulls used by the earlier phases.
    budget : int
        T.
    budget_mode : {"paper", "strict"}
        In ``"strict"`` mode clipping must never be needed; if it would be, that is a bug, raised
        as :class:`InvalidParameterError` rather than silently overspending.

    Returns
    -------
    pulls_per_arm : array of int
        m_p ← ⌊(T − used)/n_p⌋ where used + n_p·m_p > T, else unchanged.
    clipped : array of bool

    Raises
    ------
    InsufficientBudgetError
        If the guard leaves m_p < 1.
    """
    over = used + n_pulled * pulls_per_arm > budget
    if budget_mode == "strict" and np.any(over):
        raise InvalidParameterError(
            f"budget_mode='strict' must never need clipping; a phase would use "
            f"{int(np.max(used + n_pulled * pulls_per_arm))} > budget={budget} pulls"
        )
    m = np.where(over, (budget - used) // np.maximum(n_pulled, 1), pulls_per_arm)
    if np.any(m < 1):
        raise InsufficientBudgetError(
            f"budget must allow at least one pull per pulled arm in every phase; got budget={budget}, "
            f"which leaves {int(np.min(budget - used))} pulls for {int(np.max(n_pulled))} arms"
        )
    return m.astype(np.int64), over
