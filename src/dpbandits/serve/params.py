"""The parameters of each experiment kind: pydantic models, strict, checked against what can run.

Every model is **strict** (``epsilon: true`` or ``budget: "100"`` is refused, not coerced; an int
is accepted where a float is expected) and refuses unknown fields. Beyond each field's range, a
model refuses parameters that could not run (see :mod:`dpbandits.serve.limits`): a noise scale
that is not finite, a run over the memory or CPU limits of the study cost model, USCA set-ups over
their operation limit, feature vectors whose coordinates are too large or too small to compute with
(differences overflow, or subnormal values make the designs singular).
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from dpbandits.serve.limits import (
    MAX_DESIGN_OPERATIONS,
    MAX_SETUP_OPERATIONS,
    MIN_LENGTH_SCALE,
    check_noise_scale,
    check_run_cost,
    usca_feature_dimension,
    usca_min_approx_size,
    usca_setup_operations,
)

__all__ = [
    "FEATURE_RANGE",
    "MAX_ARMS",
    "MAX_DIMENSION",
    "MAX_STEPS",
    "ArmsParams",
    "BAIParams",
    "DesignBAIParams",
    "DuelingParams",
    "FeatureDuelingParams",
    "GaussBAIParams",
    "KLMABParams",
    "USCAParams",
]

MAX_ARMS = 1000
MAX_DIMENSION = 64
MAX_STEPS = 10_000_000
FEATURE_RANGE = (1e-6, 1e6)
"""A feature coordinate is 0 or has its magnitude in this range (differences stay finite and normal)."""


class StrictModel(BaseModel):
    """Strict JSON types, unknown fields refused."""

    model_config = ConfigDict(extra="forbid", strict=True)


Epsilon = Field(gt=0, allow_inf_nan=False, description="ε > 0 of the run (finite; 1/ε at most 2^52).")


def _check_features(rows: list[list[float]]) -> None:
    widths = {len(row) for row in rows}
    if len(rows) < 2 or len(widths) != 1 or not 1 <= widths.pop() <= MAX_DIMENSION:
        raise ValueError(f"features must be at least 2 rows of one length in [1, {MAX_DIMENSION}]")
    values = np.abs(np.asarray(rows, dtype=float))
    low, high = FEATURE_RANGE
    if not np.all(np.isfinite(values)) or np.any((values != 0) & ((values < low) | (values > high))):
        raise ValueError(f"features must be finite numbers, each 0 or of magnitude in [{low:g}, {high:g}]")


class ArmsParams(StrictModel):
    """Arms given as feature vectors (a linear bandit) or as a count (K orthogonal arms)."""

    features: list[list[float]] | None = Field(
        None, max_length=MAX_ARMS,
        description="K feature vectors a_i (rows), coordinates 0 or of magnitude in [1e-6, 1e6]; "
                    "omit for a plain K-armed bandit.")
    n_arms: int | None = Field(None, ge=2, le=MAX_ARMS, description="K, when features are omitted.")

    @model_validator(mode="after")
    def _arms(self) -> ArmsParams:
        if (self.features is None) == (self.n_arms is None):
            raise ValueError("give exactly one of features and n_arms")
        if self.features is not None:
            _check_features(self.features)
        return self

    def feature_matrix(self) -> np.ndarray:
        """The features, or the identity for K orthogonal arms."""
        if self.features is None:
            return np.eye(int(self.n_arms or 0))
        return np.asarray(self.features, dtype=float)

    def kept_bytes(self) -> float:
        """The feature matrix the agent keeps (8 bytes per coordinate)."""
        if self.features is None:
            return 8.0 * float(self.n_arms or 0) ** 2
        return 8.0 * len(self.features) * len(self.features[0])


class BAIParams(ArmsParams):
    """DP-BAI, Baseline, DP-OD: arms, budget T and ε."""

    budget: int = Field(ge=1, le=MAX_STEPS, description="T, the number of pulls.")
    epsilon: float = Epsilon
    clip_rewards: bool = Field(False, description="Clip rewards to [0, 1] instead of refusing them.")

    @model_validator(mode="after")
    def _runnable(self) -> BAIParams:
        check_noise_scale(self.noise_multiplier(), "the noise scale at sensitivity 1 (1/ε for Laplace)")
        check_run_cost("dp-bai", {"budget": self.budget}, kept_bytes=self.kept_bytes())
        return self

    def noise_multiplier(self) -> float:
        """The noise scale of a sensitivity-1 release: Laplace b = 1/ε (phases divide it by m_p >= 1)."""
        return 1.0 / self.epsilon


class DesignBAIParams(BAIParams):
    """DP-OD: also its optimal designs' cost, K·d² (K arms in d dimensions)."""

    @model_validator(mode="after")
    def _design_cost(self) -> DesignBAIParams:
        arms = len(self.features) if self.features is not None else int(self.n_arms or 0)
        dim = len(self.features[0]) if self.features is not None else arms
        if arms * dim**2 > MAX_DESIGN_OPERATIONS:
            raise ValueError(f"K·d² = {arms}·{dim}² = {arms * dim**2:.3g} exceeds the {MAX_DESIGN_OPERATIONS:.3g} "
                             "an optimal design may cost; give fewer arms or lower-dimensional features")
        return self


