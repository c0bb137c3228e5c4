"""The bundled dueling studies load, and the smoke study runs end to end with plots."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from dpbandits.experiments.config import load_study
from dpbandits.experiments.plots import plot_run
from dpbandits.experiments.runner import run_study

STUDIES = sorted((Path(__file__).resolve().parents[2] / "src/dpbandits/experiments/studies").glob("dueling-*.toml"))


@pytest.mark.parametrize("path", STUDIES, ids=lambda p: p.stem)
def test_bundled_dueling_study_is_valid(path: Path) -> None:
    study = load_study(path)
    assert study.name == path.stem
    assert any(a.name in {"dp-ebs-elimination", "goptimal-dpdb"} for a in study.algorithms)


@pytest.mark.slow
def test_smoke_study_runs_and_private_regret_is_sane(tmp_path: Path) -> None:
    study = load_study(next(p for p in STUDIES if p.stem == "dueling-smoke"))
    result = run_study(study, tmp_path / "run", progress="off")
    with (tmp_path / "run" / "summary.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 2 * len(study.algorithms)
    for row in rows:
        horizon = float(row["horizon"])
        if not row["algorithm"].startswith("Theory"):
            # regret per round is at most 2·(r* − r_min) = 3.2 on F1
            assert 0 <= float(row["reward_regret_mean"]) <= 3.2 * horizon
    assert result is not None
    figures = plot_run(tmp_path / "run", formats=("png",))
    assert any(p.name.startswith("reward_regret_vs_horizon") for p in figures)
