"""Noise backends behind one interface, and the one gate that chooses between them.

* :class:`SecureNoise` (alias :class:`OpenDPNoise`) — **the default on every release path**
  (ask/tell agents, ``sample()``, ``release()``, counters inside agents). OpenDP draws from the exact
  (discretised) distributions with the operating system's CSPRNG and performs the *addition* itself,
  rounding the noisy value exactly, so the release is floating-point safe; integer statistics get
  exact integer (discrete Laplace) noise; exponential weights are sampled by OpenDP's exact
  report-noisy-max with Gumbel noise (no float cutoff). It cannot be seeded.
* :class:`NumpyNoise` — fast and seeded (reproducible): what the vectorised ``simulate`` paths of the
  study runner use. Its floating-point samples are "idealised numerics": right for experiments,
  **not** differentially private in deployment (floating-point attacks on textbook samplers exist,
  Mironov 2012; and whoever knows the seed knows the noise).

:func:`privacy_noise` is the gate every release path goes through: it returns the secure backend
unless the caller opts into seeded noise with ``insecure_seeded_noise=True`` — one switch, with that
name, across the whole library — which issues an :class:`~dpbandits._core.errors.InsecureNoiseWarning`.
A seed (``rng``) for privacy noise without the switch is refused.

Every backend draws Laplace, Gaussian, Gumbel and discrete-Laplace noise of given scales (>= 0,
finite; scale 0 gives exactly 0), adds noise to values (:meth:`NoiseBackend.add_laplace`,
:meth:`NoiseBackend.add_gaussian`, :meth:`NoiseBackend.add_discrete_laplace`) and samples an index
from log-weights (:meth:`NoiseBackend.gumbel_max`). Releases must use the ``add_*`` and
``gumbel_max`` verbs: the secure backend overrides them with OpenDP measurements that take the value
(or the scores) themselves, which is what makes the release floating-point safe. The raw draws
(``laplace``, ``gaussian``, ``gumbel``) are for simulation and diagnostics.

References
----------
I. Mironov, "On significance of the least significant bits for differential privacy", CCS 2012.
C. Canonne, G. Kamath, T. Steinke, "The discrete Gaussian for differential privacy", NeurIPS 2020
(exact discrete Laplace sampling).
OpenDP Library, ``make_laplace`` / ``make_gaussian`` / ``make_noisy_max``.
"""

from __future__ import annotations

import math
import warnings
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpbandits._core.codec import register_codec
from dpbandits._core.errors import (
    DataFormatError,
    DependencyNotInstalledError,
    EmptySupportError,
    InsecureNoiseWarning,
    InvalidParameterError,
)
from dpbandits._core.rng import RNGLike, as_generator
from dpbandits._core.validation import check_array, check_one_of

__all__ = [
    "ADDER_KINDS",
    "INSECURE_NOISE_MESSAGE",
    "NOISE_BACKENDS",
    "NoiseBackend",
    "NumpyNoise",
    "OpenDPNoise",
    "SecureNoise",
    "discrete_laplace_from_uniforms",
    "get_noise_backend",
    "privacy_noise",
    "resolve_backend",
]

Shape = int | tuple[int, ...] | None

NOISE_BACKENDS: tuple[str, ...] = ("numpy", "opendp")

ADDER_KINDS: tuple[str, ...] = ("laplace", "gaussian", "discrete_laplace")
"""Noise kinds of :meth:`NoiseBackend.adder` (the ``add_*`` release verbs)."""

NoiseAdder = Callable[[NDArray[Any]], NDArray[Any]]
"""Names accepted by :func:`get_noise_backend` (``"secure"`` is an alias of ``"opendp"``)."""

INSECURE_NOISE_MESSAGE = (
    "insecure_seeded_noise=True: privacy noise is seeded NumPy floating-point noise. It is reproducible "
    "(right for simulations and tests) and NOT differentially private in deployment: whoever knows the "
    "seed computes the noise, and textbook float samplers leak through their low-order bits. Deploy "
    "without the switch (secure OpenDP noise from the OS CSPRNG)."
)
"""The text of the :class:`~dpbandits._core.errors.InsecureNoiseWarning`."""

