"""The experiment-kind registry: schedules are consistent with ask(), states round-trip through bytes."""

from __future__ import annotations

import pytest

from dpbandits._core.errors import InvalidParameterError
from dpbandits._core.persistence import Persistable, read_state
from dpbandits.serve.kinds import Feedback, get_kind, list_kinds
from dpbandits.serve.testing import feedback_for

CASES = {
    "dp-bai": {"n_arms": 4, "budget": 120, "epsilon": 1.0},
    "dp-bai-gauss": {"n_arms": 4, "budget": 120, "epsilon": 1.0, "delta": 1e-5},
    "baseline-bai": {"n_arms": 4, "budget": 120, "epsilon": 1.0},
    "dp-od": {"features": [[1, 0], [0, 1], [0.6, 0.8]], "budget": 150, "epsilon": 1.0},
    "dp-ebs-elimination": {"n_arms": 3, "horizon": 80, "epsilon": 1.0},
    "ldp-ebs-elimination": {"n_arms": 3, "horizon": 80, "epsilon": 1.0},
    "goptimal-dpdb": {"features": [[1, 0], [0, 1], [0.6, 0.8]], "horizon": 120, "epsilon": 1.0},
}


def _decoded(agent: Persistable) -> tuple[dict, dict]:
    """The state format's header and arrays (the zip members carry write times: bytes may differ)."""
    _, meta, archive = read_state(agent.to_bytes())
    return meta, {name: array.tolist() for name, array in archive.items()}


def test_every_ask_tell_kind_is_covered() -> None:
    assert {k.name for k in list_kinds() if k.family.interactive and k.family.name != "kernel"} == set(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_schedule_starts_with_ask_and_shrinks_by_one_per_step(name: str) -> None:
    kind = get_kind(name)
    params = kind.params.model_validate(CASES[name])
    agent, family = kind.build(params, 5), kind.family
    restarted_at = 37
    step = 0
    while not family.done(agent):
        schedule = family.schedule(agent)
        assert schedule and schedule[0] == family.encode_action(agent.ask())
        family.apply(agent, schedule[0], family.check_feedback(agent, schedule[0], Feedback(
            **feedback_for(step, schedule[0]))))
        step += 1
        if len(schedule) > 1 and not family.done(agent):
            assert family.schedule(agent) == schedule[1:]  # a window is data-independent
        if step == restarted_at:  # the stored state continues exactly
            copy = kind.load(params, agent.to_bytes())
            assert family.schedule(copy) == family.schedule(agent)
            assert _decoded(copy) == _decoded(agent)
    assert family.schedule(agent) == []
    if name != "goptimal-dpdb":  # GOptimal-DPDB recommends only once a phase has released its θ̃
        assert family.summary(agent)["recommendation"] is not None


def test_unknown_kind_and_bad_feedback_are_named() -> None:
    with pytest.raises(InvalidParameterError, match="kind must be one of"):
        get_kind("nope")
    kind = get_kind("dp-bai")
    agent = kind.build(kind.params.model_validate(CASES["dp-bai"]), None)
    action = kind.family.schedule(agent)[0]
    with pytest.raises(InvalidParameterError, match="reward must lie in"):
        kind.family.check_feedback(agent, action, Feedback(reward=1.5))
    with pytest.raises(InvalidParameterError, match="takes only"):
        kind.family.check_feedback(agent, action, Feedback(reward=0.5, winner=1))


def test_state_bytes_round_trip_and_refuse_garbage() -> None:
    kind = get_kind("dp-ebs-elimination")
    agent = kind.build(kind.params.model_validate(CASES["dp-ebs-elimination"]), None)
    assert type(Persistable.from_bytes(agent.to_bytes())) is type(agent)
    from dpbandits._core.errors import DataFormatError

    with pytest.raises(DataFormatError, match="not a dpbandits state"):
        Persistable.from_bytes(b"garbage")
