"""The dueling comparators' path-dependent state obeys the rules a run implies (issue 35).

Interleaved Filter's win counts, sweeps and time, RMED1's loop sets, RUCB's hypothesis, Copeland
Confidence Bound's sets and Beat-the-Mean's working set depend on the order of the outcomes, which an
agent does not keep: what can be recomputed (Beat-the-Mean's per-arm sums) is recomputed on load, and
the rest must obey the invariants its class states next to its schema, checked by ``load`` naming the
field and the rule. Each test below edits a file the way a mutation the fuzzer accepted before did
(:mod:`test_state_mutations`); the last ones load every state of runs long enough for eliminations,
restarts and loops to happen, so that no rule refuses a state a run reaches.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from statefiles import edit, quietly, state, unpack

from dpbandits._core.errors import DataFormatError
from dpbandits._core.persistence import Persistable
from dpbandits.algorithms.dueling.beat_the_mean import BeatTheMean
from dpbandits.algorithms.dueling.copeland_confidence_bound import CopelandConfidenceBound
from dpbandits.algorithms.dueling.interleaved_filter import InterleavedFilter
from dpbandits.algorithms.dueling.rmed import RMED1
from dpbandits.algorithms.dueling.rucb import RUCB, _first_single_round, _hypothesis_consistent, rucb_upper

Change = Callable[[dict[str, Any], dict[str, np.ndarray]], None]


def _play(agent: Any, rounds: int, utilities: Any, seed: int = 0) -> Any:
    """``rounds`` duels of a logistic preference model of ``utilities`` (seeded)."""
    rng = np.random.default_rng(seed)
    u = np.asarray(utilities, dtype=float)
    for _ in range(rounds):
        first, second = agent.ask()
        agent.tell((first, second), first_wins=bool(rng.random() < 1.0 / (1.0 + np.exp(4.0 * (u[second] - u[first])))))
    return agent


def _fields(meta: dict[str, Any]) -> dict[str, Any]:
    record = state(meta)
    return record["policy"]["__dict__"] if "policy" in record else record


def _array(field: str, change: Callable[[np.ndarray], np.ndarray]) -> Change:
    def apply(meta: dict[str, Any], members: dict[str, np.ndarray]) -> None:
        name = _fields(meta)[field]["__array__"]
        members[name] = change(members[name].copy())
    return apply


def _value(field: str, value: Any) -> Change:
    def apply(meta: dict[str, Any], members: dict[str, np.ndarray]) -> None:
        state(meta)[field] = value
    return apply


def _refused(agent: Any, change: Change, match: str) -> None:
    with pytest.raises(DataFormatError, match=match) as caught:
        quietly(lambda: Persistable.from_bytes(edit(agent.to_bytes(), change)))
    assert "\n" not in str(caught.value)


def _set(index: tuple[int, ...], value: Any) -> Callable[[np.ndarray], np.ndarray]:
    def change(a: np.ndarray) -> np.ndarray:
        a[index] = value
        return a
    return change


# ----------------------------------------------------------------------------- Interleaved Filter
def _even_filter() -> InterleavedFilter:
    """No arm ever decided (every duel a coin flip): 60 sweeps of 3 arms, n₀ = 34 sweeps passed."""
    return _play(InterleavedFilter(4, 300, rng=3), 180, [0.0] * 4, seed=1)


def test_interleaved_filter_refuses_a_time_other_than_its_sweeps_while_no_arm_has_left() -> None:
    agent = _even_filter()
    assert agent.remaining.size == 3 and agent.time == 3 * agent._sweeps
    _refused(agent, _value("time", agent.time + 1), "rule time")


def test_interleaved_filter_refuses_wins_its_rules_would_have_acted_on() -> None:
    agent = _even_filter()
    _refused(agent, _array("_wins", _set((0,), float(agent._sweeps))), "rule _wins")
    _refused(agent, _array("_wins", _set((1,), 0.0)), "rule _wins")


def test_interleaved_filter_refuses_a_former_candidate_among_the_remaining_arms() -> None:
    agent = _even_filter()
    _refused(agent, _value("_first", int(agent.remaining[0])), "rule time")


def test_interleaved_filter_reads_an_older_file_without_its_first_candidate() -> None:
    agent = _even_filter()
    loaded = Persistable.from_bytes(edit(agent.to_bytes(), lambda meta, _: state(meta).pop("_first")))
    assert loaded._first == agent._first  # nothing left yet: the candidate is the first one


# ----------------------------------------------------------------------------- RMED1
def test_rmed1_refuses_loop_sets_its_loops_do_not_leave() -> None:
    agent = _play(RMED1(4, 300), 75, [1.0, 0.5, 0.0, 0.2])
    remaining, next_loop = agent._policy.remaining[0], agent._policy.next_loop[0]
    both = int(np.flatnonzero(remaining)[0])
    _refused(agent, _array("next_loop", _set((0, both), True)), "rule remaining, next_loop")
    _refused(agent, _array("remaining", lambda r: np.zeros_like(r)), "rule remaining, next_loop")
    if next_loop.any():  # the leader's loop: out of both sets it would have joined L_N
        leader = int(agent._policy._leader[0])
        _refused(agent, lambda meta, members: (_array("remaining", _set((0, leader), False))(meta, members),
                                                 _array("next_loop", _set((0, leader), False))(meta, members)),
                 "rule remaining, next_loop")


def test_rmed1_refuses_an_initial_phase_out_of_index_order() -> None:
    agent = _play(RMED1(4, 300), 3, [0.0] * 4)
    _refused(agent, lambda meta, members: (_array("wins", lambda w: np.zeros_like(w))(meta, members),
                                           _array("wins", _set((0, 2, 3), 3.0))(meta, members)), "rule wins")


# ----------------------------------------------------------------------------- RUCB
def test_rucb_refuses_a_hypothesis_outside_the_candidates_of_its_last_step() -> None:
    """With a pair asked, the step read today's wins: C is known exactly (arm 0 alone after 400 duels)."""
    agent = _play(RUCB(4, 600, rng=3), 400, [2.0, 0.0, -1.0, -2.0])
    agent.ask()
    candidates = (rucb_upper(agent._policy.wins, agent.time + 1, agent.alpha)[0] >= 0.5).all(axis=1)
    assert candidates.tolist() == [True, False, False, False] and agent._policy.hypothesis[0] == 0
    for arm in (-1, 1, 3):
        _refused(agent, _array("hypothesis", _set((0,), arm)), "rule hypothesis")


