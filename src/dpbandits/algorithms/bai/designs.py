"""Experimental designs on a finite set of public feature vectors.

* :func:`reduce_dimension` — coordinates of the active arms in an orthonormal basis of their span (eq. 9).
* :func:`max_det_collection` — a Max-Det collection (Definition 3.1 of Chen et al. 2024): ``k`` of the
  ``n`` vectors spanning R^k with the largest |det|, exactly by enumeration or by greedy (pivoted
  Gram–Schmidt) initialisation plus 1-swap refinement until every coefficient |α| <= 1 + τ.
* :func:`extrapolation_coefficients` — α with Σ_j α_{i,j} b_j = a_i (eq. 12).
* :func:`g_optimal_design` — a G-optimal design (Kiefer–Wolfowitz) by Frank–Wolfe with away steps,
  followed by Carathéodory support reduction to at most k(k+1)/2 points.

Everything here is a deterministic function of public features: privacy never depends on it.
"""

from __future__ import annotations

import itertools
import math
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from dpbandits._core.errors import InvalidParameterError, NumericsWarning
from dpbandits._core.typing import FloatArray, IntArray
from dpbandits._core.validation import check_array, check_one_of

__all__ = [
    "MAXDET_METHODS",
    "GOptimalDesign",
    "extrapolation_coefficients",
    "g_optimal_design",
    "max_det_collection",
    "reduce_dimension",
]

MAXDET_METHODS = ("auto", "exact", "dominant")
_EXACT_LIMIT = 200_000  # N_exact: enumerate when C(n, k) <= this
_EXACT_CHUNK = 20_000
_CACHE_SIZE = 512
# Designs are deterministic functions of the points: remember the latest ones (keyed by the points'
# bytes), so repeated simulations of one instance (one study cell per chunk) reuse them.
_CACHE: dict[tuple[object, ...], Any] = {}


def _remember(key: tuple[object, ...], value: Any) -> None:
    if len(_CACHE) >= _CACHE_SIZE:
        _CACHE.pop(next(iter(_CACHE)))
    _CACHE[key] = value


def reduce_dimension(points: ArrayLike, *, rtol: float | None = None) -> tuple[FloatArray, int]:
    """Return the points' coordinates in an orthonormal basis of their span, and its dimension.

    Parameters
    ----------
    points : array_like, shape (n, k)
        One point per row.
    rtol : float, optional
        Singular values below ``rtol · σ_max`` count as zero; default max(n, k)·2.2e-16·10³
        (slightly looser than NumPy's default to absorb round-off of earlier rotations).

    Returns
    -------
    coordinates : ndarray, shape (n, r)
        The input unchanged when it already has full column rank r = k (no rotation), else
        X·V[:, :r] with V the right singular vectors.
    rank : int
        r, the numerical rank (0 when every point is 0).
    """
    x = check_array(points, "points", ndim=2)
    n, k = x.shape
    if n == 0 or k == 0:
        return x.reshape(n, 0), 0
    _, sigma, vt = np.linalg.svd(x, full_matrices=False)
    tol = (max(n, k) * 2.2e-16 * 1e3 if rtol is None else rtol) * (sigma[0] if sigma.size else 0.0)
    rank = int(np.sum(sigma > tol))
    if rank == k:
        return x, k
    return x @ vt[:rank].T, rank


def _abs_dets(columns: FloatArray, subsets: IntArray) -> FloatArray:
    """|det| of the k×k matrices whose columns are ``columns[:, subset]`` for every subset row."""
    mats = np.transpose(columns[:, subsets], (1, 0, 2))  # (n_subsets, k, k)
    return np.abs(np.linalg.det(mats))


def _exact_max_det(columns: FloatArray) -> IntArray:
    k, n = columns.shape
    best_value, best_subset = -1.0, np.arange(k)
    combos = itertools.combinations(range(n), k)
    while True:
        chunk = np.array(list(itertools.islice(combos, _EXACT_CHUNK)), dtype=np.int64).reshape(-1, k)
        if chunk.shape[0] == 0:
            break
        dets = _abs_dets(columns, chunk)
        # ties resolve to the lexicographically smallest subset: a later subset must beat the best
        # by a relative factor > 1 + 1e-12
        top = float(dets.max())
        if top > best_value * (1.0 + 1e-12):
            first = int(np.flatnonzero(dets * (1.0 + 1e-12) >= top)[0])
            best_value, best_subset = float(dets[first]), chunk[first]
    return np.asarray(best_subset, dtype=np.int64)


