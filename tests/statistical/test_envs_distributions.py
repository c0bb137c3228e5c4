"""Statistical tests: streams and exact sums follow the declared distributions, streams are independent.

Every assertion states its false-failure rate; seeds come from the ``seed`` fixture, so the suite is
deterministic anyway. Each check is paired with a deliberately broken environment that it catches.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from scipy import stats

from dpbandits._core.typing import FloatArray, IntArray
from dpbandits.envs.base import BanditEnvironment, counter_uniforms
from dpbandits.envs.linear import LinearBandit
from dpbandits.envs.mab import BernoulliBandit, BetaBandit, ClippedGaussianBandit, UniformBandit
from dpbandits.envs.registry import make_environment

pytestmark = pytest.mark.statistical

# z threshold: two-sided normal tail P(|Z| > 5.5) ≈ 3.8e-8 per statistic.
Z_LIMIT = 5.5
# chi-square p-value threshold per arm.
P_LIMIT = 1e-6

CASES: list[tuple[str, dict[str, Any]]] = [
    ("bernoulli", {"means": [0.1, 0.5, 0.97]}),
    ("uniform", {"means": [0.5, 0.45, 0.1]}),
    ("beta", {"means": [0.3, 0.6], "concentration": 3.0}),
    ("beta", {"alphas": [0.5, 2.0], "betas": [0.5, 1.0]}),
    ("clipped-gaussian", {"means": [0.2, 0.5, 1.2], "sigma": 0.5, "bounds": [0.0, 1.0]}),
    (
        "linear",
        {"features": [[1.0, 0.0], [0.0, 1.0]], "theta": [0.6, 0.3], "reward": "beta", "concentration": 2.0},
    ),
    ("dp-bai-section5", {}),
]
IDS = [f"{name}-{i}" for i, (name, _) in enumerate(CASES)]


def exact_cdf(env: BanditEnvironment, arm: int, x: FloatArray) -> FloatArray:
    """The exact reward CDF of ``arm``, computed independently of the library with scipy.stats."""
    model = env.arm_model if isinstance(env, LinearBandit) else env
    if isinstance(model, BernoulliBandit):
        return np.where(x < 0, 0.0, np.where(x < 1, 1.0 - model.means[arm], 1.0))
    if isinstance(model, UniformBandit):
        return stats.uniform(0.0, 2.0 * model.means[arm]).cdf(x)
    if isinstance(model, BetaBandit):
        return stats.beta(model.alphas[arm], model.betas[arm]).cdf(x)
    if isinstance(model, ClippedGaussianBandit):
        low, high = model.reward_bounds
        inner = stats.norm(model.locations[arm], model.sigmas[arm]).cdf(x)
        return np.where(x < low, 0.0, np.where(x >= high, 1.0, inner))
    raise AssertionError(f"no reference CDF for {type(model).__name__}")


def chi_square_p_value(
    env: BanditEnvironment, arm: int, values: FloatArray, min_expected: float = 100.0
) -> float:
    """Pearson χ² p-value of ``values`` against the arm's exact law.

    Bins: a fixed grid of 400 cells across the reward bound (plus the atoms at its ends), merged left
    to right until each holds at least ``min_expected`` expected values. The bins do not depend on
    the data, so the χ² law of the statistic holds.
    """
    low, high = env.reward_bounds
    edges = np.concatenate(
        [low + (high - low) * np.linspace(0.0, 1.0, 401)[:-1], [high - 1e-9 * (high - low)]]
    )
    cdf = np.concatenate([[0.0], exact_cdf(env, arm, edges), [1.0]])
    expected = np.diff(cdf) * values.size
    observed = np.bincount(np.searchsorted(edges, values, side="left"), minlength=edges.size + 1)
    assert observed[expected <= 0].sum() == 0, "rewards fell where the exact law puts no mass"
    merged_obs: list[float] = []
    merged_exp: list[float] = []
    acc_obs = acc_exp = 0.0
    for obs, exp in zip(observed, expected, strict=True):
        acc_obs, acc_exp = acc_obs + obs, acc_exp + exp
        if acc_exp >= min_expected:
            merged_obs.append(acc_obs)
            merged_exp.append(acc_exp)
            acc_obs = acc_exp = 0.0
    merged_obs[-1] += acc_obs
    merged_exp[-1] += acc_exp
    assert len(merged_obs) >= 2, "too few bins for a χ² test"
    return float(stats.chisquare(merged_obs, np.array(merged_exp) * values.size / sum(merged_exp)).pvalue)


def moment_z_scores(env: BanditEnvironment, counts: IntArray, sums: FloatArray) -> FloatArray:
    """z-scores of the mean and of the variance of per-(trial, arm) sums against n·μ and n·σ² (CLT)."""
    expected_mean = counts * env.means
    expected_var = counts * env.variances
    deviation_sq = (sums - expected_mean) ** 2
    n_trials = sums.shape[0]
    z = []
    for arm in range(env.n_arms):
        var = expected_var[0, arm]
        if var == 0:
            z.append(0.0 if np.all(sums[:, arm] == expected_mean[:, arm]) else np.inf)
            continue
        z.append(abs(sums[:, arm].mean() - expected_mean[0, arm]) / np.sqrt(var / n_trials))
        spread = deviation_sq[:, arm].std(ddof=1) / np.sqrt(n_trials)
        z.append(abs(deviation_sq[:, arm].mean() - var) / spread)
    return np.array(z)


def _counts(env: BanditEnvironment, n_trials: int) -> IntArray:
    return np.tile(np.arange(env.n_arms) % 6 + 1, (n_trials, 1))


@pytest.mark.parametrize(("name", "params"), CASES, ids=IDS)
def test_stream_rewards_follow_the_exact_law(name: str, params: dict[str, Any], seed: int) -> None:
    # False-failure rate <= n_arms·1e-6 <= 3e-5 (χ² p-value threshold per arm).
    env = make_environment(name, **params)
    n_trials, pulls = 4000, 5
    _, values = env.streams(seed, n_trials).pull_counts(
        np.full((n_trials, env.n_arms), pulls), return_values=True
    )
    per_arm = values.reshape(n_trials, env.n_arms, pulls)
    for arm in range(env.n_arms):
        assert chi_square_p_value(env, arm, per_arm[:, arm].ravel()) > P_LIMIT, f"arm {arm}"


@pytest.mark.parametrize(("name", "params"), CASES, ids=IDS)
def test_sample_sums_have_the_exact_mean_and_variance(name: str, params: dict[str, Any], seed: int) -> None:
    # False-failure rate <= 2·n_arms·4e-8 <= 3e-6 (normal approximation of each statistic, 20 000 trials).
    env = make_environment(name, **params)
    counts = _counts(env, 20_000)
    assert moment_z_scores(env, counts, env.sample_sums(counts, seed)).max() < Z_LIMIT


@pytest.mark.parametrize(("name", "params"), CASES[:3], ids=IDS[:3])
def test_stream_sums_have_the_exact_mean_and_variance(name: str, params: dict[str, Any], seed: int) -> None:
    # False-failure rate <= 2·n_arms·4e-8 <= 3e-7.
    env = make_environment(name, **params)
    counts = _counts(env, 20_000)
    assert moment_z_scores(env, counts, env.streams(seed, 20_000).pull_counts(counts)).max() < Z_LIMIT


def test_bernoulli_sums_are_binomial(seed: int) -> None:
    # False-failure rate 1e-6 (χ² p-value threshold).
    n, p = 12, 0.3
    sums = BernoulliBandit([p]).sample_sums(np.full((20_000, 1), n), seed)[:, 0].astype(np.int64)
    observed = np.bincount(sums, minlength=n + 1)
    expected = stats.binom(n, p).pmf(np.arange(n + 1)) * sums.size
    keep = expected > 5
    pooled_obs = np.append(observed[keep], observed[~keep].sum())
    pooled_exp = np.append(expected[keep], expected[~keep].sum())
    assert stats.chisquare(pooled_obs, pooled_exp).pvalue > P_LIMIT


def _max_abs_correlation_z(table: FloatArray) -> float:
    """Largest |r|·√n over: two arms in a trial, two trials of an arm, consecutive pulls of an arm."""
    pairs = [
        (table[:, 0, :].ravel(), table[:, 1, :].ravel()),  # arm 0 vs arm 1, same trial and pull
        (table[:-1, 0, :].ravel(), table[1:, 0, :].ravel()),  # trial i vs i+1, same arm and pull
        (table[:, 0, :-1].ravel(), table[:, 0, 1:].ravel()),  # pull k vs k+1, same trial and arm
    ]
    return max(abs(np.corrcoef(a, b)[0, 1]) * np.sqrt(a.size) for a, b in pairs)


def test_streams_are_uncorrelated_across_arms_trials_and_pulls(seed: int) -> None:
    # |r|·√n is asymptotically N(0, 1) under independence: false-failure rate <= 3·4e-8.
    env = UniformBandit([0.5, 0.5])
    n_trials, pulls = 5000, 8
    _, values = env.streams(seed, n_trials).pull_counts(np.full((n_trials, 2), pulls), return_values=True)
    assert _max_abs_correlation_z(values.reshape(n_trials, 2, pulls)) < Z_LIMIT


class _GenericPathClippedGaussian(ClippedGaussianBandit):
    """Uses the base class's generic exact sampler: inverse CDF of fresh uniforms, arm by arm."""

    _fill_arm = BanditEnvironment._fill_arm


