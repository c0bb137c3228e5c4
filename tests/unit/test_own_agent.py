"""The verbs every one-trial agent shares (issue 26): agent(), simulate(), guarantee(), done, progress."""

from __future__ import annotations

import math

import numpy as np
import pytest

import dpbandits
from dpbandits.algorithms.dueling.dp_ebs_elimination import (
    simulate_dp_ebs_elimination,
    simulate_ebs_elimination,
)
from dpbandits.algorithms.dueling.rucb import simulate_rucb
from dpbandits.envs.registry import make_environment


def test_simulate_delegates_to_the_registered_entry_point(seed: int) -> None:
    env = make_environment("dueling-f1")
    rucb = dpbandits.RUCB(env.n_arms, horizon=50, alpha=0.7, rng=seed)
    assert rucb.agent() is rucb
    ours, theirs = rucb.simulate(env, 3, seed), simulate_rucb(env, n_trials=3, rng=seed, horizon=50, alpha=0.7)
    assert ours.keys() == theirs.keys() and all(np.array_equal(ours[k], theirs[k]) for k in ours)
    private = dpbandits.DPEBSElimination(env.n_arms, 60, 1.5, conf_scale=0.5)
    ours = private.simulate(env, 2, seed)
    theirs = simulate_dp_ebs_elimination(env, n_trials=2, rng=seed, horizon=60, epsilon=1.5, conf_scale=0.5)
    assert all(np.array_equal(ours[k], theirs[k]) for k in theirs)
    twin = dpbandits.DPEBSElimination(env.n_arms, 60, math.inf).simulate(env, 2, seed)
    assert all(np.array_equal(twin[k], v) for k, v in simulate_ebs_elimination(env, n_trials=2, rng=seed, horizon=60).items())


def test_simulate_refuses_another_environment() -> None:
    env = make_environment("dueling-f1")
    with pytest.raises(dpbandits.InvalidParameterError, match="n_arms"):
        dpbandits.RUCB(env.n_arms + 1, horizon=10).simulate(env, 2, 0)
    with pytest.raises(dpbandits.InvalidParameterError, match="features"):
        dpbandits.MaxInP(np.eye(env.n_arms), horizon=10).simulate(env, 2, 0)


def test_done_guarantee_and_progress_in_repr(seed: int) -> None:
    agent = dpbandits.InterleavedFilter(3, horizon=2, rng=seed)
    assert isinstance(agent.guarantee(), dpbandits.NonPrivate) and not agent.privacy.is_finite
    assert repr(agent).endswith("<0/2 played>") and not agent.done
    for _ in range(2):
        agent.tell(agent.ask(), first_wins=True)
    assert repr(agent).endswith("<2/2 played>") and agent.done
    goptimal = dpbandits.GOptimalDPDB(np.eye(3), 40, 1.0)
    assert goptimal.recommendation in range(3)


def test_non_private_guarantee_is_explicit() -> None:
    g = dpbandits.NonPrivate(unit="one preference label", reason="keeps raw outcomes")
    assert math.isinf(g.epsilon) and not g.is_finite and str(g).startswith("non-private")
    assert isinstance(g, dpbandits.PureDP)
    with pytest.raises(dpbandits.InvalidParameterError):
        dpbandits.NonPrivate(unit="x", epsilon=1.0)
    assert isinstance(dpbandits.RUCB(3, 10).privacy, dpbandits.NonPrivate)
