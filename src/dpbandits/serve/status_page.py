"""The status page: HTML rendered on the server from Jinja2 templates, refreshing itself, with SVG charts.

``/status`` lists the signed-in key's experiments: progress (full, and read as done, once an
experiment is done), state, the recommendation as text, the privacy budget spent, and a bar chart
of each experiment's current *released* estimates — only values the private algorithm has already
published (noisy phase estimates, released counters). ``/status/experiments/{id}`` shows one
experiment: its privacy ledger over time (a table, and a step chart of ε spent, its time axis in
seconds, minutes, hours or days, whichever reads best) and its released estimates. Charts
(:func:`bar_chart`, :func:`step_chart`) have axes with tick values and labels; they are plain SVG
(no script, no external resource: the page works on a closed network). Pages reload themselves
every :data:`REFRESH_SECONDS` (``<meta http-equiv="refresh">``).

The pages are the package's templates (``dpbandits/serve/templates``) rendered by Jinja2 with
autoescaping on for every template: every value (an experiment's name, a note, a recommendation) is
escaped where it is written, and only the charts, themselves rendered from an escaped template, are
inserted as markup. This module computes what the templates show (the charts' geometry, texts).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import jinja2
from markupsafe import Markup

__all__ = ["REFRESH_SECONDS", "bar_chart", "nice_ticks", "recommendation_text", "render_detail", "render_login",
           "render_status", "step_chart", "time_unit"]

REFRESH_SECONDS = 2
"""Seconds between the pages' automatic reloads."""


@lru_cache(maxsize=1)
def _templates() -> jinja2.Environment:
    """The package's templates, autoescaped (HTML and SVG alike), undefined names refused."""
    return jinja2.Environment(loader=jinja2.PackageLoader("dpbandits.serve", "templates"),
                              autoescape=jinja2.select_autoescape(default=True, default_for_string=True),
                              undefined=jinja2.StrictUndefined, trim_blocks=False)


def _render(template: str, **context: Any) -> str:
    return _templates().get_template(template).render(**context)


def render_login(csrf: str, message: str = "") -> str:
    """The form asking for an API key (with its anti-forgery token)."""
    return _render("login.html", title="dpbandits serve: sign in", refresh=0, csrf=csrf, message=message)


# ------------------------------------------------------------------------------ charts
def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """About ``count`` round tick values (steps of 1, 2 or 5 × 10^k) covering [low, high]."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return []
    if high <= low:
        low, high = (low - 1.0, high + 1.0) if low == 0 else (low - abs(low) / 2, high + abs(high) / 2)
    raw = (high - low) / max(count - 1, 1)
    magnitude = 10.0 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1.0, 2.0, 5.0, 10.0) if m * magnitude >= raw)
    first, last = math.floor(low / step), math.ceil(high / step)
    return [round(i * step, 12) for i in range(first, last + 1)]


def _label(value: float) -> str:
    return f"{value:.3g}"


class _Frame:
    """A plot area with a y axis (ticks, values, label) and an x axis label, in an SVG of fixed size."""

    left, right, top, bottom = 56.0, 12.0, 10.0, 38.0

    def __init__(self, width: int, height: int, ticks: list[float]) -> None:
        self.width, self.height, self.ticks = width, height, ticks
        self.low, self.high = ticks[0], ticks[-1]

    def y(self, value: float) -> float:
        span = (self.high - self.low) or 1.0
        return self.top + (self.high - value) / span * (self.height - self.top - self.bottom)

    def chart(self, css_class: str, title: str, y_label: str, x_label: str, **drawn: Any) -> str:
        """The SVG, from the template: this frame's axes and ``drawn`` (bars, points, path, x_ticks)."""
        y1 = self.height - self.bottom
        geometry = {
            "width": self.width, "height": self.height, "title": title, "css_class": css_class,
            "x0": self.left, "x1": self.width - self.right, "top": self.top, "y1": y1,
            "middle": (self.top + y1) / 2, "y_label": y_label, "x_label": x_label,
            "y_ticks": [{"y": self.y(t), "zero": t == 0, "label": _label(t)} for t in self.ticks],
            "x_ticks": [], "bars": [], "points": [], "path": "", **drawn,
        }
        return Markup(_render("chart.svg", c=geometry))


