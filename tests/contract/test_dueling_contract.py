"""Contract suite over every registered dueling algorithm and dueling environment.

Every algorithm of family ``dueling`` must: return each declared metric as finite values of shape
(n_trials,), give the same numbers for the same seed, and give trial k the same numbers whatever
the number of trials (trial streams come from ``SeedSequence.spawn``, which is prefix-stable). Every
environment of kind ``dueling`` must have an example below and satisfy P + Pᵀ = 1, P_ii = ½, and
give the same feedback for the same seed.
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np
import pytest

from dpbandits.algorithms.registry import list_algorithms
from dpbandits.envs.registry import list_environments, make_environment

ENV_EXAMPLES: dict[str, dict[str, Any]] = {
    "dueling-utility": {"features": [[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]], "theta": [0.6, 0.3]},
    "dueling-f1": {},
    "dueling-f2": {},
    "dueling-f3": {},
    "dueling-f4": {"n_arms": 4},
    "dueling-unit-ball": {"theta": [0.6, 0.8], "net": "sphere", "n_points": 8},
}
DUELING = [spec for spec in list_algorithms() if spec.family == "dueling"]


def _params(simulate: Any) -> dict[str, Any]:
    accepted = inspect.signature(simulate).parameters
    params: dict[str, Any] = {"horizon": 400}
    if "epsilon" in accepted:
        params["epsilon"] = 2.0
    if "play_count_scale" in accepted:
        params["play_count_scale"] = 0.001
    return params


def test_every_dueling_environment_has_an_example() -> None:
    registered = {spec.name for spec in list_environments() if spec.kind == "dueling"}
    assert registered == set(ENV_EXAMPLES)


@pytest.mark.parametrize("name", sorted(ENV_EXAMPLES))
def test_dueling_environment_contract(name: str, seed: int) -> None:
    env = make_environment(name, **ENV_EXAMPLES[name])
    p = env.preference_matrix
    np.testing.assert_allclose(p + p.T, 1.0, atol=1e-12)
    np.testing.assert_array_equal(np.diag(p), 0.5)
    first = np.arange(env.n_arms).repeat(env.n_arms)
    second = np.tile(np.arange(env.n_arms), env.n_arms)
    a = env.streams(seed, 2).peek(first, second, trial=1)
    b = env.streams(seed, 2).peek(first, second, trial=1)
    np.testing.assert_array_equal(a, b)
    assert set(np.unique(a)) <= {0, 1}


def test_dueling_family_is_registered() -> None:
    names = {spec.name for spec in DUELING}
    assert {"dp-ebs-elimination", "ebs-elimination", "goptimal-dpdb", "rucb", "interleaved-filter"} <= names


@pytest.mark.parametrize("spec", DUELING, ids=lambda s: s.name)
def test_dueling_algorithm_contract(spec: Any, seed: int) -> None:
    env = make_environment("dueling-f1")
    params = _params(spec.simulate)
    out = spec.simulate(env, n_trials=3, rng=seed, **params)
    again = spec.simulate(env, n_trials=3, rng=seed, **params)
    prefix = spec.simulate(env, n_trials=2, rng=seed, **params)
    for metric in spec.metrics:
        values = np.asarray(out[metric], dtype=float)
        assert values.shape == (3,) and np.all(np.isfinite(values)), metric
        np.testing.assert_array_equal(values, again[metric])
        np.testing.assert_array_equal(values[:2], prefix[metric])
    for metric in spec.proportion_metrics:
        assert set(np.unique(out[metric])) <= {0.0, 1.0}
    assert spec.privacy
