"""The bundled USCA studies load, and a reduced smoke study runs end to end through the runner."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from dpbandits.experiments.config import Study, load_study
from dpbandits.experiments.runner import run_study

STUDIES = sorted((Path(__file__).resolve().parents[2] / "src/dpbandits/experiments/studies").glob("usca-*.toml"))


@pytest.mark.parametrize("path", STUDIES, ids=lambda p: p.stem)
def test_bundled_usca_study_is_valid(path: Path) -> None:
    study = load_study(path)
    assert study.name == path.stem
    assert any(a.name.startswith("usca") for a in study.algorithms)


def test_reduced_smoke_study_runs(tmp_path: Path) -> None:
    study = Study.from_mapping({
        "name": "usca-tiny", "seed": 3, "trials": 2, "chunk_size": 2,
        "environment": {"name": "kernel-rkhs", "function_seed": 1},
        "algorithms": [
            {"name": "usca", "epsilon": 1.0, "grid_points_per_dim": 64, "n_test_contexts": 8, "n_features": 10},
            {"name": "usca-nonprivate", "grid_points_per_dim": 64, "n_test_contexts": 8, "n_features": 10},
        ],
        "grid": {"horizon": [40, 80]},
    })
    run_study(study, tmp_path / "run", progress="none")
    with (tmp_path / "run" / "summary.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 4
    for row in rows:
        assert 0.0 <= float(row["error_mean"]) <= 2.0  # |f| <= 1, so regret <= 2


def test_rate_shape_analysis_runs_at_the_end_of_a_usca_study(tmp_path: Path) -> None:
    import json

    study = Study.from_mapping({
        "name": "usca-rate", "seed": 5, "trials": 2, "chunk_size": 2,
        "environment": {"name": "kernel-rkhs", "function_seed": 1},
        "algorithms": [{"name": "usca", "grid_points_per_dim": 64, "n_test_contexts": 8, "n_features": 10}],
        "grid": {"horizon": [40, 80], "epsilon": [0.5, 5.0]},
        "analyses": ["usca-rate-shape"],
    })
    run_study(study, tmp_path / "run", progress="none")
    report = json.loads((tmp_path / "run" / "analyses" / "usca-rate-shape.json").read_text())
    (fit,) = report["fits"].values()
    assert fit["members"] == ["usca"] and fit["n_cells"] == 4
    assert fit["supported_shape"] in {"usca", "prior-art", "undecided"}
    assert all(0 <= row["error"]["estimate"] <= row["uniform_error"] * 2 for row in fit["cells"])
