"""The status page: HTML rendered on the server, refreshing itself, with charts as inline SVG.

``/status`` lists the signed-in key's experiments: progress (full, and read as done, once an
experiment is done), state, the recommendation as text, the privacy budget spent, and a bar chart
of each experiment's current *released* estimates — only values the private algorithm has already
published (noisy phase estimates, released counters). ``/status/experiments/{id}`` shows one
experiment: its privacy ledger over time (a table, and a step chart of ε spent) and its released
estimates. Charts (:func:`bar_chart`, :func:`step_chart`) have axes with tick values and labels;
they are plain SVG (no script, no external resource: the page works on a closed network). Pages
reload themselves every :data:`REFRESH_SECONDS` (``<meta http-equiv="refresh">``).
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from typing import Any

__all__ = ["REFRESH_SECONDS", "bar_chart", "nice_ticks", "recommendation_text", "render_detail", "render_login",
           "render_status", "step_chart"]

REFRESH_SECONDS = 2
"""Seconds between the pages' automatic reloads."""

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2rem; color: #222; }
table { border-collapse: collapse; } td, th { padding: .4rem .8rem; border-bottom: 1px solid #ddd; text-align: left; }
.bar { width: 12rem; height: .8rem; background: #eee; display: inline-block; vertical-align: middle; }
.bar > span { display: block; height: 100%; background: #3a7bd5; }
.muted { color: #777; font-size: .9em; }
svg text { font-family: system-ui, sans-serif; fill: #333; }
"""


def _page(title: str, body: str, *, refresh: bool) -> str:
    meta = f'<meta http-equiv="refresh" content="{REFRESH_SECONDS}">' if refresh else ""
    return (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>{meta}<title>{html.escape(title)}</title>"
            f"<style>{_STYLE}</style></head><body>{body}</body></html>")


def _hidden(csrf: str) -> str:
    return f"<input type='hidden' name='csrf' value='{html.escape(csrf)}'>"


def render_login(csrf: str, message: str = "") -> str:
    """The form asking for an API key (with its anti-forgery token)."""
    note = f"<p class='muted'>{html.escape(message)}</p>" if message else ""
    return _page("dpbandits serve: sign in", (
        "<h1>dpbandits serve</h1>" + note +
        "<form method='post' action='/status/login'>" + _hidden(csrf) + "<label>API key "
        "<input type='password' name='key' id='key' autocomplete='off' size='50'></label> "
        "<button type='submit' id='sign-in'>Show my experiments</button></form>"
    ), refresh=False)


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

    def axes(self, y_label: str, x_label: str) -> list[str]:
        x0, x1, y1 = self.left, self.width - self.right, self.height - self.bottom
        parts = [f"<g class='y-axis'><line x1='{x0}' x2='{x0}' y1='{self.top}' y2='{y1}' stroke='#555'/>"]
        for tick in self.ticks:
            y = self.y(tick)
            parts.append(f"<line x1='{x0 - 4}' x2='{x1}' y1='{y:.1f}' y2='{y:.1f}' "
                         f"stroke='{'#555' if tick == 0 else '#e3e3e3'}'/>"
                         f"<text class='tick' x='{x0 - 6}' y='{y + 3:.1f}' font-size='10' "
                         f"text-anchor='end'>{html.escape(_label(tick))}</text>")
        middle = (self.top + y1) / 2
        parts.append(f"<text class='axis-label' x='12' y='{middle:.1f}' font-size='11' text-anchor='middle' "
                     f"transform='rotate(-90 12 {middle:.1f})'>{html.escape(y_label)}</text></g>")
        parts.append(f"<g class='x-axis'><line x1='{x0}' x2='{x1}' y1='{y1}' y2='{y1}' stroke='#555'/>"
                     f"<text class='axis-label' x='{(x0 + x1) / 2:.1f}' y='{self.height - 4}' font-size='11' "
                     f"text-anchor='middle'>{html.escape(x_label)}</text></g>")
        return parts

    def svg(self, css_class: str, title: str, parts: list[str]) -> str:
        return (f"<svg xmlns='http://www.w3.org/2000/svg' width='{self.width}' height='{self.height}' "
                f"role='img' aria-label='{html.escape(title)}' class='{css_class}'><title>{html.escape(title)}</title>"
                + "".join(parts) + "</svg>")


def bar_chart(arms: Sequence[int], values: Sequence[float | None], *, title: str, y_label: str = "value",
              x_label: str = "arm", width: int = 360, height: int = 180, css_class: str = "estimates") -> str:
    """Bars of per-arm values from 0 (negative values go down), with a y axis of round ticks."""
    shown = [(arm, v) for arm, v in zip(arms, values, strict=True) if v is not None and math.isfinite(v)]
    if not shown:
        return ""
    finite = [v for _, v in shown]
    frame = _Frame(width, height, nice_ticks(min(0.0, *finite), max(0.0, *finite)))
    parts = frame.axes(y_label, x_label)
    slot = (width - frame.left - frame.right) / len(shown)
    zero = frame.y(0.0)
    for i, (arm, value) in enumerate(shown):
        x = frame.left + i * slot
        y = frame.y(value)
        parts.append(f"<rect x='{x + 2:.1f}' y='{min(y, zero):.1f}' width='{max(slot - 4, 1):.1f}' "
                     f"height='{abs(zero - y):.1f}' fill='#3a7bd5'><title>arm {arm}: {value:.4g}</title></rect>")
        if len(shown) <= 40 or i % math.ceil(len(shown) / 40) == 0:  # at most ~40 arm labels
            parts.append(f"<text class='tick' x='{x + slot / 2:.1f}' y='{height - frame.bottom + 12}' font-size='10' "
                         f"text-anchor='middle'>{arm}</text>")
    return frame.svg(css_class, title, parts)


def step_chart(xs: Sequence[float], ys: Sequence[float | None], *, title: str, y_label: str, x_label: str,
               width: int = 480, height: int = 200, css_class: str = "ledger-chart") -> str:
    """A step line through (x, y) points (a cumulative quantity over time), with both axes ticked."""
    points = [(x, y) for x, y in zip(xs, ys, strict=True) if y is not None and math.isfinite(y) and math.isfinite(x)]
    if not points:
        return ""
    frame = _Frame(width, height, nice_ticks(0.0, max(y for _, y in points)))
    parts = frame.axes(y_label, x_label)
    x_ticks = nice_ticks(min(x for x, _ in points), max(x for x, _ in points), 5)
    x_low, x_high = x_ticks[0], x_ticks[-1]
    plot = width - frame.left - frame.right

    def sx(x: float) -> float:
        return frame.left + (x - x_low) / ((x_high - x_low) or 1.0) * plot

    for tick in x_ticks:
        parts.append(f"<text class='tick' x='{sx(tick):.1f}' y='{height - frame.bottom + 12}' font-size='10' "
                     f"text-anchor='middle'>{html.escape(_label(tick))}</text>"
                     f"<line x1='{sx(tick):.1f}' x2='{sx(tick):.1f}' y1='{height - frame.bottom}' "
                     f"y2='{height - frame.bottom + 3}' stroke='#555'/>")
    path, previous = [], None
    for x, y in points:
        if previous is not None:
            path.append(f"L{sx(x):.1f},{frame.y(previous):.1f}")
        path.append(f"{'M' if previous is None else 'L'}{sx(x):.1f},{frame.y(y):.1f}")
        previous = y
        parts.append(f"<circle cx='{sx(x):.1f}' cy='{frame.y(y):.1f}' r='3' fill='#3a7bd5'>"
                     f"<title>{html.escape(_label(x))}: {html.escape(_label(y))}</title></circle>")
    parts.append(f"<path d='{' '.join(path)}' fill='none' stroke='#3a7bd5' stroke-width='1.5'/>")
    return frame.svg(css_class, title, parts)


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


def _estimates_chart(experiment: dict[str, Any], *, width: int = 360) -> str:
    estimates = experiment.get("estimates") or {}
    chart = bar_chart(estimates.get("arms", []), estimates.get("values", []), width=width,
                      title=estimates.get("label", "released estimates"), y_label="released estimate")
    return chart + (f"<div class='muted'>{html.escape(estimates.get('label', ''))}</div>" if chart else "")


def _row(experiment: dict[str, Any]) -> str:
    text, fraction = _progress(experiment)
    experiment_id = html.escape(experiment["id"])
    return (
        f"<tr id='exp-{experiment_id}'><td><a href='/status/experiments/{experiment_id}'>"
        f"{html.escape(experiment['name'])}</a><div class='muted'>"
        f"{html.escape(experiment['kind'])} · {experiment_id}</div></td>"
        f"<td><span class='bar'><span style='width:{100 * fraction:.1f}%'></span></span> "
        f"<span class='progress'>{html.escape(text)}</span></td>"
        f"<td class='state'>{_state(experiment)}</td>"
        f"<td class='recommendation'>{html.escape(recommendation_text(experiment.get('recommendation')))}</td>"
        f"<td>{html.escape(_spent_text(experiment))}</td><td>{_estimates_chart(experiment)}</td></tr>"
    )


def _sign_out(csrf: str) -> str:
    return ("<form method='post' action='/status/logout'>" + _hidden(csrf) +
            "<button type='submit' id='sign-out'>Sign out</button></form>")


def render_status(experiments: Sequence[dict[str, Any]], csrf: str) -> str:
    """The page of one key: a table of its experiments (each with ``spent``; see the module docstring)."""
    rows = "".join(_row(e) for e in experiments)
    table = ("<table><thead><tr><th>experiment</th><th>progress (steps told)</th><th>state</th>"
             "<th>recommendation</th><th>privacy spent</th><th>released estimates</th></tr></thead>"
             f"<tbody>{rows}</tbody></table>") if experiments else "<p>No experiments yet.</p>"
    return _page("dpbandits serve: status", (
        "<h1>Your experiments</h1>"
        f"<p class='muted'>Refreshes every {REFRESH_SECONDS} s. Only values already released by the private "
        "algorithms are shown.</p>" + table + _sign_out(csrf)
    ), refresh=True)


def render_detail(experiment: dict[str, Any], csrf: str) -> str:
    """One experiment: progress, guarantee, the ledger over time (table and chart), released estimates."""
    text, fraction = _progress(experiment)
    timeline = experiment["timeline"]
    start = experiment["created_at"]
    chart = step_chart([e["created_at"] - start for e in timeline], [e["epsilon_spent"] for e in timeline],
                       title="privacy budget spent over time", y_label="ε spent",
                       x_label="seconds since the experiment was created")
    entries = "".join(
        f"<tr><td>{e['created_at'] - start:.1f} s</td><td>{html.escape(e['release'])}</td><td>{e['count']}</td>"
        f"<td>{_number(e['epsilon_spent'])}</td>"
        f"<td class='muted'>{html.escape(e['note'])}</td></tr>" for e in timeline)
    guarantee = (experiment.get("guarantee") or {}).get("description") or "per release (see the ledger)"
    return _page(f"dpbandits serve: {experiment['name']}", (
        f"<p><a href='/status'>← all experiments</a></p><h1>{html.escape(experiment['name'])}</h1>"
        f"<p class='muted'>{html.escape(experiment['kind'])} · {html.escape(experiment['id'])}</p>"
        f"<p>State: <span class='state'>{_state(experiment)}</span> · progress "
        f"<span class='bar'><span style='width:{100 * fraction:.1f}%'></span></span> "
        f"<span class='progress'>{html.escape(text)}</span> · recommendation: <span class='recommendation'>"
        f"{html.escape(recommendation_text(experiment.get('recommendation')))}</span></p>"
        f"<p>Guarantee: {html.escape(str(guarantee))}<br>Privacy spent: {html.escape(_spent_text(experiment))}</p>"
        "<h2>Privacy ledger over time</h2>" + chart +
        "<table id='ledger'><thead><tr><th>time</th><th>release</th><th>count</th><th>ε spent after</th>"
        f"<th>note</th></tr></thead><tbody>{entries}</tbody></table>"
        "<h2>Released estimates</h2>" + (_estimates_chart(experiment, width=560) or "<p>None released yet.</p>")
        + _sign_out(csrf)
    ), refresh=True)
