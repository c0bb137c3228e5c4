"""Exact privacy audit of USCA (spec E4): output distributions on the grid for t-neighbours.

DP must hold for every outcome of the algorithm's coins, so the audit conditions on them (the
approximating set and the learning actions) and compares the exact output distributions on the
grid for neighbouring datasets that differ in one round's (context, reward). Pairs: the reward flip
at the point of largest σ̄², context changes to a far context with and without a flip, the
certified argmax of σ̄² over W, and random pairs. A broken variant (Δ underestimated ×10) must fail.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pytest

from dpbandits.algorithms.kernel.usca import USCA
from dpbandits.audit.exact import audit_exact
from dpbandits.envs.kernel import KernelBanditEnvironment, joint_points

HORIZON = 100
REWARD_BOUND = 1.5
ENV = KernelBanditEnvironment(function_seed=4)


class Dataset(NamedTuple):
    actions: np.ndarray  # the learning actions (public coins, shared by both neighbours)
    contexts: np.ndarray
    rewards: np.ndarray
    next_context: np.ndarray


def log_distribution(agent: USCA):
    def distribution(data: Dataset) -> np.ndarray:
        agent.learning_actions = data.actions
        agent.reset_data()
        agent.observe(data.contexts, data.rewards)
        return agent.mechanism_log_probabilities(data.next_context)[0]

    return distribution


def surrogate_mean(agent: USCA, data: Dataset) -> np.ndarray:
    agent.learning_actions = data.actions
    agent.reset_data()
    agent.observe(data.contexts, data.rewards)
    return agent._surrogate_mean(joint_points(agent.grid, data.next_context[None, :]))


def neighbour_pairs(agent: USCA, rng: np.random.Generator, n_random: int) -> list[tuple[Dataset, Dataset]]:
    contexts = ENV.sample_contexts(HORIZON, rng)
    rewards = np.clip(ENV.sample_rewards(agent.learning_actions, contexts, rng), -REWARD_BOUND, REWARD_BOUND)
    next_context = ENV.sample_contexts(1, rng)[0]
    variances = agent.surrogate.variance(joint_points(agent.grid, next_context[None, :]))
    x_star = agent.grid[int(np.argmax(variances))]
    far = 1.0 - np.round(next_context)

    def pair(t, x_t, c, y, c_prime, y_prime, c_next):
        actions = agent.learning_actions.copy()
        if x_t is not None:
            actions[t] = x_t
        first_c, first_y = contexts.copy(), rewards.copy()
        second_c, second_y = contexts.copy(), rewards.copy()
        first_c[t], first_y[t], second_c[t], second_y[t] = c, y, c_prime, y_prime
        return (Dataset(actions, first_c, first_y, c_next), Dataset(actions, second_c, second_y, c_next))

    b = REWARD_BOUND
    t0 = int(rng.integers(HORIZON))
    corner = agent.sup.argmax
    pairs = [
        pair(t0, x_star, next_context, b, next_context, -b, next_context),  # (i) reward flip at x*
        pair(t0, x_star, next_context, b, far, b, next_context),  # (ii) context change
        pair(t0, x_star, next_context, b, far, -b, next_context),  # (iii) far context + flip
        pair(t0, corner[:1], corner[1:], b, corner[1:], -b, corner[1:]),  # (v) certified argmax of σ̄²
    ]
    for _ in range(n_random):  # (iv) random in-domain changes of one round
        t = int(rng.integers(HORIZON))
        pairs.append(pair(t, None, contexts[t], rewards[t], rng.random(1), rng.uniform(-b, b), next_context))
    return pairs


@pytest.fixture(scope="module")
def exact_agent() -> USCA:
    return USCA(horizon=HORIZON, epsilon=1.0, reward_bound=REWARD_BOUND, kernel=ENV.kernel,
                context_generator=ENV.sample_contexts, backend="kernel", grid_points_per_dim=256,
                rng=np.random.SeedSequence(20261122))


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 4.0])
def test_usca_output_distribution_is_epsilon_indistinguishable(exact_agent, epsilon, rng):
    exact_agent.epsilon = epsilon
    pairs = neighbour_pairs(exact_agent, rng, n_random=40)
    report = audit_exact(log_distribution(exact_agent), pairs, epsilon, log=True)
    assert report.passed, str(report)
    assert report.max_log_ratio > 0.05 * epsilon  # the pairs do move the output distribution


def test_realised_sensitivity_is_below_delta(exact_agent, rng):
    """E0 (d): max over the grid of |μ̄_T − μ̄'_T| <= Δ for random and adversarial neighbours."""
    worst = 0.0
    for first, second in neighbour_pairs(exact_agent, rng, n_random=20):
        gap = np.max(np.abs(surrogate_mean(exact_agent, first) - surrogate_mean(exact_agent, second)))
        worst = max(worst, float(gap))
    assert 0.0 < worst <= exact_agent.sensitivity


def test_broken_variant_with_underestimated_sensitivity_is_caught(exact_agent, rng):
    exact_agent.epsilon = 1.0
    honest = exact_agent.sensitivity
    pairs = neighbour_pairs(exact_agent, rng, n_random=5)
    try:
        exact_agent.sensitivity = honest / 10.0  # deliberately broken: Δ underestimated tenfold
        report = audit_exact(log_distribution(exact_agent), pairs, 1.0, log=True)
    finally:
        exact_agent.sensitivity = honest
    assert not report.passed and report.max_log_ratio > 1.0


def test_feature_backend_is_private_for_its_own_kernel(rng, seed):
    """The proof is algebraic, so the feature backend is exactly ε-JDP for k_D (spec §4.2)."""
    agent = USCA(horizon=HORIZON, epsilon=1.0, reward_bound=REWARD_BOUND, kernel=ENV.kernel,
                 context_generator=ENV.sample_contexts, n_features=12, grid_points_per_dim=256, rng=seed)
    pairs = neighbour_pairs(agent, rng, n_random=20)
    assert audit_exact(log_distribution(agent), pairs, 1.0, log=True).passed
    agent.sensitivity /= 10.0
    assert not audit_exact(log_distribution(agent), pairs, 1.0, log=True).passed


def test_refined_sensitivity_is_private_and_not_larger(rng, seed):
    """The flagged refined sensitivity Δ_ref(c) <= Δ keeps the exact audit passing; Δ_ref/10 fails."""
    agent = USCA(horizon=HORIZON, epsilon=1.0, reward_bound=REWARD_BOUND, kernel=ENV.kernel,
                 context_generator=ENV.sample_contexts, n_features=12, grid_points_per_dim=256, rng=seed,
                 sensitivity_method="refined")
    pairs = neighbour_pairs(agent, rng, n_random=20)
    assert agent.context_sensitivity(pairs[0][0].next_context) <= agent.sensitivity
    assert "refined sensitivity" in agent.deviations[0]
    assert audit_exact(log_distribution(agent), pairs, 1.0, log=True).passed
    agent.sensitivity /= 10.0  # caps Δ_ref(c) at Δ/10: deliberately broken
    assert not audit_exact(log_distribution(agent), pairs, 1.0, log=True).passed
