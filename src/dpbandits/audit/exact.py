"""Exact privacy auditing of mechanisms with a finite output set.

For a mechanism whose output distribution on a dataset can be computed exactly (a probability, or
log-probability, for every element of a fixed finite output set), the privacy of a pair of
neighbouring datasets is known exactly:

* the **pure privacy loss** L(D, D') = max_o |log p(o) − log q(o)|, which for finite outputs is
  exactly the smallest ε with which the pair is ε-indistinguishable (the sup over events S of
  log P(S)/Q(S) is attained at a single output);
* the **hockey-stick divergence** δ(ε) = max(H_ε(p‖q), H_ε(q‖p)) with
  H_ε(p‖q) = Σ_o (p(o) − e^ε·q(o))⁺, the smallest δ with which the pair is (ε, δ)-indistinguishable.

:func:`audit_exact` takes the worst of these over given neighbouring pairs and checks a claimed
(ε, δ). A violation found this way is a real counterexample to the claim; agreement is evidence,
not proof, unless the pairs given are provably the worst case.

Continuous one-dimensional outputs (Laplace, Gaussian) are audited by discretising them onto
intervals with :func:`interval_log_probabilities`. Discretisation is post-processing, so the
audited loss is a lower bound on the continuous one that converges to it as the grid refines and
widens; a broken calibration is still caught exactly.

Everything is computed in log space: probabilities that underflow to 0 in float64 (a Gibbs
policy with η = 10⁻³, a Laplace tail 800 scales out) are handled when given as log-probabilities.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpbandits._core.errors import InvalidParameterError
from dpbandits._core.validation import (
    check_array,
    check_epsilon,
    check_finite_float,
    check_in_interval,
    check_positive_float,
)

__all__ = [
    "ExactAuditReport",
    "LaplaceDistribution",
    "audit_exact",
    "delta_for_epsilon",
    "delta_for_epsilon_batch",
    "hockey_stick_divergence",
    "interval_log_probabilities",
    "privacy_loss",
    "privacy_loss_batch",
]

# Largest |exponent| used in the stable hockey-stick form.
_EXPONENT_CLIP = 700.0
# A distribution is accepted when its total mass is 1 within this relative tolerance.
_NORMALISATION_TOLERANCE = 1e-6


def _as_log_probabilities(values: ArrayLike, name: str, log: bool) -> NDArray[np.float64]:
    """Return a 1-d array of log-probabilities, validated (finite or −inf, normalised)."""
    arr = check_array(values, name, ndim=1, finite=False)
    if np.isnan(arr).any():
        raise InvalidParameterError(f"{name} must not contain NaN; got NaN at index {int(np.flatnonzero(np.isnan(arr))[0])}")
    if log:
        if np.isposinf(arr).any() or (arr > 1e-9).any():
            raise InvalidParameterError(
                f"{name} must hold log-probabilities <= 0; got max {float(arr.max())!r}"
            )
        log_p = arr
    else:
        if (arr < 0).any() or np.isinf(arr).any():
            raise InvalidParameterError(
                f"{name} must hold probabilities in [0, 1]; got min {float(arr.min())!r}, max {float(arr.max())!r}"
            )
        with np.errstate(divide="ignore"):
            log_p = np.log(arr)
    top = float(np.max(log_p))
    if math.isinf(top):
        raise InvalidParameterError(f"{name} must put positive mass on some output; got all zeros")
    # log Σ p = m + log Σ exp(log p − m)
    log_total = top + math.log(float(np.sum(np.exp(log_p - top))))
    if abs(log_total) > _NORMALISATION_TOLERANCE:
        raise InvalidParameterError(
            f"{name} must sum to 1 (within {_NORMALISATION_TOLERANCE}); got sum {math.exp(log_total)!r}"
        )
    return np.asarray(log_p, dtype=np.float64)


def _pair(p: ArrayLike, q: ArrayLike, log: bool) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    log_p = _as_log_probabilities(p, "p", log)
    log_q = _as_log_probabilities(q, "q", log)
    if log_p.shape != log_q.shape:
        raise InvalidParameterError(
            f"p and q must be distributions over the same outputs; got shapes {log_p.shape} and {log_q.shape}"
        )
    return log_p, log_q


def _abs_losses(log_p: NDArray[np.float64], log_q: NDArray[np.float64]) -> NDArray[np.float64]:
    """|log p(o) − log q(o)| per output: inf where exactly one is 0, −inf (ignored) where both are."""
    with np.errstate(invalid="ignore"):
        losses = np.abs(log_p - log_q)
    return np.asarray(np.where(np.isnan(losses), -np.inf, losses), dtype=np.float64)


def _worst_output(log_p: NDArray[np.float64], log_q: NDArray[np.float64]) -> tuple[float, int]:
    losses = _abs_losses(log_p, log_q)
    worst = int(np.argmax(losses))
    return float(losses[worst]), worst


def privacy_loss(p: ArrayLike, q: ArrayLike, *, log: bool = False) -> float:
    """Return the pure privacy loss max_o |log p(o) − log q(o)| of two output distributions.

    Parameters
    ----------
    p, q : array_like of shape (n_outputs,)
        The output distributions of a mechanism on two neighbouring datasets, over the same finite
        output set: probabilities, or log-probabilities when ``log=True`` (``-inf`` for 0).
    log : bool, default False
        Whether ``p`` and ``q`` are log-probabilities. Pass log-probabilities whenever some
        probabilities may underflow in float64.

    Returns
    -------
    float
        L = max_o |log p(o) − log q(o)| over outputs with p(o) > 0 or q(o) > 0; ``inf`` when one of
        p(o), q(o) is 0 and the other is not. Outputs with p(o) = q(o) = 0 are ignored. For finite
        outputs this is the smallest ε with which p and q are ε-indistinguishable.

    Raises
    ------
    InvalidParameterError
        If an input is not a distribution (negative, NaN, not summing to 1) or the shapes differ.

    Examples
    --------
    Randomized response with flip probability 1/4 is ln 3-DP:

    >>> import math
    >>> from dpbandits.audit.exact import privacy_loss
    >>> round(privacy_loss([0.75, 0.25], [0.25, 0.75]), 12) == round(math.log(3), 12)
    True
    """
    log_p, log_q = _pair(p, q, log)
    return _worst_output(log_p, log_q)[0]


def hockey_stick_divergence(p: ArrayLike, q: ArrayLike, epsilon: float, *, log: bool = False) -> float:
    """Return H_ε(p‖q) = Σ_o (p(o) − e^ε·q(o))⁺, in one direction only.

    Evaluated in the stable form Σ_o p(o)·(1 − exp(ε + log q(o) − log p(o)))⁺ with the exponent
    clipped at ±700: outputs with p(o) = 0 contribute 0,
    outputs with q(o) = 0 < p(o) contribute p(o).

    Parameters
    ----------
    p, q : array_like of shape (n_outputs,)
        Distributions (or log-distributions when ``log=True``) over the same finite outputs.
    epsilon : float
        ε >= 0.
    log : bool, default False
        Whether ``p`` and ``q`` are log-probabilities.

    Returns
    -------
    float
        H_ε(p‖q) in [0, 1].
    """
    eps = check_in_interval(epsilon, "epsilon", 0.0, math.inf, closed="left")
    log_p, log_q = _pair(p, q, log)
    return float(_hockey_stick(log_p, log_q, eps))


def _hockey_stick(log_p: ArrayLike, log_q: ArrayLike, eps: float) -> NDArray[np.float64]:
    """H_ε(p‖q) over the last axis, in log space (shapes broadcast)."""
    lp, lq = np.broadcast_arrays(np.asarray(log_p, dtype=np.float64), np.asarray(log_q, dtype=np.float64))
    with np.errstate(invalid="ignore"):
        # exponent x = ε + log q − log p ; the term is p·(1 − eˣ)⁺ = p·(−expm1(x))⁺, 0 where p = 0
        exponent = np.clip(eps + lq - lp, -_EXPONENT_CLIP, _EXPONENT_CLIP)
        terms = np.where(np.isfinite(lp), np.exp(lp) * np.maximum(-np.expm1(exponent), 0.0), 0.0)
    return np.asarray(np.minimum(np.sum(terms, axis=-1), 1.0), dtype=np.float64)


def delta_for_epsilon(p: ArrayLike, q: ArrayLike, epsilon: float, *, log: bool = False) -> float:
    """Return the smallest δ with which p and q are (ε, δ)-indistinguishable in both directions.

    δ(ε) = max(H_ε(p‖q), H_ε(q‖p)) with H_ε(p‖q) = Σ_o (p(o) − e^ε·q(o))⁺ (see
    :func:`hockey_stick_divergence`).

    Parameters
    ----------
    p, q : array_like of shape (n_outputs,)
        Distributions (or log-distributions when ``log=True``) over the same finite outputs.
    epsilon : float
        ε >= 0.
    log : bool, default False
        Whether ``p`` and ``q`` are log-probabilities.

    Returns
    -------
    float
        δ(ε) in [0, 1]; 0 exactly when ε >= :func:`privacy_loss` (p, q).

    Examples
    --------
    Randomized response with flip probability 1/4 at ε = 0: the total-variation distance 1/2.

    >>> from dpbandits.audit.exact import delta_for_epsilon
    >>> delta_for_epsilon([0.75, 0.25], [0.25, 0.75], 0.0)
    0.5
    """
    eps = check_in_interval(epsilon, "epsilon", 0.0, math.inf, closed="left")
    log_p, log_q = _pair(p, q, log)
    return float(np.maximum(_hockey_stick(log_p, log_q, eps), _hockey_stick(log_q, log_p, eps)))


def privacy_loss_batch(log_p: ArrayLike, log_q: ArrayLike) -> NDArray[np.float64]:
    """Pure privacy losses of many pairs at once, over the last axis (log-probabilities only).

    The fast path for *screening* many candidate neighbours: no validation (inputs must already be
    normalised log-probabilities over the same outputs); shapes broadcast. Report the worst
    candidates with :func:`privacy_loss`, which validates.

    Parameters
    ----------
    log_p, log_q : array_like of shape (..., n_outputs)
        Log-probabilities (``-inf`` for 0).

    Returns
    -------
    ndarray of shape (...)
        max_o |log p(o) − log q(o)| per pair (outputs with p = q = 0 ignored).

    Examples
    --------
    >>> import numpy as np
    >>> from dpbandits.audit.exact import privacy_loss_batch
    >>> privacy_loss_batch(np.log([[0.5, 0.5], [0.75, 0.25]]), np.log([0.25, 0.75])).round(4).tolist()
    [0.6931, 1.0986]
    """
    lp, lq = np.broadcast_arrays(np.asarray(log_p, dtype=np.float64), np.asarray(log_q, dtype=np.float64))
    return np.asarray(np.max(_abs_losses(lp, lq), axis=-1), dtype=np.float64)


def delta_for_epsilon_batch(log_p: ArrayLike, log_q: ArrayLike, epsilon: float) -> NDArray[np.float64]:
    """δ(ε) = max(H_ε(p‖q), H_ε(q‖p)) of many pairs at once, over the last axis (log space only).

    The same formula as :func:`delta_for_epsilon`, without validation, for screening many candidate
    neighbours; shapes broadcast.

    Parameters
    ----------
    log_p, log_q : array_like of shape (..., n_outputs)
        Normalised log-probabilities (``-inf`` for 0).
    epsilon : float
        ε >= 0.

    Returns
    -------
    ndarray of shape (...)

    Examples
    --------
    >>> import numpy as np
    >>> from dpbandits.audit.exact import delta_for_epsilon_batch
    >>> delta_for_epsilon_batch(np.log([[0.75, 0.25]]), np.log([0.25, 0.75]), 0.0).tolist()
    [0.5]
    """
    eps = check_in_interval(epsilon, "epsilon", 0.0, math.inf, closed="left")
    return np.asarray(np.maximum(_hockey_stick(log_p, log_q, eps), _hockey_stick(log_q, log_p, eps)),
                      dtype=np.float64)


@dataclass(frozen=True)
class ExactAuditReport:
    """Result of :func:`audit_exact`: the worst neighbouring pair found and whether a claim holds.

    Attributes
    ----------
    max_log_ratio : float
        The largest pure privacy loss max_o |log p(o) − log q(o)| over the pairs (``inf`` if one
        distribution gives 0 to an output the other gives positive mass).
    worst_pair : tuple
        The neighbouring pair (D, D') attaining ``max_log_ratio``.
    worst_pair_index : int
        Its position in the pairs given.
    worst_output : int
        The output index attaining ``max_log_ratio`` in that pair.
    delta_at_epsilon : float
        The largest δ(ε) = max(H_ε(p‖q), H_ε(q‖p)) over the pairs, at the claimed ε.
    worst_delta_pair_index : int
        The position of the pair attaining ``delta_at_epsilon``.
    epsilon, delta : float
        The claim audited.
    tolerance : float
        Slack allowed for floating-point error.
    passed : bool
        Whether the claim holds on every pair: ``max_log_ratio <= ε + tolerance·max(1, ε)`` for a
        pure claim (δ = 0), ``delta_at_epsilon <= δ + tolerance`` otherwise.
    n_pairs : int
        The number of pairs audited.
    """

    max_log_ratio: float
    worst_pair: tuple[Any, Any]
    worst_pair_index: int
    worst_output: int
    delta_at_epsilon: float
    worst_delta_pair_index: int
    epsilon: float
    delta: float
    tolerance: float
    passed: bool
    n_pairs: int

    def __str__(self) -> str:
        verdict = "PASSED" if self.passed else "VIOLATED"
        return (
            f"exact audit of ({self.epsilon:.6g}, {self.delta:.3g})-DP over {self.n_pairs} pairs: "
            f"{verdict}; max log-ratio {self.max_log_ratio:.6g} (pair {self.worst_pair_index}, "
            f"output {self.worst_output}), delta(epsilon) {self.delta_at_epsilon:.3g} "
            f"(pair {self.worst_delta_pair_index})"
        )


def audit_exact(
    distribution: Callable[[Any], ArrayLike],
    neighbour_pairs: Iterable[tuple[Any, Any]],
    epsilon: float,
    delta: float = 0.0,
    tolerance: float = 1e-9,
    *,
    log: bool = False,
) -> ExactAuditReport:
    """Check an (ε, δ)-DP claim exactly over given neighbouring pairs.

    Parameters
    ----------
    distribution : callable
        ``distribution(dataset)`` returns the mechanism's output distribution on ``dataset``: an
        array of probabilities (log-probabilities when ``log=True``) over a fixed finite output
        set, the same set for every dataset.
    neighbour_pairs : iterable of (dataset, dataset)
        The neighbouring pairs to check (both directions of each pair are checked). The claim is
        verified only for these pairs: choose them worst case (see the audit tests for examples).
    epsilon : float
        The claimed ε > 0.
    delta : float, default 0
        The claimed δ in [0, 1); 0 audits pure ε-DP.
    tolerance : float, default 1e-9
        Slack for floating-point error: relative on ε (``ε + tolerance·max(1, ε)``), absolute on δ.
    log : bool, default False
        Whether ``distribution`` returns log-probabilities.

    Returns
    -------
    ExactAuditReport
        The worst pair, its loss and δ(ε), and whether the claim holds on every pair.

    Raises
    ------
    InvalidParameterError
        If no pair is given, a parameter is out of range, or ``distribution`` returns something
        that is not a distribution over the common output set.

    Examples
    --------
    Randomized response that keeps the bit with probability 3/4 is ln 3-DP, and not 1-DP:

    >>> import math
    >>> from dpbandits.audit.exact import audit_exact
    >>> rr = lambda bit: [0.75, 0.25] if bit == 0 else [0.25, 0.75]
    >>> audit_exact(rr, [(0, 1)], epsilon=math.log(3)).passed
    True
    >>> audit_exact(rr, [(0, 1)], epsilon=1.0).passed
    False
    """
    eps = check_epsilon(epsilon)
    dlt = check_in_interval(delta, "delta", 0.0, 1.0, closed="left")
    tol = check_in_interval(tolerance, "tolerance", 0.0, math.inf, closed="left")
    if not callable(distribution):
        raise InvalidParameterError(f"distribution must be callable; got {type(distribution).__name__}")
    pairs = list(neighbour_pairs)
    if not pairs:
        raise InvalidParameterError("neighbour_pairs must not be empty; got 0 pairs")

    max_loss, worst_index, worst_output = -math.inf, 0, 0
    max_delta, worst_delta_index = -math.inf, 0
    for index, pair in enumerate(pairs):
        if not isinstance(pair, tuple | list) or len(pair) != 2:
            raise InvalidParameterError(
                f"neighbour_pairs[{index}] must be a pair (dataset, dataset); got {pair!r}"
            )
        log_p, log_q = _pair(distribution(pair[0]), distribution(pair[1]), log)
        loss, output = _worst_output(log_p, log_q)
        if loss > max_loss:
            max_loss, worst_index, worst_output = loss, index, output
        pair_delta = float(np.maximum(_hockey_stick(log_p, log_q, eps), _hockey_stick(log_q, log_p, eps)))
        if pair_delta > max_delta:
            max_delta, worst_delta_index = pair_delta, index

    # pure claim: L <= ε (up to float slack); approximate claim: δ(ε) <= δ
    passed = max_loss <= eps + tol * max(1.0, eps) if dlt == 0.0 else max_delta <= dlt + tol
    first, second = pairs[worst_index]
    return ExactAuditReport(
        max_log_ratio=max_loss,
        worst_pair=(first, second),
        worst_pair_index=worst_index,
        worst_output=worst_output,
        delta_at_epsilon=max_delta,
        worst_delta_pair_index=worst_delta_index,
        epsilon=eps,
        delta=dlt,
        tolerance=tol,
        passed=bool(passed),
        n_pairs=len(pairs),
    )


class ContinuousDistribution(Protocol):
    """A one-dimensional distribution with log-CDF, log-survival function and median (scipy's)."""

    def logcdf(self, x: Any) -> Any:
        """Return log P[X <= x]."""

    def logsf(self, x: Any) -> Any:
        """Return log P[X > x]."""

    def median(self) -> Any:
        """Return the median."""


def interval_log_probabilities(distribution: ContinuousDistribution, edges: ArrayLike) -> NDArray[np.float64]:
    """Return log P[X ∈ (e_i, e_{i+1}]] for consecutive edges, accurate far into both tails.

    Below the median the difference of CDFs is formed from ``logcdf`` and above it from ``logsf``:
    log(F(b) − F(a)) = log F(b) + log1p(−exp(log F(a) − log F(b))), so interval masses of 10⁻³⁰⁰
    keep full relative precision. With first edge −∞ and last edge +∞ the intervals partition the
    line and the result is a distribution over intervals, ready for :func:`audit_exact`
    (``log=True``).

    Parameters
    ----------
    distribution : frozen scipy.stats distribution (or anything with logcdf, logsf, median)
        The output distribution of a one-dimensional continuous mechanism on one dataset.
    edges : array_like of shape (n_edges,)
        Strictly increasing interval edges, ``n_edges >= 2``; ±inf allowed at the ends.

    Returns
    -------
    ndarray of shape (n_edges - 1,)
        Log-probabilities of the intervals (e_i, e_{i+1}].

    Examples
    --------
    >>> import math
    >>> import numpy as np
    >>> import scipy.stats
    >>> from dpbandits.audit.exact import interval_log_probabilities
    >>> lp = interval_log_probabilities(scipy.stats.laplace(), [-math.inf, 0.0, math.inf])
    >>> bool(np.allclose(np.exp(lp), [0.5, 0.5]))
    True
    """
    e = check_array(edges, "edges", ndim=1, finite=False)
    if e.size < 2 or np.isnan(e).any() or not np.all(np.diff(e) > 0):
        raise InvalidParameterError(
            f"edges must be a strictly increasing 1-d array of >= 2 numbers; got {e!r}"
        )
    low, high = e[:-1], e[1:]
    median = float(distribution.median())
    log_cdf_low = np.asarray(distribution.logcdf(low), dtype=np.float64)
    log_cdf_high = np.asarray(distribution.logcdf(high), dtype=np.float64)
    log_sf_low = np.asarray(distribution.logsf(low), dtype=np.float64)
    log_sf_high = np.asarray(distribution.logsf(high), dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        # below the median: log(F(b) − F(a)) = log F(b) + log1p(−F(a)/F(b))
        from_cdf = log_cdf_high + np.log1p(-np.exp(log_cdf_low - log_cdf_high))
        # above the median: log(S(a) − S(b)) = log S(a) + log1p(−S(b)/S(a))
        from_sf = log_sf_low + np.log1p(-np.exp(log_sf_high - log_sf_low))
    use_sf = low >= median
    out = np.where(use_sf, from_sf, from_cdf)
    # both forms are −inf exactly when the interval has no mass (NaN only from −inf − −inf)
    out[np.isnan(out)] = -np.inf
    return np.asarray(out, dtype=np.float64)


@dataclass(frozen=True)
class LaplaceDistribution:
    """Laplace(loc, scale) with log-CDF and log-survival function exact in both tails.

    ``scipy.stats.laplace`` forms log(cdf) and underflows to −inf beyond about 745 scales; this
    closed form does not, so discretised Laplace mechanisms can be audited arbitrarily far out
    (with :func:`interval_log_probabilities`).

    Parameters
    ----------
    loc : float
        μ, the centre (the mechanism's true answer).
    scale : float
        b > 0 (density ∝ exp(−|x − μ|/b)).

    Examples
    --------
    >>> from dpbandits.audit.exact import LaplaceDistribution
    >>> float(LaplaceDistribution(0.0, 1.0).logcdf(-1000.0))
    -1000.6931471805599
    """

    loc: float
    scale: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "loc", check_finite_float(self.loc, "loc"))
        object.__setattr__(self, "scale", check_positive_float(self.scale, "scale"))

    def logcdf(self, x: ArrayLike) -> NDArray[np.float64]:
        """Return log P[X <= x]: log(½) + z for z = (x − μ)/b <= 0, log1p(−½·e^−z) above."""
        z = (np.asarray(x, dtype=np.float64) - self.loc) / self.scale
        with np.errstate(over="ignore"):
            lower = math.log(0.5) + np.minimum(z, 0.0)
            upper = np.log1p(-0.5 * np.exp(-np.maximum(z, 0.0)))
        return np.asarray(np.where(z <= 0.0, lower, upper), dtype=np.float64)

    def logsf(self, x: ArrayLike) -> NDArray[np.float64]:
        """Return log P[X > x] (by symmetry, the log-CDF at 2μ − x)."""
        return self.logcdf(2.0 * self.loc - np.asarray(x, dtype=np.float64))

    def median(self) -> float:
        """Return μ."""
        return self.loc