_MAX_EXACT_INTEGER = 2**53


def _check_scale(scale: ArrayLike, name: str = "scale") -> NDArray[np.float64]:
    if type(scale) is float:  # fast path for the common scalar case (agents call this per step)
        if not 0.0 <= scale < math.inf:
            raise InvalidParameterError(f"{name} must be a finite float >= 0; got {scale!r}")
        return np.asarray(scale)
    # fast path for a float64 array (a phase's scales, at every phase end): every entry finite and >= 0
    # (NaN fails both comparisons); anything else, or a bad entry, takes the full check and its message
    if type(scale) is np.ndarray and scale.dtype == np.float64 and ((scale >= 0.0) & (scale < math.inf)).all():
        return scale
    arr = np.asarray(check_array(scale, name, allow_empty=True), dtype=np.float64)
    if np.any(arr < 0):
        raise InvalidParameterError(f"{name} must be >= 0 entrywise; got min {float(arr.min())!r}")
    return arr


def _scalar_scale(scale: Any, name: str = "scale") -> float:
    """One constant scale: a real number (no bool, no text), finite and >= 0."""
    if isinstance(scale, bool | np.bool_) or not isinstance(scale, int | float | np.integer | np.floating):
        raise InvalidParameterError(f"{name} must be a finite float >= 0; got {scale!r}")
    b = float(scale)
    if not 0.0 <= b < math.inf:
        raise InvalidParameterError(f"{name} must be a finite float >= 0; got {scale!r}")
    return b


def _broadcast_shape(x: NDArray[Any], b: NDArray[Any]) -> tuple[int, ...]:
    """The shape of ``x + b`` (values and their scales; most often the same shape, or a scalar scale)."""
    return x.shape if x.shape == b.shape or not b.shape else np.broadcast_shapes(x.shape, b.shape)


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

    @abstractmethod
    def discrete_laplace(self, scale: ArrayLike, size: Shape = None) -> NDArray[np.int64]:
        """Draw discrete Laplace noise of scale b: integers with P(k) ∝ exp(−|k|/b).

        Adding it to an integer statistic of integer sensitivity Δ is (Δ/b)-DP, with exact integer
        arithmetic (nothing for a floating-point attack to read).
        """

    def add_discrete_laplace(self, values: ArrayLike, scale: ArrayLike) -> NDArray[np.int64]:
        """Return integer ``values`` + i.i.d. discrete Laplace(``scale``) noise, entrywise, exactly.

        Parameters
        ----------
        values : array_like of int
            Integer statistics (counts, label sums), |value| < 2**53.
        scale : float or array_like
            b >= 0, broadcast against ``values``.

        Returns
        -------
        ndarray of int64
            Same shape as ``values``.
        """
        x = _check_integers(values)
        b = _check_scale(scale)
        return np.asarray(x + self.discrete_laplace(b, size=_broadcast_shape(x, b)), dtype=np.int64)

    def add_laplace(self, values: ArrayLike, scale: ArrayLike) -> NDArray[np.float64]:
        """Return ``values`` + i.i.d. Laplace(0, ``scale``) noise, entrywise.

        Parameters
        ----------
        values : array_like of float
            Finite values.
        scale : float or array_like
            b >= 0, broadcast against ``values``.

        Returns
        -------
        ndarray
            The broadcast shape of ``values`` and ``scale``.
        """
        x = np.asarray(values, dtype=np.float64)
        b = _check_scale(scale)
        return np.asarray(x + self.laplace(b, size=_broadcast_shape(x, b)), dtype=np.float64)

    def add_gaussian(self, values: ArrayLike, scale: ArrayLike) -> NDArray[np.float64]:
        """Return ``values`` + i.i.d. N(0, ``scale``²) noise, entrywise (``scale`` broadcast)."""
        x = np.asarray(values, dtype=np.float64)
        b = _check_scale(scale)
        return np.asarray(x + self.gaussian(b, size=_broadcast_shape(x, b)), dtype=np.float64)

    def adder(self, kind: str, scale: float) -> NoiseAdder:
        """The release verb ``add_<kind>`` with its constant scale validated once.

        ``add = backend.adder("discrete_laplace", b)`` followed by ``add(values)`` releases exactly
        as ``backend.add_discrete_laplace(values, b)`` does — the same distribution, the same
        floating-point safety (inside OpenDP on the secure backend), and on a seeded backend the
        same numbers from the same stream — without validating ``b`` again on every call. It is
        for callers that release one vector per step at a fixed scale (the tree counters inside
        ask/tell agents), where re-validating a constant dominated the step.

        Parameters
        ----------
        kind : {"laplace", "gaussian", "discrete_laplace"}
        scale : float
            b >= 0 (Laplace scale or Gaussian standard deviation); 0 adds no noise.

        Returns
        -------
        callable
            ``add(values: ndarray) -> ndarray`` of the same shape: float64 values (finite) for the
            continuous kinds, int64 values (|value| < 2**53) for ``"discrete_laplace"``.

        Raises
        ------
        InvalidParameterError
            If ``kind`` is unknown or ``scale`` is not a finite float >= 0 (here, once; the values
            are checked on each call).
        """
        check_one_of(kind, "kind", ADDER_KINDS)
        b = _scalar_scale(scale)
        verb = getattr(self, f"add_{kind}")
        return lambda values: np.asarray(verb(values, b))

    @abstractmethod
    def randomized_response(self, bits: ArrayLike, keep_probability: float) -> NDArray[np.int64]:
        """Report each bit truthfully with probability ``keep_probability``, flipped otherwise.

        Parameters
        ----------
        bits : array_like of {0, 1}
        keep_probability : float
            p in [1/2, 1]; the report is ln(p/(1 − p))-DP for its bit (Warner 1965).

        Returns
        -------
        ndarray of int64 of {0, 1}, the shape of ``bits``
        """

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


