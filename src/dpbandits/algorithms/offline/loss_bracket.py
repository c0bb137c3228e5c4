"""Bounding a Gibbs policy's privacy loss over boxes of neighbours, and the branch and bound that uses it.

A policy π(a) ∝ π0(a)·e^{u(a)/η} moved to π'(a) ∝ π0(a)·e^{(u(a) + δu(a))/η} by a neighbouring dataset
has the log-ratios l_a = x_a − log Σ_b π(b)·e^{x_b} with x = δu/η, and the pure loss of the pair is
max_a |l_a| over the actions π chooses. When each x_a is only known to lie in an interval [lo_a, hi_a]
(a whole box of neighbours at once), l_a <= hi_a − log Σ_b π(b)e^{lo_b} and −l_a <= log Σ_b π(b)e^{hi_b}
− lo_a bound the loss from above, and the reversed pairs from below: :func:`interval_loss_bounds`.

:func:`branch_and_bound` maximises the loss over a set of neighbours covered by boxes: it splits the
box whose bound is largest until that bound is within a relative tolerance of the largest loss found
(or a budget runs out). Every box discarded had a bound no larger than the answer's, so the answer
is an upper bound on the supremum whatever the budget; the loss found is a lower bound of it.

The elliptical policies' neighbours are rank-one updates Σ ± zzᵀ of the covariance: the change of
the penalty ‖φ_a‖_{Σ⁻¹} is :func:`penalty_change`, bounded over a box of records z by
:func:`addition_penalty_bounds` with the interval forms of :class:`RecordBox`.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from dpbandits._core.typing import FloatArray

__all__ = [
    "LossBracket",
    "RecordBox",
    "active_actions",
    "addition_penalty_bounds",
    "branch_and_bound",
    "cholesky_solve",
    "interval_loss_bounds",
    "penalty_change",
    "point_loss",
]

ROUNDING_MARGIN = 1e-9
"""Relative margin added to a certified upper bound for floating-point rounding of its evaluation."""


def _logsumexp_rows(values: FloatArray) -> FloatArray:
    top = np.max(values, axis=1)
    top = np.where(np.isfinite(top), top, 0.0)
    return np.asarray(top + np.log(np.sum(np.exp(values - top[:, None]), axis=1)), dtype=np.float64)


def interval_loss_bounds(log_p: FloatArray, lo: FloatArray, hi: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Upper and lower bounds of max_a |x_a − log Σ_b p_b e^{x_b}| over x in the boxes [lo, hi].

    Parameters
    ----------
    log_p : ndarray of shape (K,)
        log π of the actions the policy chooses (all finite).
    lo, hi : ndarray of shape (m, K)
        Bounds of x = δu/η, one row per box.

    Returns
    -------
    (ndarray, ndarray)
        Of shape (m,): an upper bound on the loss over each box, and a lower bound (>= 0).
    """
    lse_lo = _logsumexp_rows(log_p + lo)
    lse_hi = _logsumexp_rows(log_p + hi)
    upper = np.maximum(hi - lse_lo[:, None], lse_hi[:, None] - lo).max(axis=1)
    lower = np.maximum(np.maximum(lo - lse_hi[:, None], lse_lo[:, None] - hi).max(axis=1), 0.0)
    return np.asarray(upper, dtype=np.float64), np.asarray(lower, dtype=np.float64)


def point_loss(log_p: FloatArray, x: FloatArray) -> FloatArray:
    """The loss max_a |l_a| of each row of x = δu/η (shape (m, K)): the pair's exact pure loss."""
    return interval_loss_bounds(log_p, x, x)[0]


