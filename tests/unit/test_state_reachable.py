"""Every loaded state is one a run could have produced (issue 35).

A state file holds sufficient statistics and released values only: what can be recomputed from them
(RMED1's means, divergences and leader; the GP-uniform learner's θ) is recomputed on load whatever
the file says, and what cannot be recomputed obeys the invariants its class states next to its
schema (sums within the reward range of their pulls, moments symmetric positive semi-definite,
releases equal to their counters' releases...), checked by ``load``, which names the rule broken.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from statefiles import edit, quietly, state, unpack
from test_persistence import AGENTS, FEATURES, _bai_step, _dueling_step

from dpbandits._core.errors import DataFormatError
from dpbandits._core.persistence import Persistable

Change = Callable[[dict[str, Any], dict[str, np.ndarray]], None]


def _run(name: str, steps: int) -> Any:
    factory, step, _ = AGENTS[name]
    agent = quietly(factory)
    for t in range(steps):
        step(agent, t)
    return agent


def _member(meta: dict[str, Any], *path: str) -> str:
    value: Any = meta["state"]
    for key in path:
        value = value["__dict__"][key] if "__dict__" in value else value[key]
    return str(value["__array__"])


def _set_array(path: tuple[str, ...], change: Callable[[np.ndarray], np.ndarray]) -> Change:
    def apply(meta: dict[str, Any], members: dict[str, np.ndarray]) -> None:
        name = _member(meta, *path)
        members[name] = change(members[name].copy())
    return apply


def _refused(data: bytes, match: str, **overrides: Any) -> None:
    with pytest.raises(DataFormatError, match=match) as caught:
        quietly(lambda: Persistable.from_bytes(data, **overrides))
    assert "\n" not in str(caught.value)


# ----------------------------------------------------------------------------- defect 1: derived values
def test_rmed1_recomputes_its_means_divergence_and_leader_from_the_wins() -> None:
    """RMED1's file holds its key and outcomes only (a file of an earlier format also held its leader, means
    and divergences, which could say arm 3 while the wins said arm 0): loaded, it recommends arm 0, as the
    run does, and asks what the run asks."""
    from dpbandits.algorithms.dueling.rmed import RMED1

    agent = RMED1(4, 100)
    for _ in range(20):
        pair = agent.ask()
        agent.tell(pair, first_wins=pair[0] <= pair[1])  # the lower index always wins: arm 0 is the Condorcet winner
    assert agent.recommendation == 0
    data = agent.to_bytes()
    assert set(state(unpack(data)[0])) == {"time", "asked", "key", "outcomes"}
    loaded = RMED1.from_bytes(data)
    assert loaded.recommendation == 0 and loaded.ask() == agent.ask()
    assert np.array_equal(loaded._policy._divergence, agent._policy._divergence)


def _kernel(name: str) -> Any:
    from test_state_files_fuzz import _kernel_learners

    return quietly(_kernel_learners()[name])


def test_gp_uniform_theta_is_recomputed_from_the_told_rounds_not_read() -> None:
    agent = _kernel("gp-uniform")
    data = agent.to_bytes()
    expected = agent.recommend([0.3])
    loaded = Persistable.from_bytes(edit(data, _set_array(("_theta",), lambda theta: -100.0 * theta + 1.0)))
    assert np.array_equal(loaded._theta, agent._theta)
    assert np.array_equal(loaded.recommend([0.3]), expected)


LEARNER_STATISTICS = {"feature-ridge": ("_moment",), "gp-uniform": ("_moment",), "cgp-ucb": ("_v_inverse", "_b")}


@pytest.mark.parametrize("name", sorted(LEARNER_STATISTICS))
def test_a_kernel_learner_saves_its_told_rounds_and_recomputes_its_statistics(name: str) -> None:
    """The moment (feature ridge) and V⁻¹, b (CGP-UCB) are not in the file: a file that holds them (the
    earlier layout, where a moment entry +1 or a round more loaded as a state no run reaches) is refused,
    and the loaded agent's statistics are bit for bit the original's."""
    agent = _kernel(name)
    data = agent.to_bytes()
    assert set(state(unpack(data)[0])) <= {"contexts", "rewards", "_theta", "_pending"}
    loaded = quietly(lambda: Persistable.from_bytes(data))
    for field in LEARNER_STATISTICS[name]:
        assert np.array_equal(getattr(loaded, field), getattr(agent, field))
        _refused(edit(data, lambda meta, members, f=field: state(meta).update({f: 0})), "unknown key")
    assert loaded._rounds == agent._rounds
    _refused(edit(data, lambda meta, members: state(meta).update(_rounds=agent._rounds + 1)), "unknown key")


@pytest.mark.parametrize("name", sorted(LEARNER_STATISTICS))
@pytest.mark.parametrize(("field", "damage", "rule"), [
    ("contexts", lambda c: c + 1.5, "within"),
    ("contexts", lambda c: c[:, :0], "shape"),
    ("rewards", lambda y: y * 100.0, "within"),
    ("rewards", lambda y: y[:-1], "one row per told round"),
])
def test_a_kernel_learner_refuses_told_rounds_no_run_tells(name: str, field: str,
                                                           damage: Callable[[np.ndarray], np.ndarray], rule: str) -> None:
    _refused(edit(_kernel(name).to_bytes(), _set_array((field,), damage)), rule)


def test_cgp_ucb_replays_a_pending_ask() -> None:
    from test_state_files_fuzz import _contexts

    agent = _kernel("cgp-ucb")
    context = _contexts(1, 7)[0]
    action = agent.ask(context)
    loaded = quietly(lambda: Persistable.from_bytes(agent.to_bytes()))
    assert loaded._pending_index == agent._pending_index
    loaded.tell(context, 0.5)
    agent.tell(context, 0.5)
    assert np.array_equal(loaded._v_inverse, agent._v_inverse) and action.shape == (1,)


# ----------------------------------------------------------------------------- defect 2: invariants
PHASED = ["dp-bai", "dp-od", "od-linbai", "baseline"]


def _phased(name: str) -> Any:
    if name == "baseline":
        from dpbandits.algorithms.bai.dp_bai import Baseline

        agent = quietly(lambda: Baseline(FEATURES, 60, 1.0).agent(3, insecure_seeded_noise=True))
        for t in range(7):
            _bai_step(agent, t)
        return agent
    return _run(name, 7)


@pytest.mark.parametrize("name", PHASED)
@pytest.mark.parametrize("value", [1e300, -5.0, 7.5])
def test_phase_sums_outside_the_reward_range_of_their_pulls_are_refused(name: str, value: float) -> None:
    """Sums of a phase's rewards lie within [n_j·0, n_j·1]: 1e300, −5 and 7.5 (after at most 7 pulls) are refused."""
    agent = _phased(name)
    assert agent._position > 0
    data = agent.to_bytes()
    _refused(edit(data, _set_array(("sums",), lambda s: np.full_like(s, value))), "rule each sum S_j")


