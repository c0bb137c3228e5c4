"""Plots of a run directory: each metric against each swept parameter, one line per algorithm.

:func:`plot_run` reads only ``summary.csv`` (the swept parameters are its columns before
``algorithm``), so it works on any run directory, finished or not, even on a read-only medium
(with ``out_dir`` elsewhere). For a metric ``m`` and a swept
parameter ``x`` it draws ``plots/m_vs_x.png`` and ``.pdf``: one line per algorithm (the mean) with
its 95% confidence band, and one panel per combination of the *other* swept parameters (leaving out
combinations at which ``x`` takes a single value; no figure when every combination is like that).
A parameter with a single value gets no axis: it is named in the figure's title. Titles and axis
labels use each metric's and parameter's human name and unit
(:mod:`dpbandits.experiments.plot_labels`), the panels of a figure share one y-scale, the legend sits
outside the panels, and numbers read 10⁶ or 3·10⁶. Numeric
parameters are drawn on a numeric axis (logarithmic when they span a factor of 10 or more and are
positive); other values as categories. The y-axis is logarithmic when every value of a panel is
positive and they span a factor of 100 or more. Rows whose algorithm label starts with ``Theory``
are theory curves (computed from the instance, not estimated): dashed and grey, without a band.
With nothing swept (or every swept parameter at one value), ``plots/m.png`` shows each
algorithm's mean with its interval. When the run has
a ``usca-rate-shape`` analysis, ``plots/usca-rate-shape.png`` draws it (one figure per family): ER
against T per ε with both fitted shapes, and the privacy excess against γ_T/(Tε) with its exponent.

Figures are built with :class:`matplotlib.figure.Figure` directly (no ``pyplot``, no GUI): headless
whatever the configured backend.
"""

from __future__ import annotations

import io
import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from dpbandits._core.errors import StudyError

# the summary's reader, not the store: the command line's drawing process is forked before the run's
# modules (study models, algorithms) are imported, and needs none of them
from dpbandits.experiments._summary_file import (
    SUMMARY_NAME,
    atomic_write_bytes,
    describe_os_error,
    read_summary,
    summary_metrics,
)
from dpbandits.experiments.plot_labels import (
    PARAMETER_NAMES,
    format_number,
    metric_label,
    metric_name,
    parameter_label,
)

__all__ = ["MAX_PANELS", "PendingPlots", "plot_run", "start_plot_run"]

MAX_PANELS = 16
"""At most this many panels per figure (combinations of the other swept parameters)."""

_FORMATS = ("png", "pdf")


def _number(text: str) -> float | None:
    if text in ("", "true", "false"):
        return None
    try:
        return float(text)
    except ValueError:
        return None


def _swept_and_metrics(header: Sequence[str]) -> tuple[list[str], dict[str, str]]:
    if "algorithm" not in header:
        raise StudyError("summary.csv has no 'algorithm' column; it was not written by dpbandits")
    swept = list(header[: list(header).index("algorithm")])
    return swept, summary_metrics(header)


def _unique(values: Sequence[Any]) -> list[Any]:
    return list(dict.fromkeys(values))


def plot_run(run_dir: str | Path, *, out_dir: str | Path | None = None,
             formats: Sequence[str] = _FORMATS, workers: int | None = None) -> list[Path]:
    """Draw every metric of a run directory against every swept parameter.

    Parameters
    ----------
    run_dir : str or Path
        A run directory with a ``summary.csv``; only read.
    out_dir : str or Path, optional
        Where the plots go (created if needed); default ``run_dir / "plots"``. Give another
        directory to plot a run on a read-only medium.
    formats : sequence of str, default ("png", "pdf")
        File formats written.
    workers : int, optional
        Figures drawn at once in forked worker processes (default: one per core, at most one per
        figure). Forking is used only on Linux and when this process runs no other thread; else,
        or with ``workers=1``, the figures are drawn here one after the other. The files are the
        same either way.

    Returns
    -------
    list of Path
        The files written.

    Raises
    ------
    StudyError
        If the directory has no summary, the summary has no rows (no cell has finished: nothing
        to draw), or the plots cannot be written (each file is written atomically: none is left
        half-written).
    """
    return start_plot_run(run_dir, out_dir=out_dir, formats=formats, workers=workers).result()


