"""Every bundled study's figures follow the figure rules, checked on the matplotlib objects.

The plots read only ``summary.csv``, so each bundled study's summary is synthesised from its own
grid, algorithms and metrics (the header and rows :class:`~dpbandits.experiments.store.RunStore`
writes, with made-up numbers spanning several decades); the figures are then built exactly as
``plot_run`` builds them, and checked: no axis for a parameter with one value, one y-scale across
the panels of a figure, titles and labels from human names with units (no raw ``snake_case``),
one legend outside the panels, readable tick labels (no 3000000), and a confidence band per
estimated line.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from dpbandits.experiments import plots
from dpbandits.experiments.bundled import list_bundled_studies, load_bundled_study
from dpbandits.experiments.plot_labels import METRIC_NAMES, format_number
from dpbandits.experiments.store import estimate_column

pytestmark = pytest.mark.slow  # every bundled study's figures (about 10 s)


def synthetic_rows(name: str) -> list[dict[str, str]]:
    """summary.csv rows of the bundled study ``name``: its cells, with values that vary by cell."""
    study = load_bundled_study(name)
    swept = list(study.swept_parameters)
    proportions = study.proportion_metrics()
    metrics = list(study.all_metrics())
    rows = []
    for index, cell in enumerate(study.cells()):
        row = {p: plots_format(cell.point[p]) for p in swept}
        row["algorithm"] = cell.label
        row["n_trials"] = "3"
        for metric in metrics:
            value = 0.5 if metric in proportions else 10.0 ** (index % 7) * (1 + index % 3)
            row[estimate_column(metric, metric in proportions)] = repr(value)
            row[f"{metric}_stderr"] = repr(value / 10)
            row[f"{metric}_ci_low"] = repr(value * 0.8)
            row[f"{metric}_ci_high"] = repr(value * 1.2)
        rows.append(row)
    return rows


def plots_format(value: Any) -> str:
    from dpbandits.experiments.store import _format_parameter

    return _format_parameter(value)


def build_figures(rows: list[dict[str, str]]) -> list[tuple[str, Any]]:
    """The (job kind, Figure) pairs ``plot_run`` would draw for these rows."""
    import tempfile
    from pathlib import Path

    figures: list[tuple[str, Any]] = []
    with tempfile.TemporaryDirectory() as directory:
        run_dir = Path(directory)
        header = list(rows[0])
        import csv

        with open(run_dir / "summary.csv", "w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, fieldnames=header)
            writer.writeheader()
            writer.writerows(rows)
        original_draw = plots._draw

        def keep(rows_: list[dict[str, str]], job: Any, formats: tuple[str, ...]) -> list[Path]:
            kind, args, _stem = job
            figure = plots._bars(rows_, *args) if kind == "bars" else plots._lines(rows_, *args)
            figures.append((kind, figure))
            return []

        plots._draw = keep  # type: ignore[assignment]
        try:
            plots.plot_run(run_dir, formats=("png",), workers=1)
        finally:
            plots._draw = original_draw  # type: ignore[assignment]
    return figures


DIGITS = re.compile(r"\d{5,}")


def check_rules(kind: str, figure: Any) -> None:
    axes = [axis for axis in figure.axes if axis.get_visible()]
    title = figure._suptitle.get_text() if figure._suptitle is not None else ""
    assert title and "_" not in title, f"title {title!r} is not a human name"
    assert all(axis.get_legend() is None for axis in axes), "a legend inside a panel"
    for axis in axes:
        assert "_" not in axis.get_xlabel(), axis.get_xlabel()
        assert "_" not in axis.get_ylabel().split("\n")[0], axis.get_ylabel()
        figure.canvas.draw() if not hasattr(figure, "_drawn") else None
        figure._drawn = True
        for label in [*axis.get_xticklabels(), *axis.get_yticklabels()]:
            assert not DIGITS.search(label.get_text()), f"tick label {label.get_text()!r}"
    if kind == "bars":
        return
    assert len(figure.legends) == 1, "one legend for the figure, outside the panels"
    assert len({axis.get_ylim() for axis in axes}) == 1, "the panels of a metric share one y-scale"
    assert len({axis.get_yscale() for axis in axes}) == 1
    for axis in axes:
        estimated = [line for line in axis.get_lines() if line.get_linestyle() == "-"]
        xs = {x for line in axis.get_lines() for x in line.get_xdata()}
        assert len(xs) > 1, "an axis for a parameter with a single value"
        assert len(axis.patches) >= len(estimated), "an estimated line without its confidence band"


@pytest.mark.parametrize("name", [study.name for study in list_bundled_studies()])
def test_bundled_study_figures_follow_the_rules(name: str) -> None:
    figures = build_figures(synthetic_rows(name))
    assert figures, f"{name}: no figure"
    for kind, figure in figures:
        check_rules(kind, figure)


def test_the_quickstart_draws_no_axis_for_its_single_budget() -> None:
    kinds = [(kind, figure._suptitle.get_text()) for kind, figure in build_figures(synthetic_rows("quickstart"))]
    assert kinds == [("lines", "Success rate against privacy ε, at budget T = 1000")]


def test_every_registered_metric_has_a_human_name_and_unit() -> None:
    from dpbandits.algorithms.registry import list_algorithms

    recorded = {metric for spec in list_algorithms() for metric in spec.metrics}
    assert recorded <= set(METRIC_NAMES), sorted(recorded - set(METRIC_NAMES))
    assert all(name and unit for name, unit in METRIC_NAMES.values())


@pytest.mark.parametrize(("value", "text"), [(3_000_000, "3·10⁶"), (1e6, "10⁶"), (12_000, "1.2·10⁴"),
                                             (1000, "1000"), (0.1, "0.1"), (1e-6, "10⁻⁶"), (0.0, "0")])
def test_numbers_read_as_powers_of_ten(value: float, text: str) -> None:
    assert format_number(value) == text
