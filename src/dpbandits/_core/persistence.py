"""Saving and loading agents and fitted policies: a versioned, documented file format (not pickle).

A state file is a NumPy ``.npz`` archive (a zip of ``.npy`` members) read with ``allow_pickle=False``:

* member ``__meta__``: UTF-8 JSON, ``{"format": "dpbandits-state", "format_version": 1,
  "library_version": ..., "class": "<module>.<qualname>", "params": {...}, "state": {...}}``;
* members ``a0``, ``a1``, …: the NumPy arrays that ``params`` and ``state`` refer to.

``params`` are the constructor arguments (:meth:`Persistable.get_params`); ``state`` holds the
attributes a class lists in ``_state_fields`` — what changes while it runs. Values are encoded as JSON
with tagged objects for what JSON lacks:

========================================  =====================================================
value                                     encoding
========================================  =====================================================
ndarray                                   ``{"__array__": "a3"}`` (member ``a3``)
tuple                                     ``{"__tuple__": [...]}``
dict with non-string keys                 ``{"__items__": [[key, value], ...]}``
numpy scalar                              the Python scalar
float inf / nan                           ``{"__float__": "inf"}`` (JSON has no infinities)
numpy Generator                           ``{"__generator__": bit_generator.state}``
SeedSequence                              ``{"__seed_sequence__": {"entropy": ..., "spawn_key": ...}}``
secure noise backend                      ``{"__noise__": {"kind": "secure"}}`` (nothing to save)
seeded NumPy noise backend                ``{"__noise__": {"kind": "numpy", "generator": ...}}``
a :class:`Persistable` value              ``{"__object__": class, "params": ..., "state": ...}``
a dataclass of the dpbandits package       ``{"__dataclass__": class, "fields": {...}}``
========================================  =====================================================

Only classes of the ``dpbandits`` package are ever instantiated on load, and dataclasses and
:class:`Persistable` objects are rebuilt through their constructors, so a file cannot run code.
A file of a newer ``format_version`` is refused with a message saying so. Writes are atomic (a
temporary file in the same directory, flushed and fsynced, then renamed over the target).

Privacy: a saved agent is the curator's private state (it holds raw statistics), not a release. It
never holds a secure backend's noise source (there is none to save) and never changes what is
released; seeded noise (``insecure_seeded_noise=True``) saves its generator state so that a loaded
agent continues exactly as the original would.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import inspect
import io
import json
import math
import os
import zipfile
from pathlib import Path
from typing import Any, ClassVar, Self

import numpy as np

from dpbandits._core.atomic import atomic_write_bytes
from dpbandits._core.errors import DataFormatError, InvalidParameterError

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "Persistable",
    "atomic_write_bytes",
    "read_state",
    "register_codec",
    "state_bytes",
    "write_state",
]

FORMAT = "dpbandits-state"
FORMAT_VERSION = 1
_META = "__meta__"


_CODECS: dict[str, tuple[type, Any, Any]] = {}


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
        ``encode_value`` / ``decode_value`` encode nested values (generators, arrays).
    """
    _CODECS[tag] = (cls, encode, decode)


class _Unsaved:
    """Marker of a constructor argument that cannot be saved (a callable): ``load`` needs it again."""


def _class_path(obj_or_cls: Any) -> str:
    cls = obj_or_cls if isinstance(obj_or_cls, type) else type(obj_or_cls)
    return f"{cls.__module__}.{cls.__qualname__}"


def _resolve_class(path: str) -> type:
    module_name, _, qualname = path.rpartition(".")
    if not (module_name == "dpbandits" or module_name.startswith("dpbandits.")) or "<" in qualname:
        raise DataFormatError(f"state file refers to class {path!r}, which is not a dpbandits class")
    try:
        obj: Any = importlib.import_module(module_name)
        for part in qualname.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError):
        raise DataFormatError(f"state file refers to class {path!r}, which this dpbandits does not have") from None
    if not isinstance(obj, type):
        raise DataFormatError(f"state file refers to {path!r}, which is not a class")
    return obj