def discrete_laplace_from_uniforms(uniforms: NDArray[np.float64], scale: ArrayLike) -> NDArray[np.int64]:
    """Discrete Laplace(b) values from pairs of uniforms on [0, 1) (last axis of length 2).

    X = G₁ − G₂ with G = ⌊b·E⌋, E = −ln(1 − U) ~ Exp(1): G is geometric on {0, 1, …} with
    P(G >= k) = e^{−k/b}, so P(X = k) ∝ e^{−|k|/b}. Scale 0 gives 0. Seeded simulation numerics: the
    secure backend samples this distribution exactly inside OpenDP.
    """
    b = np.asarray(scale, dtype=np.float64)
    # G = ⌊b·E⌋ with E = −ln(1 − U)
    geometric = np.floor(-b[..., None] * np.log1p(-uniforms))
    return np.asarray(geometric[..., 0] - geometric[..., 1], dtype=np.int64)


def _check_integers(values: ArrayLike) -> NDArray[np.int64]:
    """Integer statistics as int64; refuses fractions, non-finite values and |v| >= 2**53."""
    arr = np.asarray(values)
    if arr.dtype.kind in "iub":
        out = arr.astype(np.int64)
    else:
        as_float = np.asarray(arr, dtype=np.float64)
        if not np.all(np.isfinite(as_float)) or np.any(as_float != np.round(as_float)):
            raise InvalidParameterError("values must be integers (integer statistics get integer noise)")
        out = as_float.astype(np.int64)
    if out.size and int(np.max(np.abs(out))) >= _MAX_EXACT_INTEGER:
        raise InvalidParameterError(f"values must be integers of magnitude < 2**53; got max |value| {np.max(np.abs(out))}")
    return out


