"""USCA's saved state is its observed rounds (issue 35): every file that loads is a run's, and acts as it.

Both backends keep the observed contexts and rewards (after ``clip``); the round count, the reward
vector b = Σₜ φ(wₜ)·yₜ and the exact fit are recomputed from them. A file of the earlier layout (the
feature backend's b without the rounds it sums) is refused in one line.
"""

from __future__ import annotations

import tracemalloc
from typing import Any

import numpy as np
import pytest
from statefiles import canonical_state, edit, quietly, state, unpack
from test_state_files_fuzz import _contexts

from dpbandits._core.errors import DataFormatError
from dpbandits._core.persistence import Persistable
from dpbandits.algorithms.kernel.usca import USCA
from dpbandits.envs.kernel import StationaryKernel, joint_points


def _agent(backend: str, horizon: int = 12, **options: Any) -> USCA:
    return quietly(lambda: USCA(horizon=horizon, epsilon=1.0, reward_bound=1.5, kernel=StationaryKernel("se", 0.2),
                                backend=backend, context_generator=_contexts, clip=True, rng=2, n_features=16,
                                gamma=4.0, sup_method="trivial", precision="float32", **options))
    # γ̂ given and the trivial sup: the public set-up, which every load repeats, in a few milliseconds


def _load(data: bytes) -> USCA:
    loaded = quietly(lambda: Persistable.from_bytes(data, context_generator=_contexts))
    assert isinstance(loaded, USCA)
    return loaded


def _refused(data: bytes, match: str) -> None:
    with pytest.raises(DataFormatError, match=match) as caught:
        _load(data)
    assert "\n" not in str(caught.value)


# The rounds of a run: fast-path tells (float and array contexts), tells that take the general path
# (clipped values, an int reward), and observe() batches of 1, 3 and 4 rounds with clipped values.
_STEPS: list[tuple[str, Any, Any]] = [
    ("tell", 0.25, 0.5),
    ("tell", np.array([0.75]), -1.25),
    ("tell", 1.3, 5.0),  # clipped: context 1.0, reward 1.5
    ("observe", np.array([[0.1], [-0.2], [0.9]]), [0.3, -7.0, 1.0]),  # clipped: context 0.0, reward -1.5
    ("tell", np.array([0.5]), 1),
    ("observe", np.array([[0.6]]), [0.0]),
    ("observe", np.array([[0.2], [0.4], [2.0], [0.8]]), [1.4, -0.6, 0.2, 9.0]),
]


def _play(agent: USCA, steps: list[tuple[str, Any, Any]]) -> None:
    for kind, contexts, rewards in steps:
        if kind == "tell":
            agent.ask()
            agent.tell(contexts, rewards)
        else:
            agent.observe(contexts, rewards)


@pytest.mark.parametrize("backend", ["features", "kernel"])
def test_a_saved_run_loads_to_an_agent_that_recommends_exactly_as_the_original(backend: str) -> None:
    """Saved after every step of a run mixing tells and observes (clipped values included), and after the
    horizon: the loaded agent saves the same state (arrays byte for byte), and after the same remaining rounds predicts bit for bit
    as the original (the reward vector, the probabilities, a seeded draw)."""
    agent = _agent(backend)
    saves = [agent.to_bytes()]
    for step in range(len(_STEPS)):
        _play(agent, _STEPS[step : step + 1])
        saves.append(agent.to_bytes())
    assert agent.rounds_observed == agent.horizon
    assert set(state(unpack(saves[-1])[0])) == {"contexts", "rewards", "n_releases"}  # the rows, no b
    reference = agent.mechanism_log_probabilities([[0.3], [0.8]])
    draw = quietly(lambda: agent.recommend([0.3], rng=5, insecure_seeded_noise=True, size=4))
    saves.append(agent.to_bytes())
    for done, data in enumerate(saves):
        loaded = _load(data)
        assert canonical_state(loaded.to_bytes()) == canonical_state(data), done  # the same arrays, byte for byte
        _play(loaded, _STEPS[min(done, len(_STEPS)) :])
        assert np.array_equal(loaded.mechanism_log_probabilities([[0.3], [0.8]]), reference), done
        if backend == "features":
            assert np.array_equal(loaded._coefficients, agent._coefficients), done  # θ̄ = Z̃⁻¹b bit for bit
        assert np.array_equal(quietly(lambda x=loaded: x.recommend([0.3], rng=5, insecure_seeded_noise=True,
                                                                   size=4)), draw), done