def test_rucb_refuses_a_hypothesis_before_the_first_step() -> None:
    _refused(RUCB(4, 10, rng=3), _array("hypothesis", _set((0,), 1)), "rule hypothesis")


def test_rucb_refuses_a_hypothesis_in_c_that_no_earlier_round_could_have_had_alone() -> None:
    """B is set only when C is one arm, which needs every other arm to have lost more than 4α·ln s duels
    to one arm by round s: with 4 arms not before round 20, and not with an arm beaten 4 times at most."""
    assert _first_single_round(4, 0.51) == (20, 7) and _first_single_round(3, 0.51) == (11, 5)
    agent = _play(RUCB(4, 300, rng=3), 12, [0.0] * 4)
    agent.ask()
    candidates = np.flatnonzero((rucb_upper(agent._policy.wins, agent.time + 1, agent.alpha)[0] >= 0.5).all(axis=1))
    assert candidates.size > 1 and agent._policy.hypothesis[0] == -1
    _refused(agent, _array("hypothesis", _set((0,), int(candidates[0]))), "rule hypothesis")
    # arms 0 and 1 even (4 wins each), both beat arm 2: C = {0, 1}, but arm 1 never lost 5 duels to one arm
    wins = np.array([[[0.0, 4.0, 16.0], [4.0, 0.0, 16.0], [0.0, 0.0, 0.0]]])
    three = RUCB(3, 100, rng=3)
    for h, asked, holds in ((0, (0, 1), False), (-1, (0, 1), True), (0, None, False)):
        fields = {"policy": {"wins": wins, "hypothesis": np.array([h])}, "time": 40, "_asked": asked}
        assert bool(_hypothesis_consistent(three, fields)) is holds


def test_rucb_sets_its_hypothesis_as_early_as_its_rule_allows_and_every_state_loads() -> None:
    """The rule's earliest round is attained (two arms, one always winning: round 4), so it is tight there,
    and every state of such runs, where C shrinks as fast as it can, loads."""
    earliest = []
    for alpha in (0.51, 1.0):
        agent = RUCB(2, 40, alpha=alpha, rng=0)
        first = None
        for _ in range(40):
            Persistable.from_bytes(agent.to_bytes())
            pair = agent.ask()
            Persistable.from_bytes(agent.to_bytes())
            if first is None and agent._policy.hypothesis[0] >= 0:
                first = agent.time + 1
            agent.tell(pair, first_wins=pair[0] < pair[1])  # arm 0 always wins
        earliest.append((first, _first_single_round(2, alpha)[0]))
    assert earliest == [(4, 4), (11, 11)]


