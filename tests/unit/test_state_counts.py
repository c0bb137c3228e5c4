"""Counts, positions and time of a loaded state are those its schedule implies (issue 35).

Each test edits one field of a saved state into a value no run produces, and ``load`` refuses it in
one line naming the rule; and each class's reachable states (every step of a run) still load.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from statefiles import edit, quietly, state
from test_persistence import AGENTS
from test_state_reachable import _refused, _run, _set_array

from dpbandits._core.persistence import Persistable


def test_uniform_allocation_refuses_a_sum_of_an_arm_not_yet_pulled() -> None:
    """After 2 of 5 round-robin pulls arms 2, 3, 4 have no reward: a non-zero sum there is refused."""
    data = _run("uniform-allocation", 2).to_bytes()
    _refused(edit(data, _set_array(("_sums",), lambda s: s + 1.0)), "rule _sums of an arm not pulled")


def test_uniform_allocation_refuses_a_position_behind_its_sums() -> None:
    agent = _run("uniform-allocation", 3)
    assert agent._sums[2] != 0
    _refused(edit(agent.to_bytes(), lambda meta, _: state(meta).update(_position=2)),
             "rule _sums of an arm not pulled")


def test_sequential_halving_refuses_a_round_sum_of_an_arm_not_asked_in_the_round() -> None:
    data = _run("sequential-halving", 2).to_bytes()
    _refused(edit(data, _set_array(("_round_sums",), lambda s: s + 1.0)), "rule _round_sums is 0")


@pytest.mark.parametrize("reuse", [False, True])
@pytest.mark.parametrize("change", [lambda c: c + 1, lambda c: c[::-1].copy() + np.arange(c.size)])
def test_sequential_halving_refuses_total_counts_other_than_its_schedules(reuse: bool, change: Any) -> None:
    """In the second round every arm was pulled the first round's count: any other count is refused."""
    from dpbandits.algorithms.bai.sequential_halving import SequentialHalving

    agent = SequentialHalving(5, 60, rng=3, reuse_samples=reuse)
    while agent._round < 1:
        agent.tell(arm := agent.ask(), 0.1 * arm)
    assert agent._total_counts.tolist() == [4] * 5
    _refused(edit(agent.to_bytes(), _set_array(("_total_counts",), change)), "rule _total_counts")


def test_sequential_halving_total_counts_of_an_older_file_are_checked_less_the_rounds_pulls() -> None:
    """A file of an older version (counts of the current round's pulls included as told) still loads."""
    from dpbandits.algorithms.bai.sequential_halving import SequentialHalving

    agent = SequentialHalving(5, 60, rng=3, reuse_samples=True)
    for _ in range(23):
        agent.tell(arm := agent.ask(), 0.1 * arm)
    assert agent._round == 1 and agent._position == 3

    def older(meta: dict[str, Any], members: dict[str, np.ndarray]) -> None:
        del state(meta)["_counts_added_at_round_end"]
        _set_array(("_total_counts",), lambda c: c + np.isin(np.arange(5), agent._surviving[:3]))(meta, members)

    loaded = quietly(lambda: Persistable.from_bytes(edit(agent.to_bytes(), older)))
    assert loaded._total_counts.tolist() == agent._total_counts.tolist()
    _refused(edit(agent.to_bytes(), lambda meta, _: state(meta).pop("_counts_added_at_round_end")),
             "rule _total_counts")


@pytest.mark.parametrize("field,value", [("time", 74), ("time", 76), ("_slot", 1), ("_played_in_slot", 74)])
def test_goptimal_dpdb_refuses_a_time_or_slot_other_than_its_schedules(field: str, value: int) -> None:
    agent = _run("goptimal-dpdb", 75)
    assert (agent.time, agent._slot, agent._played_in_slot) == (75, 0, 75)
    _refused(edit(agent.to_bytes(), lambda meta, _: state(meta).update({field: value})), "rule time = the plays")


def test_goptimal_dpdb_refuses_wins_beyond_the_plays_of_their_slot() -> None:
    agent = _run("goptimal-dpdb", 75)
    _refused(edit(agent.to_bytes(), _set_array(("_wins",), lambda w: w + 1)), "rule time = the plays")


@pytest.mark.parametrize("name", ["uniform-allocation", "sequential-halving", "goptimal-dpdb"])
def test_every_state_of_a_run_loads(name: str) -> None:
    """The rules hold in every state a run passes through (to the end of the budget, or 300 duels)."""
    factory, step, n_steps = AGENTS[name]
    agent = quietly(factory)
    for t in range(n_steps):
        quietly(lambda: Persistable.from_bytes(agent.to_bytes()))
        step(agent, t)
    quietly(lambda: Persistable.from_bytes(agent.to_bytes()))


def test_a_committed_goptimal_dpdb_state_loads_and_keeps_its_time_rule() -> None:
    """Once committed (one arm left), time may run past the phases' plays, never below them."""
    from dpbandits.algorithms.dueling.goptimal_dpdb import GOptimalDPDB

    features = np.array([[1.0, 0.0], [0.0, 1.0]])
    agent = quietly(lambda: GOptimalDPDB(features, 4000, 50.0, rng=0, insecure_seeded_noise=True,
                                         play_count_scale=0.01))
    while agent._committed_arm is None:
        agent.tell(pair := agent.ask(), winner=pair[0] if pair[0] == 0 else pair[1])
    for _ in range(3):
        agent.tell(agent.ask(), first_wins=True)
    data = agent.to_bytes()
    quietly(lambda: Persistable.from_bytes(data))
    plays = sum(int(p.counts.sum()) for p in agent.phases)
    assert agent.time == plays + 3
    _refused(edit(data, lambda meta, _: state(meta).update(time=plays - 1)), "rule time = the plays")


