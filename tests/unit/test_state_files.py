"""State files that cannot lie or run code (issue 24) and the lineage of saved objects (issue 23).

Each test edits a saved file as an attacker or a clumsy user would and checks that ``load`` either
refuses it with one :class:`DataFormatError` naming the field and the rule, or builds an object
whose every derived value (probabilities, guarantees) comes from its validated statistics.
"""

from __future__ import annotations

import io
import json
import os
import re
import stat
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from statefiles import array_of, edit, quietly, state, unpack

from dpbandits._core.errors import (
    DataFormatError,
    ForkRefusedError,
    InvalidParameterError,
    UnsafeTargetError,
)
from dpbandits._core.persistence import Persistable
from dpbandits.algorithms.dueling.dp_ebs_elimination import DPEBSElimination
from dpbandits.algorithms.dueling.interleaved_filter import InterleavedFilter
from dpbandits.algorithms.dueling.rucb import RUCB
from dpbandits.algorithms.offline import KLMABPolicy
from dpbandits.privacy.accounting import Accountant
from dpbandits.privacy.counters import BinaryTreeCounter

KEY = b"0123456789abcdef-a-test-key"


def _rucb() -> RUCB:
    agent = RUCB(3, 50, rng=1)
    for step in range(6):
        agent.tell(agent.ask(), first_wins=step % 2 == 0)
    return agent


def _kl_policy() -> KLMABPolicy:
    return KLMABPolicy(n_arms=3, eta=0.5, beta0=0.1).fit([0] * 20 + [1] * 25 + [2] * 30, [1, 0, 1] * 25)


