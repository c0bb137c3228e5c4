"""Plots from a summary.csv (numeric, categorical, several swept parameters, none) and progress reporters."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from dpbandits._core.errors import StudyError
from dpbandits.experiments.plots import PendingPlots, plot_run, start_plot_run
from dpbandits.experiments.progress import LogProgress, NullProgress, RichProgress, make_progress

HEADER = "budget,variant,algorithm,n_trials,success_rate,success_stderr,success_ci_low,success_ci_high,regret_mean,regret_stderr,regret_ci_low,regret_ci_high\n"


def _summary(tmp_path: Path, header: str, rows: list[str]) -> Path:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "summary.csv").write_text(header + "".join(row + "\n" for row in rows), encoding="utf-8")
    return run_dir


def test_each_metric_against_each_swept_parameter(tmp_path: Path) -> None:
    rows = []
    for budget in (10, 100, 1000):
        for variant in ("a", "b"):
            rows.append(f"{budget},{variant},alg1,50,0.5,0.07,0.37,0.63,0.1,0.01,0.08,0.12")
            rows.append(f"{budget},{variant},alg2,50,0.6,0.07,0.46,0.72,,,,")  # alg2 records no regret
    run_dir = _summary(tmp_path, HEADER, rows)
    written = plot_run(run_dir)
    names = sorted(path.name for path in written)
    assert names == sorted(f"{m}_vs_{p}.{ext}" for m in ("success", "regret") for p in ("budget", "variant")
                           for ext in ("png", "pdf"))
    assert all(path.stat().st_size > 1000 for path in written)
    assert (run_dir / "plots" / "success_vs_budget.png").read_bytes()[:4] == b"\x89PNG"
    assert (run_dir / "plots" / "success_vs_budget.pdf").read_bytes()[:4] == b"%PDF"


def test_nothing_swept_draws_one_chart_per_metric(tmp_path: Path) -> None:
    header = "algorithm,n_trials,success_mean,success_stderr,success_ci_low,success_ci_high\n"
    run_dir = _summary(tmp_path, header, ["alg1,1,1.0,nan,nan,nan", "alg2,10,0.5,0.1,0.2,0.8"])
    assert sorted(p.name for p in plot_run(run_dir, formats=("png",))) == ["success.png"]


def test_plot_needs_a_summary(tmp_path: Path) -> None:
    with pytest.raises(StudyError, match=r"has no summary\.csv"):
        plot_run(tmp_path)


def test_log_progress_lines() -> None:
    stream = io.StringIO()
    progress = LogProgress(stream, interval=0.0)
    progress.start(total_cells=4, total_trials=400, done_cells=1, done_trials=100)
    progress.advance(trials=100, cells=1)
    progress.close()
    lines = stream.getvalue().splitlines()
    assert lines[0] == "[dpbandits] starting: 4 cells, 400 trials (1 already done)"
    assert lines[1].startswith("[dpbandits] 2/4 cells, 200/400 trials,")
    assert lines[-1].endswith("— stopped")


def test_rich_progress_on_a_terminal() -> None:
    buffer = io.StringIO()
    progress = RichProgress(Console(file=buffer, force_terminal=True, width=120))
    progress.start(total_cells=2, total_trials=20, done_cells=0, done_trials=0)
    progress.advance(trials=20, cells=2)
    progress.close()
    assert "2/2 cells" in buffer.getvalue()


def test_auto_progress_is_plain_without_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stderr", io.StringIO())  # not a terminal
    assert isinstance(make_progress("auto"), LogProgress)
    assert isinstance(make_progress("none"), NullProgress)


def test_case_grids_draw_only_panels_with_a_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # one sweep over budget at variant "a", one point at variant "b": success_vs_budget has one panel
    rows = [f"{budget},a,alg1,50,0.5,0.07,0.37,0.63,0.1,0.01,0.08,0.12" for budget in (10, 20, 40)]
    rows.append("10,b,alg1,50,0.5,0.07,0.37,0.63,0.1,0.01,0.08,0.12")
    run_dir = _summary(tmp_path, HEADER, rows)
    from dpbandits.experiments import plots

    drawn: dict[str, int] = {}
    original = plots._lines

    def counting(rows_: list[dict[str, str]], metric: str, estimate: str, parameter: str,
                 others: list[str]) -> object:
        figure = original(rows_, metric, estimate, parameter, others)
        drawn[f"{metric}_vs_{parameter}"] = sum(axis.get_visible() for axis in figure.axes)
        return figure

    monkeypatch.setattr(plots, "_lines", counting)
    plot_run(run_dir, formats=("png",), workers=1)  # drawn here: the counts are this process's
    assert drawn["success_vs_budget"] == 1  # the variant="b" panel (a single budget) is left out
    assert drawn["success_vs_variant"] == 1  # only budget=10 has two variants


def test_summary_metrics_find_rate_and_mean_estimates() -> None:
    from dpbandits.experiments.store import estimate_column, summary_metrics

    assert summary_metrics(HEADER.strip().split(",")) == {"success": "success_rate", "regret": "regret_mean"}
    assert estimate_column("success", proportion=True) == "success_rate"
    assert estimate_column("regret", proportion=False) == "regret_mean"


def test_theory_rows_are_dashed_without_a_band_and_wide_ranges_get_a_log_axis(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from dpbandits.experiments import plots

    header = "horizon,algorithm,n_trials,regret_mean,regret_stderr,regret_ci_low,regret_ci_high\n"
    rows = []
    for horizon in (10**3, 10**4, 10**5, 10**6, 10**7):
        rows.append(f"{horizon},DP-EBS,20,{horizon**0.5:g},1,{horizon**0.5 - 1:g},{horizon**0.5 + 1:g}")
        rows.append(f"{horizon},Theory: upper curve,1,{3 * horizon**0.5:g},0,{3 * horizon**0.5:g},{3 * horizon**0.5:g}")
    run_dir = _summary(tmp_path, header, rows)
    figures = []
    original = plots._lines

    def keep(*args: object) -> object:
        figures.append(original(*args))
        return figures[-1]

    monkeypatch.setattr(plots, "_lines", keep)
    plot_run(run_dir, formats=("png",))
    (axis,) = [axis for axis in figures[0].axes if axis.get_visible()]
    styles = {line.get_label(): line.get_linestyle() for line in axis.get_lines()}
    assert styles == {"DP-EBS": "-", "Theory: upper curve": "--"}
    assert len(axis.patches) == 1  # one confidence band: the estimate's, none for the theory curve
    assert axis.get_yscale() == "log"  # 31.6 .. 9487 spans more than two decades


def test_figures_drawn_in_workers_are_the_figures_drawn_here(tmp_path: Path) -> None:
    rows = [f"{budget},{variant},alg1,50,0.5,0.07,0.37,0.63,0.1,0.01,0.08,0.12"
            for budget in (10, 20, 40) for variant in ("a", "b")]
    run_dir = _summary(tmp_path, HEADER, rows)
    here = plot_run(run_dir, out_dir=tmp_path / "here", formats=("png",), workers=1)
    forked = plot_run(run_dir, out_dir=tmp_path / "forked", formats=("png",), workers=2)
    assert [p.name for p in here] == [p.name for p in forked] and len(here) == 4
    for a, b in zip(here, forked, strict=True):
        assert a.read_bytes() == b.read_bytes()


def test_started_plots_are_drawn_while_the_caller_works_and_are_the_same_files(tmp_path: Path) -> None:
    # issue 26: the command line prints the run's summary while the figures are drawn (forked workers)
    rows = [f"{budget},{variant},alg1,50,0.5,0.07,0.37,0.63,0.1,0.01,0.08,0.12"
            for budget in (10, 20, 40) for variant in ("a", "b")]
    run_dir = _summary(tmp_path, HEADER, rows)
    pending = start_plot_run(run_dir, out_dir=tmp_path / "started", formats=("png",), workers=2)
    assert isinstance(pending, PendingPlots)
    here = plot_run(run_dir, out_dir=tmp_path / "here", formats=("png",), workers=1)  # meanwhile, other work
    started = pending.result()
    assert [p.name for p in started] == [p.name for p in here] and len(started) == 4
    for a, b in zip(here, started, strict=True):
        assert a.read_bytes() == b.read_bytes()


def test_a_figure_that_cannot_be_written_fails_at_result_with_the_hint(tmp_path: Path) -> None:
    rows = [f"{budget},a,alg1,50,0.5,0.07,0.37,0.63,0.1,0.01,0.08,0.12" for budget in (10, 20)]
    run_dir = _summary(tmp_path, HEADER, rows)
    (run_dir / "plots").mkdir()
    (run_dir / "plots" / "success_vs_budget.png").mkdir()  # a directory where a figure goes
    pending = start_plot_run(run_dir, formats=("png",), workers=1)
    with pytest.raises(StudyError, match="pass --out DIR"):
        pending.result()


def test_a_band_is_one_polygon_per_run_of_finite_intervals() -> None:
    from matplotlib.figure import Figure

    from dpbandits.experiments.plots import _band

    axis = Figure().subplots()
    nan = float("nan")
    xs, lows, highs = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0], [0.1, 0.2, nan, 0.3, 0.4, 0.5], [0.3, 0.4, nan, 0.6, 0.7, 0.8]
    _band(axis, xs, lows, highs, "C0")
    outlines = [patch.get_xy()[:-1].tolist() for patch in axis.patches]  # a closed polygon repeats its start
    assert outlines == [[[1.0, 0.1], [2.0, 0.2], [2.0, 0.4], [1.0, 0.3]],
                        [[4.0, 0.3], [5.0, 0.4], [6.0, 0.5], [6.0, 0.8], [5.0, 0.7], [4.0, 0.6]]]
    _band(axis, [1.0, 2.0], [nan, 0.2], [nan, 0.4], "C1")  # a single finite point draws no band
    assert len(axis.patches) == 2
