"""Contract suite run over every registered multi-armed and linear environment.

Every environment of kind ``mab`` or ``linear`` in :mod:`dpbandits.envs.registry` must have example
parameters below (a test fails otherwise), and each example must satisfy: means and rewards inside
the declared bound, same seed → same numbers (also across processes), pull-consistency whatever the
pull order, batched pulls equal to single pulls bit for bit, and a JSON description that rebuilds it.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from typing import Any

import numpy as np
import pytest

from dpbandits._core.rng import spawn_generators
from dpbandits.envs.base import BanditEnvironment
from dpbandits.envs.registry import list_environments, make_environment

CONTRACT_KINDS = ("mab", "linear")

EXAMPLES: dict[str, list[dict[str, Any]]] = {
    "bernoulli": [{"means": [0.1, 0.5, 0.8]}],
    "uniform": [{"means": [0.5, 0.45, 0.1]}, {"means": [0.2, 0.3], "reward_bounds": [0.0, 1.0]}],
    "beta": [{"means": [0.3, 0.6], "concentration": 3.0}, {"alphas": [0.5, 2.0], "betas": [0.5, 1.0]}],
    "clipped-gaussian": [
        {"means": [0.2, 0.5, 1.2], "sigma": 0.5, "bounds": [0.0, 1.0]},
        {"means": [0.2, 0.7], "sigma": [0.1, 0.6], "bounds": [-1.0, 1.0], "means_are": "clipped"},
    ],
    "linear": [
        {"features": [[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]], "theta": [0.6, 0.3]},
        {"features": [[1.0, 0.0], [0.0, 1.0]], "theta": [0.6, 0.3], "reward": "bernoulli"},
        {"features": [[1.0, 0.0], [0.0, 1.0]], "theta": [0.6, 0.3], "reward": "beta", "concentration": 2.0},
        {
            "features": [[1.0, 0.0], [0.0, 1.0]],
            "theta": [0.6, 0.3],
            "reward": "clipped-gaussian",
            "sigma": 0.4,
            "reward_bounds": [0.0, 1.0],
        },
    ],
    "dp-bai-section5": [{}],
    "dp-bai-appendix-e": [{"y": 5.0}],
}

CASES = [
    pytest.param(name, params, id=f"{name}-{i}")
    for name, examples in EXAMPLES.items()
    for i, params in enumerate(examples)
]
N_TRIALS = 6


def test_every_registered_bandit_environment_has_examples() -> None:
    registered = {spec.name for spec in list_environments() if spec.kind in CONTRACT_KINDS}
    assert registered == set(EXAMPLES), "add example parameters for new environments to EXAMPLES"


def _build(name: str, params: dict[str, Any]) -> BanditEnvironment:
    env = make_environment(name, **params)
    assert isinstance(env, BanditEnvironment)
    return env


@pytest.mark.parametrize(("name", "params"), CASES)
def test_instance_quantities_are_consistent(name: str, params: dict[str, Any]) -> None:
    env = _build(name, params)
    low, high = env.reward_bounds
    assert env.n_arms >= 1 and env.means.shape == (env.n_arms,)
    assert np.all((env.means >= low) & (env.means <= high))
    assert env.means[env.best_arm] == env.means.max()
    assert np.all(env.gaps >= 0) and env.gaps[env.best_arm] == 0
    # Popoviciu: a variable in [low, high] has variance <= (high − low)²/4.
    assert np.all((env.variances >= 0) & (env.variances <= (high - low) ** 2 / 4 + 1e-12))
    described = env.describe()
    assert json.loads(json.dumps(described)) == described
    assert described["name"] == env.name and described["n_arms"] == env.n_arms


@pytest.mark.parametrize(("name", "params"), CASES)
def test_rewards_and_sums_stay_in_bounds(name: str, params: dict[str, Any], seed: int) -> None:
    env = _build(name, params)
    low, high = env.reward_bounds
    counts = np.tile(np.arange(env.n_arms) % 5 + 3, (N_TRIALS, 1))
    sums, values = env.streams(seed, N_TRIALS).pull_counts(counts, return_values=True)
    assert values.shape == (int(counts.sum()),)
    assert np.all((values >= low) & (values <= high))
    assert np.all((sums >= counts * low - 1e-9) & (sums <= counts * high + 1e-9))
    exact = env.sample_sums(counts, seed)
    assert exact.shape == counts.shape
    assert np.all((exact >= counts * low - 1e-9) & (exact <= counts * high + 1e-9))
    np.testing.assert_array_equal(env.sample_sums(np.zeros_like(counts), seed), np.zeros(counts.shape))


@pytest.mark.parametrize(("name", "params"), CASES)
def test_same_seed_same_numbers(name: str, params: dict[str, Any], seed: int) -> None:
    env = _build(name, params)
    counts = np.full((N_TRIALS, env.n_arms), 4)
    first = env.streams(seed, N_TRIALS).pull_counts(counts, return_values=True)[1]
    again = _build(name, params).streams(seed, N_TRIALS).pull_counts(counts, return_values=True)[1]
    np.testing.assert_array_equal(first, again)
    np.testing.assert_array_equal(env.sample_sums(counts, seed), env.sample_sums(counts, seed))
    other = env.streams(seed + 1, N_TRIALS).pull_counts(counts, return_values=True)[1]
    if np.ptp(first) > 0:  # a non-degenerate environment gives other numbers for another seed
        assert not np.array_equal(first, other)


@pytest.mark.parametrize(("name", "params"), CASES)
def test_pull_consistency_across_pull_orders(name: str, params: dict[str, Any], seed: int) -> None:
    """The k-th pull of arm a in trial i is the same whether arms are pulled in order or interleaved."""
    env = _build(name, params)
    order_rng, _ = spawn_generators(seed, 2)
    n_steps = 5 * env.n_arms
    # Order 1: random interleaving, one pull per trial per step.
    interleaved = env.streams(seed, N_TRIALS)
    table: dict[tuple[int, int], list[float]] = {}
    for _ in range(n_steps):
        arms = order_rng.integers(0, env.n_arms, size=N_TRIALS)
        rewards = interleaved.pull(arms)
        for trial, (arm, reward) in enumerate(zip(arms, rewards, strict=True)):
            table.setdefault((trial, int(arm)), []).append(float(reward))
    # Order 2: every arm's pulls in one batch, arms in reverse order, in two batched calls.
    batched = env.streams(seed, N_TRIALS)
    counts = interleaved.counts.copy()
    first_half = counts // 2
    _, values_a = batched.pull_counts(first_half, return_values=True)
    _, values_b = batched.pull_counts(counts - first_half, return_values=True)
    offsets_a = np.cumsum(first_half.ravel()) - first_half.ravel()
    offsets_b = np.cumsum((counts - first_half).ravel()) - (counts - first_half).ravel()
    for trial in range(N_TRIALS):
        for arm in reversed(range(env.n_arms)):
            cell = trial * env.n_arms + arm
            na, nb = first_half[trial, arm], counts[trial, arm] - first_half[trial, arm]
            got = np.concatenate(
                [
                    values_a[offsets_a[cell] : offsets_a[cell] + na],
                    values_b[offsets_b[cell] : offsets_b[cell] + nb],
                ]
            )
            np.testing.assert_array_equal(got, np.array(table.get((trial, arm), []), dtype=np.float64))
    np.testing.assert_array_equal(batched.counts, interleaved.counts)


@pytest.mark.parametrize(("name", "params"), CASES)
def test_batched_pulls_equal_single_pulls_exactly(name: str, params: dict[str, Any], seed: int) -> None:
    env = _build(name, params)
    pulls_per_arm = 3
    single = env.streams(seed, N_TRIALS)
    by_step = np.array(
        [
            single.pull(np.full(N_TRIALS, arm, dtype=np.int64))
            for arm in range(env.n_arms)
            for _ in range(pulls_per_arm)
        ]
    )  # (arm·pull, trial)
    sums, values = env.streams(seed, N_TRIALS).pull_counts(
        np.full((N_TRIALS, env.n_arms), pulls_per_arm), return_values=True
    )
    np.testing.assert_array_equal(values, by_step.T.ravel())  # row-major (trial, arm, pull)
    np.testing.assert_allclose(
        sums, by_step.T.reshape(N_TRIALS, env.n_arms, pulls_per_arm).sum(axis=2), rtol=1e-13
    )
    np.testing.assert_array_equal(
        env.streams(seed, N_TRIALS).rewards_at(np.arange(N_TRIALS)[:, None], np.arange(env.n_arms), 2),
        by_step[2::pulls_per_arm].T,
    )


def _digest_script() -> str:
    return (
        "import hashlib, json, sys\n"
        "import numpy as np\n"
        "from dpbandits.envs.registry import make_environment\n"
        "cases, seed = json.loads(sys.argv[1]), int(sys.argv[2])\n"
        "h = hashlib.sha256()\n"
        "for name, params in cases:\n"
        "    env = make_environment(name, **params)\n"
        "    counts = np.full((3, env.n_arms), 2)\n"
        "    h.update(env.streams(seed, 3).pull_counts(counts, return_values=True)[1].tobytes())\n"
        "    h.update(env.sample_sums(counts, seed).tobytes())\n"
        "print(h.hexdigest())\n"
    )


def test_same_seed_same_numbers_across_processes(seed: int) -> None:
    cases = [(name, params) for name, examples in EXAMPLES.items() for params in examples]
    digest = hashlib.sha256()
    for name, params in cases:
        env = make_environment(name, **params)
        counts = np.full((3, env.n_arms), 2)
        digest.update(env.streams(seed, 3).pull_counts(counts, return_values=True)[1].tobytes())
        digest.update(env.sample_sums(counts, seed).tobytes())
    result = subprocess.run(
        [sys.executable, "-c", _digest_script(), json.dumps(cases), str(seed)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    assert result.stdout.strip() == digest.hexdigest()
