"""Privacy mechanisms: Laplace, Gaussian, exponential / Gibbs, grid exponential, report-noisy-max.

Every mechanism shares a small verb set:

* ``release(data, rng=None, backend=None)`` — run the mechanism once (per batch row);
* ``guarantee(unit, neighbouring)`` — the guarantee it gives, as a :class:`~dpbandits.privacy.guarantees.Guarantee`;
* ``event`` — the privacy event for accounting (:mod:`dpbandits.privacy.accounting`);
* ``example_input()`` — a valid input, used by the contract tests and the docs.

Finite-output mechanisms also expose their exact output distribution (``probabilities``), and the
additive ones their noise scale (``scale`` / ``sigma``), which is what the auditors need.

The generalised exponential mechanism (Gibbs distribution) π(a) ∝ π0(a)·exp(u(a)/η) is computed in log
space by :func:`gibbs_log_probabilities`; this is the sampler of the KL-regularised policies.

Noise comes from a backend (:mod:`dpbandits.privacy.noise`). Every release verb (``release``,
``sample``) is **secure by default**: OpenDP noise from the OS CSPRNG, added (or sampled from the
exponential weights) inside OpenDP, so the release is floating-point safe. Seeded NumPy noise —
idealised numerics, right for simulation and **not** for deployment (Mironov 2012; Ilvento 2020) —
needs ``insecure_seeded_noise=True`` and warns. Vectorised simulations use a
:class:`~dpbandits.privacy.noise.NumpyNoise` backend's verbs directly with a mechanism's parameters
(``scale``, ``sigma``, ``log_probabilities``).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpbandits._core.errors import InvalidParameterError
from dpbandits._core.rng import RNGLike
from dpbandits._core.validation import check_delta, check_epsilon, check_one_of, check_sensitivity
from dpbandits.privacy._exponential import (
    ExponentialMechanism,
    GibbsMechanism,
    GridExponentialMechanism,
    gibbs_log_probabilities,
    sample_log_weights,
    uniform_grid,
)
from dpbandits.privacy._mechanism import BackendLike as BackendLike
from dpbandits.privacy._mechanism import Mechanism, _check_values
from dpbandits.privacy._noisy_max import ReportNoisyMaxMechanism, report_noisy_max
from dpbandits.privacy.accounting import Accountant, GaussianEvent, LaplaceEvent, gaussian_delta
from dpbandits.privacy.composition import _gaussian_delta

__all__ = [
    "ExponentialMechanism",
    "GaussianMechanism",
    "GibbsMechanism",
    "GridExponentialMechanism",
    "LaplaceMechanism",
    "Mechanism",
    "ReportNoisyMaxMechanism",
    "analytic_gaussian_sigma",
    "classical_gaussian_sigma",
    "gaussian_delta",
    "gibbs_log_probabilities",
    "list_mechanisms",
    "report_noisy_max",
    "sample_log_weights",
    "uniform_grid",
]

# ---------------------------------------------------------------------------------------------------
# Laplace
# ---------------------------------------------------------------------------------------------------


class LaplaceMechanism(Mechanism):
    """The Laplace mechanism: f(D) + Lap(b) entrywise, b = Δ/ε.

    Parameters
    ----------
    sensitivity : float
        Δ > 0, the ℓ1-sensitivity of the released value (of the whole array, per dataset).
    epsilon : float
        ε > 0, finite.

    Privacy
    -------
    ε-DP for the unit under which ``sensitivity`` bounds ‖f(D) − f(D')‖₁. Noise is i.i.d. per entry,
    so a batch of independent trials (batch dimension first) can be released in one call, each trial
    ε-DP for its own data. Releases are secure by default (OpenDP adds the noise: floating-point safe);
    seeded NumPy noise (``insecure_seeded_noise=True``) is idealised numerics, for simulation only.

    References
    ----------
    Dwork, McSherry, Nissim & Smith (2006); Dwork & Roth (2014), Theorem 3.6.

    Examples
    --------
    >>> from dpbandits.privacy.mechanisms import LaplaceMechanism
    >>> mech = LaplaceMechanism(sensitivity=1.0, epsilon=0.5)
    >>> mech.scale
    2.0
    >>> mech.release([0.0, 1.0]).shape
    (2,)
    """

    name = "laplace"
    reference = "Dwork, McSherry, Nissim & Smith (2006); Dwork & Roth (2014), Theorem 3.6"

    def __init__(self, sensitivity: float, epsilon: float) -> None:
        self.sensitivity = check_sensitivity(sensitivity)
        self._epsilon = check_epsilon(epsilon)
        # b = Δ/ε
        self.scale = self.sensitivity / self._epsilon

    @property
    def epsilon(self) -> float:
        """ε."""
        return self._epsilon

    @property
    def event(self) -> LaplaceEvent:
        """``LaplaceEvent(scale=b, sensitivity=Δ)``."""
        return LaplaceEvent(self.scale, self.sensitivity)

    def release(
        self, data: ArrayLike, rng: RNGLike = None, backend: BackendLike = None, *, insecure_seeded_noise: bool = False,
        accountant: Accountant | None = None,
    ) -> NDArray[np.float64]:
        """Return ``data`` + i.i.d. Laplace(b) noise (same shape as ``data``; 0-d for a scalar)."""
        values = _check_values(data, "value")
        return self._noise(rng, backend, insecure_seeded_noise, accountant).add_laplace(values, self.scale)

    def example_input(self) -> NDArray[np.float64]:
        """Return a small vector of values."""
        return np.array([0.0, 0.5, 1.0])

    def __repr__(self) -> str:
        return f"LaplaceMechanism(sensitivity={self.sensitivity!r}, epsilon={self._epsilon!r})"


# ---------------------------------------------------------------------------------------------------
# Gaussian
# ---------------------------------------------------------------------------------------------------


def classical_gaussian_sigma(l2_sensitivity: float, epsilon: float, delta: float) -> float:
    """Return the classical calibration σ = Δ·√(2 ln(1.25/δ))/ε, valid for ε < 1 only.

    Raises
    ------
    InvalidParameterError
        If ε >= 1 (the classical theorem does not hold there; use the analytic calibration) or δ = 0.

    References
    ----------
    Dwork & Roth (2014), Theorem A.1.

    Examples
    --------
    >>> from dpbandits.privacy.mechanisms import classical_gaussian_sigma
    >>> round(classical_gaussian_sigma(1.0, 0.5, 1e-5), 4)
    9.6896
    """
    delta_f = check_sensitivity(l2_sensitivity, "l2_sensitivity")
    eps = check_epsilon(epsilon)
    delta = check_delta(delta)
    if eps >= 1.0:
        raise InvalidParameterError(
            f"epsilon must be < 1 for the classical Gaussian calibration; got {eps!r} "
            "(use calibration='analytic', valid for every epsilon > 0)"
        )
    if delta == 0.0:
        raise InvalidParameterError("delta must be > 0 for the Gaussian mechanism; got 0.0")
    # σ = Δ·√(2 ln(1.25/δ))/ε
    return delta_f * math.sqrt(2.0 * math.log(1.25 / delta)) / eps


def analytic_gaussian_sigma(l2_sensitivity: float, epsilon: float, delta: float) -> float:
    """Return the smallest σ (rounded up) with which the Gaussian mechanism is (ε, δ)-DP.

    Solves Φ(Δ/(2σ) − εσ/Δ) − e^ε·Φ(−Δ/(2σ) − εσ/Δ) = δ for σ with :func:`scipy.optimize.brentq`
    and rounds σ up until the exact δ(σ) <= δ holds in floating point.

    References
    ----------
    Balle & Wang (2018), "Improving the Gaussian mechanism for differential privacy", Theorem 8 and
    Algorithm 1.

    Examples
    --------
    >>> from dpbandits.privacy.mechanisms import analytic_gaussian_sigma
    >>> round(analytic_gaussian_sigma(1.0, 1.0, 1e-5), 2)
    3.73
    """
    from scipy.optimize import brentq  # lazy: keep `import dpbandits` light

    delta_f = check_sensitivity(l2_sensitivity, "l2_sensitivity")
    eps = check_epsilon(epsilon)
    delta = check_delta(delta)
    if delta == 0.0:
        raise InvalidParameterError("delta must be > 0 for the Gaussian mechanism; got 0.0")

    # δ(σ) decreases in σ; work with the ratio s = σ/Δ (μ = 1/s)
    def excess(s: float) -> float:
        return _gaussian_delta(1.0 / s, eps) - delta

    low, high = 1e-3, 1.0
    while excess(low) < 0.0:
        low /= 2.0
    while excess(high) > 0.0:
        high *= 2.0
    sigma = float(brentq(excess, low, high, xtol=1e-14, rtol=1e-14)) * delta_f
    # round σ up: δ(σ) <= δ must hold exactly as gaussian_delta computes it (μ = Δ/σ)
    while _gaussian_delta(delta_f / sigma, eps) > delta:
        sigma *= 1.0 + 1e-12
    return sigma


class GaussianMechanism(Mechanism):
    """The Gaussian mechanism: f(D) + N(0, σ²) entrywise.

    Parameters
    ----------
    l2_sensitivity : float
        Δ > 0, the ℓ2-sensitivity of the released value (of the whole array, per dataset).
    epsilon : float
        ε > 0, finite (< 1 for the classical calibration).
    delta : float
        δ in (0, 1).
    calibration : {"analytic", "classical"}, default "analytic"
        ``"analytic"``: the smallest σ (Balle & Wang 2018), valid for every ε;
        ``"classical"``: σ = Δ·√(2 ln(1.25/δ))/ε (Dwork & Roth, Theorem A.1), ε < 1 only.

    Privacy
    -------
    (ε, δ)-DP for the unit under which ``l2_sensitivity`` bounds ‖f(D) − f(D')‖₂. Seeded NumPy noise is
    idealised numerics (simulation only, ``insecure_seeded_noise=True``); the default secure backend is
    floating-point safe.

    References
    ----------
    Balle & Wang (2018), Theorem 8; Dwork & Roth (2014), Theorem A.1.

    Examples
    --------
    >>> from dpbandits.privacy.mechanisms import GaussianMechanism
    >>> round(GaussianMechanism(1.0, 1.0, 1e-5).sigma, 2)
    3.73
    """

    name = "gaussian"

    def __init__(
        self, l2_sensitivity: float, epsilon: float, delta: float, calibration: str = "analytic"
    ) -> None:
        self.l2_sensitivity = check_sensitivity(l2_sensitivity, "l2_sensitivity")
        self._epsilon = check_epsilon(epsilon)
        self._delta = check_delta(delta)
        self.calibration = check_one_of(calibration, "calibration", ("analytic", "classical"))
        if calibration == "analytic":
            self.sigma = analytic_gaussian_sigma(self.l2_sensitivity, self._epsilon, self._delta)
            self.reference = "Balle & Wang (2018), Theorem 8 (analytic Gaussian mechanism)"
        else:
            self.sigma = classical_gaussian_sigma(self.l2_sensitivity, self._epsilon, self._delta)
            self.reference = "Dwork & Roth (2014), Theorem A.1 (classical Gaussian mechanism)"

    @property
    def epsilon(self) -> float:
        """ε."""
        return self._epsilon

    @property
    def delta(self) -> float:
        """δ."""
        return self._delta

    @property
    def event(self) -> GaussianEvent:
        """``GaussianEvent(sigma=σ, l2_sensitivity=Δ)``."""
        return GaussianEvent(self.sigma, self.l2_sensitivity)

    def release(
        self, data: ArrayLike, rng: RNGLike = None, backend: BackendLike = None, *, insecure_seeded_noise: bool = False,
        accountant: Accountant | None = None,
    ) -> NDArray[np.float64]:
        """Return ``data`` + i.i.d. N(0, σ²) noise (same shape as ``data``)."""
        values = _check_values(data, "value")
        return self._noise(rng, backend, insecure_seeded_noise, accountant).add_gaussian(values, self.sigma)

    def example_input(self) -> NDArray[np.float64]:
        """Return a small vector of values."""
        return np.array([0.0, 0.5, 1.0])

    def __repr__(self) -> str:
        return (
            f"GaussianMechanism(l2_sensitivity={self.l2_sensitivity!r}, epsilon={self._epsilon!r}, "
            f"delta={self._delta!r}, calibration={self.calibration!r})"
        )


# ---------------------------------------------------------------------------------------------------
# Registry (for contract tests and discovery)
# ---------------------------------------------------------------------------------------------------


def list_mechanisms() -> dict[str, Callable[[], Mechanism]]:
    """Return every registered mechanism as name → factory with default parameters.

    Examples
    --------
    >>> from dpbandits.privacy.mechanisms import list_mechanisms
    >>> sorted(list_mechanisms())[:3]
    ['exponential', 'gaussian_analytic', 'gaussian_classical']
    """
    return {
        "laplace": lambda: LaplaceMechanism(sensitivity=1.0, epsilon=1.0),
        "gaussian_analytic": lambda: GaussianMechanism(1.0, 1.0, 1e-5, calibration="analytic"),
        "gaussian_classical": lambda: GaussianMechanism(1.0, 0.5, 1e-5, calibration="classical"),
        "exponential": lambda: ExponentialMechanism(sensitivity=1.0, epsilon=1.0),
        "gibbs": lambda: GibbsMechanism(np.log([0.4, 0.3, 0.2, 0.1]), temperature=0.5, sensitivity=0.1),
        "grid_exponential": lambda: GridExponentialMechanism(uniform_grid(0.0, 1.0, [4, 3]), 1.0, 1.0),
        "report_noisy_max": lambda: ReportNoisyMaxMechanism(sensitivity=1.0, epsilon=1.0),
    }
