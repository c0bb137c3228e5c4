"""Data-independent finite-dimensional feature maps φ: W → R^{D_f} with φ(w)ᵀφ(w') ≈ k(w, w').

USCA's feature backend runs the algorithm *exactly* for the finite-rank kernel
k_D(w, w') = φ(w)ᵀφ(w'), so privacy stays exact as long as
φ is drawn without looking at the data and the same φ is used for μ̄, σ̄² and the certified
supremum. Every map here therefore also certifies

* ``max_diag`` — an upper bound on sup_w k_D(w, w), and
* ``distance_bound(r)`` — ρ_{k_D}(r) >= sup_{‖w − g‖ <= r} ‖φ(w) − φ(g)‖₂,

which the certified supremum of σ̄² needs.

Maps:

* :func:`quadrature_fourier_features` — QFF for the squared-exponential kernel (Mutny & Krause 2018):
  a tensor Gauss–Hermite rule; the pairs ±ω are folded into one node with doubled weight.
* :func:`random_fourier_features` — RFF (Rahimi & Recht 2007) with paired cos/sin features; frequencies
  from the kernel's spectral measure (Gaussian for SE, Student-t for Matérn).
* :class:`NystromFeatures` — Nyström features on landmarks that are scrambled Sobol points of W
  (never data points): φ(w) = L⁻¹ k_U(w), L Lᵀ = K_UU + jitter·I.
"""

from __future__ import annotations

import hashlib
import itertools
import math
from typing import Protocol, runtime_checkable

import numpy as np
from numpy.typing import ArrayLike
from scipy import linalg

from dpbandits._core.errors import InvalidParameterError
from dpbandits._core.resources import check_fits
from dpbandits._core.rng import RNGLike, as_generator
from dpbandits._core.typing import FloatArray
from dpbandits._core.validation import check_int, check_one_of, check_positive_float
from dpbandits.envs.kernel import StationaryKernel

__all__ = [
    "FEATURE_METHODS",
    "FeatureKernel",
    "FeatureMap",
    "NystromFeatures",
    "TrigonometricFeatures",
    "kernel_approximation_error",
    "make_feature_map",
    "quadrature_fourier_features",
    "random_fourier_features",
]

FEATURE_METHODS = ("auto", "qff", "rff", "nystrom")
_WEIGHT_FLOOR = 1e-12  # QFF nodes with weight below this are dropped
_NYSTROM_ROUNDING_SLACK = 1e-10  # measured rounding excess of ‖φ(w) − φ(g)‖ over d_k: < 3e-14


def _hash_arrays(tag: str, *arrays: FloatArray) -> str:
    digest = hashlib.blake2b(tag.encode(), digest_size=20)
    for array in arrays:
        digest.update(repr(array.shape).encode())
        digest.update(np.ascontiguousarray(array, dtype=np.float64).tobytes())
    return digest.hexdigest()


@runtime_checkable
class FeatureMap(Protocol):
    """What USCA's feature backend needs from a feature map."""

    @property
    def dim(self) -> int:
        """D_f, the number of features."""
        ...

    @property
    def max_diag(self) -> float:
        """An upper bound on sup_w φ(w)ᵀφ(w)."""
        ...

    def transform(self, points: ArrayLike, dtype: type[np.floating] = np.float64) -> FloatArray:
        """φ at joint points of shape (n, D); returns (n, D_f) in ``dtype``."""
        ...

    def distance_bound(self, radius: ArrayLike) -> FloatArray:
        """ρ(r) >= sup_{‖w − g‖₂ <= r} ‖φ(w) − φ(g)‖₂."""
        ...