def test_the_loaded_reward_vector_is_the_sum_of_the_clipped_rounds() -> None:
    """b is Σₜ φ(xₜ, cₜ)·yₜ of the rounds as observed after clipping, and is the same after a load."""
    agent = _agent("features")
    _play(agent, _STEPS)
    assert agent.feature_map is not None
    b = agent._reward_vector(agent.surrogate)  # type: ignore[arg-type]
    rows = np.array([[0.25], [0.75], [1.0], [0.1], [0.0], [0.9], [0.5], [0.6], [0.2], [0.4], [1.0], [0.8]])
    rewards = np.array([0.5, -1.25, 1.5, 0.3, -1.5, 1.0, 1.0, 0.0, 1.4, -0.6, 0.2, 1.5])
    phi = agent.feature_map.transform(joint_points(agent.learning_actions, rows))
    np.testing.assert_allclose(b, phi.T @ rewards, rtol=1e-12, atol=1e-12)
    loaded = _load(agent.to_bytes())
    assert np.array_equal(loaded._reward_vector(loaded.surrogate), b)  # type: ignore[arg-type]


def _earlier_layout(agent: USCA) -> bytes:
    """The file the previous layout saved for ``agent`` (feature backend): the round count and the streamed
    reward vector of its rounds, no rows."""
    rows = agent._points[: agent.rounds_observed, agent.action_dim :], agent._rewards[: agent.rounds_observed]
    b = agent.surrogate.reward_vector(joint_points(agent.learning_actions[: agent.rounds_observed], rows[0]), rows[1])

    def change(meta: dict[str, Any], members: dict[str, np.ndarray]) -> None:
        members["a_b"] = b
        meta["state"]["__dict__"] = {"_rounds": agent.rounds_observed, "_reward_vector": {"__array__": "a_b"},
                                     "_data_points": [], "_data_rewards": [], "n_releases": 0}

    return edit(agent.to_bytes(), change)


def test_a_feature_file_of_the_earlier_layout_is_refused_in_one_line() -> None:
    """A reward vector without the rounds it sums cannot be checked against any run: refused, saying why
    and what to do (the previous version loaded it, and any vector within a norm bound)."""
    agent = _agent("features")
    agent.observe(_contexts(4, 1), [0.1, 0.9, 0.5, 1.2])
    _refused(_earlier_layout(agent), r"_reward_vector: .*earlier dpbandits.*observe the learning rounds again")


def test_rows_no_run_observes_are_refused() -> None:
    """Contexts outside [0, 1], rewards beyond ±reward_bound (a file of clip=True rounds, edited), a
    reward without its context, more rounds than the horizon: each refused naming the field or rule."""
    for backend in ("features", "kernel"):
        agent = _agent(backend, horizon=6)
        agent.observe(_contexts(3, 1), [0.1, 0.9, 5.0])
        data = agent.to_bytes()
        _load(data)

        def scale(field: str, factor: float) -> Any:
            def apply(meta: dict[str, Any], members: dict[str, np.ndarray]) -> None:
                name = state(meta)[field]["__array__"]
                members[name] = members[name] * factor
            return apply

        def extra_reward(meta: dict[str, Any], members: dict[str, np.ndarray]) -> None:
            name = state(meta)["rewards"]["__array__"]
            members[name] = np.append(members[name], 0.5)

        def too_many(meta: dict[str, Any], members: dict[str, np.ndarray]) -> None:
            for field, rows in (("contexts", np.full((7, 1), 0.5)), ("rewards", np.zeros(7))):
                members[state(meta)[field]["__array__"]] = rows

        _refused(edit(data, scale("rewards", 100.0)), "rewards must be within")
        _refused(edit(data, scale("contexts", -1.0)), "contexts must be within")
        _refused(edit(data, extra_reward), "rule contexts and rewards")
        _refused(edit(data, too_many), "rule contexts and rewards")


