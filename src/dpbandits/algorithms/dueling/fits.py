"""Shape fits of measured dueling regrets, with confidence intervals (the E2–E4 questions of the dueling studies).

Every fit is a least-squares line y ≈ c₀ + c₁·x through points (x_i, y_i) whose y_i are means over
trials with known standard errors s_i. The coefficients are the ordinary least-squares estimates;
their covariance is the sandwich (XᵀX)⁻¹ Xᵀ diag(s²) X (XᵀX)⁻¹, the exact covariance of the OLS
estimate when the y_i are independent with variances s_i² (the measurement error of the means), and
the 95% intervals are ±1.96 standard errors. That interval ignores lack of fit (points off the line
for a reason other than trial noise, as when a regret is nearly deterministic), so each fit also
reports the classical OLS interval from the residuals, σ̂²(XᵀX)⁻¹ with σ̂² = RSS/(n − 2) and the
Student-t quantile with n − 2 degrees of freedom (NaN with two points); a claim should hold on the
wider of the two. R² is the ordinary one. Three uses:

* :func:`fit_inverse_epsilon` — R(ε) = a + b/ε (Theorem 1 at fixed T; E2(a), E4);
* :func:`fit_line` on (K, excess) — excess regret linear in K (E2(b));
* :func:`fit_log_log` — y = C·x^p as log y = log C + p·log x (E2(c): the T-exponent of the privacy
  excess; E3: the √T slope; E4: the d-exponent of b), with s_i/y_i as the standard error of log y_i.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from dpbandits._core.errors import InvalidParameterError

__all__ = ["LineFit", "fit_inverse_epsilon", "fit_line", "fit_log_log"]

_Z95 = 1.959963984540054  # standard normal 97.5% quantile


@dataclass(frozen=True)
class LineFit:
    """y ≈ intercept + slope·x with standard errors, 95% intervals and R².

    Attributes
    ----------
    intercept, slope : float
    intercept_stderr, slope_stderr : float
        From the points' standard errors (NaN where they are unknown).
    r_squared : float
    n_points : int
    slope_residual_interval : (float, float)
        The classical OLS 95% interval of the slope from the residuals (t with n − 2 dof).
    """

    intercept: float
    slope: float
    intercept_stderr: float
    slope_stderr: float
    r_squared: float
    n_points: int
    slope_residual_interval: tuple[float, float] = (math.nan, math.nan)

    @property
    def slope_interval(self) -> tuple[float, float]:
        """95% confidence interval of the slope."""
        return (self.slope - _Z95 * self.slope_stderr, self.slope + _Z95 * self.slope_stderr)

    @property
    def slope_widest_interval(self) -> tuple[float, float]:
        """The union of the measurement-error and residual 95% intervals of the slope."""
        low, high = self.slope_interval
        r_low, r_high = self.slope_residual_interval
        if math.isnan(r_low):
            return low, high
        return min(low, r_low), max(high, r_high)

    @property
    def intercept_interval(self) -> tuple[float, float]:
        """95% confidence interval of the intercept."""
        return (self.intercept - _Z95 * self.intercept_stderr, self.intercept + _Z95 * self.intercept_stderr)

    def as_dict(self) -> dict[str, float | int | list[float]]:
        """JSON-ready form."""
        return {"intercept": self.intercept, "intercept_stderr": self.intercept_stderr,
                "intercept_ci95": list(self.intercept_interval), "slope": self.slope,
                "slope_stderr": self.slope_stderr, "slope_ci95": list(self.slope_interval),
                "slope_ci95_residual": list(self.slope_residual_interval),
                "slope_ci95_widest": list(self.slope_widest_interval),
                "r_squared": self.r_squared, "n_points": self.n_points}


def fit_line(x: ArrayLike, y: ArrayLike, stderr: ArrayLike | None = None) -> LineFit:
    """Ordinary least squares y ≈ c₀ + c₁·x, with the sandwich covariance from the points' standard errors.

    Raises
    ------
    InvalidParameterError
        With fewer than two distinct x, or non-finite values.
    """
    xs, ys = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    se = np.full(xs.shape, math.nan) if stderr is None else np.asarray(stderr, dtype=np.float64)
    if xs.ndim != 1 or xs.shape != ys.shape or xs.shape != se.shape:
        raise InvalidParameterError(f"x, y and stderr must be 1-d of equal length; got {xs.shape}, {ys.shape}, {se.shape}")
    if not (np.all(np.isfinite(xs)) and np.all(np.isfinite(ys))):
        raise InvalidParameterError("x and y must be finite")
    if np.unique(xs).size < 2:
        raise InvalidParameterError(f"x must hold at least two distinct values; got {np.unique(xs).tolist()}")
    design = np.stack([np.ones_like(xs), xs], axis=1)
    coefficients, *_ = np.linalg.lstsq(design, ys, rcond=None)
    bread = np.linalg.inv(design.T @ design)
    covariance = bread @ (design.T * se**2) @ design @ bread  # (XᵀX)⁻¹ Xᵀ diag(s²) X (XᵀX)⁻¹
    residual = ys - design @ coefficients
    total = float(np.sum((ys - ys.mean()) ** 2))
    r_squared = 1.0 - float(np.sum(residual**2)) / total if total > 0 else 1.0
    residual_interval = (math.nan, math.nan)
    if xs.size > 2:
        from scipy.stats import t as student_t

        sigma2 = float(np.sum(residual**2)) / (xs.size - 2)  # σ̂² = RSS/(n − 2)
        half = float(student_t.ppf(0.975, xs.size - 2)) * math.sqrt(sigma2 * bread[1, 1])
        residual_interval = (float(coefficients[1]) - half, float(coefficients[1]) + half)
    return LineFit(float(coefficients[0]), float(coefficients[1]), float(math.sqrt(covariance[0, 0])),
                   float(math.sqrt(covariance[1, 1])), r_squared, int(xs.size), residual_interval)


def fit_inverse_epsilon(epsilon: ArrayLike, regret: ArrayLike, stderr: ArrayLike | None = None) -> LineFit:
    """R(ε) ≈ a + b/ε: :func:`fit_line` on x = 1/ε (intercept a, slope b)."""
    eps = np.asarray(epsilon, dtype=np.float64)
    if np.any(~(eps > 0)) or np.any(np.isinf(eps)):
        raise InvalidParameterError(f"epsilon must be finite and > 0; got {eps.tolist()}")
    return fit_line(1.0 / eps, regret, stderr)


def fit_log_log(x: ArrayLike, y: ArrayLike, stderr: ArrayLike | None = None) -> LineFit:
    """Fit y ≈ C·x^p: :func:`fit_line` on (ln x, ln y) with standard errors s/y (delta method); slope p."""
    xs, ys = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if np.any(~(xs > 0)) or np.any(~(ys > 0)):
        raise InvalidParameterError(f"x and y must be > 0 for a log-log fit; got x={xs.tolist()}, y={ys.tolist()}")
    se = None if stderr is None else np.asarray(stderr, dtype=np.float64) / ys
    return fit_line(np.log(xs), np.log(ys), se)
