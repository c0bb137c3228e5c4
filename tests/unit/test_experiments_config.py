"""Study files: parsing, validation messages, grid modes and cell expansion."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dpbandits._core.errors import StudyError
from dpbandits.experiments.config import Study, load_study, parse_study_text

SMOKE = """
name = "tiny"
seed = 3
trials = 25
chunk_size = 10

[environment]
name = "bernoulli"
means = [0.7, 0.5, 0.4, 0.3]

[[algorithms]]
name = "uniform"

[[algorithms]]
name = "sequential-halving"
label = "SH"

[grid]
budget = [40, 80]
"""


def _study(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "name": "tiny",
        "seed": 1,
        "trials": 10,
        "environment": {"name": "bernoulli", "means": [0.7, 0.5, 0.4]},
        "algorithms": [{"name": "uniform"}, {"name": "sequential-halving"}],
        "grid": {"budget": [20, 40]},
    }
    base.update(changes)
    return base


def test_toml_study_parses_and_expands() -> None:
    study = parse_study_text(SMOKE)
    assert study.swept_parameters == ("budget",)
    assert study.grid_points() == [{"budget": 40}, {"budget": 80}]
    cells = study.cells()
    assert [(c.point_index, c.label) for c in cells] == [(0, "uniform"), (0, "SH"), (1, "uniform"), (1, "SH")]
    assert cells[1].algorithm_params == {"budget": 40}
    assert cells[1].environment_params == {"means": [0.7, 0.5, 0.4, 0.3]}
    assert study.chunk_sizes() == [10, 10, 5]
    assert study.n_chunks() == 3
    assert study.proportion_metrics() == frozenset({"success"})
    assert study.all_metrics() == ("success", "simple_regret")


def test_same_study_built_in_python_has_the_same_digest() -> None:
    from_toml = parse_study_text(SMOKE)
    built = Study(
        name="tiny",
        seed=3,
        trials=25,
        chunk_size=10,
        environment={"name": "bernoulli", "params": {"means": [0.7, 0.5, 0.4, 0.3]}},  # type: ignore[arg-type]
        algorithms=[{"name": "uniform"}, {"name": "sequential-halving", "label": "SH"}],  # type: ignore[list-item]
        grid={"parameters": {"budget": [40, 80]}},  # type: ignore[arg-type]
    )
    assert built.digest() == from_toml.digest()
    assert built.with_overrides(trials=26).digest() != from_toml.digest()


def test_load_study_reads_a_file(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_text(SMOKE, encoding="utf-8")
    assert load_study(path).name == "tiny"
    with pytest.raises(StudyError, match="cannot be read"):
        load_study(tmp_path / "missing.toml")
    path.write_text("name = ", encoding="utf-8")
    with pytest.raises(StudyError, match="not valid TOML"):
        load_study(path)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"algorithms": [{"name": "uniform"}, {"name": "sequential-halving", "epsilon": -1}]},
         r"algorithms\[1\]\.epsilon: must be > 0, got -1"),
        ({"trials": 0}, r"trials: must be >= 1, got 0"),
        ({"seed": -5}, r"seed: must be >= 0, got -5"),
        ({"environment": {"name": "nope"}}, r"environment\.name: must be one of \[.*'bernoulli'.*\], got 'nope'"),
        ({"algorithms": [{"name": "nope"}]}, r"algorithms\[0\]\.name: must be one of .*got 'nope'"),
        ({"grid": {"budget": [20, -2]}}, r"grid\.budget\[1\]: must be an int >= 1, got -2"),
        ({"grid": {"budget": [20], "colour": ["red"]}}, r"grid\.colour: must be a parameter .* got 'colour'"),
        ({"grid": {"budget": []}}, r"grid\.budget: must be a non-empty list, got \[\]"),
        ({"grid": {"mode": "zip", "budget": [20, 40], "reuse_samples": [True]}}, r"mode 'zip' needs lists of equal length"),
        ({"grid": {"mode": "diagonal", "budget": [20]}}, r"grid\.mode: must be one of 'product', 'zip' or 'cases', got 'diagonal'"),
        ({"grid": {"cases": [{"budget": 20}, {"reuse_samples": True}]}}, r"grid\.cases\[1\]: must have the same keys"),
        ({"grid": {}}, r"algorithms\[0\]\.budget: is required by 'uniform' but missing"),
        ({"algorithms": [{"name": "uniform", "budget": 20}], "grid": {"budget": [20]}},
         r"algorithms\[0\]\.budget: must not be both fixed and swept"),
        ({"algorithms": [{"name": "uniform", "colour": 1}]}, r"algorithms\[0\]\.colour: must be a parameter of algorithm 'uniform'"),
        ({"algorithms": [{"name": "uniform"}, {"name": "uniform"}]}, r"algorithms\[1\]\.label: must be unique"),
        ({"environment": {"name": "bernoulli", "means": [0.5], "sigma": 1}}, r"environment\.sigma: must be a parameter"),
        ({"environment": {"name": "bernoulli"}}, r"environment\.means: is required by 'bernoulli' but missing"),
        ({"metrics": ["succes"]}, r"metrics\[0\]: must be a metric returned by one of the algorithms .*got 'succes'"),
        ({"name": "has space"}, r"name: must match the pattern"),
        ({"environment": {"name": "kernel-rkhs"}, "grid": {"budget": [20]}},
         r"algorithms\[0\]\.name: must be an algorithm that runs on environment 'kernel-rkhs' \(kind 'kernel'\); "
         r"'uniform' runs on \['bernoulli', 'uniform', 'beta', 'clipped-gaussian'\], got 'uniform'"),
        ({"speed": 3}, r"speed: is not a known key here, got 3"),
        ({"trials": "many"}, r"trials: must be a valid integer.*got 'many'"),
    ],
)
def test_invalid_studies_name_key_constraint_and_value(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(StudyError, match=message):
        Study.from_mapping(_study(**changes))


def test_every_problem_is_reported_at_once() -> None:
    bad = _study(
        algorithms=[{"name": "uniform", "delta": 2}, {"name": "sequential-halving", "epsilon": 0}],
        grid={"budget": [0]},
    )
    with pytest.raises(StudyError) as caught:
        Study.from_mapping(bad, source="bad.toml")
    text = str(caught.value)
    assert text.startswith("invalid study bad.toml:")
    for fragment in ("algorithms[0].delta: must lie in [0, 1), got 2", "algorithms[1].epsilon: must be > 0, got 0",
                     "grid.budget[0]: must be an int >= 1, got 0"):
        assert fragment in text


def test_grid_modes_enumerate_in_documented_order() -> None:
    product = Study.from_mapping(_study(grid={"budget": [20, 40], "reuse_samples": [False, True]},
                                        algorithms=[{"name": "sequential-halving"}]))
    assert product.grid_points() == [
        {"budget": 20, "reuse_samples": False}, {"budget": 20, "reuse_samples": True},
        {"budget": 40, "reuse_samples": False}, {"budget": 40, "reuse_samples": True},
    ]
    zipped = Study.from_mapping(_study(grid={"mode": "zip", "budget": [20, 40], "reuse_samples": [False, True]},
                                       algorithms=[{"name": "sequential-halving"}]))
    assert zipped.grid_points() == [{"budget": 20, "reuse_samples": False}, {"budget": 40, "reuse_samples": True}]
    cases = Study.from_mapping(_study(grid={"cases": [{"budget": 30}, {"budget": 10}]}))
    assert cases.grid.mode == "cases"
    assert cases.grid_points() == [{"budget": 30}, {"budget": 10}]


def test_swept_parameter_goes_only_to_algorithms_that_accept_it() -> None:
    study = Study.from_mapping(_study(grid={"budget": [20], "reuse_samples": [True]}))
    uniform_cell, halving_cell = study.cells()
    assert uniform_cell.algorithm_params == {"budget": 20}
    assert halving_cell.algorithm_params == {"budget": 20, "reuse_samples": True}


def test_swept_environment_parameter_goes_to_the_environment() -> None:
    study = Study.from_mapping(_study(environment={"name": "bernoulli"},
                                      grid={"budget": [20], "means": [[0.6, 0.5], [0.9, 0.1]]}))
    cells = study.cells()
    assert [c.environment_params for c in cells[::2]] == [{"means": [0.6, 0.5]}, {"means": [0.9, 0.1]}]
    assert all("means" not in c.algorithm_params for c in cells)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"trials": True}, "trials: must be a valid integer, got true"),
        ({"seed": True}, "seed: must be a valid integer, got true"),
        ({"trials": "20"}, "trials: must be a valid integer, got '20'"),
        ({"trials": 20.0}, "trials: must be a valid integer, got 20.0"),
        ({"chunk_size": False}, "chunk_size: must be a valid integer, got false"),
        ({"name": 5}, "name: must be a valid string, got 5"),
        ({"metrics": "success"}, "metrics: must be a valid list, got 'success'"),
    ],
)
def test_top_level_values_are_not_coerced(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(StudyError) as caught:
        Study.from_mapping(_study(**changes))
    assert message in str(caught.value)


def test_strict_types_in_toml() -> None:
    for line, message in (("trials = true", "trials: must be a valid integer, got true"),
                          ('trials = "20"', "trials: must be a valid integer, got '20'"),
                          ("seed = true", "seed: must be a valid integer, got true")):
        text = SMOKE.replace("trials = 25", line) if "trials" in line else SMOKE.replace("seed = 3", line)
        with pytest.raises(StudyError, match=message):
            parse_study_text(text)


def test_a_parameter_given_inline_and_in_params_is_an_error() -> None:
    data = _study(environment={"name": "bernoulli", "means": [0.7, 0.5], "params": {"means": [0.6, 0.5]}},
                  grid={"budget": [20], "parameters": {"budget": [40]}})
    with pytest.raises(StudyError) as caught:
        Study.from_mapping(data)
    assert "environment.means: must be given once, inline or in params, got both" in str(caught.value)
    assert "grid.budget: must be given once, inline or in parameters, got both" in str(caught.value)


def test_algorithm_prechecks_refuse_a_study_before_it_runs() -> None:
    """Issue 13: an oversized horizon or rewards outside [0, 1] for a private BAI algorithm are refused
    when the study is validated (one line naming the parameter and the limit), not when a cell runs."""
    from dpbandits._core.errors import StudyError
    from dpbandits.experiments.config import Study

    dueling = {"name": "big", "trials": 2, "seed": 1, "environment": {"name": "dueling-f1"},
               "algorithms": [{"name": "rucb", "horizon": 10**9}]}
    with pytest.raises(StudyError, match=r"algorithms\[0\] \(rucb\): horizon must be <= 100000000"):
        Study.from_mapping(dueling)
    dueling["algorithms"] = [{"name": "dp-ebs-elimination", "epsilon": 1.0}]
    dueling["grid"] = {"horizon": [1000, 10**11]}
    with pytest.raises(StudyError, match="horizon must be <= 10000000000 for dp-ebs-elimination"):
        Study.from_mapping(dueling)
    bai = {"name": "bounds", "trials": 2, "seed": 1,
           "environment": {"name": "linear", "features": [[1.0, 0.0], [0.0, 1.0]], "theta": [0.6, 0.5],
                           "reward": "uniform"},
           "algorithms": [{"name": "dp-bai", "budget": 100, "epsilon": 1.0}]}
    with pytest.raises(StudyError, match=r"env.reward_bounds must lie within \[0, 1\]"):
        Study.from_mapping(bai)
    bai["algorithms"][0]["clip_rewards"] = True
    assert Study.from_mapping(bai).trials == 2


def test_params_that_is_not_a_table_is_refused_beside_inline_parameters() -> None:
    """An empty list as ``params`` is not coerced to an empty table (the fuzz test's counterexample)."""
    data = {"name": "x", "seed": 3, "trials": 4, "chunk_size": 2, "metrics": ["success"],
            "environment": {"name": "bernoulli", "means": [0.7, 0.5, 0.4], "params": []},
            "algorithms": [{"name": "uniform"}], "grid": {"budget": [12, 24]}}
    with pytest.raises(StudyError, match="environment: must be a valid dictionary"):
        Study.from_mapping(data)
