"""Kernelised contextual bandit environments on the joint space W = X × C = [0, 1]^dx × [0, 1]^dc.

A point of the joint space is always written ``w = (x, c)``: the first ``action_dim`` coordinates
are the action, the last ``context_dim`` the context.

The kernels are scikit-learn's (:class:`sklearn.gaussian_process.kernels.RBF` and
:class:`~sklearn.gaussian_process.kernels.Matern`), wrapped by :class:`StationaryKernel`, which adds
what the private algorithms need on top of the Gram matrix: the radial profile κ0, the certified
feature-distance bound ρ_k(r) used by the certified supremum of the surrogate variance, and samples
from the spectral measure (random Fourier features). scikit-learn is imported lazily; it comes
with the ``ml`` extra (``pip install "dpbandits[ml]"``, or ``pip install ".[ml]"`` from a clone).

The reward function of :class:`KernelBanditEnvironment` lies in the RKHS with a known norm:
f(w) = Σᵢ aᵢ k(w, uᵢ) with centres uᵢ ~ Unif(W) and a ~ N(0, I) rescaled so that
‖f‖_H = √(aᵀ K_UU a) = ``rkhs_norm``; hence |f| <= ``rkhs_norm`` because k(w, w) = 1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from dpbandits._core.codec import register_state_dataclass
from dpbandits._core.errors import DependencyNotInstalledError, InvalidParameterError
from dpbandits._core.extras import install_advice
from dpbandits._core.resources import check_fits, squared
from dpbandits._core.rng import RNGLike, as_generator
from dpbandits._core.typing import FloatArray
from dpbandits._core.validation import (
    check_array,
    check_int,
    check_one_of,
    check_positive_float,
)
from dpbandits.envs.registry import register_environment

__all__ = [
    "CONTEXT_LAWS",
    "KERNEL_NAMES",
    "MATERN_NUS",
    "KernelBanditEnvironment",
    "StationaryKernel",
    "joint_points",
]

KERNEL_NAMES = ("se", "matern")
MATERN_NUS = (0.5, 1.5, 2.5)
CONTEXT_LAWS = ("uniform", "beta", "uniform-half")


def _sklearn_kernels() -> Any:
    try:
        from sklearn.gaussian_process import kernels
    except ImportError as exc:
        raise DependencyNotInstalledError(
            f"the kernel family needs scikit-learn; install the 'ml' extra: {install_advice('ml')}"
        ) from exc
    return kernels


@register_state_dataclass
@dataclass(frozen=True)
class StationaryKernel:
    """An isotropic stationary kernel k(w, w') = κ0(‖w − w'‖ / ℓ) with κ0(0) = 1.

    Parameters
    ----------
    name : {"se", "matern"}
        Squared exponential (scikit-learn ``RBF``) or Matérn (scikit-learn ``Matern``).
    length_scale : float
        ℓ > 0.
    nu : float, default 2.5
        Matérn smoothness ν in {0.5, 1.5, 2.5}; ignored for ``"se"``.

    Examples
    --------
    >>> import numpy as np
    >>> from dpbandits.envs.kernel import StationaryKernel
    >>> k = StationaryKernel("se", length_scale=0.2)
    >>> float(k(np.zeros((1, 2)), np.zeros((1, 2)))[0, 0])
    1.0
    """

    name: str
    length_scale: float
    nu: float = 2.5

    def __post_init__(self) -> None:
        check_one_of(self.name, "kernel", KERNEL_NAMES)
        object.__setattr__(self, "length_scale", check_positive_float(self.length_scale, "length_scale"))
        if self.name == "matern":
            nu = check_positive_float(self.nu, "nu")
            if nu not in MATERN_NUS:
                raise InvalidParameterError(f"nu must be one of {list(MATERN_NUS)}; got {nu!r}")
            object.__setattr__(self, "nu", nu)

    def sklearn_kernel(self) -> Any:
        """Return the scikit-learn kernel object (fixed hyper-parameters)."""
        kernels = _sklearn_kernels()
        if self.name == "se":
            return kernels.RBF(length_scale=self.length_scale, length_scale_bounds="fixed")
        return kernels.Matern(length_scale=self.length_scale, length_scale_bounds="fixed", nu=self.nu)

    def __call__(self, a: ArrayLike, b: ArrayLike | None = None) -> FloatArray:
        """Gram matrix [k(aᵢ, bⱼ)] of shape (len(a), len(b)) (``b = a`` if omitted)."""
        a_arr = np.atleast_2d(np.asarray(a, dtype=np.float64))
        b_arr = a_arr if b is None else np.atleast_2d(np.asarray(b, dtype=np.float64))
        return np.asarray(self.sklearn_kernel()(a_arr, b_arr), dtype=np.float64)

    def diag(self, a: ArrayLike) -> FloatArray:
        """k(w, w) for each row of ``a`` (identically 1)."""
        return np.ones(np.atleast_2d(np.asarray(a)).shape[0], dtype=np.float64)

    @property
    def max_diag(self) -> float:
        """sup_w k(w, w) = 1."""
        return 1.0

    def profile(self, distance: ArrayLike) -> FloatArray:
        """κ0 at Euclidean distances r >= 0, i.e. k(w, w') for ‖w − w'‖ = r."""
        r = np.asarray(distance, dtype=np.float64)
        values = self(np.zeros((1, 1)), r.reshape(-1, 1))[0]
        return values.reshape(r.shape)

    def distance_bound(self, radius: ArrayLike) -> FloatArray:
        """ρ_k(r) = sup_{‖w − g‖ <= r} ‖φ(w) − φ(g)‖_H = √(2(1 − κ0(r))) (κ0 is decreasing).

        Used by the certified supremum of the surrogate variance.
        """
        r = np.asarray(radius, dtype=np.float64)
        # ρ_k(r)² = k(w,w) + k(g,g) − 2k(w,g) = 2(1 − κ0(r))
        return np.sqrt(np.maximum(2.0 * (1.0 - self.profile(r)), 0.0))

    def spectral_frequencies(self, n_frequencies: int, dim: int, rng: RNGLike = None) -> FloatArray:
        """Draw ω from the kernel's spectral measure (random Fourier features), shape (n, dim).

        SE: ω ~ N(0, ℓ⁻² I). Matérn-ν: ω = z / (ℓ √(u / (2ν))) with z ~ N(0, I), u ~ χ²_{2ν}
        (a multivariate Student-t with 2ν degrees of freedom).
        """
        gen = as_generator(rng)
        z = gen.standard_normal((n_frequencies, dim))
        if self.name == "se":
            return z / self.length_scale
        u = gen.chisquare(2.0 * self.nu, size=(n_frequencies, 1))
        return z / (self.length_scale * np.sqrt(u / (2.0 * self.nu)))


def joint_points(actions: ArrayLike, contexts: ArrayLike) -> FloatArray:
    """Concatenate actions (..., dx) and contexts (..., dc) into joint points w = (x, c), (..., dx+dc).

    Leading dimensions are broadcast against each other.
    """
    x = np.asarray(actions, dtype=np.float64)
    c = np.asarray(contexts, dtype=np.float64)
    shape = np.broadcast_shapes(x.shape[:-1], c.shape[:-1])
    return np.concatenate(
        [np.broadcast_to(x, (*shape, x.shape[-1])), np.broadcast_to(c, (*shape, c.shape[-1]))], axis=-1
    )


class KernelBanditEnvironment:
    """Contextual bandit with a reward function of known RKHS norm on [0, 1]^dx × [0, 1]^dc.

    y = f(x, c) + η with η ~ N(0, R²) (R-sub-Gaussian), contexts c ~ κ i.i.d.

    Parameters
    ----------
    action_dim : int, default 1
        dx >= 1.
    context_dim : int, default 1
        dc >= 1.
    kernel : {"se", "matern"}, default "se"
    length_scale : float, default 0.2
    nu : float, default 2.5
        Matérn smoothness in {0.5, 1.5, 2.5}.
    n_centres : int, default 10
        Number of kernel centres uᵢ of f.
    rkhs_norm : float, default 1.0
        B_f = ‖f‖_H; |f| <= B_f.
    noise_std : float, default 0.1
        R, the standard deviation of the Gaussian reward noise (>= 0).
    context_law : {"uniform", "beta", "uniform-half"}, default "uniform"
        κ: Unif[0, 1]^dc, Beta(β, β) per coordinate, or Unif[0, 1/2]^dc (a support mismatch with
        the declared context domain [0, 1]^dc, study usca-kernels).
    context_beta : float, default 2.0
        β of the Beta law.
    function_seed : int, default 0
        Seed of the reward function (centres and coefficients); fixed per environment.

    Examples
    --------
    >>> from dpbandits.envs.kernel import KernelBanditEnvironment
    >>> env = KernelBanditEnvironment(function_seed=3)
    >>> c = env.sample_contexts(4, rng=0)
    >>> env.mean_reward(np.full((4, 1), 0.5), c).shape
    (4,)
    """

    def __init__(
        self,
        *,
        action_dim: int = 1,
        context_dim: int = 1,
        kernel: str = "se",
        length_scale: float = 0.2,
        nu: float = 2.5,
        n_centres: int = 10,
        rkhs_norm: float = 1.0,
        noise_std: float = 0.1,
        context_law: str = "uniform",
        context_beta: float = 2.0,
        function_seed: int = 0,
    ) -> None:
        self.action_dim = check_int(action_dim, "action_dim", minimum=1)
        self.context_dim = check_int(context_dim, "context_dim", minimum=1)
        self.kernel = StationaryKernel(kernel, length_scale, nu)
        self.n_centres = check_int(n_centres, "n_centres", minimum=1)
        self.rkhs_norm = check_positive_float(rkhs_norm, "rkhs_norm")
        noise = (
            float(noise_std)
            if isinstance(noise_std, int | float) and not isinstance(noise_std, bool)
            else -1.0
        )
        if not (math.isfinite(noise) and noise >= 0.0):
            raise InvalidParameterError(f"noise_std must be a finite float >= 0; got {noise_std!r}")
        self.noise_std = noise
        self.context_law = check_one_of(context_law, "context_law", CONTEXT_LAWS)
        self.context_beta = check_positive_float(context_beta, "context_beta")
        self.function_seed = check_int(function_seed, "function_seed", minimum=0)

        check_fits("n_centres", self.n_centres, 8.0 * squared(self.n_centres),
                   what="the function's n_centres x n_centres kernel Gram")
        for name in ("action_dim", "context_dim"):
            check_fits(name, getattr(self, name), 8.0 * float(self.n_centres) * float(self.joint_dim),
                       what="the function's n_centres centres in the joint space")
        gen = as_generator(self.function_seed)
        self.centres: FloatArray = gen.random((self.n_centres, self.joint_dim))
        coefficients = gen.standard_normal(self.n_centres)
        gram = self.kernel(self.centres)
        # ‖f‖_H² = aᵀ K_UU a ; rescale a so that ‖f‖_H = B_f
        norm = math.sqrt(max(float(coefficients @ gram @ coefficients), np.finfo(float).tiny))
        self.coefficients: FloatArray = coefficients * (self.rkhs_norm / norm)

    @property
    def joint_dim(self) -> int:
        """D = dx + dc."""
        return self.action_dim + self.context_dim

    def f(self, points: ArrayLike) -> FloatArray:
        """The reward function at joint points w = (x, c) of shape (..., D); returns shape (...)."""
        w = np.asarray(points, dtype=np.float64)
        flat = w.reshape(-1, self.joint_dim)
        values = self.kernel(flat, self.centres) @ self.coefficients
        return values.reshape(w.shape[:-1])

    def mean_reward(self, actions: ArrayLike, contexts: ArrayLike) -> FloatArray:
        """f(x, c) for actions (..., dx) and contexts (..., dc) (leading dimensions broadcast)."""
        return self.f(joint_points(actions, contexts))

    def sample_contexts(self, size: int | tuple[int, ...], rng: RNGLike = None) -> FloatArray:
        """Draw i.i.d. contexts from κ, shape (*size, dc)."""
        gen = as_generator(rng)
        shape = (*((size,) if isinstance(size, int | np.integer) else tuple(size)), self.context_dim)
        if self.context_law == "uniform":
            return gen.random(shape)
        if self.context_law == "beta":
            return gen.beta(self.context_beta, self.context_beta, size=shape)
        return 0.5 * gen.random(shape)

    def sample_rewards(self, actions: ArrayLike, contexts: ArrayLike, rng: RNGLike = None) -> FloatArray:
        """Noisy rewards y = f(x, c) + η, η ~ N(0, R²)."""
        mean = self.mean_reward(actions, contexts)
        return mean + self.noise_std * as_generator(rng).standard_normal(mean.shape)

    def check_actions(self, actions: ArrayLike, name: str = "actions") -> FloatArray:
        """Validate actions of shape (..., dx) inside [0, 1]^dx."""
        arr = check_array(actions, name)
        if arr.shape[-1] != self.action_dim:
            raise InvalidParameterError(f"{name} must have last dimension {self.action_dim}; got {arr.shape}")
        if np.any((arr < 0.0) | (arr > 1.0)):
            raise InvalidParameterError(
                f"{name} must lie in [0, 1]^{self.action_dim}; got min {arr.min()!r}, max {arr.max()!r}"
            )
        return arr

    def describe(self) -> dict[str, Any]:
        """Parameters of the environment (JSON-serialisable)."""
        return {
            "action_dim": self.action_dim,
            "context_dim": self.context_dim,
            "kernel": self.kernel.name,
            "length_scale": self.kernel.length_scale,
            "nu": self.kernel.nu,
            "n_centres": self.n_centres,
            "rkhs_norm": self.rkhs_norm,
            "noise_std": self.noise_std,
            "context_law": self.context_law,
            "context_beta": self.context_beta,
            "function_seed": self.function_seed,
        }

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.describe().items())
        return f"KernelBanditEnvironment({args})"


register_environment(
    "kernel-rkhs",
    kind="kernel",
    factory=KernelBanditEnvironment,
    description="Contextual bandit on [0,1]^dx x [0,1]^dc with an RKHS reward of known norm (SE / Matern).",
)
