"""The algorithm registry: simulation entry points that the study runner can call.

An algorithm registers a *simulation entry point* that runs many independent trials of one grid
cell at once and returns per-trial metrics::

    simulate(env, *, n_trials: int, rng: numpy.random.SeedSequence, **params)
        -> dict[str, numpy.ndarray]        # metric name -> array of shape (n_trials,)

``env`` is the environment instance the study built from its registered name and parameters.
``rng`` is the seed sequence of one (grid cell, chunk of trials); it does **not** depend on the
algorithm, so all algorithms of a cell see the same environment randomness (paired comparisons).
Each entry point spawns its streams from ``rng`` in a fixed documented order: environment stream
first, algorithm stream second, privacy-noise stream last.

Registration happens at import time of the algorithm's module (``@register_algorithm(...)``);
:func:`load_builtin_algorithms` imports every family so the registry is complete. The class that
runs the same algorithm one trial at a time (ask/tell, or fit/sample) registers itself under the
same names with ``@register_algorithm_class(...)``; :attr:`AlgorithmSpec.algorithm_class` finds it.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from dpbandits._core.errors import InvalidParameterError, UserAlgorithmError
from dpbandits.algorithms.user_imports import (
    ENTRY_POINT_GROUP,
    entry_point_target,
    is_import_path,
    load_user_object,
)
from dpbandits.algorithms.user_simulation import (
    AGENT_METRICS,
    PROPORTION_METRICS,
    AgentSimulation,
    FunctionSimulation,
    class_privacy_statement,
)

__all__ = [
    "AlgorithmSpec",
    "SimulateFn",
    "get_algorithm",
    "is_builtin_algorithm",
    "is_user_algorithm",
    "list_algorithms",
    "load_builtin_algorithms",
    "register_algorithm",
    "register_algorithm_class",
    "registered_spec_of",
    "user_algorithm_spec",
]

SimulateFn = Callable[..., Mapping[str, np.ndarray]]
F = TypeVar("F", bound=SimulateFn)
C = TypeVar("C", bound=type)

# Modules whose import registers the built-in algorithms (one per family; the offline package is
# lazy, so its registering module is named: importing the package alone registers nothing).
BUILTIN_MODULES: tuple[str, ...] = (
    "dpbandits.algorithms.bai",
    "dpbandits.algorithms.dueling",
    "dpbandits.algorithms.kernel",
    "dpbandits.algorithms.offline.simulate",
)


@dataclass(frozen=True)
class AlgorithmSpec:
    """A registered algorithm.

    Attributes
    ----------
    name : str
        Registry name, kebab-case (``"dp-bai"``).
    family : str
        ``"bai"``, ``"dueling"``, ``"kernel"`` or ``"offline"``.
    simulate : callable
        The vectorised simulation entry point (see the module docstring).
    privacy : str
        The guarantee and the protected unit in words ("ε-DP for one entry of the reward table"),
        or ``"none (non-private)"``.
    metrics : tuple of str
        Names of the per-trial metrics ``simulate`` returns.
    proportion_metrics : tuple of str
        The metrics that are 0/1 per trial (summaries use a Wilson interval for them).
    environments : tuple of str
        Registered environment names (or kinds) the algorithm runs on.
    description : str
        One line for ``dpbandits list``.
    precheck : callable, optional
        ``precheck(env, **params)``: a cheap check, run when a study is validated, that raises a
        :class:`~dpbandits._core.errors.DPBanditsError` if a cell with these parameters cannot run
        (an oversized horizon, rewards outside the bounds the privacy calibration assumes), so the
        study is refused before its run directory exists.
    uses_data : bool, default True
        False for a *theory curve*: its metrics are computed from the parameters alone (a bound or a
        schedule drawn next to the algorithms in a figure). It reads no data, so it is not an
        algorithm: it has no one-trial class and no privacy guarantee (:attr:`is_algorithm`).
    """

    name: str
    family: str
    simulate: SimulateFn
    privacy: str
    metrics: tuple[str, ...]
    proportion_metrics: tuple[str, ...] = ()
    environments: tuple[str, ...] = ()
    description: str = ""
    extra: Mapping[str, Any] = field(default_factory=dict)
    precheck: Callable[..., object] | None = None
    uses_data: bool = True

    @property
    def is_algorithm(self) -> bool:
        """Whether the entry is an algorithm (it reads data), not a theory curve."""
        return self.uses_data

    @property
    def algorithm_class(self) -> type | None:
        """The class that runs this algorithm one trial at a time, or None (a theory curve...)."""
        return _CLASSES.get(self.name)


_REGISTRY: dict[str, AlgorithmSpec] = {}
_CLASSES: dict[str, type] = {}


def register_algorithm_class(name: str, *also: str, non_private: str | None = None) -> Callable[[C], C]:
    """Link a class to its registered simulation entry point(s) (class decorator).

    Sets ``cls.registry_name = name`` (and ``cls.non_private_registry_name``), the entry point that
    the class's ``simulate`` calls.

    Parameters
    ----------
    name : str
        The registry name of the algorithm the class runs.
    *also : str
        Other registry names the class also runs (a variant of the same simulation).
    non_private : str, optional
        The registry name of its non-private twin (the same class at ``epsilon = inf``).
    """

    def decorator(cls: C) -> C:
        setattr(cls, "registry_name", name)  # noqa: B010 (class attributes the decorator adds)
        setattr(cls, "non_private_registry_name", non_private)  # noqa: B010
        for key in (name, *also, non_private):
            if key is not None:
                _CLASSES[key] = cls
        return cls

    return decorator


def register_algorithm(
    name: str,
    *,
    family: str,
    privacy: str,
    metrics: tuple[str, ...],
    proportion_metrics: tuple[str, ...] = (),
    environments: tuple[str, ...] = (),
    description: str = "",
    precheck: Callable[..., object] | None = None,
    uses_data: bool = True,
) -> Callable[[F], F]:
    """Register a simulation entry point under ``name`` (decorator).

    The arguments are the fields of :class:`AlgorithmSpec` (``uses_data=False`` marks a theory curve).

    Raises
    ------
    InvalidParameterError
        If ``name`` is already registered with another function.
    """

    def decorator(fn: F) -> F:
        existing = _REGISTRY.get(name)
        if existing is not None and existing.simulate is not fn:
            qual = getattr(existing.simulate, "__qualname__", repr(existing.simulate))
            raise InvalidParameterError(f"algorithm name {name!r} is already registered by {qual}")
        _REGISTRY[name] = AlgorithmSpec(
            name=name,
            family=family,
            simulate=fn,
            privacy=privacy,
            metrics=tuple(metrics),
            proportion_metrics=tuple(proportion_metrics),
            environments=tuple(environments),
            description=description or _first_line(fn.__doc__),
            precheck=precheck,
            uses_data=uses_data,
        )
        return fn

    return decorator


def _first_line(doc: str | None) -> str:
    lines = (doc or "").strip().splitlines()
    return lines[0] if lines else ""


def load_builtin_algorithms() -> None:
    """Import every algorithm family so that all built-in algorithms are registered."""
    for module in BUILTIN_MODULES:
        importlib.import_module(module)


def get_algorithm(name: str, environment_kind: str | None = None) -> AlgorithmSpec:
    """Return the registered algorithm ``name``, or the user's algorithm it names.

    Parameters
    ----------
    name : str
        A registry name (``"dp-bai"``), an import path ``"package.module:Object"`` or the name of an
        entry point of group ``dpbandits.algorithms`` (see :func:`user_algorithm_spec`).
    environment_kind : str, optional
        The kind of the environment the algorithm will run on; a user's agent class reports the
        metrics the runner computes for that kind.

    Raises
    ------
    InvalidParameterError
        If no algorithm has that name; the message lists the registered ones.
    UserAlgorithmError
        If ``name`` names a user's algorithm that cannot be loaded.
    """
    if is_import_path(name):
        return user_algorithm_spec(name, environment_kind)
    if _registered(name):
        return _REGISTRY[name]
    if entry_point_target(name) is not None:
        return user_algorithm_spec(name, environment_kind)
    raise InvalidParameterError(
        f"algorithm must be one of {sorted(_REGISTRY)}, an import path 'package.module:Object' or an "
        f"entry point of group {ENTRY_POINT_GROUP!r}; got {name!r}"
    )


def is_builtin_algorithm(name: str) -> bool:
    """Whether ``name`` is one of dpbandits' own registered algorithms (finding out imports only dpbandits)."""
    return not is_import_path(name) and _registered(name) and _REGISTRY[name].family != "user"


