"""Adapters for Open Bandit Pipeline's bandit_feedback dictionaries (built by hand: obp is not a dependency)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from dpbandits._core.errors import DataFormatError, InvalidParameterError
from dpbandits.algorithms.offline import KLLinearPolicy
from dpbandits.envs.datasets import action_features
from dpbandits.envs.obp import obp_action_features, obp_logged_bandit, obp_logged_contextual


def _feedback(rng: np.random.Generator, n: int = 60, k: int = 4, d: int = 3) -> dict[str, Any]:
    """A dict with the keys and shapes of OBP's SyntheticBanditDataset.obtain_batch_bandit_feedback()."""
    context = rng.standard_normal((n, d))
    action = rng.integers(0, k, n)
    return {
        "n_rounds": n, "n_actions": k, "context": context, "action_context": np.eye(k, dtype=int),
        "action": action, "position": np.zeros(n, dtype=int), "reward": rng.integers(0, 2, n),
        "expected_reward": rng.random((n, k)), "pscore": np.full(n, 1.0 / k),
    }


def test_bandit_records_and_public_number_of_actions(rng: np.random.Generator) -> None:
    feedback = _feedback(rng)
    feedback["action"] = np.where(feedback["action"] == 3, 0, feedback["action"])  # action 3 never logged
    data = obp_logged_bandit(feedback)
    assert data.n_arms == 4 and data.counts()[3] == 0  # K from n_actions, not from the actions seen
    np.testing.assert_array_equal(data.actions, feedback["action"])
    np.testing.assert_array_equal(data.rewards, feedback["reward"])


def test_position_selects_one_slot(rng: np.random.Generator) -> None:
    feedback = _feedback(rng)
    feedback["position"] = np.arange(60) % 3
    assert obp_logged_bandit(feedback, position=1).n_records == 20
    feedback["position"] = None
    assert obp_logged_bandit(feedback).n_records == 60
    with pytest.raises(DataFormatError, match="position=1 selects a slot, but bandit_feedback\\['position'\\] is missing"):
        obp_logged_bandit(feedback, position=1)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"n_actions": 10**12}, r"bandit_feedback\['n_actions'\] must be an int <= 10000000"),
        ({"action": np.full(60, 4)}, r"bandit_feedback\['action'\]\[0\] must be an integer action in \[0, 4\); got 4"),
        ({"action": np.full(60, 0.5)}, r"\['action'\]\[0\] must be an integer action in \[0, 4\); got 0.5"),
        ({"action": np.zeros(59, dtype=int)}, r"bandit_feedback\['action'\] must have n_rounds = 60 rows; got 59"),
        ({"reward": np.full(60, 2.0)}, r"bandit_feedback\['reward'\]\[0\] must lie in \[0, 1.0\]"),
        ({"reward": np.full(60, np.nan)}, r"bandit_feedback\['reward'\] must be finite"),
        ({"reward": np.array(["1"] * 60)}, r"bandit_feedback\['reward'\] must be a 1-d array of numbers"),
        ({"pscore": np.zeros(60)}, r"bandit_feedback\['pscore'\]\[0\] must lie in \(0, 1\]; got 0.0"),
        ({"n_rounds": -1}, r"bandit_feedback\['n_rounds'\] must be an int >= 0"),
    ],
)
def test_malformed_feedback_is_refused(rng: np.random.Generator, change: dict[str, Any], message: str) -> None:
    feedback = {**_feedback(rng), **change}
    with pytest.raises((DataFormatError, InvalidParameterError), match=message):
        obp_logged_bandit(feedback)


def test_missing_keys_are_named(rng: np.random.Generator) -> None:
    feedback = _feedback(rng)
    del feedback["n_actions"]
    with pytest.raises(DataFormatError, match=r"bandit_feedback\['n_actions'\] is needed"):
        obp_logged_bandit(feedback)
    with pytest.raises(InvalidParameterError, match="bandit_feedback must be a dict; got list"):
        obp_logged_bandit([1, 2])  # type: ignore[arg-type]


def test_contextual_outer_map_is_the_disjoint_model_with_one_hot_actions(rng: np.random.Generator) -> None:
    feedback = _feedback(rng)
    scaled = feedback["context"] / np.linalg.norm(feedback["context"], axis=1).max()  # a public bound, say
    feedback["context"] = scaled
    data = obp_logged_contextual(feedback)
    expected = action_features(scaled, 4)[np.arange(60), feedback["action"]]  # x in the block of action a
    np.testing.assert_allclose(data.features, expected)
    candidates = obp_action_features(feedback, scaled[0])
    np.testing.assert_allclose(candidates, action_features(scaled[:1], 4)[0])
    policy = KLLinearPolicy(eta=0.5, beta0=0.1).fit(data)
    assert policy.probabilities(candidates).shape == (4,)
    concat = obp_logged_contextual(feedback, features="concat")
    np.testing.assert_allclose(concat.features[:, :3], scaled / np.sqrt(2))
    np.testing.assert_allclose(concat.features[:, 3:], np.eye(4)[feedback["action"]] / np.sqrt(2))


def test_contextual_norms_are_checked_or_clipped(rng: np.random.Generator) -> None:
    feedback = _feedback(rng)
    feedback["context"] = feedback["context"] * 10
    with pytest.raises(DataFormatError, match=r"the features of kept record 0 has Euclidean norm .* > 1; scale"):
        obp_logged_contextual(feedback)
    clipped = obp_logged_contextual(feedback, clip=True)
    np.testing.assert_allclose(np.linalg.norm(clipped.features, axis=1), 1.0)
    with pytest.raises(InvalidParameterError, match="features must be one of"):
        obp_logged_contextual(feedback, features="kron")
    del feedback["context"]
    with pytest.raises(DataFormatError, match=r"bandit_feedback\['context'\] is needed"):
        obp_logged_contextual(feedback, clip=True)
