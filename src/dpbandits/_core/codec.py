"""Values of the state format as JSON and arrays, and back, without letting a file name code.

The encoding of each value type is the table of :mod:`dpbandits._core.persistence`. Decoding never
imports or calls anything a file names: a class named by a file is looked up in a registry of the
library's persistable classes (filled when they are defined) and of the dataclasses registered with
:func:`register_state_dataclass`; a random generator is rebuilt from a whitelist of NumPy bit
generators (:data:`BIT_GENERATORS`) whose state setter validates the stored state; a higher layer's
type is decoded only by the codec it registered (:func:`register_codec`).
"""

from __future__ import annotations

import dataclasses
import importlib
import math
from typing import Any

import numpy as np

from dpbandits._core.errors import DataFormatError, DPBanditsError, InvalidParameterError

__all__ = [
    "BIT_GENERATORS",
    "Decoder",
    "Encoder",
    "Unsaved",
    "class_path",
    "persistable_class",
    "register_codec",
    "register_persistable",
    "register_state_dataclass",
]

BIT_GENERATORS: dict[str, type[np.random.BitGenerator]] = {
    cls.__name__: cls for cls in (np.random.PCG64, np.random.PCG64DXSM, np.random.Philox, np.random.SFC64,
                                  np.random.MT19937)
}
"""The bit generators a state file may name (by class name)."""

PERSISTABLE_MODULES = (
    "dpbandits.privacy.counters",
    "dpbandits.algorithms.bai.phased",
    "dpbandits.algorithms.bai.dp_bai",
    "dpbandits.algorithms.bai.dp_od",
    "dpbandits.algorithms.bai.od_linbai",
    "dpbandits.algorithms.bai.uniform",
    "dpbandits.algorithms.bai.sequential_halving",
    "dpbandits.algorithms.dueling",
    "dpbandits.algorithms.kernel.usca",
    "dpbandits.algorithms.kernel.learners",
    "dpbandits.algorithms.offline",
    "dpbandits.algorithms.offline.simulate",  # the offline package is lazy: this imports its classes
)
"""Modules defining the persistable classes: imported (fixed names, never a file's) before a lookup."""

_PERSISTABLE: dict[str, type] = {}
_DATACLASSES: dict[str, type] = {}
_CODECS: dict[str, tuple[type, Any, Any]] = {}


def class_path(obj_or_cls: Any) -> str:
    """``module.qualname`` of a class or of an object's class."""
    cls = obj_or_cls if isinstance(obj_or_cls, type) else type(obj_or_cls)
    return f"{cls.__module__}.{cls.__qualname__}"


def register_persistable(cls: type) -> None:
    """Make a persistable class loadable from state files.

    Called for every subclass of ``Persistable`` defined in :data:`PERSISTABLE_MODULES`; others (the
    deliberately broken variants of :mod:`dpbandits.audit.cases`, an application's subclasses) are
    not loadable unless registered explicitly, so a file cannot swap an agent for a subclass of it.
    """
    _PERSISTABLE[class_path(cls)] = cls


def register_state_dataclass(cls: type) -> type:
    """Allow a dataclass of the library in state files (rebuilt through its constructor); a decorator."""
    if not dataclasses.is_dataclass(cls) or not cls.__module__.startswith("dpbandits."):
        raise InvalidParameterError(f"only dataclasses of dpbandits can be saved; got {cls!r}")
    _DATACLASSES[class_path(cls)] = cls
    return cls


def _lookup(path: Any, table: dict[str, type], what: str) -> type:
    if not isinstance(path, str):
        raise DataFormatError(f"state file names a {what} by {path!r}, which is not a class name")
    if path not in table:
        for module in PERSISTABLE_MODULES:  # fixed names: a file never chooses what is imported
            importlib.import_module(module)
    if path not in table:
        raise DataFormatError(f"state file refers to {path!r}, which is not a {what} of this dpbandits")
    return table[path]


def persistable_class(path: Any) -> type:
    """The registered persistable class named ``path`` (``module.qualname``); refuses any other name."""
    return _lookup(path, _PERSISTABLE, "persistable class")


