"""Scopes of the KL accountants (per instance vs a declared public domain) and input validation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpbandits._core.errors import InvalidParameterError
from dpbandits.algorithms.offline import KLLinearPolicy, KLMABPolicy, KLRLHFPolicy
from dpbandits.algorithms.offline import accountants as acc
from dpbandits.envs.offline import simulate_logged_bandit, simulate_logged_contextual, simulate_preferences
from dpbandits.privacy.guarantees import PER_INSTANCE_NOTE, PureDP

ACTIONS = np.array([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]])


@pytest.mark.parametrize(
    ("counts", "sums", "message"),
    [
        ([3, 2], [3.5, 1.0], r"reward_sums must lie in \[0, N\(a\)\*R\] = \[0, 3.0\] for arm 0 .*got S\(0\) = 3.5"),
        ([3, 2], [-0.1, 1.0], r"got S\(0\) = -0.1"),
        ([0, 2], [0.5, 1.0], r"for arm 0 \(N = 0.*got S\(0\) = 0.5"),
        ([2.5, 2], [1.0, 1.0], r"counts must be non-negative integers; got N\(0\) = 2.5"),
        ([-1, 2], [0.0, 1.0], r"got N\(0\) = -1"),
        ([3, 2, 1], [1.0, 1.0, 0.0], r"counts must have shape \(2,\)"),
        ([3, 2], [1.0], r"reward_sums must have shape \(2,\)"),
        ([3, 2], [1.0, np.nan], r"got S\(1\) = nan"),
        ([3, 2], ["a", "b"], "reward_sums must be numeric"),
    ],
)
def test_fit_statistics_refuses_impossible_statistics(counts: list, sums: list, message: str) -> None:
    """Regression (issue 12, defect 6): these were accepted (and counts silently truncated)."""
    with pytest.raises(InvalidParameterError, match=message):
        KLMABPolicy(2, eta=1.0).fit_statistics(counts, sums)


def test_fit_statistics_accepts_possible_statistics_and_matches_fit() -> None:
    actions, rewards = [0, 0, 0, 1, 1], [0.1, 0.2, 0.7, 1.0, 1.0]
    by_data = KLMABPolicy(2, eta=0.3, beta0=0.2).fit(actions, rewards)
    by_stats = KLMABPolicy(2, eta=0.3, beta0=0.2).fit_statistics(np.array([3.0, 2.0]), [1.0, 2.0])
    np.testing.assert_allclose(by_stats.log_probabilities_, by_data.log_probabilities_, rtol=1e-15)
    assert by_stats.counts_.dtype == np.int64
    # per-arm reward extremes: observed with data, the worst consistent ones from statistics
    np.testing.assert_allclose(by_data.reward_minima_, [0.1, 1.0])
    np.testing.assert_allclose(by_stats.reward_minima_, [0.0, 1.0])
    np.testing.assert_allclose(by_stats.reward_maxima_, [1.0, 1.0])


def test_printed_per_instance_guarantees_say_they_are_not_worst_case(rng: np.random.Generator) -> None:
    data = simulate_logged_bandit(np.array([0.2, 0.8]), 100, rng=rng)
    policy = KLMABPolicy(2, eta=0.5, min_count=50).fit(data)
    for guarantee in (policy.guarantee(), policy.guarantee(variant="tight"), policy.guarantee(kind="approx", k=2),
                      acc.repeated_sampling(policy.guarantee(), 3), acc.inexact_policy(policy.guarantee(), 0.1)):
        assert guarantee.per_instance and "NOT a worst-case DP guarantee" in str(guarantee)
        assert guarantee.to_dict()["scope"] == PER_INSTANCE_NOTE
    domain = policy.guarantee(scope="domain")
    assert not domain.per_instance and "declared domain: N(a) >= min_count = 50" in str(domain)
    assert "NOT a worst-case" not in str(domain)


def test_mab_domain_scope(rng: np.random.Generator) -> None:
    data = simulate_logged_bandit(np.array([0.2, 0.5, 0.8]), 300, rng=rng)  # 100 per arm
    with pytest.raises(InvalidParameterError, match="min_count"):
        KLMABPolicy(3, eta=0.5).fit(data).guarantee(scope="domain")
    with pytest.raises(InvalidParameterError, match=r"min_count = 101 for every arm with pi0\(a\) > 0; this dataset does not"):
        KLMABPolicy(3, eta=0.5, min_count=101).fit(data)
    policy = KLMABPolicy(3, eta=0.5, beta0=1.0, min_count=60).fit(data)
    tight = policy.guarantee(scope="domain", variant="tight")
    theorem = policy.guarantee(scope="domain")
    assert tight.epsilon == pytest.approx((1 / 61 + (1 / math.sqrt(60) - 1 / math.sqrt(61))) / 0.5, rel=1e-12)
    assert theorem.epsilon == pytest.approx(acc.theorem1_pure_epsilon(60, reward_bound=1, beta0=1, eta=0.5))
    assert 3.5 < theorem.epsilon / tight.epsilon < 4.5  # what the exact domain sensitivity buys
    # the domain guarantee does not depend on the data, only on the public floor
    other = KLMABPolicy(3, eta=0.5, beta0=1.0, min_count=60).fit(simulate_logged_bandit(
        np.array([0.9, 0.1, 0.5]), 600, rng=rng))
    assert other.guarantee(scope="domain", variant="tight").epsilon == tight.epsilon
    assert policy.guarantee().epsilon < theorem.epsilon  # the per-instance N_min = 100 > 60
    with pytest.raises(InvalidParameterError, match="scope='domain' gives pure guarantees only"):
        policy.guarantee(kind="approx", k=2, scope="domain")
    with pytest.raises(InvalidParameterError, match="scope must be one of"):
        policy.guarantee(scope="global")
    # a floor of 1 is a valid domain (pairs inside it never empty an arm); Theorem 1 needs 2
    low = KLMABPolicy(3, eta=0.5, min_count=1).fit(data)
    assert math.isfinite(low.guarantee(scope="domain", variant="tight").epsilon)
    assert low.guarantee(scope="domain").epsilon == math.inf


def test_mab_tight_variant_refuses_approx_and_is_infinite_on_an_uncovered_arm() -> None:
    policy = KLMABPolicy(3, eta=0.5).fit([0, 0, 1, 1], [1.0, 0.0, 0.5, 0.5])
    g = policy.guarantee(variant="tight")
    assert g.epsilon == math.inf and "arm 2, which has no data" in g.reason
    single = KLMABPolicy(2, eta=0.5).fit([0, 0, 1], [1.0, 0.0, 0.5])
    assert "remove the only record of arm 1" in single.guarantee(variant="tight").reason
    with pytest.raises(InvalidParameterError, match="variant='tight' is available for kind='pure' only"):
        policy.guarantee(kind="approx", variant="tight", k=2)
    with pytest.raises(InvalidParameterError, match="variant='refined' applies to the linear and RLHF policies"):
        policy.guarantee(variant="refined")  # the MAB policy's 'tight' is already its exact loss


def test_linear_domain_scope(rng: np.random.Generator) -> None:
    data = simulate_logged_contextual(np.array([0.5, 0.5]), 200, rng=rng)
    with pytest.raises(InvalidParameterError, match="min_eigenvalue"):
        KLLinearPolicy(eta=0.1).fit(data).guarantee(ACTIONS, scope="domain")
    with pytest.raises(InvalidParameterError, match="n <= max_records = 100; this dataset does not"):
        KLLinearPolicy(eta=0.1, min_eigenvalue=20.0, max_records=100).fit(data)
    with pytest.raises(InvalidParameterError, match="lambda_min"):
        KLLinearPolicy(eta=0.1, min_eigenvalue=1e4, max_records=500).fit(data)
    with pytest.raises(InvalidParameterError, match="min_eigenvalue must lie in"):
        KLLinearPolicy(eta=0.1, min_eigenvalue=1.0)
    policy = KLLinearPolicy(eta=0.1, beta0=0.5, min_eigenvalue=40.0, max_records=500).fit(data)
    domain = policy.guarantee(ACTIONS, scope="domain")
    expected = acc.theorem2_pure_epsilon(40.0, n_records=500, dimension=2, reward_bound=1.0, beta0=0.5, eta=0.1)
    assert domain.epsilon == pytest.approx(expected) and not domain.per_instance
    assert domain.epsilon >= policy.guarantee(ACTIONS).epsilon  # the instance is inside the domain


def test_rlhf_label_domain_scope_depends_on_public_features_only(rng: np.random.Generator) -> None:
    prefs = simulate_preferences(np.array([0.05, 0.02]), 300, rng=rng)
    policy = KLRLHFPolicy(eta=1.0, norm_bound=0.1).fit(prefs)
    flipped = KLRLHFPolicy(eta=1.0, norm_bound=0.1).fit(prefs.feature_differences, 1.0 - prefs.labels)
    for variant in ("corrected", "refined"):
        a = policy.guarantee(ACTIONS, variant=variant, scope="domain")
        b = flipped.guarantee(ACTIONS, variant=variant, scope="domain")
        assert a.epsilon == b.epsilon and not a.per_instance and "every labelling" in str(a)
        assert a.epsilon >= policy.guarantee(ACTIONS, variant=variant).epsilon  # the tolerance >= the certificate
    with pytest.raises(InvalidParameterError, match="variant='tight' is the certified per-instance loss"):
        policy.guarantee(ACTIONS, variant="tight", scope="domain")  # per instance only: not within a factor over a domain
    with pytest.raises(InvalidParameterError, match="min_eigenvalue"):
        policy.guarantee(ACTIONS, neighbouring="add_remove", scope="domain")
    floor = 0.9 * policy.lambda_min_
    bounded = KLRLHFPolicy(eta=1.0, norm_bound=0.1, min_eigenvalue=floor).fit(prefs)
    add_remove = bounded.guarantee(ACTIONS, neighbouring="add_remove", scope="domain")
    exact = acc.theorem4_add_remove_epsilon(floor, ridge=1.0, norm_bound=0.1, beta0=1.0, eta=1.0)
    assert exact < add_remove.epsilon < exact * (1 + 1e-3)  # plus the solver tolerance at both sides
    with pytest.raises(InvalidParameterError, match="lambda_min"):
        KLRLHFPolicy(eta=1.0, min_eigenvalue=10 * policy.lambda_min_).fit(prefs)


def test_rlhf_paper_approx_needs_lambda0_above_the_ridge(rng: np.random.Generator) -> None:
    prefs = simulate_preferences(np.array([0.05, 0.02]), 300, rng=rng)
    policy = KLRLHFPolicy(eta=1.0, norm_bound=0.1, ridge=2.0).fit(prefs)
    with pytest.raises(InvalidParameterError, match=r"lambda0 must be > the ridge lambda = 2.0"):
        policy.guarantee(ACTIONS, kind="approx", variant="paper", lambda0=1.5)
    corrected = policy.guarantee(ACTIONS, kind="approx", lambda0=1.5)  # valid for every lambda0 > 0
    assert corrected.delta == 0.0 and corrected.epsilon >= policy.guarantee(ACTIONS).epsilon


def test_rlhf_solver_tolerance_is_enforced(rng: np.random.Generator) -> None:
    prefs = simulate_preferences(np.array([0.05, 0.02]), 300, rng=rng)
    policy = KLRLHFPolicy(eta=1.0, norm_bound=0.1).fit(prefs)
    assert 0.0 <= policy.solver_error_ <= policy.solver_tolerance
    with pytest.raises(InvalidParameterError, match="solver_tolerance must bound the certified solver error"):
        KLRLHFPolicy(eta=1.0, norm_bound=0.1, solver_tolerance=1e-300).fit(prefs)
    # add/remove at the instance: the neighbour's leverage can grow by 1/√(1 − max_i ‖z_i‖²_{M⁻¹}) on a removal
    exact = policy.guarantee(ACTIONS, neighbouring="add_remove", include_solver_error=False)
    covered = policy.guarantee(ACTIONS, neighbouring="add_remove")
    s_max = policy.max_difference_leverage_ ** 2
    there = policy.solver_divergence(ACTIONS, policy.solver_tolerance) / math.sqrt(1 - s_max)
    assert covered.epsilon == pytest.approx(exact.epsilon + policy.solver_divergence(ACTIONS) + there, rel=1e-12)


def test_rejection_failure_bound_is_public_and_consistent(rng: np.random.Generator) -> None:
    prefs = simulate_preferences(np.array([0.05, 0.02]), 100, rng=rng)
    policy = KLRLHFPolicy(eta=1.0, beta0=0.5, norm_bound=0.3).fit(prefs)
    log_alpha = policy.rejection_log_acceptance_floor()  # U = B for the constrained MLE
    assert log_alpha == pytest.approx(-(2 * 0.3 + 0.5 / 1.0) / 1.0)
    t = policy.rejection_proposals(1e-9)
    assert policy.rejection_failure_bound(t) <= 1e-9 < policy.rejection_failure_bound(t - 1)
    linear = KLLinearPolicy(eta=1.0).fit(simulate_logged_contextual(np.array([0.3, 0.3]), 50, rng=rng))
    with pytest.raises(InvalidParameterError, match="theta_norm_bound must be given"):
        linear.rejection_failure_bound(10)
    declared = KLLinearPolicy(eta=1.0, max_records=50).fit(simulate_logged_contextual(np.array([0.3, 0.3]), 50,
                                                                                     rng=rng))
    assert declared.rejection_log_acceptance_floor() == pytest.approx(-(2 * math.sqrt(50 / 2) + 1 / math.sqrt(2)))


def test_privacy_is_a_property_everywhere_and_covers_every_context() -> None:
    """``privacy`` is an attribute on every policy (as on the BAI and dueling agents); options go through
    ``guarantee``. For the linear and RLHF policies it holds at every context, so it is at least the
    guarantee at any one context."""
    gen = np.random.default_rng(3)

    def unit_ball_features(k: int, d: int) -> np.ndarray:
        x = gen.normal(size=(k, d))
        return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1.0) * gen.random((k, 1))

    mab = KLMABPolicy(n_arms=2, eta=0.5, beta0=0.1).fit([0, 0, 1, 1, 1], [1, 1, 0, 1, 0])
    assert mab.privacy == mab.guarantee()
    linear = KLLinearPolicy(eta=1.0, beta0=0.5, ridge=2.0).fit(simulate_logged_contextual([0.3, 0.2, 0.1], 400, rng=gen))
    rlhf = KLRLHFPolicy(eta=1.0, beta0=0.5, ridge=2.0, norm_bound=1.0).fit(
        simulate_preferences([0.3, 0.2, 0.1], 400, rng=gen))
    for policy in (linear, rlhf):
        every = policy.privacy
        assert isinstance(every, PureDP) and np.isfinite(every.epsilon)
        for _ in range(5):
            at_one = policy.guarantee(unit_ball_features(6, 3))
            assert at_one.epsilon <= every.epsilon * (1 + 1e-12)
        with pytest.raises(InvalidParameterError, match="pass action_features"):
            policy.guarantee(kind="approx", lambda0=3.0)