@dataclass(frozen=True)
class LossBracket:
    """The per-instance loss bracketed: ``lower`` <= sup over neighbours <= ``upper``.

    Attributes
    ----------
    upper : float
        A certified upper bound on the supremum of the pair loss over every neighbour.
    lower : float
        The largest loss of a neighbour found by the search (a lower bound of the supremum).
    worst : str
        The neighbour that attains ``lower``, in words.
    boxes : int
        Boxes of neighbours the branch and bound examined.
    converged : bool
        Whether ``upper <= (1 + rtol)·lower`` was reached within the budget.
    """

    upper: float
    lower: float
    worst: str
    boxes: int
    converged: bool

    @property
    def ratio(self) -> float:
        """The factor upper / lower: how loose the certified value can be (1 when both are 0)."""
        if self.lower > 0:
            return self.upper / self.lower
        return 1.0 if self.upper == 0 else math.inf

    def merge(self, other: LossBracket) -> LossBracket:
        """The bracket of the supremum over the union of both sets of neighbours."""
        worst = self.worst if self.lower >= other.lower else other.worst
        return LossBracket(max(self.upper, other.upper), max(self.lower, other.lower), worst,
                           self.boxes + other.boxes, self.converged and other.converged)


BoxEvaluator = Callable[[FloatArray, FloatArray], tuple[FloatArray, FloatArray]]
"""(lows, highs) of m boxes, shape (m, p) -> (upper bound over each box, loss of a point in it)."""


def branch_and_bound(evaluate: BoxEvaluator, low: FloatArray, high: FloatArray, scale: FloatArray, *,
                     rtol: float, max_boxes: int, describe: Callable[[FloatArray], str],
                     known: float = 0.0, batch: int = 64) -> LossBracket:
    """Maximise the pair loss over the neighbours of one or more root boxes.

    Parameters
    ----------
    evaluate : callable
        Box evaluator: an upper bound of the loss over each box (``inf`` never needed: boxes outside
        the set of neighbours return ``-inf`` to be dropped) and the loss of one neighbour in it
        (``-inf`` when none was evaluated).
    low, high : ndarray of shape (r, p)
        The root boxes.
    scale : ndarray of shape (p,)
        Each coordinate's unit: a box is split across its widest coordinate in these units.
    rtol : float
        Stop when the largest bound left is within (1 + rtol) of the largest loss found.
    max_boxes : int
        Budget of boxes evaluated; the answer stays an upper bound when it runs out.
    describe : callable
        Describes the point of a box (its centre) in words, for ``LossBracket.worst``.
    known : float, default 0
        A loss already attained by other neighbours: boxes bounded within (1 + rtol) of it are not
        refined (the answer is then an upper bound of the supremum over both sets, not of this one alone).
    batch : int, default 64
        Boxes split per round (evaluated together).

    Returns
    -------
    LossBracket
    """
    lows, highs = np.atleast_2d(low).astype(np.float64), np.atleast_2d(high).astype(np.float64)
    upper, found = evaluate(lows, highs)
    examined = lows.shape[0]
    best, best_box = -math.inf, lows[0]
    heap: list[tuple[float, int]] = []
    store: dict[int, tuple[FloatArray, FloatArray]] = {}
    counter = 0

    def admit(lo_rows: FloatArray, hi_rows: FloatArray, ups: FloatArray, points: FloatArray) -> None:
        nonlocal best, best_box, counter
        for i in range(lo_rows.shape[0]):
            if points[i] > best:
                best, best_box = float(points[i]), 0.5 * (lo_rows[i] + hi_rows[i])
            if ups[i] > -math.inf:  # a box holding a neighbour
                heapq.heappush(heap, (-float(ups[i]), counter))
                store[counter] = (lo_rows[i], hi_rows[i])
                counter += 1

    admit(lows, highs, upper, found)
    converged = True
    while heap:
        threshold = max(best, known, 0.0) * (1.0 + rtol)
        if -heap[0][0] <= threshold:
            break
        if examined >= max_boxes:
            converged = False
            break
        picked_lo: list[FloatArray] = []
        picked_hi: list[FloatArray] = []
        while heap and len(picked_lo) < batch and -heap[0][0] > threshold:
            _, key = heapq.heappop(heap)
            lo_box, hi_box = store.pop(key)
            widths = (hi_box - lo_box) / scale
            axis = int(np.argmax(widths))
            middle = 0.5 * (lo_box[axis] + hi_box[axis])
            left_hi, right_lo = hi_box.copy(), lo_box.copy()
            left_hi[axis], right_lo[axis] = middle, middle
            picked_lo += [lo_box, right_lo]
            picked_hi += [left_hi, hi_box]
        child_lo, child_hi = np.array(picked_lo), np.array(picked_hi)
        ups, points = evaluate(child_lo, child_hi)
        examined += child_lo.shape[0]
        admit(child_lo, child_hi, ups, points)
    remaining = max((-key for key, _ in heap), default=-math.inf)
    certified = max(remaining, best, 0.0)  # every box not split is still in the heap
    converged = converged and certified <= max(best, known, 0.0) * (1.0 + rtol)
    return LossBracket(certified * (1.0 + ROUNDING_MARGIN), max(best, 0.0), describe(best_box), examined,
                       converged)


