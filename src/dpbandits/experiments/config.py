"""Study files: the pydantic models of a study and their validation.

A *study* runs registered algorithms on one registered environment over a grid of parameters,
with many independent trials per (grid point, algorithm) *cell*. It is written in TOML::

    name = "bai-smoke"                      # kebab-case, names the run directory
    description = "Uniform allocation vs Sequential Halving on a Bernoulli bandit"
    seed = 20261122                         # the root of all randomness (int >= 0)
    trials = 400                            # independent trials per cell
    chunk_size = 100                        # trials per task (fixed here, never by the worker count)
    metrics = ["success", "simple_regret"]  # optional; default: every metric the algorithms return

    [environment]
    name = "bernoulli"                      # a registered environment (``dpbandits list``)
    means = [0.9, 0.8, 0.7, 0.6]            # its parameters, inline

    [[algorithms]]
    name = "uniform"                        # a registered algorithm
    [[algorithms]]
    algorithm = "my_ucb:PrivateUCB"         # your own, by import path (or entry point name)
    label = "My private UCB"
    [[algorithms]]
    name = "dp-bai"
    label = "DP-BAI (eps=1)"                # optional; labels must be unique (default: name)
    epsilon = 1.0                           # fixed parameters of this algorithm, inline

    [grid]                                  # swept parameters: the study is their product
    budget = [200, 400, 800]

An optional ``analyses = ["usca-rate-shape"]`` names post-run analyses of the summary
(:mod:`dpbandits.experiments.analyses`), written to ``RUN_DIR/analyses/`` when the run completes.

Grid modes
----------
* ``mode = "product"`` (default): every combination of the swept lists; the grid points are
  enumerated in file order with the *last* key varying fastest (``itertools.product``).
* ``mode = "zip"``: the lists have equal length and point ``i`` takes element ``i`` of each.
* explicit cases: ``[[grid.cases]]`` tables, each one grid point (all with the same keys)::

      [[grid.cases]]
      budget = 200
      epsilon = 0.5
      [[grid.cases]]
      budget = 1000
      epsilon = 2.0

Where swept parameters go
-------------------------
A swept key is passed to the environment factory if it accepts a parameter of that name, and to
every algorithm whose simulation entry point accepts it (by signature; ``**kwargs`` accepts
everything); a key that nobody accepts is an error. An algorithm that does not take a swept
parameter (``epsilon`` for a non-private baseline) runs unchanged at every value, which draws it as
a flat reference line. Fixed parameters (inline in ``[environment]`` or an ``[[algorithms]]`` entry)
go to that one target only, and may not also be swept.

Seeds
-----
See :mod:`dpbandits.experiments.runner`: grid point ``p`` and chunk ``c`` get the seed sequence
``SeedSequence(seed).spawn(n_points)[p].spawn(n_chunks)[c]`` — it does not depend on the algorithm,
so all algorithms of a grid point see the same environment randomness (paired comparisons).

Errors name the key, the constraint and the value (``algorithms[1].epsilon: must be > 0, got -1``);
:func:`load_study` and :meth:`Study.from_mapping` raise :class:`~dpbandits._core.errors.StudyError`
listing every problem found, one per line.

Examples
--------
The same study built in Python:

>>> from dpbandits.experiments.config import Study
>>> study = Study.from_mapping({
...     "name": "tiny", "seed": 1, "trials": 10,
...     "environment": {"name": "bernoulli", "means": [0.7, 0.5]},
...     "algorithms": [{"name": "uniform"}, {"name": "sequential-halving"}],
...     "grid": {"budget": [20, 40]},
... })
>>> [point for point in study.grid_points()]
[{'budget': 20}, {'budget': 40}]
"""

from __future__ import annotations

import hashlib
import itertools
import json
import stat
import tomllib
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, model_validator

from dpbandits._core.errors import DPBanditsError, StudyError
from dpbandits.algorithms.registry import AlgorithmSpec, get_algorithm, is_builtin_algorithm
from dpbandits.envs.registry import get_environment
from dpbandits.experiments._study_params import (
    _ALGORITHM_KEYS,
    _ENVIRONMENT_KEYS,
    _GRID_KEYS,
    _RECORDED_SPECS,
    _RUNNER_ARGUMENTS,
    _Accepts,
    _check_value,
    _describe_error,
    _fixed_params_problems,
    _signature_of,
    _strip_name,
)
from dpbandits.experiments._study_params import PARAMETER_RULES as PARAMETER_RULES
from dpbandits.experiments._study_tables import AlgorithmConfig, Cell, EnvironmentConfig, GridConfig
from dpbandits.experiments.analysis_catalog import check_analysis_name

