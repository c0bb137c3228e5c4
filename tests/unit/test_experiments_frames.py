"""load_run returns DataFrames of a run; export_run writes them as Parquet (issue 14, item 4)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpbandits._core.errors import StudyError
from dpbandits.experiments import export_run, load_run, run_study
from dpbandits.experiments.config import Study

STUDY = {"name": "frames", "seed": 3, "trials": 5, "environment": {"name": "bernoulli", "means": [0.7, 0.5, 0.4]},
         "algorithms": [{"name": "uniform"}, {"name": "sequential-halving"}], "grid": {"budget": [30, 60]}}


def test_load_run_and_parquet_export(tmp_path: Path) -> None:
    result = run_study(Study.from_mapping(STUDY), tmp_path / "run", progress="none")
    frames = load_run(result.run_dir)
    assert len(frames.summary) == 4 and frames.summary["success_rate"].dtype == np.float64
    assert len(frames.trials) == 4 * 5
    assert set(frames.trials.columns) >= {"algorithm", "point_index", "trial", "budget", "success", "simple_regret"}
    means = frames.trials.groupby(["algorithm", "budget"])["success"].mean().sort_index()
    expected = frames.summary.set_index(["algorithm", "budget"])["success_rate"].sort_index()
    np.testing.assert_allclose(means.to_numpy(), expected.to_numpy())  # the summary is the trials' mean
    written = export_run(result.run_dir, tmp_path / "parquet")
    assert [p.name for p in written] == ["summary.parquet", "trials.parquet"]
    pd.testing.assert_frame_equal(pd.read_parquet(written[1]), frames.trials)
    with pytest.raises(StudyError):
        load_run(tmp_path / "not-a-run")
