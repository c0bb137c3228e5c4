"""Figures a reader would put in a paper: no empty panel slots, no large gaps between rows, every
algorithm its own marker and line style with the study's first algorithm drawn on top, one "rate"
in a rate's axis label."""

from __future__ import annotations

from typing import Any

import pytest

from dpbandits.experiments import plots

ALGORITHMS = ("DP-BAI", "Baseline", "DP-OD", "OD-LinBAI (non-private)")


def _rows(n_budgets: int) -> list[dict[str, str]]:
    rows = []
    for budget in range(1, n_budgets + 1):
        for epsilon in (0.1, 1.0, 10.0):
            for algorithm in ALGORITHMS:  # every algorithm the same value: lines that coincide
                rows.append({"budget": str(500 * budget), "epsilon": str(epsilon), "algorithm": algorithm,
                             "n_trials": "10", "success_rate": "0.5", "success_stderr": "0.1",
                             "success_ci_low": "0.3", "success_ci_high": "0.7"})
    return rows


@pytest.mark.parametrize(("n", "grid"), [(1, (1, 1)), (4, (1, 4)), (5, (1, 5)), (6, (2, 3)), (8, (2, 4)),
                                          (9, (3, 3)), (12, (3, 4))])
def test_panel_grid_leaves_no_empty_slot_where_one_can_be_avoided(n: int, grid: tuple[int, int]) -> None:
    assert plots.panel_grid(n) == grid


def _figure(n_budgets: int) -> Any:
    return plots._lines(_rows(n_budgets), "success", "success_rate", "epsilon", ["budget"])


def test_figure_one_has_no_empty_slot_and_rows_close_together() -> None:
    figure = _figure(6)  # Figure 1: six budgets, one panel each
    assert len(figure.axes) == 6 and all(axis.get_visible() for axis in figure.axes)
    assert figure.subplotpars.hspace <= 0.3  # a panel title apart, no empty band between rows


def test_each_algorithm_has_its_own_marker_and_style_and_the_first_is_on_top() -> None:
    axis = _figure(2).axes[0]
    lines = {line.get_label(): line for line in axis.get_lines()}
    assert len({lines[name].get_marker() for name in ALGORITHMS}) == len(ALGORITHMS)
    assert len({str(lines[name].get_linestyle()) for name in ALGORITHMS}) == len(ALGORITHMS)
    orders = [lines[name].get_zorder() for name in ALGORITHMS]
    assert orders == sorted(orders, reverse=True) and orders[0] > max(patch.get_zorder() for patch in axis.patches)
    assert lines["OD-LinBAI (non-private)"].get_markerfacecolor() == "none"  # hollow: what lies beneath shows


def test_a_rate_is_named_once_in_its_axis_label() -> None:
    label = _figure(2).axes[0].get_ylabel()
    assert label.count("rate") == 1, label
    assert plots._axis_label("regret", "regret_mean").endswith("mean, 95% CI")
