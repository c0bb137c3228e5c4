"""Simulation studies: study files, the runner and its backends, the results store, plots.

The main entry points::

    from dpbandits.experiments import load_study, run_study, plot_run

    study = load_study("study.toml")           # or Study.from_mapping({...}) / load_bundled_study(name)
    result = run_study(study, "runs/my-study", backend="process")
    plot_run(result.run_dir)
    rows = read_summary(result.run_dir)         # summary.csv rows; load_trials(...) for raw values

The names are loaded on first use, so that importing one module of the package (the command line's
drawing process imports only the plots) does not import the runner and every algorithm family.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dpbandits._core.lazy import lazy_dir, load_lazily

if TYPE_CHECKING:
    from dpbandits.experiments.bundled import list_bundled_studies, load_bundled_study
    from dpbandits.experiments.config import Study, load_study, parse_study_text
    from dpbandits.experiments.frames import RunFrames, export_run, load_run
    from dpbandits.experiments.plots import plot_run
    from dpbandits.experiments.runner import RunResult, run_study
    from dpbandits.experiments.store import load_trials, read_summary

_HOMES = {
    "RunFrames": "frames",
    "RunResult": "runner",
    "Study": "config",
    "export_run": "frames",
    "list_bundled_studies": "bundled",
    "load_bundled_study": "bundled",
    "load_run": "frames",
    "load_study": "config",
    "load_trials": "store",
    "parse_study_text": "config",
    "plot_run": "plots",
    "read_summary": "store",
    "run_study": "runner",
}
"""Public name -> the submodule defining it."""

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


def __getattr__(name: str) -> Any:
    """Load a public name on first use (PEP 562)."""
    return load_lazily(__name__, name, _HOMES, globals())


def __dir__() -> list[str]:
    return lazy_dir(globals(), __all__)
