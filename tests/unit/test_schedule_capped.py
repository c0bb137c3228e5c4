"""Phase schedules are capped by the horizon and built lazily (issue 25, item 1), and extreme ε stays finite.

GOptimal-DPDB's play counts grow as 1/ε; they used to be materialised whole (ε = 1e-5 at T = 300:
3.5 GB; ε = 1e-12: a 31.5 PiB allocation; ε = 1e-300: negative counts from an overflowing cast).
"""

from __future__ import annotations

import time
import tracemalloc

import numpy as np
import pytest

from dpbandits._core.errors import InvalidParameterError
from dpbandits.algorithms.dueling import GOptimalDPDB, LDPEBSElimination
from dpbandits.algorithms.dueling.ldp_ebs_elimination import flip_probability

FEATURES = [[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]]


def _uncapped_schedule(agent: GOptimalDPDB) -> list[tuple[int, int]]:
    """The schedule as the old code built it: every remaining play of the phase, then cut at the horizon."""
    plan = agent.phases[-1]
    remaining = plan.counts[agent._slot:].copy()
    remaining[0] -= agent._played_in_slot
    pairs = np.repeat(plan.pairs[agent._slot:], remaining, axis=0)[:agent.settings.horizon - agent.time]
    return [(int(a), int(b)) for a, b in pairs]


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 4.0])
def test_typical_epsilon_keeps_the_same_schedule_and_play_counts(epsilon: float) -> None:
    # play_count_scale = 0.01 makes phases short enough to drive several in a test
    agent = GOptimalDPDB(FEATURES, 20_000, epsilon, play_count_scale=0.01, rng=3, insecure_seeded_noise=True)
    draws = np.random.default_rng(0)
    for _ in range(3):  # the counts of a normal run are below T + 1: the cap is inactive
        phase = len(agent.phases)
        assert int(agent.phases[-1].counts.max()) <= agent.settings.horizon
        assert agent.scheduled() == _uncapped_schedule(agent)
        assert agent.scheduled(limit=7) == _uncapped_schedule(agent)[:7]
        while len(agent.phases) == phase and agent.time < agent.settings.horizon:
            agent.tell(agent.ask(), first_wins=bool(draws.random() < 0.6))
            if agent.time == 5:  # mid-slot: the first pair's count is reduced by the plays done
                assert agent.scheduled() == _uncapped_schedule(agent)


def test_the_papers_play_counts_are_unchanged_below_the_horizon() -> None:
    agent = GOptimalDPDB(FEATURES, 2_000_000, 1.0, rng=3, insecure_seeded_noise=True)
    counts = agent.phases[0].counts
    assert 1_000 < int(counts.max()) < 2_000_000  # the paper's N_1, not capped
    assert agent.scheduled() == _uncapped_schedule(agent)


@pytest.mark.filterwarnings("ignore::dpbandits._core.errors.InsecureNoiseWarning")
@pytest.mark.parametrize("epsilon", [1e-5, 2e-6, 1e-12, 1e-300, 5e-324])
def test_tiny_epsilon_builds_in_milliseconds_with_memory_bounded_by_the_horizon(epsilon: float) -> None:
    tracemalloc.start()
    started = time.perf_counter()
    try:
        agent = GOptimalDPDB(FEATURES, 300, epsilon, rng=1, insecure_seeded_noise=True)
        schedule = agent.scheduled()
        for _ in range(3):
            agent.tell(agent.ask(), first_wins=True)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert time.perf_counter() - started < 1.0
    assert peak < 5_000_000
    assert len(schedule) == 300 and schedule[0] == (int(agent.phases[0].pairs[0, 0]), int(agent.phases[0].pairs[0, 1]))
    assert int(agent.phases[-1].counts.min()) >= 1 and int(agent.phases[-1].counts.max()) <= 301
    assert len(agent.scheduled(limit=10)) == 10


def test_ldp_extreme_epsilon_is_finite_or_refused_in_one_line() -> None:
    assert flip_probability(800.0) < 1e-300 and flip_probability(1e300) < 1e-300
    LDPEBSElimination(3, 100, 800.0, rng=0)  # OverflowError before
    LDPEBSElimination(3, 100, 1e300, rng=0)
    LDPEBSElimination(3, 100, 1e-300, rng=0)
    with pytest.raises(InvalidParameterError, match="epsilon must be large enough"):
        LDPEBSElimination(3, 100, 1e-320, rng=0)  # ZeroDivisionError before