def _check_int64_vector(values: NDArray[Any]) -> NDArray[np.int64]:
    """An int64 ndarray as it is (|v| < 2**53 checked); anything else through :func:`_check_integers`."""
    if values.dtype != np.int64:
        return _check_integers(values)
    if values.size and max(-int(values.min()), int(values.max())) >= _MAX_EXACT_INTEGER:
        raise InvalidParameterError("values must be integers of magnitude < 2**53; got a larger one")
    return values


def _check_float_vector(values: NDArray[Any]) -> NDArray[np.float64]:
    """A finite float64 view of ``values`` (one reduction when it already is finite float64)."""
    x = values if values.dtype == np.float64 else np.asarray(values, dtype=np.float64)
    if not np.isfinite(x).all():
        raise InvalidParameterError(f"values must be finite; got {x.tolist()!r}")
    return x


def _check_bits(bits: ArrayLike, keep_probability: float) -> tuple[NDArray[np.int64], float]:
    arr = np.asarray(bits)
    if arr.dtype.kind not in "iub" or np.any((arr != 0) & (arr != 1)):
        raise InvalidParameterError(f"bits must be 0 or 1; got {arr.tolist()!r}")
    p = float(keep_probability)
    if not 0.5 <= p <= 1.0:
        raise InvalidParameterError(f"keep_probability must lie in [0.5, 1]; got {keep_probability!r}")
    return arr.astype(np.int64), p


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

    def discrete_laplace(self, scale: ArrayLike, size: Shape = None) -> NDArray[np.int64]:
        """Draw discrete Laplace(``scale``) noise (see :func:`discrete_laplace_from_uniforms`).

        Two uniforms per value, drawn as one array of shape (*shape, 2) in row-major order, so one
        value at a time and a whole array consume the stream identically.
        """
        b = _check_scale(scale)
        shape = _output_shape(b, size)
        return discrete_laplace_from_uniforms(self.rng.random((*shape, 2)), b)

    def adder(self, kind: str, scale: float) -> NoiseAdder:
        """``add_<kind>`` at a fixed, once-validated scale (see :meth:`NoiseBackend.adder`).

        Consumes the stream exactly as ``add_<kind>(values, scale)`` does (one value, or one pair
        of uniforms for discrete Laplace, per entry, in row-major order).
        """
        check_one_of(kind, "kind", ADDER_KINDS)
        b = _scalar_scale(scale)
        rng = self.rng
        if kind == "discrete_laplace":
            b_array = np.asarray(b)

            def add_discrete(values: NDArray[Any]) -> NDArray[np.int64]:
                x = _check_int64_vector(values)
                return x + discrete_laplace_from_uniforms(rng.random((*x.shape, 2)), b_array)

            return add_discrete
        draw = rng.laplace if kind == "laplace" else rng.normal

        def add_continuous(values: NDArray[Any]) -> NDArray[np.float64]:
            x = _check_float_vector(values)
            return np.asarray(x + draw(0.0, b, size=x.shape), dtype=np.float64)

        return add_continuous

    def randomized_response(self, bits: ArrayLike, keep_probability: float) -> NDArray[np.int64]:
        """Flip each bit with probability 1 − ``keep_probability`` (one uniform per bit)."""
        b, p = _check_bits(bits, keep_probability)
        return np.asarray(b ^ (self.rng.random(b.shape) >= p), dtype=np.int64)

    def __repr__(self) -> str:
        return f"NumpyNoise(rng={self.rng!r})"


_MEASUREMENTS: dict[tuple[str, float], Any] = {}


def _opendp_measurements() -> dict[tuple[str, float], Any]:
    """The process-wide cache of OpenDP measurements (immutable; safe to share between backends).

    Imports only the OpenDP modules needed (``opendp.prelude`` would also import its scikit-learn
    extras, seconds of start-up) and enables the ``"contrib"`` feature flag.
    """
    if not _MEASUREMENTS:
        try:
            import opendp.mod
        except ImportError as exc:  # pragma: no cover - opendp is a core dependency
            raise DependencyNotInstalledError("the secure noise backend needs OpenDP: pip install opendp") from exc
        opendp.mod.enable_features("contrib")
    return _MEASUREMENTS