class TrigonometricFeatures:
    """φ(w) = [√vⱼ cos(ωⱼᵀw), √vⱼ sin(ωⱼᵀw)]ⱼ, so k_D(w, w') = Σⱼ vⱼ cos(ωⱼᵀ(w − w')).

    Parameters
    ----------
    frequencies : array_like of shape (m, D)
        ωⱼ.
    weights : array_like of shape (m,)
        vⱼ > 0.
    """

    def __init__(self, frequencies: ArrayLike, weights: ArrayLike) -> None:
        self.frequencies: FloatArray = np.atleast_2d(np.asarray(frequencies, dtype=np.float64))
        self.weights: FloatArray = np.asarray(weights, dtype=np.float64)
        if self.weights.shape != (self.frequencies.shape[0],) or np.any(self.weights <= 0):
            raise InvalidParameterError(
                f"weights must be positive with shape ({self.frequencies.shape[0]},); got {self.weights.shape}"
            )
        self._sqrt_weights = np.sqrt(self.weights)
        # ‖φ(w)‖² = Σ vⱼ (cos² + sin²) = Σ vⱼ
        self._diag = float(self.weights.sum())
        # ‖φ(w) − φ(g)‖² = Σ 2vⱼ(1 − cos ωⱼᵀδ) <= Σ vⱼ (ωⱼᵀδ)² <= ‖δ‖² Σ vⱼ‖ωⱼ‖²
        self._lipschitz = math.sqrt(float(self.weights @ np.sum(self.frequencies**2, axis=1)))

    @property
    def dim(self) -> int:
        """D_f = 2m."""
        return 2 * self.frequencies.shape[0]

    def fingerprint(self) -> str:
        """A hash of the frequencies and weights (equal hashes: the same map); keys the Gram cache."""
        return _hash_arrays("trigonometric", self.frequencies, self.weights)

    @property
    def max_diag(self) -> float:
        """Σ vⱼ (k_D(w, w) is constant)."""
        return self._diag

    def transform(self, points: ArrayLike, dtype: type[np.floating] = np.float64) -> FloatArray:
        """φ at points of shape (n, D); returns (n, 2m) computed in ``dtype`` (float32 is ~7× faster)."""
        w = np.atleast_2d(np.asarray(points, dtype=dtype))
        phase = w @ self.frequencies.T.astype(dtype, copy=False)
        out = np.empty((w.shape[0], self.dim), dtype=dtype)
        m = self.frequencies.shape[0]
        np.cos(phase, out=out[:, :m])
        np.sin(phase, out=out[:, m:])
        sqrt_weights = self._sqrt_weights.astype(dtype, copy=False)
        out[:, :m] *= sqrt_weights
        out[:, m:] *= sqrt_weights
        return out

    def distance_bound(self, radius: ArrayLike) -> FloatArray:
        """ρ(r) = min(r·√(Σ vⱼ‖ωⱼ‖²), 2√(Σ vⱼ))."""
        r = np.asarray(radius, dtype=np.float64)
        return np.minimum(r * self._lipschitz, 2.0 * math.sqrt(self._diag))


def quadrature_fourier_features(kernel: StationaryKernel, dim: int, nodes_per_axis: int = 20) -> TrigonometricFeatures:
    """Quadrature Fourier features of the squared-exponential kernel (deterministic).

    exp(−‖δ‖²/(2ℓ²)) = Π_a ∫ e^{−t²} cos(√2 t δ_a/ℓ) dt/√π, approximated by an ``nodes_per_axis``-point
    Gauss–Hermite rule per axis (physicists' convention), tensorised over the D axes:
    ω = √2·t/ℓ, v = Π_a w_{i_a}/√π. Nodes ω and −ω give the same term, so they are folded into one
    node with weight 2v (a node at ω = 0 keeps v); nodes with v < 1e-12 are dropped.

    Parameters
    ----------
    kernel : StationaryKernel
        Must be ``"se"``.
    dim : int
        D, the joint dimension.
    nodes_per_axis : int, default 20
        m̄ >= 1.

    Returns
    -------
    TrigonometricFeatures

    References
    ----------
    Mutný & Krause (2018), "Efficient high dimensional Bayesian optimization with additivity and
    quadrature Fourier features", NeurIPS.
    """
    if kernel.name != "se":
        raise InvalidParameterError(f"kernel must be 'se' for quadrature Fourier features; got {kernel.name!r}")
    dim = check_int(dim, "dim", minimum=1)
    m_bar = check_int(nodes_per_axis, "nodes_per_axis", minimum=1)
    nodes, gh_weights = np.polynomial.hermite.hermgauss(m_bar)
    index = np.array(list(itertools.product(range(m_bar), repeat=dim)), dtype=np.int64)
    # ω = √2·t/ℓ ;  v = Π_a w_{i_a} / √π
    omega = math.sqrt(2.0) * nodes[index] / kernel.length_scale
    weight = np.prod(gh_weights[index] / math.sqrt(math.pi), axis=1)
    # fold ±ω: the mirror of multi-index i is (m̄ − 1 − i); keep the lexicographically smaller one
    flat = index @ (m_bar ** np.arange(dim - 1, -1, -1))
    mirror = (m_bar - 1 - index) @ (m_bar ** np.arange(dim - 1, -1, -1))
    keep = flat <= mirror
    weight = np.where(flat == mirror, weight, 2.0 * weight)[keep]
    omega = omega[keep]
    big = weight >= _WEIGHT_FLOOR
    return TrigonometricFeatures(omega[big], weight[big])


