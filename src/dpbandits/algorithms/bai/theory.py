"""Theory of fixed-budget DP-BAI as functions: hardness parameters and error-probability bounds.

* :func:`hardness_bai` — H_BAI = max_{2 <= i <= d²∧K} i/Δ_(i)² (eq. 14);
* :func:`hardness_private` — H_pri = (1/ε)·max_{2 <= i <= d²∧K} i/Δ_(i) (eq. 15);
* :func:`dp_bai_upper_bound` — Theorem 4.2: P(Î_T ≠ i*) <= exp(−T'/(65·M·H)), H = H_BAI + H_pri,
  valid for all sufficiently large T;
* :func:`minimax_lower_bound` — Theorem 4.7's curve exp(−T/(c·(ln d)^β₁·(H_BAI^β₂ + H_pri^β₃))): for
  β₁ + β₂ + β₃ < 3 no consistent policy beats it on every instance for large T.

Δ_(1) = 0 <= Δ_(2) <= ... are the sorted gaps; for d = 1 the index range is taken as {2} (errata BAI-A7).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from dpbandits._core.errors import InvalidParameterError
from dpbandits._core.validation import (
    check_array,
    check_epsilon,
    check_in_interval,
    check_int,
    check_positive_float,
)
from dpbandits.algorithms.bai.schedule import dp_bai_schedule

__all__ = ["dp_bai_upper_bound", "hardness", "hardness_bai", "hardness_private", "minimax_lower_bound"]


def _sorted_gaps(means: ArrayLike, dim: int) -> tuple[np.ndarray, int]:
    mu = check_array(means, "means", ndim=1)
    d = check_int(dim, "dim", minimum=1)
    if mu.shape[0] < 2:
        raise InvalidParameterError(f"means must hold at least 2 arms; got {mu.shape[0]}")
    gaps = np.sort(mu.max() - mu)  # Δ_(1) = 0 <= Δ_(2) <= ...
    if gaps[1] <= 0:
        raise InvalidParameterError("means must have a unique best arm (Δ_(2) > 0); got a tie at the top")
    top = max(2, min(d * d, mu.shape[0]))  # i ranges over 2..max(2, d²∧K)
    return gaps, top


def hardness_bai(means: ArrayLike, dim: int) -> float:
    """H_BAI = max_{2 <= i <= d²∧K} i/Δ_(i)² (eq. 14).

    Parameters
    ----------
    means : array_like, shape (K,)
        Mean rewards μ_i (a unique maximum).
    dim : int
        d.

    Examples
    --------
    >>> from dpbandits.algorithms.bai.theory import hardness_bai
    >>> round(hardness_bai([0.5, 0.45, 0.45], 2), 6)
    1200.0
    """
    gaps, top = _sorted_gaps(means, dim)
    i = np.arange(2, top + 1)
    return float(np.max(i / gaps[i - 1] ** 2))


def hardness_private(means: ArrayLike, dim: int, epsilon: float) -> float:
    """H_pri = (1/ε)·max_{2 <= i <= d²∧K} i/Δ_(i) (eq. 15)."""
    eps = check_epsilon(epsilon)
    gaps, top = _sorted_gaps(means, dim)
    i = np.arange(2, top + 1)
    return float(np.max(i / gaps[i - 1])) / eps


def hardness(means: ArrayLike, dim: int, epsilon: float) -> float:
    """H = H_BAI + H_pri."""
    return hardness_bai(means, dim) + hardness_private(means, dim, epsilon)


def dp_bai_upper_bound(budget: int, means: ArrayLike, dim: int, epsilon: float, *,
                       schedule: str = "canonical") -> float:
    """Theorem 4.2: exp(−T'/(65·M·H)) with T', M of DP-BAI's schedule (for sufficiently large T).

    Parameters
    ----------
    budget : int
        T.
    means : array_like, shape (K,)
    dim : int
        d.
    epsilon : float
        ε > 0.
    schedule : {"canonical", "literal"}

    Returns
    -------
    float
        The bound (1.0 when T' <= 0).

    References
    ----------
    Chen et al., ICLR 2024 (arXiv:2401.09073), Theorem 4.2 and eq. (76).
    """
    t = check_int(budget, "budget", minimum=1)
    k = check_array(means, "means", ndim=1).shape[0]
    plan = dp_bai_schedule(k, dim, schedule=schedule)
    t_prime = t - plan.reserved  # T' (eq. 8)
    if t_prime <= 0 or plan.n_phases == 0:
        return 1.0
    h = hardness(means, dim, epsilon)
    return math.exp(-t_prime / (65.0 * plan.n_phases * h))  # exp(−T'/(65 M H))


def minimax_lower_bound(budget: float, dim: int, h_bai: float, h_pri: float, *, c: float = 1.0,
                        betas: tuple[float, float, float] = (1.0, 1.0, 1.0)) -> float:
    """Theorem 4.7's curve exp(−T/(c·(ln d)^β₁·(H_BAI^β₂ + H_pri^β₃))).

    For any β with β₁ + β₂ + β₃ < 3, any consistent policy and any c > 0, some instance has an error
    probability above this curve for all large T; with β = (1, 1, 1) it is the order matched by
    DP-BAI's upper bound.

    Parameters
    ----------
    budget : float
        T > 0.
    dim : int
        d >= 2 (ln d > 0).
    h_bai, h_pri : float
        H_BAI and H_pri of the instance.
    c : float, default 1
    betas : tuple of 3 floats in [0, 1]

    References
    ----------
    Chen et al., ICLR 2024 (arXiv:2401.09073), Theorem 4.7 and eq. (24).
    """
    t = check_positive_float(budget, "budget")
    d = check_int(dim, "dim", minimum=2)
    hb = check_positive_float(h_bai, "h_bai")
    hp = check_positive_float(h_pri, "h_pri")
    scale = check_positive_float(c, "c")
    b1, b2, b3 = (check_in_interval(b, f"betas[{i}]", 0.0, 1.0) for i, b in enumerate(betas))
    return math.exp(-t / (scale * math.log(d) ** b1 * (hb**b2 + hp**b3)))
