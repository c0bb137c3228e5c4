"""The budget contract: what a release spends, and when it is refused, must not depend on the data.

:mod:`dpbandits.audit.contract` audits a release's *output law*. A deployed budget adds
observable channels that the output law does not cover, and this module audits them for every
algorithm that takes ``accountant=``:

* **the ledger and the refusal point** (:class:`BudgetCase`, :func:`run_budget_case`): on each
  adversarial pair of neighbouring inputs, the same releases are made under a fresh ledger with the
  same budget until it refuses. The number of releases before the refusal, how the run stopped
  (exception class and message), ``spent()`` and every recorded entry (event, count, unit,
  relation, scope, label) must be **identical** on the two inputs — any difference distinguishes
  them with certainty (empirical ε = ∞), whatever the noise. A per-instance ε spent as a bare event
  (the defect of issue 23) is the negative control.
* **threads** (:func:`threads_never_overspend`): N threads make the case's releases on one shared
  :class:`~dpbandits.privacy.accounting.Accountant` until refused; the ledger must end at or under
  the budget with exactly as many releases as one thread gets.
* **processes** (:func:`processes_never_overspend`): the same with 2 processes on one
  :class:`~dpbandits.privacy.ledger_store.DurableAccountant` (a SQLite file).
* **forks** (``BudgetCase.saved``, :func:`fork_outcome`): the algorithm's saved object (a fitted
  policy, an agent mid-run) is loaded with ``accountant=`` twice: the second continuation must be
  refused, and a charged one must cost the same on both inputs (the charge is the object's
  data-independent guarantee). :func:`fork_is_refused_or_charged` checks the same rule on the ledger
  alone (:meth:`~dpbandits.privacy.accounting.Accountant.record_continuation`).
* **loads** (:func:`load_outcome`): the saved object, built without a ledger, is loaded under a
  fresh one, then its next save is loaded under the same ledger. An agent whose run is one release
  paid when it is built (``BudgetCase.run_charged``) must pay the rest of its run there, once: the
  first load spends what one release of the case spends on a fresh ledger, the second nothing more.
  (An object that pays per release, a policy, has nothing to pay when loaded.)

Cases are registered per algorithm name by the modules of :mod:`dpbandits.audit.cases`
(:func:`register_budget_cases`) and built lazily.
"""

from __future__ import annotations

import math
import multiprocessing
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dpbandits._core.errors import ForkRefusedError, InvalidParameterError, PrivacyBudgetExceededError
from dpbandits.audit.contract import CaseRegistry, NeighbourPair
from dpbandits.privacy.accounting import Accountant
from dpbandits.privacy.guarantees import Guarantee

__all__ = [
    "BUDGET_CASES",
    "BudgetCase",
    "BudgetOutcome",
    "BudgetPairReport",
    "BudgetReport",
    "ForkOutcome",
    "LoadOutcome",
    "budget_cases",
    "fork_is_refused_or_charged",
    "fork_outcome",
    "load_outcome",
    "processes_never_overspend",
    "register_budget_cases",
    "registered_budget_algorithms",
    "run_budget_case",
    "run_releases",
    "threads_never_overspend",
]

Release = Callable[[Any, Accountant], Any]
"""``release(input, accountant)``: one release on ``input``, recorded in ``accountant`` before any draw."""

_SLACK = 1e-9  # relative float slack on "spent <= budget"


