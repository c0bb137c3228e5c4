"""DP-BAI's planners are shared by algorithms of equal public parameters (a load re-plans nothing).

A load of a saved agent rebuilds its algorithm; the span of K = 1000 features alone took seconds per
load. The shared planner is keyed by public parameters only, and a saved state is still validated
against its plans: a tampered state loaded after a valid one (the planner then cached) is refused.
"""

from __future__ import annotations

import numpy as np
import pytest
from statefiles import array_of, canonical_state, edit, quietly

from dpbandits._core.errors import DataFormatError
from dpbandits._core.persistence import Persistable
from dpbandits.algorithms.bai import DPBAI, Baseline, DPBAIGauss
from dpbandits.algorithms.bai import dp_bai as dp_bai_module


def _agent(features: np.ndarray, budget: int = 4000, epsilon: float = 1.0, pulls: int = 30) -> tuple[object, bytes]:
    agent = quietly(lambda: DPBAI(features, budget, epsilon).agent(rng=1, insecure_seeded_noise=True))
    for _ in range(pulls):
        agent.tell(agent.ask(), 0.5)
    return agent, agent.to_bytes()


def test_equal_public_parameters_share_one_planner() -> None:
    features = np.random.default_rng(0).normal(size=(12, 4))
    first, again = DPBAI(features, 3000, 1.0), DPBAI(features.copy(), 3000, 1.0)
    assert first.planner is again.planner
    for other in (DPBAI(features, 3001, 1.0), DPBAI(features, 3000, 2.0), Baseline(features, 3000, 1.0),
                  DPBAIGauss(features, 3000, 0.5, 1e-6), DPBAI(features * 2, 3000, 1.0),
                  DPBAI(features, 3000, 1.0, maxdet="exact")):
        assert other.planner is not first.planner


def test_a_changed_caller_array_does_not_change_the_shared_planner() -> None:
    features = np.eye(6)
    first = DPBAI(features, 600, 1.0)
    features[0, 0] = 5.0  # the caller's array, changed after the build
    assert first.planner.features[0, 0] == 1.0
    assert DPBAI(np.eye(6), 600, 1.0).planner is first.planner
    assert DPBAI(features, 600, 1.0).planner is not first.planner


def test_a_load_plans_nothing_again(monkeypatch: pytest.MonkeyPatch) -> None:
    _, saved = _agent(np.eye(40))
    calls: list[int] = []
    spans = dp_bai_module.reduce_dimension

    def counting(points: np.ndarray) -> tuple[np.ndarray, int]:
        calls.append(len(points))
        return spans(points)

    monkeypatch.setattr(dp_bai_module, "reduce_dimension", counting)
    loaded = quietly(lambda: Persistable.from_bytes(saved))
    assert calls == []  # the span of the features was computed by the first build, once
    assert canonical_state(loaded.to_bytes()) == canonical_state(saved)


@pytest.mark.parametrize("field", ["sums", "pulls"])
def test_a_tampered_state_is_refused_with_the_planner_cached(field: str) -> None:
    _, saved = _agent(np.eye(40))
    quietly(lambda: Persistable.from_bytes(saved))  # the planner and its plans are cached now

    def tamper(meta: dict, members: dict) -> None:
        name = array_of(meta, members, field)
        changed = members[name].copy()
        changed[0] = changed[0] + 1000
        members[name] = changed

    with pytest.raises(DataFormatError):
        quietly(lambda: Persistable.from_bytes(edit(saved, tamper)))


def test_an_unpickled_agents_planner_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    """The server receives agents pickled from child processes: their planner becomes the process's own."""
    import pickle

    features = np.random.default_rng(3).normal(size=(9, 3))
    agent, _ = _agent(features, pulls=5)
    shipped = pickle.dumps(agent)
    monkeypatch.setattr(dp_bai_module, "_PLANNERS", type(dp_bai_module._PLANNERS)())  # a fresh process's cache
    received = pickle.loads(shipped)
    assert DPBAI(features, 4000, 1.0).planner is received._planner