@pytest.mark.parametrize("name", PHASED)
@pytest.mark.parametrize("value", [2**40, 1, 0])
def test_pulls_other_than_the_replayed_plans_are_refused(name: str, value: int) -> None:
    agent = _phased(name)
    data = agent.to_bytes()
    pulls = agent.pulls

    def change(p: np.ndarray) -> np.ndarray:
        p[int(np.argmax(pulls))] = value
        return p

    _refused(edit(data, _set_array(("pulls",), change)), "rule planner_state, pulls")


@pytest.mark.parametrize("name", PHASED)
def test_a_finished_phased_agent_with_another_recommendation_is_refused(name: str) -> None:
    agent = _phased(name)
    for t in range(200):
        if agent.done:
            break
        _bai_step(agent, t)
    assert agent.done
    data = agent.to_bytes()
    wrong = (agent.recommendation + 1) % FEATURES.shape[0]
    _refused(edit(data, lambda meta, _: state(meta).update(recommendation=wrong)), "rule planner_state, pulls")


@pytest.mark.parametrize("name", ["dp-ebs", "dp-ebs-restart"])
def test_dp_ebs_released_values_other_than_its_counters_releases_are_refused(name: str) -> None:
    data = _run(name, 40).to_bytes()
    _refused(edit(data, _set_array(("_released",), lambda r: r + 5)), "rule _released equal")


def test_a_counter_bank_release_other_than_its_last_node_is_refused() -> None:
    from test_state_files_fuzz import _counters

    data = _counters()["tree-counter-bank"]().to_bytes()
    _refused(edit(data, _set_array(("_released",), lambda r: r + 5)), "rule _released of a live counter")




# ----------------------------------------------------------------------------- reachable states load
def test_every_state_of_interleaved_filter_loads() -> None:
    """Mid-sweep, an arm already met has one more win than the finished sweeps: that state was refused."""
    agent = _run("interleaved-filter", 0)
    for t in range(40):
        blob = agent.to_bytes()
        loaded = Persistable.from_bytes(blob)
        assert _dueling_step(loaded, t) == _dueling_step(agent, t)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["gp-uniform", "feature-ridge", "cgp-ucb"])
def test_every_state_of_a_kernel_learner_loads_and_continues(name: str) -> None:
    from test_state_files_fuzz import _contexts

    from dpbandits.algorithms.kernel.learners import CGPUCB, UniformFeatureRidge
    from dpbandits.envs.kernel import StationaryKernel

    options: dict[str, Any] = {"horizon": 8, "reward_bound": 1.5, "kernel": StationaryKernel("se", 0.2),
                               "clip": True, "rng": 2, "n_features": 16, "grid_points_per_dim": 16}
    agent = quietly(lambda: CGPUCB(ucb_grid_points_per_dim=8, **options) if name == "cgp-ucb" else
                    UniformFeatureRidge(epsilon=float("inf") if name == "gp-uniform" else 1.0,
                                        insecure_seeded_noise=name != "gp-uniform", **options))
    for context, reward in zip(_contexts(8, 1), [0.1, 1.5, -1.5, 9.0, -0.3, 0.0, 0.7, 0.2], strict=True):
        loaded = quietly(lambda: Persistable.from_bytes(agent.to_bytes()))
        assert np.array_equal(loaded.ask(context), agent.ask(context))
        loaded.tell(context, reward)
        agent.tell(context, reward)
    assert np.array_equal(quietly(lambda: Persistable.from_bytes(agent.to_bytes())).recommend([0.3]),
                          agent.recommend([0.3]))


