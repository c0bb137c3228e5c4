"""Loading under a ledger pays what the rest of the run releases, and no path continues a saved state twice for free.

Issue 32, defects 4 and 5: an agent built without a ledger (or under another) and loaded under
ledger B ran its whole run while B stayed at 0; a saved state could be continued twice for free by
loading it without the ledger and re-saving it (``to_bytes``), by editing an unsigned file's lineage or
generation, by rewriting it as format 1, or through copies of a loaded agent; copies of one agent run
on different data collided on (lineage, generation) and refused a legitimate load.
"""

from __future__ import annotations

import copy
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from statefiles import edit, quietly

from dpbandits._core.errors import ForkRefusedError, PrivacyBudgetExceededError
from dpbandits._core.persistence import Persistable
from dpbandits.algorithms.bai.dp_bai import DPBAI
from dpbandits.algorithms.dueling.dp_ebs_elimination import DPEBSElimination
from dpbandits.algorithms.dueling.goptimal_dpdb import GOptimalDPDB
from dpbandits.algorithms.dueling.ldp_ebs_elimination import LDPEBSElimination
from dpbandits.algorithms.offline import KLMABPolicy
from dpbandits.privacy.accounting import CONTINUATION_WINDOW, Accountant
from dpbandits.privacy.counters import BinaryTreeCounter
from dpbandits.privacy.ledger_store import DurableAccountant

KEY = bytes(range(16, 48))

AGENTS: dict[str, Callable[..., Any]] = {
    "dp-bai agent": lambda accountant=None: DPBAI(np.eye(3), 30, 1.0).agent(accountant=accountant),
    "dp-ebs-elimination": lambda accountant=None: DPEBSElimination(3, 30, 1.0, accountant=accountant),
    "ldp-ebs-elimination": lambda accountant=None: LDPEBSElimination(3, 30, 1.0, accountant=accountant),
    "goptimal-dpdb": lambda accountant=None: GOptimalDPDB(np.eye(3), 60, 1.0, accountant=accountant),
    "binary-tree-counter": lambda accountant=None: BinaryTreeCounter(16, 1.0, accountant=accountant),
}


def _load(obj: Any, data: bytes, **options: Any) -> Any:
    return type(obj).from_bytes(data, **options)


def _run_price(obj: Any) -> float:
    return float(obj.privacy.epsilon)


# ------------------------------------------------------------------------------ defect 4
@pytest.mark.parametrize("name", sorted(AGENTS))
def test_an_agent_built_without_a_ledger_pays_its_run_once_when_loaded_under_one(name: str) -> None:
    agent = AGENTS[name]()
    ledger = Accountant(epsilon_budget=10.0)
    loaded = _load(agent, agent.to_bytes(), accountant=ledger)
    assert ledger.spent().epsilon == pytest.approx(_run_price(agent))
    (entry,) = ledger.entries()
    assert entry.lineage == agent.lineage and "the rest of its run" in entry.label
    _load(loaded, loaded.to_bytes(), accountant=ledger)  # its next save, under the same ledger: paid already
    assert ledger.spent().epsilon == pytest.approx(_run_price(agent)) and len(ledger.entries()) == 1


@pytest.mark.parametrize("name", sorted(AGENTS))
def test_an_agent_built_under_a_ledger_pays_again_only_under_another(name: str) -> None:
    built_under = Accountant(epsilon_budget=10.0)
    agent = AGENTS[name](accountant=built_under)
    assert built_under.entries()[0].lineage == agent.lineage
    _load(agent, agent.to_bytes(), accountant=built_under)
    assert built_under.spent().epsilon == pytest.approx(_run_price(agent))  # held already: not twice
    other = Accountant(epsilon_budget=10.0)
    _load(agent, agent.to_bytes(), accountant=other)
    assert other.spent().epsilon == pytest.approx(_run_price(agent))


def test_a_load_over_budget_is_refused_and_records_nothing(tmp_path: Path) -> None:
    agent = DPEBSElimination(3, 30, 1.0)
    ledger = DurableAccountant.create(tmp_path / "ledger.db", "small", epsilon_budget=0.5)
    with pytest.raises(PrivacyBudgetExceededError, match="rest of its run"):
        DPEBSElimination.from_bytes(agent.to_bytes(), accountant=ledger)
    assert ledger.entries() == () and ledger.continuations() == {}
    ledger.close()


