"""USCA's covariance-approximation surrogate: μ̄_T and σ̄² (eqs. 4–5), exact and feature backends.

With an approximating set 𝒵 = (z₁, …, z_M) drawn from ϱ = Unif(X) ⊗ κ (data-independent coins),

    Z̃ = (T/M)·Σᵢ φ(zᵢ)φ(zᵢ)ᵀ + τ·Id,   μ̄_T(w) = φ(w)ᵀ Z̃⁻¹ Σₜ φ(wₜ)yₜ,   σ̄²(w) = φ(w)ᵀ Z̃⁻¹ φ(w).

The paper's M = T·K gives the factor 1/K (Lemma 4.4); another M is the flagged "T/M" deviation.
Two backends compute the same quantities:

* :class:`ExactKernelSurrogate` — the kernel-trick form (eqs. 4–5 with regulariser (M/T)·τ = Kτ),
  an M × M Cholesky factor: O(M²) memory (:func:`exact_kernel_peak_bytes`), only for small T and
  as the reference in tests.
* :class:`FeatureSurrogate` — the feature form for a data-independent feature map φ: a
  D_f × D_f Cholesky factor accumulated by streaming over 𝒵 in blocks; memory O(D_f²) independent
  of T and M.

The Gram sum G = Σᵢ φ(zᵢ)φ(zᵢ)ᵀ is the one expensive step of the feature backend (O(M·D_f²), M ≈
T²/γ_T). It does not depend on ε, so :func:`accumulate_feature_gram` keeps the last results in a
small in-process cache, **keyed by content**: a hash of every point of 𝒵 and of the feature map's
parameters (:meth:`ApproximatingSet.fingerprint`, ``feature_map.fingerprint()``). Runs that share
coins — USCA at several ε, or its variants, at the same grid point and trial of a study — then
build G once; a cached G is exactly the G that would be recomputed, so results do not change.

Both expose ``variance(points)``, ``min_eigenvalue`` (a λ > 0 with Z̃ ≽ λ·Id), ``max_diag`` and
``distance_bound(r)``, which is what the
certified supremum (:mod:`dpbandits.algorithms.kernel.sup_bound`) needs.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Protocol

import numpy as np
from numpy.typing import ArrayLike
from scipy import linalg

from dpbandits._core.errors import InvalidParameterError
from dpbandits._core.resources import check_fits
from dpbandits._core.rng import RNGLike, as_generator, as_seed_sequence, spawn_seed_sequences
from dpbandits._core.typing import FloatArray
from dpbandits._core.validation import check_int, check_one_of, check_positive_float
from dpbandits.algorithms.kernel.features import FeatureMap

__all__ = [
    "BYTES_PER_BLOCK_SEED",
    "DEFAULT_BLOCK_SIZE",
    "EXACT_WORK_ARRAYS",
    "PRECISIONS",
    "ApproximatingSet",
    "ContextGenerator",
    "ExactKernelSurrogate",
    "FeatureSurrogate",
    "KernelFunction",
    "accumulate_feature_gram",
    "clear_gram_cache",
    "exact_kernel_peak_bytes",
    "exact_query_chunk",
]

DEFAULT_BLOCK_SIZE = 16_384
GRAM_CACHE_BYTES = 128 * 2**20
"""Memory budget of the in-process cache of Gram sums (least recently used entries are evicted)."""
PRECISIONS = ("float64", "float32")
ContextGenerator = Callable[[int, np.random.Generator], FloatArray]
"""``generator(size, rng) -> contexts`` of shape (size, dc): draws from κ (Assumption 2.10)."""


class KernelFunction(Protocol):
    """A positive-definite kernel as the exact backend uses it."""

    def __call__(self, a: ArrayLike, b: ArrayLike | None = None) -> FloatArray:
        """Gram matrix [k(aᵢ, bⱼ)]."""
        ...

    def diag(self, a: ArrayLike) -> FloatArray:
        """k(w, w) for each row."""
        ...

    @property
    def max_diag(self) -> float:
        """sup_w k(w, w)."""
        ...

    def distance_bound(self, radius: ArrayLike) -> FloatArray:
        """ρ_k(r) >= sup_{‖w − g‖ <= r} ‖φ(w) − φ(g)‖_H."""
        ...


BYTES_PER_BLOCK_SEED = 300.0
"""Memory of one block's SeedSequence, a lower bound (measured 368 B with ``tracemalloc``)."""


