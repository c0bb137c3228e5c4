"""Post-run analyses: computations over a finished run directory, named by a study's ``analyses``.

An analysis turns a run directory (its ``summary.csv``, its per-trial cell files) into a
JSON-serialisable report. ``run_study`` runs the study's analyses when every cell is done and
writes each report atomically to ``RUN_DIR/analyses/<name>.json``; :func:`run_analyses` runs them
again on any run directory. Analyses read results only: they never change them, so they are not
part of the study digest.

Registered analyses
-------------------
``usca-rate-shape``
    Tests USCA's error-rate shape (spec E1, analyses 3 and 4) with
    :func:`~dpbandits.algorithms.kernel.rates.compare_rate_shapes` on the per-trial error rates:
    Theorem 4.1's a·√(γ_T/T) + b·γ_T/(Tε)·log(e + Tε/γ_T) against the prior art
    a·√(γ_T/T) + b·√(γ_T/(Tε)), fitted on the unsaturated (T, ε) cells, the exponent p of the
    privacy excess ER(ε) − ER(∞) ∝ (γ_T/(Tε))^p, and bootstrap intervals over trials; it states
    which shape the data support. Cells are grouped into *families*: the cells of one private USCA
    variant (the same registered name and parameters apart from horizon and ε, whether ε is swept
    by the grid or set per algorithm entry), joined by the non-private USCA cells
    (``usca-nonprivate``, the ε = ∞ limit) whose parameters agree with theirs. Families without a
    finite ε are not fitted. The verdict at saturation thresholds 0.125 and 0.5 (instead of 0.25)
    is reported as ``other_saturation_thresholds``, and the unweighted NNLS fit of the mean ER over
    every cell (the shape test of earlier runs) as ``unweighted_all_cells``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dpbandits._core.errors import StudyError
from dpbandits.experiments.config import Cell
from dpbandits.experiments.store import atomic_write_text, load_trials, read_summary

__all__ = ["ANALYSES_DIR", "Analysis", "get_analysis", "list_analyses", "run_analyses"]

ANALYSES_DIR = "analyses"

Compute = Callable[[Path], dict[str, Any]]


@dataclass(frozen=True)
class Analysis:
    """A registered post-run analysis: ``compute(run_dir)`` returns a JSON-serialisable report."""

    name: str
    description: str
    compute: Compute


_ANALYSES: dict[str, Analysis] = {}


def _register(name: str, description: str) -> Callable[[Compute], Compute]:
    def decorate(compute: Compute) -> Compute:
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
    read_summary(run_dir)  # a run directory with a summary, or a clear error
    out_dir = Path(run_dir) / ANALYSES_DIR
    out_dir.mkdir(exist_ok=True)
    written = {}
    for analysis in analyses:
        report = {"analysis": analysis.name, "description": analysis.description, **analysis.compute(Path(run_dir))}
        path = out_dir / f"{analysis.name}.json"
        atomic_write_text(path, json.dumps(report, indent=2, allow_nan=True) + "\n")
        written[analysis.name] = path
    return written


_NON_PRIVATE_USCA = "usca-nonprivate"
_SATURATION_CHECKS = (0.125, 0.5)  # besides rates.SATURATION_FRACTION
_NOT_FAMILY_KEYS = ("horizon", "epsilon")  # what varies inside a family
_PRIVATE_ONLY_KEYS = ("sensitivity_method",)  # options a non-private run does not have


def _family_parameters(cell: Cell, ignore: Sequence[str] = ()) -> str:
    params = {k: v for k, v in cell.algorithm_params.items() if k not in _NOT_FAMILY_KEYS and k not in ignore}
    return json.dumps(params, sort_keys=True, default=repr)


def _usca_families(trials: Sequence[tuple[Cell, Mapping[str, Any]]]) -> dict[str, list[tuple[Cell, Mapping[str, Any]]]]:
    """Group cells with a ``gamma`` metric into families (see the module docstring)."""
    families: dict[str, list[tuple[Cell, Mapping[str, Any]]]] = {}
    limits = []
    for cell, values in trials:
        if "gamma" not in values or "error" not in values:
            continue
        epsilon = cell.algorithm_params.get("epsilon")
        if cell.algorithm == _NON_PRIVATE_USCA or (isinstance(epsilon, float) and math.isinf(epsilon)):
            limits.append((cell, values))
        else:
            families.setdefault(f"{cell.algorithm} {_family_parameters(cell)}", []).append((cell, values))
    for members in families.values():
        private = members[0][0]
        if private.algorithm != "usca":
            continue
        key = _family_parameters(private, _PRIVATE_ONLY_KEYS)
        members.extend(item for item in limits if _family_parameters(item[0]) == key)
    return families


@_register("usca-rate-shape",
           "Theorem 4.1's rate sqrt(gamma/T) + gamma/(T eps) log(e + T eps/gamma) against the prior-art "
           "sqrt(gamma/T) + sqrt(gamma/(T eps)): relative NNLS fits on the unsaturated cells, the exponent of "
           "the privacy excess in gamma/(T eps), bootstrap intervals over trials, and which shape the data support")
def _usca_rate_shape(run_dir: Path) -> dict[str, Any]:
    from dpbandits.algorithms.kernel.rates import RateCell, compare_rate_shapes, fit_error_rate

    trials = load_trials(run_dir)
    if not any("gamma" in values for _, values in trials):
        raise StudyError("the usca-rate-shape analysis needs the metric 'gamma' in the run's cells")
    fits: dict[str, Any] = {}
    for name, members in _usca_families(trials).items():
        epsilons = [float(cell.algorithm_params.get("epsilon", math.inf)) for cell, _ in members]
        if len(members) < 3 or all(math.isinf(e) for e in epsilons):
            continue  # too few cells to fit two coefficients, or no privacy term at all
        cells = [
            RateCell(horizon=float(cell.algorithm_params["horizon"]), epsilon=eps,
                     gamma=float(np.mean(values["gamma"])), errors=np.asarray(values["error"]),
                     pair=cell.point_index,
                     uniform_error=float(np.mean(values["uniform_error"])) if "uniform_error" in values else None)
            for (cell, values), eps in zip(members, epsilons, strict=True)
        ]
        # the verdict at other saturation thresholds (fewer replicates): how much it hangs on 0.25
        robustness = []
        for fraction in _SATURATION_CHECKS:
            other = compare_rate_shapes(cells, saturation=fraction, n_bootstrap=500)
            exponent = other.get("privacy_exponent")
            robustness.append({
                "saturation": fraction, "n_fitted": other["n_fitted"], "supported_shape": other["supported_shape"],
                "rmse_difference_prior_minus_usca": other.get("rmse_difference_prior_minus_usca"),
                "privacy_exponent": None if exponent is None else
                {key: exponent[key] for key in ("estimate", "ci_low", "ci_high", "n_cells")},
            })
        legacy = fit_error_rate([c.horizon for c in cells], [c.epsilon for c in cells], [c.gamma for c in cells],
                                [float(np.mean(c.errors)) for c in cells])
        fits[name] = {
            "members": list(dict.fromkeys(cell.label for cell, _ in members)),
            **compare_rate_shapes(cells),
            "other_saturation_thresholds": robustness,
            "unweighted_all_cells": {
                "usca_shape": {"statistical": legacy.statistical, "privacy": legacy.privacy,
                               "r_squared": legacy.r_squared},
                "prior_art_shape": {"statistical": legacy.prior_statistical, "privacy": legacy.prior_privacy,
                                    "r_squared": legacy.prior_r_squared},
            },
        }
    if not fits:
        raise StudyError("the usca-rate-shape analysis found no USCA family with a finite epsilon at 3 or more cells")
    return {"fits": fits}
