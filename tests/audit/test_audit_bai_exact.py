"""Exact privacy audit of DP-BAI, Baseline and DP-OD on tiny instances.

For a fixed reward table the whole output (pull sequence and recommendation) is a function of the
survivor-set path, whose exact law is computed by quadrature of Laplace densities
(:mod:`dpbandits.algorithms.bai.exact_distribution`). Every neighbouring table obtained by setting one
entry that the algorithm reads to 0 or to 1 is audited with :func:`dpbandits.audit.exact.audit_exact`.
Each audit is paired with a deliberately broken variant that the same audit must reject. The audits
are deterministic (no sampling); quadrature error is ~1e-10, far below the margins.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from dpbandits.algorithms.bai.dp_bai import DPBAI, Baseline
from dpbandits.algorithms.bai.dp_od import DPOD
from dpbandits.algorithms.bai.exact_distribution import exact_path_distribution, laplace_cdf
from dpbandits.audit.exact import audit_exact

EPSILON = 0.8


class _DroppedNoise:
    """A broken planner: the first pulled arm's noise is (almost) dropped (scale × 1e-3)."""

    def __init__(self, planner):
        self._planner = planner
        self.n_arms, self.n_phases, self.noise_kind = planner.n_arms, planner.n_phases, planner.noise_kind

    def initial_state(self):
        return self._planner.initial_state()

    def plan(self, phase, state):
        plan = self._planner.plan(phase, state)
        scales = plan.noise_scales.copy()
        scales[0] *= 1e-3
        return dataclasses.replace(plan, noise_scales=scales)

    def next_state(self, phase, state, plan, survivors):
        return self._planner.next_state(phase, state, plan, survivors)


def _distribution(planner):
    cache = {}
    paths = []

    def distribution(table):
        key = table.tobytes()
        if key not in cache:
            cache[key] = exact_path_distribution(planner, table)
        law = cache[key]
        for path in sorted(law):
            if path not in paths:
                paths.append(path)
        return np.array([law.get(path, 0.0) for path in paths])

    return distribution


def _pairs(table, pulled_arms, n_pulls):
    pairs = []
    for arm in pulled_arms:
        for n in range(n_pulls):
            for value in (0.0, 1.0):
                if table[arm, n] != value:
                    neighbour = table.copy()
                    neighbour[arm, n] = value
                    pairs.append((table, neighbour))
    return pairs


def _audit(planner, tables, pulled_arms, n_pulls, epsilon=EPSILON):
    distribution = _distribution(planner)
    # register every path first so that all distributions share the output set
    for table in tables:
        for pair in _pairs(table, pulled_arms, n_pulls):
            distribution(pair[1])
        distribution(table)
    pairs = [pair for table in tables for pair in _pairs(table, pulled_arms, n_pulls)]
    return audit_exact(distribution, pairs, epsilon=epsilon)


@pytest.fixture
def tables(rng):
    # a random table and an extreme one (arm 0 all ones, others all zeros: outputs deep in the tails)
    extreme = np.zeros((5, 12))
    extreme[0] = 1.0
    return [rng.uniform(0.0, 1.0, size=(5, 12)), extreme]


def test_closed_form_two_arm_example_from_spec():
    # §8 item 6: K = 2, all-arms branch; Z = ξ2 − ξ1, D shifts by 1/m; max ratio 2.105 < e^0.8
    b, m = 1 / (0.8 * 5), 5

    def cdf_z(z):
        return 1 - 0.5 * math.exp(-z / b) * (1 + z / (2 * b)) if z >= 0 else 0.5 * math.exp(z / b) * (1 - z / (2 * b))

    grid = np.linspace(-3, 3, 601)
    worst = max(max(cdf_z(d + 1 / m) / cdf_z(d), (1 - cdf_z(d)) / (1 - cdf_z(d + 1 / m))) for d in grid)
    assert worst == pytest.approx(2.105, abs=2e-3) and worst < math.exp(0.8)
    assert laplace_cdf(0.0, 0.0, 1.0) == 0.5


