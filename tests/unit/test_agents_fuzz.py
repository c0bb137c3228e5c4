"""Fuzz every public ask/tell method (issue 13): no traceback, no silent coercion.

Hypothesis drives each agent type with sequences of calls whose arguments are valid values, values of
the wrong type (text, booleans, floats for arm indices, None, lists, bytes), non-finite numbers and
out-of-range ones. Every call must either succeed or raise a :class:`DPBanditsError` with a message;
and a call that succeeded must have been given canonical values (an int arm index, a real reward):
"1", True or 1.0 as an arm, or "0.5" as a reward, are refused, never coerced.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpbandits._core.errors import DPBanditsError
from dpbandits.algorithms.bai.dp_bai import DPBAI
from dpbandits.algorithms.bai.sequential_halving import SequentialHalving
from dpbandits.algorithms.dueling.dp_ebs_elimination import DPEBSElimination
from dpbandits.algorithms.dueling.goptimal_dpdb import GOptimalDPDB
from dpbandits.algorithms.dueling.interleaved_filter import InterleavedFilter
from dpbandits.algorithms.dueling.rucb import RUCB

ODD_VALUES = st.one_of(
    st.integers(-3, 12), st.floats(allow_nan=True, allow_infinity=True), st.booleans(), st.text(max_size=3),
    st.none(), st.lists(st.integers(0, 3), max_size=3), st.binary(max_size=2),
    st.sampled_from([np.int64(1), np.float64(0.5), np.bool_(True), np.array([1]), "1", "0.5", 1.0, 2**70]),
)
FUZZ = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _canonical_arm(value: Any) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool | np.bool_)


def _canonical_real(value: Any) -> bool:
    return (isinstance(value, int | float | np.integer | np.floating) and not isinstance(value, bool | np.bool_)
            and math.isfinite(float(value)))


def _call(fn: Any, *args: Any, **kwargs: Any) -> bool:
    """Run one call: True if it succeeded; a DPBanditsError is an accepted refusal; anything else fails."""
    return _result(fn, *args, **kwargs)[0]


def _result(fn: Any, *args: Any, **kwargs: Any) -> tuple[bool, Any]:
    """(succeeded, returned value) of one call; only a DPBanditsError (with a message) may be raised."""
    try:
        return True, fn(*args, **kwargs)
    except DPBanditsError as exc:
        assert str(exc), "an error must say what is wrong"
        return False, None


OPERATIONS = st.lists(st.tuples(st.booleans(), ODD_VALUES, ODD_VALUES, st.booleans()), min_size=1, max_size=25)


@FUZZ
@given(operations=OPERATIONS)
def test_best_arm_agents(operations: list[tuple[bool, Any, Any, bool]]) -> None:
    for agent in (DPBAI(np.eye(3), 12, 1.0).agent(), SequentialHalving(3, 12, rng=0)):
        for valid_arm, arm, reward, valid_reward in operations:
            done = agent.done
            if done:
                assert not _call(agent.ask)
                break
            pending = getattr(agent, "_pending", None)  # Sequential Halving refuses a second ask
            asked_ok, target = (True, pending) if pending is not None else _result(agent.ask)
            if not asked_ok:
                break
            chosen_arm = target if valid_arm else arm
            chosen_reward = 0.5 if valid_reward else reward
            if _call(agent.tell, chosen_arm, chosen_reward):
                assert _canonical_arm(chosen_arm) and _canonical_real(chosen_reward), (chosen_arm, chosen_reward)


@FUZZ
@given(operations=OPERATIONS)
def test_dueling_agents(operations: list[tuple[bool, Any, Any, bool]]) -> None:
    agents = [DPEBSElimination(3, 30, 1.0), GOptimalDPDB(np.eye(3), 30, 1.0), RUCB(3, 30, rng=0),
              InterleavedFilter(3, 30, rng=0)]
    for agent in agents:
        for valid_pair, pair, outcome, by_winner in operations:
            asked_ok, asked = _result(agent.ask)
            if not asked_ok:
                break
            chosen_pair = asked if valid_pair else pair
            kwargs = {"winner": outcome} if by_winner else {"first_wins": outcome}
            if _call(agent.tell, chosen_pair, **kwargs):
                assert isinstance(chosen_pair, tuple | list) and all(_canonical_arm(a) for a in chosen_pair)
                assert _canonical_arm(outcome) or isinstance(outcome, bool | np.bool_), outcome
                assert outcome in (0, 1) or outcome in tuple(chosen_pair)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(operations=st.lists(st.tuples(ODD_VALUES, ODD_VALUES), min_size=1, max_size=6))
@pytest.mark.slow
def test_usca_agent(operations: list[tuple[Any, Any]]) -> None:
    from dpbandits.algorithms.kernel.usca import USCA
    from dpbandits.envs.kernel import KernelBanditEnvironment

    env = KernelBanditEnvironment(function_seed=1)
    agent = USCA(horizon=4, epsilon=1.0, reward_bound=1.5, kernel=env.kernel, context_generator=env.sample_contexts,
                 rng=0, grid_points_per_dim=16)
    for context, reward in operations:
        if agent.rounds_observed == agent.horizon:
            assert not _call(agent.ask)
            break
        agent.ask()
        if _call(agent.tell, context, reward):
            assert _canonical_real(reward) and 0 <= float(np.asarray(context, dtype=float).ravel()[0]) <= 1
            assert not isinstance(context, str | bytes | bool)
    for context in (0.3, [0.3], "0.3", None, [0.1, 0.2], 2.0):
        _call(agent.recommend, context)
