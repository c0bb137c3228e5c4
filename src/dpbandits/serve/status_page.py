"""The status page: one HTML page per API key, rendered on the server, refreshing itself.

It lists the key's experiments with their progress, the privacy budget spent, and a bar chart (inline
SVG: no script, no external resource — the page works on a closed network) of each experiment's
current *released* estimates, i.e. only values the private algorithm has already published (noisy
phase estimates, released counters, recommendations). The page reloads itself every few seconds
(``<meta http-equiv="refresh">``). The key is given once in a form and kept in an HttpOnly,
SameSite=Strict cookie.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from typing import Any

__all__ = ["REFRESH_SECONDS", "estimates_svg", "render_login", "render_status"]

REFRESH_SECONDS = 2

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2rem; color: #222; }
table { border-collapse: collapse; } td, th { padding: .4rem .8rem; border-bottom: 1px solid #ddd; text-align: left; }
.bar { width: 12rem; height: .8rem; background: #eee; display: inline-block; vertical-align: middle; }
.bar > span { display: block; height: 100%; background: #3a7bd5; }
.muted { color: #777; font-size: .9em; }
"""


def _page(title: str, body: str, *, refresh: bool) -> str:
    meta = f'<meta http-equiv="refresh" content="{REFRESH_SECONDS}">' if refresh else ""
    return (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>{meta}<title>{html.escape(title)}</title>"
            f"<style>{_STYLE}</style></head><body>{body}</body></html>")


def render_login(message: str = "") -> str:
    """The form asking for an API key."""
    note = f"<p class='muted'>{html.escape(message)}</p>" if message else ""
    return _page("dpbandits serve: sign in", (
        "<h1>dpbandits serve</h1>" + note +
        "<form method='post' action='/status/login'><label>API key "
        "<input type='password' name='key' id='key' autocomplete='off' size='50'></label> "
        "<button type='submit' id='sign-in'>Show my experiments</button></form>"
    ), refresh=False)


def estimates_svg(arms: Sequence[int], values: Sequence[float | None], *, width: int = 320, height: int = 120) -> str:
    """A bar chart of released per-arm values as inline SVG (bars from 0; negative values go down)."""
    finite = [v for v in values if v is not None and math.isfinite(v)]
    if not arms or not finite:
        return ""
    low, high = min(0.0, *finite), max(0.0, *finite)
    span = (high - low) or 1.0
    bar = width / len(arms)
    zero = height - 14 - (0.0 - low) / span * (height - 24)
    parts = [f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height}' role='img' "
             f"class='estimates'><line x1='0' x2='{width}' y1='{zero:.1f}' y2='{zero:.1f}' stroke='#999'/>"]
    for i, (arm, value) in enumerate(zip(arms, values, strict=True)):
        if value is None or not math.isfinite(value):
            continue
        y = height - 14 - (value - low) / span * (height - 24)
        top, size = min(y, zero), abs(zero - y)
        parts.append(f"<rect x='{i * bar + 2:.1f}' y='{top:.1f}' width='{max(bar - 4, 1):.1f}' height='{size:.1f}' "
                     f"fill='#3a7bd5'><title>arm {arm}: {value:.4g}</title></rect>"
                     f"<text x='{i * bar + bar / 2:.1f}' y='{height - 2}' font-size='10' "
                     f"text-anchor='middle'>{arm}</text>")
    parts.append("</svg>")
    return "".join(parts)


def _row(experiment: dict[str, Any], spent: float | None) -> str:
    progress = experiment["progress"]
    fraction = progress["fraction"] or 0.0
    told = progress["steps_told"]
    total = progress["steps_total"]
    state = "closed" if experiment["closed"] else ("done" if experiment["done"] else
                                                    ("fitted" if experiment.get("fitted") else "running"))
    recommendation = experiment.get("recommendation")
    estimates = experiment.get("estimates") or {}
    chart = estimates_svg(estimates.get("arms", []), estimates.get("values", []))
    label = f"<div class='muted'>{html.escape(estimates.get('label', ''))}</div>" if chart else ""
    budget = experiment.get("epsilon_budget")
    spent_text = "—" if spent is None else f"ε = {spent:.4g}" + (f" of {budget:.4g}" if budget else "")
    experiment_id = html.escape(experiment["id"])
    return (
        f"<tr id='exp-{experiment_id}'><td>{html.escape(experiment['name'])}<div class='muted'>"
        f"{html.escape(experiment['kind'])} · {experiment_id}</div></td>"
        f"<td><span class='bar'><span style='width:{100 * fraction:.1f}%'></span></span> "
        f"<span class='progress'>{told}{'' if total is None else f' / {total}'}</span></td>"
        f"<td class='state'>{state}</td>"
        f"<td>{'—' if recommendation is None else html.escape(str(recommendation))}</td>"
        f"<td>{html.escape(spent_text)}</td><td>{chart}{label}</td></tr>"
    )


def render_status(experiments: Sequence[dict[str, Any]], spent: dict[str, float | None]) -> str:
    """The page of one key: a table of its experiments (see the module docstring)."""
    rows = "".join(_row(e, spent.get(e["id"])) for e in experiments)
    table = ("<table><thead><tr><th>experiment</th><th>progress (steps told)</th><th>state</th>"
             "<th>recommendation</th><th>privacy spent</th><th>released estimates</th></tr></thead>"
             f"<tbody>{rows}</tbody></table>") if experiments else "<p>No experiments yet.</p>"
    return _page("dpbandits serve: status", (
        "<h1>Your experiments</h1>"
        f"<p class='muted'>Refreshes every {REFRESH_SECONDS} s. Only values already released by the private "
        "algorithms are shown.</p>" + table +
        "<form method='post' action='/status/logout'><button type='submit'>Sign out</button></form>"
    ), refresh=True)