# ----------------------------------------------------------------------------- Copeland Confidence Bound
def test_copeland_confidence_bound_refuses_sets_no_step_leaves() -> None:
    agent = _play(CopelandConfidenceBound(4, 300, rng=3), 75, [0.0] * 4)
    assert agent._policy.max_losses[0] == 4 and agent._policy.best_set.all()
    _refused(agent, _array("max_losses", _set((0,), 3)), "rule best_set")
    _refused(agent, _array("beaters", _set((0, 2, 0), True)), "rule beaters")
    _refused(agent, _array("best_set", _set((0, 2), False)), "rule beaters")
    _refused(agent, _array("beaters", _set((0, 1, 1), True)), "rule best_set")


# ----------------------------------------------------------------------------- Beat-the-Mean
def test_beat_the_mean_recomputes_its_sums_and_refuses_a_working_set_no_elimination_leaves() -> None:
    agent = _play(BeatTheMean(4, 300, rng=3), 75, [0.0] * 4)
    data = agent.to_bytes()
    assert not {"win_sums", "comparison_sums"} & set(_fields(unpack(data)[0]))
    planted = edit(data, lambda meta, members: (members.__setitem__("x", np.full((1, 4), 9.0)),
                                                _fields(meta).__setitem__("win_sums", {"__array__": "x"})))
    loaded = Persistable.from_bytes(planted)  # an older file's sums: ignored, recomputed
    assert np.array_equal(loaded._policy.win_sums, agent._policy.win_sums)
    _refused(agent, _array("working", _set((0, 2), False)), "rule working: an arm that left")
    _refused(agent, _array("first_counts", lambda c: c + np.array([[1, -1, 0, 0]])), "rule first_counts")


def test_beat_the_mean_refuses_a_state_its_elimination_rule_would_have_left() -> None:
    agent = _play(BeatTheMean(3, 3000, gamma=0.4, rng=3), 45, [0.0] * 3)
    assert agent._policy.working.all()

    def lopsided(meta: dict[str, Any], members: dict[str, np.ndarray]) -> None:
        name = _fields(meta)["wins"]["__array__"]
        comparisons = members[_fields(meta)["comparisons"]["__array__"]]
        members[name] = comparisons.copy()
        members[name][0, 1] = 0.0  # arm 0 won every duel, arm 1 none: the worst arm is clear

    _refused(agent, lopsided, "rule working: the elimination rule")


# ----------------------------------------------------------------------------- every state a run reaches loads
MAKERS: dict[str, Callable[[int, int, int], Any]] = {
    "interleaved-filter": lambda k, horizon, seed: InterleavedFilter(k, horizon, rng=seed),
    "rucb": lambda k, horizon, seed: RUCB(k, horizon, rng=seed),
    "rmed1": lambda k, horizon, seed: RMED1(k, horizon),
    "copeland-confidence-bound": lambda k, horizon, seed: CopelandConfidenceBound(k, horizon, rng=seed),
    "beat-the-mean": lambda k, horizon, seed: BeatTheMean(k, horizon, gamma=0.4, rng=seed),
}


def _every_state_loads(name: str, k: int, seed: int, rounds: int, every: int) -> None:
    rng = np.random.default_rng(seed)
    utilities = rng.permutation(np.linspace(0.0, 1.0, k)) * (3.0 if seed % 2 == 0 else 0.5)
    agent = MAKERS[name](k, rounds, seed)
    for t in range(rounds):
        if t % every == 0:
            Persistable.from_bytes(agent.to_bytes())
        pair = agent.ask()
        if t % every == 0:  # a pair asked and not yet told
            Persistable.from_bytes(agent.to_bytes())
        p = 1.0 / (1.0 + np.exp(4.0 * (utilities[pair[1]] - utilities[pair[0]])))
        agent.tell(pair, first_wins=bool(rng.random() < p))
    Persistable.from_bytes(agent.to_bytes())


@pytest.mark.parametrize("name", sorted(MAKERS))
def test_the_states_of_a_run_with_eliminations_and_restarts_load(name: str) -> None:
    _every_state_loads(name, 4, 0, 240, 4)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(MAKERS))
def test_every_state_of_runs_of_two_to_five_arms_loads(name: str) -> None:
    for k in (2, 3, 5):
        for seed in range(2):
            _every_state_loads(name, k, seed, 400, 9)
