"""Typed ledger entries: what a spend protects, and the conversions a caller may state between units.

A :class:`LedgerEntry` is one recorded spend: the privacy event (or the event of a guarantee), how
many times it ran, the *unit* it protects ("one reward in the reward table"), the neighbouring
relation, its scope (``"domain"``: worst case over a declared public domain; ``"per-instance"``:
holds for the given data only), a label saying what was released, and the lineage of the saved
object it continues, if any.

The events of one ledger compose only when they protect the same unit under the same relation.
:func:`make_entry` enforces that, and the two conversions a caller may state:

* :class:`GroupPrivacy` — one ledger unit is at most ``factor`` units of the event: ε-DP becomes
  (kε)-DP, (ε, δ)-DP becomes (kε, k·e^{(k−1)ε}·δ)-DP, and a Laplace or Gaussian release of
  sensitivity Δ becomes one of sensitivity kΔ (Dwork & Roth 2014, Theorem 2.2);
* :class:`NeighbouringConversion` — the correct conversions of
  :mod:`dpbandits.privacy.guarantees` only: add/remove ⇒ replace-one or label-only (2ε, (1 + e^ε)·δ),
  sensitivity 2Δ for a Laplace or Gaussian release (a replacement is a removal and an addition);
  replace-one ⇒ label-only unchanged; replace-one ⇒ add/remove only under the
  bounded-with-null-element model.

Per-instance guarantees are data-dependent: their ε is a function of the data, so recording one
(and the refusal point it moves) reveals the data. :func:`make_entry` refuses them with
:class:`~dpbandits._core.errors.PerInstanceSpendError` unless the caller passes
``allow_per_instance=True``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from dpbandits._core.errors import (
    InvalidParameterError,
    LedgerUnitError,
    PerInstanceSpendError,
    PrivacyBudgetExceededError,
)
from dpbandits._core.validation import check_int, check_one_of
from dpbandits.privacy.composition import guarantee_event, ledger_epsilon
from dpbandits.privacy.dp_accounting_bridge import check_supported
from dpbandits.privacy.events import (
    ApproxEvent,
    ComposedEvent,
    GaussianEvent,
    LaplaceEvent,
    PrivacyEvent,
    PureEvent,
    fixed_parameters,
    flatten_event,
)
from dpbandits.privacy.guarantees import (
    ApproxDP,
    Guarantee,
    Neighbouring,
    UnsupportedConversionError,
    add_remove_to_label,
    add_remove_to_replace_one,
    replace_one_to_add_remove,
    replace_one_to_label,
)

__all__ = [
    "ON_FORK",
    "SCOPES",
    "Conversion",
    "GroupPrivacy",
    "LedgerEntry",
    "NeighbouringConversion",
    "Scope",
    "check_budget",
    "check_continuation",
    "check_label",
    "check_neighbouring",
    "check_unit",
    "make_entry",
]

Scope = Literal["domain", "per-instance"]
SCOPES: tuple[str, ...] = ("domain", "per-instance")
"""Scopes of a ledger entry: worst case over a declared public domain, or per-instance (data-dependent)."""

ON_FORK: tuple[str, ...] = ("refuse", "charge")
"""What :meth:`~dpbandits.privacy.accounting.Accountant.record_continuation` does on a second continuation of one saved generation."""

_MAX_TEXT = 1000  # units, labels and lineage ids are short public descriptions


@dataclass(frozen=True)
class LedgerEntry:
    """One recorded spend of a privacy ledger.

    Parameters
    ----------
    event : PrivacyEvent
        What is composed: the release's event, after any conversion the caller stated.
    count : int
        How many times the event ran (>= 1).
    unit : str or None
        The unit protected ("one reward in the reward table"); None when neither the spend nor the
        ledger named one (the event then counts for whatever unit the ledger protects).
    neighbouring : Neighbouring or None
        The neighbouring relation; None as for ``unit``.
    scope : {"domain", "per-instance"}
        ``"domain"``: the guarantee holds for every pair of neighbours of the declared public domain;
        ``"per-instance"``: for the given data only (recorded only with ``allow_per_instance=True``).
    label : str
        What was released ("KLMABPolicy.sample").
    lineage : str or None
        The lineage id of the saved object whose continuation this entry pays for, if any.
    conversion : str
        The conversions applied to the spent event or guarantee, in words ("" if none).
    """

    event: PrivacyEvent
    count: int
    unit: str | None
    neighbouring: Neighbouring | None
    scope: Scope = "domain"
    label: str = ""
    lineage: str | None = None
    conversion: str = ""


# ---------------------------------------------------------------------------------------------------
# Conversions
# ---------------------------------------------------------------------------------------------------


def _map_event(event: PrivacyEvent, sensitivity_factor: float,
               parameters: Callable[[float, float], tuple[float, float]]) -> PrivacyEvent:
    """Apply a conversion to every leaf: noise events by their sensitivity, (ε, δ) events by ``parameters``."""
    if isinstance(event, ComposedEvent):
        return ComposedEvent(tuple(_map_event(e, sensitivity_factor, parameters) for e in event.events), event.count)
    if isinstance(event, LaplaceEvent):
        return LaplaceEvent(event.scale, sensitivity_factor * event.sensitivity)
    if isinstance(event, GaussianEvent):
        return GaussianEvent(event.sigma, sensitivity_factor * event.l2_sensitivity)
    epsilon, delta = fixed_parameters(event)
    new_epsilon, new_delta = parameters(epsilon, delta)
    if not math.isfinite(new_epsilon) or new_delta >= 1.0:
        raise InvalidParameterError(
            f"the converted guarantee of {event!r} is vacuous (epsilon={new_epsilon:g}, delta={new_delta:g})"
        )
    return PureEvent(new_epsilon) if new_delta == 0.0 and isinstance(event, PureEvent) else ApproxEvent(new_epsilon, new_delta)


@dataclass(frozen=True)
class GroupPrivacy:
    """Group privacy: one unit of the ledger is at most ``factor`` units of the spent event.

    ε-DP becomes (kε)-DP and (ε, δ)-DP becomes (kε, k·e^{(k−1)ε}·δ)-DP (``Guarantee.group``); a
    Laplace or Gaussian release of sensitivity Δ is one of sensitivity kΔ for groups of k.

    Parameters
    ----------
    factor : int
        k >= 1, a public bound on how many event units one ledger unit holds.

    References
    ----------
    Dwork & Roth (2014), Theorem 2.2.
    """

    factor: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "factor", check_int(self.factor, "factor", minimum=1))

    def apply(self, event: PrivacyEvent) -> PrivacyEvent:
        """The event under group privacy for groups of ``factor``."""
        k = self.factor

        def parameters(epsilon: float, delta: float) -> tuple[float, float]:
            group = ApproxDP(epsilon=epsilon, delta=delta, unit="u", neighbouring=Neighbouring.REPLACE_ONE).group(k)
            return group.epsilon, group.delta

        return _map_event(event, float(k), parameters)

    def __str__(self) -> str:
        return f"group privacy (factor {self.factor})"


_NEIGHBOURING_MAPS: dict[tuple[Neighbouring, Neighbouring], tuple[Callable[..., Guarantee], float]] = {
    (Neighbouring.ADD_REMOVE, Neighbouring.REPLACE_ONE): (add_remove_to_replace_one, 2.0),
    (Neighbouring.ADD_REMOVE, Neighbouring.LABEL_ONLY): (add_remove_to_label, 2.0),
    (Neighbouring.REPLACE_ONE, Neighbouring.LABEL_ONLY): (replace_one_to_label, 1.0),
    (Neighbouring.REPLACE_ONE, Neighbouring.ADD_REMOVE): (replace_one_to_add_remove, 1.0),
}


@dataclass(frozen=True)
class NeighbouringConversion:
    """A conversion of a spend from one neighbouring relation to the ledger's.

    Only the correct conversions exist (:mod:`dpbandits.privacy.guarantees`): add/remove ⇒
    replace-one or label-only, (2ε, (1 + e^ε)·δ), and sensitivity 2Δ for a Laplace or Gaussian
    release; replace-one ⇒ label-only, unchanged; replace-one ⇒ add/remove only with
    ``bounded_with_null=True`` (datasets with a null element), unchanged.

    Parameters
    ----------
    source, target : Neighbouring or str
        The relation of the spend and the relation of the ledger.
    bounded_with_null : bool, default False
        Assert the bounded-with-null-element model (needed for replace-one ⇒ add/remove).

    Raises
    ------
    UnsupportedConversionError
        For a conversion that does not hold in general (replace-one ⇒ add/remove without the null
        model, anything from label-only or joint DP).
    """

    source: Neighbouring
    target: Neighbouring
    bounded_with_null: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "source", check_neighbouring(self.source, "source"))
        object.__setattr__(self, "target", check_neighbouring(self.target, "target"))
        if not isinstance(self.bounded_with_null, bool):
            raise InvalidParameterError(f"bounded_with_null must be a bool; got {self.bounded_with_null!r}")
        if (self.source, self.target) not in _NEIGHBOURING_MAPS:
            raise UnsupportedConversionError(
                f"no conversion from {self.source.value} to {self.target.value} DP holds in general"
            )
        self._parameters(1.0, 0.0)  # replace-one ⇒ add/remove without the null model raises here

    def _parameters(self, epsilon: float, delta: float) -> tuple[float, float]:
        convert, _factor = _NEIGHBOURING_MAPS[(self.source, self.target)]
        extra = {"bounded_with_null": self.bounded_with_null} if convert is replace_one_to_add_remove else {}
        result = convert(ApproxDP(epsilon=epsilon, delta=delta, unit="u", neighbouring=self.source), **extra)
        return result.epsilon, result.delta

    def apply(self, event: PrivacyEvent) -> PrivacyEvent:
        """The event, as a release protecting the target relation."""
        return _map_event(event, _NEIGHBOURING_MAPS[(self.source, self.target)][1], self._parameters)

    def __str__(self) -> str:
        null = " (bounded with a null element)" if self.bounded_with_null else ""
        return f"{self.source.value} to {self.target.value}{null}"


Conversion = GroupPrivacy | NeighbouringConversion


# ---------------------------------------------------------------------------------------------------
# Validation
# ---------------------------------------------------------------------------------------------------


def _check_text(value: object, name: str, *, empty: bool) -> str:
    if not isinstance(value, str) or len(value) > _MAX_TEXT or (not empty and not value.strip()):
        need = "a string" if empty else "a non-empty string"
        raise InvalidParameterError(f"{name} must be {need} of at most {_MAX_TEXT} characters; got {value!r:.80}")
    if any(ord(c) < 32 and c not in "\t" for c in value):
        raise InvalidParameterError(f"{name} must not contain control characters; got {value!r:.80}")
    return value


def check_unit(unit: object, name: str = "unit") -> str | None:
    """``unit`` as a non-empty string, or None."""
    return None if unit is None else _check_text(unit, name, empty=False)


def check_label(label: object) -> str:
    """``label`` as a (possibly empty) short string."""
    return _check_text(label, "label", empty=True)


def check_neighbouring(value: object, name: str = "neighbouring") -> Neighbouring:
    """``value`` as a :class:`Neighbouring` (its value string is accepted)."""
    if isinstance(value, Neighbouring):
        return value
    try:
        if isinstance(value, str):
            return Neighbouring(value)
    except ValueError:
        pass
    raise InvalidParameterError(f"{name} must be one of {[n.value for n in Neighbouring]}; got {value!r:.80}")


def check_continuation(lineage: object, generation: object, on_fork: object) -> tuple[str, int, str]:
    """Validated (lineage, generation, on_fork) of a continuation."""
    lineage = _check_text(lineage, "lineage", empty=False)
    return lineage, check_int(generation, "generation", minimum=0), check_one_of(on_fork, "on_fork", ON_FORK)


def _conversions(conversion: object) -> tuple[Conversion, ...]:
    items = conversion if isinstance(conversion, tuple | list) else () if conversion is None else (conversion,)
    for item in items:
        if not isinstance(item, GroupPrivacy | NeighbouringConversion):
            raise InvalidParameterError(
                f"conversion must be a GroupPrivacy, a NeighbouringConversion or a tuple of them; got {item!r}"
            )
    return tuple(items)


def make_entry(
    item: PrivacyEvent | Guarantee, count: int, *, unit: str | None, neighbouring: Neighbouring | str | None,
    scope: str, label: str, conversion: object, allow_per_instance: bool, lineage: str | None,
    ledger_unit: str | None, ledger_neighbouring: Neighbouring | None, method: str,
) -> LedgerEntry:
    """The typed entry of one spend under a ledger of ``ledger_unit`` / ``ledger_neighbouring``.

    Only public quantities are looked at: the refusals below are the same for every dataset.

    Raises
    ------
    PerInstanceSpendError
        For a per-instance guarantee (or ``scope="per-instance"``) unless ``allow_per_instance``.
    LedgerUnitError
        If the (converted) unit or relation is not the ledger's.
    UnsupportedEventError
        If ``method`` cannot bound the event.
    InvalidParameterError
        For malformed arguments, or a guarantee with no finite ε.
    """
    scope = check_one_of(scope, "scope", SCOPES)
    label = check_label(label)
    unit = check_unit(unit)
    relation = None if neighbouring is None else check_neighbouring(neighbouring)
    if lineage is not None:
        lineage = _check_text(lineage, "lineage", empty=False)
    if not isinstance(allow_per_instance, bool):
        raise InvalidParameterError(f"allow_per_instance must be a bool; got {allow_per_instance!r}")
    if isinstance(item, Guarantee):
        if (unit is not None and unit != item.unit) or (relation is not None and relation is not item.neighbouring):
            raise InvalidParameterError(
                f"a Guarantee names its own unit and relation ({item.unit!r}, {item.neighbouring.value}); "
                f"do not pass others (got unit={unit!r}, neighbouring={neighbouring!r})"
            )
        unit, relation = item.unit, item.neighbouring
        if item.per_instance:
            scope = "per-instance"
    elif not isinstance(item, PrivacyEvent):
        raise InvalidParameterError(f"a spend must be a PrivacyEvent or a Guarantee; got {item!r:.100}")
    # refuse per-instance spends first, whatever their ε: the refusal must not depend on the data
    if scope == "per-instance" and not allow_per_instance:
        raise PerInstanceSpendError(
            f"{label or 'this release'} spends a per-instance guarantee (its epsilon depends on the data, "
            "so the ledger would reveal it): declare the public domain so the data-independent guarantee "
            "is spent, or pass allow_per_instance=True knowingly"
        )
    count = check_int(count, "count", minimum=1)
    event = guarantee_event(item) if isinstance(item, Guarantee) else item
    described: list[str] = []
    for step in _conversions(conversion):
        if isinstance(step, NeighbouringConversion):
            if relation is not None and relation is not step.source:
                raise InvalidParameterError(
                    f"the conversion is from {step.source.value} but the spend is under {relation.value}"
                )
            relation = step.target
        else:
            unit = ledger_unit if ledger_unit is not None else (
                None if unit is None else f"{step.factor} × ({unit})")
        event = step.apply(event)
        described.append(str(step))
    if ledger_unit is not None and unit is not None and unit != ledger_unit:
        raise LedgerUnitError(
            f"this spend protects {unit!r} but the ledger protects {ledger_unit!r}: they do not compose; "
            "state the conversion (conversion=GroupPrivacy(factor=k) if one ledger unit holds at most k)"
        )
    if ledger_neighbouring is not None and relation is not None and relation is not ledger_neighbouring:
        raise LedgerUnitError(
            f"this spend holds under {relation.value} neighbours but the ledger is under "
            f"{ledger_neighbouring.value}: state the conversion (conversion=NeighbouringConversion(...))"
        )
    _check_method(event, method)
    return LedgerEntry(
        event=event, count=count, unit=ledger_unit if unit is None else unit,
        neighbouring=ledger_neighbouring if relation is None else relation,
        scope=scope,  # type: ignore[arg-type]
        label=label, lineage=lineage, conversion="; ".join(described),
    )


def _check_method(event: PrivacyEvent, method: str) -> None:
    """Refuse, before recording, events the composition method cannot bound."""
    if method == "basic":
        for leaf, _n in flatten_event(event):
            if not isinstance(leaf, GaussianEvent):
                fixed_parameters(leaf)
    else:
        check_supported(event, method)


def check_budget(entries: Sequence[LedgerEntry], new: LedgerEntry, *, method: str,
                 epsilon_budget: float | None, delta_budget: float) -> None:
    """Raise :class:`PrivacyBudgetExceededError` if recording ``new`` after ``entries`` would exceed the budget."""
    if epsilon_budget is None:
        return
    spent = ledger_epsilon(method, [(e.event, e.count) for e in (*entries, new)], delta_budget)
    if spent > epsilon_budget:
        what = f"{new.label}: " if new.label else ""
        raise PrivacyBudgetExceededError(
            f"{what}spending {new.count} × {new.event!r} would bring epsilon to {spent:.6g} at "
            f"delta={delta_budget:g}, over epsilon_budget={epsilon_budget:g}; nothing was spent"
        )
