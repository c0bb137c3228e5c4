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
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpbandits._core.errors import EmptySupportError, InvalidParameterError
from dpbandits._core.rng import RNGLike
from dpbandits._core.validation import (
    check_array,
    check_delta,
    check_epsilon,
    check_int,
    check_one_of,
    check_positive_float,
    check_sensitivity,
)
from dpbandits.privacy.accounting import (
    Accountant,
    GaussianEvent,
    LaplaceEvent,
    PrivacyEvent,
    PureEvent,
    gaussian_delta,
    spend,
)
from dpbandits.privacy.composition import _gaussian_delta
from dpbandits.privacy.guarantees import ApproxDP, Guarantee, Neighbouring, PureDP
from dpbandits.privacy.noise import NoiseBackend, privacy_noise

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

BackendLike = NoiseBackend | str | None


# ---------------------------------------------------------------------------------------------------
# Log-space Gibbs distribution and Gumbel-max sampling (shared by every selection mechanism)
# ---------------------------------------------------------------------------------------------------


def gibbs_log_probabilities(
    log_reference: ArrayLike, utility: ArrayLike, temperature: float
) -> NDArray[np.float64]:
    """Return log π(a) for the Gibbs distribution π(a) ∝ π0(a)·exp(u(a)/η), in log space.

    Parameters
    ----------
    log_reference : array_like of shape (..., n_actions)
        log π0(a); ``-inf`` where π0(a) = 0 (that action is never chosen).
    utility : array_like of shape (..., n_actions)
        u(a); ``-inf`` excludes an action.
    temperature : float
        η > 0 (``inf`` gives π = π0).

    Returns
    -------
    ndarray of shape (..., n_actions)
        Normalised log-probabilities (log-sum-exp over the last axis is 0).

    Raises
    ------
    EmptySupportError
        If every action has weight 0 in some row.
    InvalidParameterError
        If an input contains NaN or +inf, or the temperature is not > 0.

    Privacy
    -------
    With a utility of sensitivity Δu, sampling from this distribution is the (generalised)
    exponential mechanism and is 2Δu/η-DP (Δu/η for monotone utilities); see the KL paper's Lemma 1.

    References
    ----------
    McSherry & Talwar (2007); KL-regularisation paper, Lemma 1 and eq. (7).
    """
    eta = check_positive_float(temperature, "temperature", allow_inf=True)
    log_pi0 = np.asarray(log_reference, dtype=np.float64)
    u = np.asarray(utility, dtype=np.float64)
    if np.isnan(log_pi0).any() or np.isnan(u).any():
        raise InvalidParameterError("log_reference and utility must not contain NaN")
    if np.isposinf(log_pi0).any() or np.isposinf(u).any():
        raise InvalidParameterError("log_reference and utility must not contain +inf")
    # z(a) = log π0(a) + u(a)/η ; with η = ∞ the utility only excludes (−inf) actions
    with np.errstate(invalid="ignore"):
        scaled = np.where(np.isneginf(u), -np.inf, 0.0) if math.isinf(eta) else u / eta
        z = log_pi0 + scaled
    m = np.max(z, axis=-1, keepdims=True)
    if np.any(np.isneginf(m)):
        raise EmptySupportError("every action has zero weight (pi0 = 0 or utility = -inf everywhere)")
    # log Z = m + log Σ exp(z − m)
    log_z = m + np.log(np.sum(np.exp(z - m), axis=-1, keepdims=True))
    return np.asarray(z - log_z, dtype=np.float64)


def sample_log_weights(
    log_weights: ArrayLike,
    rng: RNGLike = None,
    size: int | None = None,
    *,
    backend: BackendLike = None,
    insecure_seeded_noise: bool = False,
) -> NDArray[np.int64]:
    """Sample indices from unnormalised log-weights by the Gumbel-max trick.

    Parameters
    ----------
    log_weights : array_like of shape (..., n_actions)
        Unnormalised log-weights; ``-inf`` entries are never chosen.
    rng : int, SeedSequence, Generator or None
        Seed of the draw; only with ``insecure_seeded_noise=True``.
    size : int, optional
        Number of independent draws (prepended to the batch shape).
    backend : NoiseBackend or str, optional
        Noise backend; default the secure OpenDP sampler (exact, no cutoff).
    insecure_seeded_noise : bool, default False
        Seeded NumPy Gumbel-max instead (simulation only; warns).

    Returns
    -------
    ndarray of int
        argmax_a (z(a) + G(a)) with G i.i.d. Gumbel(0, 1): an exact draw from softmax(z).
    """
    return privacy_noise(rng, insecure_seeded_noise=insecure_seeded_noise, backend=backend).gumbel_max(log_weights, size=size)


