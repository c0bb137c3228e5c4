"""A user's algorithm described as data, so that a run directory can be read without importing it.

A study names a user's algorithm by import path or entry point, and running it imports that code.
*Reading* the run back (``dpbandits status``, :func:`~dpbandits.experiments.frames.load_run`) must
not: a run directory can come from someone else, and a name in a file must never select code to
run. When a run starts, :func:`describe_user_algorithm` records what reading needs of each user's
algorithm in the run's manifest — the parameters its entry point takes (which decide the cells),
its metrics, its privacy statement — and :func:`recorded_algorithm_spec` rebuilds a registry entry
from that record, checked field by field as untrusted input. The rebuilt entry cannot run: its
simulation raises :class:`~dpbandits._core.errors.StudyError` (resuming the run imports the real one).
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Mapping
from typing import Any

from dpbandits._core.errors import StudyError
from dpbandits.algorithms.registry import AlgorithmSpec

__all__ = ["describe_user_algorithm", "recorded_algorithm_spec"]

_KINDS = {
    "positional_or_keyword": inspect.Parameter.POSITIONAL_OR_KEYWORD,
    "keyword_only": inspect.Parameter.KEYWORD_ONLY,
    "var_keyword": inspect.Parameter.VAR_KEYWORD,
}
_KIND_NAMES = {kind: name for name, kind in _KINDS.items()}
_IDENTIFIER = re.compile(r"^[A-Za-z_]\w{0,99}$")
_MAX_ITEMS = 1000
_MAX_TEXT = 10_000


class RecordedSimulation:
    """The simulation entry of a user's algorithm as a run directory records it: a signature, no code.

    Parameters
    ----------
    name : str
        The algorithm's name in the study (its import path or entry point).
    signature : inspect.Signature
        The keyword parameters the real entry point takes.
    """

    def __init__(self, name: str, signature: inspect.Signature) -> None:
        self.name = name
        self.__signature__ = signature

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise StudyError(f"algorithm {self.name!r} is described by a run directory, not imported, so it cannot "
                         "run here; resuming the run imports and runs it")


def describe_user_algorithm(spec: AlgorithmSpec) -> dict[str, Any]:
    """What reading a run needs of a user's algorithm ``spec``, as JSON-ready data.

    Returns
    -------
    dict
        ``parameters`` (name, kind, required) of its entry point's keyword parameters, ``metrics``,
        ``proportion_metrics``, ``environments``, ``privacy`` and ``description``.
    """
    try:
        signature = inspect.signature(spec.simulate)
    except (TypeError, ValueError):
        signature = inspect.Signature([inspect.Parameter("options", inspect.Parameter.VAR_KEYWORD)])
    parameters = [{"name": parameter.name, "kind": _KIND_NAMES[parameter.kind],
                   "required": parameter.default is inspect.Parameter.empty}
                  for parameter in signature.parameters.values() if parameter.kind in _KIND_NAMES]
    return {"parameters": parameters, "metrics": list(spec.metrics),
            "proportion_metrics": list(spec.proportion_metrics), "environments": list(spec.environments),
            "privacy": spec.privacy, "description": spec.description}


def recorded_algorithm_spec(name: str, record: Any) -> AlgorithmSpec:
    """Rebuild the registry entry of a user's algorithm from its record, checking every field.

    Raises
    ------
    StudyError
        One line naming the field and the rule, if the record is not what
        :func:`describe_user_algorithm` writes.
    """
    where = f"the record of algorithm {name!r}"
    if not isinstance(record, Mapping):
        raise StudyError(f"{where} must be an object, got {type(record).__name__}")
    expected = {"parameters", "metrics", "proportion_metrics", "environments", "privacy", "description"}
    if set(record) != expected:
        raise StudyError(f"{where} must have exactly the keys {sorted(expected)}, got {sorted(map(str, record))}")
    metrics = _names(record["metrics"], f"{where}: metrics")
    if not metrics:
        raise StudyError(f"{where}: metrics must name at least one metric")
    proportion = _names(record["proportion_metrics"], f"{where}: proportion_metrics")
    if not set(proportion) <= set(metrics):
        raise StudyError(f"{where}: proportion_metrics must be among its metrics")
    environments = _texts(record["environments"], f"{where}: environments")
    privacy, description = (_text(record[key], f"{where}: {key}") for key in ("privacy", "description"))
    return AlgorithmSpec(name=name, family="user", simulate=RecordedSimulation(name, _signature(record["parameters"], where)),
                         privacy=privacy, metrics=metrics, proportion_metrics=proportion,
                         environments=environments, description=description)


def _signature(parameters: Any, where: str) -> inspect.Signature:
    if not isinstance(parameters, list) or len(parameters) > _MAX_ITEMS:
        raise StudyError(f"{where}: parameters must be a list of at most {_MAX_ITEMS} entries")
    built: list[inspect.Parameter] = []
    for index, entry in enumerate(parameters):
        if not (isinstance(entry, Mapping) and set(entry) == {"name", "kind", "required"}
                and isinstance(entry["name"], str) and _IDENTIFIER.match(entry["name"])
                and entry["kind"] in _KINDS and isinstance(entry["required"], bool)):
            raise StudyError(f"{where}: parameters[{index}] must be {{name: identifier, kind: one of "
                             f"{sorted(_KINDS)}, required: true or false}}")
        kind = _KINDS[entry["kind"]]
        default = inspect.Parameter.empty if entry["required"] or kind is inspect.Parameter.VAR_KEYWORD else None
        built.append(inspect.Parameter(entry["name"], kind, default=default))
    try:
        return inspect.Signature(built)
    except ValueError as exc:  # duplicate names, a kind out of order, a required one after an optional one
        raise StudyError(f"{where}: parameters do not form a signature ({exc})") from None


def _names(value: Any, where: str) -> tuple[str, ...]:
    items = _texts(value, where)
    if not all(_IDENTIFIER.match(item) for item in items):
        raise StudyError(f"{where} must be identifiers")
    return items


def _texts(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or len(value) > _MAX_ITEMS or not all(isinstance(item, str) for item in value):
        raise StudyError(f"{where} must be a list of at most {_MAX_ITEMS} strings")
    return tuple(_text(item, where) for item in value)


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str) or len(value) > _MAX_TEXT:
        raise StudyError(f"{where} must be a string of at most {_MAX_TEXT} characters")
    return value
