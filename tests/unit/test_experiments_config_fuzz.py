"""Fuzzing the study loader: any TOML text or parsed mapping is either a valid study or a StudyError.

Two properties, over random inputs and random mutations of a valid study:

* no traceback: :func:`parse_study_text` and :meth:`Study.from_mapping` raise nothing but
  :class:`StudyError` (whose message names a key), and an accepted study expands, hashes and
  scales down without error;
* no silent coercion: an accepted study holds exactly the values it was given, with their types
  (``trials = true`` is not 1, ``seed = "3"`` is not 3, ``2.0`` is not ``2``).
"""

from __future__ import annotations

import copy
import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpbandits._core.errors import StudyError
from dpbandits.experiments.config import Study, parse_study_text

BASE: dict[str, Any] = {
    "name": "fuzz",
    "description": "a study to mutate",
    "seed": 3,
    "trials": 4,
    "chunk_size": 2,
    "metrics": ["success"],
    "environment": {"name": "bernoulli", "means": [0.7, 0.5, 0.4]},
    "algorithms": [{"name": "uniform"}, {"name": "sequential-halving", "label": "SH", "reuse_samples": True}],
    "grid": {"budget": [12, 24]},
}

BASE_TEXT = """
name = "fuzz"
description = "a study to mutate"
seed = 3
trials = 4
chunk_size = 2
metrics = ["success"]

[environment]
name = "bernoulli"
means = [0.7, 0.5, 0.4]

[[algorithms]]
name = "uniform"

[[algorithms]]
name = "sequential-halving"
label = "SH"
reuse_samples = true

[grid]
budget = [12, 24]
"""

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Values a TOML document (or a careless Python caller) can hold.
scalars = st.one_of(
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.integers(),  # Python callers are not limited to 64 bits
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(["bernoulli", "uniform", "sequential-halving", "dp-bai", "success", "product", "zip",
                     "cases", "budget", "means", "", "-1", "1e14", "true"]),
)
values = st.recursive(
    scalars,
    lambda children: st.one_of(st.lists(children, max_size=4),
                               st.dictionaries(st.text(max_size=8), children, max_size=4)),
    max_leaves=12,
)
keys = st.sampled_from(["name", "description", "seed", "trials", "chunk_size", "metrics", "environment",
                        "algorithms", "grid", "analyses", "params", "label", "means", "budget", "mode",
                        "cases", "parameters", "epsilon", "reward_draws", "reuse_samples", "extra"])


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(node, dict):
        for key, child in node.items():
            found += _paths(child, (*prefix, key))
    elif isinstance(node, list):
        for index, child in enumerate(node):
            found += _paths(child, (*prefix, index))
    return found


@st.composite
def mutated_studies(draw: st.DrawFn) -> dict[str, Any]:
    """The base study with a few random replacements, deletions and insertions."""
    data = copy.deepcopy(BASE)
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        paths = [path for path in _paths(data) if path]
        path = draw(st.sampled_from(paths))
        parent = data
        for part in path[:-1]:
            parent = parent[part]
        action = draw(st.sampled_from(["replace", "replace", "delete", "insert"]))
        if action == "replace":
            parent[path[-1]] = draw(values)
        elif action == "delete":
            del parent[path[-1]]
        elif isinstance(parent, dict):
            parent[draw(keys)] = draw(values)
        else:
            parent.insert(path[-1], draw(values))
    return data


def _same(given_value: Any, stored: Any) -> bool:
    """Equal values of the same types, recursively (1 is not True, 2 is not 2.0, NaN is NaN)."""
    if type(given_value) is not type(stored):
        return False
    if isinstance(given_value, dict):
        return given_value.keys() == stored.keys() and all(_same(given_value[k], stored[k]) for k in given_value)
    if isinstance(given_value, list):
        return len(given_value) == len(stored) and all(_same(a, b) for a, b in zip(given_value, stored, strict=True))
    if isinstance(given_value, float) and math.isnan(given_value):
        return math.isnan(stored)
    return bool(given_value == stored)


