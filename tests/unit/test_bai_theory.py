"""Theory helpers: H_BAI, H_pri (eqs. 14-15), Theorem 4.2 and Theorem 4.7 curves."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpbandits._core.errors import InvalidParameterError
from dpbandits.algorithms.bai.theory import (
    dp_bai_upper_bound,
    hardness,
    hardness_bai,
    hardness_private,
    minimax_lower_bound,
)
from dpbandits.envs.linear import dp_bai_instance


def test_section5_hardness_matches_spec():
    means = dp_bai_instance().means
    assert hardness_bai(means, 2) == pytest.approx(1270.2, abs=0.1)
    assert hardness_private(means, 2, 1.0) == pytest.approx(71.28, abs=0.01)
    assert hardness_private(means, 2, 0.1) == pytest.approx(712.8, abs=0.1)
    assert hardness(means, 2, 0.5) == pytest.approx(1270.2 + 71.28 / 0.5, abs=0.2)


def test_hardness_uses_index_range_up_to_d_squared_and_k():
    means = np.array([1.0, 0.9, 0.8, 0.1])
    # d = 1: i ranges over {2}; d = 2: i ∈ {2, 3, 4}
    assert hardness_bai(means, 1) == pytest.approx(2 / 0.1**2)
    assert hardness_bai(means, 2) == pytest.approx(max(2 / 0.01, 3 / 0.04, 4 / 0.81))
    assert hardness_private(means, 2, 2.0) == pytest.approx(max(2 / 0.1, 3 / 0.2, 4 / 0.9) / 2)


def test_upper_bound_formula_and_monotonicity():
    means = dp_bai_instance().means
    h = hardness(means, 2, 0.1)
    values = [dp_bai_upper_bound(t, means, 2, 0.1) for t in (1000, 10_000, 100_000)]
    assert values[0] == pytest.approx(math.exp(-(1000 - 2) / (65 * 1 * h)))
    assert values[0] > values[1] > values[2]
    assert dp_bai_upper_bound(2, means, 2, 0.1) == 1.0


def test_lower_bound_curve():
    value = minimax_lower_bound(1000, 4, 100.0, 50.0)
    assert value == pytest.approx(math.exp(-1000 / (math.log(4) * 150.0)))
    smaller_betas = minimax_lower_bound(1000, 4, 100.0, 50.0, betas=(0.5, 1.0, 1.0))
    assert smaller_betas < value


def test_invalid_inputs():
    with pytest.raises(InvalidParameterError, match="unique best"):
        hardness_bai([0.5, 0.5, 0.1], 2)
    with pytest.raises(InvalidParameterError, match="epsilon"):
        hardness_private([0.5, 0.4], 2, 0.0)
    with pytest.raises(InvalidParameterError, match="betas"):
        minimax_lower_bound(10, 2, 1.0, 1.0, betas=(1.5, 1.0, 1.0))