# ----------------------------------------------------------------------------- load's first bytes
def test_load_checks_the_first_bytes_before_reading_a_file(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A large file of another kind was read whole (3 GB: 3.2 GB and 9 s) before being refused."""
    import dpbandits
    from dpbandits._core import persistence

    path = tmp_path / "big.bin"
    with open(path, "wb") as handle:
        handle.truncate(2**30)  # 1 GiB of zeros, sparse on disk
    reads: list[int] = []
    opened = persistence.os.fdopen

    class Recording:
        def __init__(self, handle: Any) -> None:
            self.handle = handle

        def __enter__(self) -> Recording:
            self.handle.__enter__()
            return self

        def __exit__(self, *exc: Any) -> None:
            self.handle.__exit__(*exc)

        def fileno(self) -> int:
            return int(self.handle.fileno())

        def read(self, size: int = -1) -> bytes:
            reads.append(size)
            return bytes(self.handle.read(size))

    monkeypatch.setattr(persistence.os, "fdopen", lambda *a, **k: Recording(opened(*a, **k)))
    with pytest.raises(DataFormatError, match="not a dpbandits state file"):
        dpbandits.load(path)
    assert reads and all(0 <= size <= 16 for size in reads), reads


def test_loading_a_pickled_numpy_file_does_not_suggest_an_option_load_lacks(tmp_path: Any) -> None:
    import dpbandits

    path = tmp_path / "objects.npy"
    np.save(path, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(DataFormatError, match="not a dpbandits state file") as caught:
        dpbandits.load(path)
    assert "allow_pickle" not in str(caught.value)


def test_the_linear_kl_policy_saves_its_records_and_fits_them_again() -> None:
    """Σ_D, θ̂ and n are derived from the saved records by fit (an earlier file held them, and a covariance with
    a unit moved between two diagonal entries loaded as a data set no one logged): bit for bit the fit's, and
    the tight accountant, which needs the records, works after a load."""
    from dpbandits.algorithms.offline import KLLinearPolicy

    rng = np.random.default_rng(3)
    features = rng.normal(size=(40, 3))
    features /= np.maximum(1.0, np.linalg.norm(features, axis=1))[:, None]
    policy = KLLinearPolicy(eta=0.5, beta0=0.5).fit(features, rng.random(40))
    data = policy.to_bytes()
    assert set(state(unpack(data)[0])) == {"_features", "_rewards"}
    loaded = Persistable.from_bytes(data)
    for name in ("covariance_", "theta_", "cholesky_"):
        assert np.array_equal(getattr(loaded, name), getattr(policy, name)), name
    assert loaded.n_records_ == 40 and loaded.lambda_min_ == policy.lambda_min_
    actions = features[:3]
    assert loaded.guarantee(actions, variant="tight") == policy.guarantee(actions, variant="tight")
    _refused(edit(data, _set_array(("_features",), lambda f: 2.0 * f)), "norm")  # rows beyond norm 1: fit's refusal

    def earlier(meta: dict[str, Any], members: dict[str, np.ndarray]) -> None:
        record = state(meta)
        members["c"] = policy.covariance_
        record["covariance_"] = {"__array__": "c"}

    _refused(edit(data, earlier), "saved by an earlier version")


def test_arms_out_of_the_order_a_round_visits_them_are_refused() -> None:
    """Sequential Halving's survivors and Interleaved Filter's remaining arms are visited in index order: the
    same arms in another order (which loaded before, and changed the next pulls) are refused."""
    from dpbandits.algorithms.bai.sequential_halving import SequentialHalving
    from dpbandits.algorithms.dueling.interleaved_filter import InterleavedFilter

    halving = SequentialHalving(8, 240, rng=0)
    for _ in range(40):
        halving.tell(halving.ask(), 0.5)
    reverse = lambda a: a[::-1].copy()  # noqa: E731
    _refused(edit(halving.to_bytes(), _set_array(("_surviving",), reverse)), "rule _surviving: distinct arms in ascending")
    sweeps = InterleavedFilter(5, 100, rng=1)
    for _ in range(3):
        sweeps.tell(sweeps.ask(), first_wins=True)
    _refused(edit(sweeps.to_bytes(), _set_array(("remaining",), reverse)), "rule remaining: distinct arms other than")
