"""Post-run analyses: the USCA rate-shape test attributes each shape to the data it generated."""

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
from dpbandits.experiments.plots import plot_run
from dpbandits.experiments.store import RunStore

HORIZONS = [1000, 4000, 16000, 64000]
EPSILONS = [0.5, 1.0, 2.0, 5.0]
TRIALS = 8


def _gamma(horizon: float) -> float:
    return 10 * math.log(horizon)  # γ_T grows like log T for the SE kernel


def _synthetic_run(run_dir: Path, mean_error, rng, *, saturated_level: float = 10.0) -> None:
    """A finished run of USCA at several ε (one algorithm entry each) plus non-private USCA, with
    per-trial ER = mean_error(T, ε)·(1 + noise), the noise shared by the cells of a grid point."""
    algorithms = [{"name": "usca", "label": f"USCA eps={eps}", "epsilon": eps, "tau": 1.0} for eps in EPSILONS]
    algorithms += [{"name": "usca-nonprivate", "label": "USCA non-private", "tau": 1.0},
                   {"name": "gp-uniform", "label": "GP mean"}]
    study = Study.from_mapping({
        "name": "synthetic", "seed": 1, "trials": TRIALS,
        "metrics": ["error", "gamma", "uniform_error"],
        "environment": {"name": "kernel-rkhs"}, "algorithms": algorithms, "grid": {"horizon": HORIZONS},
    })
    store = RunStore.open(run_dir, study)
    shared = {t: rng.standard_normal(TRIALS) for t in HORIZONS}
    for cell in study.cells():
        t = float(cell.point["horizon"])
        eps = float(cell.algorithm_params.get("epsilon", math.inf))
        error = mean_error(t, eps) * (1 + 0.04 * shared[t] + 0.04 * rng.standard_normal(TRIALS))
        values = {"error": error, "gamma": np.full(TRIALS, _gamma(t)), "uniform_error": np.full(TRIALS, saturated_level)}
        store.write_cell(cell, values, seconds=0.0)
    store.finish("complete")
    store.write_summary()
    store.close()


def _shape(kind: str):
    def mean_error(t: float, eps: float) -> float:
        horizon, epsilon, gamma = np.array([t]), np.array([eps]), np.array([_gamma(t)])
        if math.isinf(eps):
            private = 0.0
        elif kind == "usca":
            private = float(privacy_term(horizon, epsilon, gamma)[0])
        else:
            private = float(prior_art_privacy_term(horizon, epsilon, gamma)[0])
        return 0.3 * float(statistical_term(horizon, gamma)[0]) + 2.0 * private

    return mean_error


@pytest.mark.parametrize(("shape", "exponent"), [("usca", None), ("prior-art", 0.5)])
def test_rate_shape_test_recognises_the_shape_that_made_the_data(tmp_path: Path, rng, shape: str, exponent) -> None:
    _synthetic_run(tmp_path / "run", _shape(shape), rng)
    report = json.loads(run_analyses(tmp_path / "run", ["usca-rate-shape"])["usca-rate-shape"].read_text())
    assert len(report["fits"]) == 1  # one family: the four ε entries and the non-private limit; GP mean has no γ
    fit = next(iter(report["fits"].values()))
    assert fit["members"] == [*(f"USCA eps={eps}" for eps in EPSILONS), "USCA non-private"]
    assert fit["n_cells"] == len(HORIZONS) * 5 and fit["n_saturated"] == 0
    assert fit["supported_shape"] == shape
    generating = fit["usca_shape"] if shape == "usca" else fit["prior_art_shape"]
    assert generating["statistical"]["ci_low"] <= 0.3 * 1.1 and generating["statistical"]["ci_high"] >= 0.3 * 0.9
    assert generating["privacy"]["ci_low"] <= 2.0 <= generating["privacy"]["ci_high"]
    p = fit["privacy_exponent"]
    target = p["predicted_usca_shape"] if exponent is None else exponent
    assert p["ci_low"] <= target <= p["ci_high"] and p["n_cells"] == len(HORIZONS) * len(EPSILONS)
    assert 0.7 < p["predicted_usca_shape"] < 1.0  # u·log(e + 1/u) is a little flatter than u
    assert all(row["ci_low"] <= row["estimate"] <= row["ci_high"] for row in fit["epsilon_exponent_by_horizon"])
    assert "support" in fit["statement"] and "unweighted_all_cells" in fit
    assert [check["saturation"] for check in fit["other_saturation_thresholds"]] == [0.125, 0.5]
    assert all(check["supported_shape"] == shape for check in fit["other_saturation_thresholds"])


def test_saturated_cells_are_left_out_of_the_fit(tmp_path: Path, rng) -> None:
    # the uniform-action ER at 0.2: every cell with mean ER > 0.05 is saturated
    _synthetic_run(tmp_path / "run", _shape("usca"), rng, saturated_level=0.2)
    report = json.loads(run_analyses(tmp_path / "run", ["usca-rate-shape"])["usca-rate-shape"].read_text())
    fit = next(iter(report["fits"].values()))
    saturated = [row for row in fit["cells"] if row["saturated"]]
    assert saturated and all(row["error"]["estimate"] > 0.05 and not row["fitted"] for row in saturated)
    assert fit["n_fitted"] == fit["n_cells"] - len(saturated)
    written = plot_run(tmp_path / "run", formats=("png",))
    assert tmp_path / "run" / "plots" / "usca-rate-shape.png" in written


def test_analyses_are_validated_and_kept_out_of_the_digest() -> None:
    study = {"name": "a", "seed": 1, "trials": 2, "environment": {"name": "bernoulli", "means": [0.5, 0.4]},
             "algorithms": [{"name": "uniform"}], "grid": {"budget": [4]}}
    with pytest.raises(StudyError, match=r"analyses\[0\]: analysis must be one of"):
        Study.from_mapping({**study, "analyses": ["nope"]})
    with_analysis = Study.from_mapping({**study, "analyses": ["usca-rate-shape"]})
    assert with_analysis.digest() == Study.from_mapping(study).digest()
    assert "usca-rate-shape" in [analysis.name for analysis in list_analyses()]


def test_rate_shape_needs_gamma(tmp_path: Path) -> None:
    study = Study.from_mapping({"name": "a", "seed": 1, "trials": 2, "environment": {"name": "kernel-rkhs"},
                                "algorithms": [{"name": "gp-uniform"}], "grid": {"horizon": [10]}})
    store = RunStore.open(tmp_path / "run", study)
    for cell in study.cells():
        store.write_cell(cell, {"error": np.zeros(2), "sampled_regret": np.zeros(2), "sup_error": np.zeros(2)},
                         seconds=0.0)
    store.finish("complete")
    store.write_summary()
    store.close()
    with pytest.raises(StudyError, match="needs the metric 'gamma'"):
        run_analyses(tmp_path / "run", ["usca-rate-shape"])


def test_every_catalogued_analysis_is_implemented_and_nothing_else() -> None:
    """The study loader validates names against the catalogue; the implementations must match it."""
    from dpbandits.experiments.analyses import list_analyses
    from dpbandits.experiments.analysis_catalog import ANALYSES

    assert [analysis.name for analysis in list_analyses()] == sorted(ANALYSES)
    assert all(analysis.description == ANALYSES[analysis.name] for analysis in list_analyses())
