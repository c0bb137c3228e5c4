"""Fit of USCA's error-rate shape ER ≈ a·√(γ_T/T) + b·γ_T/(Tε)·log(e + Tε/γ_T) (spec E1, analysis 4).

The claim of Theorem 4.1 is ER = Õ(√(γ_T/T) + γ_T/(Tε)); the prior-art rate is
√(γ_T/T) + √(γ_T/(Tε)). Both shapes are fitted by non-negative least squares to measured error rates
over a grid of (T, ε); the better-fitting shape (higher R²) is the one the data support. Rows with
ε = ∞ have no privacy term.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy.optimize import nnls

from dpbandits._core.errors import InvalidParameterError
from dpbandits._core.typing import FloatArray
from dpbandits._core.validation import check_array

__all__ = ["RateFit", "fit_error_rate", "prior_art_privacy_term", "privacy_term", "statistical_term"]


@dataclass(frozen=True)
class RateFit:
    """Non-negative least-squares fits of the two rate shapes.

    Attributes
    ----------
    statistical, privacy : float
        a and b of the USCA shape a·√(γ/T) + b·γ/(Tε)·log(e + Tε/γ).
    r_squared : float
        R² of the USCA shape.
    prior_statistical, prior_privacy, prior_r_squared : float
        a, b and R² of the prior-art shape a·√(γ/T) + b·√(γ/(Tε)).
    residuals : ndarray
        ER − fit of the USCA shape.
    """

    statistical: float
    privacy: float
    r_squared: float
    prior_statistical: float
    prior_privacy: float
    prior_r_squared: float
    residuals: FloatArray


def statistical_term(horizon: FloatArray, gamma: FloatArray) -> FloatArray:
    """√(γ_T/T)."""
    return np.sqrt(gamma / horizon)


def privacy_term(horizon: FloatArray, epsilon: FloatArray, gamma: FloatArray) -> FloatArray:
    """γ_T/(Tε)·log(e + Tε/γ_T), 0 where ε = ∞."""
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = horizon * epsilon / gamma
        return np.where(np.isinf(epsilon), 0.0, np.log(math.e + ratio) / ratio)


def prior_art_privacy_term(horizon: FloatArray, epsilon: FloatArray, gamma: FloatArray) -> FloatArray:
    """√(γ_T/(Tε)), 0 where ε = ∞."""
    return np.sqrt(gamma / (horizon * epsilon))


def _nnls_fit(design: FloatArray, target: FloatArray) -> tuple[FloatArray, float, FloatArray]:
    coefficients, _ = nnls(design, target)
    residuals = target - design @ coefficients
    total = float(np.sum((target - target.mean()) ** 2))
    r_squared = 1.0 - float(np.sum(residuals**2)) / total if total > 0 else 1.0
    return coefficients, r_squared, residuals


def fit_error_rate(horizon: ArrayLike, epsilon: ArrayLike, gamma: ArrayLike, error: ArrayLike) -> RateFit:
    """Fit both rate shapes to error rates measured at (T, ε) with information gain γ̂_T.

    Parameters
    ----------
    horizon, epsilon, gamma, error : array_like of shape (n,)
        T, ε (``inf`` allowed), γ̂_T and the measured ER of each grid point.

    Returns
    -------
    RateFit
    """
    t = check_array(horizon, "horizon", ndim=1)
    eps = check_array(epsilon, "epsilon", ndim=1, finite=False)
    g = check_array(gamma, "gamma", ndim=1)
    er = check_array(error, "error", ndim=1)
    if not (t.shape == eps.shape == g.shape == er.shape) or t.size < 2:
        raise InvalidParameterError(
            f"horizon, epsilon, gamma and error must have the same length >= 2; got {t.shape}, {eps.shape}, "
            f"{g.shape}, {er.shape}"
        )
    if np.any(t <= 0) or np.any(g <= 0) or np.any(eps <= 0) or np.any(np.isnan(eps)):
        raise InvalidParameterError("horizon, gamma and epsilon must be > 0")
    stat = statistical_term(t, g)
    ours, r2, residuals = _nnls_fit(np.column_stack([stat, privacy_term(t, eps, g)]), er)
    with np.errstate(divide="ignore"):
        prior_priv = np.where(np.isinf(eps), 0.0, prior_art_privacy_term(t, eps, g))
    prior, prior_r2, _ = _nnls_fit(np.column_stack([stat, prior_priv]), er)
    return RateFit(
        statistical=float(ours[0]), privacy=float(ours[1]), r_squared=r2,
        prior_statistical=float(prior[0]), prior_privacy=float(prior[1]), prior_r_squared=prior_r2,
        residuals=residuals,
    )
