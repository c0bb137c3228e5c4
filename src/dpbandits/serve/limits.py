"""What ``dpbandits serve`` refuses when an experiment is created: runs that cannot run.

An experiment is refused at creation (400, one line naming the parameter) — never accepted and then
stuck, failing or exhausting the server — when:

* its **noise scale** is not a finite number below :data:`MAX_NOISE_SCALE` (ε = 5e-324 gives a
  Laplace scale 1/ε = ∞; a scale past 2⁵² swamps every count a float holds exactly);
* its **guarantee** is not finite (a KL-offline policy with η = 1e-320 has ε = ∞), or its budget
  does not afford one release (:func:`check_release_affordable`);
* the **whole run** needs more memory than :data:`MAX_RUN_BYTES` or more CPU than
  :data:`MAX_RUN_SECONDS`, by the study cost model's lower bounds
  (:data:`dpbandits.experiments.costs.ALGORITHM_COSTS`, one trial) plus what the served agent keeps
  (its arms' features);
* DP-OD's optimal designs need K·d² above :data:`MAX_DESIGN_OPERATIONS` (K arms in d dimensions);
* USCA's **set-up** (feature map, γ̂, Gram matrix of the approximating set, certified sup bound)
  needs more than :data:`MAX_SETUP_OPERATIONS` multiply-adds (:func:`usca_setup_operations`);
* a **text** field holds a control character (NUL, escape codes) or a lone surrogate
  (:func:`check_text`): refused on every store, never stored, never a store error.

The limits are constants (not this machine's memory), so parameters accepted on one server are
accepted again when another process reloads them.
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Mapping
from typing import Any

from dpbandits._core.errors import PrivacyBudgetExceededError
from dpbandits.privacy.guarantees import Guarantee
from dpbandits.serve.errors import ServiceError

__all__ = [
    "MAX_DESIGN_OPERATIONS",
    "MAX_NOISE_SCALE",
    "MAX_RUN_BYTES",
    "MAX_RUN_SECONDS",
    "MAX_SETUP_OPERATIONS",
    "MIN_LENGTH_SCALE",
    "check_noise_scale",
    "check_release_affordable",
    "check_run_cost",
    "check_text",
    "usca_feature_dimension",
    "usca_max_approx_size",
    "usca_min_approx_size",
    "usca_setup_operations",
]

MAX_NOISE_SCALE = 2.0**52
"""Largest noise scale (e.g. Laplace b = Δ/ε) a served experiment may have."""
MAX_RUN_BYTES = 1e9
"""Memory one experiment's whole run may need (the cost model's lower bound)."""
MAX_RUN_SECONDS = 3600.0
"""Server CPU one experiment's whole run may need (the cost model's lower bound)."""
MAX_SETUP_OPERATIONS = 2e11
"""Multiply-adds USCA's set-up may take (about 10-60 CPU-seconds)."""
MAX_DESIGN_OPERATIONS = 2.5e8
"""Largest K·d² of a DP-OD experiment (its optimal designs over K arms in d dimensions: ~3 CPU-seconds)."""
MIN_LENGTH_SCALE = 0.01
"""Smallest kernel length scale of a served USCA experiment: below a hundredth of the unit cube's
side the served feature maps (20 quadrature nodes per axis, 512 Nyström landmarks) no longer represent
the kernel, and its information gain estimate degenerates."""

USCA_SUP_EVALUATIONS = 200_000
"""Evaluations of the certified sup bound (USCA's default budget)."""
_GAMMA_REPEATS = 3  # designs of T points averaged by USCA's γ̂ estimate


def check_text(value: str, name: str) -> str:
    """``value`` if it has no control character (category Cc) and no lone surrogate (Cs).

    Raises
    ------
    ValueError
        Naming the field and the first offending character (pydantic turns it into a 422/400).
    """
    for position, character in enumerate(value):
        if unicodedata.category(character) in ("Cc", "Cs"):
            raise ValueError(f"{name} must not contain control characters; got {character!r} at position {position}")
    return value


def check_noise_scale(scale: float, what: str, parameters: str = "epsilon") -> None:
    """Refuse a noise scale that is not finite or above :data:`MAX_NOISE_SCALE`.

    Raises
    ------
    ValueError
        Naming the ``parameters`` that set it, ``what`` it is (e.g. ``"the Laplace scale 1/ε"``) and
        its value.
    """
    if not math.isfinite(scale) or scale > MAX_NOISE_SCALE:
        raise ValueError(f"{parameters}: {what} = {scale:.3g} must be a finite number <= 2^52 (the noise would "
                         "swamp every value: the run could release nothing useful)")


