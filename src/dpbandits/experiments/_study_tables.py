"""The tables of a study file: environment, algorithms, grid, and the cells of a study's grid.

Public from :mod:`dpbandits.experiments.config`, which validates a study as a whole.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from dpbandits.experiments._study_params import (
    _ALGORITHM_KEYS,
    _ENVIRONMENT_KEYS,
    _GRID_KEYS,
    _collect_inline_params,
)

__all__ = [
    "AlgorithmConfig",
    "Cell",
    "EnvironmentConfig",
    "GridConfig",
]


class EnvironmentConfig(BaseModel):
    """The environment of a study: a registered name and its fixed parameters.

    Parameters may be given inline (``EnvironmentConfig(name="bernoulli", means=[0.5, 0.4])``) or
    as ``params={...}``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    name: str = Field(min_length=1)
    params: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _inline(cls, data: Any) -> Any:
        return _collect_inline_params(data, _ENVIRONMENT_KEYS)


class AlgorithmConfig(BaseModel):
    """One algorithm entry of a study: a registered name, a unique label and fixed parameters."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    name: str = Field(min_length=1)
    label: str | None = Field(default=None, min_length=1)
    params: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _inline(cls, data: Any) -> Any:
        if isinstance(data, dict) and "algorithm" in data and "name" not in data:
            # `algorithm = "package.module:MyAgent"` reads better for a user's own algorithm
            data = {"name": data["algorithm"], **{k: v for k, v in data.items() if k != "algorithm"}}
        return _collect_inline_params(data, _ALGORITHM_KEYS)

    @property
    def display_name(self) -> str:
        """The label used in results and plots (the registry name when no label is given)."""
        return self.label or self.name


class GridConfig(BaseModel):
    """The swept parameters of a study (see the module docstring for the three modes)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    mode: Literal["product", "zip", "cases"] = "product"
    parameters: dict[str, list[Any]] = Field(default_factory=dict)
    cases: list[dict[str, Any]] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _inline(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            return data
        out = {key: value for key, value in data.items() if key in _GRID_KEYS}
        inline = {key: value for key, value in data.items() if key not in _GRID_KEYS}
        if inline:
            explicit = out.get("parameters") or {}
            if isinstance(explicit, Mapping):
                out["parameters"] = {**explicit, **inline}
        if out.get("cases") and "mode" not in out:
            out["mode"] = "cases"
        return out

    @model_validator(mode="after")
    def _shape(self) -> Self:
        problems: list[str] = []
        if self.mode == "cases":
            if self.parameters:
                problems.append(
                    f"grid: give either swept lists or [[grid.cases]], not both; got lists for {sorted(self.parameters)}"
                )
            if not self.cases:
                problems.append("grid.cases: must hold at least one case when mode = 'cases', got none")
            first = set(self.cases[0]) if self.cases else set()
            for index, case in enumerate(self.cases[1:], start=1):
                if set(case) != first:
                    problems.append(
                        f"grid.cases[{index}]: must have the same keys as grid.cases[0] {sorted(first)}, "
                        f"got {sorted(case)}"
                    )
        else:
            if self.cases:
                problems.append(f"grid.mode: must be 'cases' when [[grid.cases]] is given, got {self.mode!r}")
            for key, values in self.parameters.items():
                if len(values) == 0:
                    problems.append(f"grid.{key}: must be a non-empty list, got []")
            if self.mode == "zip":
                lengths = {key: len(values) for key, values in self.parameters.items()}
                if len(set(lengths.values())) > 1:
                    problems.append(f"grid: mode 'zip' needs lists of equal length, got lengths {lengths}")
        if problems:
            raise ValueError("\n".join(problems))
        return self

    @property
    def keys(self) -> tuple[str, ...]:
        """The swept parameter names, in file order."""
        if self.mode == "cases":
            return tuple(self.cases[0]) if self.cases else ()
        return tuple(self.parameters)

    def points(self) -> list[dict[str, Any]]:
        """Every grid point, in the documented fixed order (one empty point if nothing is swept)."""
        if self.mode == "cases":
            return [dict(case) for case in self.cases]
        keys = list(self.parameters)
        if self.mode == "zip":
            columns = [self.parameters[key] for key in keys]
            return [dict(zip(keys, row, strict=True)) for row in zip(*columns, strict=True)] or [{}]
        return [dict(zip(keys, row, strict=True)) for row in itertools.product(*self.parameters.values())]

    def labelled_values(self) -> Iterator[tuple[str, Any]]:
        """``(path, value)`` for every swept value, with its path for error messages."""
        if self.mode == "cases":
            for index, case in enumerate(self.cases):
                for key, value in case.items():
                    yield f"grid.cases[{index}].{key}", value
        else:
            for key, values in self.parameters.items():
                for index, value in enumerate(values):
                    yield f"grid.{key}[{index}]", value


@dataclass(frozen=True)
class Cell:
    """One (grid point, algorithm) cell of a study: what a task needs to run trials of it.

    Attributes
    ----------
    point_index : int
        Index of the grid point in :meth:`~dpbandits.experiments.config.Study.grid_points` (the seed tree is indexed by it).
    point : dict
        The swept values of this grid point.
    algorithm_index : int
        Index of the algorithm entry in ``Study.algorithms``.
    label : str
        The algorithm's label (unique within the study).
    algorithm : str
        The registered algorithm name.
    environment : str
        The registered environment name.
    environment_params, algorithm_params : dict
        The keyword arguments of the environment factory and of the simulation entry point.
    """

    point_index: int
    point: dict[str, Any]
    algorithm_index: int
    label: str
    algorithm: str
    environment: str
    environment_params: dict[str, Any]
    algorithm_params: dict[str, Any]

    @property
    def key(self) -> str:
        """A file-name-safe identifier: ``p0003-a01``."""
        return f"p{self.point_index:04d}-a{self.algorithm_index:02d}"