def bar_chart(arms: Sequence[int], values: Sequence[float | None], *, title: str, y_label: str = "value",
              x_label: str = "arm", width: int = 360, height: int = 180, css_class: str = "estimates") -> str:
    """Bars of per-arm values from 0 (negative values go down), with a y axis of round ticks."""
    shown = [(arm, v) for arm, v in zip(arms, values, strict=True) if v is not None and math.isfinite(v)]
    if not shown:
        return ""
    finite = [v for _, v in shown]
    frame = _Frame(width, height, nice_ticks(min(0.0, *finite), max(0.0, *finite)))
    slot = (width - frame.left - frame.right) / len(shown)
    zero = frame.y(0.0)
    bars, ticks = [], []
    for i, (arm, value) in enumerate(shown):
        x, y = frame.left + i * slot, frame.y(value)
        bars.append({"x": x + 2, "y": min(y, zero), "width": max(slot - 4, 1), "height": abs(zero - y),
                     "title": f"arm {arm}: {value:.4g}"})
        if len(shown) <= 40 or i % math.ceil(len(shown) / 40) == 0:  # at most ~40 arm labels
            ticks.append({"x": x + slot / 2, "label": str(arm), "mark": False})
    return frame.chart(css_class, title, y_label, x_label, bars=bars, x_ticks=ticks)


TIME_UNITS: tuple[tuple[str, float], ...] = (("seconds", 1.0), ("minutes", 60.0), ("hours", 3600.0),
                                              ("days", 86400.0))


def time_unit(span_seconds: float) -> tuple[str, float]:
    """The unit (name, seconds in one) that shows a time span of ``span_seconds`` in readable numbers.

    The largest unit in which the span is at least 2 (so 90 s stay seconds, 3 hours read as hours).
    """
    chosen = TIME_UNITS[0]
    for unit in TIME_UNITS:
        if span_seconds >= 2.0 * unit[1]:
            chosen = unit
    return chosen


def step_chart(xs: Sequence[float], ys: Sequence[float | None], *, title: str, y_label: str, x_label: str,
               width: int = 480, height: int = 200, css_class: str = "ledger-chart") -> str:
    """A step line through (x, y) points (a cumulative quantity over time), with both axes ticked."""
    points = [(x, y) for x, y in zip(xs, ys, strict=True) if y is not None and math.isfinite(y) and math.isfinite(x)]
    if not points:
        return ""
    frame = _Frame(width, height, nice_ticks(0.0, max(y for _, y in points)))
    x_ticks = nice_ticks(min(x for x, _ in points), max(x for x, _ in points), 5)
    x_low, x_high = x_ticks[0], x_ticks[-1]
    plot = width - frame.left - frame.right

    def sx(x: float) -> float:
        return frame.left + (x - x_low) / ((x_high - x_low) or 1.0) * plot

    path, previous, circles = [], None, []
    for x, y in points:
        if previous is not None:
            path.append(f"L{sx(x):.1f},{frame.y(previous):.1f}")
        path.append(f"{'M' if previous is None else 'L'}{sx(x):.1f},{frame.y(y):.1f}")
        previous = y
        circles.append({"x": sx(x), "y": frame.y(y), "title": f"{_label(x)}: {_label(y)}"})
    return frame.chart(css_class, title, y_label, x_label, points=circles, path=" ".join(path),
                       x_ticks=[{"x": sx(t), "label": _label(t), "mark": True} for t in x_ticks])


