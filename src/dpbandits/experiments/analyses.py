"""Post-run analyses: computations over a finished run directory, named by a study's ``analyses``.

An analysis turns a run directory (its ``summary.csv``, its per-trial cell files) into a
JSON-serialisable report. ``run_study`` runs the study's analyses when every cell is done and
writes each report atomically to ``RUN_DIR/analyses/<name>.json``; :func:`run_analyses` runs them
again on any run directory. Analyses read results only: they never change them, so they are not
part of the study digest.

Registered analyses
-------------------
``usca-rate-shape``
    Tests USCA's error-rate shape (study usca-error-vs-horizon) with
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
``dueling-epsilon-fit``, ``dueling-excess-vs-arms``, ``dueling-excess-vs-horizon``,
``dueling-horizon-slope``, ``dueling-dimension-exponent``
    The shape questions E2(a)–(c), E3 and E4 of the dueling studies (see the DP dueling claims page), answered by the fits
    of :mod:`dpbandits.algorithms.dueling.fits` (least squares with 95% intervals from the points'
    standard errors). A label containing "(non-private)" is its grid point's ε = ∞ reference;
    labels starting with "Theory" are never fitted; a point whose ``committed`` rate is below 0.9
    is excluded where the study asks for that guard (and reported as excluded).
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
from dpbandits.experiments.analysis_catalog import ANALYSES, check_analysis_name
from dpbandits.experiments.config import Cell
from dpbandits.experiments.store import atomic_write_text, load_trials, read_summary, summary_metrics

__all__ = ["ANALYSES_DIR", "Analysis", "get_analysis", "list_analyses", "run_analyses"]

ANALYSES_DIR = "analyses"

Compute = Callable[[Path], dict[str, Any]]
Rows = Sequence[Mapping[str, str]]


@dataclass(frozen=True)
class Analysis:
    """A registered post-run analysis: ``compute(run_dir)`` returns a JSON-serialisable report."""

    name: str
    description: str
    compute: Compute


_ANALYSES: dict[str, Analysis] = {}


def _register(name: str) -> Callable[[Compute], Compute]:
    """Implement the catalogued analysis ``name`` (:mod:`dpbandits.experiments.analysis_catalog`)."""
    description = ANALYSES[name]

    def decorate(compute: Compute) -> Compute:
        _ANALYSES[name] = Analysis(name, description, compute)
        return compute

    return decorate


def _register_rows(name: str) -> Callable[[Callable[[Rows], dict[str, Any]]], Compute]:
    """Implement a catalogued analysis computed from the rows of ``summary.csv`` (not from the trials)."""

    def decorate(from_rows: Callable[[Rows], dict[str, Any]]) -> Compute:
        def compute(run_dir: Path) -> dict[str, Any]:
            return from_rows(read_summary(run_dir))

        return _register(name)(compute)

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
    return _ANALYSES[check_analysis_name(name)]


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


@_register("usca-rate-shape")
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


# ------------------------------------------------------------------ dueling
# Row roles come from the labels: a label containing "(non-private)" is the ε = ∞ reference of its grid
# point, labels starting with "Theory" are curves (never fitted); every other label is fitted.
_NON_PRIVATE = "(non-private)"
_GUARD = 0.9  # a point counts only if >= 90% of the trials committed before T


def _fitted_labels(rows: Rows) -> list[str]:
    labels = dict.fromkeys(row["algorithm"] for row in rows)
    return [label for label in labels if _NON_PRIVATE not in label and not label.startswith("Theory")]


def _estimates(rows: Rows, needed: Sequence[str], analysis: str) -> dict[str, str]:
    estimates = summary_metrics(list(rows[0])) if rows else {}
    for metric in needed:
        if metric not in estimates:
            raise StudyError(f"the {analysis} analysis needs the metric {metric!r} in summary.csv")
    return estimates


def _value(row: Mapping[str, str], column: str) -> float:
    text = row.get(column, "")
    return float(text) if text != "" else math.nan


def _point_key(row: Mapping[str, str], columns: Sequence[str]) -> tuple[str, ...]:
    return tuple(row[c] for c in columns)


def _reference(rows: Rows, columns: Sequence[str], estimates: Mapping[str, str]) -> dict[tuple[str, ...], tuple[float, float]]:
    """(regret, stderr) of the non-private row of each grid point (keyed by ``columns``)."""
    out = {}
    for row in rows:
        if _NON_PRIVATE in row["algorithm"]:
            out[_point_key(row, columns)] = (_value(row, estimates["reward_regret"]), _value(row, "reward_regret_stderr"))
    return out


def _guarded(row: Mapping[str, str], estimates: Mapping[str, str]) -> bool:
    """Whether the row passes the guard (no ``committed`` metric: every row passes)."""
    return "committed" not in estimates or _value(row, estimates["committed"]) >= _GUARD


@_register_rows("dueling-epsilon-fit")
def _dueling_epsilon_fit(rows: Rows) -> dict[str, Any]:
    from dpbandits.algorithms.dueling.fits import fit_inverse_epsilon

    estimates = _estimates(rows, ("reward_regret",), "dueling-epsilon-fit")
    references = [_value(r, estimates["reward_regret"]) for r in rows if _NON_PRIVATE in r["algorithm"]]
    reference = float(np.mean(references)) if references else math.nan
    fits: dict[str, Any] = {}
    for label in _fitted_labels(rows):
        mine = [r for r in rows if r["algorithm"] == label and r.get("epsilon", "") not in ("", "inf")]
        kept = [r for r in mine if _guarded(r, estimates)]
        excluded = sorted(float(r["epsilon"]) for r in mine if not _guarded(r, estimates))
        entry: dict[str, Any] = {"kept_epsilons": sorted(float(r["epsilon"]) for r in kept),
                                 "excluded_epsilons": excluded}
        if len({r["epsilon"] for r in kept}) >= 2:
            fit = fit_inverse_epsilon([float(r["epsilon"]) for r in kept], [_value(r, estimates["reward_regret"]) for r in kept],
                                      [_value(r, "reward_regret_stderr") for r in kept])
            relative = abs(fit.intercept - reference) / reference if reference > 0 else math.nan
            entry.update({"fit": fit.as_dict(), "non_private_regret": reference,
                          "intercept_relative_error": relative,
                          "passes": bool(fit.r_squared >= 0.95 and relative <= 0.2)})
        else:
            entry["fit"] = None
            entry["passes"] = False
        fits[label] = entry
    if not fits:
        raise StudyError("the dueling-epsilon-fit analysis found no private algorithm with an epsilon column")
    return {"guard": f"committed_rate >= {_GUARD}", "fits": fits}


@_register_rows("dueling-excess-vs-arms")
def _dueling_excess_vs_arms(rows: Rows) -> dict[str, Any]:
    from dpbandits.algorithms.dueling.fits import fit_line

    estimates = _estimates(rows, ("reward_regret",), "dueling-excess-vs-arms")
    columns = [c for c in ("n_arms", "epsilon", "horizon") if rows and c in rows[0]]
    if "n_arms" not in columns or "epsilon" not in columns:
        raise StudyError("the dueling-excess-vs-arms analysis needs n_arms and epsilon columns in summary.csv")
    references = _reference(rows, columns, estimates)
    fits: dict[str, Any] = {}
    for label in _fitted_labels(rows):
        per_epsilon: dict[str, Any] = {}
        for eps in sorted({r["epsilon"] for r in rows if r["algorithm"] == label}, key=float):
            mine = [r for r in rows if r["algorithm"] == label and r["epsilon"] == eps]
            kept = [r for r in mine if _guarded(r, estimates) and _point_key(r, columns) in references]
            points = []
            for r in kept:
                base, base_se = references[_point_key(r, columns)]
                points.append((float(r["n_arms"]), _value(r, estimates["reward_regret"]) - base,
                               math.hypot(_value(r, "reward_regret_stderr"), base_se)))
            entry: dict[str, Any] = {"arms": [p[0] for p in points], "excess": [p[1] for p in points],
                                     "excess_stderr": [p[2] for p in points],
                                     "excluded_arms": sorted(float(r["n_arms"]) for r in mine if r not in kept)}
            if len({p[0] for p in points}) >= 2:
                fit = fit_line(*zip(*points, strict=True))
                entry.update({"fit": fit.as_dict(), "slope_times_epsilon": fit.slope * float(eps)})
            per_epsilon[eps] = entry
        fits[label] = per_epsilon
    return {"guard": f"committed_rate >= {_GUARD}", "fits": fits}


@_register_rows("dueling-excess-vs-horizon")
def _dueling_excess_vs_horizon(rows: Rows) -> dict[str, Any]:
    from dpbandits.algorithms.dueling.fits import fit_log_log

    estimates = _estimates(rows, ("reward_regret",), "dueling-excess-vs-horizon")
    columns = [c for c in ("horizon", "epsilon") if rows and c in rows[0]]
    if "horizon" not in columns:
        raise StudyError("the dueling-excess-vs-horizon analysis needs a horizon column in summary.csv")
    references = _reference(rows, columns, estimates)
    fits: dict[str, Any] = {}
    for label in _fitted_labels(rows):
        mine = [r for r in rows if r["algorithm"] == label]
        points = []
        for r in mine:
            if not _guarded(r, estimates) or _point_key(r, columns) not in references:
                continue
            base, base_se = references[_point_key(r, columns)]
            excess = _value(r, estimates["reward_regret"]) - base
            if excess > 0:
                points.append((float(r["horizon"]), excess, math.hypot(_value(r, "reward_regret_stderr"), base_se)))
        points.sort()
        entry: dict[str, Any] = {"horizons": [p[0] for p in points], "excess": [p[1] for p in points],
                                 "excess_stderr": [p[2] for p in points],
                                 "excluded_horizons": sorted(float(r["horizon"]) for r in mine
                                                             if float(r["horizon"]) not in {p[0] for p in points})}
        if len(points) >= 3:
            t, gaps, se = (np.array(v) for v in zip(*points, strict=True))
            entry["t_exponent"] = fit_log_log(t, gaps, se).as_dict()  # excess ∝ T^q
            entry["log_t_degree"] = fit_log_log(np.log(t), gaps, se).as_dict()  # excess ∝ (ln T)^p
            tail = fit_log_log(t[-3:], gaps[-3:], se[-3:])
            entry["t_exponent_last_three"] = tail.as_dict()  # a polylog's local exponent p/ln T falls with T
        fits[label] = entry
    return {"guard": f"committed_rate >= {_GUARD}", "fits": fits}


def _dimension(row: Mapping[str, str]) -> int:
    try:
        return len(json.loads(row["theta"]))
    except (KeyError, ValueError, TypeError):
        raise StudyError("the dueling dimension analyses need a theta column (a JSON list) in summary.csv") from None


@_register_rows("dueling-horizon-slope")
def _dueling_horizon_slope(rows: Rows) -> dict[str, Any]:
    from dpbandits.algorithms.dueling.fits import fit_log_log

    estimates = _estimates(rows, ("reward_regret",), "dueling-horizon-slope")
    groups: dict[tuple[str, int, str], list[Mapping[str, str]]] = {}
    for r in rows:
        if not r["algorithm"].startswith("Theory"):
            groups.setdefault((r["algorithm"], _dimension(r), r.get("epsilon", "")), []).append(r)
    slopes = []
    for (label, d, eps), mine in groups.items():
        if len({r["horizon"] for r in mine}) < 3:
            continue
        fit = fit_log_log([float(r["horizon"]) for r in mine], [_value(r, estimates["reward_regret"]) for r in mine],
                          [_value(r, "reward_regret_stderr") for r in mine])
        slopes.append({"algorithm": label, "dim": d, "epsilon": eps, "fit": fit.as_dict()})
    if not slopes:
        raise StudyError("the dueling-horizon-slope analysis found no group with three or more horizons")
    return {"slopes": slopes}


@_register_rows("dueling-dimension-exponent")
def _dueling_dimension_exponent(rows: Rows) -> dict[str, Any]:
    from dpbandits.algorithms.dueling.fits import fit_inverse_epsilon, fit_log_log

    estimates = _estimates(rows, ("reward_regret",), "dueling-dimension-exponent")
    results = []
    for label in _fitted_labels(rows):
        for horizon in sorted({r["horizon"] for r in rows if r["algorithm"] == label}, key=float):
            per_d = {}
            for d in sorted({_dimension(r) for r in rows if r["algorithm"] == label}):
                mine = [r for r in rows if r["algorithm"] == label and r["horizon"] == horizon and _dimension(r) == d
                        and r.get("epsilon", "") not in ("", "inf")]
                if len({r["epsilon"] for r in mine}) >= 3:
                    per_d[d] = fit_inverse_epsilon([float(r["epsilon"]) for r in mine],
                                                   [_value(r, estimates["reward_regret"]) for r in mine],
                                                   [_value(r, "reward_regret_stderr") for r in mine])
            if len(per_d) < 2:
                continue
            entry: dict[str, Any] = {"algorithm": label, "horizon": float(horizon),
                                     "per_dimension": {str(d): fit.as_dict() for d, fit in per_d.items()}}
            positive = {d: fit for d, fit in per_d.items() if fit.slope > 0}
            if len(positive) >= 2:
                exponent = fit_log_log(list(positive), [f.slope for f in positive.values()],
                                       [f.slope_stderr for f in positive.values()])
                low, high = exponent.slope_widest_interval  # trial noise and lack of fit
                entry.update({"exponent": exponent.as_dict(),
                              "interval_holds_3": bool(low <= 3 <= high), "interval_holds_6": bool(low <= 6 <= high)})
            results.append(entry)
    if not results:
        raise StudyError("the dueling-dimension-exponent analysis found no algorithm with two dimensions and "
                         "three epsilons at one horizon")
    return {"results": results}
