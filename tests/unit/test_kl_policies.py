"""Unit tests of the offline KL policies, their data containers and the accountant formulas."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from dpbandits._core.errors import (
    EmptySupportError,
    InsecureNoiseWarning,
    InvalidParameterError,
    NotFittedError,
    PaperVariantWarning,
    PrivacyWarning,
)
from dpbandits.algorithms.offline import KLLinearPolicy, KLMABPolicy, KLRLHFPolicy, bradley_terry_mle
from dpbandits.algorithms.offline import accountants as acc
from dpbandits.envs.offline import (
    LoggedBanditData,
    LoggedContextualData,
    PreferenceData,
    simulate_logged_bandit,
    simulate_logged_contextual,
    simulate_preferences,
)
from dpbandits.privacy.guarantees import ApproxDP, Neighbouring, PureDP

# ----------------------------------------------------------------------------- MAB policy


def test_mab_policy_matches_eq8_by_hand() -> None:
    policy = KLMABPolicy(n_arms=3, eta=0.5, beta0=0.2, reference=[0.5, 0.25, 0.25])
    policy.fit([0, 0, 1, 1, 1, 2], [1.0, 0.0, 1.0, 1.0, 0.0, 0.5])
    u = np.array([0.5 - 0.2 / math.sqrt(2), 2 / 3 - 0.2 / math.sqrt(3), 0.5 - 0.2])
    w = np.array([0.5, 0.25, 0.25]) * np.exp(u / 0.5)
    np.testing.assert_allclose(policy.probabilities(), w / w.sum(), rtol=1e-12)
    np.testing.assert_array_equal(policy.counts_, [2, 3, 1])


def test_mab_policy_is_order_invariant(rng: np.random.Generator) -> None:
    data = simulate_logged_bandit(np.linspace(0.1, 0.9, 5), 200, logging="zipf", rng=rng)
    perm = rng.permutation(data.n_records)
    a = KLMABPolicy(5, eta=0.1).fit(data)
    b = KLMABPolicy(5, eta=0.1).fit(data.actions[perm], data.rewards[perm])
    np.testing.assert_allclose(a.log_probabilities_, b.log_probabilities_, rtol=0, atol=1e-12)


def test_uncovered_arm_gets_zero_probability_and_all_empty_raises() -> None:
    policy = KLMABPolicy(3, eta=1.0).fit([0, 0, 1], [1.0, 1.0, 0.0])
    assert policy.probabilities()[2] == 0.0
    assert math.isclose(policy.probabilities().sum(), 1.0)
    with pytest.raises(EmptySupportError, match="empty_fallback"):
        KLMABPolicy(3, eta=1.0).fit([], [])
    with pytest.warns(PrivacyWarning, match="no privacy"):
        fallback = KLMABPolicy(3, eta=1.0, empty_fallback="reference").fit([], [])
    np.testing.assert_allclose(fallback.probabilities(), np.full(3, 1 / 3))
    assert fallback.guarantee().epsilon == math.inf


@pytest.mark.parametrize("eta", [1e-300, 1e-12, 1e12, 1e300])
def test_mab_policy_stable_for_extreme_eta(eta: float) -> None:
    policy = KLMABPolicy(3, eta=eta, beta0=0.0).fit([0, 1, 1, 2, 2], [0.2, 0.9, 0.9, 0.1, 0.0])
    probs = policy.probabilities()
    assert np.all(np.isfinite(policy.log_probabilities_[probs > 0]))
    assert math.isclose(probs.sum(), 1.0, rel_tol=1e-12)
    if eta < 1e-6:
        assert probs[1] == pytest.approx(1.0)
    else:
        np.testing.assert_allclose(probs, np.full(3, 1 / 3), rtol=1e-9)


def test_mab_policy_tiny_eta_with_the_best_arm_outside_the_reference_support() -> None:
    """u/η overflows for a subnormal η: the shift must use the support of π0, not the excluded best arm."""
    policy = KLMABPolicy(3, eta=1e-320, beta0=0.0, reference=[0.0, 0.5, 0.5])
    policy.fit([0, 0, 1, 1, 2], [1.0, 1.0, 0.5, 0.5, 0.0])
    np.testing.assert_array_equal(policy.probabilities(), [0.0, 1.0, 0.0])


def test_mab_sample_is_secure_by_default_and_seeded_only_on_request(seed: int) -> None:
    policy = KLMABPolicy(4, eta=0.3).fit([0, 1, 1, 2], [1.0, 0.5, 0.5, 0.0])
    secure = policy.sample(size=50)  # OpenDP's exact Gumbel noisy-max, OS CSPRNG
    assert not np.any(secure == 3) and policy.sample().shape == ()  # arm 3 has no data
    with pytest.raises(InvalidParameterError, match="insecure_seeded_noise=True"):
        policy.sample(rng=seed)
    with pytest.warns(InsecureNoiseWarning):
        a = policy.sample(rng=seed, size=50, insecure_seeded_noise=True)
    b = policy.sample(rng=seed, size=50, insecure_seeded_noise=True)
    np.testing.assert_array_equal(a, b)
    assert not np.any(a == 3)


def test_mab_validation_messages() -> None:
    with pytest.raises(InvalidParameterError, match="rewards must lie in"):
        KLMABPolicy(2, eta=1.0).fit([0, 1], [0.5, 1.5])
    clipped = KLMABPolicy(2, eta=1.0).fit([0, 1], [0.5, 1.5], clip=True)
    assert clipped.reward_sums_[1] == 1.0
    with pytest.raises(InvalidParameterError, match=r"actions must lie in \[0, 2\); got 2 in record 1"):
        KLMABPolicy(2, eta=1.0).fit([0, 2], [0.5, 0.5])
    with pytest.raises(InvalidParameterError, match="eta must be a finite float > 0"):
        KLMABPolicy(2, eta=0.0)
    with pytest.raises(InvalidParameterError, match="beta0 must lie in"):
        KLMABPolicy(2, eta=1.0, beta0=-1.0)
    with pytest.raises(NotFittedError):
        KLMABPolicy(2, eta=1.0).probabilities()
    with pytest.raises(InvalidParameterError, match="reference must have 2 entries"):
        KLMABPolicy(2, eta=1.0, reference=[1.0])


# ----------------------------------------------------------------------- linear and RLHF policies


def test_linear_policy_matches_eq10(rng: np.random.Generator) -> None:
    data = simulate_logged_contextual(np.array([0.6, -0.3, 0.2]), 300, rng=rng)
    policy = KLLinearPolicy(eta=0.2, beta0=0.7, ridge=2.0).fit(data)
    sigma = 2.0 * np.eye(3) + data.features.T @ data.features
    theta = np.linalg.solve(sigma, data.features.T @ data.rewards)
    feats = rng.standard_normal((6, 3))
    feats /= np.linalg.norm(feats, axis=1, keepdims=True)
    gamma = np.sqrt(np.einsum("kd,de,ke->k", feats, np.linalg.inv(sigma), feats))
    w = np.exp((feats @ theta - 0.7 * gamma) / 0.2)
    np.testing.assert_allclose(policy.probabilities(feats), w / w.sum(), rtol=1e-10)
    assert policy.lambda_min_ == pytest.approx(np.linalg.eigvalsh(sigma)[0])
    with pytest.raises(InvalidParameterError, match="Euclidean norm <= 1"):
        policy.probabilities(2 * feats)
    with pytest.raises(InvalidParameterError, match=r"shape \(n_actions >= 1, 3\)"):
        policy.probabilities(feats[:, :2])


def test_bradley_terry_mle_interior_matches_kkt(rng: np.random.Generator) -> None:
    data = simulate_preferences(np.array([0.4, -0.2, 0.1]), 400, rng=rng)
    fit = bradley_terry_mle(data.feature_differences, data.labels, norm_bound=5.0)
    assert not fit.on_boundary
    z, y = data.feature_differences, data.labels
    grad = z.T @ (y - 1 / (1 + np.exp(-(z @ fit.theta))))
    assert np.linalg.norm(grad) < 1e-7


def test_bradley_terry_mle_boundary_on_separable_data() -> None:
    z = np.array([[1.0, 0.0], [0.5, 0.5], [1.0, 0.2]])
    y = np.ones(3)  # separable: the unconstrained MLE diverges
    fit = bradley_terry_mle(z, y, norm_bound=0.7)
    assert fit.on_boundary
    assert np.linalg.norm(fit.theta) == pytest.approx(0.7, rel=1e-9)
    # KKT at the boundary: the likelihood gradient is a positive multiple of θ̂
    grad = z.T @ (y - 1 / (1 + np.exp(-(z @ fit.theta))))
    cos = grad @ fit.theta / (np.linalg.norm(grad) * np.linalg.norm(fit.theta))
    assert cos == pytest.approx(1.0, abs=1e-7)


def test_rlhf_policy_and_data_validation(rng: np.random.Generator) -> None:
    data = simulate_preferences(np.array([0.3, 0.1]), 200, rng=rng)
    policy = KLRLHFPolicy(eta=1.0, beta0=0.5, ridge=1.0, norm_bound=1.0).fit(data)
    feats = np.array([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]])
    assert policy.probabilities(feats).sum() == pytest.approx(1.0)
    with pytest.raises(InvalidParameterError, match=r"labels must be 0 or 1; got 0\.5 in row 1"):
        PreferenceData(np.zeros((2, 2)), [1, 0.5])
    with pytest.raises(InvalidParameterError, match="norm <= 2"):
        PreferenceData(np.full((1, 2), 3.0), [1])
    with pytest.raises(InvalidParameterError, match="norm <= 1"):
        LoggedContextualData(np.full((1, 2), 1.0), [0.5])
    with pytest.raises(InvalidParameterError, match="rewards must lie in"):
        LoggedBanditData([0], [-0.1], 1)


# ------------------------------------------------------------------ accountants: reference values


def test_appendix_a_reference_values() -> None:
    assert acc.theorem1_pure_epsilon(11, reward_bound=1, beta0=1, eta=0.1) == pytest.approx(4.316228, abs=1e-6)
    eps, delta = acc.theorem1_approx_paper(625, n_max=10_000, n_actions=2, reward_bound=1, beta0=0.5, eta=0.001)
    assert eps == pytest.approx(6.432, abs=1e-9) and delta == pytest.approx(3.801849e-4, rel=1e-6)
    eps, delta = acc.corollary1_paper(16, n_max=10_000, n_actions=2, reward_bound=1, beta0=0.5, eta=0.001)
    assert delta == pytest.approx(3.801849e-4, rel=1e-6)
    _, verbatim = acc.corollary1_paper(16, n_max=10_000, n_actions=2, reward_bound=1, beta0=0.5, eta=0.001,
                                       verbatim=True)
    assert verbatim == pytest.approx(6.357548e-7, rel=1e-6)
    assert acc.theorem2_bracket(102, n_records=200, dimension=2, reward_bound=1, beta0=10) == pytest.approx(
        0.6940569, abs=1e-7)
    assert acc.theorem2_pure_epsilon(102, n_records=200, dimension=2, reward_bound=1, beta0=10,
                                     eta=0.01) == pytest.approx(6.872188, abs=1e-6)
    with pytest.warns(PaperVariantWarning, match="Corollary 2"):  # the approximate part is invalid (§7 item 14)
        eps, delta = acc.corollary2_paper(4, 0.9, lambda_min=1e9, n_records=1000, dimension=5, n_actions=10,
                                          reward_bound=1, beta0=50, eta=0.1)
    assert eps == pytest.approx(5.232792, abs=1e-6) and delta == pytest.approx(3.117755e-11, rel=1e-6)
    assert acc.corollary2_paper(4, lambda_min=1e9, n_records=1000, dimension=5, n_actions=10, reward_bound=1,
                                beta0=50, eta=0.1)[0] == pytest.approx(5.814214, abs=1e-6)
    assert acc.kappa_b(0.1) == pytest.approx(4.040134, abs=1e-6)
    assert acc.theorem3_label_epsilon(4001, ridge=1, norm_bound=0.1, eta=1, variant="paper") == pytest.approx(
        1.110701e-3, rel=1e-6)
    assert acc.theorem3_label_epsilon(4001, ridge=1, norm_bound=0.1, eta=1) == pytest.approx(4.040134e-3, rel=1e-6)
    assert acc.theorem4_add_remove_epsilon(4001, ridge=1, norm_bound=0.1, beta0=1, eta=1,
                                           variant="paper") == pytest.approx(5.632554e-4, rel=1e-6)
    assert acc.theorem4_add_remove_epsilon(4001, ridge=1, norm_bound=0.1, beta0=1,
                                           eta=1) == pytest.approx(2.237224e-3, rel=1e-6)
    common = {"lambda_min": 1e9, "ridge": 1, "n_records": 1000, "dimension": 5, "n_actions": 2,
              "norm_bound": 0.5, "beta0": 1, "eta": 0.1}
    with pytest.warns(PaperVariantWarning, match="Corollary 3"):  # inherits Theorem 3's error (C4)
        assert acc.corollary3_paper(2, **common)[0] == pytest.approx(0.7436564, abs=1e-7)
    assert acc.corollary3_paper(2, variant="corrected", **common)[0] == pytest.approx(2.034465, abs=1e-6)
    g = PureDP(epsilon=0.1, unit="one record", neighbouring=Neighbouring.ADD_REMOVE)
    assert acc.repeated_sampling(g, 100, method="advanced", delta_prime=1e-6).epsilon == pytest.approx(
        6.308231, abs=1e-6)


def test_preconditions_give_infinite_epsilon_with_reason() -> None:
    policy = KLMABPolicy(2, eta=0.1).fit([0, 1, 1], [1.0, 0.0, 1.0])  # N_min = 1
    g = policy.guarantee()
    assert isinstance(g, PureDP) and g.epsilon == math.inf and "<= 1" in g.reason and g.per_instance
    with pytest.raises(InvalidParameterError, match="precondition"):
        policy.guarantee(strict=True)
    assert acc.theorem1_approx_paper(0.5, n_max=10, n_actions=2, reward_bound=1, beta0=1, eta=1) == (math.inf, 1.0)
    assert acc.theorem2_pure_epsilon(1.0, n_records=5, dimension=2, reward_bound=1, beta0=1, eta=1) == math.inf
    assert acc.theorem3_label_epsilon(1.0, ridge=1.0, norm_bound=1, eta=1) == math.inf
    assert acc.theorem4_add_remove_epsilon(3.5, ridge=1.0, norm_bound=1, beta0=1, eta=1) == math.inf
    assert acc.corollary2_paper(1, lambda_min=2, n_records=100, dimension=2, n_actions=2, reward_bound=1,
                                beta0=1, eta=1)[0] == math.inf
    with pytest.raises(InvalidParameterError, match="eta must be a finite float > 0"):
        acc.theorem1_pure_epsilon(5, reward_bound=1, beta0=1, eta=-1)
    with pytest.raises(InvalidParameterError, match="c must lie in"):
        acc.corollary2_paper(1, 1.5, lambda_min=1e6, n_records=100, dimension=2, n_actions=2, reward_bound=1,
                             beta0=1, eta=1)


def test_paper_variant_warns_and_corrected_does_not() -> None:
    policy = KLMABPolicy(2, eta=0.01, beta0=0.5).fit([0, 0, 0, 1, 1, 1], [1, 1, 0, 0, 1, 0])
    with pytest.warns(PaperVariantWarning, match="Corollary 1"):
        policy.guarantee(kind="approx", variant="paper", k=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        g = policy.guarantee(kind="approx", k=2)
        assert isinstance(g, ApproxDP) and "corrected" in g.reference
        policy.guarantee(kind="pure", variant="paper")  # Theorem 1 pure is valid: no warning
    with pytest.raises(InvalidParameterError, match="exactly one of n0 and k"):
        policy.guarantee(kind="approx")


def test_theorem1_corrected_delta_is_small_on_benign_data_and_one_on_adversarial() -> None:
    counts = np.array([10_000] * 7 + [0, 1, 2])
    means = np.r_[np.linspace(0.5, 0.8, 7), 0.0, 0.1, 0.0]
    log_pi0 = np.full(10, -math.log(10))
    eps, delta = acc.theorem1_corrected_delta(counts, counts * means, log_pi0, 625, reward_bound=1, beta0=2,
                                              eta=0.01)
    assert eps == pytest.approx((4 / 625 + 2 / 625**1.5) / 0.01)
    assert 0 < delta < 1e-30
    # C1-like: a two-point arm with reward 1 against a well-covered arm of mean 0.64
    counts = np.array([2, 10_000])
    _, delta = acc.theorem1_corrected_delta(counts, np.array([2.0, 6400.0]), np.log([0.5, 0.5]), 625,
                                            reward_bound=1, beta0=0.5, eta=0.001)
    assert delta == 1.0


def test_inexact_policy_and_composition() -> None:
    g = ApproxDP(epsilon=1.0, delta=1e-6, unit="one record", neighbouring=Neighbouring.ADD_REMOVE)
    fixed = acc.inexact_policy(g, 0.1)
    assert fixed.epsilon == pytest.approx(1.2) and fixed.delta == pytest.approx(math.exp(0.1) * 1e-6)
    with pytest.warns(PaperVariantWarning):
        assert acc.inexact_policy(g, 0.1, variant="paper").delta == 1e-6
    basic = acc.repeated_sampling(g, 10)
    assert basic.epsilon == pytest.approx(10.0) and basic.delta == pytest.approx(1e-5)
    with pytest.raises(InvalidParameterError, match="delta_prime"):
        acc.repeated_sampling(g, 10, method="advanced")


def test_corollary_c_gives_c_times_epsilon0(rng: np.random.Generator) -> None:
    data = simulate_logged_contextual(np.array([0.5, 0.5]), 300, rng=rng)
    policy = KLLinearPolicy(eta=0.1, beta0=1.0).fit(data)
    actions = np.array([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]])
    pure = policy.guarantee(actions)
    approx = policy.guarantee(actions, kind="approx", c=0.5)
    assert approx.epsilon == pytest.approx(0.5 * pure.epsilon, rel=1e-12)
    assert 0.0 <= approx.delta <= 1.0
    with pytest.raises(InvalidParameterError, match="exactly one of lambda0 and c"):
        policy.guarantee(actions, kind="approx", c=0.5, lambda0=10.0)
    prefs = simulate_preferences(np.array([0.05, 0.0]), 300, rng=rng)
    rlhf = KLRLHFPolicy(eta=1.0, norm_bound=0.1).fit(prefs)
    label = rlhf.guarantee(actions, kind="approx", c=0.5, include_solver_error=False)
    assert label.epsilon == pytest.approx(0.5 * rlhf.guarantee(actions, include_solver_error=False).epsilon,
                                          rel=1e-12)


def test_rlhf_guarantee_covers_the_solver_error(rng: np.random.Generator) -> None:
    prefs = simulate_preferences(np.array([0.05, 0.02]), 400, rng=rng)
    policy = KLRLHFPolicy(eta=1.0, norm_bound=0.1).fit(prefs)
    actions = np.array([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]])
    exact = policy.guarantee(actions, include_solver_error=False)
    covered = policy.guarantee(actions)
    divergence = policy.solver_divergence(actions)  # at D: the certificate of this fit
    at_neighbours = policy.solver_divergence(actions, policy.solver_tolerance)  # the enforced public tolerance
    assert 0.0 <= divergence <= at_neighbours < 1e-4  # the solver is accurate
    assert covered.epsilon == pytest.approx(exact.epsilon + divergence + at_neighbours, rel=1e-12)
    # a perturbed (inexact) estimate has a larger KKT residual, hence a larger divergence
    policy.theta_ = policy.theta_ * (1 - 1e-2)  # still inside the ball
    policy.fit_ = type(policy.fit_)(policy.theta_, policy.fit_.on_boundary, policy.fit_.multiplier,
                                    policy.fit_.kkt_residual, policy.fit_.n_iterations)
    policy.solver_error_ = policy._solver_error_bound(prefs.feature_differences, prefs.labels)
    assert policy.solver_divergence(actions) > 100 * divergence


@pytest.mark.parametrize("eta", [1e-250, 1e250])
def test_elliptical_policies_stable_for_extreme_eta(eta: float, rng: np.random.Generator) -> None:
    data = simulate_logged_contextual(np.array([0.5, 0.5]), 100, rng=rng)
    actions = np.array([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]])
    probs = KLLinearPolicy(eta=eta, beta0=0.1).fit(data).probabilities(actions)
    assert np.isclose(probs.sum(), 1.0) and np.all(np.isfinite(probs))
    if eta > 1:
        np.testing.assert_allclose(probs, np.full(3, 1 / 3))
    else:
        assert probs.max() == pytest.approx(1.0)


def test_the_rlhf_fit_on_the_sphere_never_exceeds_b_so_the_rejection_sampler_serves_both_neighbours() -> None:
    """Issue 32, defect 6: the rescaling onto ‖θ‖ = B left B + 1 ulp on one label flip and not on its neighbour."""
    rng = np.random.default_rng(0)
    z = rng.normal(size=(30, 2))
    z /= np.maximum(1.0, np.linalg.norm(z, axis=1, keepdims=True))
    labels = (z @ np.array([2.0, -1.0]) > 0).astype(float)
    actions = np.array([[1.0, 0.0], [0.0, 1.0], [0.6, 0.6]])

    def propose(generator: np.random.Generator, m: int) -> np.ndarray:
        return actions[generator.integers(0, 3, size=m)]

    for index in (0, 1, 2, 14, 17):  # 1, 2, 14 and 17 were refused (0.45000000000000007), 0 and the originals served
        flipped = labels.copy()
        flipped[index] = 1.0 - flipped[index]
        for y in (labels, flipped):
            policy = KLRLHFPolicy(eta=1.0, norm_bound=0.45).fit(PreferenceData(z, y))
            assert float(np.linalg.norm(policy.theta_)) <= 0.45
            assert policy.solver_error_ <= policy.solver_tolerance  # the certificate covers the fit returned
            policy.sample_by_rejection(propose, n_proposals=20)