def test_a_finished_run_loads_for_free() -> None:
    counter = BinaryTreeCounter(4, 1.0)
    for value in (1, 0, 1, 1):
        counter.update(value)
    algorithm = DPBAI(np.eye(3), 12, 1.0)
    agent = algorithm.agent()
    while not agent.done:
        agent.tell(agent.ask(), 0.5)
    ledger = Accountant(epsilon_budget=10.0)
    BinaryTreeCounter.from_bytes(counter.to_bytes(), accountant=ledger)
    type(agent).from_bytes(agent.to_bytes(), accountant=ledger)
    assert ledger.entries() == ()  # nothing left to release: what it holds was released already


def test_a_binary_tree_counter_spends_its_guarantee_when_built() -> None:
    with pytest.raises(PrivacyBudgetExceededError, match="BinaryTreeCounter"):
        BinaryTreeCounter(8, 1.0, accountant=Accountant(epsilon_budget=0.5))
    ledger = Accountant(epsilon_budget=1.0)
    counter = BinaryTreeCounter(8, 1.0, sensitivity=2.0, accountant=ledger)
    assert ledger.spent().epsilon == 1.0 and ledger.entries()[0].unit == counter.privacy.unit
    BinaryTreeCounter(8, float("inf"), accountant=ledger)  # an exact counter releases nothing private
    assert len(ledger.entries()) == 1
    assert "accountant" not in counter.get_params()  # never saved


# ------------------------------------------------------------------------------ defect 5
@pytest.mark.parametrize("key", [None, KEY], ids=["unsigned", "signed"])
@pytest.mark.parametrize("resaved_first", [False, True], ids=["original-first", "resaved-first"])
def test_a_load_without_the_ledger_then_a_save_is_a_fork(key: bytes | None, resaved_first: bool) -> None:
    agent = DPEBSElimination(3, 30, 1.0)
    original = agent.to_bytes(key=key)
    resaved = DPEBSElimination.from_bytes(original, key=key).to_bytes(key=key)  # no ledger: not recorded
    ledger = Accountant(epsilon_budget=10.0)
    first, second = (resaved, original) if resaved_first else (original, resaved)
    DPEBSElimination.from_bytes(first, key=key, accountant=ledger)
    with pytest.raises(ForkRefusedError):
        DPEBSElimination.from_bytes(second, key=key, accountant=ledger)
    DPEBSElimination.from_bytes(second, key=key, accountant=ledger, on_fork="charge")
    assert ledger.spent().epsilon == pytest.approx(2.0)  # the run, then the charged fork


def test_an_unsigned_file_edited_or_rewritten_as_format_1_pays_again() -> None:
    agent = DPEBSElimination(3, 30, 1.0)
    blob = agent.to_bytes()
    ledger = Accountant(epsilon_budget=10.0)
    DPEBSElimination.from_bytes(blob, accountant=ledger)

    def new_lineage(meta: dict[str, Any], _members: dict[str, np.ndarray]) -> None:
        meta["lineage"] = "0" * 32

    def later_generation(meta: dict[str, Any], _members: dict[str, np.ndarray]) -> None:
        meta["generation"] += 5

    def as_format_1(meta: dict[str, Any], _members: dict[str, np.ndarray]) -> None:
        meta["format_version"] = 1
        del meta["lineage"], meta["generation"]

    with pytest.raises(ForkRefusedError):  # a later-looking generation is not a save of the continuation
        DPEBSElimination.from_bytes(edit(blob, later_generation), accountant=ledger)
    DPEBSElimination.from_bytes(edit(blob, new_lineage), accountant=ledger)  # another history: its run is paid
    DPEBSElimination.from_bytes(edit(blob, as_format_1), accountant=ledger)  # (a lineage of its content)
    assert ledger.spent().epsilon == pytest.approx(3.0)
    with pytest.raises(ForkRefusedError):
        DPEBSElimination.from_bytes(edit(blob, as_format_1), accountant=ledger)


def _seeded_agent() -> DPEBSElimination:
    return quietly(lambda: DPEBSElimination(3, 30, 1.0, rng=3, insecure_seeded_noise=True))