# ---------------------------------------------------------------------------------------------------
# Common interface
# ---------------------------------------------------------------------------------------------------


class Mechanism(ABC):
    """Common verbs of the privacy mechanisms.

    Attributes
    ----------
    name : str
        Registry name.
    epsilon : float
        ε of the guarantee.
    delta : float
        δ of the guarantee (0 for pure mechanisms).
    """

    name: str = "abstract"
    reference: str = ""

    @property
    @abstractmethod
    def epsilon(self) -> float:
        """ε of the guarantee."""

    @property
    def delta(self) -> float:
        """δ of the guarantee (0 for pure mechanisms)."""
        return 0.0

    @property
    @abstractmethod
    def event(self) -> PrivacyEvent:
        """The privacy event of one release, for accounting."""

    @abstractmethod
    def release(
        self, data: ArrayLike, rng: RNGLike = None, backend: BackendLike = None, *, insecure_seeded_noise: bool = False,
        accountant: Accountant | None = None,
    ) -> NDArray[Any]:
        """Run the mechanism once on ``data`` (once per batch row for selection mechanisms)."""

    @abstractmethod
    def example_input(self) -> NDArray[np.float64]:
        """Return a valid input for :meth:`release` (used by contract tests and docs)."""

    def _noise(self, rng: RNGLike, backend: BackendLike, insecure_seeded_noise: bool,
               accountant: Accountant | None, count: int = 1) -> NoiseBackend:
        """The release's noise source, after the accountant (if any) has recorded ``count`` events.

        The event is spent *before* any noise is drawn, so an over-budget release draws nothing.
        """
        noise = privacy_noise(rng, insecure_seeded_noise=insecure_seeded_noise, backend=backend, stacklevel=4)
        spend(accountant, self.event, count, label=f"{type(self).__name__}.release")
        return noise

    def guarantee(self, unit: str, neighbouring: Neighbouring | str, reference: str | None = None) -> Guarantee:
        """Return the guarantee of one release.

        Parameters
        ----------
        unit : str
            What one unit of neighbouring data is, in words ("one reward in the reward table").
        neighbouring : Neighbouring or str
            The relation under which the sensitivity given to the mechanism holds.
        reference : str, optional
            Defaults to the mechanism's textbook reference.

        Returns
        -------
        Guarantee
            :class:`PureDP` when δ = 0, else :class:`ApproxDP`.
        """
        ref = self.reference if reference is None else reference
        if self.delta == 0.0:
            return PureDP(epsilon=self.epsilon, unit=unit, neighbouring=neighbouring,  # type: ignore[arg-type]
                          reference=ref)
        return ApproxDP(epsilon=self.epsilon, delta=self.delta, unit=unit,
                        neighbouring=neighbouring, reference=ref)  # type: ignore[arg-type]


def _check_values(value: ArrayLike, name: str) -> NDArray[np.float64]:
    return np.asarray(check_array(value, name), dtype=np.float64)


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
# Exponential mechanism / Gibbs sampler
# ---------------------------------------------------------------------------------------------------


def _check_log_reference(log_reference: ArrayLike) -> NDArray[np.float64]:
    log_pi0 = np.asarray(check_array(log_reference, "log_reference", finite=False), dtype=np.float64)
    if np.isnan(log_pi0).any() or np.isposinf(log_pi0).any():
        raise InvalidParameterError("log_reference must not contain NaN or +inf")
    if np.all(np.isneginf(log_pi0), axis=-1).any():
        raise EmptySupportError("log_reference is -inf for every action (the reference has empty support)")
    return log_pi0


