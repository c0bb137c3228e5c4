"""Post-run analyses: the USCA rate-shape fit attributes each shape to the data it generated."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from dpbandits._core.errors import StudyError
from dpbandits.algorithms.kernel.rates import prior_art_privacy_term, privacy_term, statistical_term
from dpbandits.experiments.analyses import list_analyses, run_analyses
from dpbandits.experiments.config import Study

HORIZONS = np.array([250.0, 500, 1000, 2000, 4000, 8000])
EPSILONS = np.array([0.1, 0.5, 1.0, 5.0])


def _write_summary(run_dir: Path, error_of) -> None:
    lines = ["horizon,epsilon,algorithm,n_trials,error_mean,error_stderr,error_ci_low,error_ci_high,"
             "gamma_mean,gamma_stderr,gamma_ci_low,gamma_ci_high"]
    for t in HORIZONS:
        for eps in EPSILONS:
            gamma = 10 * math.log(t)  # γ_T grows like log T for the SE kernel
            error = float(error_of(np.array([t]), np.array([eps]), np.array([gamma]))[0])
            lines.append(f"{t:g},{eps:g},USCA,10,{error!r},0.01,0,1,{gamma!r},0,{gamma!r},{gamma!r}")
            lines.append(f"{t:g},{eps:g},GP mean,10,0.1,0.01,0,1,,,,")  # no gamma: not fitted
    run_dir.mkdir()
    (run_dir / "summary.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.mark.parametrize(("shape", "supported"), [("usca", "usca"), ("prior-art", "prior-art")])
def test_rate_shape_fit_recognises_the_shape_that_made_the_data(tmp_path: Path, shape: str, supported: str) -> None:
    def error(t, eps, gamma):
        private = privacy_term(t, eps, gamma) if shape == "usca" else prior_art_privacy_term(t, eps, gamma)
        return 0.3 * statistical_term(t, gamma) + 2.0 * private

    _write_summary(tmp_path / "run", error)
    path = run_analyses(tmp_path / "run", ["usca-rate-shape"])["usca-rate-shape"]
    report = json.loads(path.read_text())
    assert list(report["fits"]) == ["USCA"]
    fit = report["fits"]["USCA"]
    assert fit["n_points"] == HORIZONS.size * EPSILONS.size
    assert fit["supported_shape"] == supported
    exact = fit["usca_shape"] if shape == "usca" else fit["prior_art_shape"]
    assert exact["r_squared"] == pytest.approx(1.0, abs=1e-9)
    assert exact["statistical"] == pytest.approx(0.3) and exact["privacy"] == pytest.approx(2.0)


def test_analyses_are_validated_and_kept_out_of_the_digest() -> None:
    study = {"name": "a", "seed": 1, "trials": 2, "environment": {"name": "bernoulli", "means": [0.5, 0.4]},
             "algorithms": [{"name": "uniform"}], "grid": {"budget": [4]}}
    with pytest.raises(StudyError, match=r"analyses\[0\]: analysis must be one of"):
        Study.from_mapping({**study, "analyses": ["nope"]})
    with_analysis = Study.from_mapping({**study, "analyses": ["usca-rate-shape"]})
    assert with_analysis.digest() == Study.from_mapping(study).digest()
    assert "usca-rate-shape" in [analysis.name for analysis in list_analyses()]


def test_rate_shape_needs_gamma(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "summary.csv").write_text("horizon,algorithm,n_trials,error_mean,error_stderr,error_ci_low,"
                                         "error_ci_high\n100,x,1,0.1,0,0,0\n", encoding="utf-8")
    with pytest.raises(StudyError, match="needs the metric 'gamma'"):
        run_analyses(run_dir, ["usca-rate-shape"])