def start_plot_run(run_dir: str | Path, *, out_dir: str | Path | None = None,
                   formats: Sequence[str] = _FORMATS, workers: int | None = None) -> PendingPlots:
    """Start drawing the plots of :func:`plot_run` (same arguments); ``.result()`` returns its files.

    The figures are drawn in forked workers while the caller goes on (the command line prints the
    run's summary meanwhile).

    Raises
    ------
    StudyError
        At once if the directory has no summary or no rows, or the plot directory cannot be made;
        a failure to write a figure is raised by ``result()``.
    """
    directory = Path(run_dir)
    rows = read_summary(directory)
    if not rows:
        raise StudyError(f"{str(directory / SUMMARY_NAME)!r} has no rows: no cell of the run has finished, so "
                         "there is nothing to plot; run or resume the study first")
    swept, metrics = _swept_and_metrics(list(rows[0]))
    target = directory / "plots" if out_dir is None else Path(out_dir)
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        hint = "; pass --out DIR to write them elsewhere" if out_dir is None else ""
        raise StudyError(f"cannot write plots to {str(target)!r}: {describe_os_error(exc)}{hint}") from None
    # a parameter with one value gets no axis: it is named in the titles instead
    varying = [p for p in swept if len({row[p] for row in rows}) > 1]
    jobs: list[_Job] = []
    for metric, estimate in metrics.items():
        if not varying:
            jobs.append(("bars", (metric, estimate), target / metric))
            continue
        for parameter in varying:
            # panels over the other parameters, except those that move with this one (a zipped grid)
            others = [p for p in varying if p != parameter and not _determined_by(rows, p, parameter)]
            if _panels(rows, parameter, others):
                jobs.append(("lines", (metric, estimate, parameter, others), target / f"{metric}_vs_{parameter}"))
    rate_shape = directory / "analyses" / "usca-rate-shape.json"
    if rate_shape.exists():
        fits = json.loads(rate_shape.read_text(encoding="utf-8")).get("fits", {})
        for index, fit in enumerate(fits.values()):
            jobs.append(("rate-shape", (fit,), target / ("usca-rate-shape" + (f"-{index}" if index else ""))))
    return PendingPlots(_start_all(rows, jobs, tuple(formats), workers), hint=out_dir is None)


class PendingPlots:
    """Figures of a run being drawn (by :func:`start_plot_run`); :meth:`result` waits for the files.

    Drawing runs in forked worker processes when that is possible, so the caller can do other work
    (print a run's summary) meanwhile; otherwise the figures are drawn by :meth:`result`.
    """

    def __init__(self, finish: Callable[[], list[Path]], *, hint: bool) -> None:
        self._finish = finish
        self._hint = hint

    def result(self) -> list[Path]:
        """Wait for the figures and return the files written.

        Raises
        ------
        StudyError
            If the plots cannot be written (each file is written atomically: none is left half-written).
        """
        try:
            return self._finish()
        except StudyError as exc:
            if not self._hint:
                raise
            raise StudyError(f"{exc}; pass --out DIR to write the plots elsewhere") from None


_Job = tuple[str, tuple[Any, ...], Path]


def _draw(rows: list[dict[str, str]], job: _Job, formats: tuple[str, ...]) -> list[Path]:
    """Build one figure and write it in every format."""
    kind, args, stem = job
    if kind == "bars":
        figure = _bars(rows, *args)
    elif kind == "lines":
        figure = _lines(rows, *args)
    else:
        figure = _rate_shape_figure(*args)
    return _save(figure, stem, formats)


def _draw_some(rows: list[dict[str, str]], jobs: list[_Job], formats: tuple[str, ...]) -> list[Path]:
    return [path for job in jobs for path in _draw(rows, job, formats)]