def _dominant_max_det(columns: FloatArray, tol: float) -> IntArray:
    k, n = columns.shape
    residual = columns.copy()
    chosen: list[int] = []
    for _ in range(k):  # greedy: pivoted Gram–Schmidt, Det >= Det_max / k!
        norms = np.einsum("ij,ij->j", residual, residual)
        norms[chosen] = -1.0
        j = int(np.argmax(norms))
        chosen.append(j)
        q = residual[:, j] / math.sqrt(norms[j])
        residual -= np.outer(q, q @ residual)
    basis = np.array(chosen, dtype=np.int64)
    max_swaps = 100 * k * n
    for _ in range(max_swaps):  # 1-swap refinement: each swap multiplies Det by |C_{j*,i*}| > 1 + τ
        coeffs = np.linalg.solve(columns[:, basis], columns)  # C = B⁻¹Y, C_{j,i} = α_{i,j}
        flat = int(np.argmax(np.abs(coeffs)))
        j_star, i_star = divmod(flat, n)
        if abs(coeffs[j_star, i_star]) <= 1.0 + tol:
            return basis
        basis[j_star] = i_star
    warnings.warn(f"Max-Det swap refinement stopped after {max_swaps} swaps without converging",
                  NumericsWarning, stacklevel=3)
    return basis


def max_det_collection(points: ArrayLike, *, method: str = "auto", tol: float = 1e-9) -> IntArray:
    """Return the indices of a Max-Det collection of ``points`` (Definition 3.1).

    Parameters
    ----------
    points : array_like, shape (n, k)
        One point per row; they must span R^k (use :func:`reduce_dimension` first).
    method : {"auto", "exact", "dominant"}
        ``"exact"`` enumerates all C(n, k) subsets in lexicographic order (ties: the
        lexicographically smallest). ``"dominant"`` is greedy + 1-swap local search, which stops at
        a collection whose extrapolation coefficients all satisfy |α| <= 1 + ``tol`` — the only
        property of Max-Det that Theorem 4.2 uses (Lemma G.1). ``"auto"``: exact when
        C(n, k) <= 200 000, else dominant.
    tol : float, default 1e-9
        τ of the swap refinement.

    Returns
    -------
    ndarray of int, shape (k,)
        Sorted indices into ``points``.

    Raises
    ------
    InvalidParameterError
        If the points do not span R^k.

    Examples
    --------
    >>> from dpbandits.algorithms.bai.designs import max_det_collection
    >>> max_det_collection([[0, 1], [0, 0.9], [10, 0], [1, 0.5]]).tolist()
    [0, 2]
    """
    check_one_of(method, "method", MAXDET_METHODS)
    x = check_array(points, "points", ndim=2)
    key = ("max-det", x.shape, x.tobytes(), method, float(tol))
    if key in _CACHE:
        return _CACHE[key].copy()
    n, k = x.shape
    if k == 0 or np.linalg.matrix_rank(x) < k:
        raise InvalidParameterError(
            f"points must span R^k (k={k}); got rank {int(np.linalg.matrix_rank(x)) if k else 0}"
        )
    if method == "exact" or (method == "auto" and math.comb(n, k) <= _EXACT_LIMIT):
        subset = _exact_max_det(x.T)
    else:
        subset = _dominant_max_det(x.T, tol)
    result = np.sort(subset)
    _remember(key, result)
    return result.copy()


def extrapolation_coefficients(points: ArrayLike, basis: ArrayLike) -> FloatArray:
    """Return α (n, k) with ``points[i] = Σ_j α[i, j] · points[basis[j]]`` (eq. 12, Cramer's rule).

    Parameters
    ----------
    points : array_like, shape (n, k)
    basis : array_like of int, shape (k,)
        Indices of k points spanning R^k (a Max-Det collection).
    """
    x = check_array(points, "points", ndim=2)
    b = np.asarray(basis, dtype=np.int64)
    return np.asarray(np.linalg.solve(x[b].T, x.T).T, dtype=np.float64)


@dataclass(frozen=True)
class GOptimalDesign:
    """A G-optimal design π on n points of R^k.

    Attributes
    ----------
    weights : ndarray, shape (n,)
        π, a probability vector with at most k(k+1)/2 positive entries.
    g_value : float
        g(π) = max_i x_iᵀ V(π)⁻¹ x_i, within (1 + tol)·k of the optimum k.
    support : ndarray of int
        Indices with π_i > 0, ascending.
    """

    weights: FloatArray
    g_value: float
    support: IntArray


def _leverages(x: FloatArray, weights: FloatArray) -> FloatArray:
    gram = (x * weights[:, None]).T @ x  # V(π) = Σ π_i x_i x_iᵀ
    solved = np.linalg.solve(gram, x.T)
    return np.asarray(np.einsum("ij,ji->i", x, solved), dtype=np.float64)  # w_i = x_iᵀ V⁻¹ x_i


