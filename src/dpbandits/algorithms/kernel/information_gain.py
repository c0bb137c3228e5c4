"""Data-independent estimates of the maximal information gain γ_T (``specs/spec_usca_kernel.md`` §2.6).

γ_T enters USCA only through K = ⌈T/γ_T⌉, so its value affects utility and compute, never privacy,
provided it is computed without the private data. Methods:

* ``"random"`` (default): γ̂ = mean over 3 repetitions of ½·log det(I + τ⁻¹K_UU) for T i.i.d. points
  U from ϱ (uniform actions, generator contexts). In feature form, by Sylvester's identity,
  ½·log det(I_{D_f} + τ⁻¹Φ_UᵀΦ_U). A lower bound on γ_T (so K comes out larger than the paper's).
* ``"formula"``: the asymptotic orders with unit constants, clamped to [1, T] (scaling studies only).
* a float: a user-supplied value.
"""

from __future__ import annotations

import math

import numpy as np

from dpbandits._core.errors import InvalidParameterError
from dpbandits._core.rng import RNGLike, as_seed_sequence
from dpbandits._core.validation import check_int, check_positive_float
from dpbandits.algorithms.kernel.features import FeatureMap
from dpbandits.algorithms.kernel.surrogate import ApproximatingSet, ContextGenerator, KernelFunction
from dpbandits.envs.kernel import StationaryKernel

__all__ = ["GAMMA_METHODS", "formula_information_gain", "random_information_gain", "resolve_gamma"]

GAMMA_METHODS = ("random", "formula")


def formula_information_gain(kernel: StationaryKernel, horizon: int, dim: int) -> float:
    """Asymptotic order of γ_T with unit constants, clamped to [1, T].

    SE: (ln T)^{D+1}; Matérn-ν: T^{D/(2ν+D)}·(ln T)^{2ν/(2ν+D)}.
    """
    t = check_int(horizon, "horizon", minimum=1)
    log_t = math.log(max(t, 2))
    if kernel.name == "se":
        value = log_t ** (dim + 1)
    else:
        nu = kernel.nu
        value = t ** (dim / (2 * nu + dim)) * log_t ** (2 * nu / (2 * nu + dim))
    return float(min(max(value, 1.0), t))


def random_information_gain(
    horizon: int,
    tau: float,
    action_dim: int,
    context_generator: ContextGenerator,
    rng: RNGLike,
    *,
    kernel: KernelFunction | None = None,
    feature_map: FeatureMap | None = None,
    n_repeats: int = 3,
) -> float:
    """γ̂ = (1/n_rep)·Σ ½·log det(I + τ⁻¹K_UU) over n_rep designs U of T points from ϱ.

    Exactly one of ``kernel`` (O(T³), kernel form) and ``feature_map`` (O(T·D_f²), feature form)
    must be given.
    """
    t = check_int(horizon, "horizon", minimum=1)
    tau = check_positive_float(tau, "tau")
    reps = check_int(n_repeats, "n_repeats", minimum=1)
    if (kernel is None) == (feature_map is None):
        raise InvalidParameterError("exactly one of kernel and feature_map must be given")
    seeds = as_seed_sequence(rng).spawn(reps)
    total = 0.0
    matrix = np.eye(1)
    for seed in seeds:
        design = ApproximatingSet(t, action_dim, context_generator, seed)
        if feature_map is not None:
            gram = np.zeros((feature_map.dim, feature_map.dim))
            for block in design.blocks():
                phi = feature_map.transform(block)
                gram += phi.T @ phi
            # ½·log det(I_{D_f} + Φᵀ Φ/τ)  (Sylvester: equals ½·log det(I_T + ΦΦᵀ/τ))
            matrix = np.eye(feature_map.dim) + gram / tau
        elif kernel is not None:
            matrix = np.eye(t) + kernel(design.points()) / tau
        _, logdet = np.linalg.slogdet(matrix)
        total += 0.5 * logdet
    return float(total / reps)


def resolve_gamma(
    gamma: str | float,
    *,
    horizon: int,
    tau: float,
    action_dim: int,
    dim: int,
    kernel: StationaryKernel,
    context_generator: ContextGenerator,
    rng: RNGLike,
    exact_kernel: KernelFunction | None = None,
    feature_map: FeatureMap | None = None,
) -> float:
    """Return γ̂ for the ``gamma`` option ("random", "formula" or a float >= 1e-12)."""
    if isinstance(gamma, str):
        if gamma == "formula":
            return formula_information_gain(kernel, horizon, dim)
        if gamma == "random":
            return random_information_gain(
                horizon, tau, action_dim, context_generator, rng, kernel=exact_kernel, feature_map=feature_map
            )
        raise InvalidParameterError(f"gamma must be one of {list(GAMMA_METHODS)} or a float > 0; got {gamma!r}")
    return check_positive_float(gamma, "gamma")
