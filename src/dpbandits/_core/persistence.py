"""Saving and loading agents and fitted policies: a versioned, documented file format (not pickle).

A state file is a NumPy ``.npz`` archive (a zip of ``.npy`` members) read with ``allow_pickle=False``:

* member ``__meta__``: UTF-8 JSON, ``{"format": "dpbandits-state", "format_version": 2,
  "library_version": ..., "class": "<module>.<qualname>", "lineage": "<32 hex digits>",
  "generation": <int>, "params": {...}, "state": {...}}``;
* members ``a0``, ``a1``, …: the NumPy arrays that ``params`` and ``state`` refer to.

``params`` are the constructor arguments (:meth:`Persistable.get_params`); ``state`` holds the
fields the class declares in its schema (``_schema``, a :class:`~dpbandits._core.schema.StateSchema`)
— what changes while it runs, derived values excluded. Values are encoded as JSON with tagged objects
for what JSON lacks (:mod:`dpbandits._core.codec`):

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
a registered dataclass                    ``{"__dataclass__": class, "fields": {...}}``
========================================  =====================================================

Threat model: a file is input from whoever could write it. ``load``

* never imports or calls anything a file names: classes are looked up in the registry of
  persistable classes and registered dataclasses, generators are rebuilt from a whitelist of bit
  generators and their (NumPy-validated) state;
* reads only uncompressed members whose ``.npy`` headers describe exactly the bytes they hold
  (checked before NumPy allocates the array), every member CRC-checked, and refuses unknown header
  keys, then builds the object from its
  parameters (the constructor validates them; whatever it raises on them becomes a
  :class:`~dpbandits._core.errors.DataFormatError`), checks every state field against the class's
  schema (unknown or missing fields refused, ``__dict__`` included) and only then restores it;
  derived state (a KL policy's probabilities and guarantee, caches) is recomputed from the validated
  sufficient statistics, never read;
* optionally checks integrity: a file saved with ``key=`` starts with ``SIGNED_MAGIC`` and an
  HMAC-SHA256 tag over the rest of the file; it loads only with the same key, and a key refuses an
  unsigned file. Without a key a valid file is trusted to be *valid*, not *authentic*: its state
  may have been edited (statistics changed, a run rewound), and a run continued from an edited
  state may release more than its guarantee. A signature is needed for that — for the state's
  content; the ledger's rules below hold for signed and unsigned files alike;
* with ``accountant=``, pays what the rest of the object's run releases when its run is one
  release paid when it is built (an agent), unless that ledger already holds that charge for its
  lineage, and records the continuation of the saved (lineage, generation): the ledger accepts the
  first continuation of a lineage, and after it only later saves of the object it continued (whose
  generation it moved into a window of its own), so that a saved state continued twice (a fork: the
  same file loaded again, a load without the ledger then saved, an edited generation) is refused or
  charged again (``on_fork``). An edited lineage, or a file rewritten as format 1, is another history:
  its run is paid again.

Copies: ``copy.copy`` and ``copy.deepcopy`` make a second object with a history of its own (a fresh
lineage, generation 0), paid as any object built without a ledger when loaded under one; pickling
moves an object (the same lineage and generation), and the ledger lets at most one of the two
continue. A copy kept running in memory is not seen by any ledger: stop an object once saved.

A format-1 file (before lineage) is read through the same checks; its lineage is a digest of its
content and its generation 0. A file of a newer ``format_version`` is refused with a message saying
so. Writes are atomic (:mod:`dpbandits._core.atomic`), and refuse a target that is a symbolic link or
not a regular file rather than replace it.

Privacy: a saved agent is the curator's private state (it holds raw statistics), not a release. It
never holds a secure backend's noise source (there is none to save) and never changes what is
released; seeded noise (``insecure_seeded_noise=True``) saves its generator state so that a loaded
agent continues exactly as the original would.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import hmac
import inspect
import io
import json
import math
import os
import re
import stat
import uuid
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar, Self, TypeVar

import numpy as np

from dpbandits._core.atomic import atomic_write_bytes
from dpbandits._core.codec import (
    PERSISTABLE_MODULES,
    Decoder,
    Encoder,
    Unsaved,
    class_path,
    persistable_class,
    register_codec,
    register_persistable,
    register_state_dataclass,
)
from dpbandits._core.errors import DataFormatError, DPBanditsError, InvalidParameterError
from dpbandits._core.schema import StateSchema
from dpbandits._core.signatures import bind_arguments

__all__ = [
    "CONTINUATION_WINDOW",
    "FORMAT",
    "FORMAT_VERSION",
    "MIN_KEY_BYTES",
    "SIGNED_MAGIC",
    "Persistable",
    "atomic_write_bytes",
    "read_state",
    "register_codec",
    "register_persistable",
    "register_state_dataclass",
    "sign_state",
    "state_bytes",
    "write_state",
]

_T = TypeVar("_T")
CONTINUATION_WINDOW = 1 << 32
"""How far a continuation accepted by a ledger moves the continuing object's generation
(:meth:`~dpbandits.privacy.accounting.Accountant.record_continuation`): the later saves of one
continuation stay in its window (g + W, g + 2W)."""
MAX_GENERATION = 1 << 62
"""Generations are below this (what a state file may hold)."""
FORMAT = "dpbandits-state"
FORMAT_VERSION = 2
_META = "__meta__"
_META_KEYS = ("format", "format_version", "library_version", "class", "lineage", "generation", "params", "state")
_LINEAGE = re.compile(r"[0-9a-f]{32}")
SIGNED_MAGIC = b"DPBSIG1\n"
"""First bytes of a signed state file (then the 32-byte HMAC-SHA256 tag, then the state file)."""
_HMAC_CONTEXT = b"dpbandits-state-hmac-sha256\x00"
_TAG_BYTES = 32
MIN_KEY_BYTES = 16


def _check_key(key: Any) -> bytes | None:
    """An integrity key: None, or bytes of at least 16 bytes."""
    if key is None:
        return None
    if not isinstance(key, bytes | bytearray | memoryview) or len(bytes(key)) < MIN_KEY_BYTES:
        raise InvalidParameterError(
            f"key must be bytes of at least {MIN_KEY_BYTES} bytes (an HMAC-SHA256 key); got {type(key).__name__}"
        )
    return bytes(key)


def _tag(key: bytes, body: bytes) -> bytes:
    return hmac.new(key, _HMAC_CONTEXT + body, hashlib.sha256).digest()


def sign_state(data: bytes, key: bytes) -> bytes:
    """A signed state file: ``SIGNED_MAGIC``, the HMAC-SHA256 tag of the whole file after the tag, the state bytes."""
    return SIGNED_MAGIC + _tag(key, SIGNED_MAGIC + data) + data


def _unwrap(data: bytes, key: bytes | None, name: str) -> bytes:
    """The state bytes of ``data`` after checking its integrity tag against ``key`` (both or neither)."""
    signed = data.startswith(SIGNED_MAGIC)
    if signed and key is None:
        raise DataFormatError(f"{name}: the state file is signed (HMAC-SHA256); pass its key to load it (key=...)")
    if key is None:
        return data
    if not signed:
        raise DataFormatError(f"{name}: a key was given but the state file carries no integrity tag; refused")
    tag, body = data[len(SIGNED_MAGIC):len(SIGNED_MAGIC) + _TAG_BYTES], data[len(SIGNED_MAGIC) + _TAG_BYTES:]
    if not hmac.compare_digest(tag, _tag(key, SIGNED_MAGIC + body)):
        raise DataFormatError(f"{name}: integrity tag does not match: the file was altered or the key is wrong")
    return body


def state_bytes(obj: Persistable, *, generation: int | None = None) -> bytes:
    """Encode ``obj`` in the state format (see the module docstring): the bytes an unsigned state file holds."""
    from dpbandits import __version__

    encoder = Encoder()
    meta = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "library_version": __version__,
        "class": class_path(obj),
        "lineage": obj.lineage,
        "generation": obj.generation if generation is None else generation,
        "params": encoder.encode(obj.get_params()),
        "state": encoder.encode(obj._get_state()),
    }
    buffer = io.BytesIO()
    members = {_META: np.frombuffer(json.dumps(meta).encode("utf-8"), dtype=np.uint8), **encoder.arrays}
    np.savez(buffer, **members)  # type: ignore[arg-type]
    return buffer.getvalue()


def write_state(path: str | os.PathLike[str], obj: Persistable, *, key: bytes | None = None) -> Path:
    """Save ``obj`` (see the module docstring for the format; signed when ``key`` is given)."""
    return obj.save(path, key=key)


_STATE_STARTS = (SIGNED_MAGIC, b"PK\x03\x04", b"PK\x05\x06")
"""How a state file starts: signed, or a zip archive (with members, or empty)."""


def _read_source(path: str | os.PathLike[str] | bytes, key: bytes | None) -> tuple[str, bytes]:
    if isinstance(path, bytes | bytearray | memoryview):
        return "state bytes", _unwrap(bytes(path), key, "state bytes")
    name = str(Path(path))
    try:  # non-blocking open: a FIFO must not block, and only a regular file is read
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                raise DataFormatError(f"{name}: not a regular file, so not a state file")
            head = handle.read(len(SIGNED_MAGIC))
            if not head.startswith(_STATE_STARTS):  # checked before the rest is read (a large file of another kind)
                raise DataFormatError(f"{name}: not a dpbandits state file (it starts with {head[:4]!r}, not as "
                                      "a zip archive or a signed state file does)")
            data = head + handle.read()
    except FileNotFoundError:
        raise DataFormatError(f"{name}: no such state file") from None
    except IsADirectoryError:
        raise DataFormatError(f"{name}: not a regular file, so not a state file") from None
    return name, _unwrap(data, key, name)


def read_state(path: str | os.PathLike[str] | bytes, *,
               key: bytes | None = None) -> tuple[type, dict[str, Any], dict[str, np.ndarray]]:
    """Read a state file, or the bytes of one: (class, meta, arrays by member name).

    Refuses other files, newer format versions, signed files without their key (or with another)
    and, when ``key`` is given, unsigned files. ``meta`` holds the checked ``lineage`` and
    ``generation`` (for a format-1 file, which has none: the lineage is a digest of its content and
    the generation 0).
    """
    name, data = _read_source(path, _check_key(key))
    try:  # stored members only (as np.savez writes them): what is read is never more than the file
        container = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, NotImplementedError):
        container = None  # np.load below says what the file is not
    if container is not None:
        with container:
            if any(info.compress_type != zipfile.ZIP_STORED for info in container.infolist()):
                raise DataFormatError(f"{name}: a state file holds uncompressed members only")
            for info in container.infolist():
                _check_member_size(container, info, name)
    try:  # a damaged zip directory can also claim a newer zip version (NotImplementedError)
        archive = np.load(io.BytesIO(data), allow_pickle=False)
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, NotImplementedError) as exc:
        # NumPy's message may suggest allow_pickle=, an option load does not have: not quoted then
        reason = "" if "pickle" in str(exc) else f" ({exc})"
        raise DataFormatError(f"{name}: not a dpbandits state file{reason}") from None
    if not hasattr(archive, "files") or _META not in archive.files:
        raise DataFormatError(f"{name}: not a dpbandits state file (no {_META} member)")
    try:  # every member read (and CRC-checked) now: a damaged member is a format error here, not later
        with archive:  # (zipfile raises RuntimeError for a member flagged as encrypted)
            members = {member: archive[member] for member in archive.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, NotImplementedError, RuntimeError) as exc:
        raise DataFormatError(f"{name}: damaged state file member ({exc})") from None
    try:
        header = members.pop(_META)
        if header.dtype != np.uint8 or header.ndim != 1:
            raise ValueError("the header is not a byte string")
        meta = json.loads(header.tobytes().decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise DataFormatError(f"{name}: damaged state file header ({exc})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise DataFormatError(f"{name}: not a dpbandits state file (format {meta.get('format')!r})"
                              if isinstance(meta, dict) else f"{name}: damaged state file header")
    version = meta.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool) or version > FORMAT_VERSION or version < 1:
        raise DataFormatError(
            f"{name}: state format version {version!r} (written by dpbandits {meta.get('library_version')}); "
            f"this dpbandits reads versions 1 to {FORMAT_VERSION}: upgrade dpbandits to load it"
        )
    keys = set(_META_KEYS) - ({"lineage", "generation"} if version == 1 else set())
    if set(meta) != keys:
        odd = sorted(set(meta) ^ keys)[0]
        raise DataFormatError(f"{name}: damaged state file header ({'unknown' if odd in meta else 'missing'} {odd!r})")
    if version == 1:
        meta["lineage"], meta["generation"] = hashlib.sha256(data).hexdigest()[:32], 0
    if not (isinstance(meta["lineage"], str) and _LINEAGE.fullmatch(meta["lineage"])):
        raise DataFormatError(f"{name}: lineage must be 32 lowercase hex digits; got {meta['lineage']!r}")
    generation = meta["generation"]
    if isinstance(generation, bool) or not isinstance(generation, int) or not 0 <= generation < MAX_GENERATION:
        raise DataFormatError(f"{name}: generation must be an integer >= 0; got {generation!r}")
    return persistable_class(meta["class"]), meta, members


_NPY_HEADERS = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}


def _check_member_size(container: zipfile.ZipFile, info: zipfile.ZipInfo, name: str) -> None:
    """Refuse a member whose ``.npy`` header claims more data than the member holds (before NumPy allocates it).

    NumPy allocates the array its header describes before reading it: a header claiming a shape of
    10¹¹ would allocate hundreds of GB from a file of a few kB.
    """
    member = info.filename.removesuffix(".npy")
    try:
        with container.open(info) as handle:
            version = np.lib.format.read_magic(handle)
            if version not in _NPY_HEADERS:
                raise ValueError(f".npy format version {version} (np.savez writes 1.0 or 2.0)")
            shape, _, dtype = _NPY_HEADERS[version](handle)
            header_bytes = handle.tell()
    except Exception as exc:  # NumPy's parser of a damaged header raises many types (ValueError, TokenError...)
        raise DataFormatError(f"{name}: damaged state file member {member!r} ({type(exc).__name__}: {exc})") from None
    claimed = math.prod(shape) * dtype.itemsize
    if dtype.hasobject or claimed != info.file_size - header_bytes:
        raise DataFormatError(f"{name}: state file member {member!r} claims a {dtype} array of shape {shape} "
                              f"({claimed} bytes) but holds {info.file_size - header_bytes} bytes of data")


_NOT_SAVED = ("accountant",)
"""Constructor arguments never saved: an accountant belongs to the caller (``load(accountant=)`` pays instead)."""


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


ON_FORK = ("refuse", "charge")


class Persistable:
    """Mixin: ``get_params``, ``__repr__``, ``save(path)`` and ``load(path)`` for agents and policies.

    The constructor's arguments are recorded when the object is built (the outermost ``__init__`` of
    a class hierarchy; with ``_replay_rng``, ``rng`` as the SeedSequence it stands for, so that public
    coins replay) and returned by :meth:`get_params`. A subclass declares its saved state in
    ``_schema`` (a :class:`~dpbandits._core.schema.StateSchema`); loading rebuilds the object from
    its parameters, validates the state against the schema and only then restores it (then
    :meth:`_set_state` recomputes what is derived). Arguments that are callables are listed in
    ``_unsaved_params`` and passed again to :meth:`load`.

    Every object has a :attr:`lineage` (fixed at construction, kept by save and load) and a
    :attr:`generation` (the number of saves in its history), so that an accountant can see a saved
    state continued twice (a fork).
    """

    _schema: ClassVar[StateSchema] = StateSchema()
    _unsaved_params: ClassVar[tuple[str, ...]] = ()
    """Constructor arguments that are callables: not saved, to be passed again to :meth:`load`."""
    _replay_rng: ClassVar[bool] = False
    """Whether ``rng`` seeds public coins drawn at construction that are not in the state:
    then it is recorded as the SeedSequence it stands for (never for a privacy-noise seed)."""
    _fitted_schema: ClassVar[bool] = False
    """Whether an empty state (an object not fitted yet) is also valid."""
    _charges_run: ClassVar[bool] = False
    """Whether the object's whole run is one release paid when it is built (an agent that spends
    ``accountant=`` at construction): then loading it under a ledger pays for the rest of its run."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if any(cls.__module__ == m or cls.__module__.startswith(f"{m}.") for m in PERSISTABLE_MODULES):
            register_persistable(cls)
        init = cls.__dict__.get("__init__")
        if init is None:
            return
        signature = inspect.signature(init)

        @functools.wraps(init)
        def recording_init(self: Any, *args: Any, **kw: Any) -> None:
            if getattr(self, "_recording_params", False):  # an inner __init__ of the hierarchy
                init(self, *args, **kw)
                return
            bound = bind_arguments(signature, (self, *args), kw, f"{type(self).__name__}()", cls._base_keywords)
            bound.apply_defaults()
            if "rng" in bound.arguments and cls._replay_rng:
                bound.arguments["rng"] = _record_rng(bound.arguments["rng"])
            params: dict[str, Any] = {}
            for name, value in bound.arguments.items():
                kind = signature.parameters[name].kind
                if name == "self" or name in _NOT_SAVED:
                    continue
                if kind is inspect.Parameter.VAR_KEYWORD:  # (an accountant forwarded to a base is not saved either)
                    params.update({k: v for k, v in value.items() if k not in _NOT_SAVED})
                elif kind is not inspect.Parameter.VAR_POSITIONAL:
                    params[name] = value
            self._recording_params = True
            # the lineage exists while the constructor runs: an agent that spends its run when built
            # records it with the spend, so that loading it under the same ledger does not pay again
            self._lineage, self._generation = uuid.uuid4().hex, 0
            try:
                init(*bound.args, **bound.kwargs)
            finally:
                self._recording_params = False
            self._params = params

        cls.__init__ = recording_init  # type: ignore[method-assign]

    @property
    def lineage(self) -> str:
        """The history of this object: 32 hex digits drawn at construction, kept across saves and loads."""
        if not hasattr(self, "_lineage"):
            self._lineage, self._generation = uuid.uuid4().hex, 0
        return self._lineage

    @property
    def generation(self) -> int:
        """The position of this object in its history: 0 when built, +1 at each save (or :meth:`to_bytes`).

        A load under a ledger moves it to the window that ledger issues for the continuation
        (:meth:`~dpbandits.privacy.accounting.Accountant.record_continuation`), so that only the
        later saves of this continuation continue it without a fork.
        """
        return getattr(self, "_generation", 0)

    def _run_finished(self) -> bool:
        """Whether the run has nothing left to release (a subclass that charges its run overrides it)."""
        return False

    def _run_charge(self) -> Any:
        """What the rest of this object's run releases, charged when it is loaded under a ledger.

        The run's guarantee for an object whose run is one release paid when it is built
        (``_charges_run``) and that still has something to release; None otherwise (a policy pays
        per sample, a finished agent only post-processes what it released).
        """
        if not self._charges_run or self._run_finished():
            return None
        return self._continuation_charge()

    def __copy__(self) -> Self:
        """A copy is a second object: it starts a history of its own (a fresh lineage, generation 0).

        Loaded under a ledger, it is charged as any object built without one (an agent pays the
        rest of its run); it never continues the original's history, so two copies of one object
        run on different data are never taken for a fork of each other. Pickling moves an object
        instead: the unpickled one keeps the lineage and generation, and the ledger lets at most
        one of the two continue.
        """
        clone = type(self).__new__(type(self))
        clone.__dict__.update(self.__dict__)
        clone._lineage, clone._generation = uuid.uuid4().hex, 0
        return clone

    def __deepcopy__(self, memo: dict[int, Any]) -> Self:
        """A deep copy is a second object (see :meth:`__copy__`): a fresh lineage, generation 0."""
        clone = type(self).__new__(type(self))
        memo[id(self)] = clone
        for name, value in self.__dict__.items():
            clone.__dict__[name] = copy.deepcopy(value, memo)
        clone._lineage, clone._generation = uuid.uuid4().hex, 0
        return clone

    def get_params(self) -> dict[str, Any]:
        """The constructor arguments of this object (callables marked, the accountant left out).

        Returns
        -------
        dict
        """
        params = dict(getattr(self, "_params", {}))
        for name in self._unsaved_params:
            if name in params:
                params[name] = Unsaved()
        return params

    def _get_state(self) -> dict[str, Any]:
        """The fields of the schema (none for an object not fitted yet, when the class allows it)."""
        names = list(self._schema.fields)
        if self._fitted_schema and not all(hasattr(self, n) for n in names):
            return {}
        return {name: getattr(self, name) for name in names}

    def _set_state(self, state: dict[str, Any]) -> None:
        """Restore validated fields; a subclass extends it to recompute derived state."""
        for name, value in state.items():
            setattr(self, name, value)

    @classmethod
    def _parameter_names(cls) -> set[str]:
        parameters = inspect.signature(cls.__init__).parameters
        return {name for name, p in parameters.items() if name != "self" and name not in _NOT_SAVED
                and p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)}

    @classmethod
    def _base_keywords(cls) -> set[str]:
        """Every keyword of the bases' constructors (what a constructor's ``**options`` may forward)."""
        kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
        return {name for base in cls.__mro__[1:] if isinstance(base, type) and issubclass(base, Persistable)
                and base is not Persistable and "__init__" in base.__dict__
                for name, p in inspect.signature(base.__init__).parameters.items() if p.kind in kinds}

    @classmethod
    def _forwarded_names(cls) -> set[str]:
        """Names a constructor with ``**options`` forwards to its bases' constructors (they validate them)."""
        parameters = inspect.signature(cls.__init__).parameters.values()
        if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
            return set()
        return {name for base in cls.__mro__[1:] if isinstance(base, type) and issubclass(base, Persistable)
                and base is not Persistable for name in base._parameter_names()}

    @classmethod
    def _construct(cls, params: Any, expected: set[str] | None = None) -> Any:
        """``cls(**params)`` for a file's params: exactly the constructor's names, its refusals as format errors.

        A constructor that forwards ``**options`` to a base class also takes the base's names.
        """
        expected = cls._parameter_names() if expected is None else expected
        allowed = expected | cls._forwarded_names()
        found = set(params) if isinstance(params, dict) else set()
        if not isinstance(params, dict) or not expected <= found <= allowed:
            odd = sorted(found - allowed) or sorted(expected - found)
            what = "unknown" if set(odd) <= found else "missing"
            raise DataFormatError(f"parameters of {cls.__name__}: {what} parameter {odd[0] if odd else params!r}")
        return _guarded(f"parameters of {cls.__name__} refused", lambda: cls(**params))

    @classmethod
    def _rebuild(cls, params: Any, state: Any, decoder: Decoder) -> Self:
        obj = cls._construct(params)
        obj._restore(state)
        return obj

    def _restore(self, state: Any) -> None:
        """Validate ``state`` against the schema, then restore it (nothing is set on a refusal)."""
        if state == {} and self._fitted_schema:
            return
        values = self._schema.validate(self, state)
        _guarded(f"state of {type(self).__name__} refused", lambda: self._set_state(values))

    def save(self, path: str | os.PathLike[str], *, key: bytes | None = None) -> Path:
        """Save this object to ``path`` atomically, in the versioned state format.

        Parameters
        ----------
        path : str or PathLike
            The file; a symbolic link or anything but a regular file there is refused, not replaced.
        key : bytes, optional
            An HMAC-SHA256 key (>= 16 bytes): the file then carries a tag over its whole content and
            loads only with the same key.

        Returns
        -------
        pathlib.Path
            The file written.
        """
        written = atomic_write_bytes(path, self._next_state_file(key))
        self._generation = self.generation + 1
        return written

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, key: bytes | None = None, accountant: Any = None,
             on_fork: str = "refuse", **overrides: Any) -> Self:
        """Load an object saved by :meth:`save`; it continues exactly as the saved one would.

        Parameters
        ----------
        path : str or PathLike
        key : bytes, optional
            The key the file was signed with; required for a signed file, refused for an unsigned one.
        accountant : Accountant or DurableAccountant, optional
            Before the object is returned: spends what the rest of its run releases, for an agent
            whose run is one release paid when it is built, unless this ledger already holds that
            charge for its lineage (it was built, or loaded, under it); and records this continuation
            of the saved (lineage, generation) (``accountant.record_continuation``), which moves the
            object's :attr:`generation` into the window the ledger issues. A second continuation of
            the same saved state is a fork: refused (``on_fork="refuse"``) or charged this object's
            privacy guarantee again (``on_fork="charge"``).
        on_fork : {"refuse", "charge"}, default "refuse"
        **overrides
            Values of constructor arguments that could not be saved (callables), by name; any other
            name is an error.

        Raises
        ------
        DataFormatError
            If the file is not a dpbandits state file, comes from a newer format version, holds
            another class, fails its integrity check, or breaks its class's schema.
        ForkRefusedError
            If ``accountant`` already recorded a continuation of this saved state.
        PrivacyBudgetExceededError
            If paying the rest of the run would exceed ``accountant``'s budget (nothing is recorded).
        """
        return cls._from_state(read_state(path, key=key), str(path), overrides, accountant, on_fork)

    def to_bytes(self, *, key: bytes | None = None) -> bytes:
        """Encode the object in the state format of :meth:`save`, as bytes (for a database, a socket...).

        Counts as a save: the bytes carry the next :attr:`generation`.

        Returns
        -------
        bytes
            Exactly what :meth:`save` would write to a file (signed with ``key`` if given).
        """
        data = self._next_state_file(key)
        self._generation = self.generation + 1
        return data

    def _next_state_file(self, key: bytes | None) -> bytes:
        """The state file of the next generation (signed with ``key`` if given)."""
        checked = _check_key(key)
        data = state_bytes(self, generation=self.generation + 1)
        return data if checked is None else sign_state(data, checked)

    @classmethod
    def from_bytes(cls, data: bytes, *, key: bytes | None = None, accountant: Any = None,
                   on_fork: str = "refuse", **overrides: Any) -> Self:
        """Rebuild an object from :meth:`to_bytes` (or a state file's content); as :meth:`load`.

        Raises
        ------
        DataFormatError
            As :meth:`load`.
        """
        if not isinstance(data, bytes | bytearray | memoryview):
            raise InvalidParameterError(f"data must be bytes; got {type(data).__name__}")
        return cls._from_state(read_state(bytes(data), key=key), "state bytes", overrides, accountant, on_fork)

    @classmethod
    def _from_state(cls, stored: tuple[type, dict[str, Any], Any], name: str, overrides: dict[str, Any],
                    accountant: Any, on_fork: str) -> Self:
        stored_cls, meta, archive = stored
        if on_fork not in ON_FORK:
            raise InvalidParameterError(f"on_fork must be one of {list(ON_FORK)}; got {on_fork!r}")
        if not issubclass(stored_cls, cls):
            raise DataFormatError(f"{name}: holds a {stored_cls.__name__}, not a {cls.__name__}")
        unknown = sorted(set(overrides) - set(stored_cls._unsaved_params))
        if unknown:
            raise InvalidParameterError(
                f"load() got an unexpected argument {unknown[0]!r}: only the unsaved callables "
                f"{list(stored_cls._unsaved_params)} of {stored_cls.__name__} can be passed again"
            )
        decoder = Decoder(archive, overrides, stored_cls._unsaved_params)
        try:
            obj = stored_cls._rebuild(decoder.decode(meta["params"]), decoder.decode(meta["state"]), decoder)
        except DataFormatError as exc:
            raise DataFormatError(f"{name}: {exc}") from None
        except RecursionError:
            raise DataFormatError(f"{name}: values nested too deeply for a state file") from None
        obj._lineage, obj._generation = meta["lineage"], meta["generation"]
        if accountant is not None:
            charge = obj._continuation_charge() if on_fork == "charge" else None
            if on_fork == "charge" and charge is None:
                raise InvalidParameterError(
                    f'on_fork="charge": a {stored_cls.__name__} has no privacy guarantee to charge for a fork; '
                    'pass on_fork="refuse"'
                )
            accountant.record_continuation(
                obj.lineage, obj.generation, on_fork=on_fork, charge=charge, label=f"{stored_cls.__name__}.load",
                run_charge=obj._run_charge(), run_label=f"{stored_cls.__name__}.load (the rest of its run)")
            obj._generation += CONTINUATION_WINDOW  # the window the ledger issued for this continuation
        return obj

    def _continuation_charge(self) -> Any:
        """What a fork of this object costs again: its privacy guarantee (None for a non-private object)."""
        try:
            guarantee = getattr(self, "privacy", None)
        except DPBanditsError:  # e.g. a policy whose guarantee needs a declared domain
            return None
        # a non-private object states an infinite ε (NonPrivate): there is nothing finite to charge
        epsilon = getattr(guarantee, "epsilon", None)
        return None if epsilon is None or epsilon == float("inf") else guarantee

    def __repr__(self) -> str:
        try:
            params = self.get_params()
        except AttributeError:
            return f"{type(self).__name__}(...)"
        # a seed is never shown: with insecure_seeded_noise it is the noise seed
        shown = ", ".join(f"{k}={'<hidden>' if k == 'rng' and v is not None else _short_repr(v)}"
                          for k, v in params.items())
        return f"{type(self).__name__}({shown})"


def _guarded(what: str, build: Callable[[], _T]) -> _T:
    """Run a constructor or a restore on a file's values: its refusals become one :class:`DataFormatError`.

    The constructor is the validator of a file's parameters; whatever it raises on them (its own
    errors, or a TypeError on a value of the wrong type) means the file is not valid for the class.
    """
    try:
        return build()
    except DataFormatError:
        raise
    except (DPBanditsError, ArithmeticError, LookupError, TypeError, ValueError, MemoryError) as exc:
        raise DataFormatError(f"{what}: {type(exc).__name__}: {exc}") from None


def _short_repr(value: Any) -> str:
    if isinstance(value, np.ndarray):
        return f"array(shape={value.shape})"
    if isinstance(value, Unsaved):
        return "<callable>"
    if isinstance(value, np.random.Generator | np.random.SeedSequence):
        return type(value).__name__  # never a seed in a repr
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
