"""The status page's session and pages (issue 25, item 8), in-process on SQLite and PostgreSQL.

The cookie is a random session id stored hashed (never the API key), HttpOnly, SameSite=Strict, and
Secure behind TLS; sign-in and sign-out need their anti-forgery token; a done experiment reads as
done; the recommendation is text; a detail page shows the ledger over time and the released
estimates as charts with axes; a refresh costs the same number of queries whatever the number of
experiments.
"""

from __future__ import annotations

import hashlib
import re
import time
import warnings
from collections.abc import Iterator
from typing import Any

import pytest
from servetools import Store
from sqlalchemy import event, select, update

from dpbandits.serve.app import create_app
from dpbandits.serve.auth import revoke_key
from dpbandits.serve.sessions import COOKIE, CSRF_COOKIE, SESSION_SECONDS, SessionStore, sessions
from dpbandits.serve.status_page import bar_chart, nice_ticks, recommendation_text, step_chart
from dpbandits.serve.storage import api_keys, make_engine
from dpbandits.serve.testing import feedback_for

with warnings.catch_warnings():  # starlette asks for httpx2, which is not packaged here: httpx works
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient


@pytest.fixture
def engine(store: Store) -> Iterator[Any]:
    engine = make_engine(store.db)
    yield engine
    engine.dispose()


def _browser(engine: Any, *, behind_tls: bool = False, base_url: str = "http://testserver") -> TestClient:
    return TestClient(create_app(engine, allow_insecure_seeded_noise=True, behind_tls=behind_tls),
                      base_url=base_url, raise_server_exceptions=False, follow_redirects=False)


def _form_token(page: str) -> str:
    found = re.search(r"name='csrf' value='([^']+)'", page)
    assert found, page[:500]
    return found.group(1)


def _sign_in(browser: TestClient, key: str) -> Any:
    token = _form_token(browser.get("/status").text)
    return browser.post("/status/login", data={"key": key, "csrf": token})


def _run_to_done(store: Store, engine: Any) -> str:
    """A DP-BAI experiment of bob's, told until done (its phases end a few pulls under the budget)."""
    with _browser(engine) as api:
        headers = {"Authorization": f"Bearer {store.bob}"}
        body = {"kind": "dp-bai", "params": {"n_arms": 7, "budget": 400, "epsilon": 1.0}, "insecure_seed": 3,
                "name": "finished"}
        experiment = api.post("/v1/experiments", json=body, headers=headers).json()["id"]
        while (handed := api.post(f"/v1/experiments/{experiment}/ask", headers=headers)).status_code == 200:
            ticket = handed.json()
            api.post(f"/v1/experiments/{experiment}/tell", headers=headers,
                     json={"ticket": ticket["ticket"], **feedback_for(ticket["step"], {"arm": ticket["arm"]})})
    return str(experiment)


def test_the_cookie_is_a_hashed_session_id_never_the_key(store: Store, engine: Any) -> None:
    with _browser(engine) as browser:
        signed_in = _sign_in(browser, store.bob)
        assert signed_in.status_code == 303
        header = signed_in.headers["set-cookie"]
        session_id = browser.cookies[COOKIE]
        assert store.bob not in header and store.bob not in session_id and len(session_id) >= 40
        assert "HttpOnly" in header and "SameSite=strict" in header.replace("Strict", "strict")
        assert "Secure" not in header  # plain HTTP, not behind TLS
        with engine.connect() as connection:
            stored = connection.execute(select(sessions.c.id_hash, sessions.c.expires_at)).all()
        assert [row[0] for row in stored] == [hashlib.sha256(session_id.encode()).hexdigest()]
        assert stored[0][1] == pytest.approx(time.time() + SESSION_SECONDS, abs=60)
        assert "Your experiments" in browser.get("/status").text
        # the key itself in the cookie no longer signs anyone in
        browser.cookies.clear()
        browser.cookies.set(COOKIE, store.bob)
        assert "Show my experiments" in browser.get("/status").text


@pytest.mark.parametrize(("behind_tls", "base_url"), [(True, "http://testserver"), (False, "https://testserver")])
def test_cookies_are_secure_behind_tls(store: Store, engine: Any, behind_tls: bool, base_url: str) -> None:
    with _browser(engine, behind_tls=behind_tls, base_url=base_url) as browser:
        login = browser.get("/status")
        assert "Secure" in login.headers["set-cookie"]  # the form's token cookie
        assert "Secure" in _sign_in(browser, store.bob).headers["set-cookie"]


def test_sign_in_and_sign_out_need_their_csrf_token(store: Store, engine: Any) -> None:
    with _browser(engine) as browser:
        browser.get("/status")
        assert browser.post("/status/login", data={"key": store.bob}).status_code == 403
        assert browser.post("/status/login", data={"key": store.bob, "csrf": "forged"}).status_code == 403
        browser.cookies.delete(CSRF_COOKIE)  # a forged cross-site post carries no token cookie
        assert browser.post("/status/login", data={"key": store.bob, "csrf": "x" * 43}).status_code == 403
        assert COOKIE not in browser.cookies
        assert _sign_in(browser, store.bob).status_code == 303
        assert browser.post("/status/logout", data={}).status_code == 403  # sign-out without the token
        page = browser.get("/status").text
        assert "Your experiments" in page
        session_id = browser.cookies[COOKIE]
        assert browser.post("/status/logout", data={"csrf": _form_token(page)}).status_code == 303
        browser.cookies.set(COOKIE, session_id)  # a replayed cookie after sign-out
        assert "Show my experiments" in browser.get("/status").text