def test_generic_inverse_cdf_sampler_has_the_exact_mean_and_variance(seed: int) -> None:
    # False-failure rate <= 2·3·4e-8 (normal approximation of each statistic, 20 000 trials).
    env = _GenericPathClippedGaussian([0.2, 0.5, 1.2], 0.5, (0.0, 1.0))
    counts = _counts(env, 20_000)
    assert moment_z_scores(env, counts, env.sample_sums(counts, seed)).max() < Z_LIMIT


# ---------------------------------------------------------------------- negative controls
class _ReusedDrawUniform(UniformBandit):
    """Broken: one uniform per (trial, arm) scaled by n, as if a single draw were reused (variance ×n)."""

    def _sample_sums(self, counts: IntArray, generator: np.random.Generator) -> FloatArray:
        return counts * generator.random(counts.shape) * 2.0 * self.means


class _SkewedUniform(UniformBandit):
    """Broken inverse CDF: 2μ·u^1.2 instead of 2μ·u."""

    def rewards_from_uniforms(self, uniforms: FloatArray, arms: IntArray) -> FloatArray:
        return np.asarray(2.0 * self.means[arms] * uniforms**1.2, dtype=np.float64)


def test_moment_check_catches_a_reused_draw(seed: int) -> None:
    # The variance z-score is about 78 here, so missing the bug has probability far below 1e-9.
    env = _ReusedDrawUniform([0.5, 0.3])
    counts = _counts(env, 20_000)
    assert moment_z_scores(env, counts, env.sample_sums(counts, seed)).max() > Z_LIMIT


def test_law_check_catches_a_skewed_inverse_cdf(seed: int) -> None:
    # p-values near 1e-110 here; missing the bug has probability far below 1e-9.
    env = _SkewedUniform([0.5])
    _, values = env.streams(seed, 4000).pull_counts(np.full((4000, 1), 5), return_values=True)
    assert chi_square_p_value(env, 0, values) < P_LIMIT


def test_correlation_check_catches_colliding_streams(seed: int) -> None:
    # Colliding keys give identical streams: |r|·√n = √n = 200 deterministically.
    env = UniformBandit([0.5, 0.5])
    streams = env.streams(seed, 5000)
    broken_keys = np.array(streams.keys)
    broken_keys[:, 1] = broken_keys[:, 0]  # two arms sharing one key
    values = counter_table(broken_keys, 8)
    assert _max_abs_correlation_z(values) > Z_LIMIT


def counter_table(keys: np.ndarray, pulls: int) -> FloatArray:
    """(trial, arm, pull) table of raw stream uniforms for given keys."""
    return counter_uniforms(keys[:, :, None], np.arange(pulls)[None, None, :])
