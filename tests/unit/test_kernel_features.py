"""Feature maps: kernel approximation, and the certified max_diag / distance bounds."""

from __future__ import annotations

import numpy as np
import pytest

from dpbandits._core.errors import InvalidParameterError
from dpbandits.algorithms.kernel.features import (
    FeatureKernel,
    NystromFeatures,
    kernel_approximation_error,
    make_feature_map,
    quadrature_fourier_features,
    random_fourier_features,
)
from dpbandits.envs.kernel import StationaryKernel

SE = StationaryKernel("se", 0.2)


def test_qff_approximates_the_se_kernel_and_folds_mirror_nodes(seed):
    qff = quadrature_fourier_features(SE, 2, nodes_per_axis=20)
    # 400 tensor nodes, folded in ±ω pairs (200) before dropping weights < 1e-12 (spec: 552/2 = 276)
    assert qff.dim == 276
    assert abs(qff.max_diag - 1.0) < 1e-9
    assert kernel_approximation_error(SE, qff, 2, rng=seed) < 1e-3


def test_rff_and_nystrom_approximate_their_kernels(seed):
    matern = StationaryKernel("matern", 0.3, 2.5)
    nys = NystromFeatures(matern, 2, n_landmarks=256, rng=seed)
    assert kernel_approximation_error(matern, nys, 2, rng=seed) < 0.05
    rff = random_fourier_features(SE, 2, n_frequencies=4000, rng=seed)
    # Monte-Carlo error of 4000 frequencies: sd <= 1/√8000 per pair; max over 512² pairs < 0.08
    assert kernel_approximation_error(SE, rff, 2, rng=seed) < 0.08


@pytest.mark.parametrize("method", ["qff", "rff", "nystrom"])
def test_distance_bound_and_max_diag_are_certified(method, seed, rng):
    fmap = make_feature_map(SE, 2, method, n_features={"qff": 12, "rff": 64, "nystrom": 64}[method], rng=seed)
    g = rng.random((2000, 2))
    for radius in (1e-3, 1e-2, 0.1, 0.5):
        direction = rng.standard_normal((2000, 2))
        w = g + radius * direction / np.linalg.norm(direction, axis=1, keepdims=True)
        gap = np.linalg.norm(fmap.transform(w) - fmap.transform(g), axis=1)
        assert np.all(gap <= fmap.distance_bound(radius) * (1 + 1e-12) + 1e-15)
    kernel = FeatureKernel(fmap)
    assert np.all(kernel.diag(g) <= fmap.max_diag * (1 + 1e-12))


def test_float32_transform_is_close_to_float64(rng):
    qff = quadrature_fourier_features(SE, 2)
    w = rng.random((100, 2))
    np.testing.assert_allclose(qff.transform(w, dtype=np.float32), qff.transform(w), atol=2e-5)


def test_auto_picks_qff_for_low_dimensional_se_and_nystrom_otherwise(seed):
    assert make_feature_map(SE, 2, "auto").dim == 276
    assert isinstance(make_feature_map(StationaryKernel("matern", 0.2), 2, "auto", 32, seed), NystromFeatures)
    with pytest.raises(InvalidParameterError, match="kernel must be 'se'"):
        quadrature_fourier_features(StationaryKernel("matern", 0.2), 2)