class ApproximatingSet:
    """The approximating set zᵢ = (x̃ᵢ, c̃ᵢ), x̃ᵢ ~ Unif[0, 1]^dx, c̃ᵢ ~ κ via the context generator.

    Points are produced in blocks of ``block_size``; block b is drawn from the b-th child of ``rng``
    (``SeedSequence.spawn``), so the set does not depend on how a consumer chunks it, and it never
    has to be held in memory at once.

    Parameters
    ----------
    size : int
        M >= 1.
    action_dim : int
        dx.
    context_generator : callable
        ``generator(size, rng) -> (size, dc)`` contexts from κ.
    rng : int, SeedSequence, Generator or None
        The approximating-set stream.
    block_size : int, default 16384
    size_name : str, default "approx_size"
        The parameter that set ``size``, named when the set's block seeds cannot fit in memory
        (:data:`BYTES_PER_BLOCK_SEED` each).
    """

    def __init__(
        self,
        size: int,
        action_dim: int,
        context_generator: ContextGenerator,
        rng: RNGLike,
        block_size: int = DEFAULT_BLOCK_SIZE,
        *,
        size_name: str = "approx_size",
    ) -> None:
        self.size = check_int(size, size_name, minimum=1)
        self.action_dim = check_int(action_dim, "action_dim", minimum=1)
        self.block_size = check_int(block_size, "block_size", minimum=1)
        self._context_generator = context_generator
        n_blocks = -(-self.size // self.block_size)
        check_fits(size_name, self.size, BYTES_PER_BLOCK_SEED * n_blocks,
                   what=f"the seeds of an approximating set of {self.size} points ({n_blocks} blocks)")
        self._block_seeds = spawn_seed_sequences(as_seed_sequence(rng), n_blocks)
        self._fingerprint: str | None = None

    def blocks(self) -> Iterator[FloatArray]:
        """Yield the points block by block, each of shape (≤ block_size, D)."""
        for b, seed in enumerate(self._block_seeds):
            n = min(self.block_size, self.size - b * self.block_size)
            gen = as_generator(seed)
            actions = gen.random((n, self.action_dim))
            contexts = np.asarray(self._context_generator(n, gen), dtype=np.float64).reshape(n, -1)
            yield np.concatenate([actions, contexts], axis=1)

    def points(self) -> FloatArray:
        """All M points, shape (M, D) (O(M) memory)."""
        return np.concatenate(list(self.blocks()), axis=0)

    def fingerprint(self) -> str:
        """A BLAKE2b hash of every point (in order) and of the shape: equal hashes mean equal sets.

        Computed once, streaming over the blocks (about 0.2 s per 10⁷ points).
        """
        if self._fingerprint is None:
            digest = hashlib.blake2b(f"{self.size},{self.action_dim}".encode(), digest_size=20)
            for block in self.blocks():
                digest.update(np.ascontiguousarray(block, dtype=np.float64).tobytes())
            self._fingerprint = digest.hexdigest()
        return self._fingerprint


_GRAM_CACHE: OrderedDict[tuple[str, str, int, str], FloatArray] = OrderedDict()


def clear_gram_cache() -> None:
    """Empty the in-process cache of :func:`accumulate_feature_gram`."""
    _GRAM_CACHE.clear()


def accumulate_feature_gram(
    feature_map: FeatureMap,
    approx_set: ApproximatingSet,
    chunk_size: int = 8192,
    precision: str = "float64",
    *,
    cache: bool = True,
) -> FloatArray:
    """G = Σᵢ φ(zᵢ)φ(zᵢ)ᵀ (D_f × D_f), streamed over 𝒵 in chunks of ``chunk_size``.

    Memory is O(D_f² + chunk_size·D_f), independent of M. The result depends on ``chunk_size`` only
    through floating-point summation order.

    Parameters
    ----------
    feature_map : FeatureMap
    approx_set : ApproximatingSet
    chunk_size : int, default 8192
    precision : {"float64", "float32"}, default "float64"
        ``"float32"`` computes features and each chunk's product in float32 and accumulates the
        chunks in float64 (several times faster). Privacy does not depend on it: any
        data-independent Z̃ ≽ τ·I gives the same sensitivity argument, provided σ̄², μ̄ and the
        certified bound all use the same Z̃; only utility sees the rounding.
    cache : bool, default True
        Look G up in (and store it into) the in-process cache, keyed by the content hash of 𝒵, the
        feature map's ``fingerprint()``, ``chunk_size`` and ``precision`` (see the module
        docstring). Feature maps without a ``fingerprint`` method are never cached. The cache holds
        at most :data:`GRAM_CACHE_BYTES`; a hit returns a copy.
    """
    chunk = check_int(chunk_size, "chunk_size", minimum=1)
    precision = check_one_of(precision, "precision", PRECISIONS)
    fingerprint = getattr(feature_map, "fingerprint", None)
    key = None
    if cache and callable(fingerprint):
        key = (str(fingerprint()), approx_set.fingerprint(), chunk, precision)
        if key in _GRAM_CACHE:
            _GRAM_CACHE.move_to_end(key)
            return _GRAM_CACHE[key].copy()
    dtype = np.float32 if precision == "float32" else np.float64
    gram = np.zeros((feature_map.dim, feature_map.dim), dtype=np.float64)
    for block in approx_set.blocks():
        for start in range(0, block.shape[0], chunk):
            phi = feature_map.transform(block[start : start + chunk], dtype=dtype)
            # G ← G + φᵀφ  (accumulated in float64 across chunks)
            gram += phi.T @ phi
    # exact symmetry (the two triangles of φᵀφ can differ in the last bit)
    gram = np.asarray(0.5 * (gram + gram.T))
    if key is not None and gram.nbytes <= GRAM_CACHE_BYTES:
        _GRAM_CACHE[key] = gram.copy()
        while sum(entry.nbytes for entry in _GRAM_CACHE.values()) > GRAM_CACHE_BYTES:
            _GRAM_CACHE.popitem(last=False)
    return gram


class FeatureSurrogate:
    """Feature-space form: Z̃ = (T/M)·G + τ·I_{D_f} with G = Σᵢ φ(zᵢ)φ(zᵢ)ᵀ, Z̃ = L Lᵀ.

    Parameters
    ----------
    feature_map : FeatureMap
        Data-independent φ.
    gram_sum : array_like of shape (D_f, D_f)
        G (from :func:`accumulate_feature_gram`).
    approx_size : int
        M.
    horizon : int
        T.
    tau : float
        τ > 0.
    """

    def __init__(
        self, feature_map: FeatureMap, gram_sum: ArrayLike, approx_size: int, horizon: int, tau: float
    ) -> None:
        self.feature_map = feature_map
        self.tau = check_positive_float(tau, "tau")
        approx_size = check_int(approx_size, "approx_size", minimum=1)
        horizon = check_int(horizon, "horizon", minimum=1)
        gram = np.asarray(gram_sum, dtype=np.float64)
        if gram.shape != (feature_map.dim, feature_map.dim):
            raise InvalidParameterError(
                f"gram_sum must have shape ({feature_map.dim}, {feature_map.dim}); got {gram.shape}"
            )
        # Z̃ = (T/M)·Σ φφᵀ + τ·I   (T/M = 1/K when M = T·K)
        z_tilde = (horizon / approx_size) * gram + self.tau * np.eye(feature_map.dim)
        # The certified sup needs Z̃ ≽ λ·I for the matrix actually used; rounding in G can make
        # λ_min(Z̃) a hair below τ, so take λ = min(τ, λ_min − rounding margin).
        eigenvalues = np.linalg.eigvalsh(z_tilde)
        self.min_eigenvalue = float(min(self.tau, eigenvalues[0] - 1e-12 * abs(eigenvalues[-1])))
        if not self.min_eigenvalue > 0.0:
            raise InvalidParameterError(f"Z~ must be positive definite; got min eigenvalue {eigenvalues[0]!r}")
        self._chol = linalg.cholesky(z_tilde, lower=True)

    @property
    def max_diag(self) -> float:
        """sup_w k_D(w, w) (bound from the feature map)."""
        return self.feature_map.max_diag

    def distance_bound(self, radius: ArrayLike) -> FloatArray:
        """ρ_{k_D}(r) from the feature map."""
        return self.feature_map.distance_bound(radius)

    def variance(self, points: ArrayLike) -> FloatArray:
        """σ̄²(w) = ‖L⁻¹φ(w)‖² at points (n, D)."""
        phi = self.feature_map.transform(points)
        half = linalg.solve_triangular(self._chol, phi.T, lower=True, check_finite=False)
        return np.asarray(np.einsum("ij,ij->j", half, half))

    def reward_vector(self, points: ArrayLike, rewards: ArrayLike, chunk_size: int = 8192) -> FloatArray:
        """Return b = Σₜ φ(wₜ)·yₜ, ``chunk_size`` points at a time (the same arithmetic for the same rows)."""
        w = np.atleast_2d(np.asarray(points, dtype=np.float64))
        y = np.asarray(rewards, dtype=np.float64)
        b = np.zeros(self.feature_map.dim)
        for start in range(0, w.shape[0], chunk_size):
            b += self.feature_map.transform(w[start : start + chunk_size]).T @ y[start : start + chunk_size]
        return b

    def coefficients(self, reward_vector: ArrayLike) -> FloatArray:
        """θ̄ = Z̃⁻¹ b, so that μ̄_T(w) = φ(w)ᵀθ̄."""
        return np.asarray(linalg.cho_solve((self._chol, True), np.asarray(reward_vector), check_finite=False))

    def mean(self, coefficients: ArrayLike, points: ArrayLike) -> FloatArray:
        """μ̄_T(w) = φ(w)ᵀθ̄ at points (n, D)."""
        return np.asarray(self.feature_map.transform(points) @ np.asarray(coefficients))


EXACT_WORK_ARRAYS = 6
"""Work arrays of shape (q, M + T) the exact backend holds at once, at most (kernel temporaries included)."""
_MIN_QUERY_CHUNK = 256


def exact_query_chunk(approx_size: int) -> int:
    """The exact backend's chunk q = max(256, ⌈M/16⌉): it handles query points (and Gram rows) q at a time."""
    return max(_MIN_QUERY_CHUNK, -(-check_int(approx_size, "approx_size", minimum=1) // 16))


def exact_kernel_peak_bytes(approx_size: int, horizon: int) -> int:
    """The exact backend's documented peak memory: 8·M² + 8·6·q·(M + T) bytes, q = max(256, ⌈M/16⌉).

    8·M² bytes hold the Cholesky factor of A = K_𝒵𝒵 + (M/T)·τ·I (built row block by row block
    and factorised in place); everything else is processed in chunks of q query points (or Gram
    rows), each needing at most :data:`EXACT_WORK_ARRAYS` arrays of q × (M + T) float64 values (the
    kernel's temporaries, the triangular solve, the products). For large M the total is about
    11·M² bytes; for small M the q >= 256 floor dominates. The learning data (O(T·D)) and the
    approximating points (O(M·D)) are small next to it. This is what ``USCA(max_exact_size=…)``
    refers to, and what tests/unit/test_usca_memory.py measures.

    Parameters
    ----------
    approx_size : int
        M.
    horizon : int
        T.
    """
    m = check_int(approx_size, "approx_size", minimum=1)
    t = check_int(horizon, "horizon", minimum=1)
    return 8 * m * m + 8 * EXACT_WORK_ARRAYS * exact_query_chunk(m) * (m + t)


class ExactKernelSurrogate:
    """Kernel-trick form (Lemma 3.1 / eqs. 4–5) with A = K_𝒵𝒵 + (M/T)·τ·I_M = L Lᵀ.

    σ̄²(w) = (k(w, w) − ‖L⁻¹k_𝒵(w)‖²)/τ ;
    μ̄_T(w) = (k_W(w)ᵀY − k_𝒵(w)ᵀ A⁻¹ K_𝒵W Y)/τ.

    Memory is O(M²): the factor L takes 8·M² bytes (A is built in place, q rows at a time, and
    factorised in place), and query points are handled q = :func:`exact_query_chunk` at a time,
    so the peak is :func:`exact_kernel_peak_bytes` (about 11·M² bytes for large M). Use it for small
    T (M up to about 10⁴) and as the reference.

    Parameters
    ----------
    kernel : KernelFunction
    approx_points : array_like of shape (M, D)
    horizon : int
        T.
    tau : float
        τ > 0.
    """

    def __init__(self, kernel: KernelFunction, approx_points: ArrayLike, horizon: int, tau: float) -> None:
        self.kernel = kernel
        self.tau = check_positive_float(tau, "tau")
        # the RKHS operator Z̃ = (1/K)·Φ_𝒵Φ_𝒵ᵀ + τ·Id satisfies Z̃ ≽ τ·Id exactly
        self.min_eigenvalue = self.tau
        self.points: FloatArray = np.asarray(approx_points, dtype=np.float64)
        horizon = check_int(horizon, "horizon", minimum=1)
        m = self.points.shape[0]
        self._chunk = exact_query_chunk(m)
        # A = K_𝒵𝒵 + (M/T)·τ·I   ((M/T)·τ = K·τ when M = T·K), built q rows at a time in Fortran
        # order so that LAPACK factorises it in place (no second M × M array)
        a = np.empty((m, m), dtype=np.float64, order="F")
        for start in range(0, m, self._chunk):
            a[start : start + self._chunk] = kernel(self.points[start : start + self._chunk], self.points)
        a[np.diag_indices_from(a)] += (m / horizon) * self.tau
        factor, info = linalg.lapack.dpotrf(a, lower=1, clean=1, overwrite_a=1)
        if info != 0:
            raise InvalidParameterError(f"K_ZZ + K*tau*I must be positive definite; LAPACK potrf returned info={info}")
        self._chol: FloatArray = factor

    @property
    def max_diag(self) -> float:
        """sup_w k(w, w)."""
        return self.kernel.max_diag

    def distance_bound(self, radius: ArrayLike) -> FloatArray:
        """ρ_k(r) of the kernel."""
        return self.kernel.distance_bound(radius)

    def _chunks(self, points: ArrayLike) -> Iterator[FloatArray]:
        w = np.atleast_2d(np.asarray(points, dtype=np.float64))
        for start in range(0, w.shape[0], self._chunk):
            yield w[start : start + self._chunk]

    def variance(self, points: ArrayLike) -> FloatArray:
        """σ̄²(w) at points (n, D) (eq. 5), q points at a time."""
        parts = []
        for w in self._chunks(points):
            # k_𝒵(w) as an (M, q) Fortran-ordered view: the triangular solve needs no copy of it
            half = linalg.solve_triangular(self._chol, self.kernel(w, self.points).T, lower=True,
                                           check_finite=False, overwrite_b=True)
            # σ̄² = (k(w,w) − k_𝒵ᵀ A⁻¹ k_𝒵)/τ
            parts.append((self.kernel.diag(w) - np.einsum("ij,ij->j", half, half)) / self.tau)
        return np.concatenate(parts) if parts else np.zeros(0)

    def fit(self, data_points: ArrayLike, rewards: ArrayLike) -> Callable[[ArrayLike], FloatArray]:
        """Return w ↦ μ̄_T(w) for the learning data (points (T, D), rewards (T,)) (eq. 4)."""
        w_data = np.atleast_2d(np.asarray(data_points, dtype=np.float64))
        y = np.asarray(rewards, dtype=np.float64)
        # v = K_𝒵W Y, accumulated q data points at a time ;  u = A⁻¹ v
        v = np.zeros(self.points.shape[0])
        for start in range(0, w_data.shape[0], self._chunk):
            v += self.kernel(self.points, w_data[start : start + self._chunk]) @ y[start : start + self._chunk]
        u = linalg.cho_solve((self._chol, True), v, check_finite=False)

        def mean(points: ArrayLike) -> FloatArray:
            # μ̄ = (k_W(w)ᵀY − k_𝒵(w)ᵀu)/τ, q query points at a time
            parts = [(self.kernel(w, w_data) @ y - self.kernel(w, self.points) @ u) / self.tau
                     for w in self._chunks(points)]
            return np.concatenate(parts) if parts else np.zeros(0)

        return mean