def _build_measurement(kind: str, scale: float) -> Any:
    import opendp.domains as domains
    import opendp.measurements as measurements
    import opendp.measures as measures
    import opendp.metrics as metrics

    floats = domains.vector_domain(domains.atom_domain(T=float, nan=False))
    if kind == "laplace":
        return measurements.make_laplace(floats, metrics.l1_distance(T=float), scale=scale)
    if kind == "gaussian":
        return measurements.make_gaussian(floats, metrics.l2_distance(T=float), scale=scale)
    if kind == "discrete_laplace":
        integers = domains.vector_domain(domains.atom_domain(T="i64"))
        return measurements.make_laplace(integers, metrics.l1_distance(T="i64"), scale=scale)
    if kind == "randomized_response":  # ``scale`` is the probability of a truthful report
        return measurements.make_randomized_response_bool(prob=scale)
    # "gumbel_max": report-noisy-max with Gumbel noise (zCDP output measure)
    return measurements.make_noisy_max(
        floats, metrics.linf_distance(T=float), measures.zero_concentrated_divergence(), scale=scale
    )


class SecureNoise(NoiseBackend):
    """Secure, unseedable noise from OpenDP (the default on every release path).

    * :meth:`add_laplace` / :meth:`add_gaussian`: ``opendp.measurements.make_laplace`` /
      ``make_gaussian`` on float vectors — OpenDP samples the exact discretised distribution from
      the OS CSPRNG and adds it to the value itself, rounding the noisy value exactly, so the
      release is floating-point safe.
    * :meth:`add_discrete_laplace` / :meth:`discrete_laplace`: ``make_laplace`` on 64-bit integers,
      which is the exact discrete Laplace mechanism (integer noise on integer statistics).
    * :meth:`gumbel_max`: ``make_noisy_max`` with Gumbel noise, an exact sampler of softmax(z) for
      the float scores it is given, with no cutoff: an action far below the best keeps its (tiny)
      positive probability.
    * :meth:`laplace`, :meth:`gaussian`: raw draws (the noisy value at 0). Adding a raw draw to a
      statistic yourself, in floats, is *not* floating-point safe: release through the ``add_*``
      verbs. :meth:`gumbel` is −scale·ln|L| with L an exact Laplace(1) draw (the logarithm is
      ordinary floating point); mechanisms use :meth:`gumbel_max` instead.

    Parameters
    ----------
    rng : None
        Must be ``None``: a secure backend cannot be seeded.

    Raises
    ------
    InvalidParameterError
        If ``rng`` is not None.

    Notes
    -----
    Creating this backend enables OpenDP's ``"contrib"`` feature flag process-wide. Each OpenDP
    call costs tens of microseconds plus a few microseconds per value: callers batch their draws
    (one call per release of a vector, grouped by scale).

    References
    ----------
    OpenDP Library (Harvard), measurements ``make_laplace``, ``make_gaussian``, ``make_noisy_max``.
    """

    name = "opendp"
    seeded = False

    def __init__(self, rng: RNGLike = None) -> None:
        if rng is not None:
            raise InvalidParameterError(
                f"rng must be None for the secure OpenDP backend (it cannot be seeded); got {rng!r}. "
                "Use NumpyNoise(rng) for reproducible simulation."
            )
        self._measurements = _opendp_measurements()

    def _measurement(self, kind: str, scale: float) -> Any:
        measurement = self._measurements.get((kind, scale))
        if measurement is None:
            measurement = _build_measurement(kind, scale)
            self._measurements[(kind, scale)] = measurement
        return measurement

    def _add(self, kind: str, values: NDArray[Any], scale: NDArray[np.float64]) -> NDArray[Any]:
        """Noisy ``values`` from one OpenDP call per distinct scale (scale 0 adds nothing)."""
        integer = kind == "discrete_laplace"
        x, b = np.broadcast_arrays(values, scale)
        out = np.empty(x.shape, dtype=np.int64 if integer else np.float64)
        flat_x, flat_b, flat_out = x.ravel(), b.ravel(), out.reshape(-1)
        for value in np.unique(flat_b):
            where = slice(None) if flat_b.size and flat_b[0] == flat_b[-1] == value and np.all(flat_b == value) \
                else flat_b == value
            if value == 0.0:  # scale 0: no noise (and no privacy; callers decide)
                flat_out[where] = flat_x[where]
            else:
                inputs = flat_x[where]
                noisy = self._measurement(kind, float(value))(
                    [int(v) for v in inputs] if integer else inputs.tolist()
                )
                flat_out[where] = np.asarray(noisy, dtype=out.dtype)
        return out

    def laplace(self, scale: ArrayLike, size: Shape = None) -> NDArray[np.float64]:
        """Draw Laplace(0, ``scale``) noise with OpenDP (a raw draw: release with :meth:`add_laplace`)."""
        b = _check_scale(scale)
        return self._add("laplace", np.zeros(_output_shape(b, size)), b)

    def gaussian(self, scale: ArrayLike, size: Shape = None) -> NDArray[np.float64]:
        """Draw N(0, ``scale``²) noise with OpenDP (a raw draw: release with :meth:`add_gaussian`)."""
        b = _check_scale(scale)
        return self._add("gaussian", np.zeros(_output_shape(b, size)), b)

    def discrete_laplace(self, scale: ArrayLike, size: Shape = None) -> NDArray[np.int64]:
        """Draw exact discrete Laplace(``scale``) integers with OpenDP."""
        b = _check_scale(scale)
        return np.asarray(self._add("discrete_laplace", np.zeros(_output_shape(b, size), dtype=np.int64), b))

    def gumbel(self, scale: ArrayLike = 1.0, size: Shape = None) -> NDArray[np.float64]:
        """Draw Gumbel(0, ``scale``) noise as −scale·ln|L|, L ~ Laplace(1) from OpenDP."""
        b = _check_scale(scale)
        shape = _output_shape(b, size)
        exponential = np.abs(self._add("laplace", np.zeros(shape), np.ones(())))
        # G = −s·ln E with E ~ Exp(1); E = 0 has probability 0 but guard the float anyway
        exponential = np.maximum(exponential, np.finfo(np.float64).tiny)
        return np.asarray(-b * np.log(exponential), dtype=np.float64)

    def add_laplace(self, values: ArrayLike, scale: ArrayLike) -> NDArray[np.float64]:
        """Return ``values`` + Laplace(``scale``) noise, computed and rounded exactly by OpenDP."""
        x = check_array(values, "values", allow_empty=True)
        return self._add("laplace", x, _check_scale(scale))

    def add_gaussian(self, values: ArrayLike, scale: ArrayLike) -> NDArray[np.float64]:
        """Return ``values`` + N(0, ``scale``²) noise, computed and rounded exactly by OpenDP."""
        x = check_array(values, "values", allow_empty=True)
        return self._add("gaussian", x, _check_scale(scale))

    def add_discrete_laplace(self, values: ArrayLike, scale: ArrayLike) -> NDArray[np.int64]:
        """Return integer ``values`` + exact discrete Laplace(``scale``) noise, added by OpenDP."""
        return np.asarray(self._add("discrete_laplace", _check_integers(values), _check_scale(scale)))

    def adder(self, kind: str, scale: float) -> NoiseAdder:
        """``add_<kind>`` at a fixed scale: the OpenDP measurement is built (or looked up) once.

        Each call is one OpenDP call on the whole vector, which adds the noise itself (exactly
        rounded floats; exact integers for ``"discrete_laplace"``): the same release as
        ``add_<kind>(values, scale)`` (see :meth:`NoiseBackend.adder`).
        """
        check_one_of(kind, "kind", ADDER_KINDS)
        b = _scalar_scale(scale)
        integer = kind == "discrete_laplace"
        check = _check_int64_vector if integer else _check_float_vector
        if b == 0.0:  # scale 0: no noise (and no privacy; callers decide)
            return lambda values: np.array(check(values))
        measurement = self._measurement(kind, b)
        dtype = np.int64 if integer else np.float64

        def add(values: NDArray[Any]) -> NDArray[Any]:
            x = check(values)
            return np.asarray(measurement(x.ravel().tolist()), dtype=dtype).reshape(x.shape)

        return add

    def randomized_response(self, bits: ArrayLike, keep_probability: float) -> NDArray[np.int64]:
        """Randomised response with OpenDP's ``make_randomized_response_bool`` (exact Bernoulli)."""
        b, p = _check_bits(bits, keep_probability)
        if p == 1.0:
            return b.copy()
        measurement = self._measurement("randomized_response", p)
        flat = [int(measurement(bool(bit))) for bit in b.reshape(-1)]
        return np.asarray(flat, dtype=np.int64).reshape(b.shape)

    def gumbel_max(self, log_weights: ArrayLike, size: int | None = None) -> NDArray[np.int64]:
        """Sample indices ∝ exp(log_weights) with OpenDP's exact Gumbel report-noisy-max.

        The draw is exact for the float64 scores it is given (computing those scores, e.g. u(a)/η,
        is ordinary floating point done by the caller) and has no cutoff. Rows are sampled one
        OpenDP call at a time, and every call gets the **whole** row: OpenDP draws noise for every
        action, ``-inf`` ones included (they never win), so the number of candidates, calls and
        noise draws is fixed by the public shape, never by which actions have weight 0.

        Notes
        -----
        Residual timing: OpenDP compares the noisy scores in exact arithmetic, refining each
        candidate's noise until the comparison is decided, so one call's time still depends on
        the scores: a row where one score stands far above the others takes longer (a KL policy
        on extreme rewards: about 1.2 times a mid-range one at K = 10, one call's time telling
        them apart with advantage 0.2–0.3; measured by ``benchmarks/bench_release_timing.py``).
        """
        z = _check_log_weights(log_weights)
        batch_shape = z.shape[:-1] if size is None else (int(size), *z.shape[:-1])
        rows = np.broadcast_to(z, (*batch_shape, z.shape[-1])).reshape(-1, z.shape[-1])
        noisy_max = self._measurement("gumbel_max", 1.0)
        out = np.empty(rows.shape[0], dtype=np.int64)
        for i, row in enumerate(rows):
            out[i] = int(noisy_max(row.tolist()))
        return out.reshape(batch_shape)

    def __repr__(self) -> str:
        return "SecureNoise()"


