"""Validation helpers used at public boundaries.

Each helper checks one constraint and returns the normalised value, or raises
:class:`~dpbandits._core.errors.InvalidParameterError` with a message that names the parameter, the
constraint and the value found (``epsilon must be a finite float > 0; got -1.0``). Internal code
trusts its callers and does not re-validate.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpbandits._core.errors import InvalidParameterError

__all__ = [
    "MAX_EXACT_COUNT",
    "check_arm",
    "check_array",
    "check_bounded_array",
    "check_delta",
    "check_epsilon",
    "check_finite_float",
    "check_in_interval",
    "check_int",
    "check_one_of",
    "check_positive_float",
    "check_probability_vector",
    "check_real",
    "check_sensitivity",
]


def _as_float(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise InvalidParameterError(f"{name} must be a real number; got {type(value).__name__} {value!r}")
    return float(value)


def check_finite_float(value: Any, name: str) -> float:
    """Return ``value`` as a float; it must be finite (not NaN, not ±inf)."""
    x = _as_float(value, name)
    if not math.isfinite(x):
        raise InvalidParameterError(f"{name} must be a finite float; got {x!r}")
    return x


def check_positive_float(value: Any, name: str, *, allow_inf: bool = False) -> float:
    """Return ``value`` as a float > 0 (finite unless ``allow_inf``)."""
    x = _as_float(value, name)
    finite = "" if allow_inf else "finite "
    if math.isnan(x) or x <= 0 or (math.isinf(x) and not allow_inf):
        raise InvalidParameterError(f"{name} must be a {finite}float > 0; got {x!r}")
    return x


def check_in_interval(
    value: Any,
    name: str,
    low: float,
    high: float,
    *,
    closed: str = "both",
) -> float:
    """Return ``value`` as a float in an interval.

    Parameters
    ----------
    value : float
    name : str
    low, high : float
    closed : {"both", "left", "right", "neither"}
        Which ends belong to the interval.
    """
    x = _as_float(value, name)
    left_ok = x >= low if closed in ("both", "left") else x > low
    right_ok = x <= high if closed in ("both", "right") else x < high
    if math.isnan(x) or not (left_ok and right_ok):
        lb = "[" if closed in ("both", "left") else "("
        rb = "]" if closed in ("both", "right") else ")"
        raise InvalidParameterError(f"{name} must lie in {lb}{low}, {high}{rb}; got {x!r}")
    return x


def check_epsilon(value: Any, name: str = "epsilon", *, allow_inf: bool = False) -> float:
    """Return a privacy parameter ε > 0 (``allow_inf`` admits ε = ∞, meaning no privacy)."""
    return check_positive_float(value, name, allow_inf=allow_inf)


def check_delta(value: Any, name: str = "delta") -> float:
    """Return a privacy parameter δ in [0, 1)."""
    return check_in_interval(value, name, 0.0, 1.0, closed="left")


def check_sensitivity(value: Any, name: str = "sensitivity") -> float:
    """Return a sensitivity: a finite float > 0."""
    return check_positive_float(value, name)


MAX_EXACT_COUNT = 2**53
"""The largest count a budget may be: the algorithms compute with counts as floats, exact up to 2^53."""


def check_int(
    value: Any,
    name: str,
    *,
    minimum: int | None = None,
    maximum: int | None = None,
) -> int:
    """Return ``value`` as an int within optional bounds (bools are refused)."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        if isinstance(value, float | np.floating) and float(value).is_integer():
            value = int(value)
        else:
            raise InvalidParameterError(f"{name} must be an int; got {type(value).__name__} {value!r}")
    v = int(value)
    if minimum is not None and v < minimum:
        raise InvalidParameterError(f"{name} must be an int >= {minimum}; got {v}")
    if maximum is not None and v > maximum:
        raise InvalidParameterError(f"{name} must be an int <= {maximum}; got {v}")
    return v


def check_one_of(value: Any, name: str, options: Sequence[Any]) -> Any:
    """Return ``value`` if it is one of ``options``."""
    if value not in options:
        raise InvalidParameterError(f"{name} must be one of {list(options)}; got {value!r}")
    return value