@dataclass(frozen=True)
class BudgetCase:
    """One audited budget configuration of a registered algorithm.

    Attributes
    ----------
    algorithm : str
        Registry name.
    description : str
    pairs : sequence of NeighbourPair
        Adversarial neighbours (the least-covered record removed, a record of an unseen arm added,
        rewards at their bounds, a label flipped...).
    release : callable
        ``release(input, accountant)``; it may fit or build what it needs from the input (fitting
        is part of what must not leak).
    epsilon_budget : float
        The budget each run starts with.
    delta_budget : float, default 0
    max_releases : int, default 64
        A run stops there if the budget never refuses (then the case is mis-sized, but the two
        inputs must still agree).
    saved : callable, optional
        ``saved(input)``: the algorithm's saveable object (a fitted policy, an agent mid-run) on the
        input, for the fork check: saved once and loaded three times under one ledger, the second
        load must be refused and a charged third one must cost the same on both inputs.
    load_options : dict
        What ``load`` needs passed again (the unsaved callables, e.g. USCA's ``context_generator``).
    run_charged : bool, default False
        The saved object's run is one release paid when it is built (an ask/tell agent): loading it
        under a ledger must pay what one release of the case pays, once (:func:`load_outcome`).
    broken : bool, default False
        A negative control: the audit must tell the inputs apart (or a load must be free).
    notes : dict
        ``{"control": ...}`` on negative controls.
    """

    algorithm: str
    description: str
    pairs: Sequence[NeighbourPair]
    release: Release
    epsilon_budget: float
    delta_budget: float = 0.0
    max_releases: int = 64
    saved: Callable[[Any], Any] | None = None
    load_options: dict[str, Any] = field(default_factory=dict)
    run_charged: bool = False
    broken: bool = False
    notes: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.pairs:
            raise InvalidParameterError(f"budget case {self.description!r} needs at least one neighbour pair")

    def accountant(self) -> Accountant:
        """A fresh in-memory ledger with the case's budget."""
        return Accountant(epsilon_budget=self.epsilon_budget, delta_budget=self.delta_budget)


@dataclass(frozen=True)
class BudgetOutcome:
    """What an observer of the budget sees of one run: releases made, how it stopped, the ledger."""

    releases: int
    stopped_by: str
    spent: tuple[float, float]
    entries: tuple[tuple[Any, ...], ...]

    def __str__(self) -> str:
        return (f"{self.releases} releases, spent eps={self.spent[0]:.6g} delta={self.spent[1]:.3g}, "
                f"stopped by {self.stopped_by}")


def run_releases(release: Release, data: Any, accountant: Accountant, max_releases: int) -> BudgetOutcome:
    """Release on ``data`` until the ledger refuses (or any library error, or ``max_releases``)."""
    from dpbandits._core.errors import DPBanditsError

    releases, stopped_by = 0, f"max_releases={max_releases}"
    while releases < max_releases:
        try:
            release(data, accountant)
        except DPBanditsError as error:  # a refusal, or a data-dependent failure: both are observable
            stopped_by = f"{type(error).__name__}: {error}"
            break
        releases += 1
    spent = accountant.spent()
    entries = tuple((repr(e.event), e.count, e.unit, e.neighbouring, e.scope, e.label) for e in accountant.entries())
    return BudgetOutcome(releases, stopped_by, (spent.epsilon, spent.delta), entries)


@dataclass(frozen=True)
class ForkOutcome:
    """A saved object loaded three times under one ledger: what the second (fork) and a charged third did."""

    second: str
    charged: str

    @property
    def free(self) -> bool:
        """Whether the fork was accepted without a charge (or the saved state did not load at all)."""
        return self.second == "continued" or self.second.startswith("first load failed")


def fork_outcome(obj: Any, **load_options: Any) -> ForkOutcome:
    """Save ``obj`` once; load it under one ledger, again (a fork), and again with ``on_fork="charge"``."""
    from dpbandits._core.errors import DPBanditsError

    blob = obj.to_bytes()
    cls = type(obj)
    accountant = Accountant()
    try:
        cls.from_bytes(blob, accountant=accountant, **load_options)
    except DPBanditsError as error:  # the saved state does not load at all: no fork to check
        return ForkOutcome(f"first load failed ({type(error).__name__}: {error})", "not loaded")
    try:
        cls.from_bytes(blob, accountant=accountant, **load_options)
        second = "continued"
    except DPBanditsError as error:
        second = type(error).__name__
    try:
        cls.from_bytes(blob, accountant=accountant, on_fork="charge", **load_options)
        spent = accountant.spent()
        charged = f"charged: spent eps={spent.epsilon:.12g} delta={spent.delta:.3g}"
    except DPBanditsError as error:  # an object without a data-independent guarantee cannot be charged
        charged = f"not chargeable ({type(error).__name__})"
    return ForkOutcome(second, charged)


