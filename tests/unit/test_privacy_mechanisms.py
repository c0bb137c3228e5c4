"""Unit tests of dpbandits.privacy.mechanisms: calibration, validation, exact distributions, audits."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dpbandits._core.errors import EmptySupportError, InvalidParameterError
from dpbandits.privacy.accounting import GaussianEvent, LaplaceEvent, PureEvent, gaussian_delta
from dpbandits.privacy.guarantees import ApproxDP, Neighbouring, PureDP
from dpbandits.privacy.mechanisms import (
    ExponentialMechanism,
    GaussianMechanism,
    GibbsMechanism,
    GridExponentialMechanism,
    LaplaceMechanism,
    ReportNoisyMaxMechanism,
    analytic_gaussian_sigma,
    classical_gaussian_sigma,
    gibbs_log_probabilities,
    report_noisy_max,
    sample_log_weights,
    uniform_grid,
)

BAD_POSITIVE = [0.0, -1.0, math.nan, math.inf, -math.inf]


# --------------------------------------------------------------------------- calibration reference values


def test_laplace_scale_is_sensitivity_over_epsilon() -> None:
    mech = LaplaceMechanism(sensitivity=2.0, epsilon=0.5)
    assert mech.scale == 4.0
    assert mech.event == LaplaceEvent(scale=4.0, sensitivity=2.0)


def test_classical_gaussian_sigma_reference_value() -> None:
    # σ = √(2 ln 1.25e5) ≈ 4.8448 for Δ = 1, δ = 1e-5, ε = 1 (formula value); ε must be < 1 so use ε = 0.5
    assert classical_gaussian_sigma(1.0, 0.5, 1e-5) == pytest.approx(2 * math.sqrt(2 * math.log(1.25e5)))
    assert math.sqrt(2 * math.log(1.25e5)) == pytest.approx(4.8448, abs=1e-4)
    assert classical_gaussian_sigma(3.0, 0.5, 1e-5) == pytest.approx(3 * classical_gaussian_sigma(1.0, 0.5, 1e-5))


def test_classical_gaussian_refuses_epsilon_at_least_one() -> None:
    with pytest.raises(InvalidParameterError, match=r"epsilon must be < 1.*got 1\.0"):
        GaussianMechanism(1.0, 1.0, 1e-5, calibration="classical")


def test_analytic_gaussian_sigma_reference_value() -> None:
    # Balle & Wang (2018): σ ≈ 3.73 for (ε=1, δ=1e-5, Δ=1)
    sigma = analytic_gaussian_sigma(1.0, 1.0, 1e-5)
    assert sigma == pytest.approx(3.7306, abs=1e-3)


@pytest.mark.parametrize(("epsilon", "delta"), [(0.1, 1e-6), (1.0, 1e-5), (5.0, 1e-3), (20.0, 1e-10)])
def test_analytic_sigma_is_tight_and_rounded_up(epsilon: float, delta: float) -> None:
    sigma = analytic_gaussian_sigma(2.0, epsilon, delta)
    # rounded up: the exact δ(σ) never exceeds δ ...
    assert gaussian_delta(sigma, 2.0, epsilon) <= delta
    # ... and tight: 0.1% less noise breaks the claim
    assert gaussian_delta(sigma * 0.999, 2.0, epsilon) > delta


def test_analytic_beats_classical_where_both_hold() -> None:
    assert analytic_gaussian_sigma(1.0, 0.5, 1e-5) < classical_gaussian_sigma(1.0, 0.5, 1e-5)


def test_gaussian_mechanism_fields() -> None:
    mech = GaussianMechanism(l2_sensitivity=1.0, epsilon=1.0, delta=1e-5)
    assert mech.calibration == "analytic"
    assert mech.event == GaussianEvent(sigma=mech.sigma, l2_sensitivity=1.0)
    g = mech.guarantee("one reward", Neighbouring.REPLACE_ONE)
    assert isinstance(g, ApproxDP)
    assert (g.epsilon, g.delta) == (1.0, 1e-5)
    assert "Balle" in g.reference


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize("bad", BAD_POSITIVE)
def test_laplace_rejects_bad_epsilon_and_sensitivity(bad: float) -> None:
    with pytest.raises(InvalidParameterError, match="epsilon"):
        LaplaceMechanism(1.0, bad)
    with pytest.raises(InvalidParameterError, match="sensitivity"):
        LaplaceMechanism(bad, 1.0)


@pytest.mark.parametrize("bad_delta", [0.0, 1.0, -0.1, 1.5, math.nan])
def test_gaussian_rejects_bad_delta(bad_delta: float) -> None:
    with pytest.raises(InvalidParameterError, match="delta"):
        GaussianMechanism(1.0, 1.0, bad_delta)


@pytest.mark.parametrize("bad", BAD_POSITIVE)
def test_gaussian_rejects_bad_epsilon_and_sensitivity(bad: float) -> None:
    with pytest.raises(InvalidParameterError, match="epsilon"):
        GaussianMechanism(1.0, bad, 1e-5)
    with pytest.raises(InvalidParameterError, match="l2_sensitivity"):
        GaussianMechanism(bad, 1.0, 1e-5)


def test_gaussian_rejects_unknown_calibration() -> None:
    with pytest.raises(InvalidParameterError, match="calibration must be one of"):
        GaussianMechanism(1.0, 1.0, 1e-5, calibration="optimal")


@pytest.mark.parametrize("bad", BAD_POSITIVE)
def test_selection_mechanisms_reject_bad_parameters(bad: float) -> None:
    for make in (
        lambda e, s: ExponentialMechanism(s, e),
        lambda e, s: ReportNoisyMaxMechanism(s, e),
        lambda e, s: GridExponentialMechanism(uniform_grid(0, 1, 3), s, e),
    ):
        with pytest.raises(InvalidParameterError, match="epsilon"):
            make(bad, 1.0)
        with pytest.raises(InvalidParameterError, match="sensitivity"):
            make(1.0, bad)


@pytest.mark.parametrize("bad_value", [[], [1.0, math.nan], [math.inf], np.zeros((0, 3))])
def test_release_rejects_empty_or_non_finite_inputs(bad_value: list[float]) -> None:
    for mech in (LaplaceMechanism(1.0, 1.0), GaussianMechanism(1.0, 1.0, 1e-5),
                 ExponentialMechanism(1.0, 1.0), ReportNoisyMaxMechanism(1.0, 1.0)):
        with pytest.raises(InvalidParameterError, match="must"):
            mech.release(bad_value, rng=0, insecure_seeded_noise=True)


def test_exponential_rejects_scalar_utilities() -> None:
    with pytest.raises(InvalidParameterError, match="at least one axis"):
        ExponentialMechanism(1.0, 1.0).sample(3.0, rng=0, insecure_seeded_noise=True)


# --------------------------------------------------------------------------- reproducibility and shapes


def test_same_seed_same_numbers(seed: int) -> None:
    values = np.linspace(0, 1, 7)
    for mech in (LaplaceMechanism(1.0, 1.0), GaussianMechanism(1.0, 1.0, 1e-5)):
        first = mech.release(values, rng=seed, insecure_seeded_noise=True)
        assert np.array_equal(first, mech.release(values, rng=seed, insecure_seeded_noise=True))
        assert not np.array_equal(first, mech.release(values, rng=seed + 1, insecure_seeded_noise=True))
    exp_mech = ExponentialMechanism(1.0, 1.0)
    assert np.array_equal(exp_mech.sample(values, rng=seed, size=50, insecure_seeded_noise=True), exp_mech.sample(values, rng=seed, size=50, insecure_seeded_noise=True))


def test_release_keeps_shape_and_scalar() -> None:
    mech = LaplaceMechanism(1.0, 1.0)
    assert mech.release(np.zeros((5, 3)), rng=0, insecure_seeded_noise=True).shape == (5, 3)
    assert mech.release(2.0, rng=0, insecure_seeded_noise=True).shape == ()


def test_exponential_batch_and_size_shapes(rng: np.random.Generator) -> None:
    mech = ExponentialMechanism(1.0, 1.0)
    utilities = rng.random((6, 4))
    assert mech.sample(utilities, rng=rng, insecure_seeded_noise=True).shape == (6,)
    assert mech.sample(utilities, rng=rng, size=3, insecure_seeded_noise=True).shape == (3, 6)
    assert mech.probabilities(utilities).shape == (6, 4)
    np.testing.assert_allclose(mech.probabilities(utilities).sum(axis=-1), 1.0)


# --------------------------------------------------------------------------- Gibbs / exponential mechanism


def test_exponential_probabilities_closed_form() -> None:
    mech = ExponentialMechanism(sensitivity=0.5, epsilon=2.0)
    u = np.array([0.0, 1.0, 3.0])
    # π(a) ∝ exp(ε u(a) / (2Δ))
    expected = np.exp(2.0 * u / 1.0)
    np.testing.assert_allclose(mech.probabilities(u), expected / expected.sum(), rtol=1e-12)
    monotone = ExponentialMechanism(sensitivity=0.5, epsilon=2.0, monotone=True)
    assert monotone.temperature == pytest.approx(0.25)


def test_gibbs_log_space_handles_huge_utilities() -> None:
    # exp(1e4) overflows; log space does not
    log_p = gibbs_log_probabilities(np.zeros(3), np.array([1e4, 1e4 - 1.0, -1e4]), 1.0)
    np.testing.assert_allclose(np.exp(log_p).sum(), 1.0)
    assert log_p[0] - log_p[1] == pytest.approx(1.0)


def test_gibbs_reference_weights_and_exclusion() -> None:
    log_ref = np.array([math.log(0.5), math.log(0.5), -np.inf])
    mech = GibbsMechanism(log_ref, temperature=1.0, sensitivity=1.0)
    p = mech.probabilities([0.0, math.log(3.0), 100.0])
    np.testing.assert_allclose(p, [0.25, 0.75, 0.0], atol=1e-12)
    assert np.all(mech.sample([0.0, 0.0, 100.0], rng=0, size=200, insecure_seeded_noise=True) != 2)


def test_gibbs_infinite_temperature_is_reference() -> None:
    log_ref = np.log([0.2, 0.8])
    np.testing.assert_allclose(np.exp(gibbs_log_probabilities(log_ref, [5.0, -5.0], math.inf)), [0.2, 0.8])


def test_gibbs_without_sensitivity_claims_nothing() -> None:
    mech = GibbsMechanism(None, temperature=1.0)
    g = mech.guarantee("one record", "add/remove")
    assert math.isinf(g.epsilon)
    assert "sensitivity" in g.reason
    with pytest.raises(InvalidParameterError, match="sensitivity"):
        _ = mech.event


def test_gibbs_errors() -> None:
    with pytest.raises(EmptySupportError):
        GibbsMechanism(np.full(3, -np.inf), temperature=1.0)
    with pytest.raises(InvalidParameterError, match="3 actions"):
        GibbsMechanism(np.zeros(3), temperature=1.0).probabilities(np.zeros(4))
    with pytest.raises(InvalidParameterError, match="NaN"):
        gibbs_log_probabilities(np.zeros(2), [0.0, math.nan], 1.0)
    with pytest.raises(EmptySupportError):
        sample_log_weights(np.full(4, -np.inf), rng=0, insecure_seeded_noise=True)
    with pytest.raises(InvalidParameterError, match="temperature"):
        GibbsMechanism(None, temperature=0.0)


def test_gibbs_guarantee_and_event() -> None:
    mech = GibbsMechanism(np.zeros(4), temperature=0.5, sensitivity=0.1)
    assert mech.epsilon == pytest.approx(0.4)
    assert mech.event == PureEvent(mech.epsilon)
    assert isinstance(mech.guarantee("one logged record", "add/remove"), PureDP)


def test_sample_log_weights_keeps_signature(seed: int) -> None:
    draws = sample_log_weights(np.log([0.1, 0.9]), seed, 100, insecure_seeded_noise=True)
    assert draws.shape == (100,)
    assert np.array_equal(draws, sample_log_weights(np.log([0.1, 0.9]), seed, 100, insecure_seeded_noise=True))


# --------------------------------------------------------------------------- grid exponential mechanism


def test_uniform_grid_cell_centres() -> None:
    grid = uniform_grid([0.0, -1.0], [1.0, 1.0], [2, 4])
    assert grid.shape == (8, 2)
    np.testing.assert_allclose(np.unique(grid[:, 0]), [0.25, 0.75])
    np.testing.assert_allclose(np.unique(grid[:, 1]), [-0.75, -0.25, 0.25, 0.75])
    assert uniform_grid(0.0, 1.0, [2, 3]).shape == (6, 2)


def test_uniform_grid_errors() -> None:
    with pytest.raises(InvalidParameterError, match="upper must be > lower"):
        uniform_grid(1.0, 0.0, 3)
    with pytest.raises(InvalidParameterError, match="points_per_dim"):
        uniform_grid([0, 0], [1, 1], [2, 2, 2])
    with pytest.raises(InvalidParameterError, match="points_per_dim must be an int >= 1"):
        uniform_grid(0.0, 1.0, 0)


def test_grid_mechanism_returns_grid_points(rng: np.random.Generator) -> None:
    grid = uniform_grid([0, 0], [1, 1], 5)
    mech = GridExponentialMechanism(grid, sensitivity=1.0, epsilon=1.0)
    utilities = rng.random((3, 25))
    points = mech.sample(utilities, rng=rng, size=4, insecure_seeded_noise=True)
    assert points.shape == (4, 3, 2)
    assert all(any(np.allclose(p, g) for g in grid) for p in points.reshape(-1, 2))
    assert mech.probabilities(utilities).shape == (3, 25)
    assert mech.event == PureEvent(1.0)


def test_grid_mechanism_cell_volumes() -> None:
    grid = uniform_grid(0.0, 1.0, 2)
    mech = GridExponentialMechanism(grid, 1.0, 1.0, log_cell_volumes=np.log([1.0, 3.0]))
    np.testing.assert_allclose(mech.probabilities([0.0, 0.0]), [0.25, 0.75])
    with pytest.raises(InvalidParameterError, match="log_cell_volumes must have shape"):
        GridExponentialMechanism(grid, 1.0, 1.0, log_cell_volumes=np.zeros(3))


# --------------------------------------------------------------------------- report-noisy-max


def test_report_noisy_max_scales() -> None:
    assert ReportNoisyMaxMechanism(1.0, 0.5).scale == 4.0
    assert ReportNoisyMaxMechanism(1.0, 0.5, monotone=True).scale == 2.0
    assert ReportNoisyMaxMechanism(1.0, 0.5, one_utility_changes=True).scale == 2.0


def test_report_noisy_max_probabilities_two_actions_closed_form() -> None:
    # P(X2 > X1) for Laplace(b) noise: difference d = u2 − u1 >= 0 → 1 − ½e^{−d/b}(1 + d/(2b))
    mech = ReportNoisyMaxMechanism(1.0, 1.0)
    b, d = mech.scale, 0.7
    expected = 1.0 - 0.5 * math.exp(-d / b) * (1.0 + d / (2.0 * b))
    np.testing.assert_allclose(mech.probabilities([0.0, d]), [1 - expected, expected], atol=1e-8)


def test_report_noisy_max_function_matches_class(seed: int) -> None:
    u = np.array([0.1, 0.5, 0.2])
    a = report_noisy_max(np.tile(u, (30, 1)), 1.0, 1.0, rng=seed, insecure_seeded_noise=True)
    b = ReportNoisyMaxMechanism(1.0, 1.0).release(np.tile(u, (30, 1)), rng=seed, insecure_seeded_noise=True)
    assert a.shape == (30,)
    assert np.array_equal(a, b)


def test_backend_and_rng_together_is_an_error() -> None:
    from dpbandits.privacy.noise import NumpyNoise

    with pytest.raises(InvalidParameterError, match="either rng or a backend"):
        LaplaceMechanism(1.0, 1.0).release([0.0], rng=0, backend=NumpyNoise(0), insecure_seeded_noise=True)


# --------------------------------------------------------------------------- light exact audits (+ broken variants)


def _max_log_ratio(p: np.ndarray, q: np.ndarray) -> float:
    return float(np.max(np.abs(np.log(p) - np.log(q))))


def test_exponential_mechanism_exact_audit_and_broken_variant(rng: np.random.Generator) -> None:
    # worst-case neighbours: each utility moves by ±Δ, in opposite directions for the extreme actions
    mech = ExponentialMechanism(sensitivity=1.0, epsilon=0.8)
    worst = 0.0
    for _ in range(200):
        u = rng.uniform(-3, 3, size=5)
        shift = rng.choice([-1.0, 1.0], size=5)
        worst = max(worst, _max_log_ratio(mech.probabilities(u), mech.probabilities(u + shift)))
    assert worst <= mech.epsilon + 1e-12
    # broken: the temperature halved doubles the privacy loss; the same audit catches it
    broken = GibbsMechanism(None, temperature=mech.temperature / 2)
    u = np.array([0.0, 0.0, 0.0])
    assert _max_log_ratio(broken.probabilities(u), broken.probabilities(u + np.array([1.0, -1.0, 0.0]))) > mech.epsilon


def test_report_noisy_max_exact_audit_and_broken_variant() -> None:
    # one utility moves by Δ = 1 (one_utility_changes): loss <= ε; with the scale halved it is not
    mech = ReportNoisyMaxMechanism(1.0, 1.0, one_utility_changes=True)
    u, v = np.array([0.0, 0.0, 0.0]), np.array([1.0, 0.0, 0.0])
    loss = _max_log_ratio(mech.probabilities(u), mech.probabilities(v))
    assert loss <= mech.epsilon + 1e-6
    assert loss > 0.5 * mech.epsilon  # the audit is sensitive: the bound is not vacuous here
    broken = ReportNoisyMaxMechanism(0.5, 1.0, one_utility_changes=True)  # scale halved
    assert _max_log_ratio(broken.probabilities(u), broken.probabilities(v)) > mech.epsilon


def test_laplace_privacy_loss_at_released_scale_and_broken_variant() -> None:
    # exact privacy loss of the Laplace release: sup_x |log f_b(x) − log f_b(x − Δ)| = Δ/b
    mech = LaplaceMechanism(sensitivity=1.0, epsilon=0.7)
    x = np.linspace(-20, 20, 4001)
    loss = np.max(np.abs(stats.laplace.logpdf(x, scale=mech.scale) - stats.laplace.logpdf(x - 1.0, scale=mech.scale)))
    assert loss <= mech.epsilon + 1e-12
    broken_scale = mech.scale / 2
    broken = np.max(np.abs(stats.laplace.logpdf(x, scale=broken_scale) - stats.laplace.logpdf(x - 1.0, scale=broken_scale)))
    assert broken > mech.epsilon


def test_gaussian_exact_delta_at_released_sigma_and_broken_variant() -> None:
    mech = GaussianMechanism(1.0, 0.9, 1e-6)
    assert gaussian_delta(mech.sigma, 1.0, 0.9) <= 1e-6
    assert gaussian_delta(mech.sigma / 2, 1.0, 0.9) > 1e-6