OpenDPNoise = SecureNoise
"""Alias of :class:`SecureNoise` (the secure backend is OpenDP)."""


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
    return SecureNoise(rng)


def privacy_noise(
    rng: RNGLike = None,
    *,
    insecure_seeded_noise: bool = False,
    backend: NoiseBackend | str | None = None,
    stacklevel: int = 3,
) -> NoiseBackend:
    """Return the privacy-noise source of a release path: secure unless seeded noise is opted into.

    This is the gate every deployment-facing release (ask/tell agents, ``sample()``, ``release()``,
    counters inside agents) goes through. Vectorised ``simulate`` paths build :class:`NumpyNoise`
    directly and say so in their docstrings.

    Parameters
    ----------
    rng : int, SeedSequence, Generator or None
        Seed of the privacy noise. Accepted only with ``insecure_seeded_noise=True``.
    insecure_seeded_noise : bool, default False
        Opt into seeded NumPy noise (reproducible; for simulations and tests only). Issues an
        :class:`~dpbandits._core.errors.InsecureNoiseWarning`.
    backend : NoiseBackend or {"numpy", "opendp", "secure"}, optional
        An explicit source. A seeded one (``NumpyNoise``, ``"numpy"``) also needs the opt-in.
    stacklevel : int, default 3
        Passed to :func:`warnings.warn` so that the warning points at the caller's code.

    Returns
    -------
    NoiseBackend

    Raises
    ------
    InvalidParameterError
        If a seed or a seeded backend is given without ``insecure_seeded_noise=True``, or a backend
        instance together with a seed.

    Privacy
    -------
    The default (secure) source is what the library's guarantees assume in deployment. With
    ``insecure_seeded_noise=True`` the printed guarantees describe the *idealised* mechanism only.

    Examples
    --------
    >>> from dpbandits.privacy.noise import privacy_noise
    >>> privacy_noise().seeded
    False
    """
    if not isinstance(insecure_seeded_noise, bool):
        raise InvalidParameterError(f"insecure_seeded_noise must be True or False; got {insecure_seeded_noise!r}")
    if isinstance(backend, str):
        check_one_of(backend, "backend", (*NOISE_BACKENDS, "secure"))
        backend = None if backend == "numpy" else SecureNoise()
        if backend is None and not insecure_seeded_noise:
            raise InvalidParameterError(
                "backend='numpy' is seeded simulation noise; on a release path it needs "
                "insecure_seeded_noise=True (simulation only)"
            )
    if backend is not None:
        if not isinstance(backend, NoiseBackend):
            raise InvalidParameterError(
                f"backend must be a NoiseBackend, one of {list(NOISE_BACKENDS)} or None; got {backend!r}"
            )
        if rng is not None:
            raise InvalidParameterError(
                f"pass either rng or a backend instance, not both (the backend owns its stream); got rng={rng!r}"
            )
        if backend.seeded:
            if not insecure_seeded_noise:
                raise InvalidParameterError(
                    f"{backend!r} is seeded simulation noise; on a release path it needs "
                    "insecure_seeded_noise=True (simulation only)"
                )
            warnings.warn(INSECURE_NOISE_MESSAGE, InsecureNoiseWarning, stacklevel=stacklevel)
        return backend
    if insecure_seeded_noise:
        warnings.warn(INSECURE_NOISE_MESSAGE, InsecureNoiseWarning, stacklevel=stacklevel)
        return NumpyNoise(rng)
    if rng is not None:
        raise InvalidParameterError(
            f"rng would seed the privacy noise, which deployment must not do; got rng={rng!r}. Pass "
            "insecure_seeded_noise=True to seed it for a simulation (not private in deployment), or "
            "drop rng to draw secure noise from the OS CSPRNG"
        )
    return SecureNoise()