def _reduce_support(x: FloatArray, weights: FloatArray) -> FloatArray:
    k = x.shape[1]
    limit = k * (k + 1) // 2
    rows, cols = np.triu_indices(k)
    pi = weights.copy()
    while np.count_nonzero(pi) > limit:
        support = np.flatnonzero(pi)
        # Φ = [vech(x_i x_iᵀ)]_{i∈S}; any c in ker Φ keeps V(π) proportional
        phi = (x[support][:, rows] * x[support][:, cols]).T
        c = np.linalg.svd(phi)[2][-1]
        if c.sum() < 0:
            c = -c
        positive = c > 1e-15
        if not np.any(positive):
            c = -c
            positive = c > 1e-15
        ratios = np.where(positive, pi[support] / np.where(positive, c, 1.0), np.inf)
        drop = int(np.argmin(ratios))
        step = ratios[drop]
        pi[support] = np.maximum(pi[support] - step * c, 0.0)
        pi[support[drop]] = 0.0
        pi /= pi.sum()
    return pi


def g_optimal_design(points: ArrayLike, *, tol: float = 1e-7, max_iter: int = 100_000) -> GOptimalDesign:
    """Compute a G-optimal design by Frank–Wolfe (Fedorov–Wynn) with away steps.

    Minimising g(π) = max_i x_iᵀ V(π)⁻¹ x_i is equivalent to maximising log det V(π)
    (Kiefer–Wolfowitz); the optimum has g = k and a support of at most k(k+1)/2 points.

    Parameters
    ----------
    points : array_like, shape (n, k)
        Points spanning R^k.
    tol : float, default 1e-7
        η: stop when max_i w_i <= (1 + η)·k.
    max_iter : int, default 100 000

    Returns
    -------
    GOptimalDesign

    References
    ----------
    Todd & Yıldırım (2007), "On Khachiyan's algorithm for the computation of minimum-volume
    enclosing ellipsoids" (Wolfe–Atwood away steps); Kiefer & Wolfowitz (1960).

    Examples
    --------
    >>> from dpbandits.algorithms.bai.designs import g_optimal_design
    >>> design = g_optimal_design([[0, 1], [0, 0.9], [10, 0], [1, 0.5]])
    >>> design.support.tolist(), round(design.g_value, 6)
    ([0, 2], 2.0)
    """
    x = check_array(points, "points", ndim=2)
    key = ("g-optimal", x.shape, x.tobytes(), float(tol), int(max_iter))
    if key in _CACHE:
        cached: GOptimalDesign = _CACHE[key]
        return cached
    design = _g_optimal_design(x, tol, max_iter)
    _remember(key, design)
    return design


def _g_optimal_design(x: FloatArray, tol: float, max_iter: int) -> GOptimalDesign:
    n, k = x.shape
    if k == 0 or np.linalg.matrix_rank(x) < k:
        raise InvalidParameterError(f"points must span R^k (k={k}) for a G-optimal design")
    if k == 1:
        pi = np.zeros(n)
        pi[int(np.argmax(np.abs(x[:, 0])))] = 1.0
        return _frozen_design(x, pi)
    pi = np.full(n, 1.0 / n)
    for _ in range(max_iter):
        w = _leverages(x, pi)
        j_plus = int(np.argmax(w))
        positive = np.flatnonzero(pi > 0)
        j_minus = int(positive[np.argmin(w[positive])])
        gap_plus = w[j_plus] / k - 1.0  # ε⁺ = w_{j⁺}/k − 1
        gap_minus = 1.0 - w[j_minus] / k  # ε⁻ = 1 − w_{j⁻}/k
        if gap_plus <= tol:
            break
        if gap_plus >= gap_minus:
            # toward step, exact line search for log det: γ = (w − k) / (k (w − 1))
            gamma = (w[j_plus] - k) / (k * (w[j_plus] - 1.0))
            pi *= 1.0 - gamma
            pi[j_plus] += gamma
        else:
            wm = w[j_minus]
            u = (k - wm) / (wm * (k - 1)) if wm > 1.0 else math.inf
            gamma = u / (1.0 - u) if u < 1.0 else math.inf
            cap = pi[j_minus] / (1.0 - pi[j_minus])
            if gamma >= cap:  # drop step
                pi *= 1.0 + cap
                pi[j_minus] = 0.0
            else:
                pi *= 1.0 + gamma
                pi[j_minus] -= gamma
            pi = np.maximum(pi, 0.0)
            pi /= pi.sum()
    else:
        warnings.warn(f"G-optimal design did not reach tol={tol} in {max_iter} iterations",
                      NumericsWarning, stacklevel=2)
    pi[pi < 1e-12] = 0.0
    pi /= pi.sum()
    pi = _reduce_support(x, pi)
    return _frozen_design(x, pi)


def _frozen_design(x: FloatArray, pi: FloatArray) -> GOptimalDesign:
    support = np.flatnonzero(pi)
    pi.setflags(write=False)  # designs are cached and shared: read-only
    support.setflags(write=False)
    return GOptimalDesign(pi, float(np.max(_leverages(x, pi))), support)
