"""The bundled DP-BAI studies run end to end through the study runner (reduced trials)."""

from __future__ import annotations

import csv

import pytest

from dpbandits._core.errors import PaperVariantWarning
from dpbandits.experiments.bundled import load_bundled_study
from dpbandits.experiments.runner import run_study


def _summary(path):
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


def test_figure1_study_runs_and_summarises_both_panels(tmp_path, seed):
    study = load_bundled_study("dp-bai-figure1").with_overrides(trials=20, seed=seed)
    result = run_study(study, tmp_path / "fig1", progress="none")
    rows = _summary(result.summary_path)
    assert len(rows) == 6 * 10 * 4  # product grid: budget x epsilon x algorithm
    assert {"algorithm", "budget", "epsilon", "success_rate", "success_stderr", "success_ci_low",
            "success_ci_high"} <= set(rows[0])
    assert {row["algorithm"] for row in rows} == {"DP-BAI", "Baseline", "DP-OD", "OD-LinBAI (non-private)"}
    panel_a = {row["budget"] for row in rows if row["epsilon"] == "0.1"}
    panel_b = {row["epsilon"] for row in rows if row["budget"] == "1000"}
    assert len(panel_a) == 6 and len(panel_b) == 10
    assert all(0.0 <= float(row["success_rate"]) <= 1.0 for row in rows)


def test_figure2_study_runs_as_printed_and_corrected(tmp_path, seed):
    study = load_bundled_study("dp-bai-figure2").with_overrides(trials=20, seed=seed)
    with pytest.warns(PaperVariantWarning):
        result = run_study(study, tmp_path / "fig2", progress="none")
    rows = _summary(result.summary_path)
    assert len(rows) == 2 * 2 * 2 * 6 * 2
    assert {row["variant"] for row in rows} == {"paper", "corrected"}


def test_every_bai_algorithm_runs_on_a_plain_k_armed_bandit(tmp_path, seed):
    """A K-armed bandit is the linear bandit with one-hot features: DP-BAI and its kin accept one."""
    from dpbandits.experiments.config import Study

    study = Study.from_mapping({
        "name": "bai-on-mab", "seed": seed, "trials": 200, "metrics": ["success"],
        "environment": {"name": "bernoulli", "means": [0.9, 0.3, 0.2, 0.1]},
        "algorithms": [{"name": "dp-bai"}, {"name": "dp-bai-gauss", "delta": 1e-5, "calibration": "analytic"},
                       {"name": "dp-bai-baseline"}, {"name": "dp-od"}, {"name": "od-linbai"}],
        "grid": {"budget": [400], "epsilon": [2.0]},
    })
    rows = _summary(run_study(study, tmp_path / "mab", progress="none").summary_path)
    assert len(rows) == 5
    # a gap of 0.6 with 400 pulls at ε = 2: every algorithm finds the best arm nearly always
    # (each rate's 95% Wilson interval excludes 0.8)
    assert all(float(row["success_ci_low"]) > 0.8 for row in rows), rows