def _start_all(rows: list[dict[str, str]], jobs: list[_Job], formats: tuple[str, ...],
               workers: int | None) -> Callable[[], list[Path]]:
    """Start drawing the figures in forked workers when that is safe and there is more than one.

    Returns the function that waits for them (or, without workers, draws them) and returns the files.
    """
    import multiprocessing
    import os
    import sys
    import threading

    count = min(len(jobs), os.cpu_count() or 1) if workers is None else min(len(jobs), max(1, int(workers)))
    forkable = (sys.platform == "linux" and "fork" in multiprocessing.get_all_start_methods()
                and threading.active_count() == 1)
    if count <= 1 or not forkable:
        return lambda: _draw_some(rows, jobs, formats)
    from concurrent.futures import ProcessPoolExecutor

    import_drawing_modules(formats)  # imported once, here: the forked workers inherit them
    shares = [jobs[i::count] for i in range(count)]  # figure i goes to worker i mod count
    from dpbandits._core.lifetime import die_with_parent

    pool = ProcessPoolExecutor(max_workers=count, mp_context=multiprocessing.get_context("fork"),
                               initializer=die_with_parent)  # killed with this process, even by SIGKILL
    try:
        futures = [pool.submit(_draw_some, rows, share, formats) for share in shares]
    except BaseException:
        pool.shutdown(cancel_futures=True)
        raise

    def finish() -> list[Path]:
        try:
            done = [future.result() for future in futures]
        finally:
            pool.shutdown(cancel_futures=True)
        by_job = {id(job): paths for share, paths in zip(shares, done, strict=True)
                  for job, paths in zip(share, _split(paths, len(formats)), strict=True)}
        return [path for job in jobs for path in by_job[id(job)]]

    return finish


def import_drawing_modules(formats: Sequence[str]) -> None:
    """Import the matplotlib modules the figures use (and the back ends ``formats`` need)."""
    import matplotlib.backends.backend_agg
    import matplotlib.figure
    import matplotlib.ticker

    if "pdf" in formats:
        import matplotlib.backends.backend_pdf  # noqa: F401  (0.1 s: only when a PDF is drawn)


def _split(paths: list[Path], size: int) -> list[list[Path]]:
    return [paths[i:i + size] for i in range(0, len(paths), size)]


def _save(figure: Any, stem: Path, formats: Sequence[str]) -> list[Path]:
    """Write ``figure`` in every format, laid out once.

    The constrained layout (which keeps every label inside the figure) is computed while the first
    format is drawn and then frozen, so that each further format is drawn once, without a layout
    pass and without a tight-bounding-box pass (``bbox_inches="tight"`` draws a figure twice).
    """
    paths = []
    for fmt in formats:
        path = stem.with_suffix(f".{fmt}")
        buffer = io.BytesIO()
        # zlib level 1 for PNGs: a quarter of the PNG time (the encoder's), files about 10% larger
        figure.savefig(buffer, format=fmt, **({"pil_kwargs": {"compress_level": 1}} if fmt == "png" else {}))
        figure.set_layout_engine("none")
        atomic_write_bytes(path, buffer.getvalue())
        paths.append(path)
    return paths


