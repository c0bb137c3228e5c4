"""Report-noisy-max with Laplace noise (public from :mod:`dpbandits.privacy.mechanisms`)."""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpbandits._core.errors import InvalidParameterError
from dpbandits._core.rng import RNGLike
from dpbandits._core.validation import check_array, check_epsilon, check_sensitivity
from dpbandits.privacy._mechanism import BackendLike, Mechanism
from dpbandits.privacy.accounting import Accountant, PureEvent

__all__ = [
    "ReportNoisyMaxMechanism",
    "report_noisy_max",
]

# ---------------------------------------------------------------------------------------------------
# Report-noisy-max
# ---------------------------------------------------------------------------------------------------


class ReportNoisyMaxMechanism(Mechanism):
    """Report-noisy-max with Laplace noise: argmax_a (u(a) + Lap(b)).

    Parameters
    ----------
    sensitivity : float
        Δ > 0 of each utility.
    epsilon : float
        ε > 0, finite.
    monotone : bool, default False
        Utilities move in one direction between neighbours.
    one_utility_changes : bool, default False
        At most one utility changes between neighbours (e.g. one arm's mean in a MAB).

    Privacy
    -------
    ε-DP with b = 2Δ/ε in general, and b = Δ/ε when ``monotone`` or ``one_utility_changes``: fixing the
    noise of the other actions, each output event is a threshold on one noise variable that moves by at
    most Δ (Dwork & Roth, Claim 3.9 for the monotone case).

    References
    ----------
    Dwork & Roth (2014), Section 3.3, Claim 3.9; used as a baseline of the KL studies.
    """

    name = "report_noisy_max"
    reference = "Dwork & Roth (2014), Claim 3.9 (report noisy max)"

    def __init__(
        self, sensitivity: float, epsilon: float, monotone: bool = False, one_utility_changes: bool = False
    ) -> None:
        self.sensitivity = check_sensitivity(sensitivity)
        self._epsilon = check_epsilon(epsilon)
        self.monotone = bool(monotone)
        self.one_utility_changes = bool(one_utility_changes)
        # b = 2Δ/ε, or Δ/ε when monotone or when one utility changes
        factor = 1.0 if (self.monotone or self.one_utility_changes) else 2.0
        self.scale = factor * self.sensitivity / self._epsilon

    @property
    def epsilon(self) -> float:
        """ε."""
        return self._epsilon

    @property
    def event(self) -> PureEvent:
        """``PureEvent(epsilon)``."""
        return PureEvent(self._epsilon)

    def release(
        self, data: ArrayLike, rng: RNGLike = None, backend: BackendLike = None, *, insecure_seeded_noise: bool = False,
        accountant: Accountant | None = None,
    ) -> NDArray[np.int64]:
        """Return argmax_a (u(a) + Lap(b)) per batch row (last axis = actions)."""
        u = np.asarray(check_array(data, "utilities"), dtype=np.float64)
        if u.ndim == 0:
            raise InvalidParameterError(f"utilities must have at least one axis (actions); got shape {u.shape}")
        noisy = self._noise(rng, backend, insecure_seeded_noise, accountant).add_laplace(u, self.scale)
        return np.asarray(np.argmax(noisy, axis=-1), dtype=np.int64)

    def probabilities(self, utilities: ArrayLike) -> NDArray[np.float64]:
        """Return the exact output distribution for 1-d utilities (numerical integration).

        P(a) = ∫ f_b(x − u(a)) · Π_{a'≠a} F_b(x − u(a')) dx, with f_b, F_b the Laplace(b) density and CDF;
        computed with :func:`scipy.integrate.quad` (absolute error about 1e-10).
        """
        from scipy.integrate import quad  # lazy: keep `import dpbandits` light

        u = np.asarray(check_array(utilities, "utilities", ndim=1), dtype=np.float64)
        b = self.scale

        def laplace_cdf(x: NDArray[np.float64]) -> NDArray[np.float64]:
            return np.where(x < 0, 0.5 * np.exp(np.minimum(x, 0.0) / b), 1.0 - 0.5 * np.exp(-np.maximum(x, 0.0) / b))

        def integrand(x: float, a: int) -> float:
            density = math.exp(-abs(x - u[a]) / b) / (2.0 * b)
            others = laplace_cdf(x - np.delete(u, a))
            return density * float(np.prod(others))

        lo, hi = float(u.min()) - 60.0 * b, float(u.max()) + 60.0 * b
        points = sorted({float(v) for v in u})
        probs = np.array([
            quad(integrand, lo, hi, args=(a,), points=points, limit=200, epsabs=1e-12)[0] for a in range(u.size)
        ])
        return np.asarray(probs / probs.sum(), dtype=np.float64)

    def example_input(self) -> NDArray[np.float64]:
        """Return utilities for four actions."""
        return np.array([0.0, 0.3, 0.6, 1.0])

    def __repr__(self) -> str:
        return (
            f"ReportNoisyMaxMechanism(sensitivity={self.sensitivity!r}, epsilon={self._epsilon!r}, "
            f"monotone={self.monotone!r}, one_utility_changes={self.one_utility_changes!r})"
        )


def report_noisy_max(
    utilities: ArrayLike,
    sensitivity: float,
    epsilon: float,
    rng: RNGLike = None,
    *,
    monotone: bool = False,
    one_utility_changes: bool = False,
    backend: BackendLike = None,
    insecure_seeded_noise: bool = False,
    accountant: Accountant | None = None,
) -> NDArray[np.int64]:
    """Return argmax_a (u(a) + Lap(b)) per batch row; see :class:`ReportNoisyMaxMechanism`.

    Examples
    --------
    >>> from dpbandits.privacy.mechanisms import report_noisy_max
    >>> int(report_noisy_max([0.0, 100.0, 0.0], sensitivity=1.0, epsilon=1.0))
    1
    """
    mech = ReportNoisyMaxMechanism(sensitivity, epsilon, monotone=monotone, one_utility_changes=one_utility_changes)
    return mech.release(utilities, rng=rng, backend=backend, insecure_seeded_noise=insecure_seeded_noise,
                        accountant=accountant)
