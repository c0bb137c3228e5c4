"""Malformed requests get a 4xx JSON error, never a 500: explicit cases and a small hypothesis run."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from servetools import client, create

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=12,
)
FIELDS = ["kind", "params", "name", "epsilon_budget", "delta_budget", "insecure_seed", "ticket", "reward",
          "winner", "first_wins", "context", "size", "n_arms", "budget", "epsilon", "horizon", "features"]
BODIES = JSON | st.dictionaries(st.sampled_from(FIELDS), JSON, max_size=5)


def _assert_clean_4xx(response: Any) -> None:
    assert 400 <= response.status_code < 500, (response.status_code, response.text[:300])
    error = response.json()["error"]
    assert error["code"] and error["message"]


@pytest.mark.parametrize("served", ["sqlite"], indirect=True)
def test_explicit_malformed_requests(served: Any) -> None:
    server, store = served
    http = client(server, store.alice)
    experiment = create(http, "dp-bai", {"n_arms": 3, "budget": 60, "epsilon": 1.0})
    ticket = http.post(f"/v1/experiments/{experiment}/ask").json()["ticket"]
    base = f"/v1/experiments/{experiment}"
    cases = [
        ("POST", "/v1/experiments", {"content": b"{not json", "headers": {"Content-Type": "application/json"}}),
        ("POST", "/v1/experiments", {"json": {"kind": "no-such-kind", "params": {}}}),
        ("POST", "/v1/experiments", {"json": {"kind": "dp-bai", "params": {"n_arms": 3, "budget": 10, "epsilon": -1}}}),
        ("POST", "/v1/experiments", {"json": {"kind": "dp-bai", "params": {"n_arms": 1, "budget": 10, "epsilon": 1}}}),
        ("POST", "/v1/experiments", {"json": {"kind": "dp-bai", "params": {"features": [[1], [1, 2]], "budget": 9,
                                                                            "epsilon": 1}}}),
        ("POST", "/v1/experiments", {"json": {"kind": "kl-mab", "params": {"n_arms": 2, "eta": 1, "min_count": 2}}}),
        ("POST", "/v1/experiments", {"content": b"x" * (70 * 1024), "headers": {"Content-Type": "application/json"}}),
        ("POST", base + "/tell", {"json": {"ticket": ticket, "reward": 7.0}}),  # outside [0, 1]
        ("POST", base + "/tell", {"content": f'{{"ticket": "{ticket}", "reward": NaN}}'.encode(),
                                  "headers": {"Content-Type": "application/json"}}),
        ("POST", "/v1/experiments", {"content": b'{"kind": "dp-bai", "params": {"n_arms": 3, "budget": 9, '
                                                b'"epsilon": Infinity}}', "headers": {"Content-Type": "application/json"}}),
        ("POST", base + "/tell", {"json": {"ticket": ticket, "winner": 1}}),  # wrong family
        ("POST", base + "/tell", {"json": {"ticket": ticket}}),
        ("POST", base + "/tell", {"json": {"ticket": "garbage", "reward": 0.5}}),
        ("POST", base + "/tell", {"json": {"ticket": ticket[:-4] + "0000", "reward": 0.5}}),  # forged
        ("POST", base + "/tell", {"json": {"ticket": ticket, "reward": 0.5, "extra": 1}}),
        ("POST", base + "/sample", {"json": {"size": 1}}),
        ("POST", base + "/data", {"content": b"action,reward\n0,1\n"}),
        ("GET", "/v1/experiments/not-an-id", {}),
        ("GET", "/v1/experiments/" + "0" * 32, {}),
        ("DELETE", base, {}),
    ]
    for method, path, kwargs in cases:
        _assert_clean_4xx(http.request(method, path, **kwargs))
    assert http.get(base).json()["progress"]["steps_told"] == 0  # nothing refused was counted


@pytest.mark.parametrize("served", ["sqlite"], indirect=True)
@pytest.mark.slow
def test_random_bodies_get_4xx_or_success_never_500(served: Any) -> None:
    server, store = served
    http = client(server, store.alice)
    experiment = create(http, "dp-ebs-elimination", {"n_arms": 3, "horizon": 1000, "epsilon": 1.0})
    paths = ["/v1/experiments", *(f"/v1/experiments/{experiment}/{verb}" for verb in ("tell", "sample", "data"))]

    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), database=None,
              derandomize=True)
    @given(path=st.sampled_from(paths), body=BODIES, raw=st.binary(max_size=64), use_raw=st.booleans())
    def check(path: str, body: Any, raw: bytes, use_raw: bool) -> None:
        response = (http.post(path, content=raw, headers={"Content-Type": "application/json"}) if use_raw
                    else http.post(path, json=body))
        assert response.status_code < 500, (path, body, response.text[:300])
        if response.status_code >= 400:
            _assert_clean_4xx(response)

    check()
