"""The dueling comparators' path-dependent state is one a run reaches (issue 35).

The round-by-round comparators (RUCB, RMED1, Beat-the-Mean, Double Thompson Sampling, Copeland
Confidence Bound, MaxInP, CoLSTIM) save their key and the outcome of every round and replay them on
load, so their loop sets, hypotheses, candidate and working sets, statistics and fits are recomputed,
never read. Interleaved Filter keeps its statistics, whose invariants ``load`` checks, naming the field
and the rule. Each test below edits a file the way a mutation the fuzzer accepted before did
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
from dpbandits.algorithms.dueling.colstim import CoLSTIM
from dpbandits.algorithms.dueling.copeland_confidence_bound import CopelandConfidenceBound
from dpbandits.algorithms.dueling.double_thompson import DoubleThompsonSampling
from dpbandits.algorithms.dueling.interleaved_filter import InterleavedFilter
from dpbandits.algorithms.dueling.maxinp import MaxInP
from dpbandits.algorithms.dueling.rmed import RMED1
from dpbandits.algorithms.dueling.rucb import RUCB

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


# ----------------------------------------------------------------------------- the round-by-round comparators
ROUND_AGENTS: dict[str, Callable[[int | None], Any]] = {
    "rucb": lambda seed: RUCB(4, 600, rng=seed),
    "rmed1": lambda seed: RMED1(4, 600, rng=seed),
    "beat-the-mean": lambda seed: BeatTheMean(4, 600, gamma=0.4, rng=seed),
    "double-thompson-sampling": lambda seed: DoubleThompsonSampling(4, 600, rng=seed),
    "copeland-confidence-bound": lambda seed: CopelandConfidenceBound(4, 600, rng=seed),
    "maxinp": lambda seed: MaxInP(FEATURES, 600, rng=seed),
    "colstim": lambda seed: CoLSTIM(FEATURES, 600, rng=seed),
}
FEATURES = np.array([[1.0, 0.0], [0.5, 0.5], [0.0, 1.0], [0.3, 0.2]])
UTILITIES = [2.0, 0.0, -1.0, -2.0]


def _outcomes(rounds: int, seed: int) -> list[bool]:
    return (np.random.default_rng(seed).random(rounds) < 0.5).tolist()


def _drive(agent: Any, outcomes: list[bool]) -> Any:
    for outcome in outcomes:
        agent.tell(agent.ask(), first_wins=outcome)
    return agent


def _policy_arrays(agent: Any) -> dict[str, Any]:
    """Every array and number the policy holds, and its model's (what a replay must reproduce)."""
    found: dict[str, Any] = {}
    for owner_name, owner in (("", agent._policy), ("model.", getattr(agent._policy, "model", None))):
        for name, value in (vars(owner) if owner is not None else {}).items():
            if isinstance(value, np.ndarray | int | float):
                found[owner_name + name] = np.asarray(value).copy()
    return found


@pytest.mark.parametrize("name", sorted(ROUND_AGENTS))
def test_a_round_agent_saves_its_key_and_outcomes_and_replays_the_rest(name: str) -> None:
    """The file holds the clock, the key and one bit per round; loading replays the run: every statistic,
    set, hypothesis and fitted model (and the key) equals the run's, so both continue alike."""
    agent = ROUND_AGENTS[name](None)  # a key from the OS: only the file knows it
    outcomes = _outcomes(130, 1)
    for t, outcome in enumerate(outcomes):
        if t % 13 == 0:
            if t % 26 == 0:
                agent.ask()  # a pair asked, not yet told
            data = agent.to_bytes()
            assert set(state(unpack(data)[0])) == {"time", "asked", "key", "outcomes"}
            loaded = Persistable.from_bytes(data)
            expected, got = _policy_arrays(agent), _policy_arrays(loaded)
            assert expected.keys() == got.keys()
            for field, value in expected.items():
                assert np.array_equal(value, got[field]), f"{name} {field} at round {t}"
            assert loaded._asked == agent._asked and loaded.time == agent.time  # keys compared above: same coins
        agent.tell(agent.ask(), first_wins=outcome)


@pytest.mark.parametrize("name", sorted(ROUND_AGENTS))
def test_a_round_agent_file_with_other_outcomes_is_the_run_with_those_outcomes(name: str) -> None:
    """Every outcome sequence is some environment's: a file with a bit flipped loads into exactly the run that
    got the flipped outcome (the same key), and not into the original's state."""
    outcomes = _outcomes(60, 2)
    agent = _drive(ROUND_AGENTS[name](5), outcomes)
    flipped = list(outcomes)
    flipped[17] = not flipped[17]
    other = _drive(ROUND_AGENTS[name](5), flipped)

    def flip(meta: dict[str, Any], members: dict[str, np.ndarray]) -> None:
        packed = members[state(meta)["outcomes"]["__array__"]]
        packed[17 // 8] ^= 0x80 >> (17 % 8)

    loaded = Persistable.from_bytes(edit(agent.to_bytes(), flip))
    assert all(np.array_equal(v, _policy_arrays(other)[k]) for k, v in _policy_arrays(loaded).items())
    assert [loaded.ask() for _ in range(1)] == [other.ask()]


@pytest.mark.parametrize("name", sorted(ROUND_AGENTS))
def test_outcomes_that_do_not_fit_the_rounds_are_refused(name: str) -> None:
    agent = _drive(ROUND_AGENTS[name](0), _outcomes(13, 3))  # 13 rounds: two bytes, 3 bits of padding

    def packed(change: Callable[[np.ndarray], np.ndarray]) -> Change:
        def apply(meta: dict[str, Any], members: dict[str, np.ndarray]) -> None:
            key = state(meta)["outcomes"]["__array__"]
            members[key] = change(members[key].copy())
        return apply

    _refused(agent, packed(lambda a: np.concatenate([a, [0]]).astype(np.uint8)), "rule outcomes")
    _refused(agent, packed(lambda a: a[:1]), "rule outcomes")
    _refused(agent, packed(lambda a: a | np.array([0, 1], dtype=np.uint8)), "rule outcomes")  # a 14th round's bit
    _refused(agent, _value("time", 17), "rule outcomes")
    full = _drive(ROUND_AGENTS[name](0), _outcomes(600, 3))
    _refused(full, _value("asked", True), "rule asked")


def test_a_round_agent_file_of_the_earlier_layout_is_refused_in_one_line() -> None:
    """Earlier versions saved the statistics (here RUCB's wins and hypothesis) without the outcomes: they
    cannot be checked against a run, so they are refused, saying so."""
    agent = _drive(RUCB(3, 100, rng=0), _outcomes(20, 4))

    def earlier(meta: dict[str, Any], members: dict[str, np.ndarray]) -> None:
        record = state(meta)
        members["w"] = np.zeros((1, 3, 3))
        members["h"] = np.array([0])
        for field in ("asked", "key", "outcomes"):
            del record[field]
        record["_asked"] = None
        record["policy"] = {"__dict__": {"wins": {"__array__": "w"}, "hypothesis": {"__array__": "h"}}}

    _refused(agent, earlier, "saved by an earlier version")


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
    _every_state_loads(name, 4, 0, 240, 12)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(MAKERS))
def test_every_state_of_runs_of_two_to_five_arms_loads(name: str) -> None:
    for k in (2, 3, 5):
        for seed in range(2):
            _every_state_loads(name, k, seed, 400, 9)
