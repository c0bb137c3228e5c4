"""USCA's covariance-approximation surrogate: μ̄_T and σ̄² (eqs. 4–5), exact and feature backends.

With an approximating set 𝒵 = (z₁, …, z_M) drawn from ϱ = Unif(X) ⊗ κ (data-independent coins),

    Z̃ = (T/M)·Σᵢ φ(zᵢ)φ(zᵢ)ᵀ + τ·Id,   μ̄_T(w) = φ(w)ᵀ Z̃⁻¹ Σₜ φ(wₜ)yₜ,   σ̄²(w) = φ(w)ᵀ Z̃⁻¹ φ(w).

The paper's M = T·K gives the factor 1/K (Lemma 4.4); another M is the flagged "T/M" deviation
(``specs/spec_usca_kernel.md`` §2.2). Two backends compute the same quantities:

* :class:`ExactKernelSurrogate` — the kernel-trick form (eqs. 4–5 with regulariser (M/T)·τ = Kτ),
  an M × M Cholesky factor: O(M²) memory, only for small T and as the reference in tests.
* :class:`FeatureSurrogate` — the feature form for a data-independent feature map φ (§4.2): a
  D_f × D_f Cholesky factor accumulated by streaming over 𝒵 in blocks; memory O(D_f²) independent
  of T and M.

Both expose ``variance(points)``, ``min_eigenvalue`` (a λ > 0 with Z̃ ≽ λ·Id), ``max_diag`` and
``distance_bound(r)``, which is what the
certified supremum (:mod:`dpbandits.algorithms.kernel.sup_bound`) needs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Protocol

import numpy as np
from numpy.typing import ArrayLike
from scipy import linalg

from dpbandits._core.errors import InvalidParameterError
from dpbandits._core.rng import RNGLike, as_generator, as_seed_sequence, spawn_seed_sequences
from dpbandits._core.typing import FloatArray
from dpbandits._core.validation import check_int, check_one_of, check_positive_float
from dpbandits.algorithms.kernel.features import FeatureMap

__all__ = [
    "DEFAULT_BLOCK_SIZE",
    "PRECISIONS",
    "ApproximatingSet",
    "ContextGenerator",
    "ExactKernelSurrogate",
    "FeatureSurrogate",
    "KernelFunction",
    "accumulate_feature_gram",
]

DEFAULT_BLOCK_SIZE = 16_384
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
    """

    def __init__(
        self,
        size: int,
        action_dim: int,
        context_generator: ContextGenerator,
        rng: RNGLike,
        block_size: int = DEFAULT_BLOCK_SIZE,
    ) -> None:
        self.size = check_int(size, "approx_size", minimum=1)
        self.action_dim = check_int(action_dim, "action_dim", minimum=1)
        self.block_size = check_int(block_size, "block_size", minimum=1)
        self._context_generator = context_generator
        n_blocks = -(-self.size // self.block_size)
        self._block_seeds = spawn_seed_sequences(as_seed_sequence(rng), n_blocks)

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


def accumulate_feature_gram(
    feature_map: FeatureMap,
    approx_set: ApproximatingSet,
    chunk_size: int = 8192,
    precision: str = "float64",
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
    """
    chunk = check_int(chunk_size, "chunk_size", minimum=1)
    dtype = np.float32 if check_one_of(precision, "precision", PRECISIONS) == "float32" else np.float64
    gram = np.zeros((feature_map.dim, feature_map.dim), dtype=np.float64)
    for block in approx_set.blocks():
        for start in range(0, block.shape[0], chunk):
            phi = feature_map.transform(block[start : start + chunk], dtype=dtype)
            # G ← G + φᵀφ  (accumulated in float64 across chunks)
            gram += phi.T @ phi
    # exact symmetry (the two triangles of φᵀφ can differ in the last bit)
    return np.asarray(0.5 * (gram + gram.T))


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
        """Return b = Σₜ φ(wₜ)·yₜ, in chunks (add the vectors of several calls to stream the learning stage)."""
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


class ExactKernelSurrogate:
    """Kernel-trick form (Lemma 3.1 / eqs. 4–5) with A = K_𝒵𝒵 + (M/T)·τ·I_M = L Lᵀ.

    σ̄²(w) = (k(w, w) − ‖L⁻¹k_𝒵(w)‖²)/τ ;
    μ̄_T(w) = (k_W(w)ᵀY − k_𝒵(w)ᵀ A⁻¹ K_𝒵W Y)/τ.

    Memory is O(M²) (8·M² bytes): use it for small T (M up to about 10⁴) and as the reference.

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
        # A = K_𝒵𝒵 + (M/T)·τ·I   ((M/T)·τ = K·τ when M = T·K)
        a = kernel(self.points)
        a[np.diag_indices_from(a)] += (m / horizon) * self.tau
        self._chol = linalg.cholesky(a, lower=True, overwrite_a=True, check_finite=False)

    @property
    def max_diag(self) -> float:
        """sup_w k(w, w)."""
        return self.kernel.max_diag

    def distance_bound(self, radius: ArrayLike) -> FloatArray:
        """ρ_k(r) of the kernel."""
        return self.kernel.distance_bound(radius)

    def variance(self, points: ArrayLike) -> FloatArray:
        """σ̄²(w) at points (n, D) (eq. 5)."""
        w = np.atleast_2d(np.asarray(points, dtype=np.float64))
        half = linalg.solve_triangular(self._chol, self.kernel(self.points, w), lower=True, check_finite=False)
        # σ̄² = (k(w,w) − k_𝒵ᵀ A⁻¹ k_𝒵)/τ
        return np.asarray((self.kernel.diag(w) - np.einsum("ij,ij->j", half, half)) / self.tau)

    def fit(self, data_points: ArrayLike, rewards: ArrayLike) -> Callable[[ArrayLike], FloatArray]:
        """Return w ↦ μ̄_T(w) for the learning data (points (T, D), rewards (T,)) (eq. 4)."""
        w_data = np.asarray(data_points, dtype=np.float64)
        y = np.asarray(rewards, dtype=np.float64)
        # u = A⁻¹ K_𝒵W Y
        u = linalg.cho_solve((self._chol, True), self.kernel(self.points, w_data) @ y, check_finite=False)

        def mean(points: ArrayLike) -> FloatArray:
            w = np.atleast_2d(np.asarray(points, dtype=np.float64))
            # μ̄ = (k_W(w)ᵀY − k_𝒵(w)ᵀu)/τ
            return np.asarray((self.kernel(w, w_data) @ y - self.kernel(w, self.points) @ u) / self.tau)

        return mean
