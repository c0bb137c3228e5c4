"""Data-independent estimates of the maximal information gain γ_T.

γ_T enters USCA only through K = ⌈T/γ_T⌉, so its value affects utility and compute, never privacy,
provided it is computed without the private data. Methods:

* ``"random"`` (default): γ̂ = mean over 3 repetitions of ½·log det(I + τ⁻¹K_UU) for T i.i.d. points
  U from ϱ (uniform actions, generator contexts). In feature form, by Sylvester's identity,
  ½·log det(I_{D_f} + τ⁻¹Φ_UᵀΦ_U). A lower bound on γ_T (so K comes out larger than the paper's).
* ``"greedy"``: greedy maximum-variance selection of T points (repeats allowed) from 4096 candidates
  drawn from ϱ, γ̂ = Σ_s ½·log(1 + σ²_{s−1}(w_s)/τ); by submodularity at least (1 − 1/e) times the
  maximum over candidate multisets, the closest tractable proxy of the paper's sup. Computed in
  feature form (the exact backend uses the kernel's default feature map for this estimate only).
* ``"formula"``: the asymptotic orders with unit constants, clamped to [1, T] (scaling studies only).
* a float: a user-supplied value.
"""

from __future__ import annotations

import math

import numpy as np

from dpbandits._core.errors import InvalidParameterError
from dpbandits._core.rng import RNGLike, as_seed_sequence, spawn_seed_sequences
from dpbandits._core.validation import check_int, check_positive_float
from dpbandits.algorithms.kernel.features import FeatureMap, make_feature_map
from dpbandits.algorithms.kernel.surrogate import ApproximatingSet, ContextGenerator, KernelFunction
from dpbandits.envs.kernel import StationaryKernel

__all__ = [
    "GAMMA_METHODS",
    "formula_information_gain",
    "greedy_information_gain",
    "random_information_gain",
    "resolve_gamma",
]

GAMMA_METHODS = ("random", "greedy", "formula")


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
        design = ApproximatingSet(t, action_dim, context_generator, seed, size_name="horizon")
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


def greedy_information_gain(
    horizon: int,
    tau: float,
    action_dim: int,
    context_generator: ContextGenerator,
    rng: RNGLike,
    feature_map: FeatureMap,
    n_candidates: int = 4096,
) -> float:
    """γ̂ by greedy maximum-variance selection (repeats allowed) over candidates from ϱ.

    Feature form: σ²(w) = τ·φ(w)ᵀV⁻¹φ(w), V = ΦᵀΦ + τI, updated by Sherman–Morrison; each step adds
    ½·log(1 + σ²(w_s)/τ) for w_s = argmax σ² over the candidates. O(T·(n_candidates·D_f + D_f²)).
    """
    t = check_int(horizon, "horizon", minimum=1)
    tau = check_positive_float(tau, "tau")
    n = check_int(n_candidates, "n_candidates", minimum=1)
    candidates = ApproximatingSet(n, action_dim, context_generator, rng).points()
    phi = feature_map.transform(candidates)
    v_inv = np.eye(feature_map.dim) / tau
    variance = tau * np.einsum("ij,ij->i", phi @ v_inv, phi)  # σ²₀(w) = k_D(w, w)
    total = 0.0
    for _ in range(t):
        j = int(np.argmax(variance))
        total += 0.5 * math.log1p(max(variance[j], 0.0) / tau)
        # V⁻¹ ← V⁻¹ − uuᵀ/(1 + φⱼᵀu), u = V⁻¹φⱼ ;  σ²(w) ← σ²(w) − τ(φ(w)ᵀu)²/(1 + φⱼᵀu)
        u = v_inv @ phi[j]
        denominator = 1.0 + phi[j] @ u
        projections = phi @ u
        variance -= tau * projections**2 / denominator
        v_inv -= np.outer(u, u) / denominator
    return total


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
    """Return γ̂ for the ``gamma`` option ("random", "greedy", "formula" or a float > 0)."""
    if isinstance(gamma, str):
        if gamma == "formula":
            return formula_information_gain(kernel, horizon, dim)
        if gamma == "random":
            return random_information_gain(
                horizon, tau, action_dim, context_generator, rng, kernel=exact_kernel, feature_map=feature_map
            )
        if gamma == "greedy":
            map_seed, candidate_seed = spawn_seed_sequences(rng, 2)
            features = feature_map if feature_map is not None else make_feature_map(kernel, dim, rng=map_seed)
            return greedy_information_gain(horizon, tau, action_dim, context_generator, candidate_seed, features)
        raise InvalidParameterError(f"gamma must be one of {list(GAMMA_METHODS)} or a float > 0; got {gamma!r}")
    return check_positive_float(gamma, "gamma")