@dataclass(frozen=True)
class LoadOutcome:
    """A saved object (built without a ledger) loaded under a fresh ledger, then its next save under the same one.

    ``first`` and ``again`` are ε spent after the first and after the second load (or the reason
    the object did not load); ``expected`` is what the first load must spend: one release of the
    case on a fresh ledger for an agent whose run is paid when built, 0 for an object that pays per
    release.
    """

    first: float | str
    again: float | str
    expected: float

    @property
    def free(self) -> bool:
        """Whether the load paid other than the rest of the run once (less, more, twice, or not loaded)."""
        if isinstance(self.first, str) or isinstance(self.again, str):
            return True
        return not (math.isclose(self.first, self.expected, rel_tol=1e-9, abs_tol=1e-12)
                    and math.isclose(self.again, self.first, rel_tol=1e-9, abs_tol=1e-12))

    def __str__(self) -> str:
        return f"load spent {self.first} then {self.again} (expected {self.expected:.12g})"


def load_outcome(obj: Any, expected: float, *, delta_budget: float = 0.0, **load_options: Any) -> LoadOutcome:
    """Load ``obj``'s saved state under a fresh ledger, then the loaded object's next save under the same ledger."""
    from dpbandits._core.errors import DPBanditsError

    ledger = Accountant(delta_budget=delta_budget)
    cls = type(obj)
    try:
        loaded = cls.from_bytes(obj.to_bytes(), accountant=ledger, **load_options)
        first = ledger.spent().epsilon
    except DPBanditsError as error:
        return LoadOutcome(f"first load failed ({type(error).__name__}: {error})", "not loaded", expected)
    try:
        cls.from_bytes(loaded.to_bytes(), accountant=ledger, **load_options)
        again: float | str = ledger.spent().epsilon
    except DPBanditsError as error:  # a legitimate next save must load
        again = f"second load failed ({type(error).__name__}: {error})"
    return LoadOutcome(first, again, expected)


@dataclass(frozen=True)
class BudgetPairReport:
    """The outcomes on the two inputs of one pair (and of loading their saved objects)."""

    label: str
    data: BudgetOutcome
    neighbour: BudgetOutcome
    forks: tuple[ForkOutcome, ForkOutcome] | None = None
    loads: tuple[LoadOutcome, LoadOutcome] | None = None

    @property
    def distinguishes(self) -> bool:
        """Whether the budget channel tells the two inputs apart (then with certainty)."""
        return (self.data != self.neighbour or (self.forks is not None and self.forks[0] != self.forks[1])
                or (self.loads is not None and self.loads[0] != self.loads[1]))

    @property
    def fork_free(self) -> bool:
        """Whether a saved object was continued twice for free."""
        return self.forks is not None and any(fork.free for fork in self.forks)

    @property
    def load_free(self) -> bool:
        """Whether loading a saved object did not pay the rest of its run exactly once."""
        return self.loads is not None and any(load.free for load in self.loads)

    def __str__(self) -> str:
        forks = "" if self.forks is None else f"; forks: {self.forks[0]} | {self.forks[1]}"
        loads = "" if self.loads is None else f"; loads: {self.loads[0]} | {self.loads[1]}"
        if not self.distinguishes:
            return f"{self.label}: identical ({self.data}{forks}{loads})"
        return f"{self.label}: DISTINGUISHES: {self.data} | neighbour: {self.neighbour}{forks}{loads}"


