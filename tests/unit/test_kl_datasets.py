"""scikit-learn bundled classification sets as logged bandit data for the linear KL policy."""

from __future__ import annotations

import numpy as np
import pytest

from dpbandits.algorithms.offline import KLLinearPolicy
from dpbandits.envs.datasets import DATASETS, action_features, load_supervised_bandit


@pytest.mark.parametrize("name", DATASETS)
def test_conversion_is_valid_logged_data(name: str, seed: int) -> None:
    data = load_supervised_bandit(name, rng=seed)
    phi = data.logged.features
    assert np.all(np.linalg.norm(phi, axis=1) <= 1 + 1e-12)
    assert set(np.unique(data.logged.rewards)) <= {0.0, 1.0}
    # the non-zero block of φ(x_i, a_i) is the block of the logged action
    p = phi.shape[1] // data.n_actions
    blocks = np.abs(phi.reshape(phi.shape[0], data.n_actions, p)).sum(axis=2)
    nonzero = blocks.max(axis=1) > 0
    np.testing.assert_array_equal(blocks.argmax(axis=1)[nonzero], data.logged_actions[nonzero])
    np.testing.assert_allclose(data.propensities, 1.0 / data.n_actions)


def test_noisy_oracle_logging_matches_its_stated_rate(seed: int) -> None:
    """Binomial check: |mean − p| < 5 sd, false-failure rate < 1e-6."""
    data = load_supervised_bandit("digits", logging="noisy-oracle", correct_probability=0.7, rng=seed)
    rate = data.logged.rewards.mean()
    sd = np.sqrt(0.7 * 0.3 / data.logged.rewards.size)
    assert abs(rate - 0.7) < 5 * sd


def test_linear_kl_policy_learns_iris_beyond_chance(seed: int) -> None:
    data = load_supervised_bandit("iris", logging="noisy-oracle", correct_probability=0.6, rng=seed)
    policy = KLLinearPolicy(eta=0.02, beta0=0.1, ridge=2.0).fit(data.logged)
    accuracy = data.expected_accuracy(policy.batch_probabilities)
    one_by_one = np.mean([policy.probabilities(data.candidate_features(i))[data.public_labels[i]]
                          for i in range(data.public_labels.size)])
    assert accuracy == pytest.approx(one_by_one, rel=1e-12)
    assert accuracy > 0.6  # chance is 1/3; deterministic given the seed
    guarantee = policy.guarantee(data.candidate_features(0))
    assert guarantee.per_instance and np.isfinite(guarantee.epsilon)


def test_action_features_blocks() -> None:
    out = action_features(np.array([[0.6, 0.8]]), 2)
    np.testing.assert_array_equal(out[0], [[0.6, 0.8, 0, 0], [0, 0, 0.6, 0.8]])