class _Encoder:
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
        if isinstance(value, _Unsaved):
            return {"__unsaved__": True}
        if isinstance(value, Persistable):
            return {"__object__": _class_path(value), "params": self.encode(value.get_params()),
                    "state": self.encode(value._get_state())}
        if dataclasses.is_dataclass(value) and not isinstance(value, type) and _class_path(value).startswith("dpbandits."):
            fields = {f.name: self.encode(getattr(value, f.name)) for f in dataclasses.fields(value) if f.init}
            return {"__dataclass__": _class_path(value), "fields": fields}
        if isinstance(value, float | int):  # pragma: no cover - covered above
            return value
        raise InvalidParameterError(f"cannot save a value of type {type(value).__name__}: {value!r}")


class _Decoder:
    def __init__(self, arrays: Any, overrides: dict[str, Any]) -> None:
        self.arrays = arrays
        self.overrides = overrides

    def decode(self, value: Any, name: str = "") -> Any:
        if isinstance(value, list):
            return [self.decode(v) for v in value]
        if not isinstance(value, dict):
            return value
        if "__array__" in value:
            return np.array(self.arrays[value["__array__"]])
        if "__float__" in value:
            return float(value["__float__"])
        if "__tuple__" in value:
            return tuple(self.decode(v) for v in value["__tuple__"])
        if "__dict__" in value:
            return {k: self.decode(v, k) for k, v in value["__dict__"].items()}
        if "__items__" in value:
            return {self.decode(k): self.decode(v) for k, v in value["__items__"]}
        if "__generator__" in value:
            state = self.decode(value["__generator__"])
            bit_generator = getattr(np.random, state["bit_generator"])()
            bit_generator.state = state
            return np.random.Generator(bit_generator)
        if "__seed_sequence__" in value:
            spec = value["__seed_sequence__"]
            return np.random.SeedSequence(self.decode(spec["entropy"]), spawn_key=self.decode(spec["spawn_key"]))
        for tag, (_cls, _encode, decode) in _CODECS.items():
            if tag in value:
                return decode(value[tag], self.decode)
        if "__unsaved__" in value:
            if name not in self.overrides:
                raise InvalidParameterError(
                    f"{name} was not saved (it is a callable); pass it to load(): load(path, {name}=...)"
                )
            return self.overrides[name]
        if "__object__" in value:
            cls = _resolve_class(value["__object__"])
            if not issubclass(cls, Persistable):
                raise DataFormatError(f"class {value['__object__']!r} cannot be loaded from a state file")
            return cls._rebuild(self.decode(value["params"]), self.decode(value["state"]), self.overrides)
        if "__dataclass__" in value:
            cls = _resolve_class(value["__dataclass__"])
            if not dataclasses.is_dataclass(cls):
                raise DataFormatError(f"class {value['__dataclass__']!r} is not a dataclass")
            return cls(**{k: self.decode(v, k) for k, v in value["fields"].items()})
        raise DataFormatError(f"unknown value in state file: {value!r}")


def state_bytes(obj: Persistable) -> bytes:
    """Encode ``obj`` in the state format (see the module docstring): the bytes a state file holds."""
    from dpbandits import __version__

    encoder = _Encoder()
    meta = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "library_version": __version__,
        "class": _class_path(obj),
        "params": encoder.encode(obj.get_params()),
        "state": encoder.encode(obj._get_state()),
    }
    buffer = io.BytesIO()
    members = {_META: np.frombuffer(json.dumps(meta).encode("utf-8"), dtype=np.uint8), **encoder.arrays}
    np.savez(buffer, **members)  # type: ignore[arg-type]
    return buffer.getvalue()


def write_state(path: str | os.PathLike[str], obj: Persistable) -> Path:
    """Save ``obj`` (see the module docstring for the format); returns the path written."""
    return atomic_write_bytes(path, state_bytes(obj))