class GibbsMechanism(Mechanism):
    """The generalised exponential mechanism π(a) ∝ π0(a)·exp(u(a)/η) over a finite set (KL-policy sampler).

    Parameters
    ----------
    log_reference : array_like of shape (n_actions,) or (..., n_actions), optional
        log π0(a) of a *data-independent* reference; ``-inf`` excludes an action. ``None`` = uniform.
    temperature : float
        η > 0 (``inf`` samples from π0).
    sensitivity : float, optional
        Δu, the sensitivity of the utilities (max over actions of |u(a; D) − u(a; D')|). Without it no
        guarantee is claimed (``guarantee`` reports ε = ∞).
    monotone : bool, default False
        Whether utilities move in one direction between neighbours (halves ε).

    Privacy
    -------
    ε = 2Δu/η (Δu/η when monotone), pure DP, provided π0 does not depend on the data.

    References
    ----------
    McSherry & Talwar (2007), Theorem 6; KL-regularisation paper, Lemma 1 and eq. (7).

    Examples
    --------
    >>> import numpy as np
    >>> from dpbandits.privacy.mechanisms import GibbsMechanism
    >>> mech = GibbsMechanism(np.log([0.5, 0.25, 0.25]), temperature=1.0, sensitivity=0.1)
    >>> mech.probabilities([0.0, 0.0, 0.0]).round(2).tolist()
    [0.5, 0.25, 0.25]
    >>> round(mech.epsilon, 3)
    0.2
    """

    name = "gibbs"
    reference = "McSherry & Talwar (2007), Theorem 6; KL-regularisation paper, Lemma 1"

    def __init__(
        self,
        log_reference: ArrayLike | None = None,
        temperature: float = 1.0,
        *,
        sensitivity: float | None = None,
        monotone: bool = False,
    ) -> None:
        self.log_reference = None if log_reference is None else _check_log_reference(log_reference)
        self.temperature = check_positive_float(temperature, "temperature", allow_inf=True)
        self.sensitivity = None if sensitivity is None else check_sensitivity(sensitivity)
        self.monotone = bool(monotone)

    @property
    def epsilon(self) -> float:
        """ε = 2Δu/η (Δu/η when monotone); ∞ when no sensitivity was given."""
        if self.sensitivity is None:
            return math.inf
        factor = 1.0 if self.monotone else 2.0
        return factor * self.sensitivity / self.temperature

    @property
    def event(self) -> PureEvent:
        """``PureEvent(epsilon)``."""
        if math.isinf(self.epsilon):
            raise InvalidParameterError("sensitivity must be given to account for a GibbsMechanism; got None")
        return PureEvent(self.epsilon)

    def guarantee(self, unit: str, neighbouring: Neighbouring | str, reference: str | None = None) -> Guarantee:
        """Return the guarantee (ε = ∞ with the reason when no sensitivity was given)."""
        if self.sensitivity is None:
            return PureDP(epsilon=math.inf, unit=unit, neighbouring=neighbouring,  # type: ignore[arg-type]
                          reference=self.reference if reference is None else reference,
                          reason="no utility sensitivity given, so no privacy is claimed")
        return super().guarantee(unit, neighbouring, reference)

    def _utilities(self, utilities: ArrayLike) -> NDArray[np.float64]:
        u = np.asarray(check_array(utilities, "utilities"), dtype=np.float64)
        if u.ndim == 0:
            raise InvalidParameterError(f"utilities must have at least one axis (actions); got shape {u.shape}")
        if self.log_reference is not None:
            if self.log_reference.shape[-1] != u.shape[-1]:
                raise InvalidParameterError(
                    f"utilities must have {self.log_reference.shape[-1]} actions on the last axis; "
                    f"got utilities.shape={u.shape}"
                )
            try:
                np.broadcast_shapes(self.log_reference.shape, u.shape)
            except ValueError as exc:
                raise InvalidParameterError(
                    f"utilities.shape={u.shape} does not broadcast with log_reference.shape="
                    f"{self.log_reference.shape}"
                ) from exc
        return u

    def log_probabilities(self, utilities: ArrayLike) -> NDArray[np.float64]:
        """Return log π(a) (last axis = actions; leading axes are a batch)."""
        u = self._utilities(utilities)
        log_pi0 = np.zeros(u.shape[-1]) if self.log_reference is None else self.log_reference
        return gibbs_log_probabilities(log_pi0, u, self.temperature)

    def probabilities(self, utilities: ArrayLike) -> NDArray[np.float64]:
        """Return the exact output distribution π(a) (for audits and exact expected utilities)."""
        return np.exp(self.log_probabilities(utilities))

    def sample(
        self, utilities: ArrayLike, rng: RNGLike = None, size: int | None = None, backend: BackendLike = None,
        *, insecure_seeded_noise: bool = False, accountant: Accountant | None = None,
    ) -> NDArray[np.int64]:
        """Draw action indices from π (Gumbel-max on log π).

        Parameters
        ----------
        utilities : array_like of shape (..., n_actions)
        rng : int, SeedSequence, Generator or None
            Seed of the draw; only with ``insecure_seeded_noise=True``.
        size : int, optional
            Number of independent draws, prepended to the batch shape. Each draw is a separate
            ε-DP release (compose them, e.g. with :class:`~dpbandits.privacy.accounting.Accountant`).
        backend : NoiseBackend or str, optional
            Default: OpenDP's exact Gumbel noisy-max over the OS CSPRNG (secure, no cutoff).
        insecure_seeded_noise : bool, default False
            Seeded NumPy Gumbel-max instead (simulation only; warns).

        Returns
        -------
        ndarray of int64 of shape (size, ...) or (...)
        """
        if size is not None:
            size = check_int(size, "size", minimum=1)
        log_p = self.log_probabilities(utilities)
        noise = self._noise(rng, backend, insecure_seeded_noise, accountant, count=1 if size is None else size)
        return noise.gumbel_max(log_p, size=size)

    def release(
        self, data: ArrayLike, rng: RNGLike = None, backend: BackendLike = None, *, insecure_seeded_noise: bool = False,
        accountant: Accountant | None = None,
    ) -> NDArray[np.int64]:
        """Draw one action per batch row (``sample`` with ``size=None``)."""
        return self.sample(data, rng=rng, backend=backend, insecure_seeded_noise=insecure_seeded_noise, accountant=accountant)

    def example_input(self) -> NDArray[np.float64]:
        """Return utilities for every action."""
        n = 4 if self.log_reference is None else self.log_reference.shape[-1]
        return np.linspace(0.0, 1.0, n)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(temperature={self.temperature!r}, sensitivity={self.sensitivity!r}, "
            f"monotone={self.monotone!r})"
        )


