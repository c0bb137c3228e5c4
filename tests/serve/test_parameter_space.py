"""No parameter yields a 500 (issue 25): a property-based test over every kind's parameter space.

Hypothesis draws each kind's parameters with their extremes (tiny and huge ε, horizons, budgets, K,
length scales, budgets of ε), wrong JSON types (booleans and strings in numeric fields) and
malformed feature matrices, creates the experiment on SQLite and on PostgreSQL, then drives its
first asks and tells (or a sample). Every response must be a success or a one-line 4xx: a 500 is a
parameter that passed validation and then failed. The fast test keeps K and the set-up small enough
for CI; the slow one (``-m slow``) adds K = 1000 and USCA, whose kernel set-up takes seconds.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from servetools import Store

from dpbandits.serve.app import create_app
from dpbandits.serve.kinds import list_kinds
from dpbandits.serve.storage import make_engine
from dpbandits.serve.testing import feedback_for

with warnings.catch_warnings():  # starlette asks for httpx2, which is not packaged here: httpx works
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient

EPSILONS = [5e-324, 1e-320, 1e-300, 1e-16, 1e-12, 2e-6, 1e-5, 709.0, 800.0, 1e300, 1.7e308]
WRONG = st.sampled_from([True, False, "0.5", "1", None, [], {}, -1, 0])


def _number(valid: list[Any], extremes: list[Any]) -> st.SearchStrategy[Any]:
    """Mostly (85%) a usual value, else an extreme, any float or int, or a wrong JSON type."""
    unusual = st.one_of(st.sampled_from(extremes), st.sampled_from(extremes),
                        st.floats(allow_nan=False, allow_infinity=False), st.integers(-2**64, 2**64), WRONG)
    return st.integers(0, 19).flatmap(lambda r: st.sampled_from(valid) if r < 17 else unusual)


def _features(max_arms: int) -> st.SearchStrategy[Any]:
    usual = st.sampled_from([0.6, 1.0, -1.0, 0.0, 0.8, 0.25, 2.0])
    extreme = st.sampled_from([1e-6, -1e-6, 1e6, 1e-7, 1e-320, 1e7, 1e308, -1e308])
    coordinate = st.integers(0, 19).flatmap(lambda r: usual if r < 18 else extreme)

    def matrix(dim: int) -> st.SearchStrategy[Any]:
        return st.lists(st.lists(coordinate, min_size=dim, max_size=dim), min_size=3, max_size=max_arms)

    ragged = st.lists(st.lists(coordinate, min_size=0, max_size=3), min_size=0, max_size=4)
    rows = st.integers(2, 3).flatmap(matrix)
    return st.integers(0, 9).flatmap(lambda r: rows if r < 8 else st.one_of(ragged, WRONG))


def _params(kind: str, *, large: bool) -> st.SearchStrategy[dict[str, Any]]:
    arms = _number([3, 2, 5, 17], [0, 1, 1001, 2**63] + ([1000] if large else []))
    steps = _number([300, 60, 1, 2, 3], [0, 10**7 + 1, 2**63] + ([10**7] if large else [10**5]))
    epsilon = _number([0.01, 0.5, 1.0, 10.0], EPSILONS)
    if kind in ("dp-bai", "dp-bai-gauss", "baseline-bai", "dp-od"):
        fields: dict[str, Any] = {"budget": steps, "epsilon": epsilon, "clip_rewards": st.one_of(st.booleans(), WRONG)}
        if kind == "dp-bai-gauss":
            fields["delta"] = _number([1e-5, 0.01, 0.5], [1e-300, 1e-12, 0.999999, 1.0])
        arms_field = st.one_of(st.fixed_dictionaries({"n_arms": arms}),
                               st.fixed_dictionaries({"features": _features(1000 if large else 12)}))
        return st.tuples(st.fixed_dictionaries(fields), arms_field).map(lambda pair: {**pair[0], **pair[1]})
    if kind in ("dp-ebs-elimination", "ldp-ebs-elimination"):
        return st.fixed_dictionaries({"n_arms": arms, "horizon": steps, "epsilon": epsilon})
    if kind == "goptimal-dpdb":
        return st.fixed_dictionaries({"features": _features(1000 if large else 12), "horizon": steps,
                                      "epsilon": epsilon})
    if kind == "usca":
        return st.fixed_dictionaries({
            "horizon": _number([5, 1, 2], [0, 100_001, 1000, 100_000]), "epsilon": epsilon,
            "reward_bound": _number([1.0, 2.0], [1e-300, 1e-6, 1e6, 1e300]),
        }, optional={
            "kernel": st.sampled_from(["se", "matern", "rbf", ""]),
            "length_scale": _number([0.2, 0.5], [1e-300, 1e-3, 0.0099, 0.01, 1e3, 1e300]),
            "action_dim": _number([1, 2], [0, 3, 4]), "context_dim": _number([1, 2], [0, 3, 4]),
            "clip": st.one_of(st.booleans(), WRONG)})
    assert kind == "kl-mab", f"no strategy for the new kind {kind!r}: add one"
    return st.fixed_dictionaries({
        "n_arms": arms, "eta": _number([0.5, 1.0, 5.0], [1e-320, 1e-300, 1e-6, 1e300]),
        "min_count": _number([10, 2, 50], [0, 1, 2**63]),
    }, optional={"beta0": _number([0.0, 1.0], [1e300]), "reward_bound": _number([1.0], [1e-300, 1e300])})


def _requests(large: bool) -> st.SearchStrategy[tuple[str, dict[str, Any], Any]]:
    kinds = [k.name for k in list_kinds() if large or k.name != "usca"]
    budget = _number([1e3, 10.0, None], [1e-320, 1e-3, 0.1, 1e308])
    return st.sampled_from(kinds).flatmap(lambda kind: st.tuples(st.just(kind), _params(kind, large=large), budget))


def _check(http: TestClient, kind: str, params: dict[str, Any], epsilon_budget: Any) -> bool:
    """Create and drive one experiment; whether it was created."""
    body = {"kind": kind, "params": params, "epsilon_budget": epsilon_budget, "insecure_seed": 7}
    created = http.post("/v1/experiments", json=body)
    assert created.status_code < 500, (kind, params, created.text[:300])
    if created.status_code != 201:
        assert created.status_code in (400, 409, 422) and created.json()["error"]["message"]
        return False
    experiment = created.json()["id"]
    for _ in range(3):
        handed = http.post(f"/v1/experiments/{experiment}/ask")
        assert handed.status_code < 500, (kind, params, handed.text[:300])
        if handed.status_code != 200:
            break
        ticket = handed.json()
        action = {k: v for k, v in ticket.items() if k in ("arm", "pair")}
        feedback = (feedback_for(ticket["step"], action) if action
                    else {"context": [0.5] * int(params.get("context_dim", 1)), "reward": 0.0})
        told = http.post(f"/v1/experiments/{experiment}/tell", json={"ticket": ticket["ticket"], **feedback})
        assert told.status_code < 500, (kind, params, told.text[:300])
    for path in ("", "/ledger"):
        assert http.get(f"/v1/experiments/{experiment}{path}").status_code == 200
    sampled = http.post(f"/v1/experiments/{experiment}/sample", json={"size": 1, "context": [0.5]})
    assert sampled.status_code < 500, (kind, params, sampled.text[:300])
    return True


@pytest.fixture
def api(store: Store) -> Iterator[TestClient]:
    engine = make_engine(store.db)
    with TestClient(create_app(engine, allow_insecure_seeded_noise=True), raise_server_exceptions=False,
                    headers={"Authorization": f"Bearer {store.alice}"}) as http:
        yield http
    engine.dispose()


def _run(http: TestClient, *, large: bool, examples: int) -> None:
    created: list[str] = []

    @settings(max_examples=examples, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(_requests(large))
    def check(request: tuple[str, dict[str, Any], Any]) -> None:
        if _check(http, *request):
            created.append(request[0])

    check()
    assert len(set(created)) >= 4, created  # the run explored accepted parameters too, not only refusals


@pytest.mark.slow
def test_no_parameter_of_any_kind_yields_a_500(api: TestClient) -> None:
    _run(api, large=False, examples=30)


@pytest.mark.slow
def test_no_parameter_yields_a_500_with_large_arms_and_usca(api: TestClient) -> None:
    _run(api, large=True, examples=60)
