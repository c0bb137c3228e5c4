"""GOptimal-DPDB's transcript audit: what the privacy contract does not check.

The privacy contract (:mod:`dpbandits.audit.cases.dueling`) bounds, on the secure agent, the supremum
over the noise of the exact log-density ratio of each run's releases (the noisy per-pair sums W̃ of
every phase; everything else is post-processing) by ε, and catches halved noise. Here: the flipped
user t0 = 5 lies in phase 1 in every run (its label is released: the supremum is ε exactly), and the
realised loss attains the bound (|W̃ − W| >= 1 on the right side has probability about ½ + e^{−1}/2),
so the audit has power.
"""

from __future__ import annotations

import pytest

from dpbandits.audit.cases.dueling import (
    GOPTIMAL_EPSILON,
    GOPTIMAL_FEATURES,
    GOPTIMAL_HORIZON,
    flip_user,
    goptimal_factory,
    lower_index_wins,
    transcript_comparisons,
)

pytestmark = pytest.mark.statistical


def test_phase_one_label_is_released_and_the_bound_is_attained(seed: int) -> None:
    table = lower_index_wins(GOPTIMAL_HORIZON, len(GOPTIMAL_FEATURES))
    runs = transcript_comparisons(goptimal_factory(), table, flip_user(table, 5), 100, seed)
    for run in runs:
        assert run.reason == "" and run.differing_releases == (0,)  # phase 1's release, and only it
        assert run.supremum == pytest.approx(GOPTIMAL_EPSILON)
        assert abs(run.realised) <= run.supremum + 1e-12
    assert max(abs(run.realised) for run in runs) >= GOPTIMAL_EPSILON - 1e-9
