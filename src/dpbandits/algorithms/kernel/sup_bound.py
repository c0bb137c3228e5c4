"""A certified upper bound Ŝ on sup_{w ∈ W} σ̄²(w) over the box W = [0, 1]^D.

USCA's sensitivity is Δ = 2·B_y·sup σ̄² (Lemma 4.2 / 7.1); an *under*-estimate of the supremum by a
factor 1 + η gives only ε(1 + η)-DP, so the mechanism needs a certified upper bound. σ̄² depends only
on the approximating set, so any amount of computation on it is free in privacy terms.

Cell bound (triangle inequality in the Z̃⁻¹ norm, with Z̃⁻¹ ≼ τ⁻¹·Id): for a box cell with centre g
and half-diagonal r,

    σ̄²(w) <= (√σ̄²(g) + τ^{-1/2}·ρ(r))²   for every w in the cell,

where ρ(r) >= sup_{‖w − g‖ <= r} ‖φ(w) − φ(g)‖ is certified by the kernel or feature map. Batched
branch and bound refines the cells whose bound exceeds (1 + rtol)·(best value seen) and returns the
largest remaining cell bound (times 1 + 1e-9 against rounding). Every cell bound is also capped by
the trivial bound sup k(w, w)/τ.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from numpy.typing import ArrayLike

from dpbandits._core.typing import FloatArray
from dpbandits._core.validation import check_int, check_one_of, check_positive_float

__all__ = ["SUP_METHODS", "SupBound", "SupportsSupBound", "certified_sup", "sup_bound", "trivial_sup"]

SUP_METHODS = ("certified", "trivial")
_ROUNDING_MARGIN = 1e-9


@dataclass(frozen=True)
class SupBound:
    """Result of a supremum bound.

    Attributes
    ----------
    upper : float
        Ŝ, a certified upper bound on sup σ̄².
    lower : float
        The largest σ̄² value evaluated (a lower bound on the supremum; 0 for the trivial method).
    argmax : ndarray or None
        Where ``lower`` was attained.
    n_evaluations : int
        Number of σ̄² evaluations.
    converged : bool
        Whether upper <= (1 + rtol)·lower was reached (the bound is certified either way).
    method : str
    """

    upper: float
    lower: float
    argmax: FloatArray | None
    n_evaluations: int
    converged: bool
    method: str


class SupportsSupBound(Protocol):
    """What a surrogate must offer to have its supremum bounded."""

    min_eigenvalue: float
    """A λ > 0 with Z̃ ≽ λ·Id (τ in exact arithmetic)."""

    @property
    def max_diag(self) -> float:
        """Return sup k(w, w)."""
        ...

    def variance(self, points: ArrayLike) -> FloatArray:
        """σ̄² at points (n, D)."""
        ...

    def distance_bound(self, radius: ArrayLike) -> FloatArray:
        """ρ(r)."""
        ...


def trivial_sup(max_diag: float, tau: float) -> SupBound:
    """Ŝ = sup k(w, w)/τ, always valid (σ̄² <= k(w, w)/τ because Z̃ ≽ τ·Id) and useless for the rate.

    ``tau`` is a λ > 0 with Z̃ ≽ λ·Id (the surrogate's ``min_eigenvalue``).
    """
    upper = check_positive_float(max_diag, "max_diag") / check_positive_float(tau, "tau")
    return SupBound(upper=upper, lower=0.0, argmax=None, n_evaluations=0, converged=False, method="trivial")


def certified_sup(
    variance: Callable[[FloatArray], FloatArray],
    distance_bound: Callable[[FloatArray], FloatArray],
    *,
    dim: int,
    tau: float,
    max_diag: float,
    rtol: float = 1e-2,
    cells_per_axis: int | None = None,
    max_evaluations: int = 200_000,
    batch_size: int = 4096,
) -> SupBound:
    """Branch-and-bound upper bound on sup σ̄² over [0, 1]^dim.

    Parameters
    ----------
    variance : callable
        σ̄² at points of shape (n, dim).
    distance_bound : callable
        ρ(r), vectorised over radii.
    dim : int
        D.
    tau : float
        A λ > 0 with Z̃ ≽ λ·Id (τ in exact arithmetic; the surrogate's ``min_eigenvalue``).
    max_diag : float
        sup k(w, w) (caps every cell bound at max_diag/τ).
    rtol : float, default 1e-2
        Stop when max bound <= (1 + rtol)·max value seen.
    cells_per_axis : int, optional
        Initial uniform partition; default ⌈4096^{1/dim}⌉ (64 per axis in 2-D).
    max_evaluations : int, default 200000
        Evaluation budget; when spent, the current (valid, looser) bound is returned.
    batch_size : int, default 4096
        Cells split per round (the highest bounds first).

    Returns
    -------
    SupBound

    Privacy
    -------
    Uses only the data-independent surrogate σ̄² (a function of the approximating set), so it costs
    no privacy; the returned ``upper`` is an upper bound on sup σ̄² whatever the budget, which is
    what makes Δ = 2·B_y·upper a valid sensitivity (Lemma 4.2).

    References
    ----------
    Errata USCA-A3 (certified branch and bound); Pavlovic, Salgia & Zhao (2025),
    Lemma 4.2 (= 7.1).
    """
    d = check_int(dim, "dim", minimum=1)
    tau = check_positive_float(tau, "tau")
    cap = check_positive_float(max_diag, "max_diag") / tau
    rtol = check_positive_float(rtol, "rtol")
    budget = check_int(max_evaluations, "max_evaluations", minimum=1)
    batch = check_int(batch_size, "batch_size", minimum=1)
    n_axis = (
        math.ceil(4096 ** (1.0 / d)) if cells_per_axis is None
        else check_int(cells_per_axis, "cells_per_axis", minimum=1)
    )
    inv_sqrt_tau = 1.0 / math.sqrt(tau)

    edges = np.arange(n_axis, dtype=np.float64) / n_axis
    lower_corners = np.stack(np.meshgrid(*([edges] * d), indexing="ij"), axis=-1).reshape(-1, d)
    widths = np.full_like(lower_corners, 1.0 / n_axis)

    def bound(lo: FloatArray, wd: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
        centres = lo + 0.5 * wd
        values = np.maximum(variance(centres), 0.0)
        radius = 0.5 * np.sqrt(np.sum(wd**2, axis=1))
        # UB = (√σ̄²(g) + τ^{-1/2}·ρ(r))², capped by sup k(w,w)/τ
        ub = np.minimum((np.sqrt(values) + inv_sqrt_tau * distance_bound(radius)) ** 2, cap)
        return centres, values, ub

    centres, values, ub = bound(lower_corners, widths)
    n_eval = values.size
    best = int(np.argmax(values))
    lower, argmax = float(values[best]), centres[best].copy()
    settled_max = 0.0  # largest bound among cells dropped as already within tolerance
    while True:
        active = ub > (1.0 + rtol) * lower
        if np.any(~active):
            settled_max = max(settled_max, float(ub[~active].max()))
        lower_corners, widths, ub = lower_corners[active], widths[active], ub[active]
        if ub.size == 0 or n_eval + 2 * min(batch, ub.size) > budget:
            break
        order = np.argsort(-ub)
        split, keep = order[:batch], order[batch:]
        lo, wd = lower_corners[split], widths[split]
        axis = np.argmax(wd, axis=1)
        half = wd.copy()
        half[np.arange(len(axis)), axis] *= 0.5
        lo_right = lo.copy()
        lo_right[np.arange(len(axis)), axis] += half[np.arange(len(axis)), axis]
        child_lo = np.concatenate([lo, lo_right])
        child_wd = np.concatenate([half, half])
        c_centres, c_values, c_ub = bound(child_lo, child_wd)
        n_eval += c_values.size
        j = int(np.argmax(c_values))
        if c_values[j] > lower:
            lower, argmax = float(c_values[j]), c_centres[j].copy()
        lower_corners = np.concatenate([lower_corners[keep], child_lo])
        widths = np.concatenate([widths[keep], child_wd])
        ub = np.concatenate([ub[keep], c_ub])
    remaining = float(ub.max()) if ub.size else 0.0
    upper = max(settled_max, remaining, lower) * (1.0 + _ROUNDING_MARGIN)
    return SupBound(
        upper=min(upper, cap * (1.0 + _ROUNDING_MARGIN)),
        lower=lower,
        argmax=argmax,
        n_evaluations=n_eval,
        converged=ub.size == 0,
        method="certified",
    )


def sup_bound(
    method: str,
    surrogate: SupportsSupBound,
    dim: int,
    *,
    rtol: float = 1e-2,
    max_evaluations: int = 200_000,
) -> SupBound:
    """Dispatch to :func:`certified_sup` or :func:`trivial_sup` for a surrogate."""
    check_one_of(method, "sup_method", SUP_METHODS)
    if method == "trivial":
        return trivial_sup(surrogate.max_diag, surrogate.min_eigenvalue)
    return certified_sup(
        surrogate.variance,
        surrogate.distance_bound,
        dim=dim,
        tau=surrogate.min_eigenvalue,
        max_diag=surrogate.max_diag,
        rtol=rtol,
        max_evaluations=max_evaluations,
    )
