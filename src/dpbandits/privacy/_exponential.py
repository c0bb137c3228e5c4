"""The exponential mechanism family: Gibbs distribution, its sampler, finite and grid exponential mechanisms.

The generalised exponential mechanism π(a) ∝ π0(a)·exp(u(a)/η) is computed by
:func:`gibbs_log_probabilities` (the sampler of the KL-regularised policies) and sampled by Gumbel-max
(:func:`sample_log_weights`). Every name here is public from :mod:`dpbandits.privacy.mechanisms`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpbandits._core.errors import EmptySupportError, InvalidParameterError
from dpbandits._core.rng import RNGLike
from dpbandits._core.validation import (
    check_array,
    check_epsilon,
    check_int,
    check_positive_float,
    check_sensitivity,
)
from dpbandits.privacy._mechanism import BackendLike, Mechanism
from dpbandits.privacy.accounting import Accountant, PureEvent
from dpbandits.privacy.guarantees import Guarantee, Neighbouring, PureDP
from dpbandits.privacy.noise import privacy_noise

__all__ = [
    "ExponentialMechanism",
    "GibbsMechanism",
    "GridExponentialMechanism",
    "gibbs_log_probabilities",
    "sample_log_weights",
    "uniform_grid",
]


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
