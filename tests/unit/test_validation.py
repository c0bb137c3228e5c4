"""Unit tests of dpbandits._core.validation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpbandits._core.errors import InvalidParameterError
from dpbandits._core.validation import (
    check_arm,
    check_array,
    check_bounded_array,
    check_delta,
    check_epsilon,
    check_finite_float,
    check_in_interval,
    check_int,
    check_one_of,
    check_positive_float,
    check_probability_vector,
    check_real,
    check_sensitivity,
)


def test_epsilon_messages_name_parameter_constraint_and_value() -> None:
    with pytest.raises(InvalidParameterError, match=r"epsilon must be a finite float > 0; got -1\.0"):
        check_epsilon(-1.0)
    assert check_epsilon(math.inf, allow_inf=True) == math.inf
    assert check_epsilon(np.float32(0.5)) == 0.5


@pytest.mark.parametrize("bad", [0.0, -2.0, math.nan, math.inf, "1.0", None, True])
def test_positive_float_rejects(bad: object) -> None:
    with pytest.raises(InvalidParameterError, match="sensitivity"):
        check_sensitivity(bad)


def test_finite_float() -> None:
    assert check_finite_float(3, "x") == 3.0
    with pytest.raises(InvalidParameterError, match="x must be a finite float"):
        check_finite_float(math.nan, "x")
    assert check_positive_float(math.inf, "x", allow_inf=True) == math.inf


@pytest.mark.parametrize("bad", [-1e-9, 1.0, 2.0, math.nan])
def test_delta_in_half_open_unit_interval(bad: float) -> None:
    with pytest.raises(InvalidParameterError, match=r"delta must lie in \[0\.0, 1\.0\)"):
        check_delta(bad)
    assert check_delta(0.0) == 0.0


def test_interval_closures() -> None:
    assert check_in_interval(0.0, "p", 0.0, 1.0) == 0.0
    with pytest.raises(InvalidParameterError, match=r"p must lie in \(0\.0, 1\.0\]"):
        check_in_interval(0.0, "p", 0.0, 1.0, closed="right")
    with pytest.raises(InvalidParameterError, match=r"\(0\.0, 1\.0\)"):
        check_in_interval(1.0, "p", 0.0, 1.0, closed="neither")


def test_int() -> None:
    assert check_int(3, "n") == 3
    assert check_int(4.0, "n") == 4
    assert check_int(np.int64(2), "n", minimum=1, maximum=2) == 2
    for bad in (True, 2.5, "3"):
        with pytest.raises(InvalidParameterError, match="n must be an int"):
            check_int(bad, "n")
    with pytest.raises(InvalidParameterError, match="n must be an int >= 1; got 0"):
        check_int(0, "n", minimum=1)
    with pytest.raises(InvalidParameterError, match="n must be an int <= 5; got 6"):
        check_int(6, "n", maximum=5)


def test_one_of() -> None:
    assert check_one_of("a", "mode", ("a", "b")) == "a"
    with pytest.raises(InvalidParameterError, match=r"mode must be one of \['a', 'b'\]; got 'c'"):
        check_one_of("c", "mode", ("a", "b"))


def test_array_checks() -> None:
    arr = check_array([[1, 2], [3, 4]], "x", ndim=2)
    assert arr.dtype == np.float64 and arr.shape == (2, 2)
    with pytest.raises(InvalidParameterError, match="x must have ndim in"):
        check_array([1, 2], "x", ndim=2)
    with pytest.raises(InvalidParameterError, match="x must not be empty"):
        check_array([], "x")
    assert check_array([], "x", allow_empty=True).size == 0
    with pytest.raises(InvalidParameterError, match="x must be finite; got nan at flat index 1"):
        check_array([0.0, math.nan], "x")
    assert np.isinf(check_array([math.inf], "x", finite=False)).all()
    with pytest.raises(InvalidParameterError, match="x must be numeric; got text"):
        check_array(["a"], "x")
    with pytest.raises(InvalidParameterError, match="x must be numeric; got text"):
        check_array(["0.5"], "x")  # never a silent coercion of text
    with pytest.raises(InvalidParameterError, match="x must be numeric; got booleans"):
        check_array([True, False], "x")
    with pytest.raises(InvalidParameterError, match="x must be array-like"):
        check_array([[1.0], [1.0, 2.0]], "x")  # ragged


def test_real_and_arm_checks_refuse_coercions() -> None:
    assert check_real(np.float32(0.5), "reward") == 0.5 and check_real(2, "reward") == 2.0
    for bad in (True, "0.5", None, [0.5], np.array([0.5]), math.nan, math.inf):
        with pytest.raises(InvalidParameterError, match="reward must be a"):
            check_real(bad, "reward")
    assert check_arm(np.int64(2), "arm", 3) == 2
    for bad in (True, 1.0, "1", None, -1, 3):
        with pytest.raises(InvalidParameterError, match="arm must be an"):
            check_arm(bad, "arm", 3)


def test_bounded_array_errors_unless_clipping_asked() -> None:
    with pytest.raises(InvalidParameterError, match=r"rewards must lie in \[0\.0, 1\.0\]; got 1\.5 at flat index 2"):
        check_bounded_array([0.0, 0.5, 1.5], "rewards", 0.0, 1.0)
    np.testing.assert_array_equal(check_bounded_array([-1.0, 0.5, 1.5], "rewards", 0.0, 1.0, clip=True),
                                  [0.0, 0.5, 1.0])


def test_probability_vector() -> None:
    np.testing.assert_array_equal(check_probability_vector([0.25, 0.75], "p"), [0.25, 0.75])
    with pytest.raises(InvalidParameterError, match="p must be >= 0"):
        check_probability_vector([-0.5, 1.5], "p")
    with pytest.raises(InvalidParameterError, match="p must sum to 1"):
        check_probability_vector([0.5, 0.6], "p")