def _new_figure(n_panels: int, *, sharey: bool = True, constrained: bool = False) -> tuple[Any, list[Any]]:
    """A figure of ``n_panels`` panels (4 per row), margins fixed in inches.

    The margins are set directly rather than by matplotlib's constrained layout, which measures every
    text of the figure several times and cost about as much as drawing it; :func:`_legend_outside`
    widens the right margin to fit the legend. ``constrained`` keeps the constrained layout (for
    figures with a legend beside each panel).
    """
    from matplotlib.figure import Figure

    rows, columns = panel_grid(n_panels)
    width, height = 4.2 * columns + 1.3, 3.2 * rows + 0.4
    if constrained:
        figure = Figure(figsize=(width, height), layout="constrained")
    else:
        figure = Figure(figsize=(width, height))
        # rows are apart by a panel title only when every panel has one below it (the inner panels of
        # shared axes draw no x tick labels); an empty slot leaves a panel above it that names the x-axis
        full = rows * columns == n_panels
        figure.subplots_adjust(left=1.0 / width, right=1 - 0.3 / width, bottom=0.85 / height,
                               top=1 - 0.7 / height, wspace=0.12 if sharey else 0.3,
                               hspace=0.3 if full or not sharey else 0.75)
    # the panels of a figure share their axes (one scale); inner tick labels are then drawn once
    axes = figure.subplots(rows, columns, squeeze=False, sharex=sharey, sharey=sharey).ravel().tolist()
    for extra in axes[n_panels:]:
        extra.set_visible(False)
    return figure, axes[:n_panels]


def panel_grid(n_panels: int) -> tuple[int, int]:
    """(rows, columns) of ``n_panels`` panels: at most 4 a row, as few empty slots as possible, then few rows.

    Six panels are 2 × 3 (not 4 + 2, two empty slots), nine 3 × 3, five 1 × 5 (up to five in one row).
    """
    if n_panels <= 5:
        return 1, max(n_panels, 1)
    best = min((4, 3), key=lambda c: (-n_panels % c, math.ceil(n_panels / c)))
    return math.ceil(n_panels / best), best


MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">")
"""One marker per algorithm of a figure, in its order in the study (then repeated)."""
LINE_STYLES = ("-", "--", ":", "-.")
"""Estimated lines: solid first, then dashed, dotted, dash-dotted (theory curves: grey, dashed, no marker)."""


def _line_style(index: int, count: int) -> dict[str, Any]:
    """The look of the ``index``-th of ``count`` algorithms: its marker, line style and stacking order.

    The first algorithm of the study (the one the study is about, usually a private algorithm) is
    drawn on top and the later ones beneath it, with hollow markers, so that a comparator whose line
    coincides with it (OD-LinBAI at large ε) cannot hide it.
    """
    return {"marker": MARKERS[index % len(MARKERS)], "linestyle": LINE_STYLES[index % len(LINE_STYLES)],
            "markersize": 4 if index else 3.5, "markerfacecolor": None if index == 0 else "none",
            "zorder": 2.0 + (count - index) / max(count, 1), "linewidth": 1.6 if index == 0 else 1.2}


def _is_theory(label: str) -> bool:
    """Rows labelled ``Theory...`` are theory curves (drawn dashed, grey, without a confidence band)."""
    return label.lower().startswith("theory")


def _axis_label(metric: str, estimate: str) -> str:
    """``mean regret (reward)`` over ``mean, 95% CI``: the metric's name and unit, then the estimate.

    The estimate is not named twice: a rate's label already says "rate" (``success rate (probability)``
    over ``95% CI``).
    """
    kind = estimate.removeprefix(metric + "_")
    label = metric_label(metric)
    return f"{label}\n95% CI" if kind in label.split() else f"{label}\n{kind}, 95% CI"


def _group_key(row: dict[str, str], others: list[str]) -> tuple[str, ...]:
    return tuple(row[name] for name in others)


def _determined_by(rows: list[dict[str, str]], other: str, parameter: str) -> bool:
    """Whether ``other`` takes one value for each value of ``parameter`` (they are swept together)."""
    seen: dict[str, str] = {}
    return all(seen.setdefault(row[parameter], row[other]) == row[other] for row in rows)


def _panels(rows: list[dict[str, str]], parameter: str, others: list[str]) -> list[tuple[str, ...]]:
    """The combinations of ``others`` at which ``parameter`` takes two values or more (one panel each)."""
    values: dict[tuple[str, ...], set[str]] = {}
    for row in rows:
        values.setdefault(_group_key(row, others), set()).add(row[parameter])
    return [group for group, seen in values.items() if len(seen) > 1]