__all__ = [
    "DEFAULT_CHUNK_SIZE",
    "MAX_STUDY_FILE_BYTES",
    "PRESENTATION_FIELDS",
    "AlgorithmConfig",
    "Cell",
    "EnvironmentConfig",
    "GridConfig",
    "Study",
    "load_study",
    "parse_study_text",
    "read_study_text",
]

DEFAULT_CHUNK_SIZE = 100
"""Trials per task when a study does not say: small enough to balance, large enough to vectorise."""

MAX_ENVIRONMENTS_CHECKED = 256
"""Distinct environments (grid points of the environment's parameters) built when a study is validated."""

PRESENTATION_FIELDS: tuple[str, ...] = ("description", "analyses")
"""Study fields that do not change results: left out of the digest (editing them keeps --resume)."""


class Study(BaseModel):
    """A validated study: environment, algorithms, grid, trials, metrics and root seed.

    Build one from a TOML file with :func:`load_study`, from a mapping with :meth:`from_mapping`
    (both raise :class:`~dpbandits._core.errors.StudyError` listing every problem), or directly
    with keyword arguments (raises pydantic's ``ValidationError``, a ``ValueError``).
    """

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    description: str = ""
    seed: int = Field(ge=0)
    trials: int = Field(ge=1)
    chunk_size: int = Field(default=DEFAULT_CHUNK_SIZE, ge=1)
    metrics: list[str] | None = None
    environment: EnvironmentConfig
    algorithms: list[AlgorithmConfig] = Field(min_length=1)
    grid: GridConfig = Field(default_factory=GridConfig)
    analyses: list[str] = Field(default_factory=list)
    _recorded: dict[str, AlgorithmSpec] | None = PrivateAttr(default=None)

    @model_validator(mode="before")
    @classmethod
    def _given_once(cls, data: Any) -> Any:
        """A parameter given both inline and in ``params`` (or ``grid.parameters``) is an error."""
        if not isinstance(data, Mapping):
            return data
        tables: list[tuple[str, Any, frozenset[str], str]] = [
            ("environment", data.get("environment"), _ENVIRONMENT_KEYS, "params"),
            ("grid", data.get("grid"), _GRID_KEYS, "parameters"),
        ]
        if isinstance(data.get("algorithms"), list):
            tables += [(f"algorithms[{index}]", algorithm, _ALGORITHM_KEYS, "params")
                       for index, algorithm in enumerate(data["algorithms"])]
        problems = [
            f"{path}.{key}: must be given once, inline or in {explicit}, got both"
            for path, table, reserved, explicit in tables
            if isinstance(table, Mapping) and isinstance(table.get(explicit), Mapping)
            for key in sorted(set(table[explicit]) & (set(table) - reserved), key=str)
        ]
        if problems:
            raise ValueError("\n".join(problems))
        return data

    # ---------------------------------------------------------------- construction
    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], *, source: str | None = None,
                     recorded: Mapping[str, AlgorithmSpec] | None = None) -> Study:
        """Validate a mapping (a parsed TOML document) into a study.

        Parameters
        ----------
        data : mapping
        source : str, optional
            Where the mapping comes from, for the error message.
        recorded : mapping of str to AlgorithmSpec, optional
            To *read* a run without importing users' code: the entries of its users' algorithms as
            the run recorded them (:mod:`dpbandits.algorithms.user_records`). With it, every
            algorithm that is not built in must be among them: none is imported.

        Raises
        ------
        StudyError
            Listing every problem as ``key: constraint, got value``.
        """
        where = f" {source}" if source else ""
        if not isinstance(data, Mapping):
            raise StudyError(f"invalid study{where}: must be a table of keys and values, got {type(data).__name__}")
        token = _RECORDED_SPECS.set(None if recorded is None else dict(recorded))
        try:
            study = cls.model_validate(dict(data))
        except ValidationError as exc:
            lines = [line for error in exc.errors() for line in _describe_error(error).splitlines()]
            raise StudyError(f"invalid study{where}:\n  " + "\n  ".join(lines)) from None
        finally:
            _RECORDED_SPECS.reset(token)
        if recorded is not None:
            study._recorded = dict(recorded)
        return study

    def with_overrides(self, *, trials: int | None = None, seed: int | None = None) -> Study:
        """A copy with ``trials`` and/or ``seed`` replaced (validated again)."""
        data = self.model_dump()
        if trials is not None:
            data["trials"] = trials
        if seed is not None:
            data["seed"] = seed
        return Study.from_mapping(data, source=f"{self.name!r} with overrides")

    def scaled_down(self, *, trials: int, max_points: int, parameters: Mapping[str, Any] | None = None) -> Study:
        """A small copy of this study, to check quickly that it runs (smoke tests, backend checks).

        Parameters
        ----------
        trials : int
            Trials per cell; the chunk size becomes ⌈trials/2⌉, so a cell has two chunks.
        max_points : int
            Keep the first ``max_points`` grid points (as explicit ``[[grid.cases]]``).
        parameters : mapping, optional
            Values that replace a parameter of that name wherever the study gives it (environment,
            algorithms, kept grid points) and are given to every other environment or algorithm
            that accepts it (``horizon = 200``, ``grid_points_per_dim = 64``).

        Returns
        -------
        Study
            Validated again; without ``analyses`` (they need the full grid).
        """
        parameters = dict(parameters or {})
        points = self.grid_points()[:max_points]
        swept = {key for point in points for key in point}
        env_accepts = self._check_environment([])
        data = self.model_dump()
        data.update(trials=trials, chunk_size=max(1, -(-trials // 2)), analyses=[])
        for key, value in parameters.items():
            if key in swept:
                for point in points:
                    point[key] = value
                continue
            if key in data["environment"]["params"] or (env_accepts is not None and env_accepts.accepts(key)):
                data["environment"]["params"][key] = value
            for index, algorithm in enumerate(data["algorithms"]):
                accepts = _signature_of(self.algorithm_spec(index).simulate, _RUNNER_ARGUMENTS)
                if key in algorithm["params"] or key in accepts.names:
                    algorithm["params"][key] = value
        data["grid"] = {"mode": "cases", "cases": points} if swept else {}
        return Study.from_mapping(data, source=f"{self.name!r} scaled down")

    # ---------------------------------------------------------------- semantic validation
    @model_validator(mode="after")
    def _check_semantics(self) -> Self:
        """Check names against the registries and parameters against signatures and known rules."""
        problems: list[str] = []
        problems += self._check_labels()
        for index, name in enumerate(self.analyses):
            try:
                check_analysis_name(name)
            except StudyError as exc:
                problems.append(f"analyses[{index}]: {exc}")
        env_accepts = self._check_environment(problems)
        algo_specs: list[AlgorithmSpec | None] = []
        for index, algorithm in enumerate(self.algorithms):
            try:
                algo_specs.append(self._spec_named(algorithm.name))
            except DPBanditsError as exc:
                problems.append(f"algorithms[{index}].name: {_strip_name(exc)}")
                algo_specs.append(None)
        algo_accepts = [None if spec is None else _signature_of(spec.simulate, _RUNNER_ARGUMENTS)
                        for spec in algo_specs]
        problems += self._check_grid(env_accepts, algo_accepts)
        problems += self._check_environment_params(env_accepts)
        problems += self._check_algorithm_params(algo_accepts)
        problems += self._check_metrics(algo_specs)
        problems += self._check_compatibility(algo_specs)
        if not problems and env_accepts is not None:
            built: dict[str, Any] = {}
            problems += self._check_environments_build(env_accepts, built)
            if not problems:
                problems += self._check_algorithm_prechecks(env_accepts, algo_specs, built)
        if problems:
            raise ValueError("\n".join(problems))
        return self

    def _check_environments_build(self, env_accepts: _Accepts, built: dict[str, Any] | None = None) -> list[str]:
        """Build the environment of each grid point (its parameters, reward bounds...) now, not mid-run.

        At most :data:`MAX_ENVIRONMENTS_CHECKED` distinct environments are built (the others are
        checked when their cells run); their warnings are left to the run.
        """
        factory = get_environment(self.environment.name).factory
        swept = [key for key in self.grid.keys if env_accepts.accepts(key)]
        if self.grid.mode == "product":  # only the environment's keys: not the whole grid
            variants = [dict(zip(swept, values, strict=True))
                        for values in itertools.islice(itertools.product(*(self.grid.parameters[k] for k in swept)),
                                                       MAX_ENVIRONMENTS_CHECKED)]
        else:
            variants = [{key: point[key] for key in swept} for point in self.grid.points()]
        problems: list[str] = []
        seen: list[dict[str, Any]] = []
        for variant in variants:
            if variant in seen:
                continue
            if len(seen) == MAX_ENVIRONMENTS_CHECKED:
                break
            seen.append(variant)
            where = f" at grid point {variant}" if variant else ""
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    env = factory(**{**self.environment.params, **variant})
            except Exception as exc:  # any failure to build it is a problem of the study
                problems.append(f"environment: {self.environment.name!r}{where} cannot be built: {exc}")
                continue
            if built is not None:
                built[repr(sorted(variant.items()))] = env
        return problems

    def _check_algorithm_prechecks(self, env_accepts: _Accepts, specs: Sequence[AlgorithmSpec | None],
                                   built: Mapping[str, Any]) -> list[str]:
        """Run each algorithm's registry ``precheck`` (horizon limits, reward bounds) on the built environments.

        Grid points whose environment was not built (beyond :data:`MAX_ENVIRONMENTS_CHECKED`) are
        checked when their cells run.
        """
        problems: list[str] = []
        for point in itertools.islice(self.grid_points(), MAX_ENVIRONMENTS_CHECKED * 16):
            variant = {key: value for key, value in point.items() if env_accepts.accepts(key)}
            env = built.get(repr(sorted(variant.items())))
            if env is None:
                continue
            for index, (algorithm, spec) in enumerate(zip(self.algorithms, specs, strict=True)):
                if spec is None or spec.precheck is None:
                    continue
                accepts = _signature_of(spec.simulate, _RUNNER_ARGUMENTS)
                params = {**algorithm.params, **{k: v for k, v in point.items() if accepts.accepts(k)}}
                try:
                    spec.precheck(env, **params)
                except DPBanditsError as exc:
                    message = f"algorithms[{index}] ({algorithm.display_name}): {exc}"
                    if message not in problems:
                        problems.append(message)
        return problems

    def _check_grid(self, env_accepts: _Accepts | None, algo_accepts: Sequence[_Accepts | None]) -> list[str]:
        """Known rules on every swept value; every swept key must be taken by someone."""
        problems = []
        for path, value in self.grid.labelled_values():
            problems += _check_value(path, path.rsplit(".", 1)[-1].split("[", 1)[0], value)
        if env_accepts is None or any(accepts is None for accepts in algo_accepts):
            return problems  # an unknown name was already reported; its signature is unknown
        for key in self.grid.keys:
            if not any(accepts is not None and accepts.accepts(key) for accepts in (env_accepts, *algo_accepts)):
                problems.append(
                    f"grid.{key}: must be a parameter of the environment or of an algorithm, "
                    f"got {key!r} which none of them accepts"
                )
        return problems

    def _check_environment_params(self, env_accepts: _Accepts | None) -> list[str]:
        problems = []
        swept = self.grid.keys
        problems += _fixed_params_problems("environment", f"environment {self.environment.name!r}",
                                           self.environment.params, env_accepts, swept)
        if env_accepts is not None:
            for key in sorted(env_accepts.required - set(self.environment.params) - set(swept)):
                problems.append(f"environment.{key}: is required by {self.environment.name!r} but missing")
        return problems

    def _check_algorithm_params(self, algo_accepts: Sequence[_Accepts | None]) -> list[str]:
        problems = []
        swept = self.grid.keys
        for index, (algorithm, accepts) in enumerate(zip(self.algorithms, algo_accepts, strict=True)):
            problems += _fixed_params_problems(f"algorithms[{index}]", f"algorithm {algorithm.name!r}",
                                               algorithm.params, accepts, swept)
            if accepts is not None:
                given = set(algorithm.params) | {key for key in swept if accepts.accepts(key)}
                for key in sorted(accepts.required - given):
                    problems.append(
                        f"algorithms[{index}].{key}: is required by {algorithm.name!r} but missing "
                        "(give it inline or sweep it in [grid])"
                    )
        return problems

    def _check_labels(self) -> list[str]:
        seen: dict[str, int] = {}
        problems = []
        for index, algorithm in enumerate(self.algorithms):
            label = algorithm.display_name
            if label in seen:
                problems.append(
                    f"algorithms[{index}].label: must be unique (algorithms[{seen[label]}] is also "
                    f"{label!r}); give each entry a distinct label, got {label!r}"
                )
            seen.setdefault(label, index)
        return problems

    def _check_environment(self, problems: list[str]) -> _Accepts | None:
        try:
            spec = get_environment(self.environment.name)
        except DPBanditsError as exc:
            problems.append(f"environment.name: {_strip_name(exc)}")
            return None
        return _signature_of(spec.factory, frozenset({"self"}))

    def _check_compatibility(self, specs: Sequence[AlgorithmSpec | None]) -> list[str]:
        """Each algorithm that declares its environments (names or kinds) must accept this one."""
        try:
            environment = get_environment(self.environment.name)
        except DPBanditsError:
            return []  # already reported
        problems = []
        for index, spec in enumerate(specs):
            if spec is None or not spec.environments:
                continue
            if environment.name not in spec.environments and environment.kind not in spec.environments:
                problems.append(
                    f"algorithms[{index}].name: must be an algorithm that runs on environment "
                    f"{environment.name!r} (kind {environment.kind!r}); {spec.name!r} runs on "
                    f"{list(spec.environments)}, got {spec.name!r}"
                )
        return problems

    def _check_metrics(self, specs: Sequence[AlgorithmSpec | None]) -> list[str]:
        if self.metrics is None or any(spec is None for spec in specs):
            return []
        provided = {metric for spec in specs if spec is not None for metric in spec.metrics}
        problems = []
        if not self.metrics:
            problems.append("metrics: must name at least one metric, got []")
        for index, metric in enumerate(self.metrics):
            if metric not in provided:
                problems.append(
                    f"metrics[{index}]: must be a metric returned by one of the algorithms "
                    f"({', '.join(sorted(provided))}), got {metric!r}"
                )
        return problems

    # ---------------------------------------------------------------- expansion
    @property
    def swept_parameters(self) -> tuple[str, ...]:
        """The names of the swept parameters, in file order."""
        return self.grid.keys

    def grid_points(self) -> list[dict[str, Any]]:
        """The grid points, in the documented fixed order."""
        return self.grid.points()

    def algorithm_spec(self, index: int) -> AlgorithmSpec:
        """The registry entry of ``algorithms[index]`` (a user's algorithm: its entry for this environment)."""
        return self._spec_named(self.algorithms[index].name)

    def _spec_named(self, name: str) -> AlgorithmSpec:
        """The entry of algorithm ``name``; a study read from a run never imports a user's algorithm."""
        recorded = _RECORDED_SPECS.get() if self._recorded is None else self._recorded
        if recorded is None:
            return get_algorithm(name, self._environment_kind())
        if name in recorded:
            return recorded[name]
        if not is_builtin_algorithm(name):
            raise StudyError(f"{name!r} is not a built-in algorithm and the run does not describe it; reading "
                             "the run would import its code, which a run directory may not choose")
        return get_algorithm(name, self._environment_kind())

    def _environment_kind(self) -> str | None:
        """The kind of the study's environment (``"mab"``, ``"dueling"``, ...), None if it is unknown."""
        try:
            return get_environment(self.environment.name).kind
        except DPBanditsError:
            return None

    def metrics_of(self, index: int) -> tuple[str, ...]:
        """The metrics recorded for ``algorithms[index]``: the requested ones it returns."""
        provided = self.algorithm_spec(index).metrics
        if self.metrics is None:
            return tuple(provided)
        return tuple(metric for metric in self.metrics if metric in provided)

    def all_metrics(self) -> tuple[str, ...]:
        """Every metric recorded by at least one algorithm, in a stable order."""
        seen: dict[str, None] = {}
        for index in range(len(self.algorithms)):
            for metric in self.metrics_of(index):
                seen.setdefault(metric)
        return tuple(seen)

    def proportion_metrics(self) -> frozenset[str]:
        """The metrics that are 0/1 per trial for every algorithm that records them."""
        shared: set[str] = set()
        other: set[str] = set()
        for index in range(len(self.algorithms)):
            spec = self.algorithm_spec(index)
            for metric in self.metrics_of(index):
                (shared if metric in spec.proportion_metrics else other).add(metric)
        return frozenset(shared - other)

    def cells(self) -> list[Cell]:
        """Every (grid point, algorithm) cell: points in grid order, algorithms in file order."""
        env_accepts = self._check_environment([])
        cells = []
        for point_index, point in enumerate(self.grid_points()):
            env_params = dict(self.environment.params)
            if env_accepts is not None:
                env_params.update({k: v for k, v in point.items() if env_accepts.accepts(k)})
            for algorithm_index, algorithm in enumerate(self.algorithms):
                accepts = _signature_of(self.algorithm_spec(algorithm_index).simulate, _RUNNER_ARGUMENTS)
                params = dict(algorithm.params)
                params.update({k: v for k, v in point.items() if accepts.accepts(k)})
                cells.append(
                    Cell(
                        point_index=point_index,
                        point=dict(point),
                        algorithm_index=algorithm_index,
                        label=algorithm.display_name,
                        algorithm=algorithm.name,
                        environment=self.environment.name,
                        environment_params=env_params,
                        algorithm_params=params,
                    )
                )
        return cells

    def n_chunks(self) -> int:
        """Tasks per cell: ⌈trials / chunk_size⌉."""
        return -(-self.trials // self.chunk_size)

    def chunk_sizes(self) -> list[int]:
        """Trials of each chunk of a cell (all ``chunk_size`` but possibly the last)."""
        full, rest = divmod(self.trials, self.chunk_size)
        return [self.chunk_size] * full + ([rest] if rest else [])

    # ---------------------------------------------------------------- identity
    def canonical_json(self) -> str:
        """The study as canonical JSON (sorted keys); what :meth:`digest` hashes.

        Only what changes results is in it: ``description`` (words) and ``analyses`` (they read
        results and never change them) are left out, so editing them does not block ``--resume``.
        """
        return json.dumps(self.model_dump(exclude=set(PRESENTATION_FIELDS)), sort_keys=True,
                          separators=(",", ":"), allow_nan=True)

    def digest(self) -> str:
        """SHA-256 of :meth:`canonical_json`: two studies with equal digests give equal results."""
        return hashlib.sha256(self.canonical_json().encode("utf-8")).hexdigest()


# --------------------------------------------------------------------------------------------
# Loading.
# --------------------------------------------------------------------------------------------


def parse_study_text(text: str, *, source: str | None = None) -> Study:
    """Parse and validate the TOML text of a study.

    Raises
    ------
    StudyError
        If the text is not valid TOML or not a valid study.
    """
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        where = f" {source}" if source else ""
        raise StudyError(f"invalid study{where}: not valid TOML: {exc}") from None
    return Study.from_mapping(data, source=source)


def load_study(path: str | Path) -> Study:
    """Read and validate a study file.

    Parameters
    ----------
    path : str or Path
        A TOML study file.

    Returns
    -------
    Study

    Raises
    ------
    StudyError
        If the file cannot be read, is not TOML, or is not a valid study.
    """
    return parse_study_text(read_study_text(path), source=str(path))


MAX_STUDY_FILE_BYTES = 1 << 20
"""The largest study file read (1 MiB; the bundled studies are under 4 kB): a larger file, a
device such as ``/dev/zero``, is refused before it can fill memory."""


def read_study_text(path: str | Path) -> str:
    """The text of a study file (UTF-8; a byte-order mark is allowed).

    A regular file larger than :data:`MAX_STUDY_FILE_BYTES` is refused before it is read, and a
    device (``/dev/zero``) before it is opened; a pipe (``<(...)``) is read up to that size.

    Raises
    ------
    StudyError
        If the file cannot be read, is a device, is larger than the cap or is not UTF-8 text.
    """
    file = Path(path)
    cap = MAX_STUDY_FILE_BYTES
    try:
        mode = file.stat().st_mode
        if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
            raise StudyError(f"study file {str(file)!r} is a device, not a study file")
        if stat.S_ISREG(mode) and file.stat().st_size > cap:
            raise StudyError(f"study file {str(file)!r} is larger than {cap:,} bytes: not a study file")
        with file.open("rb") as handle:
            data = handle.read(cap + 1)
    except OSError as exc:
        raise StudyError(f"study file {str(file)!r} cannot be read: {exc.strerror or exc}") from None
    if len(data) > cap:
        raise StudyError(f"study file {str(file)!r} is larger than {cap:,} bytes: not a study file")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise StudyError(f"study file {str(file)!r} is not UTF-8 text ({exc.reason} at byte {exc.start}); "
                         "save it as UTF-8") from None