def random_fourier_features(
    kernel: StationaryKernel, dim: int, n_frequencies: int = 256, rng: RNGLike = None
) -> TrigonometricFeatures:
    """Random Fourier features with paired cos/sin: φ(w) = m^{-1/2}[cos ωⱼᵀw, sin ωⱼᵀw], D_f = 2m.

    ω is drawn from the kernel's spectral measure (:meth:`StationaryKernel.spectral_frequencies`).
    For Matérn kernels the frequencies are heavy-tailed, which makes ``distance_bound`` loose; prefer
    :class:`NystromFeatures` there.

    References
    ----------
    Rahimi & Recht (2007), "Random features for large-scale kernel machines", NeurIPS.
    """
    dim = check_int(dim, "dim", minimum=1)
    m = check_int(n_frequencies, "n_frequencies", minimum=1)
    omega = kernel.spectral_frequencies(m, dim, rng)
    return TrigonometricFeatures(omega, np.full(m, 1.0 / m))


class NystromFeatures:
    """Nyström features φ(w) = L⁻¹ k_U(w) with L Lᵀ = K_UU + jitter·I on data-independent landmarks.

    Landmarks are scrambled Sobol points of W = [0, 1]^D (``scipy.stats.qmc.Sobol``), never data.
    k_D(w, w') = k_U(w)ᵀ(K_UU + jitter·I)⁻¹k_U(w') is the RKHS projection onto span{φ(uᵢ)} shrunk
    by the jitter, a contraction; hence k_D(w, w) <= k(w, w) and ‖φ(w) − φ(g)‖ <= d_k(w, g), which
    gives ``max_diag`` and ``distance_bound`` from the exact kernel.

    Parameters
    ----------
    kernel : StationaryKernel
    dim : int
        D.
    n_landmarks : int, default 256
    rng : int, SeedSequence, Generator or None
        Scrambling of the Sobol sequence.
    jitter : float, default 1e-8
        Added to the diagonal of K_UU. Any jitter keeps k_D a contraction of k in exact arithmetic;
        1e-8 (rather than 1e-10) keeps the condition number of L near 1e5 for smooth
        kernels, so that rounding in L⁻¹ stays far below the slack of :meth:`distance_bound`.
    """

    def __init__(
        self,
        kernel: StationaryKernel,
        dim: int,
        n_landmarks: int = 256,
        rng: RNGLike = None,
        jitter: float = 1e-8,
    ) -> None:
        from scipy.stats import qmc

        self.kernel = kernel
        d = check_int(dim, "dim", minimum=1)
        m = check_int(n_landmarks, "n_landmarks", minimum=1)
        sampler = qmc.Sobol(d, scramble=True, seed=as_generator(rng))
        # Sobol balance properties need a power of two; draw the next one and keep the first m
        self.landmarks: FloatArray = sampler.random(2 ** math.ceil(math.log2(m)))[:m]
        gram = kernel(self.landmarks) + check_positive_float(jitter, "jitter") * np.eye(m)
        self._chol = linalg.cholesky(gram, lower=True)

    @property
    def dim(self) -> int:
        """D_f = number of landmarks."""
        return int(self.landmarks.shape[0])

    def fingerprint(self) -> str:
        """A hash of the kernel, the landmarks and the factor (equal hashes: the same map); keys the Gram cache."""
        return _hash_arrays(f"nystrom {self.kernel!r}", self.landmarks, self._chol)

    @property
    def max_diag(self) -> float:
        """Return sup k(w, w) of the exact kernel (>= sup k_D(w, w))."""
        return self.kernel.max_diag

    def transform(self, points: ArrayLike, dtype: type[np.floating] = np.float64) -> FloatArray:
        """φ(w) = L⁻¹ k_U(w) at points (n, D); returns (n, m) (computed in float64, cast to ``dtype``)."""
        k_uw = self.kernel(self.landmarks, np.atleast_2d(np.asarray(points, dtype=np.float64)))
        phi = linalg.solve_triangular(self._chol, k_uw, lower=True, check_finite=False).T
        return np.asarray(phi, dtype=dtype)

    def distance_bound(self, radius: ArrayLike) -> FloatArray:
        """ρ_k(r) of the exact kernel (valid for the contraction k_D) plus 1e-10 against rounding in L⁻¹."""
        return self.kernel.distance_bound(radius) + _NYSTROM_ROUNDING_SLACK