def read_state(path: str | os.PathLike[str] | bytes) -> tuple[type, dict[str, Any], Any]:
    """Read a state file, or the bytes of one: (class, meta, arrays).

    Refuses other files and newer format versions.
    """
    source: io.BytesIO | Path
    if isinstance(path, bytes | bytearray | memoryview):
        name, source = "state bytes", io.BytesIO(bytes(path))
    else:
        name, source = str(Path(path)), Path(path)
    try:
        archive = np.load(source, allow_pickle=False)
    except FileNotFoundError:
        raise DataFormatError(f"{name}: no such state file") from None
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        raise DataFormatError(f"{name}: not a dpbandits state file ({exc})") from None
    if not hasattr(archive, "files") or _META not in archive.files:
        raise DataFormatError(f"{name}: not a dpbandits state file (no {_META} member)")
    try:
        meta = json.loads(bytes(archive[_META]).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, ValueError) as exc:
        raise DataFormatError(f"{name}: damaged state file header ({exc})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise DataFormatError(f"{name}: not a dpbandits state file (format {meta.get('format')!r})"
                              if isinstance(meta, dict) else f"{name}: damaged state file header")
    version = meta.get("format_version")
    if not isinstance(version, int) or version > FORMAT_VERSION or version < 1:
        raise DataFormatError(
            f"{name}: state format version {version!r} (written by dpbandits {meta.get('library_version')}); "
            f"this dpbandits reads version {FORMAT_VERSION}: upgrade dpbandits to load it"
        )
    return _resolve_class(str(meta.get("class"))), meta, archive


_NOT_SAVED = ("accountant",)
"""Constructor arguments never saved: an accountant belongs to the caller (a loaded agent spends nothing)."""


def _record_rng(rng: Any) -> Any:
    """The ``rng`` argument as a reproducible value: the SeedSequence an int or None stands for.

    A Generator is recorded as a copy of its state at construction. The object is then built from
    the recorded value, so rebuilding it from its parameters replays its public coins exactly.
    """
    if rng is None or (isinstance(rng, int | np.integer) and not isinstance(rng, bool)):
        return np.random.SeedSequence(None if rng is None else int(rng))
    if isinstance(rng, np.random.Generator):
        bit_generator = type(rng.bit_generator)()
        bit_generator.state = rng.bit_generator.state
        return np.random.Generator(bit_generator)
    return rng