# ----------------------------------------------------------------------------- no name selects code
@pytest.mark.parametrize("name", ["seed", "test", "default_rng", "Generator"])
def test_a_file_naming_a_numpy_random_function_is_refused_and_nothing_is_called(
        name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    called: list[str] = []
    for function in ("seed", "test"):
        monkeypatch.setattr(np.random, function, lambda *a, _f=function, **k: called.append(_f), raising=False)
    data = quietly(lambda: DPEBSElimination(3, 30, 1.0, rng=1, insecure_seeded_noise=True).to_bytes())

    def name_a_function(meta: dict[str, Any], members: dict[str, np.ndarray]) -> None:
        noise = state(meta)["_counters"]["state"]["__dict__"]["_noise"][0]["__noise__"]
        noise["generator"] = {"__generator__": {"__dict__": {"bit_generator": name}}}

    with pytest.raises(DataFormatError, match=f"bit generator '{name}'; only"):
        quietly(lambda: DPEBSElimination.from_bytes(edit(data, name_a_function)))
    assert called == []


@pytest.mark.parametrize("path", ["os.system", "dpbandits.cli.main", "dpbandits.envs.kernel.StationaryKernel",
                                  "dpbandits._core.persistence.Persistable.__init_subclass__", "builtins.eval"])
def test_a_file_naming_a_class_outside_the_registry_is_refused(path: str) -> None:
    data = BinaryTreeCounter(8, 1.0).to_bytes()
    with pytest.raises(DataFormatError, match="not a persistable class of this dpbandits"):
        BinaryTreeCounter.from_bytes(edit(data, lambda meta, _: meta.update({"class": path})))


def test_a_file_cannot_swap_an_agent_for_a_broken_variant_of_the_library() -> None:
    """The privacy contract's deliberately broken subclasses (halved noise, ...) are not loadable."""
    __import__("dpbandits.audit.cases.dueling")
    data = BinaryTreeCounter(8, 1.0).to_bytes()

    def broken_bank(meta: dict[str, Any], members: dict[str, np.ndarray]) -> None:
        state(meta)["_bank"]["__object__"] = "dpbandits.audit.cases.dueling.FloatAdditionCounterBank"

    with pytest.raises(DataFormatError, match="not a persistable class of this dpbandits"):
        BinaryTreeCounter.from_bytes(edit(data, broken_bank))
    from dpbandits.algorithms.dueling.goptimal_dpdb import GOptimalDPDB

    agent = GOptimalDPDB(np.eye(3), 50, 1.0).to_bytes()
    halved = edit(agent, lambda meta, _: meta.update({"class": "dpbandits.audit.cases.dueling.HalvedNoise"}))
    with pytest.raises(DataFormatError, match="not a persistable class of this dpbandits"):
        GOptimalDPDB.from_bytes(halved)  # a subclass of GOptimalDPDB, with half the noise


def test_a_file_naming_an_unregistered_dataclass_is_refused() -> None:
    data = DPEBSElimination(3, 30, 1.0).to_bytes()

    def smuggle(meta: dict[str, Any], members: dict[str, np.ndarray]) -> None:
        state(meta)["_pointer"] = {"__dataclass__": "dpbandits.privacy.guarantees.PureDP", "fields": {}}

    with pytest.raises(DataFormatError, match="not a saved dataclass"):
        DPEBSElimination.from_bytes(edit(data, smuggle))


# ----------------------------------------------------------------------------- nothing decoded is trusted
def test_kl_policy_counts_times_100_print_the_guarantee_of_the_counts_it_samples_from() -> None:
    policy = _kl_policy()
    data = policy.to_bytes()
    hundredfold = edit(data, lambda meta, members: members.update(
        {array_of(meta, members, "counts_"): members[array_of(meta, members, "counts_")] * 100}))
    loaded = KLMABPolicy.from_bytes(hundredfold)
    fresh = KLMABPolicy(n_arms=3, eta=0.5, beta0=0.1)._fit(policy.counts_ * 100, policy.reward_sums_,
                                                           policy.reward_minima_, policy.reward_maxima_)
    np.testing.assert_array_equal(loaded.probabilities(), fresh.probabilities())  # sampled from
    assert loaded.privacy == fresh.privacy  # printed
    assert loaded.privacy.epsilon < policy.privacy.epsilon  # and it is the hundredfold counts' guarantee


def test_stale_log_probabilities_in_a_file_are_ignored_for_those_of_its_counts() -> None:
    policy = _kl_policy()

    def stale(meta: dict[str, Any], members: dict[str, np.ndarray]) -> None:
        members["a9"] = np.log(np.full(7, 1 / 7))  # 7 probabilities for K = 3, as an older file holds them
        state(meta)["log_probabilities_"] = {"__array__": "a9"}

    loaded = KLMABPolicy.from_bytes(edit(policy.to_bytes(), stale))
    np.testing.assert_array_equal(loaded.probabilities(), policy.probabilities())
    assert set(loaded.sample(size=200, insecure_seeded_noise=True, rng=0).tolist()) <= {0, 1, 2}


def test_seven_counts_for_three_arms_are_refused_naming_the_field() -> None:
    def seven(meta: dict[str, Any], members: dict[str, np.ndarray]) -> None:
        members[array_of(meta, members, "counts_")] = np.arange(7, dtype=np.int64)

    with pytest.raises(DataFormatError, match=r"counts_ must be an array of shape \(3,\)"):
        KLMABPolicy.from_bytes(edit(_kl_policy().to_bytes(), seven))


def test_a_state_key_dunder_dict_is_refused() -> None:
    def dunder(meta: dict[str, Any], members: dict[str, np.ndarray]) -> None:
        state(meta)["__dict__"] = {"__dict__": {"n_arms": 1000}}

    with pytest.raises(DataFormatError, match="__dict__ is not a field of this class"):
        RUCB.from_bytes(edit(_rucb().to_bytes(), dunder))


def test_rucb_with_nan_outcomes_is_refused() -> None:
    def nan_outcomes(meta: dict[str, Any], members: dict[str, np.ndarray]) -> None:
        name = array_of(meta, members, "outcomes")
        members[name] = np.full(members[name].shape, np.nan)

    with pytest.raises(DataFormatError, match=r"outcomes must be an array of dtype uint8"):
        RUCB.from_bytes(edit(_rucb().to_bytes(), nan_outcomes))


def test_dp_ebs_with_negative_time_is_refused() -> None:
    with pytest.raises(DataFormatError, match=r"field time must be an integer in \[0, 30\]; got -5"):
        DPEBSElimination.from_bytes(edit(DPEBSElimination(3, 30, 1.0).to_bytes(),
                                         lambda meta, _: state(meta).update({"time": -5})))


def test_a_tree_counter_with_its_time_reset_is_refused_and_never_releases_past_its_horizon() -> None:
    counter = BinaryTreeCounter(16, 1.0, integer=True)
    for _ in range(16):
        counter.update(1)
    data = counter.to_bytes()

    def reset(meta: dict[str, Any], members: dict[str, np.ndarray]) -> None:
        state(meta)["_bank"]["state"]["__dict__"]["time"] = 0

    with pytest.raises(DataFormatError, match="binary decomposition of time"):
        BinaryTreeCounter.from_bytes(edit(data, reset))
    loaded = BinaryTreeCounter.from_bytes(data)
    with pytest.raises(Exception, match="already released horizon=16"):
        loaded.update(1)


@pytest.mark.parametrize("damage, match", [
    (lambda meta, _: state(meta).pop("time"), "field time is missing"),  # was a raw KeyError
    (lambda meta, _: meta["params"]["__dict__"].update({"n_arms": "three"}), "parameters of RUCB refused"),  # TypeError
    (lambda meta, _: meta["params"]["__dict__"].update({"horizon_": 3}), "unknown parameter 'horizon_'"),
    (lambda meta, _: meta["params"]["__dict__"].pop("alpha"), "missing parameter 'alpha'"),
    (lambda meta, _: state(meta).update({"asked": 7}), r"field asked must be"),
    (lambda meta, _: meta.update({"state": [1, 2]}), "state must be a record"),
    (lambda meta, _: meta.update({"lineage": "../../etc"}), "lineage must be 32 lowercase hex digits"),
    (lambda meta, _: meta.update({"generation": -1}), "generation must be an integer >= 0"),
    (lambda meta, _: meta.update({"extra": 1}), "unknown 'extra'"),
])
def test_damaged_fields_give_one_data_format_error(damage: Any, match: str) -> None:
    with pytest.raises(DataFormatError, match=match):
        RUCB.from_bytes(edit(_rucb().to_bytes(), damage))


def test_compressed_and_deeply_nested_files_are_refused() -> None:
    meta, members = unpack(_rucb().to_bytes())
    buffer = io.BytesIO()
    np.savez_compressed(buffer, __meta__=np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8), **members)
    with pytest.raises(DataFormatError, match="uncompressed members only"):  # a zip bomb cannot fill memory
        RUCB.from_bytes(buffer.getvalue())
    nested: list[Any] = []
    for _ in range(900):
        nested = [nested]
    with pytest.raises(DataFormatError, match="nested too deeply"):
        RUCB.from_bytes(edit(_rucb().to_bytes(), lambda meta, _: state(meta).update({"_asked": nested})))


