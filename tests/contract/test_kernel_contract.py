"""Contract suite over every registered algorithm of family ``kernel`` and environment of kind ``kernel``.

Algorithms: each declared metric comes back finite with shape (n_trials,), the same seed gives the
same numbers, another seed other numbers, and private algorithms say they protect one round's context
and reward under joint DP. Environments: |f| <= the RKHS norm, contexts inside [0, 1]^dc, and the
function is fixed by its seed.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from dpbandits.algorithms.registry import list_algorithms
from dpbandits.envs.registry import list_environments, make_environment

KERNEL_ALGORITHMS = [spec for spec in list_algorithms() if spec.family == "kernel"]
SMALL: dict[str, Any] = {"horizon": 40, "grid_points_per_dim": 32, "n_test_contexts": 8, "n_features": 8}
EXTRA: dict[str, dict[str, Any]] = {"cgp-ucb": {"ucb_grid_points_per_dim": 16}}
ENV_EXAMPLES: dict[str, list[dict[str, Any]]] = {
    "kernel-rkhs": [{}, {"kernel": "matern", "nu": 1.5, "context_dim": 2, "rkhs_norm": 0.5, "context_law": "beta"}],
}


def test_every_kernel_environment_has_examples() -> None:
    assert {spec.name for spec in list_environments() if spec.kind == "kernel"} == set(ENV_EXAMPLES)


@pytest.mark.parametrize("spec", KERNEL_ALGORITHMS, ids=lambda s: s.name)
def test_kernel_algorithm_contract(spec, seed) -> None:
    env = make_environment("kernel-rkhs", function_seed=2)
    params = {**SMALL, **EXTRA.get(spec.name, {})}
    out = spec.simulate(env, n_trials=2, rng=np.random.SeedSequence(seed), **params)
    again = spec.simulate(env, n_trials=2, rng=np.random.SeedSequence(seed), **params)
    other = spec.simulate(env, n_trials=2, rng=np.random.SeedSequence(seed + 1), **params)
    assert set(out) == set(spec.metrics)
    for name in spec.metrics:
        assert out[name].shape == (2,) and np.all(np.isfinite(out[name]))
        np.testing.assert_array_equal(out[name], again[name])
    assert not np.array_equal(out["error"], other["error"])
    assert spec.privacy == "none (non-private)" or "joint" in spec.privacy


@pytest.mark.parametrize(
    ("name", "params"), [(n, p) for n, ps in ENV_EXAMPLES.items() for p in ps], ids=lambda v: str(v)
)
def test_kernel_environment_contract(name, params, seed) -> None:
    env = make_environment(name, function_seed=seed % 1000, **params)
    twin = make_environment(name, function_seed=seed % 1000, **params)
    points = np.random.default_rng(seed).random((2000, env.joint_dim))
    np.testing.assert_array_equal(env.f(points), twin.f(points))
    assert np.all(np.abs(env.f(points)) <= env.rkhs_norm * (1 + 1e-12))
    contexts = env.sample_contexts(500, rng=seed)
    assert contexts.shape == (500, env.context_dim) and contexts.min() >= 0 and contexts.max() <= 1