def _fixed(rows: list[dict[str, str]]) -> str:
    """``budget T = 1000`` for the swept parameters that take one value (no axis is spent on them)."""
    columns = list(rows[0])
    swept = columns[: columns.index("algorithm")]
    single = [name for name in swept if len({row[name] for row in rows}) == 1]
    return ", ".join(f"{_parameter_name(name)} = {_value_text(rows[0][name])}" for name in single)


def _capitalised(text: str) -> str:
    return text[:1].upper() + text[1:]


def _parameter_name(parameter: str) -> str:
    return PARAMETER_NAMES.get(parameter, (parameter.replace("_", " "), ""))[0]


def _value_text(value: str) -> str:
    """A grid value as shown on a tick or in a title: numbers as 10⁶, vectors to 3 digits, long text cut."""
    number = _number(value)
    if number is not None:
        return format_number(number)
    if value.startswith("[") and value.endswith("]"):
        try:
            items = json.loads(value)
        except ValueError:
            items = None
        if isinstance(items, list) and all(isinstance(item, int | float) for item in items):
            value = "[" + ", ".join(format_number(float(item)) for item in items) + "]"
    return value if len(value) <= 24 else value[:22] + "…"


def _readable_axes(axis: Any) -> None:
    """10⁶ and 3·10⁶ on the y-axis, never 1000000 or an offset text; at most about five y ticks.

    Few ticks read better on small panels and cost less: each tick is several artists in every panel
    (its mark, its grid line, its label), and creating them was a fifth of a figure's drawing time.
    """
    from matplotlib.ticker import FuncFormatter, MaxNLocator, NullFormatter

    axis.yaxis.set_major_formatter(FuncFormatter(lambda value, _: format_number(value)))
    if axis.get_yscale() == "log":
        axis.yaxis.set_minor_formatter(NullFormatter())
    else:
        axis.yaxis.set_major_locator(MaxNLocator(nbins=4))


def _legend_outside(figure: Any, axes: list[Any]) -> None:
    """One legend for the figure, right of the panels (never over the data): the right margin is widened to fit it."""
    handles: dict[str, Any] = {}
    for axis in axes:
        for handle, label in zip(*axis.get_legend_handles_labels(), strict=True):
            handles.setdefault(label, handle)
    if not handles:
        return
    width, height = figure.get_size_inches()
    left, right = figure.subplotpars.left * width, figure.subplotpars.right * width  # in inches
    needed = 0.75 + 0.065 * max(len(label) for label in handles)  # handle and padding, ~0.065 in per character at 8 pt
    new_width = right + needed  # the panels keep their size; the figure grows to hold the legend
    figure.set_size_inches(new_width, height)
    figure.subplots_adjust(left=left / new_width, right=right / new_width)
    figure.legend(list(handles.values()), list(handles), loc="upper right", fontsize=8,
                  bbox_to_anchor=(1 - 0.05 / new_width, 1 - 0.7 / height))