@pytest.mark.slow
def test_dp_bai_two_phase_all_arms_branch_is_epsilon_dp_and_halved_noise_is_caught(tables):
    features = np.array([[1.0, 0.0], [0.0, 1.0], [0.6, 0.7]])  # K=3, d=2: s = (3, 2, 1), all-arms twice
    three = [t[:3] for t in tables]
    good = DPBAI(features, 20, EPSILON)
    assert good.schedule.sizes == (3, 2, 1)
    report = _audit(good.planner, three, range(3), 8)
    assert report.passed, str(report)
    halved = DPBAI(features, 20, 2 * EPSILON)  # noise scale 1/(2εm): the claim ε must fail
    assert not _audit(halved.planner, three, range(3), 8).passed
    # arm 0's noise dropped: "arm 0 eliminated first" = {Y_0 < min(Y_1, Y_2)} loses up to 2ε
    assert not _audit(_DroppedNoise(good.planner), three, range(3), 8).passed


def test_dp_bai_max_det_branch_is_epsilon_dp_and_halved_noise_is_caught(tables):
    features = np.array([[0.0, 1.0], [0.0, 0.9], [10.0, 0.0], [1.0, 0.3], [1.0, 0.6]])  # §5-like, K=5
    good = DPBAI(features, 12, EPSILON)
    plan = good.planner.plan(0, good.planner.initial_state())
    assert plan.info["branch"] == "max-det" and plan.pulled.tolist() == [0, 2]
    report = _audit(good.planner, tables, [0, 2], 5)
    assert report.passed, str(report)
    assert report.max_log_ratio > 0.5 * EPSILON  # the audit is not vacuous
    assert not _audit(DPBAI(features, 12, 2 * EPSILON).planner, tables, [0, 2], 5).passed


def test_baseline_is_epsilon_dp(tables):
    features = np.array([[1.0, 0.0], [0.0, 1.0], [0.6, 0.7]])
    three = [t[:3] for t in tables]
    report = _audit(Baseline(features, 20, EPSILON).planner, three, range(3), 8)
    assert report.passed, str(report)


@pytest.mark.slow
def test_dp_od_is_epsilon_dp_and_under_noised_variant_is_caught(tables):
    # axis-aligned arms with norms (1, 1, 3): L = 3; R = 2 phases (3 -> 2 -> 1, projection in phase 2)
    features = np.diag([1.0, 1.0, 3.0])
    extreme = np.zeros((3, 12))
    extreme[2] = 1.0
    three = [tables[0][:3], extreme, 1.0 - extreme]
    good = DPOD(features, 16, EPSILON)
    assert good.planner.n_phases == 2
    report = _audit(good.planner, three, range(3), 8)
    assert report.passed, str(report)
    # sensitivity taken as the smallest norm 1 instead of L = 3: noise three times too small
    assert not _audit(DPOD(features, 16, 3 * EPSILON).planner, three, range(3), 8).passed


class _ScaledNoise(_DroppedNoise):
    """A broken planner: every noise scale divided by ``factor``."""

    def __init__(self, planner, factor):
        super().__init__(planner)
        self._factor = factor

    def plan(self, phase, state):
        plan = self._planner.plan(phase, state)
        return dataclasses.replace(plan, noise_scales=plan.noise_scales / self._factor)


def _audit_approx(planner, tables, epsilon, delta):
    distribution = _distribution(planner)
    pairs = [pair for table in tables for pair in _pairs(table, range(3), 8)]
    for first, second in pairs:
        distribution(first)
        distribution(second)
    return audit_exact(distribution, pairs, epsilon=epsilon, delta=delta)


@pytest.mark.slow
@pytest.mark.parametrize(("calibration", "epsilon", "delta", "factor"),
                         [("classical", 0.5, 1e-3, 3.0), ("analytic", 2.0, 1e-3, 2.0)])
def test_dp_bai_gauss_is_epsilon_delta_dp_and_under_noised_variant_is_caught(tables, calibration, epsilon,
                                                                             delta, factor):
    from dpbandits.algorithms.bai.dp_bai import DPBAIGauss

    features = np.array([[1.0, 0.0], [0.0, 1.0], [0.6, 0.7]])
    three = [t[:3] for t in tables]
    good = DPBAIGauss(features, 20, epsilon, delta, calibration=calibration)
    report = _audit_approx(good.planner, three, epsilon, delta)
    assert report.passed, str(report)
    assert not _audit_approx(_ScaledNoise(good.planner, factor), three, epsilon, delta).passed