def resolve_backend(backend: NoiseBackend | str | None, rng: RNGLike) -> NoiseBackend:
    """Return the backend of a *simulation* call: ``NumpyNoise(rng)`` unless a backend is given.

    Release paths use :func:`privacy_noise` instead. ``backend=None`` means ``NumpyNoise(rng)``; a
    name builds that backend; an instance is used as is, in which case ``rng`` must be None (the
    instance owns its stream).

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


def _encode_backend(backend: NoiseBackend, encode_value: Any) -> dict[str, Any]:
    """A secure backend saves nothing (its source is the OS CSPRNG); seeded NumPy noise its generator."""
    if isinstance(backend, NumpyNoise):
        return {"kind": "numpy", "generator": encode_value(backend.rng)}
    if backend.seeded:
        raise InvalidParameterError(f"cannot save the seeded noise backend {backend!r}")
    return {"kind": "secure"}


def _decode_backend(payload: Any, decode_value: Any) -> NoiseBackend:
    if payload == {"kind": "secure"}:
        return SecureNoise()
    if isinstance(payload, dict) and payload.keys() == {"kind", "generator"} and payload["kind"] == "numpy":
        generator = decode_value(payload["generator"])
        if isinstance(generator, np.random.Generator):
            warnings.warn(INSECURE_NOISE_MESSAGE, InsecureNoiseWarning, stacklevel=4)
            return NumpyNoise(generator)
    raise DataFormatError(f"damaged noise backend in state file: {str(payload)[:60]!r}")


register_codec("__noise__", NoiseBackend, _encode_backend, _decode_backend)
