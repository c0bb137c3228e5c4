"""Audit of the users' randomised response (local ε-DP) with a broken flip-probability control."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dpbandits.algorithms.dueling.ldp_ebs_elimination import flip_probability, randomised_response

pytestmark = pytest.mark.statistical

EPSILON, RUNS, ALPHA = 1.0, 20_000, 1e-6  # each Clopper–Pearson bound fails w.p. <= 1e-6


def _epsilon_lower_bound(respond, seed: int) -> float:  # type: ignore[no-untyped-def]
    gen_one, gen_zero = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(2))
    ones_given_one = sum(respond(1, gen_one) for _ in range(RUNS))
    ones_given_zero = sum(respond(0, gen_zero) for _ in range(RUNS))
    lower = stats.beta.ppf(ALPHA, ones_given_one, RUNS - ones_given_one + 1)
    upper = stats.beta.ppf(1 - ALPHA, ones_given_zero + 1, RUNS - ones_given_zero)
    return math.log(lower / upper)  # event "report = 1": ratio (1 − q)/q = e^ε exactly


def test_randomised_response_is_epsilon_ldp_and_tight(seed: int) -> None:
    eps_lb = _epsilon_lower_bound(lambda bit, gen: randomised_response(bit, EPSILON, gen, insecure_seeded_noise=True), seed)
    assert 0.8 * EPSILON <= eps_lb <= EPSILON


def test_broken_flip_probability_is_caught(seed: int) -> None:
    q = flip_probability(EPSILON) / 2  # deliberately broken: flips half as often as ε needs

    def broken(bit: int, gen: np.random.Generator) -> int:
        return bit ^ int(gen.random() < q)

    assert _epsilon_lower_bound(broken, seed) > EPSILON
