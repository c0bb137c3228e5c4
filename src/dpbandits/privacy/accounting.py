"""Privacy accounting: a typed, thread-safe ledger of releases that enforces a budget.

An :class:`Accountant` records every release as a :class:`~dpbandits.privacy.ledger.LedgerEntry`
(event, count, unit, neighbouring relation, scope, label, lineage) and reports ε(δ) of their
composition (:func:`~dpbandits.privacy.composition.ledger_epsilon`). It refuses:

* a spend over the budget (:class:`~dpbandits._core.errors.PrivacyBudgetExceededError`), before
  recording and before the release draws any noise;
* a spend of another unit or neighbouring relation than the ledger's
  (:class:`~dpbandits._core.errors.LedgerUnitError`) unless the caller states a conversion
  (:class:`~dpbandits.privacy.ledger.GroupPrivacy`,
  :class:`~dpbandits.privacy.ledger.NeighbouringConversion`);
* a per-instance (data-dependent) guarantee (:class:`~dpbandits._core.errors.PerInstanceSpendError`)
  unless ``allow_per_instance=True``;
* a second continuation of one saved generation (:class:`~dpbandits._core.errors.ForkRefusedError`)
  unless it is charged afresh (:meth:`Accountant.record_continuation`).

Check-and-record is one atomic step under a lock, so threads may share one accountant; processes
and hosts share a :class:`~dpbandits.privacy.ledger_store.DurableAccountant` (same methods, a
database underneath). The composition theorems live in :mod:`dpbandits.privacy.composition` and
are re-exported here.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from dpbandits._core.errors import ForkRefusedError, InvalidParameterError
from dpbandits._core.persistence import CONTINUATION_WINDOW, MAX_GENERATION
from dpbandits._core.validation import check_delta, check_epsilon, check_one_of
from dpbandits.privacy.composition import (
    ACCOUNTING_METHODS,
    advanced_composition,
    basic_composition,
    compose_guarantees,
    gaussian_delta,
    gaussian_epsilon,
    guarantee_event,
    ledger_epsilon,
)
from dpbandits.privacy.dp_accounting_bridge import to_dp_accounting
from dpbandits.privacy.events import (
    ApproxEvent,
    ComposedEvent,
    EpsilonDelta,
    GaussianEvent,
    LaplaceEvent,
    PrivacyEvent,
    PureEvent,
)
from dpbandits.privacy.guarantees import ApproxDP, Guarantee, Neighbouring, PureDP
from dpbandits.privacy.ledger import (
    GroupPrivacy,
    LedgerEntry,
    NeighbouringConversion,
    check_budget,
    check_continuation,
    check_neighbouring,
    check_unit,
    make_entry,
)

__all__ = [
    "ACCOUNTING_METHODS",
    "CONTINUATION_WINDOW",
    "Accountant",
    "ApproxEvent",
    "ComposedEvent",
    "EpsilonDelta",
    "GaussianEvent",
    "GroupPrivacy",
    "LaplaceEvent",
    "LedgerEntry",
    "LedgerView",
    "NeighbouringConversion",
    "PrivacyEvent",
    "PureEvent",
    "advanced_composition",
    "basic_composition",
    "compose_guarantees",
    "gaussian_delta",
    "gaussian_epsilon",
    "guarantee_event",
    "spend",
    "to_dp_accounting",
]


class LedgerView:
    """The state of a ledger inside one check-and-record step (held under its lock or transaction).

    :class:`Accountant` keeps it in memory; :class:`~dpbandits.privacy.ledger_store.DurableAccountant`
    reads it from and writes it to its database.
    """

    def __init__(self, unit: str | None, neighbouring: Neighbouring | None, entries: list[LedgerEntry],
                 continuations: dict[tuple[str, int], int]) -> None:
        self.unit = unit
        self.neighbouring = neighbouring
        self.entries = entries
        self.continuations = continuations

    def append(self, entry: LedgerEntry) -> None:
        """Record ``entry``; the first entry with a unit (relation) fixes the ledger's."""
        if self.unit is None:
            self.unit = entry.unit
        if self.neighbouring is None:
            self.neighbouring = entry.neighbouring
        self.entries.append(entry)

    def prior_continuations(self, lineage: str, generation: int) -> int:
        """How many times (lineage, generation) was continued under this ledger so far."""
        return self.continuations.get((lineage, generation), 0)

    def add_continuation(self, lineage: str, generation: int, before: int) -> None:
        """Record one more continuation of (lineage, generation), which had ``before``."""
        self.continuations[(lineage, generation)] = before + 1

    def latest_continuation(self, lineage: str) -> int | None:
        """The highest generation of ``lineage`` continued under this ledger (None if none was)."""
        return max((g for (name, g) in self.continuations if name == lineage), default=None)


