"""Post-run analyses: computations over a finished run's ``summary.csv``, named by a study's ``analyses``.

An analysis turns the rows of ``summary.csv`` (dicts of strings) into a JSON-serialisable report.
``run_study`` runs the study's analyses when every cell is done and writes each report atomically
to ``RUN_DIR/analyses/<name>.json``; :func:`run_analyses` runs them again on any run directory.
Analyses read results only: they never change them, so they are not part of the study digest.

Registered analyses
-------------------
``usca-rate-shape``
    Tests USCA's error-rate shape (spec E1, analysis 4): for every algorithm whose rows record the
    information gain ``gamma``, fits ER ≈ a·√(γ_T/T) + b·γ_T/(Tε)·log(e + Tε/γ_T) (Theorem 4.1)
    and the prior-art shape a·√(γ_T/T) + b·√(γ_T/(Tε)) by non-negative least squares over the
    (horizon, epsilon) grid, and reports both fits and which shape the data support (higher R²).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dpbandits._core.errors import StudyError
from dpbandits.experiments.store import atomic_write_text, read_summary, summary_metrics

__all__ = ["ANALYSES_DIR", "Analysis", "get_analysis", "list_analyses", "run_analyses"]

ANALYSES_DIR = "analyses"

Rows = Sequence[Mapping[str, str]]


@dataclass(frozen=True)
class Analysis:
    """A registered post-run analysis: ``compute(rows)`` returns a JSON-serialisable report."""

    name: str
    description: str
    compute: Callable[[Rows], dict[str, Any]]


_ANALYSES: dict[str, Analysis] = {}


def _register(name: str, description: str) -> Callable[[Callable[[Rows], dict[str, Any]]], Callable[[Rows], dict[str, Any]]]:
    def decorate(compute: Callable[[Rows], dict[str, Any]]) -> Callable[[Rows], dict[str, Any]]:
        _ANALYSES[name] = Analysis(name, description, compute)
        return compute

    return decorate


def list_analyses() -> list[Analysis]:
    """The registered analyses, by name."""
    return [_ANALYSES[name] for name in sorted(_ANALYSES)]


def get_analysis(name: str) -> Analysis:
    """The analysis registered under ``name``.

    Raises
    ------
    StudyError
        If no analysis has that name.
    """
    try:
        return _ANALYSES[name]
    except KeyError:
        raise StudyError(f"analysis must be one of {sorted(_ANALYSES)}; got {name!r}") from None


def run_analyses(run_dir: str | Path, names: Sequence[str]) -> dict[str, Path]:
    """Run the named analyses on a run directory's summary; write and return ``analyses/<name>.json``.

    Raises
    ------
    StudyError
        If a name is unknown, the run has no summary, or the summary lacks what an analysis needs.
    """
    analyses = [get_analysis(name) for name in names]
    if not analyses:
        return {}
    rows = read_summary(run_dir)
    out_dir = Path(run_dir) / ANALYSES_DIR
    out_dir.mkdir(exist_ok=True)
    written = {}
    for analysis in analyses:
        report = {"analysis": analysis.name, "description": analysis.description, **analysis.compute(rows)}
        path = out_dir / f"{analysis.name}.json"
        atomic_write_text(path, json.dumps(report, indent=2, allow_nan=True) + "\n")
        written[analysis.name] = path
    return written


def _column(rows: Rows, name: str) -> list[float]:
    if rows and name not in rows[0]:
        raise StudyError(f"summary.csv has no {name!r} column, which this analysis needs")
    return [float(row[name]) if row[name] != "" else math.nan for row in rows]


@_register("usca-rate-shape",
           "NNLS fits of USCA's rate sqrt(gamma/T) + gamma/(T eps) log(e + T eps/gamma) and the prior-art "
           "sqrt(gamma/T) + sqrt(gamma/(T eps)) to the error rate over the (horizon, epsilon) grid")
def _usca_rate_shape(rows: Rows) -> dict[str, Any]:
    from dpbandits.algorithms.kernel.rates import fit_error_rate

    estimates = summary_metrics(list(rows[0])) if rows else {}
    for needed in ("error", "gamma"):
        if needed not in estimates:
            raise StudyError(f"the usca-rate-shape analysis needs the metric {needed!r} in summary.csv")
    fits: dict[str, Any] = {}
    for label in dict.fromkeys(row["algorithm"] for row in rows):
        selected = [row for row in rows if row["algorithm"] == label and row[estimates["gamma"]] != ""]
        if len(selected) < 3:
            continue  # no gamma (not a USCA variant) or too few grid points to fit two coefficients
        horizon = _column(selected, "horizon")
        epsilon = _column(selected, "epsilon") if "epsilon" in selected[0] else [math.inf] * len(selected)
        fit = fit_error_rate(horizon, epsilon, _column(selected, estimates["gamma"]),
                             _column(selected, estimates["error"]))
        fits[label] = {
            "n_points": len(selected),
            "usca_shape": {"statistical": fit.statistical, "privacy": fit.privacy, "r_squared": fit.r_squared},
            "prior_art_shape": {"statistical": fit.prior_statistical, "privacy": fit.prior_privacy,
                                "r_squared": fit.prior_r_squared},
            "supported_shape": "usca" if fit.r_squared >= fit.prior_r_squared else "prior-art",
        }
    if not fits:
        raise StudyError("the usca-rate-shape analysis found no algorithm with gamma at 3 or more grid points")
    return {"fits": fits}