class Persistable:
    """Mixin: ``get_params``, ``__repr__``, ``save(path)`` and ``load(path)`` for agents and policies.

    The constructor's arguments are recorded when the object is built (the outermost ``__init__`` of
    a class hierarchy; with ``_replay_rng``, ``rng`` as the SeedSequence it stands for, so that public
    coins replay) and returned by :meth:`get_params`. A subclass lists in ``_state_fields`` the attributes that change
    while it runs; loading rebuilds the object from its parameters and restores those fields.
    Arguments that are callables are listed in ``_unsaved_params`` and passed again to :meth:`load`.
    """

    _state_fields: ClassVar[tuple[str, ...]] = ()
    _unsaved_params: ClassVar[tuple[str, ...]] = ()
    """Constructor arguments that are callables: not saved, to be passed again to :meth:`load`."""
    _fitted_state: ClassVar[bool] = False
    """Whether the state also holds every fitted attribute (names ending in ``_``, as in scikit-learn)."""
    _replay_rng: ClassVar[bool] = False
    """Whether ``rng`` seeds public coins drawn at construction that are not in ``_state_fields``:
    then it is recorded as the SeedSequence it stands for (never for a privacy-noise seed)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        init = cls.__dict__.get("__init__")
        if init is None:
            return
        signature = inspect.signature(init)

        @functools.wraps(init)
        def recording_init(self: Any, *args: Any, **kw: Any) -> None:
            if getattr(self, "_recording_params", False):  # an inner __init__ of the hierarchy
                init(self, *args, **kw)
                return
            bound = signature.bind(self, *args, **kw)
            bound.apply_defaults()
            if "rng" in bound.arguments and cls._replay_rng:
                bound.arguments["rng"] = _record_rng(bound.arguments["rng"])
            params: dict[str, Any] = {}
            for name, value in bound.arguments.items():
                kind = signature.parameters[name].kind
                if name == "self" or name in _NOT_SAVED:
                    continue
                if kind is inspect.Parameter.VAR_KEYWORD:
                    params.update(value)
                elif kind is not inspect.Parameter.VAR_POSITIONAL:
                    params[name] = value
            self._recording_params = True
            try:
                init(*bound.args, **bound.kwargs)
            finally:
                self._recording_params = False
            self._params = params

        cls.__init__ = recording_init  # type: ignore[method-assign]

    def get_params(self) -> dict[str, Any]:
        """The constructor arguments of this object (callables marked, the accountant left out).

        Returns
        -------
        dict
        """
        params = dict(getattr(self, "_params", {}))
        for name in self._unsaved_params:
            if name in params:
                params[name] = _Unsaved()
        return params

    def _state_names(self) -> list[str]:
        names = list(self._state_fields)
        if self._fitted_state:
            names += [k for k in vars(self) if k.endswith("_") and not k.startswith("__") and k not in names]
        return names

    def _get_state(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self._state_names() if hasattr(self, name)}

    def _set_state(self, state: dict[str, Any]) -> None:
        allowed = set(self._state_fields)
        for name, value in state.items():
            if name in allowed or (self._fitted_state and name.endswith("_")):
                setattr(self, name, value)

    @classmethod
    def _rebuild(cls, params: dict[str, Any], state: dict[str, Any], overrides: dict[str, Any]) -> Self:
        obj = cls(**{**params, **{k: v for k, v in overrides.items() if k in params}})
        obj._set_state(state)
        return obj

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Save this object to ``path`` atomically, in the versioned state format.

        Returns
        -------
        pathlib.Path
            The file written.
        """
        return write_state(path, self)

    @classmethod
    def load(cls, path: str | os.PathLike[str], **overrides: Any) -> Self:
        """Load an object saved by :meth:`save`; it continues exactly as the saved one would.

        Parameters
        ----------
        path : str or PathLike
        **overrides
            Values of constructor arguments that could not be saved (callables), by name.

        Raises
        ------
        DataFormatError
            If the file is not a dpbandits state file, comes from a newer format version, or holds
            another class.
        """
        return cls._from_state(read_state(path), str(path), overrides)

    def to_bytes(self) -> bytes:
        """Encode the object in the state format of :meth:`save`, as bytes (for a database, a socket...).

        Returns
        -------
        bytes
            Exactly what :meth:`save` would write to a file.
        """
        return state_bytes(self)

    @classmethod
    def from_bytes(cls, data: bytes, **overrides: Any) -> Self:
        """Rebuild an object from :meth:`to_bytes` (or a state file's content); as :meth:`load`.

        Raises
        ------
        DataFormatError
            As :meth:`load`.
        """
        return cls._from_state(read_state(bytes(data)), "state bytes", overrides)

    @classmethod
    def _from_state(cls, stored: tuple[type, dict[str, Any], Any], name: str, overrides: dict[str, Any]) -> Self:
        stored_cls, meta, archive = stored
        if not issubclass(stored_cls, cls):
            raise DataFormatError(f"{name}: holds a {stored_cls.__name__}, not a {cls.__name__}")
        decoder = _Decoder(archive, overrides)
        params = decoder.decode(meta["params"])
        state = decoder.decode(meta["state"])
        return stored_cls._rebuild(params, state, overrides)

    def __repr__(self) -> str:
        try:
            params = self.get_params()
        except AttributeError:
            return f"{type(self).__name__}(...)"
        # a seed is never shown: with insecure_seeded_noise it is the noise seed
        shown = ", ".join(f"{k}={'<hidden>' if k == 'rng' and v is not None else _short_repr(v)}"
                          for k, v in params.items())
        return f"{type(self).__name__}({shown})"


def _short_repr(value: Any) -> str:
    if isinstance(value, np.ndarray):
        return f"array(shape={value.shape})"
    if isinstance(value, _Unsaved):
        return "<callable>"
    if isinstance(value, np.random.Generator | np.random.SeedSequence):
        return type(value).__name__  # never a seed in a repr
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