def test_damage_that_failed_at_first_use_is_refused_at_load() -> None:
    agent = InterleavedFilter(4, 100, rng=1)
    for step in range(5):
        agent.tell(agent.ask(), first_wins=step % 3 == 0)
    data = agent.to_bytes()
    with pytest.raises(DataFormatError, match="_position"):  # was an IndexError at the next ask()
        InterleavedFilter.from_bytes(edit(data, lambda meta, _: state(meta).update({"_position": 3})))
    with pytest.raises(DataFormatError, match="remaining"):  # was an IndexError / ZeroDivisionError
        InterleavedFilter.from_bytes(edit(data, lambda meta, members: members.update(
            {array_of(meta, members, "remaining"): np.array([1, 1, 1], dtype=np.int64)})))


def test_secure_noise_cannot_be_swapped_for_seeded_noise_by_a_file() -> None:
    seeded = quietly(lambda: DPEBSElimination(3, 30, 1.0, rng=1, insecure_seeded_noise=True).to_bytes())
    secure = DPEBSElimination(3, 30, 1.0).to_bytes()

    def use_seeded_counters(meta: dict[str, Any], members: dict[str, np.ndarray]) -> None:
        seeded_meta, _ = __import__("statefiles").unpack(seeded)
        state(meta)["_counters"] = state(seeded_meta)["_counters"]

    with pytest.raises(DataFormatError, match="_counters"):
        quietly(lambda: DPEBSElimination.from_bytes(edit(secure, use_seeded_counters)))


