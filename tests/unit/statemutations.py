"""Well-formed semantic mutations of saved state files (issue 35), for test_state_mutations.

Each mutation changes one stored field of a state file the way a plausible but wrong file would: a
number ±1, ×100, negated, NaN, ±inf or 2^40; an array with one entry or all entries changed, one unit
moved between two entries (its total kept), of another dtype or shape; two entries swapped; a field of
a record removed, renamed, or one added. The file stays a valid
archive with a valid header: only the meaning of the state changes.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
from statefiles import pack, unpack

OPAQUE = ("__generator__", "__noise__", "__seed_sequence__", "__dataclass__")
"""Encoded values the mutations do not enter: random generator states and noise sources (their every
valid value is a state of some seed) and registered dataclasses (their own tests fuzz them)."""


@dataclass(frozen=True)
class Mutation:
    """One change of one field: ``path`` in the encoded state, ``kind`` of change."""

    path: tuple[Any, ...]
    kind: str
    apply: Callable[[dict[str, Any], dict[str, np.ndarray]], None]

    @property
    def field(self) -> str:
        """The field's name: its path without the encoding's wrappers."""
        return ".".join(str(p) for p in self.path if p not in ("__dict__", "__tuple__", "state", "__items__"))

    def blob(self, data: bytes) -> bytes:
        meta, members = unpack(data)
        self.apply(meta, members)
        return pack(meta, members)


def _get(root: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        root = root[key]
    return root


def _setter(path: tuple[Any, ...], value: Any) -> Callable[[dict[str, Any], dict[str, np.ndarray]], None]:
    def apply(meta: dict[str, Any], members: dict[str, np.ndarray]) -> None:
        _get(meta["state"], path[:-1])[path[-1]] = copy.deepcopy(value)
    return apply


NUMBER_CHANGES: dict[str, Callable[[Any], Any]] = {
    "+1": lambda v: v + 1, "-1": lambda v: v - 1, "x100": lambda v: v * 100, "negated": lambda v: -v,
    "nan": lambda v: {"__float__": "nan"}, "inf": lambda v: {"__float__": "inf"},
    "-inf": lambda v: {"__float__": "-inf"}, "2^40": lambda v: 2**40, "+0.5": lambda v: v + 0.5,
    "to-string": lambda v: str(v), "to-null": lambda v: None, "to-list": lambda v: [v],
}


def _array_changes(array: np.ndarray) -> dict[str, Callable[[np.ndarray], np.ndarray]]:
    changes: dict[str, Callable[[np.ndarray], np.ndarray]] = {}
    kind = array.dtype.kind
    if array.size and kind in "iuf":
        def one(value: Any) -> Callable[[np.ndarray], np.ndarray]:
            def change(a: np.ndarray) -> np.ndarray:
                if isinstance(value, float) and not np.isfinite(value):
                    out = a.astype(np.float64)
                elif kind in "iu" and not np.iinfo(a.dtype).min <= value <= np.iinfo(a.dtype).max:
                    out = a.astype(np.int64)  # a wider integer array (bytes, say, saved as int64 by mistake)
                else:
                    out = a.copy()
                out.reshape(-1)[out.size // 2] = value
                return out
            return change

        changes.update({
            "one+1": lambda a: _entry(a, lambda x: x + 1), "one-1": lambda a: _entry(a, lambda x: x - 1),
            "all+1": lambda a: a + 1, "x100": lambda a: a * 100, "negated": lambda a: -a if kind != "u" else a ^ 1,
            "one=2^40": one(2**40),
            "moved": _moved,
        })
    if array.size > 1:
        changes["swapped"] = _swapped
        if kind == "f":
            changes.update({"one=nan": one(np.nan), "one=inf": one(np.inf), "one=-inf": one(-np.inf),
                            "one+0.5": lambda a: _entry(a, lambda x: x + 0.5)})
    if kind == "b" and array.size:
        changes["one-flipped"] = lambda a: _entry(a, lambda x: not x)
    for dtype in ("float64", "int64", "float32", "int32", "bool", "uint64"):
        if np.dtype(dtype) != array.dtype and kind in "biuf":
            changes[f"dtype-{dtype}"] = lambda a, d=dtype: a.astype(d)
    if array.ndim:
        changes.update({
            "shape-extra-axis": lambda a: a[None],
            "shape-one-more": lambda a: np.concatenate([a, a[-1:] if a.shape[0] else np.zeros((1, *a.shape[1:]), a.dtype)]),
            "shape-one-less": lambda a: a[:-1],
        })
    if array.ndim > 1:
        changes["shape-flat"] = lambda a: a.reshape(-1)
    return changes


def _moved(a: np.ndarray) -> np.ndarray:
    """One unit moved from the last entry holding one to the next entry (totals kept: a sum rule still holds)."""
    out = a.copy()
    flat = out.reshape(-1)
    holding = np.flatnonzero(flat >= 1)
    if flat.size > 1 and holding.size:
        source = int(holding[-1])
        flat[source] -= 1
        flat[(source + 1) % flat.size] += 1
    return out


def _swapped(a: np.ndarray) -> np.ndarray:
    """The first and the last entries exchanged (the same values in another order)."""
    out = a.copy()
    flat = out.reshape(-1)
    flat[0], flat[-1] = flat[-1].copy(), flat[0].copy()
    return out


def _entry(a: np.ndarray, change: Callable[[Any], Any]) -> np.ndarray:
    out = a.copy()
    flat = out.reshape(-1)
    flat[flat.size // 2] = change(flat[flat.size // 2])
    return out


def mutations(data: bytes) -> Iterator[Mutation]:
    """Every mutation of every stored field of the state file ``data``."""
    meta, members = unpack(data)

    def walk(value: Any, path: tuple[Any, ...]) -> Iterator[Mutation]:
        if isinstance(value, dict):
            if any(key in value for key in OPAQUE):
                return
            if set(value) == {"__array__"}:
                array = members[value["__array__"]]
                for kind, change in _array_changes(array).items():
                    yield Mutation(path, kind, _array_setter(value["__array__"], change))
                return
            if set(value) == {"__float__"}:
                for kind in ("finite", "to-null"):
                    yield Mutation(path, kind, _setter(path, 1.0 if kind == "finite" else None))
                return
            record = "__dict__" in value and len(value) == 1
            fields = value["__dict__"] if record else value
            base = (*path, "__dict__") if record else path
            if record or "__object__" not in value:
                for key in list(fields):
                    yield Mutation((*base, key), "field-removed", _remover(base, key))
                    yield Mutation((*base, key), "field-renamed", _renamer(base, key))
                if fields or record:
                    yield Mutation((*base, "extra"), "field-added", _setter((*base, "extra"), 0))
            for key, item in fields.items():
                if key not in ("params", "__object__"):
                    yield from walk(item, (*base, key))
        elif isinstance(value, list):  # a long list (a transcript): its first and last entries
            for index in sorted({0, len(value) - 1} if len(value) > 2 else range(len(value))):
                yield from walk(value[index], (*path, index))
        elif isinstance(value, bool):
            yield Mutation(path, "negated", _setter(path, not value))
            yield Mutation(path, "to-int", _setter(path, int(value)))
        elif isinstance(value, int | float):
            for kind, change in NUMBER_CHANGES.items():
                yield Mutation(path, kind, _setter(path, change(value)))
        elif value is None:
            yield Mutation(path, "null-to-0", _setter(path, 0))

    yield from walk(meta["state"], ())


def _array_setter(name: str, change: Callable[[np.ndarray], np.ndarray]) -> Callable[..., None]:
    def apply(meta: dict[str, Any], members: dict[str, np.ndarray]) -> None:
        with np.errstate(all="ignore"):
            members[name] = np.ascontiguousarray(change(members[name]))
    return apply


def _remover(base: tuple[Any, ...], key: Any) -> Callable[..., None]:
    def apply(meta: dict[str, Any], members: dict[str, np.ndarray]) -> None:
        del _get(meta["state"], base)[key]
    return apply


def _renamer(base: tuple[Any, ...], key: Any) -> Callable[..., None]:
    def apply(meta: dict[str, Any], members: dict[str, np.ndarray]) -> None:
        record = _get(meta["state"], base)
        record[f"{key}_renamed"] = record.pop(key)
    return apply
