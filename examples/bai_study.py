"""A small study built in Python: DP-BAI vs DP-OD against the budget, run, summarised and plotted."""

import tempfile
from pathlib import Path

from dpbandits import Study, plot_run, run_study
from dpbandits.experiments import read_summary

study = Study.from_mapping({
    "name": "bai-example", "seed": 5, "trials": 200, "metrics": ["success"],
    "environment": {"name": "dp-bai-section5"},
    "algorithms": [{"name": "dp-bai", "label": "DP-BAI"}, {"name": "dp-od", "label": "DP-OD"}],
    "grid": {"budget": [500, 1000, 2000], "epsilon": [0.1]},
})
with tempfile.TemporaryDirectory() as directory:
    run_dir = Path(directory) / "run"
    run_study(study, run_dir, backend="serial", progress="none")
    for row in read_summary(run_dir):
        print(f"{row['algorithm']:7} T = {row['budget']:>4}: success {float(row['success_rate']):.3f}"
              f" [{float(row['success_ci_low']):.3f}, {float(row['success_ci_high']):.3f}]")
    print("plots:", sorted(path.name for path in plot_run(run_dir, formats=["png"])))