# ------------------------------------------------------- rank-one updates over boxes of records
def cholesky_solve(chol: FloatArray, rhs: FloatArray) -> FloatArray:
    """A⁻¹·rhs from the lower Cholesky factor of A."""
    from scipy.linalg import cho_solve

    return np.asarray(cho_solve((chol, True), rhs, check_finite=False), dtype=np.float64)


def penalty_change(g: FloatArray, p: FloatArray, s: FloatArray, sign: float) -> FloatArray:
    """The change of −‖φ_a‖_{Σ⁻¹} when Σ → Σ ± zzᵀ: g − √(g² ∓ p²/(1 ± s)) (p = φ_aᵀΣ⁻¹z, s = zᵀΣ⁻¹z)."""
    return np.asarray(g - np.sqrt(np.maximum(g**2 - sign * p**2 / (1.0 + sign * s), 0.0)), dtype=np.float64)


def addition_penalty_bounds(g: FloatArray, p_lo: FloatArray, p_hi: FloatArray, s_lo: FloatArray,
                             s_hi: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Bounds of g − √(g² − p²/(1 + s)) over p in [p_lo, p_hi], s in [s_lo, s_hi] (increasing in p², decreasing in s)."""
    p2_hi = np.maximum(p_lo**2, p_hi**2)
    p2_lo = np.where(p_lo > 0, p_lo**2, np.where(p_hi < 0, p_hi**2, 0.0))
    a_lo = p2_lo / (1.0 + s_hi[:, None])
    a_hi = p2_hi / (1.0 + s_lo[:, None])
    return (np.asarray(g - np.sqrt(np.maximum(g**2 - a_lo, 0.0)), dtype=np.float64),
            np.asarray(g - np.sqrt(np.maximum(g**2 - a_hi, 0.0)), dtype=np.float64))


class RecordBox:
    """Interval bounds over a box of records z (centre c, half-widths h) of zᵀv and zᵀΣ⁻¹z."""

    def __init__(self, lows: FloatArray, highs: FloatArray, dim: int, radius: float) -> None:
        self.c = 0.5 * (lows[:, :dim] + highs[:, :dim])
        self.h = 0.5 * (highs[:, :dim] - lows[:, :dim])
        gap = np.maximum(np.abs(self.c) - self.h, 0.0)
        self.feasible = np.einsum("ij,ij->i", gap, gap) <= radius**2  # the box meets the ball
        norms = np.sqrt(np.einsum("ij,ij->i", self.c, self.c))
        self.point = self.c * np.minimum(1.0, radius / np.maximum(norms, 1e-300))[:, None]  # a record in it

    def linear(self, v: FloatArray) -> tuple[FloatArray, FloatArray]:
        """Bounds of zᵀv (v of shape (d,) or (d, K))."""
        centre, width = self.c @ v, self.h @ np.abs(v)
        return centre - width, centre + width

    def quadratic(self, inverse: FloatArray, top: float) -> tuple[FloatArray, FloatArray]:
        """Bounds of zᵀAz for A = ``inverse`` ⪰ 0, capped at ``top`` (its largest value on the ball)."""
        centre = np.einsum("ij,jk,ik->i", self.c, inverse, self.c)
        linear = np.einsum("ij,ij->i", self.h, np.abs(2.0 * self.c @ inverse))
        square = np.einsum("ij,jk,ik->i", self.h, np.abs(inverse), self.h)
        return np.maximum(centre - linear, 0.0), np.minimum(centre + linear + square, top)


def active_actions(log_p: FloatArray) -> FloatArray:
    """The actions the policy chooses with positive probability (only they enter the loss)."""
    return np.asarray(np.isfinite(log_p), dtype=bool)
