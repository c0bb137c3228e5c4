"""The budget contract over every algorithm that takes ``accountant=`` (issue 23, defects 1, 2, 3 and 7).

For every registered private algorithm: on adversarial neighbours, the number of releases before the
budget refuses, how the run stops, ``spent()`` and every ledger entry are identical; N threads on
one ledger, and 2 processes on one durable ledger, never make more releases than one caller alone
gets under the same budget; a saved generation continued twice under one ledger is refused, or
charged afresh; a saved agent built without a ledger and loaded under one pays the rest of its run
there, once (issue 32, defect 4). The negative controls (a per-instance ε spent as a bare event, a
loader that drops the ledger, a loader that never charges the run) must be caught.
Every registered mechanism's ``release(accountant=)`` is held to the same rule on far-apart inputs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from dpbandits.algorithms.offline import KLMABPolicy
from dpbandits.algorithms.registry import list_algorithms
from dpbandits.audit.budgets import (
    BudgetCase,
    budget_cases,
    fork_is_refused_or_charged,
    processes_never_overspend,
    registered_budget_algorithms,
    run_budget_case,
    threads_never_overspend,
)
from dpbandits.audit.contract import NeighbourPair
from dpbandits.privacy.accounting import Accountant
from dpbandits.privacy.events import LaplaceEvent, PureEvent
from dpbandits.privacy.mechanisms import list_mechanisms

PRIVATE = sorted(spec.name for spec in list_algorithms() if not spec.privacy.startswith(("none", "n/a")))
CASES = [(name, index) for name in registered_budget_algorithms() for index, _ in enumerate(budget_cases(name))]
FIRST_CORRECT = [(name, next(i for i, case in enumerate(budget_cases(name)) if not case.broken))
                 for name in registered_budget_algorithms()]


@pytest.mark.parametrize("name", PRIVATE)
def test_every_algorithm_that_spends_has_budget_cases(name: str) -> None:
    correct = [case for case in budget_cases(name) if not case.broken]
    assert correct, f"{name} takes accountant= but registers no budget case"
    assert any(pair.adversarial for case in correct for pair in case.pairs), name


@pytest.mark.parametrize(("name", "index"), CASES)
def test_budget_case_is_identical_on_neighbours_or_control_is_caught(name: str, index: int) -> None:
    report = run_budget_case(list(budget_cases(name))[index])
    assert report.as_expected, str(report)


def test_the_controls_are_registered() -> None:
    controls = {case.notes.get("control") for name in registered_budget_algorithms() for case in budget_cases(name)
                if case.broken}
    assert {"per-instance spend", "free fork", "free run"} <= controls


NOT_SAVEABLE = {"private-feature-ridge"}  # a one-shot release: nothing to save and continue


@pytest.mark.parametrize("name", sorted(set(PRIVATE) - NOT_SAVEABLE))
def test_every_saveable_algorithm_checks_forks(name: str) -> None:
    assert any(case.saved is not None for case in budget_cases(name) if not case.broken), name


@pytest.mark.parametrize(("name", "index"), CASES)
def test_every_case_of_an_agent_that_pays_its_run_when_built_checks_its_loads(name: str, index: int) -> None:
    """A case's saved object whose run is paid when built must be held to "a load pays the rest of the run, once"."""
    case = list(budget_cases(name))[index]
    if case.saved is None or case.broken:  # (the "free run" control wraps its agent)
        return
    assert case.run_charged == type(case.saved(case.pairs[0].data))._charges_run, (name, case.description)


@pytest.mark.parametrize(("name", "index"), FIRST_CORRECT)
def test_threads_never_overspend(name: str, index: int) -> None:
    case = list(budget_cases(name))[index]
    assert threads_never_overspend(case, n_threads=4) >= 1


def test_two_processes_never_overspend_a_durable_ledger(tmp_path: Path) -> None:
    assert processes_never_overspend("kl-mab", 0, tmp_path) == 9  # budget 1.7 / (Delta(10)/0.5) per sample


REPRESENTATIVES = ("dp-bai", "dp-ebs-elimination", "usca", "kl-linear")


@pytest.mark.parametrize(("name", "index"), [p for p in FIRST_CORRECT if p[0] in REPRESENTATIVES])
def test_two_processes_never_overspend_one_release_per_family(name: str, index: int, tmp_path: Path) -> None:
    assert processes_never_overspend(name, index, tmp_path) >= 1


@pytest.mark.slow
@pytest.mark.parametrize(("name", "index"), [p for p in FIRST_CORRECT if p[0] not in (*REPRESENTATIVES, "kl-mab")])
def test_two_processes_never_overspend_every_other_release(name: str, index: int, tmp_path: Path) -> None:
    assert processes_never_overspend(name, index, tmp_path) >= 1


def test_a_saved_generation_continued_twice_is_refused_or_charged() -> None:
    policy = KLMABPolicy(3, eta=0.5, beta0=0.1, min_count=10).fit([0] * 10 + [1] * 10 + [2] * 10, [1.0] * 30)
    fork_is_refused_or_charged(policy.sample_guarantee())


@pytest.mark.parametrize("name", sorted(list_mechanisms()))
def test_every_mechanism_spends_the_same_on_neighbours(name: str) -> None:
    """The mechanisms' release(accountant=) too: the ledger and the refusal point do not follow the input."""
    mechanism = list_mechanisms()[name]()
    data = mechanism.example_input()
    neighbour = data.copy()
    neighbour[0] += 1e6  # any other input: what is spent must not look at it
    delta = 0.0 if isinstance(mechanism.event, LaplaceEvent | PureEvent) else 1e-3
    probe = Accountant(delta_budget=delta)
    probe.spend(mechanism.event, count=3)
    budget = probe.spent().epsilon * (1 + 1e-9)  # three releases fit, a fourth does not
    case = BudgetCase(name, "example input vs a far-away one", [NeighbourPair("entry 0 moved", data, neighbour)],
                      lambda values, accountant: mechanism.release(values, accountant=accountant), budget,
                      delta_budget=delta)
    report = run_budget_case(case)
    assert report.as_expected, str(report)
    assert report.pairs[0].data.releases == 3 and "PrivacyBudgetExceededError" in report.pairs[0].data.stopped_by
    assert threads_never_overspend(case, n_threads=4) == 3