def test_sessions_expire_and_end_with_their_key(store: Store, engine: Any) -> None:
    sessions_store = SessionStore(engine)
    with engine.connect() as connection:
        bob = connection.execute(select(api_keys.c.id).where(api_keys.c.name == "bob")).scalar_one()
    session_id = sessions_store.create(bob, now=1000.0)
    assert sessions_store.owner(session_id, now=1000.0 + SESSION_SECONDS - 1) == bob
    assert sessions_store.owner(session_id, now=1000.0 + SESSION_SECONDS + 1) is None
    live = sessions_store.create(bob)
    assert sessions_store.owner(live) == bob
    revoke_key(engine, bob)
    assert sessions_store.owner(live) is None
    with engine.begin() as connection:
        connection.execute(update(api_keys).where(api_keys.c.id == bob).values(revoked=False))


@pytest.mark.slow
def test_a_done_experiment_reads_as_done_with_a_readable_recommendation(store: Store, engine: Any) -> None:
    experiment = _run_to_done(store, engine)
    with _browser(engine) as browser:
        _sign_in(browser, store.bob)
        page = browser.get("/status").text
        row = page[page.index(f"id='exp-{experiment}'"):]
        row = row[:row.index("</tr>")]
        took = int(re.search(r"class='progress'>(\d+) / (\d+) \(done\)", row).group(1))  # type: ignore[union-attr]
        assert f"{took} / {took} (done)" in row and " / 400" not in row and "width:100.0%" in row
        assert re.search(r"class='recommendation'>arm \d+<", row) and "{" not in row.split("recommendation'>")[1][:20]


@pytest.mark.slow
def test_detail_page_shows_the_ledger_over_time_and_charts_with_axes(store: Store, engine: Any) -> None:
    experiment = _run_to_done(store, engine)
    with _browser(engine) as browser:
        _sign_in(browser, store.bob)
        page = browser.get(f"/status/experiments/{experiment}")
        assert page.status_code == 200
        text = page.text
        assert "<table id='ledger'>" in text and ">run<" in text and ">recommendation<" in text
        for chart in ("ledger-chart", "estimates"):
            svg = text[text.index(f"class='{chart}'"):]
            svg = svg[:svg.index("</svg>")]
            assert "class='y-axis'" in svg and "class='x-axis'" in svg
            assert svg.count("class='tick'") >= 3 and svg.count("class='axis-label'") == 2
        assert "ε spent" in text and "released estimate" in text and "seconds since the experiment was created" in text
        # another key's experiment is the same 404 as a missing one
        browser.cookies.clear()
        assert _sign_in(browser, store.alice).status_code == 303
        missing = browser.get("/status/experiments/" + "0" * 32)
        other = browser.get(f"/status/experiments/{experiment}")
        assert other.status_code == missing.status_code == 404 and other.text == missing.text


def test_a_refresh_costs_the_same_queries_whatever_the_number_of_experiments(store: Store, engine: Any) -> None:
    statements: list[str] = []

    def record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if statement.lstrip().upper().startswith("SELECT"):
            statements.append(statement)

    with _browser(engine) as browser:
        _sign_in(browser, store.bob)
        counts = []
        for _ in range(2):
            for _ in range(3):
                browser.post("/v1/experiments", headers={"Authorization": f"Bearer {store.bob}"},
                             json={"kind": "dp-bai", "params": {"n_arms": 3, "budget": 60, "epsilon": 1.0}})
            event.listen(engine, "before_cursor_execute", record)
            statements.clear()
            assert browser.get("/status").text.count("id='exp-") in (3, 6)
            event.remove(engine, "before_cursor_execute", record)
            counts.append(len(statements))
        assert counts[0] == counts[1] == 2, statements  # the session, then experiments joined with their ledgers


def test_chart_helpers() -> None:
    assert nice_ticks(-0.13, 0.92) == [-0.5, 0.0, 0.5, 1.0]
    assert nice_ticks(0.0, 3.7, 8) == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert nice_ticks(0.0, 0.0) == [-1.0, -0.5, 0.0, 0.5, 1.0]
    assert recommendation_text({"arm": 3}) == "arm 3" and recommendation_text(None) == "—"
    svg = bar_chart([0, 1, 2], [0.5, -0.25, None], title="t", y_label="released estimate")
    assert "released estimate" in svg and ">-0.4<" in svg and ">0.6<" in svg and svg.count("<rect") == 2
    line = step_chart([0.0, 2.5], [1.0, 1.5], title="t", y_label="ε spent", x_label="seconds")
    assert ">seconds<" in line and ">ε spent<" in line and line.count("<circle") == 2
    assert bar_chart([0], [None], title="t") == "" and step_chart([], [], title="t", y_label="", x_label="") == ""