class GaussBAIParams(BAIParams):
    """DP-BAI-Gauss: also δ."""

    delta: float = Field(gt=0, lt=1, description="δ in (0, 1).")

    def noise_multiplier(self) -> float:
        """σ of a sensitivity-1 release with the analytic calibration (Balle & Wang 2018)."""
        from dpbandits._core.errors import DPBanditsError
        from dpbandits.privacy.mechanisms import analytic_gaussian_sigma

        if 1.0 / self.epsilon > 2.0**52:
            return math.inf
        try:
            return float(analytic_gaussian_sigma(1.0, self.epsilon, self.delta))
        except (DPBanditsError, ArithmeticError, ValueError):  # no σ found: the calibration cannot hold
            return math.inf


class DuelingParams(StrictModel):
    """DP-EBS-Elimination and LDP-EBS-Elimination: K arms, horizon T, ε."""

    n_arms: int = Field(ge=2, le=MAX_ARMS, description="K.")
    horizon: int = Field(ge=1, le=MAX_STEPS, description="T, the number of duels.")
    epsilon: float = Epsilon

    @model_validator(mode="after")
    def _runnable(self) -> DuelingParams:
        # the tree counters add one Laplace(1/ε) per level (log₂T + 1 levels); the local model's
        # debiased reports range over (e^ε + 1)/(e^ε − 1) ~ 2/ε: both are finite iff 1/ε is
        check_noise_scale((math.log2(self.horizon) + 1.0) / self.epsilon,
                          "the counters' noise scale (log₂T + 1)/ε")
        check_run_cost("dp-ebs-elimination", {"horizon": self.horizon})
        return self


class FeatureDuelingParams(StrictModel):
    """GOptimal-DPDB: arm features, horizon, ε."""

    features: list[list[float]] = Field(
        min_length=2, max_length=MAX_ARMS,
        description="K arm vectors (rows), coordinates 0 or of magnitude in [1e-6, 1e6].")
    horizon: int = Field(ge=1, le=MAX_STEPS)
    epsilon: float = Epsilon

    @model_validator(mode="after")
    def _features(self) -> FeatureDuelingParams:
        _check_features(self.features)
        check_noise_scale(1.0 / self.epsilon, "the win counts' Laplace scale 1/ε")
        check_run_cost("goptimal-dpdb", {"horizon": self.horizon},
                       kept_bytes=8.0 * len(self.features) ** 2 * len(self.features[0]))  # the pairs' differences
        return self


class USCAParams(StrictModel):
    """USCA on [0, 1]^dx × [0, 1]^dc with a stationary kernel; contexts drawn uniformly by the algorithm."""

    horizon: int = Field(ge=1, le=100_000, description="T learning rounds.")
    epsilon: float = Epsilon
    reward_bound: float = Field(gt=0, allow_inf_nan=False, description="B_y: rewards in [-B_y, B_y].")
    kernel: Literal["se", "matern"] = "se"
    length_scale: float = Field(0.2, ge=MIN_LENGTH_SCALE, allow_inf_nan=False,
                                description="The kernel's length scale ℓ >= 0.01 on the unit cube.")
    action_dim: int = Field(1, ge=1, le=3)
    context_dim: int = Field(1, ge=1, le=3)
    clip: bool = Field(False, description="Clip rewards and project contexts instead of refusing them.")

    @model_validator(mode="after")
    def _runnable(self) -> USCAParams:
        # exponential mechanism: temperature 2Δ/ε with Δ = 2·B_y·Ŝ and Ŝ <= sup k(w, w)/τ = 1
        check_noise_scale(4.0 * self.reward_bound / self.epsilon, "the exponential mechanism's scale 4·B_y/ε",
                          "epsilon, reward_bound")
        check_run_cost("usca", {"horizon": self.horizon})
        operations = usca_setup_operations(self.horizon, self.kernel, self.dim,
                                           usca_min_approx_size(self.horizon, self.kernel, self.dim))
        if operations > MAX_SETUP_OPERATIONS:
            raise ValueError(f"horizon: {self.horizon} needs at least {operations:.3g} operations to set USCA up "
                             f"(feature dimension {usca_feature_dimension(self.kernel, self.dim)}), more than the "
                             f"{MAX_SETUP_OPERATIONS:.3g} a creation may take")
        return self

    @property
    def dim(self) -> int:
        """D = dx + dc."""
        return self.action_dim + self.context_dim


class KLMABParams(StrictModel):
    """KL-regularised MAB policy over a declared public domain (a per-arm count floor)."""

    n_arms: int = Field(ge=1, le=MAX_ARMS, description="K, the public action space.")
    eta: float = Field(gt=0, allow_inf_nan=False, description="η > 0, KL strength.")
    beta0: float = Field(1.0, ge=0, allow_inf_nan=False, description="β0 >= 0, pessimism.")
    reward_bound: float = Field(1.0, gt=0, allow_inf_nan=False, description="R: rewards in [0, R].")
    min_count: int = Field(ge=2, description="m: the public per-arm count floor; data below it is refused.")

    @model_validator(mode="after")
    def _finite_guarantee(self) -> KLMABParams:
        epsilon = self.sample_epsilon()
        if not math.isfinite(epsilon):
            raise ValueError(f"eta: {self.eta!r} gives each sample ε = {epsilon} (Theorem 1 at N = min_count): "
                             "no finite privacy guarantee")
        return self

    def sample_epsilon(self) -> float:
        """ε of one sample over the declared domain (Theorem 1 at N_min = min_count)."""
        from dpbandits.algorithms.offline.accountants import theorem1_pure_epsilon

        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            try:
                return float(theorem1_pure_epsilon(self.min_count, reward_bound=self.reward_bound, beta0=self.beta0,
                                                   eta=self.eta))
            except (OverflowError, ZeroDivisionError):
                return math.inf