def test_the_fuzzer_finds_a_planted_unreachable_reward_vector(monkeypatch: pytest.MonkeyPatch) -> None:
    """With b saved and read from the file again (not recomputed: the earlier layout's bug), a mutation
    of it loads and is reported unreachable by the semantic mutation fuzzer."""
    from statemutations import mutations
    from test_state_files_fuzz import _ORIGINALS
    from test_state_mutations import _outcome

    from dpbandits._core.schema import Array, StateSchema

    original_get, original_set = USCA._get_state, USCA._set_state

    def get_state(self: USCA) -> dict[str, Any]:
        b = getattr(self, "_planted_b", None)
        return {**original_get(self), "_reward_vector": self._reward_vector(self.surrogate) if b is None else b}

    def set_state(self: USCA, values: dict[str, Any]) -> None:
        original_set(self, values)
        self._planted_b = values["_reward_vector"]

    schema = USCA._schema
    planted = StateSchema({**schema.fields, "_reward_vector": Array("float64", (lambda a: a.feature_map.dim,))},
                          rules=schema.rules, derived=schema.derived)
    monkeypatch.setattr(USCA, "_schema", planted)
    monkeypatch.setattr(USCA, "_get_state", get_state)
    monkeypatch.setattr(USCA, "_set_state", set_state)
    monkeypatch.setattr(USCA, "_reward_vector", lambda self, surrogate: (
        self._planted_b if getattr(self, "_planted_b", None) is not None
        else surrogate.reward_vector(*self._data())))
    agent = _agent("features")
    agent.observe(_contexts(4, 1), [0.1, 0.9, 0.5, 1.2])
    monkeypatch.setitem(_ORIGINALS, "usca", agent.to_bytes())  # the fuzzer's subject, with a cheaper set-up
    outcomes = []
    for mutation in mutations(_ORIGINALS["usca"]):
        if mutation.field == "_reward_vector" and mutation.kind in ("x100", "negated"):
            outcomes.append(_outcome("usca", mutation))
    assert "unreachable" in outcomes, outcomes


def test_told_rounds_are_kept_in_contiguous_buffers() -> None:
    """Telling T rounds one at a time holds about (dc + 1) floats a round (buffers grown by doubling), not
    one array per round."""
    horizon = 4000
    agent = _agent("features", horizon=horizon, approx_size=64)
    contexts = _contexts(horizon, 3)
    rewards = np.linspace(-1.0, 1.0, horizon).tolist()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for t in range(horizon):
            agent.tell(contexts[t], rewards[t])
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert held <= 2 * 8 * 2 * horizon + 4096, held  # at most twice the 16 bytes a round of dc = 1
    assert canonical_state(agent.to_bytes())[2]["__dict__"]["rewards"][2] == (horizon,)


@pytest.mark.parametrize("backend", ["features", "kernel"])
def test_a_rounds_action_is_the_learning_action_when_it_was_observed(backend: str) -> None:
    """The privacy audits condition on other coins by setting ``learning_actions`` around ``observe`` (their
    adversarial neighbour moves a round's action to the certified argmax): the fit must use the actions read
    when the rounds were observed, as it did when b was streamed. Reading them at the first prediction instead
    made the audit's worst pair a milder one, and its 'Δ understated tenfold' control went unrefuted."""
    contexts, rewards = _contexts(12, 3), np.linspace(-1.0, 1.0, 12)
    swapped, plain = _agent(backend), _agent(backend)
    coins, moved = swapped.learning_actions, swapped.learning_actions.copy()
    moved[4] = 1.0 - moved[4]
    swapped.learning_actions = moved
    swapped.observe(contexts, rewards)
    swapped.learning_actions = coins  # restored before any prediction, as the audit harness does
    reference = _agent(backend)
    reference.learning_actions = moved
    reference.observe(contexts, rewards)
    plain.observe(contexts, rewards)
    assert np.array_equal(swapped.mechanism_log_probabilities([0.4]), reference.mechanism_log_probabilities([0.4]))
    assert not np.array_equal(swapped.mechanism_log_probabilities([0.4]), plain.mechanism_log_probabilities([0.4]))