def test_unknown_load_arguments_are_an_error_not_dropped(tmp_path: Path) -> None:
    path = _rucb().save(tmp_path / "rucb.dpb")
    with pytest.raises(InvalidParameterError, match="unexpected argument 'horizon'"):
        RUCB.load(path, horizon=10)
    with pytest.raises(InvalidParameterError, match="unexpected argument 'rng'"):
        Persistable.from_bytes(path.read_bytes(), rng=3)
    with pytest.raises(InvalidParameterError, match="on_fork must be one of"):
        RUCB.load(path, on_fork="ignore")


# ----------------------------------------------------------------------------- writes respect the path
def test_save_refuses_a_symlink_and_leaves_it_and_its_target(tmp_path: Path) -> None:
    target = tmp_path / "real.dpb"
    target.write_bytes(b"old")
    link = tmp_path / "link.dpb"
    link.symlink_to(target)
    with pytest.raises(UnsafeTargetError, match="is a symbolic link; refusing to replace it"):
        _rucb().save(link)
    assert link.is_symlink() and target.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.dpb", "real.dpb"]  # no temporary left


def test_save_refuses_a_directory_a_fifo_and_a_device(tmp_path: Path) -> None:
    (tmp_path / "dir").mkdir()
    os.mkfifo(tmp_path / "fifo")
    targets = {"dir": "a directory", "fifo": "a FIFO"}
    if os.geteuid() == 0:  # as root a device node can be made (the issue's /dev/full case)
        os.mknod(tmp_path / "device", 0o600 | stat.S_IFCHR, os.stat("/dev/null").st_rdev)
        targets["device"] = "a device"
    for name, kind in targets.items():
        with pytest.raises(UnsafeTargetError, match=f"is {kind}; refusing"):
            _rucb().save(tmp_path / name)
    assert stat.S_ISFIFO(os.lstat(tmp_path / "fifo").st_mode) and (tmp_path / "dir").is_dir()
    if "device" in targets:
        assert stat.S_ISCHR(os.lstat(tmp_path / "device").st_mode)
    with pytest.raises(DataFormatError, match="not a regular file"):
        RUCB.load(tmp_path / "fifo")  # and reading one does not block or fill memory


# ----------------------------------------------------------------------------- integrity keys
def test_a_signed_file_loads_only_with_its_key(tmp_path: Path) -> None:
    agent = _rucb()
    path = agent.save(tmp_path / "signed.dpb", key=KEY)
    assert RUCB.load(path, key=KEY).time == agent.time
    with pytest.raises(DataFormatError, match=r"signed .*pass its key"):
        RUCB.load(path)
    with pytest.raises(DataFormatError, match="integrity tag does not match"):
        RUCB.load(path, key=b"another key of 16+ bytes")
    flipped = bytearray(path.read_bytes())
    flipped[-40] ^= 1
    with pytest.raises(DataFormatError, match="integrity tag does not match"):
        RUCB.from_bytes(bytes(flipped), key=KEY)
    with pytest.raises(DataFormatError, match="carries no integrity tag"):
        RUCB.from_bytes(agent.to_bytes(), key=KEY)
    blob = agent.to_bytes(key=KEY)
    assert RUCB.from_bytes(blob, key=KEY).time == agent.time
    with pytest.raises(InvalidParameterError, match="at least 16 bytes"):
        agent.to_bytes(key=b"short")


