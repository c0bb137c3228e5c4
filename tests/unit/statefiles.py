"""Helpers of the state-file tests: open a saved file's header and members, edit them, write them back."""

from __future__ import annotations

import io
import json
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np


def unpack(data: bytes) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The JSON header and the array members of an (unsigned) state file."""
    with np.load(io.BytesIO(data), allow_pickle=False) as archive:
        members = {name: archive[name] for name in archive.files}
    meta = json.loads(members.pop("__meta__").tobytes())
    return meta, members


def pack(meta: dict[str, Any], members: dict[str, np.ndarray]) -> bytes:
    """A state file of ``meta`` and ``members`` (the inverse of :func:`unpack`)."""
    buffer = io.BytesIO()
    header = np.frombuffer(json.dumps(meta).encode("utf-8"), dtype=np.uint8)
    np.savez(buffer, __meta__=header, **members)  # type: ignore[arg-type]
    return buffer.getvalue()


def edit(data: bytes, change: Callable[[dict[str, Any], dict[str, np.ndarray]], None]) -> bytes:
    """``data`` with its header and members changed in place by ``change``."""
    meta, members = unpack(data)
    change(meta, members)
    return pack(meta, members)


def state(meta: dict[str, Any]) -> dict[str, Any]:
    """The encoded state record of a header (``{"__dict__": {...}}`` unwrapped)."""
    return meta["state"]["__dict__"]


def array_of(meta: dict[str, Any], members: dict[str, np.ndarray], *path: str) -> str:
    """The member name of the array at ``path`` in the encoded state."""
    value: Any = meta["state"]
    for key in path:
        value = value["__dict__"][key]
    return str(value["__array__"])


def quietly(build: Callable[[], Any]) -> Any:
    """Run ``build`` with warnings (insecure seeded noise) silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return build()


def canonical_state(data: bytes, *, by_value: bool = False) -> Any:
    """Class, parameters and state of a state file, each array as (dtype, shape, contents).

    The contents are the array's bytes, or with ``by_value`` its values (so -0.0 and 0.0 are one value).
    """
    meta, members = unpack(data)

    def resolve(value: Any) -> Any:
        if isinstance(value, dict):
            if set(value) == {"__array__"}:
                array = members[value["__array__"]]
                return ("array", str(array.dtype), array.shape, array.tolist() if by_value else array.tobytes())
            return {k: resolve(v) for k, v in value.items()}
        if isinstance(value, list):
            return [resolve(v) for v in value]
        return value

    return meta["class"], resolve(meta["params"]), resolve(meta["state"])
