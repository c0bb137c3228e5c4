"""Public names of a package loaded on first use (PEP 562), so that importing the package is light.

A package lists where each public name lives and delegates its module ``__getattr__`` and
``__dir__`` here; its ``TYPE_CHECKING`` imports give the type checker the same names.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Mapping, MutableMapping
from typing import Any

__all__ = ["lazy_dir", "load_lazily"]


def load_lazily(package: str, name: str, homes: Mapping[str, str | None], namespace: MutableMapping[str, Any]) -> Any:
    """The public ``name`` of ``package``, imported from its submodule and kept in ``namespace``.

    Parameters
    ----------
    package : str
        The package's ``__name__``.
    name : str
        The attribute asked for.
    homes : mapping
        Public name -> the submodule (relative to ``package``) defining it; ``None``: the name is itself
        a submodule.
    namespace : dict
        The package's ``globals()``: the value is kept there, so the next access does not come here.

    Raises
    ------
    AttributeError
        If ``name`` is not one of ``homes``.
    """
    if name not in homes:
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    home = homes[name]
    module = importlib.import_module(f"{package}.{home or name}")
    value = module if home is None else getattr(module, name)
    namespace[name] = value
    return value


def lazy_dir(namespace: Iterable[str], public: Iterable[str]) -> list[str]:
    """The package's ``dir()``: what it holds now and every public name, loaded or not."""
    return sorted({*namespace, *public})
