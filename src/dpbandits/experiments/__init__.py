"""Simulation studies: study files, the runner and its backends, the results store, plots.

The main entry points::

    from dpbandits.experiments import load_study, run_study, plot_run

    study = load_study("study.toml")           # or Study.from_mapping({...}) / load_bundled_study(name)
    result = run_study(study, "runs/my-study", backend="process")
    plot_run(result.run_dir)
    rows = read_summary(result.run_dir)         # summary.csv rows; load_trials(...) for raw values
"""

from dpbandits.experiments.bundled import list_bundled_studies, load_bundled_study
from dpbandits.experiments.config import Study, load_study, parse_study_text
from dpbandits.experiments.frames import RunFrames, export_run, load_run
from dpbandits.experiments.plots import plot_run
from dpbandits.experiments.runner import RunResult, run_study
from dpbandits.experiments.store import load_trials, read_summary

__all__ = [
    "RunFrames",
    "RunResult",
    "Study",
    "export_run",
    "list_bundled_studies",
    "load_bundled_study",
    "load_run",
    "load_study",
    "load_trials",
    "parse_study_text",
    "plot_run",
    "read_summary",
    "run_study",
]
