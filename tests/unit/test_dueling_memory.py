"""Long dueling horizons need memory constant in T (issue 13: 3.2 GB at T = 10⁸), and oversized ones are refused.

Peak Python-level allocations (tracemalloc, which NumPy reports its buffers to) are measured at two
horizons 10× apart; a simulation whose memory grows with T (as the old table of widths wid(n) for
n = 0..T did: 32 MB at T = 10⁶) fails by a wide margin.
"""

from __future__ import annotations

import math
import tracemalloc
from collections.abc import Callable
from typing import Any

import pytest

from dpbandits._core.errors import InvalidParameterError
from dpbandits.algorithms.dueling.dp_ebs_elimination import simulate_dp_ebs_elimination
from dpbandits.algorithms.dueling.goptimal_dpdb import simulate_goptimal_dpdb
from dpbandits.algorithms.dueling.interleaved_filter import simulate_interleaved_filter
from dpbandits.algorithms.dueling.rmed import simulate_rmed1
from dpbandits.envs.dueling import finite_instance, unit_ball_environment


def _peak_bytes(run: Callable[[], Any]) -> int:
    tracemalloc.start()
    try:
        run()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


CASES: list[tuple[str, Callable[[int], Any], tuple[int, int]]] = [
    # ε = 0.05: no elimination before T, so every round is simulated (no commit fast-forward)
    ("dp-ebs-elimination", lambda t: simulate_dp_ebs_elimination(
        finite_instance("f1"), n_trials=1, rng=0, horizon=t, epsilon=0.05), (100_000, 1_000_000)),
    # the paper's play counts: the last phase covers most of T (about 2·10⁶ duels of a few pairs)
    ("goptimal-dpdb streams", lambda t: simulate_goptimal_dpdb(
        unit_ball_environment([0.6, 0.8], n_points=8), n_trials=1, rng=0, horizon=t, epsilon=1.0,
        feedback="streams"), (300_000, 3_000_000)),
    ("rmed1", lambda t: simulate_rmed1(finite_instance("f1"), n_trials=2, rng=0, horizon=t), (300, 3_000)),
]


@pytest.mark.parametrize(("name", "run", "horizons"), CASES, ids=[c[0] for c in CASES])
@pytest.mark.slow
def test_peak_memory_does_not_grow_with_the_horizon(name: str, run: Callable[[int], Any], horizons: tuple[int, int]) -> None:
    short, long = (_peak_bytes(lambda t=t: run(t)) for t in horizons)
    assert long < 1.25 * short + 2**20, f"{name}: peak {short} B at T = {horizons[0]}, {long} B at T = {horizons[1]}"


def test_oversized_elimination_horizons_are_refused_in_one_line() -> None:
    env = finite_instance("f4", n_arms=32)
    with pytest.raises(InvalidParameterError, match=r"^horizon must be <= 1562500000 for dp-ebs-elimination with "
                                                    r"K = 32 arms .*; got 10000000000$"):
        simulate_dp_ebs_elimination(env, n_trials=1, rng=0, horizon=10**10, epsilon=1.0)
    with pytest.raises(InvalidParameterError, match="for ebs-elimination"):
        simulate_dp_ebs_elimination(env, n_trials=1, rng=0, horizon=10**10, epsilon=math.inf)
    with pytest.raises(InvalidParameterError, match="for interleaved-filter"):
        simulate_interleaved_filter(env, n_trials=1, rng=0, horizon=10**10)