def _lines(rows: list[dict[str, str]], metric: str, estimate: str, parameter: str, others: list[str]) -> Any:
    # A panel where ``parameter`` takes a single value would draw no line (grids of explicit cases
    # often sweep one parameter at a time): such panels are left out.
    groups = _panels(rows, parameter, others)
    shown = groups[:MAX_PANELS]
    figure, axes = _new_figure(len(shown))
    x_values = _unique([row[parameter] for row in rows])
    numeric = all(_number(value) is not None for value in x_values)
    positions = {value: float(_number(value) or 0.0) if numeric else float(index)
                 for index, value in enumerate(x_values)}
    algorithms = _unique([row["algorithm"] for row in rows])
    drawn: list[float] = []  # over every panel: one y-scale for the figure
    extent: list[float] = []  # the means and the finite band edges: the y-limits, set once
    for axis, group in zip(axes, shown, strict=True):
        axis.set_autoscale_on(False)  # the limits are set once below (autoscaling shared axes costs O(panels²))
        for algorithm in algorithms:
            selected = [
                row for row in rows
                if row["algorithm"] == algorithm and tuple(row[name] for name in others) == group
                and row[estimate] != ""
            ]
            if not selected:
                continue
            selected.sort(key=lambda row: positions[row[parameter]])
            xs = [positions[row[parameter]] for row in selected]
            means = [float(row[estimate]) for row in selected]
            lows = [float(row[f"{metric}_ci_low"]) for row in selected]
            highs = [float(row[f"{metric}_ci_high"]) for row in selected]
            drawn += means
            extent += [value for value in (*means, *lows, *highs) if math.isfinite(value)]
            if _is_theory(algorithm):  # a curve computed from the instance, not an estimate: no band
                axis.plot(xs, means, linestyle="--", linewidth=1.2, color="0.35", label=algorithm)
                continue
            style = _line_style(algorithms.index(algorithm), len(algorithms))
            if style["markerfacecolor"] is None:
                del style["markerfacecolor"]
            (line,) = axis.plot(xs, means, label=algorithm, **style)
            _band(axis, xs, lows, highs, line.get_color())
        if others:  # y given: the title is not moved above tick labels (no per-title bounding-box pass)
            axis.set_title(", ".join(f"{_parameter_name(name)} = {_value_text(value)}"
                                     for name, value in zip(others, group, strict=True)), fontsize=9, y=1.0, pad=5)
        axis.grid(alpha=0.3)
    rotation = _x_ticks(axes[0], x_values, positions, numeric)  # the panels share the x-axis: its ticks are set once
    positive = [value for value in drawn if value > 0]
    if positive and len(positive) == len(drawn) and max(positive) / min(positive) >= 100:
        axes[0].set_yscale("log")  # two decades or more: shapes such as sqrt(T) or log T show (shared axis)
    # shared axes: the limits of the first panel are every panel's
    axes[0].set_xlim(*_limits([positions[value] for value in x_values], axes[0].get_xscale() == "log"))
    if extent:
        log_y = axes[0].get_yscale() == "log"
        axes[0].set_ylim(*_limits([v for v in extent if v > 0] if log_y else extent, log_y))
    _readable_axes(axes[0])  # shared: one formatter for every panel
    for axis in axes:
        axis.tick_params(axis="x", labelrotation=rotation)
    for axis in axes[:: panel_grid(len(axes))[1]]:  # the first panel of each row
        axis.set_ylabel(_axis_label(metric, estimate))
    columns = panel_grid(len(axes))[1]
    for index, axis in enumerate(axes):
        if index + columns >= len(axes):  # nothing drawn below it: this panel names the x-axis
            axis.xaxis.set_tick_params(labelbottom=True)
            axis.set_xlabel(parameter_label(parameter))
    _legend_outside(figure, axes)
    more = f" (first {MAX_PANELS} of {len(groups)} panels)" if len(groups) > MAX_PANELS else ""
    fixed = _fixed(rows)
    figure.suptitle(f"{_capitalised(metric_name(metric))} against {_parameter_name(parameter)}"
                    + (f", at {fixed}" if fixed else "") + more)
    return figure


def _band(axis: Any, xs: Sequence[float], lows: Sequence[float], highs: Sequence[float], color: Any) -> None:
    """The confidence band of a line: one polygon per run of points whose interval is finite.

    A polygon patch rather than ``fill_between``, which costs about twice as much to build and
    to draw (its collection re-derives the band's shape at every draw) for the same picture.
    """
    from matplotlib.patches import Polygon

    run: list[int] = []
    for index in [*range(len(xs)), None]:  # None: the end closes the last run
        if index is not None and math.isfinite(lows[index]) and math.isfinite(highs[index]):
            run.append(index)
            continue
        if len(run) > 1:
            outline = [(xs[i], lows[i]) for i in run] + [(xs[i], highs[i]) for i in reversed(run)]
            axis.add_patch(Polygon(outline, closed=True, facecolor=color, alpha=0.2, linewidth=0))
        run = []


