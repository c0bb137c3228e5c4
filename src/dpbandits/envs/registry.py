"""The environment registry: named environment factories that studies refer to.

``register_environment(name, factory, ...)`` records a callable ``factory(**params) -> env``.
Registration happens at import time of each environment module; :func:`load_builtin_environments`
imports them all.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dpbandits._core.errors import InvalidParameterError

__all__ = [
    "EnvironmentSpec",
    "get_environment",
    "list_environments",
    "load_builtin_environments",
    "make_environment",
    "register_environment",
]

BUILTIN_MODULES: tuple[str, ...] = (
    "dpbandits.envs.mab",
    "dpbandits.envs.linear",
    "dpbandits.envs.dueling",
    "dpbandits.envs.kernel",
    "dpbandits.envs.offline",
    "dpbandits.envs.datasets",
)


@dataclass(frozen=True)
class EnvironmentSpec:
    """A registered environment factory.

    Attributes
    ----------
    name : str
        Registry name, kebab-case (``"bernoulli"``, ``"dp-bai-uniform"``).
    kind : str
        ``"mab"``, ``"linear"``, ``"dueling"``, ``"kernel"`` or ``"offline"``.
    factory : callable
        ``factory(**params) -> environment``.
    description : str
        One line for ``dpbandits list``.
    """

    name: str
    kind: str
    factory: Callable[..., Any]
    description: str = ""


_REGISTRY: dict[str, EnvironmentSpec] = {}


def register_environment(
    name: str, *, kind: str, factory: Callable[..., Any], description: str = ""
) -> None:
    """Register ``factory`` under ``name``.

    Raises
    ------
    InvalidParameterError
        If ``name`` is already registered with another factory.
    """
    existing = _REGISTRY.get(name)
    if existing is not None and existing.factory is not factory:
        raise InvalidParameterError(f"environment name {name!r} is already registered")
    _REGISTRY[name] = EnvironmentSpec(name=name, kind=kind, factory=factory, description=description)


def load_builtin_environments() -> None:
    """Import every environment module that exists so all built-in environments are registered."""
    for module in BUILTIN_MODULES:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise


def get_environment(name: str) -> EnvironmentSpec:
    """Return the registered environment ``name`` (the message lists the registered ones)."""
    load_builtin_environments()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise InvalidParameterError(
            f"environment must be one of {sorted(_REGISTRY)}; got {name!r}"
        ) from None


def make_environment(name: str, **params: Any) -> Any:
    """Build the registered environment ``name`` with ``params``."""
    return get_environment(name).factory(**params)


def list_environments() -> list[EnvironmentSpec]:
    """Return every registered environment, sorted by kind then name."""
    load_builtin_environments()
    return sorted(_REGISTRY.values(), key=lambda spec: (spec.kind, spec.name))