class Accountant:
    """A typed privacy ledger: records releases, reports ε(δ) of their composition, enforces a budget.

    Every private algorithm and release of the library takes ``accountant=``: it records its event
    or guarantee here *before* drawing any noise, so a release that would exceed the budget raises
    :class:`~dpbandits._core.errors.PrivacyBudgetExceededError` and draws nothing.

    Parameters
    ----------
    epsilon_budget : float, optional
        If given, :meth:`spend` refuses, *before* recording, a spend that would make
        ε(``delta_budget``) exceed this budget.
    delta_budget : float, default 0
        The δ at which the budget is checked (and at which :meth:`spent` / :meth:`remaining` report).
        Pure events (Laplace, ε-DP) compose exactly at δ = 0 (Σεᵢ) under every method.
    method : {"basic", "pld", "rdp"}, default "basic"
        ``"basic"``: Gaussian events compose exactly (one Gaussian mechanism with μ = √Σ(Δᵢ/σᵢ)²), pure
        events by summation, the others by the better of basic and advanced composition.
        ``"pld"``: privacy-loss distributions through ``dp_accounting`` (tightest; Laplace and
        Gaussian exactly, (ε, δ) events through their dominating pair). ``"rdp"``: Rényi DP through
        ``dp_accounting`` (no (ε, δ) events with δ > 0). See :mod:`dpbandits.privacy.composition`.
    unit : str, optional
        The unit every spend must protect ("one user"). Default: fixed by the first spend that
        names one (every :class:`~dpbandits.privacy.guarantees.Guarantee` does).
    neighbouring : Neighbouring or str, optional
        The neighbouring relation every spend must hold under; default as for ``unit``.

    Notes
    -----
    A bare event (``LaplaceEvent``...) spent without ``unit=`` / ``neighbouring=`` counts for the
    ledger's unit and relation: the caller asserts that the released query's sensitivity is for
    that unit. Check-and-record holds one lock; :meth:`can_spend` is advisory only (another thread
    may spend in between). An accountant cannot be copied or pickled: two copies would each spend
    the whole budget.

    Examples
    --------
    >>> from dpbandits.privacy.accounting import Accountant, LaplaceEvent
    >>> acc = Accountant(epsilon_budget=1.0)
    >>> acc.spend(LaplaceEvent(scale=10.0), count=5)
    >>> acc.spent().epsilon, acc.remaining().epsilon
    (0.5, 0.5)
    """

    def __init__(self, epsilon_budget: float | None = None, delta_budget: float = 0.0, *,
                 method: str = "basic", unit: str | None = None,
                 neighbouring: Neighbouring | str | None = None) -> None:
        self.epsilon_budget = None if epsilon_budget is None else check_epsilon(epsilon_budget, "epsilon_budget")
        self.delta_budget = check_delta(delta_budget, "delta_budget")
        self.method = check_one_of(method, "method", ACCOUNTING_METHODS)
        self._lock = threading.RLock()
        self._view = LedgerView(check_unit(unit),
                                None if neighbouring is None else check_neighbouring(neighbouring), [], {})

    # -- storage: in memory, under one lock (DurableAccountant overrides these two) -------------------

    @contextmanager
    def _locked(self, connection: Any = None) -> Iterator[LedgerView]:
        """The ledger's state, held exclusively until the block ends (changes kept only without error)."""
        if connection is not None:
            raise InvalidParameterError("connection= is for a DurableAccountant; an Accountant is in memory")
        with self._lock:
            yield self._view  # every check comes before the first change: a refusal changes nothing

    def _read(self, connection: Any = None) -> LedgerView:
        """A consistent snapshot of the ledger's state."""
        if connection is not None:
            raise InvalidParameterError("connection= is for a DurableAccountant; an Accountant is in memory")
        with self._lock:
            view = self._view
            return LedgerView(view.unit, view.neighbouring, list(view.entries), dict(view.continuations))

    # -- public API ---------------------------------------------------------------------------------

    @property
    def unit(self) -> str | None:
        """The unit this ledger protects (None until a constructor argument or a spend fixes it)."""
        return self._read().unit

    @property
    def neighbouring(self) -> Neighbouring | None:
        """The neighbouring relation of this ledger (None until fixed)."""
        return self._read().neighbouring

    def entries(self, *, connection: Any = None) -> tuple[LedgerEntry, ...]:
        """Every recorded spend, in order (``connection=``: only for a DurableAccountant)."""
        return tuple(self._read(connection).entries)

    @property
    def events(self) -> tuple[PrivacyEvent, ...]:
        """The recorded events, as one :class:`ComposedEvent` per spend."""
        return tuple(ComposedEvent((e.event,), e.count) for e in self.entries())

    def _entry(self, view: LedgerView, item: PrivacyEvent | Guarantee, count: int, kw: dict[str, Any]) -> LedgerEntry:
        return make_entry(item, count, ledger_unit=view.unit, ledger_neighbouring=view.neighbouring,
                          method=self.method, **kw)

    def can_spend(self, event: PrivacyEvent | Guarantee, count: int = 1, **kw: Any) -> bool:
        """Whether :meth:`spend` would accept this spend now (advisory: nothing is recorded or reserved).

        Raises what :meth:`spend` raises for a spend it refuses on other grounds than the budget.
        """
        view = self._read()
        entry = self._entry(view, event, count, _spend_keywords(**kw))
        if self.epsilon_budget is None:
            return True
        return self._epsilon([*view.entries, entry], self.delta_budget) <= self.epsilon_budget

    def spend(self, event: PrivacyEvent | Guarantee, count: int = 1, *, unit: str | None = None,
              neighbouring: Neighbouring | str | None = None, scope: str = "domain", label: str = "",
              conversion: Any = None, allow_per_instance: bool = False, lineage: str | None = None,
              connection: Any = None) -> None:
        """Record ``count`` runs of a release, atomically checked against the budget.

        Parameters
        ----------
        event : PrivacyEvent or Guarantee
            The release's event, or its guarantee (which names its unit, relation and scope).
        count : int, default 1
        unit, neighbouring : optional
            For a bare event: the unit and relation it protects (default: the ledger's).
        scope : {"domain", "per-instance"}, default "domain"
            For a bare event; a guarantee's own ``per_instance`` makes it "per-instance".
        label : str, optional
            What was released ("KLMABPolicy.sample"), kept with the entry.
        conversion : GroupPrivacy, NeighbouringConversion or a tuple of them, optional
            How the spend's unit and relation map to the ledger's; applied in order.
        allow_per_instance : bool, default False
            Record a per-instance guarantee anyway (its ε depends on the data: the ledger, and the
            point where the budget refuses, then reveal the data).
        lineage : str, optional
            The lineage id of the saved object this spend continues.
        connection : optional
            Only for :class:`~dpbandits.privacy.ledger_store.DurableAccountant`.

        Raises
        ------
        PrivacyBudgetExceededError
            If a budget was set and would be exceeded; nothing is recorded then.
        PerInstanceSpendError
            For a per-instance guarantee without ``allow_per_instance=True``.
        LedgerUnitError
            For another unit or relation than the ledger's, without a conversion.
        UnsupportedEventError
            If the accounting method cannot bound the event; nothing is recorded then.
        """
        kw = _spend_keywords(unit=unit, neighbouring=neighbouring, scope=scope, label=label,
                             conversion=conversion, allow_per_instance=allow_per_instance, lineage=lineage)
        with self._locked(connection) as view:
            entry = self._entry(view, event, count, kw)
            check_budget(view.entries, entry, method=self.method, epsilon_budget=self.epsilon_budget,
                         delta_budget=self.delta_budget)
            view.append(entry)

    def record_continuation(self, lineage: str, generation: int, *, on_fork: str = "refuse",
                            charge: Guarantee | PrivacyEvent | None = None, label: str = "",
                            run_charge: Guarantee | PrivacyEvent | None = None, run_label: str = "",
                            connection: Any = None) -> int:
        """Record that saved generation ``generation`` of ``lineage`` is continued under this ledger.

        A saved object continued twice puts the users seen before the save in two continuations.
        Each continuation the ledger accepts is given a fresh *window* of generations: the
        continuing object carries generation ``generation + CONTINUATION_WINDOW`` (the return
        value), so its later saves fall in (g + W, g + 2W) for W = ``CONTINUATION_WINDOW``. A
        continuation is *linear* (accepted) when the ledger has continued nothing of ``lineage``
        yet, or when ``generation`` lies in the window of the latest continuation; anything else —
        the same state again, an older one, or a state saved by a copy that did not come through
        this ledger (a load without it, then ``to_bytes()``) — is a fork: refused, or charged afresh.
        Every accepted continuation moves the window, so at most one branch of a history continues
        for free; generation numbers no longer need to be distinct across copies.

        Parameters
        ----------
        lineage : str
            The saved object's lineage id.
        generation : int
            The saved generation (>= 0).
        on_fork : {"refuse", "charge"}, default "refuse"
            On a fork: raise :class:`~dpbandits._core.errors.ForkRefusedError`, or spend ``charge``
            (atomically with the record; refused if over budget).
        charge : Guarantee or PrivacyEvent, optional
            What a charged fork costs: the saved object's (data-independent) guarantee.
        label : str, optional
            Label of the charged entry (default "continuation of <lineage> generation <g>").
        run_charge : Guarantee or PrivacyEvent, optional
            What the rest of the object's run releases when its run is one release paid when it is
            built (an agent): spent, atomically with the record, unless this ledger already holds
            an entry of that event for ``lineage`` (the agent was built, or already loaded, under it).
        run_label : str, optional
            Label of the run's entry (default "run of <lineage>").
        connection : optional
            Only for :class:`~dpbandits.privacy.ledger_store.DurableAccountant`.

        Returns
        -------
        int
            The generation the continuing object carries (its next save is one more).

        Raises
        ------
        ForkRefusedError
            On a fork with ``on_fork="refuse"``.
        PrivacyBudgetExceededError
            If the run's charge or a charged fork is over budget (nothing is recorded).
        """
        lineage, generation, on_fork = check_continuation(lineage, generation, on_fork)
        if on_fork == "charge" and charge is None:
            raise InvalidParameterError('on_fork="charge" needs charge= (the guarantee a fork costs)')
        issued = generation + CONTINUATION_WINDOW
        if issued >= MAX_GENERATION:
            raise InvalidParameterError(
                f"generation {generation} of lineage {lineage} is too high to continue (at most "
                f"{MAX_GENERATION - CONTINUATION_WINDOW - 1})"
            )
        label = label or f"continuation of {lineage} generation {generation}"
        with self._locked(connection) as view:
            latest = view.latest_continuation(lineage)
            fork = latest is not None and not latest + CONTINUATION_WINDOW < generation < latest + 2 * CONTINUATION_WINDOW
            if fork and on_fork == "refuse":
                raise ForkRefusedError(
                    f"generation {generation} of lineage {lineage} was already continued under this ledger, or is "
                    f"not a later save of its latest continuation (of generation {latest}): a second continuation "
                    'is a fork (pass on_fork="charge" to pay for it afresh)'
                )
            new: list[LedgerEntry] = []
            if run_charge is not None:
                entry = self._entry(view, run_charge, 1,
                                    _spend_keywords(label=run_label or f"run of {lineage}", lineage=lineage))
                if not any(e.lineage == lineage and e.event == entry.event for e in view.entries):
                    new.append(entry)
            if fork:
                assert charge is not None
                new.append(self._entry(view, charge, 1, _spend_keywords(label=label, lineage=lineage)))
            for index, entry in enumerate(new):  # every check before the first change
                check_budget([*view.entries, *new[:index]], entry, method=self.method,
                             epsilon_budget=self.epsilon_budget, delta_budget=self.delta_budget)
            for entry in new:
                view.append(entry)
            view.add_continuation(lineage, generation, view.prior_continuations(lineage, generation))
        return issued

    def spent(self, delta: float | None = None, *, connection: Any = None) -> EpsilonDelta:
        """(ε, δ) spent so far, at ``delta`` (default ``delta_budget``)."""
        at = self.delta_budget if delta is None else check_delta(delta)
        return EpsilonDelta(self.get_epsilon(at, connection=connection), at)

    def remaining(self, *, connection: Any = None) -> EpsilonDelta:
        """(ε budget − ε spent, δ budget) at ``delta_budget``; ε is ``inf`` without a budget."""
        if self.epsilon_budget is None:
            return EpsilonDelta(math.inf, self.delta_budget)
        spent = self.get_epsilon(self.delta_budget, connection=connection)
        return EpsilonDelta(max(0.0, self.epsilon_budget - spent), self.delta_budget)

    def get_epsilon(self, delta: float, *, connection: Any = None) -> float:
        """Return an upper bound on ε of everything spent, at ``delta``.

        Parameters
        ----------
        delta : float
            Total δ in [0, 1); with ``method="basic"`` it must cover the δ the (ε, δ) events already
            spend, strictly if Gaussian events were spent.

        Returns
        -------
        float
            ``inf`` when no finite ε holds at this δ (Gaussian events and no δ left).
        """
        return self._epsilon(self._read(connection).entries, check_delta(delta))

    def guarantee(self, delta: float | None = None, *, unit: str | None = None,
                  neighbouring: Neighbouring | str | None = None, reference: str = "") -> Guarantee:
        """Return the guarantee of everything spent, at ``delta``, for the ledger's unit and relation.

        ``delta`` defaults to ``delta_budget`` (as :meth:`spent`); ``unit`` / ``neighbouring`` are
        needed only while the ledger has none.
        """
        delta = self.delta_budget if delta is None else delta
        view = self._read()
        unit = view.unit if unit is None else unit
        relation = view.neighbouring if neighbouring is None else check_neighbouring(neighbouring)
        if unit is None or relation is None:
            raise InvalidParameterError("the ledger names no unit or relation yet: pass unit= and neighbouring=")
        epsilon = self._epsilon(view.entries, check_delta(delta))
        per_instance = any(e.scope == "per-instance" for e in view.entries)
        if math.isinf(epsilon):
            return PureDP(epsilon=math.inf, unit=unit, neighbouring=relation, per_instance=per_instance,
                          reason=f"no finite epsilon at delta={delta}", reference=reference)
        cls: type[Guarantee] = PureDP if delta == 0.0 else ApproxDP
        return cls(epsilon=epsilon, delta=delta, unit=unit, neighbouring=relation, per_instance=per_instance,
                   reference=reference or f"dpbandits Accountant (method={self.method!r})")

    def _epsilon(self, entries: list[LedgerEntry], delta: float) -> float:
        return ledger_epsilon(self.method, [(e.event, e.count) for e in entries], delta)

    def __reduce__(self) -> Any:
        raise InvalidParameterError(
            "an accountant cannot be copied or pickled (two copies would each spend the whole budget): "
            "share the one object between threads, or a DurableAccountant between processes"
        )

    def __repr__(self) -> str:
        view = self._read()
        return (f"{type(self).__name__}(method={self.method!r}, entries={len(view.entries)}, "
                f"epsilon_budget={self.epsilon_budget}, delta_budget={self.delta_budget}, unit={view.unit!r})")


