"""The users' randomised response is tight: the ε lower bound from 2·10⁴ reports per bit is close to ε.

The privacy contract (:mod:`dpbandits.audit.cases.dueling`) audits the deployed OpenDP coin and
catches a flip probability halved; here the seeded coin (many cheap draws) shows the bound is
attained: the event "report = 1" has probability ratio (1 − q)/q = e^ε exactly.
"""

from __future__ import annotations

import numpy as np
import pytest

from dpbandits.algorithms.dueling.ldp_ebs_elimination import randomised_response
from dpbandits.audit.statistical import OutcomeEvent, epsilon_lower_bound

pytestmark = pytest.mark.statistical

EPSILON, RUNS = 1.0, 20_000
CONFIDENCE = 1 - 1e-6  # P[ε_lb > ε] <= 1e-6


def test_randomised_response_is_epsilon_ldp_and_tight(seed: int) -> None:
    gen_one, gen_zero = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(2))
    reports = [np.array([randomised_response(bit, EPSILON, gen, insecure_seeded_noise=True) for _ in range(RUNS)])
               for bit, gen in ((1, gen_one), (0, gen_zero))]
    report = epsilon_lower_bound(*reports, [OutcomeEvent(1)], confidence=CONFIDENCE)
    assert 0.8 * EPSILON <= report.epsilon_lower_bound <= EPSILON, str(report)