class ExponentialMechanism(GibbsMechanism):
    """The exponential mechanism over a finite set: π(a) ∝ π0(a)·exp(ε·u(a)/(2Δ)).

    Parameters
    ----------
    sensitivity : float
        Δ > 0, the utility sensitivity (max over actions and neighbours of |u(a; D) − u(a; D')|).
    epsilon : float
        ε > 0, finite.
    monotone : bool, default False
        Utilities move in one direction between neighbours: η = Δ/ε instead of 2Δ/ε.
    log_reference : array_like, optional
        Data-independent log base measure log π0; uniform by default.

    Privacy
    -------
    ε-DP (temperature η = 2Δ/ε, or Δ/ε when monotone). Seeded Gumbel noise is idealised numerics
    (simulation only, ``insecure_seeded_noise=True``); the default secure backend samples with OpenDP's
    exact Gumbel noisy-max.

    References
    ----------
    McSherry & Talwar (2007), Theorem 6; Dwork & Roth (2014), Theorem 3.10.

    Examples
    --------
    >>> from dpbandits.privacy.mechanisms import ExponentialMechanism
    >>> mech = ExponentialMechanism(sensitivity=1.0, epsilon=2.0)
    >>> mech.temperature
    1.0
    >>> int(mech.sample([0.0, 0.0, 50.0]))
    2
    """

    name = "exponential"
    reference = "McSherry & Talwar (2007), Theorem 6; Dwork & Roth (2014), Theorem 3.10"

    def __init__(
        self,
        sensitivity: float,
        epsilon: float,
        monotone: bool = False,
        *,
        log_reference: ArrayLike | None = None,
    ) -> None:
        delta_u = check_sensitivity(sensitivity)
        eps = check_epsilon(epsilon)
        # η = 2Δ/ε (Δ/ε when monotone)
        temperature = (1.0 if monotone else 2.0) * delta_u / eps
        super().__init__(log_reference, temperature, sensitivity=delta_u, monotone=monotone)
        self._epsilon = eps

    @property
    def epsilon(self) -> float:
        """ε as given (equal to 2Δ/η, or Δ/η when monotone)."""
        return self._epsilon