# ------------------------------------------------------------------ DP-EBS and LDP-EBS: replayed bookkeeping
EBS = ["dp-ebs", "ldp-ebs", "dp-ebs-restart"]


@pytest.mark.parametrize("name", EBS)
@pytest.mark.parametrize("field,change", [("_pointer", lambda v: (v + 1) % 4), ("_left_counts", lambda v: v + 1),
                                          ("_pending", lambda v: v + 1), ("_restarts", lambda v: v + 1)])
def test_dp_ebs_recomputes_its_bookkeeping_whatever_an_older_file_holds(name: str, field: str, change: Any) -> None:
    """The pointer, left counts, pending subtractions and restarts are recomputed on load, equal to the run's
    (in every state of a run), and a file of the previous format holding other values of them is read as the
    run's: the agent then asks what the run asks."""
    factory, step, _ = AGENTS[name]
    agent = quietly(factory)
    for t in range(60):
        if field == "_pointer":  # once per subject: every state of the run
            loaded = quietly(lambda: Persistable.from_bytes(agent.to_bytes()))
            for f in ("_pointer", "_left_counts", "_pending", "_restarts"):
                assert np.array_equal(getattr(loaded, f), getattr(agent, f)), (t, f)
        step(agent, t)

    def older(meta: dict[str, Any], members: dict[str, np.ndarray]) -> None:
        value = getattr(agent, field)
        if isinstance(value, np.ndarray):
            members[f"old{field}"] = change(value.copy())
            state(meta)[field] = {"__array__": f"old{field}"}
        else:
            state(meta)[field] = change(value)

    loaded = quietly(lambda: Persistable.from_bytes(edit(agent.to_bytes(), older)))
    assert np.array_equal(getattr(loaded, field), getattr(agent, field))
    assert loaded.ask() == agent.ask()


def _ebs_running() -> Any:
    from dpbandits.algorithms.dueling.dp_ebs_elimination import DPEBSElimination

    agent = quietly(lambda: DPEBSElimination(4, 3000, 50.0, rng=11, insecure_seeded_noise=True, conf_scale=0.3,
                                             record_transcript=True))
    for _ in range(40):
        pair = agent.ask()
        agent.tell(pair, first_wins=False)  # no wins: any moved duel is caught by the replay, not wins <= counts
    assert not agent.elimination_rounds and agent.time == 40
    return agent


def _moved(c: np.ndarray) -> np.ndarray:
    """One duel moved from the most played pair to another (the sum, the time, is kept)."""
    out = c.copy()
    i, j = np.unravel_index(int(np.argmax(c)), c.shape)
    out[i, j] -= 1
    out[(i + 1) % 4, j] += 1
    return out


@pytest.mark.parametrize("change", [_moved, lambda c: c.T.copy(), lambda c: np.roll(c, 1)])
def test_dp_ebs_refuses_pair_counts_other_than_the_replay_of_its_coins(change: Any) -> None:
    data = _ebs_running().to_bytes()
    _refused(edit(data, _set_array(("_pair_counts",), change)), "rule _pair_counts")


@pytest.mark.parametrize("time", [39, 41])
def test_dp_ebs_refuses_a_time_other_than_its_rounds_before_it_commits(time: int) -> None:
    data = _ebs_running().to_bytes()
    _refused(edit(data, lambda meta, _: state(meta).update(time=time)), "rule")


def test_dp_ebs_refuses_a_transcript_whose_pairs_are_not_the_replay() -> None:
    agent = _ebs_running()
    x, y = agent.transcript[5]["pair"]
    entry = agent.transcript[5]
    assert entry["round"] == 6

    def change(meta: dict[str, Any], _: Any) -> None:
        state(meta)["transcript"][5]["__dict__"]["pair"] = {"__tuple__": [y, x] if x != y else [x, (x + 1) % 4]}

    _refused(edit(agent.to_bytes(), change), "rule _pair_counts")


def test_dp_ebs_refuses_wins_its_counters_do_not_hold() -> None:
    agent = _ebs_running()
    i, j = np.unravel_index(int(np.argmax(agent._pair_counts)), (4, 4))

    def win(w: np.ndarray) -> np.ndarray:
        w[i, j] += 1
        return w

    _refused(edit(agent.to_bytes(), _set_array(("_pair_wins",), win)), "rule the exact sum of each active arm's counter")


def test_dp_ebs_refuses_an_elimination_round_other_than_the_replay() -> None:
    agent = _run("dp-ebs", 75)
    arm = min(agent.elimination_rounds, key=agent.elimination_rounds.__getitem__)
    def change(meta: dict[str, Any], _: Any) -> None:
        items = state(meta)["elimination_rounds"]["__items__"]
        state(meta)["elimination_rounds"]["__items__"] = [[a, r + (a == arm)] for a, r in items]

    _refused(edit(agent.to_bytes(), change), "rule _pair_counts")
