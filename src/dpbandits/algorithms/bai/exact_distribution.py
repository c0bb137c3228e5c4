"""Exact output distribution of a phased BAI algorithm on a fixed reward table (for privacy audits).

Given a reward table x (x[i, n] = reward of the n-th pull of arm i), a phased algorithm's whole
output — the pull sequence and the recommendation — is a deterministic function of the sequence of
survivor sets, and the only randomness is the privacy noise (ties have probability 0 under
continuous noise). This module computes the probability of every survivor-set path by numerical
quadrature of closed-form Laplace densities and CDFs, for the phase shapes where that is a
one-dimensional integral:

* the estimates are independent (each active arm's estimate is a multiple of its own noisy
  statistic — the all-arms branch of DP-BAI / Baseline, DP-OD with axis-aligned arms) and the
  phase keeps the single best arm, P(i wins) = ∫ f_i(y) Π_{k≠i} F_k(y) dy, or drops the single
  worst, P(j dropped) = ∫ f_j(y) Π_{k≠j} (1 − F_k(y)) dy;
* two noisy statistics (a Max-Det collection of two arms) and the best arm is kept: for a fixed
  first statistic the region where arm i wins is an interval of the second, so
  P(i wins) = ∫ f_1(y) [F_2(hi_i(y)) − F_2(lo_i(y))]⁺ dy.

Other shapes raise :class:`~dpbandits._core.errors.InvalidParameterError`. The audit tests feed
these distributions on neighbouring tables to :func:`dpbandits.audit.exact.audit_exact`.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Hashable

import numpy as np
from numpy.typing import ArrayLike
from scipy import integrate

from dpbandits._core.errors import InvalidParameterError
from dpbandits._core.typing import FloatArray
from dpbandits._core.validation import check_array
from dpbandits.algorithms.bai.phased import PhasePlan, Planner

__all__ = [
    "exact_path_distribution",
    "gaussian_cdf",
    "gaussian_pdf",
    "laplace_cdf",
    "laplace_pdf",
    "phase_survivor_probabilities",
]

_TAIL_SCALES = 60.0  # integrate centre ± 60 scales: the Laplace tail beyond is e^{-60} ≈ 1e-26
Path = tuple[tuple[int, ...], ...]


def laplace_pdf(y: float, centre: float, scale: float) -> float:
    """Density of centre + Lap(scale) at y: exp(−|y − centre|/b)/(2b)."""
    return math.exp(-abs(y - centre) / scale) / (2.0 * scale)


def laplace_cdf(y: float, centre: float, scale: float) -> float:
    """CDF of centre + Lap(scale) at y."""
    z = (y - centre) / scale
    return 0.5 * math.exp(z) if z < 0 else 1.0 - 0.5 * math.exp(-z)


def _integrate(fn: Callable[[float], float], centres: FloatArray, scales: FloatArray,
               extra_points: FloatArray | None = None) -> float:
    """∫ fn over the union of centre ± 60 scales, piecewise between kinks and scale marks.

    The integrands are smooth except at the Laplace centres (and at ``extra_points``); splitting
    there, and at centre ± {1, 4, 15} scales so that narrow densities are resolved, lets each piece
    converge to ~1e-12 relative accuracy.
    """
    low = float(np.min(centres - _TAIL_SCALES * scales))
    high = float(np.max(centres + _TAIL_SCALES * scales))
    marks = [centres + k * scales for k in (-15.0, -4.0, -1.0, 0.0, 1.0, 4.0, 15.0)]
    if extra_points is not None:
        marks.append(np.asarray(extra_points, dtype=np.float64))
    inner = np.concatenate(marks)
    edges = np.unique(np.concatenate([[low, high], inner[(inner > low) & (inner < high)]]))
    total = 0.0
    for a, b in itertools.pairwise(edges):
        value, _ = integrate.quad(fn, float(a), float(b), limit=200, epsabs=1e-16, epsrel=1e-12)
        total += float(value)
    return total


def gaussian_pdf(y: float, centre: float, scale: float) -> float:
    """Density of centre + N(0, scale²) at y."""
    z = (y - centre) / scale
    return math.exp(-0.5 * z * z) / (scale * math.sqrt(2.0 * math.pi))


def gaussian_cdf(y: float, centre: float, scale: float) -> float:
    """CDF of centre + N(0, scale²) at y."""
    return 0.5 * math.erfc(-(y - centre) / (scale * math.sqrt(2.0)))


_DENSITIES = {"laplace": (laplace_pdf, laplace_cdf), "gaussian": (gaussian_pdf, gaussian_cdf)}


def _independent(plan: PhasePlan, centres: FloatArray, kind: str) -> dict[tuple[int, ...], float]:
    pdf, cdf = _DENSITIES[kind]
    w = plan.noise_weights
    column = np.argmax(np.abs(w), axis=1)
    weight = w[np.arange(w.shape[0]), column]
    # est_i = w_i·(c_i + ξ_i) with ξ_i symmetric: centre w_i·c_i, scale |w_i|·b_i
    est_centres = weight * centres[column]
    est_scales = np.abs(weight) * plan.noise_scales[column]
    s = plan.active.shape[0]
    out: dict[tuple[int, ...], float] = {}
    for i in range(s):
        others = [k for k in range(s) if k != i]
        if plan.keep == 1:

            def winner(y: float, i: int = i, others: list[int] = others) -> float:
                value = pdf(y, est_centres[i], est_scales[i])
                for k in others:
                    value *= cdf(y, est_centres[k], est_scales[k])
                return value

            out[(int(plan.active[i]),)] = _integrate(winner, est_centres, est_scales)
        else:

            def loser(y: float, i: int = i, others: list[int] = others) -> float:
                value = pdf(y, est_centres[i], est_scales[i])
                for k in others:
                    value *= 1.0 - cdf(y, est_centres[k], est_scales[k])
                return value

            out[tuple(int(plan.active[k]) for k in others)] = _integrate(loser, est_centres, est_scales)
    return out


def _two_statistics(plan: PhasePlan, centres: FloatArray) -> dict[tuple[int, ...], float]:
    w = plan.noise_weights  # est_i = w_i1·Y_1 + w_i2·Y_2
    b1, b2 = plan.noise_scales
    c1, c2 = centres
    s = plan.active.shape[0]
    out: dict[tuple[int, ...], float] = {}
    for i in range(s):

        def wins(y1: float, i: int = i) -> float:
            lo, hi = -math.inf, math.inf
            for k in range(s):
                if k == i:
                    continue
                # est_i − est_k = (w_i1 − w_k1)·y1 + (w_i2 − w_k2)·y2 > 0
                a = w[i, 1] - w[k, 1]
                c = (w[i, 0] - w[k, 0]) * y1
                if abs(a) < 1e-14:
                    if c <= 0:
                        return 0.0
                elif a > 0:
                    lo = max(lo, -c / a)
                else:
                    hi = min(hi, -c / a)
            if hi <= lo:
                return 0.0
            upper = 1.0 if math.isinf(hi) else laplace_cdf(hi, c2, b2)
            lower = 0.0 if math.isinf(lo) else laplace_cdf(lo, c2, b2)
            return laplace_pdf(y1, c1, b1) * max(upper - lower, 0.0)

        # kinks: endpoints −c/a cross the centre c2 of the second statistic
        kinks = [c2 * (w[i, 1] - w[k, 1]) / -(w[i, 0] - w[k, 0]) for k in range(s)
                 if k != i and abs(w[i, 0] - w[k, 0]) > 1e-14]
        out[(int(plan.active[i]),)] = _integrate(wins, np.array([c1]), np.array([b1]), np.array(kinks))
    return out


def phase_survivor_probabilities(plan: PhasePlan, sums: ArrayLike, *, noise_kind: str = "laplace"
                                 ) -> dict[tuple[int, ...], float]:
    """Probability of each survivor set of one phase, given the pulled arms' reward sums.

    Parameters
    ----------
    plan : PhasePlan
    sums : array_like, shape (n_pulled,)
        Reward sums of the pulled arms in this phase.
    noise_kind : {"laplace", "gaussian"}
        Gaussian noise is supported for independent estimates only.

    Returns
    -------
    dict
        survivor tuple (ascending arm indices) -> probability.

    Raises
    ------
    InvalidParameterError
        For a phase shape without a one-dimensional integral (see the module docstring).
    """
    s_vec = check_array(sums, "sums", ndim=1)
    w = plan.noise_weights
    # the noise-free statistics c with W_noise·c = W_sum·S (c_j = μ̂_j for DP-BAI, U for DP-OD)
    centres = np.linalg.lstsq(w, plan.sum_weights @ s_vec, rcond=None)[0]
    s = plan.active.shape[0]
    one_per_row = np.count_nonzero(np.abs(w) > 1e-14, axis=1) == 1
    columns = np.argmax(np.abs(w), axis=1)
    if np.all(one_per_row) and np.unique(columns).size == s and plan.keep in (1, s - 1):
        return _independent(plan, centres, noise_kind)
    if w.shape[1] == 2 and plan.keep == 1 and noise_kind == "laplace":
        return _two_statistics(plan, centres)
    raise InvalidParameterError(
        f"phase shape not supported for exact computation: {s} active arms, {w.shape[1]} noisy "
        f"statistics, keep={plan.keep}"
    )


def exact_path_distribution(planner: Planner, reward_table: ArrayLike) -> dict[Path, float]:
    """Probability of every survivor-set path of a phased algorithm on a fixed reward table.

    Parameters
    ----------
    planner : Planner
        E.g. ``DPBAI(...).planner`` (Laplace) or ``DPBAIGauss(...).planner`` (Gaussian).
    reward_table : array_like, shape (n_arms, n_pulls)
        x[i, n], the reward of the n-th pull of arm i (enough columns for every path).

    Returns
    -------
    dict
        path (tuple of survivor tuples, one per phase) -> probability; the paths enumerate every
        output reachable with positive probability, and the probabilities sum to 1 up to quadrature
        error.
    """
    table = check_array(reward_table, "reward_table", ndim=2)
    if planner.noise_kind not in _DENSITIES:
        raise InvalidParameterError(
            f"planner.noise_kind must be 'laplace' or 'gaussian'; got {planner.noise_kind!r}")
    kind = str(planner.noise_kind)
    out: dict[Path, float] = {}

    def recurse(phase: int, state: Hashable, offsets: np.ndarray, path: Path, prob: float) -> None:
        if phase == planner.n_phases:
            out[path] = out.get(path, 0.0) + prob
            return
        plan = planner.plan(phase, state)
        sums = np.array([table[arm, offsets[arm]:offsets[arm] + pulls].sum()
                         for arm, pulls in zip(plan.pulled, plan.pulls, strict=True)])
        if np.any(offsets[plan.pulled] + plan.pulls > table.shape[1]):
            raise InvalidParameterError(f"reward_table needs more than {table.shape[1]} pulls per arm")
        new_offsets = offsets.copy()
        new_offsets[plan.pulled] += plan.pulls
        for survivors, p in phase_survivor_probabilities(plan, sums, noise_kind=kind).items():
            recurse(phase + 1, planner.next_state(phase, state, plan, survivors), new_offsets,
                    (*path, survivors), prob * p)

    recurse(0, planner.initial_state(), np.zeros(table.shape[0], dtype=np.int64), (), 1.0)
    return out
