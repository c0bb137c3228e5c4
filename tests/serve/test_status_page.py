"""The status page in a real browser: Debian's headless Chromium driven by Playwright.

The page is loaded once, signed in with a key, and must show the experiment's progress change after
tells, by refreshing itself (no reload from the test), then a plot of released estimates with axes.
The browser's cookie is a session id, never the key; the sign-in form carries an anti-forgery token;
the experiment's own page shows its ledger over time and its released estimates as charts with axes.
"""

from __future__ import annotations

import os
from typing import Any

import pytest
from servetools import client, create

from dpbandits.serve.testing import feedback_for

CHROMIUM = "/usr/bin/chromium"
pytestmark = [pytest.mark.browser, pytest.mark.slow]

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]


def _tell(http: Any, experiment: str, n: int) -> None:
    for _ in range(n):
        ticket = http.post(f"/v1/experiments/{experiment}/ask").json()
        http.post(f"/v1/experiments/{experiment}/tell",
                  json={"ticket": ticket["ticket"], **feedback_for(ticket["step"], {"arm": ticket["arm"]})})


@pytest.mark.parametrize("served", ["sqlite"], indirect=True)
def test_status_page_shows_progress_changing_after_tells(served: Any) -> None:
    if not os.path.exists(CHROMIUM):
        pytest.skip("Debian's chromium is not installed (apt-get install chromium)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    server, store = served
    http = client(server, store.bob)
    experiment = create(http, "dp-bai", {"n_arms": 3, "budget": 90, "epsilon": 1.0}, name="browser test")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            page = browser.new_page()
            page.goto(server.url + "/status")
            assert len(page.locator("form[action='/status/login'] input[name='csrf']").input_value()) >= 40
            page.fill("#key", store.bob)
            page.click("#sign-in")
            progress = page.locator(f"#exp-{experiment} .progress")
            assert progress.inner_text().startswith("0 / 90")
            cookies = {c["name"]: c for c in page.context.cookies()}
            session = cookies["dpbandits_session"]
            assert store.bob not in session["value"] and session["httpOnly"] and session["sameSite"] == "Strict"
            assert all(store.bob not in c["value"] for c in cookies.values())
            _tell(http, experiment, 60)  # past the first phase: a released estimate exists
            sync_api.expect(progress).to_have_text("60 / 90", timeout=15_000)  # the page refreshed itself
            chart = page.locator(f"#exp-{experiment} svg.estimates")
            assert chart.locator("rect").count() >= 1
            assert chart.locator(".y-axis text.tick").count() >= 2 and chart.locator(".axis-label").count() == 2
            assert "browser test" in page.content()
            page.click(f"#exp-{experiment} a")  # the experiment's own page
            sync_api.expect(page.locator("h1")).to_have_text("browser test", timeout=15_000)
            ledger_chart = page.locator("svg.ledger-chart")
            assert ledger_chart.locator(".y-axis text.tick").count() >= 2
            assert ledger_chart.locator(".x-axis").count() == 1 and ledger_chart.locator(".axis-label").count() == 2
            assert page.locator("#ledger tbody tr").count() >= 1
            assert page.locator("svg.estimates .y-axis text.tick").count() >= 2
        finally:
            browser.close()


@pytest.mark.parametrize("served", ["sqlite"], indirect=True)
def test_openapi_docs_render_without_a_network(served: Any) -> None:
    """/docs (Swagger UI) loads its script from the server itself and renders the API's operations."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    if not os.path.exists(CHROMIUM):
        pytest.skip("Debian's chromium is not installed (apt-get install chromium)")
    server, _ = served
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            page = browser.new_page()
            outside: list[str] = []
            page.on("request", lambda r: outside.append(r.url) if not r.url.startswith(server.url) else None)
            page.goto(server.url + "/docs")
            sync_api.expect(page.get_by_text("/v1/experiments/{experiment_id}/tell")).to_be_visible(timeout=15_000)
            assert outside == []
        finally:
            browser.close()
