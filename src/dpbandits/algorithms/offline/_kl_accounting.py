"""Shared vocabulary of the KL accountants: units, variants, what they read of a policy, results.

The accountants (:mod:`.accountants` for the linear and RLHF policies, :mod:`.accountants_mab` for
the MAB policy) read a fitted policy through the protocols here, so they depend on no policy class,
and build every guarantee through ``_result`` (a precondition that fails is ε = ∞ with its
reason, or an error with ``strict=True``; δ is computed in log space and capped at 1).
"""

from __future__ import annotations

import math
import warnings
from typing import Protocol

import numpy as np
from numpy.typing import ArrayLike

from dpbandits._core.errors import InvalidParameterError, PaperVariantWarning
from dpbandits._core.typing import FloatArray, IntArray
from dpbandits._core.validation import check_in_interval, check_one_of, check_positive_float
from dpbandits.privacy.guarantees import ApproxDP, Guarantee, Neighbouring, PureDP

__all__ = [
    "KINDS",
    "PAPER",
    "SCOPES",
    "UNIT_LINEAR",
    "UNIT_MAB",
    "UNIT_RLHF_LABEL",
    "UNIT_RLHF_RECORD",
    "VARIANTS",
    "FittedElliptical",
    "FittedLinear",
    "FittedMAB",
    "FittedRLHF",
]


# ----------------------------------------------------------------- what the accountants read
# The accountants read a fitted policy through these protocols, so they depend on no policy class
# (the policies import this module to compute their guarantees).
class FittedMAB(Protocol):
    """What :func:`~dpbandits.algorithms.offline.accountants_mab.account_mab` reads of a fitted :class:`~dpbandits.algorithms.offline.KLMABPolicy`."""

    eta: float
    beta0: float
    n_arms: int
    reward_bound: float
    min_count: int | None
    log_reference: FloatArray
    counts_: IntArray
    reward_sums_: FloatArray
    reward_minima_: FloatArray
    reward_maxima_: FloatArray
    log_probabilities_: FloatArray

    def _check_fitted(self) -> None: ...


class FittedElliptical(Protocol):
    """What the linear and RLHF accountants read of a fitted elliptical KL policy."""

    eta: float
    beta0: float
    ridge: float
    lambda_min_: float
    n_features_in_: int
    n_records_: int
    min_eigenvalue: float | None
    theta_: FloatArray
    covariance_: FloatArray
    cholesky_: FloatArray

    def _check_fitted(self) -> None: ...

    def _check_query(self, action_features: ArrayLike) -> FloatArray: ...

    def penalties(self, action_features: ArrayLike) -> FloatArray:
        """Γ(x, a) = ‖φ(x, a)‖_{Σ_D⁻¹} of each candidate."""

    def log_probabilities(self, action_features: ArrayLike, reference: ArrayLike | None = None) -> FloatArray:
        """Log π̃(a|x; D) of the candidates."""


class FittedLinear(FittedElliptical, Protocol):
    """What :func:`~dpbandits.algorithms.offline.accountants.account_linear` reads of a fitted :class:`~dpbandits.algorithms.offline.KLLinearPolicy`."""

    reward_bound: float
    max_records: int | None


class FittedRLHF(FittedElliptical, Protocol):
    """What :func:`~dpbandits.algorithms.offline.accountants.account_rlhf` reads of a fitted :class:`~dpbandits.algorithms.offline.KLRLHFPolicy`."""

    norm_bound: float
    solver_tolerance: float

    @property
    def max_difference_leverage_(self) -> float:
        """max_i ‖z_i‖_{M⁻¹}."""

    @property
    def comparisons_(self) -> tuple[FloatArray, FloatArray]:
        """(z_i, y_i) of the fitted data."""

    @property
    def total_multiplier_(self) -> float:
        """n·ν, the multiplier of the constraint ‖θ‖ <= B at the fit."""

    def solver_divergence(self, action_features: ArrayLike | None, solver_error: float | None = None) -> float:
        """ε̂: D∞ between the computed and the exact policy at a context."""

    def feature_range_metric(self, features: ArrayLike) -> float:
        """max_{a,a'} ‖φ_a − φ_a'‖_{M⁻¹} over the candidates."""

PAPER = "Zhang, Panaganti, Shi, Ziani, Wierman (2025), KL-regularization itself is DP"
UNIT_MAB = "one logged record (arm, reward)"
UNIT_LINEAR = "one logged record (features, reward)"
UNIT_RLHF_LABEL = "one preference label (features public)"
UNIT_RLHF_RECORD = "one preference record (feature pair, label)"