# ------------------------------------------------------------------------------ pages
def recommendation_text(recommendation: Any) -> str:
    """A recommendation as words: ``{"arm": 3}`` -> ``"arm 3"`` (— when there is none)."""
    if recommendation is None:
        return "—"
    if isinstance(recommendation, dict):
        return ", ".join(f"{key.replace('_', ' ')} {recommendation_text(value)}"
                         for key, value in recommendation.items())
    if isinstance(recommendation, list | tuple):
        return "(" + ", ".join(recommendation_text(v) for v in recommendation) + ")"
    return f"{recommendation:.4g}" if isinstance(recommendation, float) else str(recommendation)


def _state(experiment: dict[str, Any]) -> str:
    if experiment["closed"]:
        return "closed"
    if experiment["done"]:
        return "done"
    return "fitted" if experiment.get("fitted") else "running"


def _progress(experiment: dict[str, Any]) -> tuple[str, float]:
    """The progress text and the bar's fraction; a done experiment reads as complete."""
    told, total = experiment["progress"]["steps_told"], experiment["progress"]["steps_total"]
    if experiment["done"]:
        return f"{told} / {told} (done)", 1.0
    fraction = experiment["progress"]["fraction"] or 0.0
    return f"{told}{'' if total is None else f' / {total}'}", fraction


def _number(value: float | None) -> str:
    return "—" if value is None else f"{value:.4g}"


def _spent_text(experiment: dict[str, Any]) -> str:
    spent, budget = experiment.get("spent"), experiment.get("epsilon_budget")
    return "—" if spent is None else f"ε = {spent:.4g}" + (f" of {budget:.4g}" if budget else "")


def _estimates(experiment: dict[str, Any], *, width: int = 360) -> tuple[str, str]:
    """(the bar chart of released estimates, its label), or ("", "") before any is released."""
    estimates = experiment.get("estimates") or {}
    label = estimates.get("label", "released estimates")
    chart = bar_chart(estimates.get("arms", []), estimates.get("values", []), width=width, title=label,
                      y_label="released estimate")
    return chart, (estimates.get("label", "") if chart else "")


def _shown(experiment: dict[str, Any], *, chart_width: int = 360) -> dict[str, Any]:
    """What a page shows of one experiment (texts; the templates escape them)."""
    text, fraction = _progress(experiment)
    chart, chart_label = _estimates(experiment, width=chart_width)
    return {"id": experiment["id"], "name": experiment["name"], "kind": experiment["kind"], "progress": text,
            "fraction": fraction, "state": _state(experiment), "spent": _spent_text(experiment),
            "recommendation": recommendation_text(experiment.get("recommendation")),
            "chart": chart, "chart_label": chart_label}


def render_status(experiments: Sequence[dict[str, Any]], csrf: str) -> str:
    """The page of one key: a table of its experiments (each with ``spent``; see the module docstring)."""
    return _render("status.html", title="dpbandits serve: status", refresh=REFRESH_SECONDS, csrf=csrf,
                   rows=[_shown(e) for e in experiments])


def render_detail(experiment: dict[str, Any], csrf: str) -> str:
    """One experiment: progress, guarantee, the ledger over time (table and chart), released estimates."""
    timeline = experiment["timeline"]
    start = experiment["created_at"]
    elapsed = [e["created_at"] - start for e in timeline]
    unit, seconds = time_unit(max(elapsed, default=0.0))
    chart = step_chart([t / seconds for t in elapsed], [e["epsilon_spent"] for e in timeline],
                       title="privacy budget spent over time", y_label="ε spent",
                       x_label=f"{unit} since the experiment was created")
    guarantee = (experiment.get("guarantee") or {}).get("description") or "per release (see the ledger)"
    shown = {**_shown(experiment, chart_width=560), "guarantee": str(guarantee), "ledger_chart": chart,
             "time_unit": unit,
             "entries": [{"time": f"{t / seconds:.3g}", "release": e["release"], "count": e["count"],
                          "spent": _number(e["epsilon_spent"]), "note": e["note"]}
                         for t, e in zip(elapsed, timeline, strict=True)]}
    return _render("detail.html", title=f"dpbandits serve: {experiment['name']}", refresh=REFRESH_SECONDS,
                   csrf=csrf, e=shown)
