"""What a study's parameters must be: the shared constraints of parameter names, entry-point signatures, errors.

Used by the study's models and its validation (:mod:`dpbandits.experiments.config`): a rule returns
None for an acceptable value, else the constraint in words, and a pydantic error becomes one line
that names the key, the constraint and the value.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from pydantic_core import ErrorDetails

from dpbandits.algorithms.registry import AlgorithmSpec

__all__ = [
    "PARAMETER_RULES",
]


# Keys of an [environment] / [[algorithms]] table that are not parameters.
_ENVIRONMENT_KEYS = frozenset({"name", "params"})
_ALGORITHM_KEYS = frozenset({"name", "label", "params"})
_GRID_KEYS = frozenset({"mode", "cases", "parameters"})
# Arguments of a simulation entry point that the runner supplies itself.
_RUNNER_ARGUMENTS = frozenset({"env", "n_trials", "rng"})
# --------------------------------------------------------------------------------------------
# Constraints of parameter names that mean the same thing everywhere in dpbandits.
# Each rule returns None when the value is acceptable, else the constraint in words.
# --------------------------------------------------------------------------------------------


def _is_real(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _positive(value: Any) -> str | None:
    # ε = inf is allowed: it means "no privacy" and gives the non-private limit of an algorithm.
    if not _is_real(value) or math.isnan(value) or value <= 0:
        return "must be > 0"
    return None


def _delta(value: Any) -> str | None:
    if not _is_real(value) or not 0 <= value < 1:
        return "must lie in [0, 1)"
    return None


def _probability_open(value: Any) -> str | None:
    if not _is_real(value) or not 0 < value < 1:
        return "must lie in (0, 1)"
    return None


def _positive_int(value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        return "must be an int >= 1"
    return None


PARAMETER_RULES: dict[str, Callable[[Any], str | None]] = {
    "epsilon": _positive,
    "delta": _delta,
    "failure_probability": _probability_open,
    "confidence": _probability_open,
    "budget": _positive_int,
    "horizon": _positive_int,
    "n_rounds": _positive_int,
    "n_arms": _positive_int,
    "dim": _positive_int,
}
"""Constraints checked at load time for parameters with these names (the algorithm re-validates)."""


def _show(value: Any) -> str:
    """A value as the user wrote it (TOML-like): ``-1``, ``0.5``, ``'abc'``, ``[1, 2]``."""
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value)


def _check_value(path: str, name: str, value: Any) -> list[str]:
    rule = PARAMETER_RULES.get(name)
    if rule is None:
        return []
    problem = rule(value)
    return [] if problem is None else [f"{path}: {problem}, got {_show(value)}"]


# --------------------------------------------------------------------------------------------
# Signatures: which parameters a factory / simulation entry point accepts and needs.
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Accepts:
    names: frozenset[str]
    required: frozenset[str]
    any_keyword: bool

    def accepts(self, name: str) -> bool:
        return self.any_keyword or name in self.names

    def describe(self) -> str:
        return "any keyword" if self.any_keyword else ", ".join(sorted(self.names)) or "no parameters"


_RECORDED_SPECS: ContextVar[dict[str, AlgorithmSpec] | None] = ContextVar("dpbandits_recorded_specs", default=None)
"""While :meth:`~dpbandits.experiments.config.Study.from_mapping` validates a study read from a run: its recorded users' algorithms."""


def _signature_of(fn: Callable[..., Any], skip: frozenset[str]) -> _Accepts:
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):  # builtins without a signature: accept anything
        return _Accepts(frozenset(), frozenset(), True)
    names: set[str] = set()
    required: set[str] = set()
    any_keyword = False
    for parameter in signature.parameters.values():
        if parameter.kind is inspect.Parameter.VAR_KEYWORD:
            any_keyword = True
        elif parameter.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY):
            if parameter.name in skip:
                continue
            names.add(parameter.name)
            if parameter.default is inspect.Parameter.empty:
                required.add(parameter.name)
    return _Accepts(frozenset(names), frozenset(required), any_keyword)


# --------------------------------------------------------------------------------------------
# A table's parameters: checked against the rules and the signature; inline ones moved into params.
# --------------------------------------------------------------------------------------------


def _fixed_params_problems(where: str, what: str, params: Mapping[str, Any], accepts: _Accepts | None,
                           swept: Sequence[str]) -> list[str]:
    """The problems of a table's fixed parameters: each value's rule, swept too, or not a parameter of ``what``."""
    problems = []
    for key, value in params.items():
        path = f"{where}.{key}"
        problems += _check_value(path, key, value)
        if key in swept:
            problems.append(f"{path}: must not be both fixed and swept in [grid], got both")
        elif accepts is not None and not accepts.accepts(key):
            problems.append(f"{path}: must be a parameter of {what} ({accepts.describe()}), got {key!r}")
    return problems


def _collect_inline_params(data: Any, reserved: frozenset[str]) -> Any:
    """Move the inline parameters of a table (every non-reserved key) into ``params``."""
    if not isinstance(data, Mapping):
        return data
    inline = {key: value for key, value in data.items() if key not in reserved}
    if not inline:
        return data
    out = {key: value for key, value in data.items() if key in reserved}
    explicit = out.get("params", {})  # anything but a table is left for the model to refuse (never coerced)
    if isinstance(explicit, Mapping):
        out["params"] = {**explicit, **inline}
    return out


# --------------------------------------------------------------------------------------------
# Error messages: one line per problem, naming the key, the constraint and the value.
# --------------------------------------------------------------------------------------------


def _format_location(location: Sequence[int | str]) -> str:
    out = ""
    for part in location:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


_CONSTRAINTS = {
    "greater_than": ("gt", "must be > {}"),
    "greater_than_equal": ("ge", "must be >= {}"),
    "less_than": ("lt", "must be < {}"),
    "less_than_equal": ("le", "must be <= {}"),
    "too_short": ("min_length", "must have at least {} item(s)"),
    "string_too_short": ("min_length", "must have at least {} character(s)"),
    "string_pattern_mismatch": ("pattern", "must match the pattern {}"),
    "literal_error": ("expected", "must be one of {}"),
}


def _describe_error(error: ErrorDetails) -> str:
    """One line per pydantic error: ``key: constraint, got value``."""
    location = [part for part in error["loc"] if part not in ("params", "parameters")]
    path = _format_location(location)
    kind = error["type"]
    context = error.get("ctx") or {}
    found = error.get("input")
    if kind == "value_error":
        # Our own validators write "path: constraint, got value" lines (full paths, or paths
        # inside the location of the validator's model).
        lines = str(context.get("error", error["msg"])).splitlines()
        return "\n".join(line if not path or line.startswith(path) else f"{path}: {line}" for line in lines)
    if kind == "missing":
        return f"{path}: is required but missing"
    if kind == "extra_forbidden":
        return f"{path}: is not a known key here, got {_show(found)}"
    if kind in _CONSTRAINTS:
        key, template = _CONSTRAINTS[kind]
        constraint = template.format(context.get(key, "?"))
    else:
        text = error["msg"]
        constraint = "must be " + text.removeprefix("Input should be ") if text.startswith("Input") else text
    return f"{path}: {constraint}, got {_show(found)}"


def _strip_name(exc: Exception) -> str:
    """Turn a registry error ``algorithm must be one of [...]; got 'x'`` into ``must be one of [...], got 'x'``."""
    text = str(exc)
    _, _, tail = text.partition(" must ")
    if not tail:
        return text
    return "must " + tail.replace("; got ", ", got ")