def _x_ticks(axis: Any, x_values: list[str], positions: dict[str, float], numeric: bool) -> float:
    """Scale and ticks of the (shared) x-axis: log over a decade or more; the grid values as ticks (10⁶, 3·10⁶).

    Returns the rotation of the tick labels, which each panel sets (a label's text properties are
    its own panel's).
    """
    from matplotlib.ticker import FuncFormatter, NullFormatter, NullLocator

    if not numeric:
        axis.set_xticks([positions[value] for value in x_values], [_value_text(value) for value in x_values])
        return 30
    finite = [positions[value] for value in x_values]
    if min(finite) > 0 and max(finite) / min(finite) >= 10:
        axis.set_xscale("log")
        axis.xaxis.set_minor_formatter(NullFormatter())  # minor labels collide on short spans
    if len(x_values) <= 10:  # label the grid values themselves, as 10⁶ or 3·10⁶
        axis.set_xticks(finite, [format_number(value) for value in finite])
        if axis.get_xscale() == "log":  # the grid values are the ticks: no minor ticks between them
            axis.xaxis.set_minor_locator(NullLocator())
        return 30 if len(x_values) > 5 else 0
    axis.xaxis.set_major_formatter(FuncFormatter(lambda value, _: format_number(value)))
    return 0


def _limits(values: Sequence[float], log: bool, margin: float = 0.05) -> tuple[float, float]:
    """Axis limits around ``values`` with matplotlib's default 5% margin (in log space on a log axis)."""
    if log:
        low, high = _limits([math.log10(v) for v in values], False, margin)
        return 10.0**low, 10.0**high
    low, high = min(values), max(values)
    pad = margin * (high - low) if high > low else max(abs(low), 1.0) * margin
    return low - pad, high + pad


def _bars(rows: list[dict[str, str]], metric: str, estimate: str) -> Any:
    figure, (axis,) = _new_figure(1)
    selected = [row for row in rows if row[estimate] != ""]
    for index, row in enumerate(selected):
        mean = float(row[estimate])
        low, high = float(row[f"{metric}_ci_low"]), float(row[f"{metric}_ci_high"])
        errors = [[mean - low if math.isfinite(low) else 0.0], [high - mean if math.isfinite(high) else 0.0]]
        axis.errorbar([index], [mean], yerr=errors, marker="o", capsize=4)
    axis.set_xticks(range(len(selected)), [row["algorithm"] for row in selected], rotation=30, ha="right")
    longest = max((len(row["algorithm"]) for row in selected), default=0)
    width, height = figure.get_size_inches()
    figure.set_size_inches(width, height + 0.035 * longest)  # room for the rotated names below the axis
    figure.subplots_adjust(bottom=(0.6 + 0.035 * longest) / (height + 0.035 * longest))
    axis.set_ylabel(_axis_label(metric, estimate))
    axis.grid(alpha=0.3)
    _readable_axes(axis)
    fixed = _fixed(rows)
    figure.suptitle(_capitalised(metric_name(metric)) + (f", at {fixed}" if fixed else ""))
    return figure