def register_codec(tag: str, cls: type, encode: Any, decode: Any) -> None:
    """Teach the state format a type of a higher layer (the noise backends register themselves).

    Parameters
    ----------
    tag : str
        The JSON key that marks an encoded value (``"__noise__"``).
    cls : type
        Values that are instances of ``cls`` are encoded as ``{tag: encode(value, encode_value)}``.
    encode, decode : callable
        ``encode(value, encode_value) -> JSON-able`` and ``decode(payload, decode_value) -> value``;
        ``encode_value`` / ``decode_value`` encode nested values (generators, arrays). ``decode``
        raises :class:`DataFormatError` on a payload it does not know.
    """
    _CODECS[tag] = (cls, encode, decode)


class Unsaved:
    """Marker of a constructor argument that cannot be saved (a callable): ``load`` needs it again."""


class Encoder:
    """Encode values as JSON, collecting arrays as members ``a0``, ``a1``, ..."""

    def __init__(self) -> None:
        self.arrays: dict[str, np.ndarray] = {}

    def encode(self, value: Any) -> Any:
        if value is None or isinstance(value, bool | str):
            return value
        if isinstance(value, int | np.integer) and not isinstance(value, bool):
            return int(value)
        if isinstance(value, float | np.floating):
            v = float(value)
            return v if math.isfinite(v) else {"__float__": repr(v)}
        if isinstance(value, np.bool_):
            return bool(value)
        if isinstance(value, np.ndarray):
            if value.dtype == object:
                raise InvalidParameterError("cannot save an object array (only numeric and string arrays)")
            key = f"a{len(self.arrays)}"
            self.arrays[key] = value
            return {"__array__": key}
        if isinstance(value, tuple):
            return {"__tuple__": [self.encode(v) for v in value]}
        if isinstance(value, list):
            return [self.encode(v) for v in value]
        if isinstance(value, dict):
            if all(isinstance(k, str) for k in value):
                return {"__dict__": {k: self.encode(v) for k, v in value.items()}}
            return {"__items__": [[self.encode(k), self.encode(v)] for k, v in value.items()]}
        if isinstance(value, np.random.Generator):
            return {"__generator__": self.encode(value.bit_generator.state)}
        if isinstance(value, np.random.SeedSequence):
            return {"__seed_sequence__": {"entropy": self.encode(value.entropy),
                                          "spawn_key": self.encode(tuple(value.spawn_key))}}
        for tag, (cls, encode, _decode) in _CODECS.items():
            if isinstance(value, cls):
                return {tag: encode(value, self.encode)}
        if isinstance(value, Unsaved):
            return {"__unsaved__": True}
        if class_path(value) in _PERSISTABLE:
            return {"__object__": class_path(value), "params": self.encode(value.get_params()),
                    "state": self.encode(value._get_state())}
        if class_path(value) in _DATACLASSES:
            fields = {f.name: self.encode(getattr(value, f.name)) for f in dataclasses.fields(value) if f.init}
            return {"__dataclass__": class_path(value), "fields": fields}
        raise InvalidParameterError(f"cannot save a value of type {type(value).__name__}: {value!r}")


def _record(value: Any, keys: set[str], what: str) -> dict[str, Any]:
    if not isinstance(value, dict) or set(value) != keys:
        raise DataFormatError(f"damaged {what} in state file: {str(value)[:60]!r}")
    return value


MAX_NESTING = 100
"""Deepest nesting of values a state file may hold (saved objects nest a few levels): deeper is refused
with the same error on every Python version, rather than by whichever recursion limit is hit first."""


