"""Max-Det collections, extrapolation coefficients and G-optimal designs."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.stats import ortho_group

from dpbandits._core.errors import InvalidParameterError
from dpbandits.algorithms.bai.designs import (
    extrapolation_coefficients,
    g_optimal_design,
    max_det_collection,
    reduce_dimension,
)
from dpbandits.envs.linear import dp_bai_instance


def _section5_features():
    return dp_bai_instance().features


@pytest.mark.parametrize("method", ["exact", "dominant", "auto"])
def test_max_det_on_section5_instance_is_arms_1_and_3(method):
    assert max_det_collection(_section5_features(), method=method).tolist() == [0, 2]


def test_section5_coefficients():
    x = _section5_features()
    alpha = extrapolation_coefficients(x, [0, 2])
    np.testing.assert_allclose(alpha[1], [0.9, 0.0], atol=1e-12)
    np.testing.assert_allclose(alpha[3:, 0], x[3:, 1], atol=1e-12)  # (ω_i, 0.1)
    np.testing.assert_allclose(alpha[3:, 1], 0.1, atol=1e-12)


def test_exact_equals_brute_force_and_dominant_coefficients_are_bounded(rng):
    for _ in range(60):
        n, k = int(rng.integers(4, 10)), int(rng.integers(2, 5))
        points = rng.normal(size=(n, k))
        best = max(abs(np.linalg.det(points[list(c)])) for c in itertools.combinations(range(n), k))
        exact = max_det_collection(points, method="exact")
        assert abs(np.linalg.det(points[exact])) == pytest.approx(best, rel=1e-9)
        dominant = max_det_collection(points, method="dominant")
        alpha = extrapolation_coefficients(points, dominant)
        assert np.max(np.abs(alpha)) <= 1 + 1e-9
        np.testing.assert_allclose(alpha @ points[dominant], points, atol=1e-10)  # Σ_j α_ij b_j = a_i


def test_max_det_invariant_under_orthogonal_change_and_rescaling(rng):
    points = rng.normal(size=(9, 3))
    q = ortho_group.rvs(3, random_state=rng)
    for method in ("exact", "dominant"):
        base = max_det_collection(points, method=method)
        assert max_det_collection(points @ q, method=method).tolist() == base.tolist()
        assert max_det_collection(points @ np.diag([2.0, 0.5, 3.0]), method=method).tolist() == base.tolist()


def test_max_det_refuses_points_that_do_not_span():
    with pytest.raises(InvalidParameterError, match="span"):
        max_det_collection([[1.0, 0.0], [2.0, 0.0]])


def test_reduce_dimension_keeps_full_rank_points_and_projects_otherwise(rng):
    full = rng.normal(size=(5, 3))
    coords, rank = reduce_dimension(full)
    assert rank == 3 and np.array_equal(coords, full)
    flat = rng.normal(size=(6, 2)) @ rng.normal(size=(2, 4))
    coords, rank = reduce_dimension(flat)
    assert rank == 2 and coords.shape == (6, 2)
    np.testing.assert_allclose(coords @ coords.T, flat @ flat.T, atol=1e-10)  # Gram matrix preserved


def test_g_optimal_design_on_section5_is_half_half():
    design = g_optimal_design(_section5_features())
    assert design.support.tolist() == [0, 2]
    np.testing.assert_allclose(design.weights[[0, 2]], [0.5, 0.5], atol=1e-6)
    assert design.g_value == pytest.approx(2.0, rel=1e-6)


def test_g_optimal_design_random_instances(rng):
    for n, k in [(6, 2), (10, 3), (12, 4), (40, 6)]:
        points = rng.normal(size=(n, k))
        design = g_optimal_design(points)
        assert design.g_value <= k * (1 + 1e-6)
        assert design.support.size <= k * (k + 1) // 2
        gram = (points * design.weights[:, None]).T @ points
        leverages = np.einsum("ij,ji->i", points, np.linalg.solve(gram, points.T))
        assert float(design.weights @ leverages) == pytest.approx(k, rel=1e-9)  # Kiefer-Wolfowitz: Σ π_i w_i = k
