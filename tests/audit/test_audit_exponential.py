"""Exact privacy audits of the exponential-mechanism family, each with a broken variant caught.

The output set is finite, so the audit is exact given the neighbouring utility vectors. For
utilities with sensitivity Δ a neighbour is u' = u + Δ·s with s ∈ [−1, 1]^K; the log-probabilities
are convex in each s_a between the corners, so enumerating the sign vectors s ∈ {−1, 0, 1}^K on
several base utilities covers the worst case of the bases. Bases with one action far below the
others make the bound tight: its probability moves by e^{±Δ/η} while every other weight moves the
other way, giving a log-ratio of 2Δ/η = ε.

Broken variants: η = Δ/ε (the monotone calibration) on non-monotone neighbours (loss 2ε), and a
Gibbs sampler claiming Δ/η for neighbours that change several utilities.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable

import numpy as np
import pytest

from dpbandits.audit import audit_exact
from dpbandits.privacy.mechanisms import (
    ExponentialMechanism,
    GibbsMechanism,
    GridExponentialMechanism,
    ReportNoisyMaxMechanism,
    gibbs_log_probabilities,
    uniform_grid,
)

N_ACTIONS = 4


def _bases(rng: np.random.Generator, n_actions: int, sensitivity: float) -> list[np.ndarray]:
    """Base utility vectors: flat, random, and with one action far below / above the rest."""
    far = 60.0 * sensitivity
    bases = [np.zeros(n_actions), rng.uniform(0.0, 5.0 * sensitivity, n_actions)]
    for a in range(n_actions):
        low, high = np.zeros(n_actions), np.zeros(n_actions)
        low[a], high[a] = -far, far
        bases += [low, high]
    return bases


def _neighbour_pairs(bases: list[np.ndarray], sensitivity: float, signs: list[tuple[int, ...]]):  # type: ignore[no-untyped-def]
    return [(tuple(u), tuple(u + sensitivity * np.asarray(s))) for u in bases for s in signs]


ALL_SIGNS = list(itertools.product((-1, 0, 1), repeat=N_ACTIONS))
MONOTONE_SIGNS = [s for s in ALL_SIGNS if min(s) >= 0 or max(s) <= 0]


@pytest.mark.parametrize(("sensitivity", "epsilon"), [(1.0, 1.0), (0.1, 0.5), (2.0, 4.0)])
def test_exponential_mechanism_passes_and_is_tight(sensitivity: float, epsilon: float,
                                                   rng: np.random.Generator) -> None:
    mechanism = ExponentialMechanism(sensitivity, epsilon)
    pairs = _neighbour_pairs(_bases(rng, N_ACTIONS, sensitivity), sensitivity, ALL_SIGNS)
    report = audit_exact(mechanism.log_probabilities, pairs, epsilon=epsilon, log=True)
    assert report.passed, str(report)
    assert report.max_log_ratio >= 0.99 * epsilon  # the far-below base attains ε up to e^{−60}


@pytest.mark.parametrize(("sensitivity", "epsilon"), [(1.0, 1.0), (0.1, 0.5)])
def test_monotone_calibration_on_non_monotone_utilities_is_caught(
    sensitivity: float, epsilon: float, rng: np.random.Generator
) -> None:
    # η = Δ/ε is valid only when all utilities move the same way
    broken = ExponentialMechanism(sensitivity, epsilon, monotone=True)
    bases = _bases(rng, N_ACTIONS, sensitivity)
    monotone = audit_exact(broken.log_probabilities, _neighbour_pairs(bases, sensitivity, MONOTONE_SIGNS),
                           epsilon=epsilon, log=True)
    assert monotone.passed, str(monotone)
    report = audit_exact(broken.log_probabilities, _neighbour_pairs(bases, sensitivity, ALL_SIGNS),
                         epsilon=epsilon, log=True)
    assert not report.passed
    assert report.max_log_ratio == pytest.approx(2 * epsilon, rel=1e-6)


def test_exponential_mechanism_with_an_underflowing_base_measure(rng: np.random.Generator) -> None:
    # π0 ∝ (1, e^−900, e^−1800, e^−2700): all but one weight underflow in linear space
    log_reference = np.array([0.0, -900.0, -1800.0, -2700.0])
    mechanism = ExponentialMechanism(1.0, 1.0, log_reference=log_reference)
    pairs = _neighbour_pairs(_bases(rng, N_ACTIONS, 1.0), 1.0, ALL_SIGNS)
    report = audit_exact(mechanism.log_probabilities, pairs, epsilon=1.0, log=True)
    assert report.passed, str(report)
    assert report.max_log_ratio > 0.9  # the rare actions carry the loss, visible only in log space
    broken = ExponentialMechanism(1.0, 1.0, monotone=True, log_reference=log_reference)
    assert not audit_exact(broken.log_probabilities, pairs, epsilon=1.0, log=True).passed


@pytest.mark.parametrize("temperature", [1e-3, 0.5, 10.0])
def test_gibbs_sampler_passes_two_delta_over_eta(temperature: float, rng: np.random.Generator) -> None:
    # the KL-policy sampler: log π0 random with some tiny entries, utilities of sensitivity Δ
    sensitivity = 0.01
    log_reference = np.log(rng.dirichlet(np.ones(N_ACTIONS))) - np.array([0.0, 0.0, 400.0, 800.0])
    mechanism = GibbsMechanism(log_reference, temperature, sensitivity=sensitivity)
    claimed = 2 * sensitivity / temperature  # ε = 2Δ/η
    assert mechanism.epsilon == pytest.approx(claimed)
    pairs = _neighbour_pairs(_bases(rng, N_ACTIONS, sensitivity), sensitivity, ALL_SIGNS)
    report = audit_exact(mechanism.log_probabilities, pairs, epsilon=claimed, log=True)
    assert report.passed, str(report)
    assert report.max_log_ratio >= 0.99 * claimed
    # broken claim: Δ/η (valid only when one utility changes) on several changing utilities
    assert not audit_exact(mechanism.log_probabilities, pairs, epsilon=claimed / 2, log=True).passed


def test_gibbs_log_probabilities_one_coordinate_change_costs_delta_over_eta(
    rng: np.random.Generator,
) -> None:
    # a neighbour that changes one action's utility costs Δ/η only
    sensitivity, temperature = 0.2, 0.05
    log_reference = np.log(rng.dirichlet(np.ones(N_ACTIONS)))

    def distribution(utilities: tuple[float, ...]) -> np.ndarray:
        return gibbs_log_probabilities(log_reference, np.asarray(utilities), temperature)

    one_coordinate = [s for s in ALL_SIGNS if sum(map(abs, s)) <= 1]
    pairs = _neighbour_pairs(_bases(rng, N_ACTIONS, sensitivity), sensitivity, one_coordinate)
    report = audit_exact(distribution, pairs, epsilon=sensitivity / temperature, log=True)
    assert report.passed, str(report)
    assert report.max_log_ratio >= 0.99 * sensitivity / temperature


def test_grid_exponential_mechanism(rng: np.random.Generator) -> None:
    grid = uniform_grid([0.0, 0.0], [1.0, 1.0], [3, 3])  # 9 points, data independent
    n_points, sensitivity, epsilon = grid.shape[0], 0.5, 1.0
    mechanism = GridExponentialMechanism(grid, sensitivity, epsilon)
    # utility u(x; D) = −‖x − c(D)‖ with a data centre c(D) whose neighbours move it by <= Δ
    centres = rng.uniform(0.0, 1.0, size=(6, 2))
    moves = rng.normal(size=(6, 2))
    moves *= sensitivity / np.linalg.norm(moves, axis=1, keepdims=True)
    pairs = [(tuple(-np.linalg.norm(grid - c, axis=1)), tuple(-np.linalg.norm(grid - c - m, axis=1)))
             for c, m in zip(centres, moves, strict=True)]
    # plus adversarial sign patterns on the grid (random, and one point against all others)
    bases = _bases(rng, n_points, sensitivity)
    signs = [tuple(rng.choice([-1, 1], size=n_points)) for _ in range(40)]
    signs += [tuple(np.where(np.arange(n_points) == a, -1, 1)) for a in range(n_points)]
    pairs += _neighbour_pairs(bases, sensitivity, signs)
    report = audit_exact(mechanism.log_probabilities, pairs, epsilon=epsilon, log=True)
    assert report.passed, str(report)
    assert report.max_log_ratio >= 0.99 * epsilon
    broken = GridExponentialMechanism(grid, sensitivity, epsilon, monotone=True)
    caught = audit_exact(broken.log_probabilities, pairs, epsilon=epsilon, log=True)
    assert not caught.passed
    assert caught.max_log_ratio == pytest.approx(2 * epsilon, rel=1e-6)


def _cached(probabilities: Callable[[np.ndarray], np.ndarray]) -> Callable[[tuple[float, ...]], np.ndarray]:
    """Memoise an output distribution by utility vector (numerical integration is the cost)."""
    return functools.lru_cache(maxsize=None)(lambda utilities: probabilities(np.asarray(utilities)))


def test_report_noisy_max() -> None:
    # exact output distribution by numerical integration (absolute error ~1e-10): tolerance 1e-6
    sensitivity, epsilon, n_actions = 1.0, 1.0, 3
    corners = list(itertools.product((-1, 1), repeat=n_actions))
    one = [tuple(int(a == b) * sign for b in range(n_actions)) for a in range(n_actions) for sign in (-1, 1)]
    bases = [np.zeros(n_actions), np.array([-4.0, 0.0, 1.0])]
    pairs = _neighbour_pairs(bases, sensitivity, corners + one)
    mechanism = ReportNoisyMaxMechanism(sensitivity, epsilon)
    report = audit_exact(_cached(mechanism.probabilities), pairs, epsilon=epsilon, tolerance=1e-6)
    assert report.passed, str(report)
    # the one-utility-changes calibration (b = Δ/ε) on neighbours that move every utility: caught,
    # by far more than the integration error
    broken = _cached(ReportNoisyMaxMechanism(sensitivity, epsilon, one_utility_changes=True).probabilities)
    caught = audit_exact(broken, pairs, epsilon=epsilon, tolerance=1e-6)
    assert not caught.passed
    assert caught.max_log_ratio > epsilon + 0.1
    # and it is fine when indeed only one utility changes
    assert audit_exact(broken, _neighbour_pairs(bases, sensitivity, one), epsilon=epsilon, tolerance=1e-6).passed


def test_report_noisy_max_probabilities_match_samples(rng: np.random.Generator) -> None:
    # the exact audit relies on `probabilities`; check it against the sampling path. Each of the
    # 3 counts is within 5 standard errors (false-failure rate < 3·6e-7 ≈ 2e-6)
    mechanism = ReportNoisyMaxMechanism(1.0, 1.0)
    utilities = np.array([0.0, 0.7, 1.5])
    n = 200_000
    draws = mechanism.release(np.tile(utilities, (n, 1)), rng=rng, insecure_seeded_noise=True)
    frequencies = np.bincount(draws, minlength=3) / n
    expected = mechanism.probabilities(utilities)
    assert np.all(np.abs(frequencies - expected) <= 5 * np.sqrt(expected * (1 - expected) / n))
    assert math.isclose(float(expected.sum()), 1.0)


def test_report_noisy_max_monotone_calibration() -> None:
    # b = Δ/ε is valid when every utility moves the same way (Dwork & Roth, Claim 3.9), not otherwise
    sensitivity, epsilon, n_actions = 1.0, 1.0, 3
    corners = list(itertools.product((-1, 1), repeat=n_actions))
    monotone_corners = [s for s in corners if min(s) == max(s)]
    bases = [np.zeros(n_actions), np.array([-4.0, 0.0, 1.0])]
    mechanism = _cached(ReportNoisyMaxMechanism(sensitivity, epsilon, monotone=True).probabilities)
    assert audit_exact(mechanism, _neighbour_pairs(bases, sensitivity, monotone_corners),
                       epsilon=epsilon, tolerance=1e-6).passed
    assert not audit_exact(mechanism, _neighbour_pairs(bases, sensitivity, corners),
                           epsilon=epsilon, tolerance=1e-6).passed


@pytest.mark.statistical
def test_exponential_sampler_statistical_audit(rng: np.random.Generator) -> None:
    # the sampling path (Gumbel-max): u = (0, 0) vs u' = (−Δ, Δ); the event "action 0" has
    # log-ratio log((1 + e^ε)/2) ≈ 0.62 for η = 2Δ/ε and log((1 + e^{2ε})/2) ≈ 1.43 for the broken η = Δ/ε
    from dpbandits.audit import OutcomeEvent, epsilon_lower_bound

    sensitivity, epsilon, n = 1.0, 1.0, 100_000
    events = [OutcomeEvent(0)]  # fixed in advance: no calibration split needed
    base, neighbour = np.zeros((n, 2)), np.tile([-sensitivity, sensitivity], (n, 1))
    correct = ExponentialMechanism(sensitivity, epsilon)
    report = epsilon_lower_bound(correct.sample(base, rng=rng, insecure_seeded_noise=True), correct.sample(neighbour, rng=rng, insecure_seeded_noise=True), events,
                                 confidence=1 - 1e-5)
    assert report.epsilon_lower_bound <= epsilon, str(report)  # false failure <= 1e-5
    assert report.epsilon_lower_bound >= 0.5  # ≈ 0.6 with 10⁵ samples; misses with probability < 1e-6
    broken = ExponentialMechanism(sensitivity, epsilon, monotone=True)
    caught = epsilon_lower_bound(broken.sample(base, rng=rng, insecure_seeded_noise=True), broken.sample(neighbour, rng=rng, insecure_seeded_noise=True), events,
                                 confidence=1 - 1e-5)
    assert caught.refutes(epsilon), str(caught)  # ≈ 1.38 with 10⁵ samples