def test_copies_of_a_loaded_agent_never_continue_it_for_free() -> None:
    agent = _seeded_agent()
    ledger = Accountant(epsilon_budget=10.0)
    loaded = quietly(lambda: DPEBSElimination.from_bytes(agent.to_bytes(), accountant=ledger))
    pickled = pickle.loads(pickle.dumps(loaded))  # moved: the same history
    assert (pickled.lineage, pickled.generation) == (loaded.lineage, loaded.generation)
    deep, shallow = copy.deepcopy(loaded), copy.copy(loaded)  # second objects: histories of their own
    assert len({deep.lineage, shallow.lineage, loaded.lineage}) == 3 and deep.generation == shallow.generation == 0
    saves = [loaded.to_bytes(), pickled.to_bytes(), pickled.to_bytes()]
    quietly(lambda: DPEBSElimination.from_bytes(saves[0], accountant=ledger))
    for save in saves[1:]:  # whatever its generation, a save of the pickled twin is the same continuation
        with pytest.raises(ForkRefusedError):
            quietly(lambda save=save: DPEBSElimination.from_bytes(save, accountant=ledger))
    for twin in (deep, shallow):  # a copy loaded under the ledger pays its own run
        quietly(lambda twin=twin: DPEBSElimination.from_bytes(twin.to_bytes(), accountant=ledger))
    assert ledger.spent().epsilon == pytest.approx(3.0)


def test_copies_of_one_agent_run_on_different_data_both_load() -> None:
    template = _seeded_agent()
    ledger = Accountant(epsilon_budget=10.0)
    saved = []
    for first_wins in (True, False):  # one copy per dataset
        agent = copy.deepcopy(template)
        for _ in range(4):
            agent.tell(agent.ask(), first_wins=first_wins)
        saved.append(agent.to_bytes())
    for blob in saved:  # was: the same (lineage, generation) twice, the second refused as a fork
        quietly(lambda blob=blob: DPEBSElimination.from_bytes(blob, accountant=ledger))
    assert ledger.spent().epsilon == pytest.approx(2.0)  # each copy's run, once


def test_a_linear_history_of_checkpoints_continues_under_one_ledger(tmp_path: Path) -> None:
    ledger = DurableAccountant.create(tmp_path / "ledger.db", "chain", epsilon_budget=1.0)
    agent: Any = DPEBSElimination(3, 30, 1.0, accountant=ledger)
    for _step in range(3):
        agent.tell(agent.ask(), first_wins=True)
        agent.to_bytes()  # a checkpoint kept elsewhere (a database row): generations move on
        latest = agent.save(tmp_path / "agent.dpb", key=KEY)
        agent = DPEBSElimination.load(latest, key=KEY, accountant=ledger)  # the process restarts
        assert agent.generation > CONTINUATION_WINDOW
    assert ledger.spent().epsilon == 1.0 and len(ledger.entries()) == 1
    assert len(ledger.continuations()) == 3
    ledger.close()


def test_a_durable_ledger_refuses_a_fork_of_a_loaded_agent_from_another_handle(tmp_path: Path) -> None:
    # the durable view reads the latest continuation from its table: without it every load looks like a
    # lineage's first continuation and each fork below would be accepted for free
    path = tmp_path / "ledger.db"
    ledger = DurableAccountant.create(path, "forks", epsilon_budget=10.0)
    saved = DPEBSElimination(3, 30, 1.0).to_bytes()
    loaded = DPEBSElimination.from_bytes(saved, accountant=ledger)
    later = loaded.to_bytes()
    other = DurableAccountant(path, "forks")  # another process opening the same ledger
    with pytest.raises(ForkRefusedError):
        DPEBSElimination.from_bytes(saved, accountant=other)  # the same file again
    DPEBSElimination.from_bytes(later, accountant=other)  # the continuation's own later save: linear
    with pytest.raises(ForkRefusedError):
        DPEBSElimination.from_bytes(later, accountant=ledger)  # ... once
    assert ledger.spent().epsilon == pytest.approx(1.0) and len(ledger.continuations()) == 2
    other.close()
    ledger.close()


def test_a_policy_pays_per_sample_not_when_loaded() -> None:
    policy = KLMABPolicy(3, eta=0.5, beta0=0.1, min_count=10).fit([0] * 10 + [1] * 10 + [2] * 10, [1.0] * 30)
    assert policy._run_charge() is None and isinstance(policy, Persistable)
    ledger = Accountant()
    loaded = KLMABPolicy.from_bytes(policy.to_bytes(), accountant=ledger)
    assert ledger.entries() == ()
    loaded.sample(accountant=ledger)
    assert ledger.spent().epsilon == pytest.approx(policy.sample_guarantee().epsilon)
