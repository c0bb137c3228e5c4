"""The floating-point (low-order bits) attack on the default deployment path finds nothing.

Issue 12, defect 3: textbook float Laplace ``value + noise`` distinguishes neighbouring inputs through
the set of doubles it can produce (Mironov 2012). The auditor (:func:`float_attack`) sorts outputs into
cells (exponent, trailing zero bits) and reports cells with >= 20 outputs of one neighbour and none of
the other: probability < 1e-8 per cell when the two distributions have the same cells, so each
assertion's false-failure rate is negligible. Each test pairs the secure default with the broken
textbook variant, which the attack must catch.
"""

from __future__ import annotations

import numpy as np
import pytest

from dpbandits.audit.floating_point import float_attack
from dpbandits.privacy.counters import BinaryTreeCounterBank
from dpbandits.privacy.mechanisms import LaplaceMechanism

pytestmark = pytest.mark.slow  # each attack replays many releases

N_DRAWS = 200_000  # per neighbour, as the issue asks


def test_default_laplace_release_resists_the_float_attack(rng: np.random.Generator) -> None:
    mechanism = LaplaceMechanism(sensitivity=1.0, epsilon=1.0)
    secure = float_attack(mechanism.release(np.zeros(N_DRAWS)), mechanism.release(np.ones(N_DRAWS)))
    assert not secure.distinguished, str(secure)
    # negative control: the textbook sum in NumPy floats (what the seeded path computes) is caught
    textbook = float_attack(0.0 + rng.laplace(0.0, 1.0, N_DRAWS), 1.0 + rng.laplace(0.0, 1.0, N_DRAWS))
    assert textbook.distinguished, str(textbook)


def test_default_integer_counter_releases_resist_the_float_attack(rng: np.random.Generator) -> None:
    """Tree counters on integer streams release exact integers: neighbours 0 and 1 share every value."""
    n_counters, horizon = 2000, 100  # 2·10⁵ releases per neighbour
    stream_d = np.zeros((horizon, n_counters), dtype=np.int64)
    stream_d_prime = stream_d.copy()
    stream_d_prime[0] = 1  # one element changed by Δ = 1
    releases = []
    for stream in (stream_d, stream_d_prime):
        bank = BinaryTreeCounterBank(n_counters, horizon, 1.0, integer=True)
        releases.append(np.array([bank.update(row) for row in stream]))
    report = float_attack(*releases)
    assert releases[0].dtype == np.int64 and not report.distinguished, str(report)
    # negative control: node noise drawn at 0 in floats and added to the sum in NumPy (the old path)
    scale = bank.scale
    noise = rng.laplace(0.0, scale, size=(2, horizon, n_counters))
    broken = float_attack(np.cumsum(stream_d, axis=0) + noise[0], np.cumsum(stream_d_prime, axis=0) + noise[1])
    assert broken.distinguished, str(broken)