@dataclass(frozen=True)
class BudgetReport:
    """Outcome of :func:`run_budget_case`."""

    case: BudgetCase
    pairs: list[BudgetPairReport]

    @property
    def refuted(self) -> bool:
        """Whether some pair is told apart by its budget, or a saved object was forked or loaded for free."""
        return any(pair.distinguishes or pair.fork_free or pair.load_free for pair in self.pairs)

    @property
    def as_expected(self) -> bool:
        """A correct case is not refuted; a negative control is."""
        return self.refuted == self.case.broken

    def __str__(self) -> str:
        control = " [negative control]" if self.case.broken else ""
        head = f"{self.case.algorithm} (budget): {self.case.description}{control}"
        return "\n  ".join([head, *(str(p) for p in self.pairs)])


def run_budget_case(case: BudgetCase) -> BudgetReport:
    """Run the case's releases on both inputs of every pair, each under a fresh ledger, and compare."""
    reports = []
    for pair in case.pairs:
        outcomes = [run_releases(case.release, data, case.accountant(), case.max_releases)
                    for data in (pair.data, pair.neighbour)]
        forks = loads = None
        if case.saved is not None:
            forks = (fork_outcome(case.saved(pair.data), **case.load_options),
                     fork_outcome(case.saved(pair.neighbour), **case.load_options))
            if case.run_charged:  # (an object that pays per release pays nothing when loaded: nothing to check)
                loads = (_load_outcome(case, pair.data), _load_outcome(case, pair.neighbour))
        reports.append(BudgetPairReport(pair.label, outcomes[0], outcomes[1], forks, loads))
    return BudgetReport(case, reports)


def _load_outcome(case: BudgetCase, data: Any) -> LoadOutcome:
    """The case's saved object on ``data`` loaded under a ledger: it must pay what one release of the case pays."""
    assert case.saved is not None
    reference = Accountant(delta_budget=case.delta_budget)  # one release on a fresh ledger: the run's price
    case.release(data, reference)
    expected = reference.spent().epsilon
    return load_outcome(case.saved(data), expected, delta_budget=case.delta_budget, **case.load_options)


# ------------------------------------------------------------------------------------ concurrency
def _sequential_releases(case: BudgetCase, data: Any) -> int:
    return run_releases(case.release, data, case.accountant(), case.max_releases).releases


def _check_total(case: BudgetCase, accountant: Accountant, made: int, expected: int, who: str) -> None:
    spent = accountant.spent().epsilon
    if spent > case.epsilon_budget * (1.0 + _SLACK) or made != expected:
        raise AssertionError(
            f"{case.algorithm}: {who} overspent the shared ledger: {made} releases (one caller alone gets "
            f"{expected}), spent {spent:.6g} against a budget of {case.epsilon_budget:g}"
        )


