"""Unit tests of linear bandit instances and the DP-BAI paper's instances."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dpbandits._core.errors import InvalidParameterError, PaperVariantWarning
from dpbandits._core.rng import as_generator
from dpbandits.envs.linear import LinearBandit, dp_bai_instance, dp_bai_two_arm_instance
from dpbandits.envs.registry import make_environment

FEATURES = [[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]]
THETA = [0.6, 0.3]


@pytest.mark.parametrize(
    ("reward", "options"),
    [
        ("uniform", {}),
        ("uniform", {"reward_bounds": (0.0, 1.5)}),
        ("bernoulli", {}),
        ("beta", {"concentration": 5.0}),
        ("clipped-gaussian", {"sigma": 0.3, "reward_bounds": (0.0, 1.0)}),
    ],
)
def test_linear_means_are_features_times_theta(reward: str, options: dict[str, object]) -> None:
    env = LinearBandit(FEATURES, THETA, reward, **options)  # type: ignore[arg-type]
    np.testing.assert_array_equal(env.means, np.array(FEATURES) @ np.array(THETA))
    np.testing.assert_allclose(env.arm_model.means, env.means, atol=1e-12)
    assert env.dim == 2 and env.n_arms == 3 and env.best_arm == 0
    assert env.kind == "linear"
    described = env.describe()
    assert json.loads(json.dumps(described)) == described
    rebuilt = make_environment("linear", **described["params"])
    np.testing.assert_array_equal(rebuilt.means, env.means)
    assert rebuilt.reward_bounds == env.reward_bounds


def test_linear_reward_bounds_follow_the_family() -> None:
    assert LinearBandit(FEATURES, THETA).reward_bounds == (0.0, 1.2)
    assert LinearBandit(FEATURES, THETA, "bernoulli").reward_bounds == (0.0, 1.0)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"features": [1.0, 2.0], "theta": [1.0]}, r"features must have ndim in \[2\]"),
        ({"features": FEATURES, "theta": [0.1, 0.2, 0.3]}, r"theta must have shape \(2,\)"),
        ({"features": FEATURES, "theta": THETA, "reward": "poisson"}, "reward must be one of"),
        (
            {"features": FEATURES, "theta": [-0.6, 0.3]},
            r"linear means μ = features @ theta: means must be >= 0",
        ),
        ({"features": FEATURES, "theta": [1.6, 0.3], "reward": "bernoulli"}, "linear means .* reward bounds"),
        ({"features": FEATURES, "theta": THETA, "reward": "beta"}, "concentration must be given"),
        (
            {"features": FEATURES, "theta": THETA, "sigma": 0.1},
            "sigma applies to reward='clipped-gaussian' only",
        ),
        (
            {"features": FEATURES, "theta": THETA, "reward": "clipped-gaussian", "sigma": 0.1},
            "reward_bounds must be",
        ),
        (
            {"features": FEATURES, "theta": THETA, "reward": "bernoulli", "reward_bounds": (0.0, 2.0)},
            r"reward_bounds must be \(0, 1\)",
        ),
    ],
)
def test_linear_bad_parameters(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(InvalidParameterError, match=match):
        LinearBandit(**kwargs)  # type: ignore[arg-type]


def test_dp_bai_section5_instance_follows_the_spec() -> None:
    env = dp_bai_instance()
    assert (env.n_arms, env.dim, env.best_arm) == (30, 2, 0)
    assert env.reward_bounds == (0.0, 1.0)
    np.testing.assert_array_equal(env.features[:3], [[0.0, 1.0], [0.0, 0.9], [10.0, 0.0]])
    np.testing.assert_array_equal(env.features[3:, 0], np.ones(27))
    # ω = np.random.default_rng(0).uniform(0, 0.8, 27)
    np.testing.assert_array_equal(env.features[3:, 1], as_generator(0).uniform(0.0, 0.8, 27))
    np.testing.assert_allclose(env.means[:3], [0.5, 0.45, 0.45], rtol=1e-15)
    np.testing.assert_allclose(env.means[3:], 0.045 + env.features[3:, 1] / 2, rtol=1e-15)
    # nearest competitor among arms 4..30 has μ = 0.44388 (gap 0.05612) for ω seed 0
    assert env.means[3:].max() == pytest.approx(0.44388, abs=5e-6)
    assert env.gaps[1:].min() == pytest.approx(0.05, abs=1e-12)
    assert 2 * env.means.max() <= 1.0
    assert env.describe()["origin"] == {"instance": "dp-bai-section5", "n_arms": 30, "omega_seed": 0}


def test_dp_bai_section5_instance_options() -> None:
    small = dp_bai_instance(5, omega=[0.1, 0.8])
    np.testing.assert_allclose(small.means[3:], [0.095, 0.445])
    assert dp_bai_instance(3).n_arms == 3
    assert not np.array_equal(dp_bai_instance(omega_seed=1).means, dp_bai_instance().means)
    with pytest.raises(InvalidParameterError, match=r"omega must lie in \[0, 0.8\]"):
        dp_bai_instance(4, omega=[0.9])
    with pytest.raises(InvalidParameterError, match=r"omega must have shape \(1,\)"):
        dp_bai_instance(4, omega=[0.1, 0.2])
    with pytest.raises(InvalidParameterError, match="n_arms must be an int >= 3"):
        dp_bai_instance(2)


def test_dp_bai_two_arm_instance_variants() -> None:
    corrected = dp_bai_two_arm_instance(5.0)
    np.testing.assert_allclose(corrected.means, [0.5, 0.45])
    np.testing.assert_array_equal(corrected.features, [[1.0, 0.0], [0.0, 5.0]])
    assert corrected.reward_bounds == (0.0, 1.0)
    with pytest.warns(PaperVariantWarning, match=r"Uniform\[0, 1.1\]"):
        paper = dp_bai_two_arm_instance(5.0, variant="paper")
    np.testing.assert_allclose(paper.means, [0.55, 0.5])
    assert paper.reward_bounds == pytest.approx((0.0, 1.1))
    assert paper.describe()["origin"]["variant"] == "paper"
    with pytest.raises(InvalidParameterError, match="variant must be one of"):
        dp_bai_two_arm_instance(2.0, variant="literal")
    with pytest.raises(InvalidParameterError, match=r"gap must lie in \(0, 0.5\)"):
        dp_bai_two_arm_instance(2.0, gap=0.5)
    with pytest.raises(InvalidParameterError, match="y must be a finite float > 0"):
        dp_bai_two_arm_instance(0.0)


def test_registry_builds_the_paper_instances() -> None:
    env = make_environment("dp-bai-section5")
    np.testing.assert_array_equal(env.means, dp_bai_instance().means)
    two = make_environment("dp-bai-appendix-e", y=10.0)
    np.testing.assert_allclose(two.means, [0.5, 0.45])