def _spend_keywords(*, unit: str | None = None, neighbouring: Neighbouring | str | None = None,
                    scope: str = "domain", label: str = "", conversion: Any = None,
                    allow_per_instance: bool = False, lineage: str | None = None) -> dict[str, Any]:
    return {"unit": unit, "neighbouring": neighbouring, "scope": scope, "label": label,
            "conversion": conversion, "allow_per_instance": allow_per_instance, "lineage": lineage}


def spend(accountant: Accountant | None, event: PrivacyEvent | Guarantee, count: int = 1, **kw: Any) -> None:
    """Record ``count`` releases in ``accountant`` (nothing when it is None), before any noise is drawn.

    Every private algorithm calls this at its release points with its own event (or guarantee); the
    keywords (``label=``, ``unit=``, ``allow_per_instance=``...) are those of :meth:`Accountant.spend`.

    Raises
    ------
    PrivacyBudgetExceededError
        If the accountant's budget would be exceeded; nothing is recorded.
    PerInstanceSpendError
        For a per-instance guarantee, unless ``allow_per_instance=True`` (with no accountant nothing
        is recorded and nothing is checked).
    InvalidParameterError
        If ``accountant`` is not an :class:`Accountant`.
    """
    if accountant is None:
        return
    if not isinstance(accountant, Accountant):
        raise InvalidParameterError(f"accountant must be an Accountant or None; got {accountant!r:.100}")
    accountant.spend(event, count, **kw)