def threads_never_overspend(case: BudgetCase, n_threads: int = 4) -> int:
    """N threads release on one shared :class:`~dpbandits.privacy.accounting.Accountant` until refused.

    Returns the total number of releases, after checking it.

    Raises
    ------
    AssertionError
        If the ledger ends over its budget, or the threads made more (or fewer) releases than one
        thread alone gets under the same budget.
    """
    data = case.pairs[0].data
    expected = _sequential_releases(case, data)
    shared = case.accountant()
    made = [0] * n_threads
    start = threading.Barrier(n_threads)

    def work(index: int) -> None:
        start.wait()
        made[index] = run_releases(case.release, data, shared, case.max_releases).releases

    threads = [threading.Thread(target=work, args=(i,)) for i in range(n_threads)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    _check_total(case, shared, sum(made), expected, f"{n_threads} threads")
    return sum(made)


def _process_worker(algorithm: str, index: int, path: str, ledger_id: str, barrier: Any) -> int:
    case = list(budget_cases(algorithm))[index]
    from dpbandits.privacy.ledger_store import DurableAccountant

    ledger = DurableAccountant(path, ledger_id)  # created by the parent, with the case's budget
    try:
        barrier.wait()
        return run_releases(case.release, case.pairs[0].data, ledger, case.max_releases).releases
    finally:
        ledger.close()


def processes_never_overspend(algorithm: str, index: int, directory: str | Path, n_processes: int = 2) -> int:
    """``n_processes`` processes release until refused on one durable ledger (SQLite).

    The ledger is a :class:`~dpbandits.privacy.ledger_store.DurableAccountant` in ``directory``.

    The case is ``list(budget_cases(algorithm))[index]`` (looked up again in each process).

    Raises
    ------
    AssertionError
        If the shared ledger ends over its budget, or the processes made more (or fewer) releases
        than one process alone gets.
    """
    from dpbandits.privacy.ledger_store import DurableAccountant

    case = list(budget_cases(algorithm))[index]
    expected = _sequential_releases(case, case.pairs[0].data)
    path = str(Path(directory) / "ledger.db")
    ledger_id = f"{algorithm}-{index}"
    DurableAccountant.create(path, ledger_id, epsilon_budget=case.epsilon_budget, delta_budget=case.delta_budget).close()
    # fork where available: the children start with the built case (spawn re-imports and rebuilds it)
    context = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")
    with context.Manager() as manager:
        barrier = manager.Barrier(n_processes)
        with context.Pool(n_processes) as pool:
            results = [pool.apply_async(_process_worker, (algorithm, index, path, ledger_id, barrier))
                       for _ in range(n_processes)]
            made = sum(result.get(timeout=300) for result in results)
    shared = DurableAccountant(path, ledger_id)
    try:
        _check_total(case, shared, made, expected, f"{n_processes} processes")
    finally:
        shared.close()
    return made


def fork_is_refused_or_charged(charge: Guarantee, lineage: str = "contract-lineage", generation: int = 3) -> None:
    """A second continuation of one saved generation is refused by default, or charged afresh.

    Checked at the ledger level (:meth:`~dpbandits.privacy.accounting.Accountant.record_continuation`),
    on an in-memory ledger whose budget fits exactly one charge.

    Raises
    ------
    AssertionError
        If a second continuation is accepted for free, or a charged one is not recorded.
    """
    accountant = Accountant(epsilon_budget=charge.epsilon * 1.5)
    accountant.record_continuation(lineage, generation, charge=charge)
    try:
        accountant.record_continuation(lineage, generation, charge=charge)
    except ForkRefusedError:
        pass
    else:
        raise AssertionError("a second continuation of one saved generation was accepted for free")
    before = accountant.spent().epsilon
    accountant.record_continuation(lineage, generation, on_fork="charge", charge=charge)
    if not math.isclose(accountant.spent().epsilon - before, charge.epsilon, rel_tol=1e-9):
        raise AssertionError("a charged fork did not spend its charge")
    try:
        accountant.record_continuation(lineage, generation, on_fork="charge", charge=charge)
    except PrivacyBudgetExceededError:
        return
    raise AssertionError("a charged fork over the budget was accepted")


# ---------------------------------------------------------------------------------------- registry
BudgetFactory = Callable[[], list[BudgetCase]]
BUDGET_CASES: CaseRegistry[BudgetCase] = CaseRegistry("budget")
"""The registry of budget cases."""


def register_budget_cases(*algorithms: str) -> Callable[[BudgetFactory], BudgetFactory]:
    """Register a factory of budget cases for the named registered algorithms (decorator)."""
    return BUDGET_CASES.register(*algorithms)


def registered_budget_algorithms() -> list[str]:
    """Algorithms with at least one registered budget case factory."""
    return BUDGET_CASES.algorithms()


def budget_cases(algorithm: str) -> Iterator[BudgetCase]:
    """Every budget case of ``algorithm`` (correct ones and negative controls); each factory runs once."""
    return BUDGET_CASES.cases(algorithm)
