"""The status page is rendered from the package's Jinja2 templates with autoescaping; its ledger chart
counts time in a readable unit. (Pure rendering: no server, no database.)"""

from __future__ import annotations

import fnmatch
import tomllib
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from dpbandits.serve.status_page import render_detail, render_login, render_status, time_unit

HOSTILE = "<script>alert('x')</script>&"


def _experiment(**changes: Any) -> dict[str, Any]:
    experiment = {
        "id": "e1", "name": HOSTILE, "kind": "dp-bai", "closed": False, "done": False, "fitted": False,
        "progress": {"steps_told": 3, "steps_total": 90, "fraction": 3 / 90}, "spent": 1.0, "epsilon_budget": 2.0,
        "estimates": {"arms": [0, 1], "values": [0.5, 0.25], "label": HOSTILE},
        "recommendation": {"arm": HOSTILE}, "created_at": 1000.0, "guarantee": {"description": HOSTILE},
        "timeline": [{"created_at": 1000.0 + t, "epsilon_spent": 0.5 * (i + 1), "release": HOSTILE, "count": 1,
                      "note": HOSTILE} for i, t in enumerate((0.0, 600.0))],
    }
    experiment.update(changes)
    return experiment


@pytest.mark.parametrize("page", [
    lambda: render_status([_experiment()], csrf=HOSTILE),
    lambda: render_detail(_experiment(), csrf=HOSTILE),
    lambda: render_login(HOSTILE, message=HOSTILE),
], ids=["status", "detail", "login"])
def test_every_value_is_escaped(page: Any) -> None:
    html = page()
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert html.count("&amp;") >= 1 and html.startswith("<!DOCTYPE html>")


def test_the_pages_are_the_packaged_templates() -> None:
    templates = sorted(p.name for p in resources.files("dpbandits.serve").joinpath("templates").iterdir()
                       if p.name[0] != ".")
    assert {"page.html", "status.html", "detail.html", "login.html", "chart.svg"} <= set(templates)
    pyproject = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = pyproject["tool"]["setuptools"]["package-data"]["dpbandits"]
    # a wheel holds them: each template matches a package-data pattern
    assert all(any(fnmatch.fnmatch(f"serve/templates/{name}", pattern) for pattern in patterns) for name in templates)
    assert any(requirement.startswith("jinja2") for requirement in pyproject["project"]["optional-dependencies"]["serve"])


@pytest.mark.parametrize(("span", "unit"), [(0.0, "seconds"), (90.0, "seconds"), (600.0, "minutes"),
                                            (3 * 3600.0, "hours"), (5 * 86400.0, "days")])
def test_time_unit(span: float, unit: str) -> None:
    assert time_unit(span)[0] == unit


def test_the_ledger_chart_counts_minutes_for_a_ten_minute_ledger() -> None:
    html = render_detail(_experiment(), csrf="t")
    assert ">minutes since the experiment was created<" in html and "seconds since" not in html
    assert "<th>time (minutes)</th>" in html and "<td>10</td>" in html