VARIANTS = ("corrected", "paper", "refined", "tight")
_SMALLEST_DELTA = math.ulp(0.0)  # 5e-324, an upper bound on any positive δ that underflows
KINDS = ("pure", "approx")
SCOPES = ("instance", "domain")

_NO_CONTEXT: FloatArray = np.empty((0, 0))
"""Stands for "every context" (no action features): only context-free bounds are computed then."""


# ---------------------------------------------------------------------------------------- helpers
def _cap_log_delta(log_delta: float) -> float:
    """δ = exp(min(0, log δ)): the formulas can exceed 1 (errata KL-37).

    A finite log δ below the float64 range is rounded *up* to the smallest positive float, never to
    0: δ = 0 would claim pure ε-DP, which is false when some mass escapes the bound (e.g. an arm with
    N(a) = 0 whose probability is e^{−3000} on a neighbour).
    """
    if log_delta == -math.inf:
        return 0.0
    return max(float(math.exp(min(0.0, log_delta))), _SMALLEST_DELTA)


def _logsumexp(values: FloatArray) -> float:
    """Log Σ exp(values) of a 1-D float64 array, stable: the largest terms are taken out of the sum.

    With a = max(values), m the number of entries equal to a and s = Σ_{v < a} e^{v − a},
    log Σ e^v = log1p(s/m) + log m + a, computed in that order (SciPy's ``logsumexp`` since 1.15
    does exactly these operations, so this returns the same float to the bit, without importing
    ``scipy.special``, whose import costs more than this whole command). A result that is not finite
    (an infinite or NaN input) is the direct log Σ e^v; an empty array gives ``-inf``.
    """
    a = np.asarray(values, dtype=np.float64).reshape(-1)
    if a.size == 0:
        return -math.inf
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        a_max = np.max(a, keepdims=True)
        top = a == a_max
        m = np.sum(top, keepdims=True, dtype=np.float64)
        rest = np.exp(np.where(top, -np.inf, a) - a_max)
        s = np.sum(rest, keepdims=True, dtype=np.float64)
        s = np.where(s == 0, s, s / m)
        out = np.log1p(s) + np.log(m) + a_max
        if not np.isfinite(out[0]):
            out = np.log(np.sum(np.exp(a), keepdims=True))
    return float(out[0])


def _paper_warning(claim: str) -> None:
    warnings.warn(
        f"variant='paper': {claim} is known to be invalid; "
        "the number returned is the paper's formula, not a valid guarantee",
        PaperVariantWarning,
        stacklevel=3,
    )


def _result(
    kind: str,
    epsilon: float,
    delta: float,
    *,
    unit: str,
    neighbouring: Neighbouring,
    reference: str,
    reason: str = "",
    strict: bool = False,
    domain: str | None = None,
) -> Guarantee:
    """A scoped guarantee: per-instance, or (``domain`` = its description) over a public domain."""
    if strict and not math.isfinite(epsilon):
        raise InvalidParameterError(f"precondition of {reference} fails: {reason}")
    if not math.isfinite(epsilon):
        delta = 1.0 if kind == "approx" else 0.0
    per_instance = domain is None
    if kind == "pure":
        return PureDP(epsilon=epsilon, unit=unit, neighbouring=neighbouring, reference=reference,
                      per_instance=per_instance, reason=reason, domain=domain or "")
    if delta >= 1.0 and not reason:
        reason = "delta capped at 1: the bound is vacuous"
    return ApproxDP(epsilon=epsilon, delta=min(1.0, delta), unit=unit, neighbouring=neighbouring,
                    reference=reference, per_instance=per_instance, reason=reason, domain=domain or "")


def _check_scope(scope: str, kind: str) -> bool:
    """Validate ``scope``; return whether it is ``"domain"`` (which gives pure guarantees only)."""
    check_one_of(scope, "scope", SCOPES)
    if scope == "domain" and kind != "pure":
        raise InvalidParameterError(
            f"scope='domain' gives pure guarantees only (kind='pure'); got kind={kind!r}"
        )
    return scope == "domain"


def _common(eta: float, beta0: float) -> tuple[float, float]:
    return check_positive_float(eta, "eta"), check_in_interval(beta0, "beta0", 0.0, math.inf, closed="left")