def _rate_shape_figure(fit: dict[str, Any]) -> Any:
    """ER vs T per ε with both fitted shapes; the privacy excess vs u = γ_T/(Tε) with its exponent."""
    import numpy as np

    from dpbandits.algorithms.kernel.rates import prior_art_privacy_term, privacy_term, statistical_term

    figure, (left, right) = _new_figure(2, sharey=False, constrained=True)  # two quantities, a legend each
    cells = fit["cells"]
    epsilons = sorted({cell["epsilon"] for cell in cells})
    shapes = [(name, style) for name, style in (("usca_shape", "-"), ("prior_art_shape", ":")) if name in fit]
    for epsilon in epsilons:
        rows = sorted((c for c in cells if c["epsilon"] == epsilon), key=lambda c: c["horizon"])
        horizon = [c["horizon"] for c in rows]
        mean = [c["error"]["estimate"] for c in rows]
        errors = [[m - c["error"]["ci_low"] for m, c in zip(mean, rows, strict=True)],
                  [c["error"]["ci_high"] - m for m, c in zip(mean, rows, strict=True)]]
        label = "eps=inf" if math.isinf(epsilon) else f"eps={epsilon:g}"
        container = left.errorbar(horizon, mean, yerr=errors, marker="o", markersize=3, linestyle="none",
                                  capsize=2, label=label)
        colour = container[0].get_color()
        saturated = [(t, m) for t, m, c in zip(horizon, mean, rows, strict=True) if c["saturated"]]
        if saturated:
            left.plot(*zip(*saturated, strict=True), marker="o", markersize=7, linestyle="none",
                      markerfacecolor="none", color=colour)
        t, g = np.array(horizon, dtype=float), np.array([c["gamma"] for c in rows], dtype=float)
        e = np.full_like(t, epsilon)
        for name, style in shapes:
            term = privacy_term(t, e, g) if name == "usca_shape" else (
                np.zeros_like(t) if math.isinf(epsilon) else prior_art_privacy_term(t, e, g))
            value = fit[name]["statistical"]["estimate"] * statistical_term(t, g) + fit[name]["privacy"]["estimate"] * term
            left.plot(t, value, linestyle=style, color=colour, linewidth=1)
    left.set_xscale("log")
    left.set_yscale("log")
    left.set_xlabel("horizon T")
    left.set_ylabel("ER (mean, 95% bootstrap CI)")
    left.set_title("solid: Theorem 4.1 fit, dotted: prior-art fit; hollow: saturated (not fitted)", fontsize=8)
    left.grid(alpha=0.3)
    left.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    resolved = [c for c in cells if c.get("excess_resolved")]
    for epsilon in epsilons:
        rows = [c for c in resolved if c["epsilon"] == epsilon]
        if rows:
            right.errorbar([c["u"] for c in rows], [c["excess"]["estimate"] for c in rows],
                           yerr=[[c["excess"]["estimate"] - c["excess"]["ci_low"] for c in rows],
                                 [c["excess"]["ci_high"] - c["excess"]["estimate"] for c in rows]],
                           marker="o", markersize=3, linestyle="none", capsize=2, label=f"eps={epsilon:g}")
    exponent = fit.get("privacy_exponent")
    if exponent and resolved:
        us = sorted(c["u"] for c in resolved)
        # the lines pass through the geometric means of the resolved cells' u and excess
        anchor = math.exp(sum(math.log(c["excess"]["estimate"]) for c in resolved) / len(resolved))
        anchor_u = math.exp(sum(math.log(c["u"]) for c in resolved) / len(resolved))
        for slope, style, text in ((exponent["estimate"], "-", f"fit p={exponent['estimate']:.2f} "
                                    f"[{exponent['ci_low']:.2f}, {exponent['ci_high']:.2f}]"),
                                   (exponent["predicted_usca_shape"], "--",
                                    f"Theorem 4.1 shape p={exponent['predicted_usca_shape']:.2f}"),
                                   (0.5, ":", "prior art p=0.5")):
            right.plot([us[0], us[-1]], [anchor * (u / anchor_u) ** slope for u in (us[0], us[-1])],
                       linestyle=style, color="0.3", linewidth=1, label=text)
    from matplotlib.ticker import NullFormatter

    right.set_xscale("log")
    right.set_yscale("log")
    for axis in (right.xaxis, right.yaxis):
        axis.set_minor_formatter(NullFormatter())  # minor labels collide on spans under two decades
    right.set_xlabel("u = gamma_T / (T eps)")
    right.set_ylabel("ER(eps) - ER(inf) (95% CI)")
    right.set_title("privacy excess on the resolved, unsaturated cells", fontsize=8)
    right.grid(alpha=0.3)
    right.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    verdict = {"usca": "the data support Theorem 4.1's shape", "prior-art": "the data support the prior-art shape"}
    figure.suptitle("USCA rate shape: " + verdict.get(str(fit.get("supported_shape")), "the data do not separate the shapes"))
    return figure