class FeatureKernel:
    """The finite-rank kernel k_D(a, b) = φ(a)φ(b)ᵀ of a feature map, usable by the exact backend."""

    def __init__(self, feature_map: FeatureMap) -> None:
        self.feature_map = feature_map

    def __call__(self, a: ArrayLike, b: ArrayLike | None = None) -> FloatArray:
        """Gram matrix φ(a)φ(b)ᵀ."""
        phi_a = self.feature_map.transform(a)
        phi_b = phi_a if b is None else self.feature_map.transform(b)
        return phi_a @ phi_b.T

    def diag(self, a: ArrayLike) -> FloatArray:
        """k_D(w, w) for each row of ``a``."""
        phi = self.feature_map.transform(a)
        return np.einsum("ij,ij->i", phi, phi)

    @property
    def max_diag(self) -> float:
        """The feature map's bound on sup k_D(w, w)."""
        return self.feature_map.max_diag

    def distance_bound(self, radius: ArrayLike) -> FloatArray:
        """The feature map's ρ."""
        return self.feature_map.distance_bound(radius)


def make_feature_map(
    kernel: StationaryKernel,
    dim: int,
    method: str = "auto",
    n_features: int | None = None,
    rng: RNGLike = None,
) -> FeatureMap:
    """Build a data-independent feature map for ``kernel`` on [0, 1]^dim.

    Parameters
    ----------
    kernel : StationaryKernel
    dim : int
        D = dx + dc.
    method : {"auto", "qff", "rff", "nystrom"}
        ``"auto"``: QFF (20 nodes per axis) for SE with D <= 2, Nyström (512 landmarks) otherwise.
    n_features : int, optional
        Nodes per axis (QFF), frequencies (RFF) or landmarks (Nyström).
    rng : int, SeedSequence, Generator or None
        Randomness of RFF frequencies or the Sobol scrambling (the feature-map stream).

    Raises
    ------
    InvalidParameterError
        If ``n_features`` makes the map, or the D_f × D_f Gram matrix every learner of this library
        keeps of it, too large for memory (refused before it is allocated, ``n_features`` named).
    """
    check_one_of(method, "feature_map", FEATURE_METHODS)
    if method == "auto":
        method = "qff" if kernel.name == "se" and dim <= 2 else "nystrom"
    size = check_int({"qff": 20, "rff": 256}.get(method, 512) if n_features is None else n_features, "n_features",
                     minimum=1)
    d = check_int(dim, "dim", minimum=1)
    # what building the map holds: QFF's Gauss-Hermite companion matrix and its m^D multi-indices,
    # RFF's m x D frequencies, Nystrom's m x m landmark kernel matrix
    held = {"qff": 8.0 * max(float(size) ** 2, d * float(size) ** d), "rff": 8.0 * size * d}.get(method, 8.0 * size**2)
    check_fits("n_features", size, held, what=f"the {method} feature map")
    feature_map: FeatureMap
    if method == "qff":
        feature_map = quadrature_fourier_features(kernel, d, size)
    elif method == "rff":
        feature_map = random_fourier_features(kernel, d, size, rng)
    else:
        feature_map = NystromFeatures(kernel, d, size, rng)
    check_fits("n_features", size, 8.0 * float(feature_map.dim) ** 2,
               what=f"the {feature_map.dim} x {feature_map.dim} Gram matrix of its features")
    return feature_map


def kernel_approximation_error(
    kernel: StationaryKernel, feature_map: FeatureMap, dim: int, n_points: int = 512, rng: RNGLike = None
) -> float:
    """Return max |k_D(w, w') − k(w, w')| over random pairs of points of [0, 1]^dim (a diagnostic to report)."""
    gen = as_generator(rng)
    points = gen.random((check_int(n_points, "n_points", minimum=1), dim))
    phi = feature_map.transform(points)
    return float(np.max(np.abs(phi @ phi.T - kernel(points))))
