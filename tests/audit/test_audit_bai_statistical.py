"""Monte-Carlo privacy audit of DP-BAI on a multi-phase instance with both branches.

K = 12 arms in d = 3: s = (12, 4, 3, 2, 1); phase 1 uses a Max-Det collection (3² < 12), later phases
pull every active arm. The exact audit does not cover this shape, so outputs — the recommended arm
and the whole pull-count vector, which determines the pull sequence — are sampled on two fixed
neighbouring reward tables and :func:`dpbandits.audit.statistical.epsilon_lower_bound` gives a lower
confidence bound on ε. A correct DP-BAI stays below its claim except with probability 1e-4 (the
bound's confidence is 0.9999); a variant with halved noise is caught.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from dpbandits._core.rng import spawn_generators
from dpbandits.algorithms.bai.dp_bai import DPBAI
from dpbandits.algorithms.bai.phased import run_vectorised
from dpbandits.audit.statistical import OutcomeEvent, epsilon_lower_bound, select_events
from dpbandits.privacy.noise import NumpyNoise

pytestmark = pytest.mark.slow  # Monte Carlo audits: many simulated runs

EPSILON = 1.0
N_SAMPLES = 100_000
N_CALIBRATION = 10_000


class _TableSums:
    """Reward sums read from a fixed reward table x[arm, pull] (the same table in every trial)."""

    def __init__(self, table, n_trials):
        self.cumulative = np.concatenate([np.zeros((table.shape[0], 1)), np.cumsum(table, axis=1)], axis=1)
        self.offsets = np.zeros((n_trials, table.shape[0]), dtype=np.int64)

    def __call__(self, counts):
        arms = np.arange(counts.shape[1])
        start = self.cumulative[arms, self.offsets]
        stop = self.cumulative[arms, self.offsets + counts]
        self.offsets += counts
        return stop - start


class _ScaledNoise:
    """A broken planner: every noise scale divided by ``factor``."""

    def __init__(self, planner, factor):
        self._planner, self._factor = planner, factor
        self.n_arms, self.n_phases, self.noise_kind = planner.n_arms, planner.n_phases, planner.noise_kind

    def initial_state(self):
        return self._planner.initial_state()

    def plan(self, phase, state):
        plan = self._planner.plan(phase, state)
        return dataclasses.replace(plan, noise_scales=plan.noise_scales / self._factor)

    def next_state(self, phase, state, plan, survivors):
        return self._planner.next_state(phase, state, plan, survivors)


def _outputs(planner, table, n_trials, seed):
    _, algorithm_rng, noise_rng = spawn_generators(seed, 3)
    result = run_vectorised(planner, n_trials, _TableSums(table, n_trials), NumpyNoise(noise_rng), algorithm_rng)
    return np.column_stack([result.recommended, result.pulls])


@pytest.fixture(scope="module")
def instance():
    generator = np.random.default_rng(20240117)
    features = generator.uniform(0.0, 1.0, size=(12, 3))
    algorithm = DPBAI(features, 150, EPSILON)
    plan = algorithm.planner.plan(0, algorithm.planner.initial_state())
    # every reward 0.5 (all estimates near each other, so outputs are sensitive); the neighbours differ
    # in the first reward of the first Max-Det arm, 0 against 1 (a shift 1/m_1 of its phase-1 mean)
    table = np.full((12, 150), 0.5)
    table[plan.pulled[0], 0] = 0.0
    neighbour = table.copy()
    neighbour[plan.pulled[0], 0] = 1.0
    return algorithm, plan, table, neighbour


def _lower_bound(planner, table, neighbour, seed):
    seeds = np.random.SeedSequence(seed).spawn(4)
    draws = [_outputs(planner, t, n, s) for t, n, s in ((table, N_CALIBRATION, seeds[0]),
                                                        (neighbour, N_CALIBRATION, seeds[1]),
                                                        (table, N_SAMPLES, seeds[2]),
                                                        (neighbour, N_SAMPLES, seeds[3]))]
    # label each distinct output (recommendation, pull counts) by an integer; events are chosen on the
    # calibration draws only, then the bound is computed on the fresh draws
    distinct, codes = np.unique(np.concatenate(draws), axis=0, return_inverse=True)
    codes = np.split(np.reshape(codes, -1), np.cumsum([len(d) for d in draws])[:-1])
    candidates = [OutcomeEvent(code) for code in range(len(distinct))]
    events = select_events(codes[0], codes[1], candidates, n_keep=3, confidence=0.9999)
    return epsilon_lower_bound(codes[2], codes[3], events, confidence=0.9999)


def test_dp_bai_multi_phase_passes_monte_carlo_audit(instance, seed):
    algorithm, plan, table, neighbour = instance
    assert plan.info["branch"] == "max-det" and algorithm.schedule.n_phases == 4
    report = _lower_bound(algorithm.planner, table, neighbour, seed)
    assert report.epsilon_lower_bound <= EPSILON  # false failure <= 1e-4 (confidence 0.9999)


def test_monte_carlo_audit_catches_under_noised_variant(instance, seed):
    algorithm, _, table, neighbour = instance
    report = _lower_bound(_ScaledNoise(algorithm.planner, 2.0), table, neighbour, seed)
    assert report.epsilon_lower_bound > EPSILON  # the bound measured on this pair is about 1.4