def _registered(name: str) -> bool:
    """Whether ``name`` is registered, importing the built-in families one at a time until it is."""
    for module in BUILTIN_MODULES:
        if name in _REGISTRY:
            break
        importlib.import_module(module)
    return name in _REGISTRY


def is_user_algorithm(name: str) -> bool:
    """Whether ``name`` names a user's algorithm (an import path or an entry point), not a built-in."""
    return is_import_path(name) or (name not in _REGISTRY and entry_point_target(name) is not None)


def registered_spec_of(function: object) -> AlgorithmSpec | None:
    """The registry entry whose simulation entry point is ``function``, if it registered itself."""
    return next((spec for spec in _REGISTRY.values() if spec.simulate is function), None)


_AGENT_PRIVACY = "as its agents' privacy attribute states, if they have one (a study does not check it: dpbandits audit does)"
"""The privacy of a user's agent class in a study's summary: its own statement, unchecked."""


def user_algorithm_spec(name: str, environment_kind: str | None = None) -> AlgorithmSpec:
    """The registry entry of a user's algorithm named by import path or entry point.

    The object it names is an agent class (driven by :class:`~dpbandits.algorithms.user_simulation.AgentSimulation`)
    or a vectorised simulation function that registered itself with :func:`register_algorithm` or
    carries a ``metrics`` attribute (see :mod:`dpbandits.algorithms.user_imports`).

    Raises
    ------
    UserAlgorithmError
        If the object cannot be imported, is a class without the agent protocol, or is a function
        whose metrics are unknown.
    """
    found = load_user_object(name)
    if inspect.isclass(found):
        # ask and tell are methods of the class; done and recommendation may be set in __init__
        # (self.done = False), so they are checked on each agent built (AgentSimulation.build_agents)
        missing = [member for member in ("ask", "tell") if not callable(getattr(found, member, None))]
        if missing:
            raise UserAlgorithmError(
                f"algorithm {name!r} is a class without {', '.join(missing)}: an agent class needs ask(), "
                "tell(...), done and recommendation (see the guide 'Your own algorithm')"
            )
        kinds = [environment_kind] if environment_kind in AGENT_METRICS else list(AGENT_METRICS)
        metrics = tuple(dict.fromkeys(metric for kind in kinds for metric in AGENT_METRICS[str(kind)]))
        declared = class_privacy_statement(found)
        return AlgorithmSpec(
            name=name, family="user", simulate=AgentSimulation(name), metrics=metrics,
            privacy=declared if declared else _AGENT_PRIVACY,
            proportion_metrics=PROPORTION_METRICS, environments=tuple(AGENT_METRICS),
            description=_first_line(found.__doc__) or f"agent {name}",
        )
    if not callable(found):
        raise UserAlgorithmError(
            f"algorithm {name!r} is a {type(found).__name__}: it must be an agent class or a simulation function"
        )
    registered = registered_spec_of(found)
    if registered is not None:
        return registered
    declared_metrics = getattr(found, "metrics", None)
    if not isinstance(declared_metrics, tuple | list) or not declared_metrics or not all(isinstance(m, str) for m in declared_metrics):
        raise UserAlgorithmError(
            f"simulation function {name!r} must declare the metrics it returns: decorate it with "
            "dpbandits.algorithms.registry.register_algorithm(...) or set its attribute metrics = ('success', ...)"
        )
    declared = getattr(found, "privacy", None)
    return AlgorithmSpec(
        name=name, family="user", simulate=FunctionSimulation(name), metrics=tuple(declared_metrics),
        privacy=str(declared) if declared else "undeclared (the function states no guarantee)",
        proportion_metrics=tuple(getattr(found, "proportion_metrics", ())),
        description=_first_line(found.__doc__) or f"simulation function {name}",
    )


def list_algorithms() -> list[AlgorithmSpec]:
    """Return every registered algorithm, sorted by family then name."""
    load_builtin_algorithms()
    return sorted(_REGISTRY.values(), key=lambda spec: (spec.family, spec.name))