def check_run_cost(algorithm: str, params: Mapping[str, Any], *, kept_bytes: float = 0.0) -> None:
    """Refuse a run whose memory or CPU, by the study cost model (one trial), exceeds the serve limits.

    Parameters
    ----------
    algorithm : str
        The registered algorithm's name in :data:`~dpbandits.experiments.costs.ALGORITHM_COSTS`.
    params : mapping
        Its parameters (``budget``, ``horizon``, ...).
    kept_bytes : float
        What the served agent keeps besides (its arms' features).

    Raises
    ------
    ValueError
        Naming the parameter that drives the cost, its value, the estimate and the limit.
    """
    from dpbandits.experiments.costs import ALGORITHM_COSTS, TRIAL_FLOOR_SECONDS

    rule = ALGORITHM_COSTS.get(algorithm)
    cost = rule(params) if rule is not None else None
    seconds = max(TRIAL_FLOOR_SECONDS, 0.0 if cost is None else cost.seconds)
    memory = kept_bytes + (0.0 if cost is None else cost.bytes_per_trial + cost.bytes_per_task)
    driver = (cost.driver if cost is not None else None) or "parameters"
    value = params.get(driver, "")
    if memory > MAX_RUN_BYTES:
        raise ValueError(f"{driver}: {value} needs at least {memory / 1e6:.3g} MB for the run, more than the "
                         f"{MAX_RUN_BYTES / 1e6:.0f} MB an experiment may use")
    if seconds > MAX_RUN_SECONDS:
        raise ValueError(f"{driver}: {value} needs at least {seconds:.3g} CPU-seconds for the run, more than the "
                         f"{MAX_RUN_SECONDS:.0f} an experiment may use")


def usca_feature_dimension(kernel: str, dim: int) -> int:
    """Size of USCA's default feature map: 20 quadrature nodes per axis (SE, D <= 2), else 512 landmarks."""
    return 20**dim if kernel == "se" and dim <= 2 else 512


def usca_setup_operations(horizon: int, kernel: str, dim: int, approx_size: int) -> float:
    """Multiply-adds of USCA's set-up with feature dimension D and approximating set of M points.

    γ̂ (3 designs of T points: 3·T·D²), the Gram matrix of the approximating set (M·D²), the
    certified sup bound (at most 200,000 variance evaluations of D² each) and the learning actions.
    """
    features = usca_feature_dimension(kernel, dim)
    return float(features) ** 2 * (_GAMMA_REPEATS * horizon + approx_size + USCA_SUP_EVALUATIONS)


def usca_min_approx_size(horizon: int, kernel: str, dim: int) -> int:
    """A lower bound on USCA's M = T·⌈T/γ̂⌉, known before γ̂ is estimated.

    γ̂ = ½·log det(I + ΦᵀΦ/τ) over T points, τ = 1, with feature vectors of squared norm at most 2
    (the served feature maps approximate k(w, w) = 1): the D eigenvalues sum to at most 2T, so
    γ̂ <= ½·D·log(1 + 2T/D) (arithmetic–geometric means), hence M >= T·⌈T/(½·D·log(1 + 2T/D))⌉.
    """
    features = usca_feature_dimension(kernel, dim)
    gamma_upper = 0.5 * features * math.log1p(2.0 * horizon / features)
    return horizon * max(1, math.ceil(horizon / gamma_upper))


def usca_max_approx_size(horizon: int, kernel: str, dim: int) -> int:
    """The largest M = T·⌈T/γ̂⌉ whose set-up stays within :data:`MAX_SETUP_OPERATIONS` (>= T if any)."""
    features = float(usca_feature_dimension(kernel, dim)) ** 2
    return max(0, int(MAX_SETUP_OPERATIONS / features) - _GAMMA_REPEATS * horizon - USCA_SUP_EVALUATIONS)


def check_release_affordable(guarantee: Guarantee, epsilon_budget: float | None, delta_budget: float) -> None:
    """Refuse a guarantee that is not finite, or a budget smaller than one release of it.

    Raises
    ------
    ServiceError
        ``not_private`` (400) if ε of one release is not a finite number.
    PrivacyBudgetExceededError
        If the budget cannot pay for one release (nothing could ever be released).
    """
    if not guarantee.is_finite or not math.isfinite(guarantee.epsilon):
        raise ServiceError(f"these parameters give no finite privacy guarantee ({guarantee}); the "
                                    "service runs private experiments only", code="not_private")
    if epsilon_budget is not None and guarantee.epsilon > epsilon_budget:
        raise PrivacyBudgetExceededError(f"epsilon_budget={epsilon_budget!r} is smaller than one release's "
                                         f"ε = {guarantee.epsilon:.6g}: nothing could be released")
    if guarantee.delta > delta_budget:
        raise PrivacyBudgetExceededError(f"delta_budget={delta_budget!r} is smaller than one release's "
                                         f"δ = {guarantee.delta:.6g}: nothing could be released")
