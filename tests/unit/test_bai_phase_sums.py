"""The ask/tell BAI agent's phase sums: every arm's rewards added left to right, bit for bit.

:meth:`PhasedAgent._phase_sums` adds all arms at once (one cumulative sum along padded rows); these
tests hold it to the definition, a Python loop adding each arm's rewards in the order they were told
(from the resumed sum of a phase saved mid-way), on arms of equal and unequal lengths, with −0.0
rewards and magnitudes a pairwise sum would round differently.
"""

from __future__ import annotations

from array import array
from types import SimpleNamespace

import numpy as np
import pytest

from dpbandits.algorithms.bai._plans import PhasePlan
from dpbandits.algorithms.bai.phased import PhasedAgent


def _sequential(values: np.ndarray, counts: np.ndarray, starts: np.ndarray | None) -> np.ndarray:
    sums = np.zeros(counts.shape[0]) if starts is None else starts.copy()
    position = 0
    for arm, count in enumerate(counts.tolist()):
        segment = values[position:position + count].tolist()
        position += count
        if not segment:
            continue
        total = segment[0] if starts is None else float(starts[arm]) + segment[0]
        for value in segment[1:]:
            total += value
        sums[arm] = total
    return sums


def _agent_sums(values: np.ndarray, counts: np.ndarray, starts: np.ndarray | None) -> np.ndarray:
    plan = SimpleNamespace(pulls=counts)
    plan.sum_layout = PhasePlan.sum_layout.func(plan)  # type: ignore[arg-type]
    fake = SimpleNamespace(_rewards=array("d", values.tobytes()), _plan=plan, _restored_sums=starts)
    return PhasedAgent._phase_sums(fake)  # type: ignore[arg-type]


def _values(rng: np.random.Generator, n: int) -> np.ndarray:
    values = rng.random(n) * 10.0 ** rng.integers(-12, 12, size=n)  # magnitudes a pairwise sum rounds otherwise
    values[rng.random(n) < 0.1] = -0.0
    values[rng.random(n) < 0.1] = 0.0
    return values


@pytest.mark.parametrize("equal", [True, False])
@pytest.mark.parametrize("resumed", [False, True])
def test_phase_sums_are_each_arms_left_to_right_sum(equal: bool, resumed: bool) -> None:
    rng = np.random.default_rng(7)
    for _ in range(200):
        k = int(rng.integers(1, 9))
        counts = np.full(k, int(rng.integers(1, 40))) if equal else rng.integers(0, 40, size=k)
        values = _values(rng, int(counts.sum()))
        starts = _values(rng, k) if resumed else None
        got, want = _agent_sums(values, counts, starts), _sequential(values, counts, starts)
        assert got.tobytes() == want.tobytes()  # bit for bit, the sign of zero included


def test_a_single_negative_zero_reward_sums_to_negative_zero() -> None:
    """Padding with +0.0 would turn this arm's −0.0 into +0.0 (planted: fails)."""
    got = _agent_sums(np.array([-0.0, 0.25, 0.5, 0.75]), np.array([1, 3]), None)
    assert np.signbit(got[0]) and got[1] == 1.5