class Decoder:
    """Decode values of the state format; ``overrides`` supply what was not saved (callables)."""

    def __init__(self, arrays: dict[str, np.ndarray], overrides: dict[str, Any], unsaved: tuple[str, ...] = ()) -> None:
        self.arrays = arrays
        self.overrides = overrides
        self.unsaved = unsaved  # the names the stored class does not save (callables)
        self._depth = 0

    def decode(self, value: Any, name: str = "") -> Any:
        """The value a stored JSON value stands for (at most :data:`MAX_NESTING` levels deep)."""
        self._depth += 1
        try:
            if self._depth > MAX_NESTING:
                raise DataFormatError(f"values nested too deeply for a state file (more than {MAX_NESTING} levels)")
            return self._decode(value, name)
        finally:
            self._depth -= 1

    def _decode(self, value: Any, name: str) -> Any:
        if isinstance(value, list):
            return [self.decode(v) for v in value]
        if not isinstance(value, dict):
            if isinstance(value, float) and not math.isfinite(value):  # JSON's NaN/Infinity extension
                raise DataFormatError("state file holds a bare non-finite float")
            return value
        if len(value) != 1 and not ({"__object__", "__dataclass__"} & set(value)):
            raise DataFormatError(f"damaged value in state file: {str(value)[:60]!r}")
        tag, payload = next(iter(value.items()))
        if tag == "__array__":
            if not isinstance(payload, str) or payload not in self.arrays:
                raise DataFormatError(f"state file refers to a missing array member {payload!r}")
            return np.array(self.arrays[payload])
        if tag == "__float__":
            if payload not in ("inf", "-inf", "nan"):
                raise DataFormatError(f"damaged float in state file: {payload!r}")
            return float(payload)
        if tag == "__tuple__":
            return tuple(self.decode(_list(payload)))
        if tag == "__dict__":
            if not isinstance(payload, dict):
                raise DataFormatError("damaged record in state file")
            return {k: self.decode(v, k) for k, v in payload.items()}
        if tag == "__items__":
            items = [self.decode(item) for item in _list(payload)]
            if not all(isinstance(item, list) and len(item) == 2 for item in items):
                raise DataFormatError("damaged mapping in state file")
            try:
                return dict(items)
            except TypeError:
                raise DataFormatError("damaged mapping in state file (unhashable key)") from None
        if tag == "__generator__":
            return self._generator(self.decode(payload))
        if tag == "__seed_sequence__":
            spec = _record(payload, {"entropy", "spawn_key"}, "seed sequence")
            entropy, spawn_key = self.decode(spec["entropy"]), self.decode(spec["spawn_key"])
            if not (isinstance(entropy, int) and entropy >= 0 and isinstance(spawn_key, tuple)
                    and all(isinstance(k, int) and 0 <= k < 2**63 for k in spawn_key)) or isinstance(entropy, bool):
                raise DataFormatError("damaged seed sequence in state file")
            return np.random.SeedSequence(entropy, spawn_key=spawn_key)
        if tag in _CODECS:
            return _CODECS[tag][2](payload, self.decode)
        if tag == "__unsaved__":
            if name not in self.unsaved:
                raise DataFormatError(f"state file marks {name!r} as an unsaved callable; this class has none such")
            if name not in self.overrides:
                raise InvalidParameterError(
                    f"{name} was not saved (it is a callable); pass it to load(): load(path, {name}=...)"
                )
            return self.overrides[name]
        if "__object__" in value:
            spec = _record(value, {"__object__", "params", "state"}, "object")
            cls: Any = persistable_class(spec["__object__"])
            return cls._rebuild(self.decode(spec["params"]), self.decode(spec["state"]), self)
        if "__dataclass__" in value:
            spec = _record(value, {"__dataclass__", "fields"}, "record")
            cls = _lookup(spec["__dataclass__"], _DATACLASSES, "saved dataclass")
            names = {f.name for f in dataclasses.fields(cls) if f.init}
            if not isinstance(spec["fields"], dict) or set(spec["fields"]) != names:
                raise DataFormatError(f"state file holds a {cls.__name__} without exactly the fields {sorted(names)}")
            fields = {k: self.decode(v, k) for k, v in spec["fields"].items()}
            try:
                return cls(**fields)
            except (DPBanditsError, TypeError, ValueError, ArithmeticError) as exc:
                raise DataFormatError(f"state file holds an invalid {cls.__name__}: {exc}") from None
        raise DataFormatError(f"unknown value in state file: {str(value)[:60]!r}")

    @staticmethod
    def _generator(state: Any) -> np.random.Generator:
        """A Generator from a whitelisted bit generator and its (NumPy-validated) state."""
        name = state.get("bit_generator") if isinstance(state, dict) else None
        if not isinstance(name, str) or name not in BIT_GENERATORS:
            raise DataFormatError(
                f"state file names the bit generator {name!r}; only {sorted(BIT_GENERATORS)} are loaded"
            )
        bit_generator = BIT_GENERATORS[name]()
        try:
            bit_generator.state = state
        except (TypeError, ValueError, KeyError, OverflowError, IndexError) as exc:
            raise DataFormatError(f"damaged {name} generator state in state file ({exc})") from None
        return np.random.Generator(bit_generator)


def _list(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise DataFormatError(f"damaged list in state file: {str(value)[:60]!r}")
    return value