# ---------------------------------------------------------------------------------------------------
# Exponential mechanism over a grid of a continuous domain
# ---------------------------------------------------------------------------------------------------


def uniform_grid(
    lower: float | Sequence[float] | ArrayLike,
    upper: float | Sequence[float] | ArrayLike,
    points_per_dim: int | Sequence[int],
) -> NDArray[np.float64]:
    """Return the cell centres of a regular grid of the box [lower, upper] (data independent).

    Parameters
    ----------
    lower, upper : float or array_like of shape (dim,)
        Box corners, ``lower < upper`` in every coordinate.
    points_per_dim : int or sequence of int
        Number of cells per coordinate (>= 1).

    Returns
    -------
    ndarray of shape (n_points, dim)
        Cell centres lower + (i + ½)·(upper − lower)/n, the last coordinate varying fastest.

    Examples
    --------
    >>> from dpbandits.privacy.mechanisms import uniform_grid
    >>> uniform_grid(0.0, 1.0, 4).ravel().tolist()
    [0.125, 0.375, 0.625, 0.875]
    >>> uniform_grid([0, 0], [1, 2], [2, 3]).shape
    (6, 2)
    """
    lo = np.atleast_1d(check_array(lower, "lower", ndim=(0, 1))).astype(np.float64)
    hi = np.atleast_1d(check_array(upper, "upper", ndim=(0, 1))).astype(np.float64)
    lo, hi = np.broadcast_arrays(lo, hi)
    if np.any(hi <= lo):
        raise InvalidParameterError(f"upper must be > lower in every coordinate; got lower={lo}, upper={hi}")
    counts_in = [points_per_dim] * lo.size if isinstance(points_per_dim, int | np.integer) else list(points_per_dim)
    if lo.size == 1 and len(counts_in) > 1:  # scalar corners: the same interval in every coordinate
        lo, hi = np.full(len(counts_in), lo[0]), np.full(len(counts_in), hi[0])
    if len(counts_in) != lo.size:
        raise InvalidParameterError(
            f"points_per_dim must have one entry per dimension ({lo.size}); got {len(counts_in)}"
        )
    counts = [check_int(n, "points_per_dim", minimum=1) for n in counts_in]
    axes = [lo[i] + (np.arange(n) + 0.5) * (hi[i] - lo[i]) / n for i, n in enumerate(counts)]
    mesh = np.meshgrid(*axes, indexing="ij")
    return np.stack([m.ravel() for m in mesh], axis=-1)