def _params(table: dict[str, Any], reserved: set[str]) -> dict[str, Any]:
    """The parameters of an [environment] or [[algorithms]] table: inline ones and ``params``."""
    inline = {key: value for key, value in table.items() if key not in reserved | {"params"}}
    return {**table.get("params", {}), **inline}


def _check_accepted(study: Study, data: dict[str, Any]) -> None:
    """An accepted study holds exactly what it was given and can be expanded and hashed."""
    for key in ("name", "description", "seed", "trials", "chunk_size", "metrics", "analyses"):
        if key in data:
            assert _same(data[key], getattr(study, key)), (key, data[key], getattr(study, key))
    assert _same(_params(data["environment"], {"name"}), study.environment.params)
    for given_algorithm, algorithm in zip(data["algorithms"], study.algorithms, strict=True):
        assert _same(_params(given_algorithm, {"name", "label"}), algorithm.params)
    assert study.cells() and len(study.digest()) == 64
    study.scaled_down(trials=1, max_points=1)


@SETTINGS
@given(mutated_studies())
def test_mutated_mapping_is_a_study_or_a_study_error(data: dict[str, Any]) -> None:
    original = copy.deepcopy(data)
    try:
        study = Study.from_mapping(data)
    except StudyError as exc:
        assert str(exc).startswith("invalid study")
        return
    assert _same(original, data), "from_mapping must not change its input"
    _check_accepted(study, data)


@SETTINGS
@given(st.dictionaries(keys, values, max_size=8))
@pytest.mark.slow
def test_random_mapping_is_a_study_or_a_study_error(data: dict[str, Any]) -> None:
    try:
        study = Study.from_mapping(data)
    except StudyError as exc:
        assert str(exc).startswith("invalid study")
        return
    _check_accepted(study, data)


@st.composite
def mutated_texts(draw: st.DrawFn) -> str:
    """The base TOML text with random lines replaced, deleted or inserted, or characters changed."""
    lines = BASE_TEXT.splitlines()
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        index = draw(st.integers(min_value=0, max_value=len(lines) - 1))
        action = draw(st.sampled_from(["value", "delete", "insert", "characters"]))
        if action == "value" and "=" in lines[index]:
            key = lines[index].split("=", 1)[0]
            lines[index] = key + "= " + draw(st.sampled_from(
                ["true", "false", '"20"', "2.0", "1e14", "-1", "0", "nan", "inf", "-inf", "[]", "{}", "[1, 2]",
                 "9223372036854775807", '"bernoulli"', "[true]", "{ a = 1 }", "1979-05-27", "0x10"]))
        elif action == "delete":
            del lines[index]
        elif action == "insert":
            lines.insert(index, draw(st.sampled_from(
                ["[grid]", "[[grid.cases]]", "budget = 5", "mode = \"zip\"", "[environment.params]",
                 "params = 3", "extra = 1", "[[algorithms]]", "name = \"dp-bai\"", "epsilon = -1"])))
        else:
            line = lines[index]
            position = draw(st.integers(min_value=0, max_value=len(line)))
            lines[index] = line[:position] + draw(st.text(max_size=3)) + line[position + 1:]
        if not lines:
            break
    return "\n".join(lines)


@SETTINGS
@given(st.one_of(mutated_texts(), st.text(max_size=200)))
def test_toml_text_is_a_study_or_a_study_error(text: str) -> None:
    try:
        parse_study_text(text, source="fuzz.toml")
    except StudyError as exc:
        assert str(exc).startswith("invalid study fuzz.toml")


def test_base_study_is_valid_and_kept_exactly() -> None:
    _check_accepted(Study.from_mapping(BASE), BASE)
    assert parse_study_text(BASE_TEXT).digest() == Study.from_mapping(BASE).digest()
