"""save/load of agents and fitted policies: a loaded object continues exactly as the original (issue 14).

Every ask/tell agent type is run for some steps with seeded noise (so that "exactly" is testable),
saved, loaded, and both copies are driven on with the same feedback: their outputs must agree step by
step. The format is versioned, refuses foreign or newer files with a clear message, is written
atomically, and holds no seed or noise of a secure backend.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dpbandits._core.errors import DataFormatError, InvalidParameterError
from dpbandits._core.persistence import FORMAT_VERSION, atomic_write_bytes
from dpbandits.algorithms.bai.dp_bai import DPBAI, DPBAIGauss
from dpbandits.algorithms.bai.dp_od import DPOD
from dpbandits.algorithms.bai.od_linbai import ODLinBAI
from dpbandits.algorithms.bai.phased import PhasedAgent
from dpbandits.algorithms.bai.sequential_halving import SequentialHalving
from dpbandits.algorithms.bai.uniform import UniformAllocation
from dpbandits.algorithms.dueling.beat_the_mean import BeatTheMean
from dpbandits.algorithms.dueling.colstim import CoLSTIM
from dpbandits.algorithms.dueling.copeland_confidence_bound import CopelandConfidenceBound
from dpbandits.algorithms.dueling.double_thompson import DoubleThompsonSampling
from dpbandits.algorithms.dueling.dp_ebs_elimination import DPEBSElimination
from dpbandits.algorithms.dueling.goptimal_dpdb import GOptimalDPDB
from dpbandits.algorithms.dueling.interleaved_filter import InterleavedFilter
from dpbandits.algorithms.dueling.ldp_ebs_elimination import LDPEBSElimination
from dpbandits.algorithms.dueling.maxinp import MaxInP
from dpbandits.algorithms.dueling.rmed import RMED1
from dpbandits.algorithms.dueling.rucb import RUCB
from dpbandits.privacy.counters import BinaryTreeCounter
from dpbandits.privacy.noise import SecureNoise

FEATURES = np.array([[1.0, 0.0], [0.0, 1.0], [0.7, 0.7], [0.9, 0.1], [0.2, 0.8]])


def _reward(arm: int, step: int) -> float:
    return float((np.sin(3.1 * arm + 0.7 * step) + 1.0) / 2.0)


def _first_wins(pair: tuple[int, int], step: int) -> bool:
    return bool((pair[0] * 7 + pair[1] * 3 + step) % 5 < 3)


def _bai_step(agent: Any, step: int) -> Any:
    if agent.done:
        return agent.recommendation
    arm = agent.ask()
    agent.tell(arm, _reward(arm, step))
    return arm


def _dueling_step(agent: Any, step: int) -> Any:
    pair = agent.ask()
    agent.tell(pair, first_wins=_first_wins(pair, step))
    return pair


AGENTS: dict[str, tuple[Callable[[], Any], Callable[[Any, int], Any], int]] = {
    "dp-bai": (lambda: DPBAI(FEATURES, 60, 1.0).agent(3, insecure_seeded_noise=True), _bai_step, 70),
    "dp-bai-gauss": (lambda: DPBAIGauss(FEATURES, 60, 1.0, 1e-6, calibration="analytic").agent(
        3, insecure_seeded_noise=True), _bai_step, 70),
    "dp-od": (lambda: DPOD(FEATURES, 60, 1.0).agent(3, insecure_seeded_noise=True), _bai_step, 70),
    "od-linbai": (lambda: ODLinBAI(FEATURES, 60).agent(3), _bai_step, 70),
    "sequential-halving": (lambda: SequentialHalving(5, 60, rng=3), _bai_step, 70),
    "uniform-allocation": (lambda: UniformAllocation(5, 60, rng=3), _bai_step, 70),
    "dp-ebs": (lambda: DPEBSElimination(4, 300, 2.0, rng=3, insecure_seeded_noise=True, conf_scale=0.05,
                                        record_transcript=True), _dueling_step, 300),
    "ldp-ebs": (lambda: LDPEBSElimination(4, 300, 2.0, rng=3, conf_scale=0.05), _dueling_step, 300),
    "goptimal-dpdb": (lambda: GOptimalDPDB(FEATURES, 300, 2.0, rng=3, insecure_seeded_noise=True,
                                           play_count_scale=0.01), _dueling_step, 300),
    "rucb": (lambda: RUCB(4, 300, rng=3), _dueling_step, 300),
    "beat-the-mean": (lambda: BeatTheMean(4, 300, rng=3), _dueling_step, 300),
    "rmed1": (lambda: RMED1(4, 300), _dueling_step, 300),
    "double-thompson-sampling": (lambda: DoubleThompsonSampling(4, 300, rng=3), _dueling_step, 300),
    "copeland-confidence-bound": (lambda: CopelandConfidenceBound(4, 300, rng=3), _dueling_step, 300),
    "maxinp": (lambda: MaxInP(FEATURES[:4], 300, confidence_scale=0.05, rng=3), _dueling_step, 300),
    "colstim": (lambda: CoLSTIM(FEATURES[:4], 300, rng=3), _dueling_step, 300),
    "dp-ebs-restart": (lambda: DPEBSElimination(4, 300, 2.0, rng=3, insecure_seeded_noise=True, conf_scale=0.05,
                                                stats_removal="restart", counter_epsilon="whole", check_every=3),
                       _dueling_step, 300),
    "interleaved-filter": (lambda: InterleavedFilter(4, 300, rng=3), _dueling_step, 300),
}


@pytest.mark.parametrize("name", sorted(AGENTS))
def test_a_loaded_agent_continues_exactly_as_the_original(name: str, tmp_path: Path) -> None:
    factory, step, n_steps = AGENTS[name]
    for cut in (1, n_steps // 3, (2 * n_steps) // 3):
        original = factory()
        for t in range(cut):
            step(original, t)
        path = original.save(tmp_path / f"{name}-{cut}.dpb")
        loaded = type(original).load(path)
        assert repr(loaded) == repr(original)
        for t in range(cut, n_steps):
            assert step(loaded, t) == step(original, t), (name, cut, t)
        assert not list(tmp_path.glob(".*.tmp"))  # atomic writes leave nothing behind


def test_usca_save_load_continues_and_needs_its_context_generator_again(tmp_path: Path) -> None:
    from dpbandits.algorithms.kernel.usca import USCA
    from dpbandits.envs.kernel import KernelBanditEnvironment

    env = KernelBanditEnvironment(function_seed=1)
    agent = USCA(horizon=30, epsilon=1.0, reward_bound=1.5, kernel=env.kernel,
                 context_generator=env.sample_contexts, clip=True)  # rng=None: public coins replay anyway
    contexts = env.sample_contexts(30, rng=1)
    rewards = env.sample_rewards(agent.learning_actions, contexts, rng=2)
    agent.observe(contexts[:10], rewards[:10])
    path = agent.save(tmp_path / "usca.dpb")
    with pytest.raises(InvalidParameterError, match="context_generator was not saved"):
        USCA.load(path)
    loaded = USCA.load(path, context_generator=env.sample_contexts)
    np.testing.assert_array_equal(loaded.learning_actions, agent.learning_actions)
    for model in (agent, loaded):
        model.observe(contexts[10:], rewards[10:])
    draws = [m.recommend([0.4], rng=5, size=4, insecure_seeded_noise=True) for m in (agent, loaded)]
    np.testing.assert_array_equal(draws[0], draws[1])


def test_secure_agents_save_no_noise_source_and_no_seed_in_repr(tmp_path: Path) -> None:
    agent = DPEBSElimination(3, 50, 1.0, rng=12345)
    _dueling_step(agent, 0)
    path = agent.save(tmp_path / "secure.dpb")
    with zipfile.ZipFile(path) as archive:
        meta = json.loads(np.load(archive.open("__meta__.npy")).tobytes())
    assert meta["format_version"] == FORMAT_VERSION
    assert meta["state"]["__dict__"]["_counters"]["state"]["__dict__"]["_noise"] == {"__noise__": {"kind": "secure"}}
    loaded = DPEBSElimination.load(path)
    assert isinstance(loaded._counters._noise, SecureNoise)
    assert "12345" not in repr(agent) and "12345" not in repr(loaded)
    assert loaded.time == 1 and loaded.active_arms == agent.active_arms


def test_the_format_refuses_foreign_newer_and_mismatched_files(tmp_path: Path) -> None:
    counter = BinaryTreeCounter(8, 1.0, integer=True)
    counter.update(1)
    path = counter.save(tmp_path / "counter.dpb")
    with pytest.raises(DataFormatError, match="holds a BinaryTreeCounter, not a RUCB"):
        RUCB.load(path)
    (tmp_path / "text.dpb").write_text("not a state file", encoding="utf-8")
    with pytest.raises(DataFormatError, match="not a dpbandits state file"):
        RUCB.load(tmp_path / "text.dpb")
    with pytest.raises(DataFormatError, match="no such state file"):
        RUCB.load(tmp_path / "missing.dpb")
    # a file from a newer format version: rewrite the header
    with zipfile.ZipFile(path) as archive:
        meta = json.loads(np.load(archive.open("__meta__.npy")).tobytes())
        members = {name: np.load(archive.open(name)) for name in archive.namelist()}
    meta["format_version"] = FORMAT_VERSION + 1
    members["__meta__.npy"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    newer = tmp_path / "newer.dpb"
    with open(newer, "wb") as handle:
        np.savez(handle, **{name.removesuffix(".npy"): value for name, value in members.items()})
    with pytest.raises(DataFormatError, match=f"version {FORMAT_VERSION + 1}.*upgrade dpbandits"):
        BinaryTreeCounter.load(newer)
    assert BinaryTreeCounter.load(path).time == 1


def test_a_failed_atomic_write_leaves_the_target_and_no_temporary_file(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "state.dpb"
    atomic_write_bytes(target, b"first")

    def disk_full(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("os.fsync", disk_full)
    with pytest.raises(OSError, match="No space left"):
        atomic_write_bytes(target, b"second")
    assert target.read_bytes() == b"first" and sorted(p.name for p in tmp_path.iterdir()) == ["state.dpb"]


def test_a_phased_agent_made_by_hand_cannot_be_saved(tmp_path: Path) -> None:
    algorithm = DPBAI(FEATURES, 60, 1.0)
    agent = PhasedAgent(algorithm.planner, SecureNoise(), np.random.default_rng(0))
    with pytest.raises(InvalidParameterError, match=r"PhasedAlgorithm\.agent"):
        agent.save(tmp_path / "x.dpb")



def test_fitted_policies_save_and_load_to_the_same_policy(tmp_path: Path) -> None:
    from dpbandits.algorithms.offline import KLLinearPolicy, KLMABPolicy, KLRLHFPolicy
    from dpbandits.algorithms.offline.baselines import (
        ExponentialMechanismMAB,
        LaplaceStatisticsGreedyMAB,
        PessimisticGreedyMAB,
        ReportNoisyMaxMAB,
    )
    from dpbandits.envs.offline import LoggedBanditData, simulate_logged_contextual, simulate_preferences

    features = np.array([[0.5, 0.1], [0.0, 0.6], [0.3, 0.3]])
    data = LoggedBanditData([0] * 20 + [1] * 25 + [2] * 30, [1, 0, 1] * 25, 3, 1.0)
    policies = [
        KLMABPolicy(n_arms=3, eta=0.5, beta0=0.1, reference=[0.2, 0.3, 0.5]).fit(data),
        KLLinearPolicy(eta=1.0, beta0=0.5, ridge=2.0).fit(simulate_logged_contextual([0.3, 0.2], 200, rng=1)),
        KLRLHFPolicy(eta=1.0, beta0=0.5, ridge=2.0, norm_bound=1.0).fit(simulate_preferences([0.3, 0.2], 200, rng=2)),
        ExponentialMechanismMAB(3, epsilon=1.0, min_count=20).fit(data),
        ReportNoisyMaxMAB(3, epsilon=1.0, min_count=20).fit(data),
        LaplaceStatisticsGreedyMAB(3, epsilon=1.0, min_count=20).fit(data),
        PessimisticGreedyMAB(3).fit(data),
    ]
    for index, policy in enumerate(policies):
        loaded = type(policy).load(policy.save(tmp_path / f"policy{index}.dpb"))
        assert repr(loaded) == repr(policy)
        assert loaded.privacy == policy.privacy
        if hasattr(policy, "probabilities"):
            args = (features,) if isinstance(policy, KLLinearPolicy | KLRLHFPolicy) else ()
            np.testing.assert_array_equal(loaded.probabilities(*args), policy.probabilities(*args))
    greedy = policies[5]
    loaded = LaplaceStatisticsGreedyMAB.load(tmp_path / "policy5.dpb")
    np.testing.assert_array_equal(loaded.noisy_utilities_, greedy.noisy_utilities_)  # the release, not redrawn


def test_to_bytes_is_the_file_format_and_from_bytes_continues(tmp_path: Path) -> None:
    """The bytes API holds exactly what save() writes (one format), and from_bytes continues the agent."""
    from dpbandits._core.persistence import Persistable, read_state

    agent = DPEBSElimination(4, horizon=40, epsilon=1.0, rng=3, insecure_seeded_noise=True)
    for step in range(7):
        _dueling_step(agent, step)
    data = agent.to_bytes()
    path = agent.save(tmp_path / "agent.npz")
    _, from_bytes, _ = read_state(data)
    _, from_file, _ = read_state(path)
    assert from_file.pop("generation") == from_bytes.pop("generation") + 1  # each is a save (issue 23)
    assert from_bytes == from_file
    copy = Persistable.from_bytes(data)
    assert isinstance(copy, DPEBSElimination)
    assert [_dueling_step(copy, s) for s in range(7, 20)] == [_dueling_step(agent, s) for s in range(7, 20)]
    with pytest.raises(DataFormatError, match="holds a DPEBSElimination, not a RUCB"):
        RUCB.from_bytes(data)