class GridExponentialMechanism(Mechanism):
    """The exponential mechanism over a data-independent finite grid of a continuous domain.

    Parameters
    ----------
    grid : array_like of shape (n_points, dim) or (n_points,)
        The output grid, fixed before seeing data (e.g. :func:`uniform_grid`).
    sensitivity : float
        Δ > 0 of the utility on the domain (its sensitivity on the grid is no larger).
    epsilon : float
        ε > 0, finite.
    monotone : bool, default False
    log_cell_volumes : array_like of shape (n_points,), optional
        log v_j of a non-uniform base measure (data independent); uniform by default.

    Privacy
    -------
    ε-DP, exactly, provided the grid (and the volumes) do not depend on the data; a grid refined around
    a data-dependent point voids the guarantee (errata USCA-A6/A7). Seeded Gumbel
    noise is idealised numerics (simulation only, ``insecure_seeded_noise=True``); the default secure
    backend is for deployment.

    References
    ----------
    McSherry & Talwar (2007); USCA paper, Definition 3.2 (on a data-independent grid; errata USCA-A7).

    Examples
    --------
    >>> from dpbandits.privacy.mechanisms import GridExponentialMechanism, uniform_grid
    >>> mech = GridExponentialMechanism(uniform_grid(0.0, 1.0, 8), sensitivity=1.0, epsilon=1.0)
    >>> mech.sample([0.0] * 8).shape
    (1,)
    """

    name = "grid_exponential"
    reference = "McSherry & Talwar (2007); USCA paper, Definition 3.2 on a data-independent grid"

    def __init__(
        self,
        grid: ArrayLike,
        sensitivity: float,
        epsilon: float,
        monotone: bool = False,
        *,
        log_cell_volumes: ArrayLike | None = None,
    ) -> None:
        points = np.asarray(check_array(grid, "grid", ndim=(1, 2)), dtype=np.float64)
        self.grid: NDArray[np.float64] = points[:, None] if points.ndim == 1 else points
        n_points = self.grid.shape[0]
        if log_cell_volumes is not None:
            log_v = _check_log_reference(log_cell_volumes)
            if log_v.shape != (n_points,):
                raise InvalidParameterError(f"log_cell_volumes must have shape ({n_points},); got {log_v.shape}")
        self.selector = ExponentialMechanism(
            sensitivity, epsilon, monotone,
            log_reference=np.zeros(n_points) if log_cell_volumes is None else log_cell_volumes,
        )

    @property
    def epsilon(self) -> float:
        """ε."""
        return self.selector.epsilon

    @property
    def sensitivity(self) -> float:
        """Δ of the utility."""
        return float(self.selector.sensitivity or 0.0)

    @property
    def temperature(self) -> float:
        """η = 2Δ/ε (Δ/ε when monotone)."""
        return self.selector.temperature

    @property
    def event(self) -> PureEvent:
        """``PureEvent(epsilon)``."""
        return self.selector.event

    def log_probabilities(self, utility_values_on_grid: ArrayLike) -> NDArray[np.float64]:
        """Return log π(x_j) over the grid (last axis = grid points)."""
        return self.selector.log_probabilities(utility_values_on_grid)

    def probabilities(self, utility_values_on_grid: ArrayLike) -> NDArray[np.float64]:
        """Return the exact output distribution over the grid points."""
        return self.selector.probabilities(utility_values_on_grid)

    def sample_index(
        self, utility_values_on_grid: ArrayLike, rng: RNGLike = None, size: int | None = None,
        backend: BackendLike = None, *, insecure_seeded_noise: bool = False, accountant: Accountant | None = None,
    ) -> NDArray[np.int64]:
        """Draw grid indices (see :meth:`GibbsMechanism.sample`)."""
        return self.selector.sample(
            utility_values_on_grid, rng=rng, size=size, backend=backend, insecure_seeded_noise=insecure_seeded_noise,
            accountant=accountant,
        )

    def sample(
        self, utility_values_on_grid: ArrayLike, rng: RNGLike = None, size: int | None = None,
        backend: BackendLike = None, *, insecure_seeded_noise: bool = False, accountant: Accountant | None = None,
    ) -> NDArray[np.float64]:
        """Draw grid points: shape (size, ..., dim) or (..., dim)."""
        index = self.sample_index(
            utility_values_on_grid, rng=rng, size=size, backend=backend, insecure_seeded_noise=insecure_seeded_noise,
            accountant=accountant,
        )
        return np.asarray(self.grid[index], dtype=np.float64)

    def release(
        self, data: ArrayLike, rng: RNGLike = None, backend: BackendLike = None, *, insecure_seeded_noise: bool = False,
        accountant: Accountant | None = None,
    ) -> NDArray[np.float64]:
        """Draw one grid point per batch row."""
        return self.sample(data, rng=rng, backend=backend, insecure_seeded_noise=insecure_seeded_noise, accountant=accountant)

    def example_input(self) -> NDArray[np.float64]:
        """Return utilities on the grid (a smooth bump)."""
        return np.asarray(-np.sum((self.grid - self.grid.mean(axis=0)) ** 2, axis=-1), dtype=np.float64)

    def __repr__(self) -> str:
        return (
            f"GridExponentialMechanism(n_points={self.grid.shape[0]}, dim={self.grid.shape[1]}, "
            f"sensitivity={self.sensitivity!r}, epsilon={self.epsilon!r})"
        )


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