# ----------------------------------------------------------------------------- lineage and forks
def test_lineage_is_kept_and_generation_counts_saves(tmp_path: Path) -> None:
    agent = _rucb()
    assert len(agent.lineage) == 32 and agent.generation == 0
    loaded = RUCB.load(agent.save(tmp_path / "a.dpb"))
    assert (loaded.lineage, loaded.generation, agent.generation) == (agent.lineage, 1, 1)
    again = RUCB.from_bytes(loaded.to_bytes())
    assert (again.lineage, again.generation) == (agent.lineage, 2)
    assert RUCB(3, 50, rng=1).lineage != agent.lineage


def test_a_format_1_file_loads_through_the_same_checks_with_a_content_lineage() -> None:
    policy = _kl_policy()

    def as_format_1(meta: dict[str, Any], members: dict[str, np.ndarray]) -> None:
        meta["format_version"] = 1
        del meta["lineage"], meta["generation"]
        members["a9"] = np.log(np.full(7, 1 / 7))  # version 1 saved the derived log-probabilities too
        state(meta)["log_probabilities_"] = {"__array__": "a9"}

    old = edit(policy.to_bytes(), as_format_1)
    first, second = KLMABPolicy.from_bytes(old), KLMABPolicy.from_bytes(old)
    np.testing.assert_array_equal(first.probabilities(), policy.probabilities())
    assert first.lineage == second.lineage and first.generation == 0  # the same file: the same lineage
    with pytest.raises(DataFormatError, match="counts_ is missing"):
        KLMABPolicy.from_bytes(edit(old, lambda meta, _: state(meta).pop("counts_")))


def test_a_saved_state_continued_twice_is_a_fork_refused_or_charged() -> None:
    agent = DPEBSElimination(3, 30, 1.0)
    blob = agent.to_bytes()
    accountant = Accountant(epsilon_budget=10.0)
    DPEBSElimination.from_bytes(blob, accountant=accountant)
    with pytest.raises(ForkRefusedError):
        DPEBSElimination.from_bytes(blob, accountant=accountant)
    before = accountant.spent().epsilon
    DPEBSElimination.from_bytes(blob, accountant=accountant, on_fork="charge")
    assert accountant.spent().epsilon == pytest.approx(before + agent.privacy.epsilon)
    with pytest.raises(InvalidParameterError, match="no privacy guarantee to charge"):
        RUCB.from_bytes(_rucb().to_bytes(), accountant=accountant, on_fork="charge")


