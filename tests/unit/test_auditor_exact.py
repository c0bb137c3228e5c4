"""Unit tests of the exact auditor on hand-computed distributions."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dpbandits._core.errors import InvalidParameterError
from dpbandits.audit import (
    ExactAuditReport,
    LaplaceDistribution,
    audit_exact,
    delta_for_epsilon,
    hockey_stick_divergence,
    interval_log_probabilities,
    privacy_loss,
)


def _randomized_response(flip: float) -> tuple[list[float], list[float]]:
    """Output distributions of randomized response on bit 0 and on bit 1 (flip probability ``flip``)."""
    return [1 - flip, flip], [flip, 1 - flip]


@pytest.mark.parametrize("flip", [0.5, 0.3, 0.25, 0.1, 1e-3, 1e-12])
def test_randomized_response_loss_is_log_odds(flip: float) -> None:
    p, q = _randomized_response(flip)
    expected = math.log((1 - flip) / flip)  # ε = ln((1 − p)/p)
    assert privacy_loss(p, q) == pytest.approx(expected, rel=1e-12, abs=1e-15)
    assert privacy_loss(np.log(p), np.log(q), log=True) == pytest.approx(expected, rel=1e-12, abs=1e-15)
    assert privacy_loss(q, p) == privacy_loss(p, q)


@pytest.mark.parametrize("epsilon_rr", [0.5, 1.0, 3.0])
def test_randomized_response_delta_matches_closed_form(epsilon_rr: float) -> None:
    flip = 1.0 / (1.0 + math.exp(epsilon_rr))
    p, q = _randomized_response(flip)
    for eps in np.linspace(0.0, 2 * epsilon_rr, 13):
        # δ(ε) = (e^ε_rr − e^ε)⁺ / (1 + e^ε_rr)
        expected = max(0.0, math.exp(epsilon_rr) - math.exp(eps)) / (1.0 + math.exp(epsilon_rr))
        assert delta_for_epsilon(p, q, eps) == pytest.approx(expected, rel=1e-12, abs=1e-15)
        assert delta_for_epsilon(np.log(p), np.log(q), eps, log=True) == pytest.approx(
            expected, rel=1e-12, abs=1e-15
        )


def test_delta_at_zero_is_total_variation(rng: np.random.Generator) -> None:
    p, q = rng.dirichlet(np.ones(7)), rng.dirichlet(np.ones(7))
    assert delta_for_epsilon(p, q, 0.0) == pytest.approx(0.5 * np.abs(p - q).sum(), rel=1e-12)


def test_delta_is_zero_exactly_from_the_pure_loss_on(rng: np.random.Generator) -> None:
    for _ in range(20):
        p, q = rng.dirichlet(np.ones(5)), rng.dirichlet(np.ones(5))
        loss = privacy_loss(p, q)
        assert delta_for_epsilon(p, q, loss * (1 + 1e-12)) == pytest.approx(0.0, abs=1e-15)
        assert delta_for_epsilon(p, q, loss * 0.99) > 0.0


def test_hockey_stick_is_one_directional() -> None:
    p, q = [0.9, 0.1], [0.6, 0.4]
    # H_0(p‖q) = (0.9 − 0.6)⁺ + (0.1 − 0.4)⁺ = 0.3 ; at ε = ln 1.4: (0.9 − 0.84)⁺ = 0.06 one way,
    # (0.4 − 1.4·0.1)⁺ = 0.26 the other
    assert hockey_stick_divergence(p, q, 0.0) == pytest.approx(0.3)
    assert hockey_stick_divergence(p, q, math.log(1.4)) == pytest.approx(0.06)
    assert hockey_stick_divergence(q, p, math.log(1.4)) == pytest.approx(0.26)
    assert delta_for_epsilon(p, q, math.log(1.4)) == pytest.approx(0.26)


def test_zero_probabilities() -> None:
    # one zero, the other positive: infinite loss; δ(ε) keeps the unmatched mass for every ε
    assert privacy_loss([1.0, 0.0], [0.5, 0.5]) == math.inf
    assert delta_for_epsilon([0.9, 0.1], [1.0, 0.0], 5.0) == pytest.approx(0.1)
    # both zero: the output never occurs and is ignored
    assert privacy_loss([0.5, 0.5, 0.0], [0.5, 0.5, 0.0]) == 0.0
    assert privacy_loss([-math.inf, 0.0], [-math.inf, 0.0], log=True) == 0.0
    assert delta_for_epsilon([0.5, 0.5, 0.0], [0.25, 0.75, 0.0], 0.0) == pytest.approx(0.25)


def test_log_space_survives_underflow() -> None:
    # p = (1, e^−2000), q = (1, e^−2001): both underflow to (1, 0) in float64, the loss is exactly 1
    log_p, log_q = np.array([0.0, -2000.0]), np.array([0.0, -2001.0])
    assert privacy_loss(log_p, log_q, log=True) == pytest.approx(1.0, rel=1e-12)
    # in linear space the information is gone (both masses round to 0): the reason log=True exists
    assert privacy_loss(np.exp(log_p), np.exp(log_q)) == 0.0
    # hockey-stick at ε = 0.5: e^−2000·(1 − e^{0.5 − 1})... underflows to 0 as a mass, correctly
    assert delta_for_epsilon(log_p, log_q, 0.5, log=True) == 0.0
    # but small and representable masses keep full relative precision
    log_p2, log_q2 = np.log([1 - 1e-300, 1e-300]), np.log([1 - 1e-301, 1e-301])
    expected = 1e-300 - math.exp(0.5) * 1e-301  # H_0.5(p‖q): only the rare output counts
    assert delta_for_epsilon(log_p2, log_q2, 0.5, log=True) == pytest.approx(expected, rel=1e-9)


def test_delta_agrees_with_dp_accounting_pld(rng: np.random.Generator) -> None:
    from dp_accounting.pld import privacy_loss_distribution as pld

    p, q = rng.dirichlet(np.ones(6)), rng.dirichlet(np.ones(6))
    log_p, log_q = dict(enumerate(np.log(p))), dict(enumerate(np.log(q)))
    # symmetric=False: dp_accounting takes the worse of both directions, as delta_for_epsilon does;
    # symmetric=True: one direction, H_ε(q‖p) with the upper distribution second
    both = pld.from_two_probability_mass_functions(log_p, log_q, value_discretization_interval=1e-6,
                                                   symmetric=False)
    one = pld.from_two_probability_mass_functions(log_p, log_q, value_discretization_interval=1e-6)
    for eps in (0.0, 0.2, 0.5):
        # the PLD rounds pessimistically (δ a little too large); ours is exact
        for ours, theirs in ((delta_for_epsilon(p, q, eps), both.get_delta_for_epsilon(eps)),
                             (hockey_stick_divergence(q, p, eps), one.get_delta_for_epsilon(eps))):
            assert ours <= theirs + 1e-12
            assert theirs - ours < 1e-5


def test_audit_exact_reports_the_worst_pair() -> None:
    flips = {"weak": 0.4, "strong": 0.1, "mid": 0.25}

    def distribution(dataset: tuple[str, int]) -> list[float]:
        name, bit = dataset
        p, q = _randomized_response(flips[name])
        return p if bit == 0 else q

    pairs = [((name, 0), (name, 1)) for name in flips]
    claimed = math.log(9.0)  # the strong-signal pair has loss ln(0.9/0.1) = ln 9
    report = audit_exact(distribution, pairs, epsilon=claimed)
    assert isinstance(report, ExactAuditReport)
    assert report.passed
    assert report.max_log_ratio == pytest.approx(math.log(9.0))
    assert report.worst_pair == (("strong", 0), ("strong", 1))
    assert report.worst_pair_index == 1
    assert report.n_pairs == 3
    assert report.delta_at_epsilon == pytest.approx(0.0, abs=1e-15)
    assert "PASSED" in str(report)

    violated = audit_exact(distribution, pairs, epsilon=2.0)
    assert not violated.passed
    assert violated.delta_at_epsilon > 0.0
    assert "VIOLATED" in str(violated)
    # the same violation is acceptable as an (ε, δ) claim with δ >= δ(ε), and not below
    exact_delta = violated.delta_at_epsilon
    assert audit_exact(distribution, pairs, epsilon=2.0, delta=exact_delta).passed
    assert not audit_exact(distribution, pairs, epsilon=2.0, delta=exact_delta * 0.9).passed


def test_audit_exact_pure_tolerance_is_relative() -> None:
    def distribution(bit: int) -> list[float]:
        return _randomized_response(0.25)[bit]

    eps = math.log(3.0)
    assert audit_exact(distribution, [(0, 1)], epsilon=eps * (1 - 1e-12)).passed
    assert not audit_exact(distribution, [(0, 1)], epsilon=eps * (1 - 1e-6)).passed
    assert not audit_exact(distribution, [(0, 1)], epsilon=eps * (1 - 1e-12), tolerance=0.0).passed


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"neighbour_pairs": []}, "neighbour_pairs must not be empty"),
        ({"epsilon": 0.0}, "epsilon must be a finite float > 0"),
        ({"epsilon": math.nan}, "epsilon"),
        ({"delta": 1.0}, r"delta must lie in \[0.0, 1.0\)"),
        ({"tolerance": -1.0}, "tolerance"),
        ({"neighbour_pairs": [(0, 1, 2)]}, r"neighbour_pairs\[0\] must be a pair"),
        ({"distribution": 3}, "distribution must be callable"),
    ],
)
def test_audit_exact_validates(kwargs: dict[str, object], match: str) -> None:
    arguments: dict[str, object] = {
        "distribution": lambda bit: _randomized_response(0.25)[bit],
        "neighbour_pairs": [(0, 1)],
        "epsilon": 1.0,
    }
    arguments.update(kwargs)
    with pytest.raises(InvalidParameterError, match=match):
        audit_exact(**arguments)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("p", "q", "log", "match"),
    [
        ([0.5, 0.6], [0.5, 0.5], False, "p must sum to 1"),
        ([0.5, 0.5], [1.5, -0.5], False, "q must hold probabilities"),
        ([0.5, math.nan], [0.5, 0.5], False, "p must not contain NaN"),
        ([0.5, 0.5], [0.2, 0.3, 0.5], False, "same outputs"),
        ([0.0, 0.0], [0.5, 0.5], False, "positive mass"),
        ([1.0, 0.0], [0.5, 0.5], True, "log-probabilities <= 0"),
        ([], [], False, "must not be empty"),
    ],
)
def test_distributions_are_validated(p: list[float], q: list[float], log: bool, match: str) -> None:
    with pytest.raises(InvalidParameterError, match=match):
        privacy_loss(p, q, log=log)


def test_delta_for_epsilon_validates_epsilon() -> None:
    with pytest.raises(InvalidParameterError, match="epsilon must lie in"):
        delta_for_epsilon([0.5, 0.5], [0.5, 0.5], -0.1)


def test_interval_probabilities_partition_and_tails() -> None:
    laplace = LaplaceDistribution(loc=0.0, scale=1.0)
    edges = np.concatenate([[-math.inf], np.linspace(-900.0, 900.0, 1801), [math.inf]])
    log_probs = interval_log_probabilities(laplace, edges)
    assert log_probs.shape == (edges.size - 1,)
    assert np.exp(log_probs).sum() == pytest.approx(1.0, rel=1e-12)
    # far right tail: P[(800, 801]] = ½·e^−800·(1 − e^−1), keeps full relative precision
    index = int(np.flatnonzero(edges == 800.0)[0])
    assert log_probs[index] == pytest.approx(-800.0 + math.log(0.5 * (1 - math.exp(-1.0))), rel=1e-13)
    # far left tail, symmetric
    index_left = int(np.flatnonzero(edges == -801.0)[0])
    assert log_probs[index_left] == pytest.approx(log_probs[index], rel=1e-13)
    # central intervals agree with plain CDF differences
    central = (edges[:-1] > -5) & (edges[1:] < 5)
    cdf = stats.laplace.cdf
    direct = np.log(cdf(edges[1:][central]) - cdf(edges[:-1][central]))
    np.testing.assert_allclose(log_probs[central], direct, rtol=1e-10)


def test_interval_probabilities_of_gaussian_tail() -> None:
    normal = stats.norm(loc=2.0, scale=1.0)
    log_probs = interval_log_probabilities(normal, [-math.inf, 2.0, 32.0, math.inf])
    assert log_probs[0] == pytest.approx(math.log(0.5), rel=1e-14)
    assert log_probs[2] == pytest.approx(float(stats.norm.logsf(30.0)), rel=1e-13)


def test_interval_probabilities_validate_edges() -> None:
    with pytest.raises(InvalidParameterError, match="strictly increasing"):
        interval_log_probabilities(stats.norm(), [0.0, 0.0, 1.0])
    with pytest.raises(InvalidParameterError, match="strictly increasing"):
        interval_log_probabilities(stats.norm(), [0.0])


def test_laplace_distribution_matches_scipy_where_scipy_is_accurate() -> None:
    x = np.linspace(-30.0, 40.0, 141)
    ours = LaplaceDistribution(loc=3.0, scale=2.0)
    np.testing.assert_allclose(ours.logcdf(x), stats.laplace.logcdf(x, 3.0, 2.0), rtol=1e-12)
    np.testing.assert_allclose(ours.logsf(x), stats.laplace.logsf(x, 3.0, 2.0), rtol=1e-12)
    assert ours.median() == 3.0
    # and stays exact where scipy underflows: log P[X > μ + 2000·b] = log ½ − 2000
    assert float(ours.logsf(3.0 + 4000.0)) == pytest.approx(math.log(0.5) - 2000.0, rel=1e-14)
    with pytest.raises(InvalidParameterError, match="scale must be a finite float > 0"):
        LaplaceDistribution(loc=0.0, scale=0.0)


def test_batch_functions_agree_with_the_validated_ones(rng: np.random.Generator) -> None:
    from dpbandits.audit import delta_for_epsilon_batch, privacy_loss_batch

    p = rng.dirichlet(np.ones(6), size=30)
    q = rng.dirichlet(np.ones(6), size=30)
    p[:5, 0], q[3:8, 0] = 0.0, 0.0  # zeros on one side, on both sides, and unmatched
    p[:5] /= p[:5].sum(axis=1, keepdims=True)
    q[3:8] /= q[3:8].sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore"):
        log_p, log_q = np.log(p), np.log(q)
    losses = privacy_loss_batch(log_p, log_q)
    deltas = delta_for_epsilon_batch(log_p, log_q, 0.3)
    assert losses.shape == deltas.shape == (30,)
    for i in range(30):
        assert losses[i] == privacy_loss(p[i], q[i])
        assert deltas[i] == pytest.approx(delta_for_epsilon(p[i], q[i], 0.3), rel=1e-12, abs=1e-16)
    assert np.isinf(losses[:3]).all() and np.isinf(losses[5:8]).all() and np.isfinite(losses[3:5]).all()
    # broadcasting one distribution against many
    np.testing.assert_allclose(privacy_loss_batch(log_p[0], log_q), [privacy_loss(p[0], qi) for qi in q])