def check_array(
    value: ArrayLike,
    name: str,
    *,
    ndim: int | tuple[int, ...] | None = None,
    dtype: Any = np.float64,
    allow_empty: bool = False,
    finite: bool = True,
) -> NDArray[Any]:
    """Return ``value`` as an array, checking its dimension, emptiness and finiteness.

    Parameters
    ----------
    value : array_like
    name : str
    ndim : int or tuple of int, optional
        Allowed numbers of dimensions.
    dtype : dtype, default float64
        Target dtype (``None`` keeps the input's).
    allow_empty : bool, default False
    finite : bool, default True
        Refuse NaN and ±inf (for float arrays).
    """
    try:
        raw = np.asarray(value)
    except (TypeError, ValueError) as exc:  # ragged nesting, unconvertible objects
        raise InvalidParameterError(f"{name} must be array-like of {dtype}; got {value!r}") from exc
    numeric_target = dtype is not None and np.dtype(dtype).kind in "iufc"
    if numeric_target and (raw.dtype.kind in "USb" or (raw.dtype.kind == "O" and any(
            isinstance(v, str | bytes | bool | np.bool_) for v in raw.ravel()))):
        # never coerce text ("0.5") or booleans into numbers silently
        raise InvalidParameterError(f"{name} must be numeric; got {(raw.dtype.kind == 'b' and 'booleans') or 'text'}: {value!r}")
    try:
        arr = np.asarray(raw, dtype=dtype)
    except (TypeError, ValueError, OverflowError) as exc:
        raise InvalidParameterError(f"{name} must be array-like of {dtype}; got {value!r}") from exc
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else ndim
        if arr.ndim not in allowed:
            raise InvalidParameterError(
                f"{name} must have ndim in {list(allowed)}; got {name}.shape={arr.shape}"
            )
    if not allow_empty and arr.size == 0:
        raise InvalidParameterError(f"{name} must not be empty; got {name}.shape={arr.shape}")
    if finite and arr.dtype.kind in "fc" and not np.all(np.isfinite(arr)):
        bad = np.flatnonzero(~np.isfinite(arr.ravel()))[0]
        raise InvalidParameterError(
            f"{name} must be finite; got {arr.ravel()[bad].item()!r} at flat index {int(bad)}"
        )
    return arr


def check_bounded_array(
    value: ArrayLike,
    name: str,
    low: float,
    high: float,
    *,
    clip: bool = False,
    **kwargs: Any,
) -> NDArray[np.float64]:
    """Return a float array whose entries lie in ``[low, high]``.

    Out-of-range data is an error unless ``clip=True`` was asked for explicitly: sensitivity
    (and so privacy) depends on the bound.
    """
    arr = check_array(value, name, **kwargs)
    if clip:
        return np.clip(arr, low, high)
    outside = (arr < low) | (arr > high)
    if np.any(outside):
        idx = int(np.flatnonzero(outside.ravel())[0])
        raise InvalidParameterError(
            f"{name} must lie in [{low}, {high}]; got {arr.ravel()[idx].item()!r} at flat index {idx} "
            "(pass clip=True to clip explicitly)"
        )
    return arr


def check_probability_vector(value: ArrayLike, name: str, *, atol: float = 1e-9) -> NDArray[np.float64]:
    """Return a 1-d array of probabilities that are >= 0 and sum to 1 within ``atol``."""
    p = check_array(value, name, ndim=1)
    if np.any(p < 0):
        raise InvalidParameterError(f"{name} must be >= 0 entrywise; got min {float(p.min())!r}")
    total = float(p.sum())
    if abs(total - 1.0) > atol:
        raise InvalidParameterError(f"{name} must sum to 1 (within {atol}); got sum {total!r}")
    return p


def check_real(value: Any, name: str) -> float:
    """Return a finite real number: an int or float (NumPy's too); no bool, no text, no NaN or ±inf.

    For values a caller reports (a reward, a context coordinate): nothing is coerced silently.
    """
    if isinstance(value, bool | np.bool_) or not isinstance(value, int | float | np.integer | np.floating):
        raise InvalidParameterError(f"{name} must be a real number; got {type(value).__name__} {value!r}")
    x = float(value)
    if not math.isfinite(x):
        raise InvalidParameterError(f"{name} must be a finite real number; got {x!r}")
    return x


def check_arm(value: Any, name: str, n_arms: int) -> int:
    """Return an arm index: an int (NumPy's too; no bool, no float, no text) in [0, n_arms)."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, int | np.integer):
        raise InvalidParameterError(f"{name} must be an int arm index; got {type(value).__name__} {value!r}")
    v = int(value)
    if not 0 <= v < n_arms:
        raise InvalidParameterError(f"{name} must be an arm index in [0, {n_arms}); got {v}")
    return v