# ----------------------------------------------------------------------------- valid states all load
@pytest.mark.parametrize("name", sorted(__import__("test_persistence").AGENTS))
def test_every_state_an_agent_reaches_passes_its_schema(name: str) -> None:
    """Saved at many points of a run (across phases, eliminations, restarts), every state loads and continues."""
    from test_persistence import AGENTS

    factory, step, n_steps = AGENTS[name]
    original = quietly(factory)
    for t in range(n_steps):
        if t % max(n_steps // 12, 1) == 0:
            blob = original.to_bytes()
            first, second = (quietly(lambda b=blob: Persistable.from_bytes(b)) for _ in range(2))
            ahead = range(t, min(t + 3, n_steps))
            assert [step(first, s) for s in ahead] == [step(second, s) for s in ahead]
        step(original, t)


def test_a_constructor_forwarding_options_to_its_base_loads_them_back() -> None:
    """LDP-EBS forwards **options (opponent, ...) to DP-EBS: a file with them loads; an unknown name does not."""
    from dpbandits import LDPEBSElimination

    agent = LDPEBSElimination(n_arms=4, horizon=50, epsilon=1.0, opponent="without_self")
    loaded = LDPEBSElimination.from_bytes(agent.to_bytes())
    assert loaded.get_params()["opponent"] == "without_self"
    assert loaded.ask() == agent.ask()
    blob = LDPEBSElimination(n_arms=4, horizon=50, epsilon=1.0).to_bytes()
    with pytest.raises(DataFormatError, match="unknown parameter 'colour'"):
        LDPEBSElimination.from_bytes(edit(blob, lambda meta, _: meta["params"]["__dict__"].update(colour=1)))


@pytest.mark.parametrize("damage", ["newer zip version", "encrypted member"])
def test_a_damaged_zip_directory_is_one_data_format_error(damage: str) -> None:
    """One flipped byte of the zip directory: a 'newer' zip version (NotImplementedError) or a member
    flagged as encrypted (RuntimeError) came out of load as raw exceptions."""
    raw = bytearray(_rucb().to_bytes())
    entry = raw.index(b"PK\x01\x02")  # the first central directory entry (the __meta__ member)
    if damage == "newer zip version":
        raw[entry + 6] = 0xFF  # version needed to extract
    else:
        raw[entry + 8] |= 1  # general purpose flag bit 0: encrypted
    with pytest.raises(DataFormatError, match=r"not a dpbandits state file|damaged state file member"):
        RUCB.from_bytes(bytes(raw))


def _goptimal() -> Any:
    from dpbandits.algorithms.dueling.goptimal_dpdb import GOptimalDPDB

    features = np.array([[1.0, 0.0], [0.0, 1.0], [0.7, 0.7], [0.9, 0.1], [0.2, 0.8]])
    agent = quietly(lambda: GOptimalDPDB(features, 300, 2.0, play_count_scale=0.01, rng=3, insecure_seeded_noise=True))
    for step in range(75):
        pair = agent.ask()
        agent.tell(pair, first_wins=(pair[0] * 7 + pair[1] * 3 + step) % 5 < 3)
    return agent


@pytest.mark.parametrize("field", ["pairs", "counts", "coordinates", "basis", "all_coordinates"])
def test_goptimal_phases_of_another_dtype_are_refused(field: str) -> None:
    """Complex play counts equal to the plan's passed the plan check (np.array_equal) and broke tell()."""
    data = quietly(lambda: _goptimal().to_bytes())

    def complex_field(meta: dict[str, Any], members: dict[str, np.ndarray]) -> None:
        name = state(meta)["phases"][0]["fields"][field]["__array__"]
        members[name] = members[name].astype(np.complex128)

    with pytest.raises(DataFormatError, match="every phase: int64 pairs"):
        quietly(lambda: Persistable.from_bytes(edit(data, complex_field)))


def test_goptimal_current_phase_floats_are_recomputed_not_read() -> None:
    agent = _goptimal()
    data = quietly(lambda: agent.to_bytes())

    def scale(meta: dict[str, Any], members: dict[str, np.ndarray]) -> None:
        name = state(meta)["phases"][-1]["fields"]["coordinates"]["__array__"]
        members[name] = members[name] * 3.0

    loaded = quietly(lambda: Persistable.from_bytes(edit(data, scale)))
    np.testing.assert_array_equal(loaded.phases[-1].coordinates, agent.phases[-1].coordinates)


def _with_member_header(data: bytes, member: str, change: Any) -> bytes:
    """``data`` with the .npy header of ``member`` rewritten by ``change(header) -> header`` (same length)."""
    import zipfile

    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as target:
        for info in source.infolist():
            raw = source.read(info.filename)
            if info.filename == f"{member}.npy":
                end = raw.index(b"\n") + 1
                header = change(raw[10:end].decode("latin1"))
                raw = raw[:10] + header.rstrip("\n").ljust(end - 11).encode("latin1") + b"\n" + raw[end:]
            target.writestr(info, raw)
    return out.getvalue()


def test_a_member_header_claiming_a_huge_shape_is_refused_before_numpy_allocates_it() -> None:
    """A header claiming shape (10¹¹,) of a 8-byte member: a raw MemoryError (or GBs allocated) at load."""
    data = _rucb().to_bytes()
    huge = _with_member_header(data, "a0", lambda header: re.sub(r"'shape': \([^)]*\)", "'shape': (100000000000,)", header))
    with pytest.raises(DataFormatError, match=r"member 'a0' claims a .* array of shape \(100000000000,\)"):
        RUCB.from_bytes(huge)
    broken = _with_member_header(data, "a0", lambda header: header.replace("{", "("))  # a TokenError in NumPy
    with pytest.raises(DataFormatError, match="damaged state file member 'a0'"):
        RUCB.from_bytes(broken)
