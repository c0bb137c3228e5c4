"""Noise backends behind one interface.

* :class:`NumpyNoise` — the default: fast and seeded (reproducible), for **simulation only**.
  Its floating-point samples are "idealised numerics": fine for experiments, not for deployment
  (floating-point attacks on naive Laplace samplers exist; Mironov 2012).
* :class:`OpenDPNoise` — the secure backend for deployment: OpenDP's samplers draw from the exact
  (discretised) distributions with a cryptographically secure source and round the *noisy value*
  exactly, so the release is floating-point safe. It cannot be seeded. Installed with the ``secure``
  extra (``pip install "dpbandits[secure]"``).

Every backend draws Laplace, Gaussian and Gumbel noise of given scales (>= 0, finite; scale 0 gives
exactly 0, as in NumPy) with a given shape, adds noise
to values (:meth:`NoiseBackend.add_laplace`, :meth:`NoiseBackend.add_gaussian`) and samples an index
from log-weights by the Gumbel-max trick (:meth:`NoiseBackend.gumbel_max`). Mechanisms call the last
three: the secure backend overrides them with OpenDP measurements that take the value (or the scores)
themselves, which is what makes the release floating-point safe.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpbandits._core.errors import DependencyNotInstalledError, EmptySupportError, InvalidParameterError
from dpbandits._core.rng import RNGLike, as_generator
from dpbandits._core.validation import check_array, check_one_of

__all__ = ["NOISE_BACKENDS", "NoiseBackend", "NumpyNoise", "OpenDPNoise", "get_noise_backend", "resolve_backend"]

Shape = int | tuple[int, ...] | None

NOISE_BACKENDS: tuple[str, ...] = ("numpy", "opendp")
"""Names accepted by :func:`get_noise_backend` (``"secure"`` is an alias of ``"opendp"``)."""


def _check_scale(scale: ArrayLike, name: str = "scale") -> NDArray[np.float64]:
    arr = np.asarray(check_array(scale, name, allow_empty=True), dtype=np.float64)
    if np.any(arr < 0):
        raise InvalidParameterError(f"{name} must be >= 0 entrywise; got min {float(arr.min())!r}")
    return arr


def _output_shape(scale: NDArray[np.float64], size: Shape) -> tuple[int, ...]:
    if size is None:
        return tuple(scale.shape)
    return (int(size),) if isinstance(size, int | np.integer) else tuple(int(s) for s in size)


class NoiseBackend(ABC):
    """Interface of a source of privacy noise.

    Attributes
    ----------
    name : str
        Registry name of the backend.
    seeded : bool
        Whether the backend is reproducible from a seed (simulation) or not (secure).
    """

    name: str = "abstract"
    seeded: bool = True

    @abstractmethod
    def laplace(self, scale: ArrayLike, size: Shape = None) -> NDArray[np.float64]:
        """Draw Laplace(0, ``scale``) noise (density ∝ exp(−|x|/scale))."""

    @abstractmethod
    def gaussian(self, scale: ArrayLike, size: Shape = None) -> NDArray[np.float64]:
        """Draw N(0, ``scale``²) noise."""

    @abstractmethod
    def gumbel(self, scale: ArrayLike = 1.0, size: Shape = None) -> NDArray[np.float64]:
        """Draw Gumbel(0, ``scale``) noise (used by Gumbel-max exponential-mechanism sampling)."""

    def add_laplace(self, values: ArrayLike, scale: float) -> NDArray[np.float64]:
        """Return ``values`` + i.i.d. Laplace(0, ``scale``) noise, entrywise.

        Parameters
        ----------
        values : array_like of float
            Finite values.
        scale : float
            b > 0.

        Returns
        -------
        ndarray
            Same shape as ``values``.
        """
        x = np.asarray(values, dtype=np.float64)
        return np.asarray(x + self.laplace(scale, size=x.shape), dtype=np.float64)

    def add_gaussian(self, values: ArrayLike, scale: float) -> NDArray[np.float64]:
        """Return ``values`` + i.i.d. N(0, ``scale``²) noise, entrywise."""
        x = np.asarray(values, dtype=np.float64)
        return np.asarray(x + self.gaussian(scale, size=x.shape), dtype=np.float64)

    def gumbel_max(self, log_weights: ArrayLike, size: int | None = None) -> NDArray[np.int64]:
        """Sample indices ∝ exp(log_weights) over the last axis by the Gumbel-max trick.

        Parameters
        ----------
        log_weights : array_like of shape (..., n)
            Unnormalised log-weights z(a); ``-inf`` entries are never chosen.
        size : int, optional
            Number of independent draws, prepended to the batch shape.

        Returns
        -------
        ndarray of int64 of shape (size, ...) or (...)
            argmax_a (z(a) + G(a)), G i.i.d. Gumbel(0, 1): an exact draw from softmax(z).
        """
        z = _check_log_weights(log_weights)
        shape = z.shape if size is None else (int(size), *z.shape)
        g = self.gumbel(1.0, size=shape)
        return np.asarray(np.argmax(z + g, axis=-1), dtype=np.int64)


def _check_log_weights(log_weights: ArrayLike) -> NDArray[np.float64]:
    z = np.asarray(log_weights, dtype=np.float64)
    if z.ndim == 0 or z.shape[-1] == 0:
        raise InvalidParameterError(f"log_weights must have at least one action; got shape {z.shape}")
    if np.isnan(z).any() or np.isposinf(z).any():
        raise InvalidParameterError("log_weights must not contain NaN or +inf")
    if np.all(np.isneginf(z), axis=-1).any():
        raise EmptySupportError("every action has log-weight -inf in some row of log_weights")
    return z


class NumpyNoise(NoiseBackend):
    """Seeded NumPy noise for simulation (idealised floating-point numerics).

    Parameters
    ----------
    rng : int, SeedSequence, Generator or None
        The noise stream. Pass the privacy-noise stream spawned for this purpose.

    Notes
    -----
    Same seed, same numbers. Floating-point samples of textbook samplers are not formally
    differentially private (Mironov 2012); use :class:`OpenDPNoise` for deployment.
    """

    name = "numpy"
    seeded = True

    def __init__(self, rng: RNGLike = None) -> None:
        self.rng = as_generator(rng)

    def laplace(self, scale: ArrayLike, size: Shape = None) -> NDArray[np.float64]:
        """Draw Laplace(0, ``scale``) noise."""
        return np.asarray(self.rng.laplace(0.0, _check_scale(scale), size=size), dtype=np.float64)

    def gaussian(self, scale: ArrayLike, size: Shape = None) -> NDArray[np.float64]:
        """Draw N(0, ``scale``²) noise."""
        return np.asarray(self.rng.normal(0.0, _check_scale(scale), size=size), dtype=np.float64)

    def gumbel(self, scale: ArrayLike = 1.0, size: Shape = None) -> NDArray[np.float64]:
        """Draw Gumbel(0, ``scale``) noise."""
        return np.asarray(self.rng.gumbel(0.0, _check_scale(scale), size=size), dtype=np.float64)

    def __repr__(self) -> str:
        return f"NumpyNoise(rng={self.rng!r})"


class OpenDPNoise(NoiseBackend):
    """Secure, unseedable noise from OpenDP's floating-point-safe samplers (for deployment).

    Laplace and Gaussian noise come from ``opendp.measurements.make_laplace`` / ``make_gaussian``
    (exact discretised samplers over a secure random source; the noisy value is rounded exactly).
    :meth:`gumbel_max` uses ``make_noisy_max`` with Gumbel noise, an exact exponential-mechanism
    sampler. :meth:`gumbel` returns −scale·ln|L| with L an exact Laplace(1) draw (|L| ~ Exp(1)): the
    distribution is right, but the logarithm is ordinary floating point, so use :meth:`gumbel_max`
    (which mechanisms do) whenever the Gumbel values select an output.

    Parameters
    ----------
    rng : None
        Must be ``None``: a secure backend cannot be seeded.

    Raises
    ------
    InvalidParameterError
        If ``rng`` is not None.
    DependencyNotInstalledError
        If OpenDP is not installed (extra ``secure``).

    Notes
    -----
    Creating this backend enables OpenDP's ``"contrib"`` feature flag process-wide.
    """

    name = "opendp"
    seeded = False

    def __init__(self, rng: RNGLike = None) -> None:
        if rng is not None:
            raise InvalidParameterError(
                f"rng must be None for the secure OpenDP backend (it cannot be seeded); got {rng!r}. "
                "Use NumpyNoise(rng) for reproducible simulation."
            )
        try:
            import opendp.prelude as dp
        except ImportError as exc:
            raise DependencyNotInstalledError(
                "the secure noise backend needs OpenDP; install the extra: pip install 'dpbandits[secure]'"
            ) from exc
        dp.enable_features("contrib")
        self._dp: Any = dp
        self._measurements: dict[tuple[str, float], Any] = {}

    def _measurement(self, kind: str, scale: float) -> Any:
        key = (kind, float(scale))
        if key not in self._measurements:
            dp = self._dp
            floats = dp.vector_domain(dp.atom_domain(T=float, nan=False))
            if kind == "laplace":
                m = dp.m.make_laplace(floats, dp.l1_distance(T=float), scale=float(scale))
            elif kind == "gaussian":
                m = dp.m.make_gaussian(floats, dp.l2_distance(T=float), scale=float(scale))
            else:  # "gumbel_max": report-noisy-max with Gumbel noise (zCDP output measure)
                m = dp.m.make_noisy_max(
                    floats, dp.linf_distance(T=float), dp.zero_concentrated_divergence(), scale=float(scale)
                )
            self._measurements[key] = m
        return self._measurements[key]

    def _add(self, kind: str, values: NDArray[np.float64], scale: NDArray[np.float64]) -> NDArray[np.float64]:
        x, b = np.broadcast_arrays(values, scale)
        out = np.empty(x.shape, dtype=np.float64)
        flat_x, flat_b, flat_out = x.ravel(), b.ravel(), out.reshape(-1)
        for value in np.unique(flat_b):
            where = flat_b == value
            if value == 0.0:  # scale 0: no noise (and no privacy; callers decide)
                flat_out[where] = flat_x[where]
            else:
                noisy = self._measurement(kind, float(value))(flat_x[where].tolist())
                flat_out[where] = np.asarray(noisy, dtype=np.float64)
        return out

    def laplace(self, scale: ArrayLike, size: Shape = None) -> NDArray[np.float64]:
        """Draw Laplace(0, ``scale``) noise with OpenDP."""
        b = _check_scale(scale)
        return self._add("laplace", np.zeros(_output_shape(b, size)), b)

    def gaussian(self, scale: ArrayLike, size: Shape = None) -> NDArray[np.float64]:
        """Draw N(0, ``scale``²) noise with OpenDP."""
        b = _check_scale(scale)
        return self._add("gaussian", np.zeros(_output_shape(b, size)), b)

    def gumbel(self, scale: ArrayLike = 1.0, size: Shape = None) -> NDArray[np.float64]:
        """Draw Gumbel(0, ``scale``) noise as −scale·ln|L|, L ~ Laplace(1) from OpenDP."""
        b = _check_scale(scale)
        shape = _output_shape(b, size)
        exponential = np.abs(self._add("laplace", np.zeros(shape), np.ones(())))
        # G = −s·ln E with E ~ Exp(1); E = 0 has probability 0 but guard the float anyway
        exponential = np.maximum(exponential, np.finfo(np.float64).tiny)
        return np.asarray(-b * np.log(exponential), dtype=np.float64)

    def add_laplace(self, values: ArrayLike, scale: float) -> NDArray[np.float64]:
        """Return ``values`` + Laplace(``scale``) noise, computed and rounded exactly by OpenDP."""
        x = check_array(values, "values", allow_empty=True)
        return self._add("laplace", x, _check_scale(scale))

    def add_gaussian(self, values: ArrayLike, scale: float) -> NDArray[np.float64]:
        """Return ``values`` + N(0, ``scale``²) noise, computed and rounded exactly by OpenDP."""
        x = check_array(values, "values", allow_empty=True)
        return self._add("gaussian", x, _check_scale(scale))

    def gumbel_max(self, log_weights: ArrayLike, size: int | None = None) -> NDArray[np.int64]:
        """Sample indices ∝ exp(log_weights) with OpenDP's exact Gumbel report-noisy-max.

        The draw is exact for the float64 scores it is given; computing those scores (e.g. u(a)/η) is
        ordinary floating point done by the caller. Rows are sampled one OpenDP call at a time.
        """
        z = _check_log_weights(log_weights)
        batch_shape = z.shape[:-1] if size is None else (int(size), *z.shape[:-1])
        rows = np.broadcast_to(z, (*batch_shape, z.shape[-1])).reshape(-1, z.shape[-1])
        noisy_max = self._measurement("gumbel_max", 1.0)
        out = np.empty(rows.shape[0], dtype=np.int64)
        for i, row in enumerate(rows):
            support = np.flatnonzero(np.isfinite(row))
            out[i] = support[int(noisy_max(row[support].tolist()))]
        return out.reshape(batch_shape)

    def __repr__(self) -> str:
        return "OpenDPNoise()"


def get_noise_backend(name: str = "numpy", rng: RNGLike = None) -> NoiseBackend:
    """Build a noise backend by name.

    Parameters
    ----------
    name : {"numpy", "opendp", "secure"}
        ``"secure"`` is an alias of ``"opendp"``.
    rng : int, SeedSequence, Generator or None
        Seed of the NumPy backend; must be None for the secure backend.

    Returns
    -------
    NoiseBackend

    Examples
    --------
    >>> from dpbandits.privacy.noise import get_noise_backend
    >>> get_noise_backend("numpy", rng=0).seeded
    True
    """
    check_one_of(name, "name", (*NOISE_BACKENDS, "secure"))
    if name == "numpy":
        return NumpyNoise(rng)
    return OpenDPNoise(rng)


def resolve_backend(backend: NoiseBackend | str | None, rng: RNGLike) -> NoiseBackend:
    """Return the backend a mechanism call should use.

    ``backend=None`` means ``NumpyNoise(rng)``; a name builds that backend; an instance is used as is,
    in which case ``rng`` must be None (the instance owns its stream).

    Raises
    ------
    InvalidParameterError
        If both a backend instance and an ``rng`` are given, or ``backend`` has another type.
    """
    if backend is None:
        return NumpyNoise(rng)
    if isinstance(backend, str):
        return get_noise_backend(backend, rng)
    if not isinstance(backend, NoiseBackend):
        raise InvalidParameterError(
            f"backend must be a NoiseBackend, one of {list(NOISE_BACKENDS)} or None; got {backend!r}"
        )
    if rng is not None:
        raise InvalidParameterError(
            f"pass either rng or a backend instance, not both (the backend owns its stream); got rng={rng!r}"
        )
    return backend
