"""State schemas: what a saved object's state may hold, checked before anything is restored.

A :class:`~dpbandits._core.persistence.Persistable` class declares its state as a
:class:`StateSchema`: one *spec* per saved field (its type, dtype, shape as a function of the
constructor's parameters, range) and *rules* across fields (time <= horizon, sums within [0, N·R],
...). ``load`` builds the object from its parameters (the constructor validates them), checks every
field of the file against the schema (every field present, no other field), and only then restores
the state; the first violation raises one :class:`~dpbandits._core.errors.DataFormatError` naming the
field and the rule. State that can be recomputed from the sufficient statistics is *derived*: it is
not saved (older files that hold it are accepted and the values ignored) and is recomputed on load.
A field of an earlier layout that can be neither checked nor recomputed is *retired*: a file that
holds it is refused with one line saying why and what to do.

Bounds and shape entries are numbers, attribute names of the freshly built object (``"n_arms"``,
dotted paths allowed) or callables of it::

    _schema = StateSchema(
        time=Int(0, "horizon"),
        counts=Array("int64", ("n_arms",), low=0),
        rules=[rule("sum(counts) == time", lambda obj, s: s["counts"].sum() == s["time"])],
    )
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpbandits._core.errors import DataFormatError

__all__ = [
    "Array",
    "Bool",
    "Float",
    "Generator",
    "Instance",
    "Int",
    "ListOf",
    "MappingOf",
    "Maybe",
    "Nested",
    "Noise",
    "Record",
    "Rule",
    "Spec",
    "StateSchema",
    "Str",
    "Tuple",
    "rule",
]

Bound = float | int | str | Callable[[Any], Any] | None


def resolve(bound: Bound, obj: Any) -> Any:
    """A bound or shape entry for ``obj``: a number, an attribute path of ``obj``, or ``bound(obj)``."""
    if bound is None or isinstance(bound, int | float):
        return bound
    if isinstance(bound, str):
        value: Any = obj
        for part in bound.split("."):
            value = getattr(value, part)
        return value
    return bound(obj)


def _show(value: Any) -> str:
    if isinstance(value, np.ndarray):
        return f"an array of shape {value.shape} and dtype {value.dtype}"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def fail(where: str, rule_text: str, value: Any = ...) -> DataFormatError:
    """The one error of a field that breaks its rule."""
    got = "" if value is ... else f"; got {_show(value)}"
    return DataFormatError(f"state field {where} must be {rule_text}{got}")


class Spec(ABC):
    """A rule for one saved value: :meth:`check` returns the value to restore or raises."""

    @abstractmethod
    def check(self, value: Any, obj: Any, where: str) -> Any:
        """The value to restore, or a :class:`DataFormatError` naming ``where`` and the rule."""


def _in_range(value: float, low: Any, high: Any) -> bool:
    return (low is None or value >= low) and (high is None or value <= high)


def _range_text(low: Any, high: Any) -> str:
    return f" in [{'-inf' if low is None else low}, {'inf' if high is None else high}]"


@dataclass(frozen=True)
class Int(Spec):
    """A Python int within [low, high]."""

    low: Bound = None
    high: Bound = None

    def check(self, value: Any, obj: Any, where: str) -> int:
        low, high = resolve(self.low, obj), resolve(self.high, obj)
        if isinstance(value, bool) or not isinstance(value, int) or not _in_range(value, low, high):
            raise fail(where, "an integer" + _range_text(low, high), value)
        return value


@dataclass(frozen=True)
class Float(Spec):
    """A finite real within [low, high] (``finite=False`` also allows ±inf, never NaN)."""

    low: Bound = None
    high: Bound = None
    finite: bool = True

    def check(self, value: Any, obj: Any, where: str) -> float:
        low, high = resolve(self.low, obj), resolve(self.high, obj)
        ok = isinstance(value, int | float) and not isinstance(value, bool) and not math.isnan(value)
        if not ok or (self.finite and not math.isfinite(value)) or not _in_range(value, low, high):
            raise fail(where, ("a finite real" if self.finite else "a real") + _range_text(low, high), value)
        return float(value)


@dataclass(frozen=True)
class Bool(Spec):
    """True or False."""

    def check(self, value: Any, obj: Any, where: str) -> bool:
        if not isinstance(value, bool):
            raise fail(where, "a bool", value)
        return value


@dataclass(frozen=True)
class Str(Spec):
    """One of the given strings."""

    choices: tuple[str, ...]

    def check(self, value: Any, obj: Any, where: str) -> str:
        if value not in self.choices or not isinstance(value, str):
            raise fail(where, f"one of {list(self.choices)}", value)
        return value


@dataclass(frozen=True)
class Maybe(Spec):
    """None or a value of ``spec``."""

    spec: Spec

    def check(self, value: Any, obj: Any, where: str) -> Any:
        return None if value is None else self.spec.check(value, obj, where)


@dataclass(frozen=True)
class Array(Spec):
    """An ndarray of exactly ``dtype`` and ``shape`` (entries: int, attribute, callable, None = any).

    Values are finite (``nan`` allows NaN, ``finite=False`` allows ±inf) and within [low, high];
    ``integral`` requires whole numbers in a float array.
    """

    dtype: str | Callable[[Any], str]
    shape: Sequence[Bound]
    low: Bound = None
    high: Bound = None
    finite: bool = True
    nan: bool = False
    integral: bool = False

    def check(self, value: Any, obj: Any, where: str) -> np.ndarray:
        dtype = np.dtype(self.dtype if isinstance(self.dtype, str) else self.dtype(obj))
        if not isinstance(value, np.ndarray) or value.dtype != dtype:
            raise fail(where, f"an array of dtype {dtype}", value)
        shape = tuple(resolve(s, obj) for s in self.shape)
        if value.ndim != len(shape) or any(s is not None and n != s for n, s in zip(value.shape, shape, strict=True)):
            raise fail(where, f"an array of shape {tuple('any' if s is None else s for s in shape)}", value)
        if value.dtype.kind == "f":
            bad = np.isnan(value) if not self.nan else np.zeros(value.shape, dtype=bool)
            if self.finite:
                bad |= np.isinf(value)
            if bad.any():
                raise fail(where, "finite" if self.finite else "free of NaN", value)
            if self.integral and np.any(value[np.isfinite(value)] != np.round(value[np.isfinite(value)])):
                raise fail(where, "whole numbers", value)
        low, high = resolve(self.low, obj), resolve(self.high, obj)
        with np.errstate(invalid="ignore"):
            outside = np.zeros(value.shape, dtype=bool)
            if low is not None:
                outside |= value < low
            if high is not None:
                outside |= value > high
        if value.dtype.kind != "b" and outside.any():
            raise fail(where, "within" + _range_text(low, high)[3:], value)
        return np.array(value)


@dataclass(frozen=True)
class Tuple(Spec):
    """A tuple (or JSON list) of values of the given specs, in order."""

    specs: tuple[Spec, ...]

    def __init__(self, *specs: Spec) -> None:
        object.__setattr__(self, "specs", specs)

    def check(self, value: Any, obj: Any, where: str) -> tuple[Any, ...]:
        if not isinstance(value, tuple | list) or len(value) != len(self.specs):
            raise fail(where, f"a tuple of {len(self.specs)} values", value)
        return tuple(s.check(v, obj, f"{where}[{i}]") for i, (s, v) in enumerate(zip(self.specs, value, strict=True)))


@dataclass(frozen=True)
class ListOf(Spec):
    """A list (or tuple) of values of ``spec``, at most ``max_length`` of them."""

    spec: Spec
    max_length: Bound = None
    min_length: Bound = 0

    def check(self, value: Any, obj: Any, where: str) -> list[Any]:
        low, high = resolve(self.min_length, obj), resolve(self.max_length, obj)
        if not isinstance(value, list | tuple) or not _in_range(len(value), low, high):
            raise fail(where, f"a list of length{_range_text(low, high)}", value)
        return [self.spec.check(v, obj, f"{where}[{i}]") for i, v in enumerate(value)]


@dataclass(frozen=True)
class MappingOf(Spec):
    """A dict from ``key`` values to ``value`` values, at most ``max_length`` entries."""

    key: Spec
    value: Spec
    max_length: Bound = None

    def check(self, value: Any, obj: Any, where: str) -> dict[Any, Any]:
        high = resolve(self.max_length, obj)
        if not isinstance(value, dict) or not _in_range(len(value), 0, high):
            raise fail(where, f"a mapping of at most {high} entries", value)
        return {self.key.check(k, obj, f"{where} key"): self.value.check(v, obj, f"{where}[{k!r}]")
                for k, v in value.items()}


@dataclass(frozen=True)
class Record(Spec):
    """A dict with exactly the given string keys (a nested group of fields).

    ``derived`` names (values older files hold that are now recomputed) are accepted and dropped.
    """

    fields: Mapping[str, Spec]
    derived: tuple[str, ...] = ()

    def __init__(self, fields: Mapping[str, Spec] | None = None, /, *, derived: Sequence[str] = (),
                 **kw: Spec) -> None:
        object.__setattr__(self, "fields", {**(fields or {}), **kw})
        object.__setattr__(self, "derived", tuple(derived))

    def check(self, value: Any, obj: Any, where: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise fail(where, f"a record of fields {sorted(self.fields)}", value)
        return check_fields(self.fields, value, obj, where, ignored=self.derived)


def check_fields(fields: Mapping[str, Spec], values: dict[str, Any], obj: Any, where: str = "",
                 ignored: Sequence[str] = (), optional: Sequence[str] = ()) -> dict[str, Any]:
    """Check ``values`` against ``fields``: every key, no other, each value its spec.

    ``optional`` fields may be missing; ``ignored`` names are accepted and dropped.
    """
    prefix = f"{where}." if where else ""
    unknown = sorted(str(k) for k in values if k not in fields and k not in ignored)
    if unknown:
        raise DataFormatError(f"state field {prefix}{unknown[0]} is not a field of this class (unknown key)")
    missing = sorted(k for k in fields if k not in values and k not in optional)
    if missing:
        raise DataFormatError(f"state field {prefix}{missing[0]} is missing")
    return {name: spec.check(values[name], obj, prefix + name) for name, spec in fields.items() if name in values}


@dataclass(frozen=True)
class Instance(Spec):
    """An instance of ``cls`` (a registered dataclass the decoder rebuilt; a rule checks its content)."""

    cls: type

    def check(self, value: Any, obj: Any, where: str) -> Any:
        if type(value) is not self.cls:
            raise fail(where, f"a {self.cls.__name__}", value)
        return value


@dataclass(frozen=True)
class Generator(Spec):
    """A NumPy Generator (rebuilt by the decoder from a whitelisted bit generator and its state)."""

    def check(self, value: Any, obj: Any, where: str) -> np.random.Generator:
        if not isinstance(value, np.random.Generator):
            raise fail(where, "a random generator", value)
        return value


@dataclass(frozen=True)
class Noise(Spec):
    """A noise backend (or a list of them) of the same kinds as the built object's ``attribute``.

    So a file cannot turn secure noise into seeded noise, or change how many streams there are.
    """

    attribute: str

    def check(self, value: Any, obj: Any, where: str) -> Any:
        built = resolve(self.attribute, obj)
        kinds = [type(b) for b in built] if isinstance(built, list | tuple) else type(built)
        found = ([type(b) for b in value] if isinstance(value, list | tuple) else type(value))
        if found != kinds:
            raise fail(where, f"the noise of this object's parameters ({_kind_names(kinds)})", _kind_names(found))
        return value


def _kind_names(kinds: Any) -> str:
    return str([k.__name__ for k in kinds]) if isinstance(kinds, list) else kinds.__name__


@dataclass(frozen=True)
class Nested(Spec):
    """A persistable object of the same class and parameters as the built object's ``attribute``.

    Its own state was validated by its schema when it was decoded. Only ``ignore`` parameters
    (noise sources, checked by :class:`Noise`) may differ.
    """

    attribute: str
    ignore: tuple[str, ...] = ("rng", "backend")
    noise: str | None = "_noise"

    def check(self, value: Any, obj: Any, where: str) -> Any:
        built = resolve(self.attribute, obj)
        if type(value) is not type(built):
            raise fail(where, f"a {type(built).__name__}", value)
        if self.noise is not None and hasattr(built, self.noise):
            Noise(f"{self.attribute}.{self.noise}").check(getattr(value, self.noise), obj, f"{where}.{self.noise}")
        mine = {k: v for k, v in value.get_params().items() if k not in self.ignore}
        theirs = {k: v for k, v in built.get_params().items() if k not in self.ignore}
        if not _same(mine, theirs):
            raise fail(where, f"a {type(built).__name__} with the parameters this object gives it ({theirs})", mine)
        return value


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.shape == b.shape and bool(
            np.array_equal(a, b, equal_nan=a.dtype.kind == "f"))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return bool(type(a) is type(b) and a == b)


@dataclass(frozen=True)
class Rule:
    """An invariant across fields: ``holds(obj, state)`` is True for a valid state."""

    text: str
    holds: Callable[[Any, dict[str, Any]], Any]


def rule(text: str, holds: Callable[[Any, dict[str, Any]], Any]) -> Rule:
    """An invariant across fields, named by ``text`` in the error (``"time <= horizon"``)."""
    return Rule(text, holds)


@dataclass(frozen=True)
class StateSchema:
    """The saved state of a class: fields, rules across them, and derived names (recomputed, not saved).

    Parameters
    ----------
    fields : mapping of str to Spec
        Every saved field. Given as keyword arguments.
    rules : sequence of Rule
        Invariants checked after every field passed its own spec.
    derived : sequence of str
        Names older files may hold that are recomputed on load (their values are ignored).
    optional : sequence of str
        Fields older files may lack (the class's ``_set_state`` handles their absence).
    retired : mapping of str to str
        Fields of an earlier layout that cannot be checked or converted: a file holding one is
        refused with the text given (why, and what to do).
    """

    fields: Mapping[str, Spec]
    rules: tuple[Rule, ...] = ()
    derived: tuple[str, ...] = field(default=())
    optional: tuple[str, ...] = field(default=())
    retired: Mapping[str, str] = field(default_factory=dict)

    def __init__(self, fields: Mapping[str, Spec] | None = None, /, *, rules: Sequence[Rule] = (),
                 derived: Sequence[str] = (), optional: Sequence[str] = (), retired: Mapping[str, str] | None = None,
                 **kw: Spec) -> None:
        object.__setattr__(self, "fields", {**(fields or {}), **kw})
        object.__setattr__(self, "rules", tuple(rules))
        object.__setattr__(self, "derived", tuple(derived))
        object.__setattr__(self, "optional", tuple(optional))
        object.__setattr__(self, "retired", dict(retired or {}))

    def extend(self, *, rules: Sequence[Rule] = (), derived: Sequence[str] = (), **fields: Spec) -> StateSchema:
        """A copy with more fields, rules and derived names (for a subclass)."""
        return StateSchema({**self.fields, **fields}, rules=(*self.rules, *rules),
                           derived=(*self.derived, *derived), optional=self.optional, retired=self.retired)

    def validate(self, obj: Any, state: Any) -> dict[str, Any]:
        """Check ``state`` for ``obj`` (built from the file's parameters); return the values to restore."""
        if not isinstance(state, dict):
            raise DataFormatError(f"state must be a record of fields; got {_show(state)}")
        for name, why in self.retired.items():
            if name in state:
                raise DataFormatError(f"state field {name}: {why}")
        values = check_fields(self.fields, state, obj, ignored=self.derived, optional=self.optional)
        for r in self.rules:
            try:
                holds = bool(r.holds(obj, values))
            except (ArithmeticError, IndexError, KeyError, TypeError, ValueError):
                holds = False
            if not holds:
                raise DataFormatError(f"state breaks the rule {r.text}")
        return values
