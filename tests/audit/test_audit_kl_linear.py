"""Audits of the offline linear contextual KL policy (Theorem 2, its corrected approximate form; C3)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpbandits._core.errors import PaperVariantWarning
from dpbandits.algorithms.offline import KLLinearPolicy
from dpbandits.audit.kl import audit_linear
from dpbandits.envs.offline import LoggedContextualData, simulate_logged_contextual
from dpbandits.privacy.guarantees import PureDP

C3_ACTIONS = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.7071, 0.7071]])


def _c3() -> LoggedContextualData:
    features = np.r_[np.tile([1.0, 0.0], (100, 1)), np.tile([0.0, 1.0], (100, 1))]
    return LoggedContextualData(features, np.r_[np.ones(100), np.zeros(100)])


def test_c3_paper_approx_violated_corrected_and_pure_hold(seed: int) -> None:
    data = _c3()
    policy = KLLinearPolicy(eta=0.01, beta0=10.0, ridge=2.0).fit(data)
    assert policy.lambda_min_ == pytest.approx(102.0)
    np.testing.assert_allclose(policy.probabilities(C3_ACTIONS)[:2], [0.7262, 0.2738], atol=1e-4)
    lambda0 = 1.0 / 0.00736**2
    with pytest.warns(PaperVariantWarning, match="Theorem 2"):
        paper = policy.guarantee(C3_ACTIONS, kind="approx", variant="paper", lambda0=lambda0)
    assert paper.epsilon == pytest.approx(0.5108259, abs=1e-6) and paper.delta == pytest.approx(4.2413e-3, rel=1e-4)
    report = audit_linear(policy, data, C3_ACTIONS, epsilon=paper.epsilon, rng=seed)
    assert report.delta_hat >= 0.137  # spec C3: true δ(0.5108) >= 0.1372
    assert report.violates(paper)
    corrected = policy.guarantee(C3_ACTIONS, kind="approx", lambda0=lambda0)
    assert corrected.delta == 1.0 and not report.violates(corrected)
    pure = policy.guarantee(C3_ACTIONS)
    assert pure.epsilon == pytest.approx(6.872188, abs=1e-6)
    assert 1.7 < report.epsilon_hat <= pure.epsilon  # spec: largest loss found 1.754


def test_theorem2_pure_tight_and_corrected_approx_dominate_audits(rng: np.random.Generator) -> None:
    worst_ratio = 0.0
    for _ in range(6):
        d = int(rng.integers(2, 4))
        theta = rng.standard_normal(d)
        theta /= np.linalg.norm(theta)
        data = simulate_logged_contextual(theta, int(rng.integers(30, 80)), rng=rng)
        eta, beta0 = float(rng.uniform(0.05, 0.5)), float(rng.uniform(0.0, 2.0))
        policy = KLLinearPolicy(eta=eta, beta0=beta0, ridge=2.0).fit(data)
        actions = rng.standard_normal((4, d))
        actions /= np.linalg.norm(actions, axis=1, keepdims=True)
        pure = policy.guarantee(actions)
        refined = policy.guarantee(actions, variant="refined")
        tight = policy.guarantee(actions, variant="tight")
        assert tight.epsilon <= refined.epsilon <= pure.epsilon
        gamma = policy.penalties(actions)
        lambda0 = 1.0 / float(np.median(gamma)) ** 2
        corrected = policy.guarantee(actions, kind="approx", lambda0=lambda0)
        report = audit_linear(policy, data, actions, epsilon=corrected.epsilon, rng=rng)
        assert not report.violates(pure)
        assert not report.violates(tight) and not report.violates(refined)
        assert not report.violates(corrected)
        corollary = policy.guarantee(actions, kind="approx", c=0.5)  # Corollary 2, corrected form
        assert not audit_linear(policy, data, actions, epsilon=corollary.epsilon, rng=rng).violates(corollary)
        worst_ratio = max(worst_ratio, report.epsilon_hat / pure.epsilon)
    assert worst_ratio > 0.01  # the adversarial search finds non-trivial losses


def test_audit_catches_an_understated_linear_epsilon(seed: int) -> None:
    data = _c3()
    policy = KLLinearPolicy(eta=0.01, beta0=10.0, ridge=2.0).fit(data)
    report = audit_linear(policy, data, C3_ACTIONS, rng=seed)
    claim = policy.guarantee(C3_ACTIONS)
    broken = PureDP(epsilon=claim.epsilon / 8, unit=claim.unit, neighbouring=claim.neighbouring)
    assert report.violates(broken) and not report.violates(claim)


def test_removal_updates_match_refitting(rng: np.random.Generator) -> None:
    """The auditor's Sherman-Morrison downdates equal a refit without the record."""
    data = simulate_logged_contextual(np.array([0.5, 0.5]), 25, rng=rng)
    policy = KLLinearPolicy(eta=0.3, beta0=0.5).fit(data)
    actions = np.array([[1.0, 0.0], [0.0, 1.0], [-0.6, 0.8]])
    report = audit_linear(policy, data, actions, n_random=0, radii=(1e-12,), rng=rng)
    losses = []
    for i in range(data.n_records):
        keep = np.arange(data.n_records) != i
        refit = KLLinearPolicy(eta=0.3, beta0=0.5).fit(data.features[keep], data.rewards[keep])
        losses.append(np.max(np.abs(refit.log_probabilities(actions) - policy.log_probabilities(actions))))
    assert report.epsilon_hat == pytest.approx(max(losses), rel=1e-8)
    assert math.isfinite(report.epsilon_hat)


def test_addition_updates_match_refitting_on_c3(seed: int) -> None:
    """The auditor's worst addition on C3 is (φ0 = (−1, 0), r0 = 1); a refit gives the same δ(ε)."""
    from dpbandits.audit.exact import delta_for_epsilon

    data = _c3()
    policy = KLLinearPolicy(eta=0.01, beta0=10.0, ridge=2.0).fit(data)
    epsilon = 0.5108259100424748
    report = audit_linear(policy, data, C3_ACTIONS, epsilon=epsilon, rng=seed)
    assert "phi0=[-1." in str(report.worst_delta_neighbour) and "r0=1)" in str(report.worst_delta_neighbour)
    refit = KLLinearPolicy(eta=0.01, beta0=10.0, ridge=2.0).fit(np.vstack([data.features, [-1.0, 0.0]]),
                                                                 np.append(data.rewards, 1.0))
    assert refit.probabilities(C3_ACTIONS)[1] == pytest.approx(0.0819, abs=1e-4)  # spec C3
    exact = delta_for_epsilon(policy.log_probabilities(C3_ACTIONS), refit.log_probabilities(C3_ACTIONS), epsilon,
                              log=True)
    assert report.delta_hat == pytest.approx(exact, rel=1e-9)


REJECTION_CANDIDATES = np.array([[1.0, 0.0], [0.0, 1.0], [-0.6, 0.8], [0.6, -0.8]])


@pytest.mark.parametrize("n_proposals", [300, 1000])
def test_rejection_sampler_guarantee_holds_where_the_old_failure_event_leaked(n_proposals: int) -> None:
    """Regression (issue 12, defect 5). D: four records (e1, 0); D': plus (e2, 1). The acceptance rates differ
    (0.120 vs 0.160), so the old sampler's failure after T proposals had probabilities whose log-ratio is
    13.7 (T = 300) while the reported ε was that of π̃ (about 1): the failure event was the leak. The new
    sampler's exact law (1 − q)·π̃ + q·π0 meets (ε + ln(1/(1 − q̄)), q̄) on the pair, q̄ public."""
    from dpbandits.algorithms.offline.accountants import rejection_sampling_guarantee
    from dpbandits.audit.exact import delta_for_epsilon, privacy_loss

    phi, rewards = np.tile([[1.0, 0.0]], (4, 1)), np.zeros(4)
    policies = [KLLinearPolicy(eta=0.5, beta0=0.1).fit(phi, rewards),
                KLLinearPolicy(eta=0.5, beta0=0.1).fit(np.vstack([phi, [0.0, 1.0]]), np.append(rewards, 1.0))]
    bound = 1.0  # public theta_norm_bound (both fits satisfy it)
    laws, failures = [], []
    for policy in policies:
        alpha = float(np.mean(np.exp((policy.utilities(REJECTION_CANDIDATES) - bound) / policy.eta)))
        q = (1.0 - alpha) ** n_proposals
        failures.append(q)
        laws.append((1.0 - q) * policy.probabilities(REJECTION_CANDIDATES) + q / 4)
    q_bar = policies[0].rejection_failure_bound(n_proposals, bound)
    assert max(failures) <= q_bar < 1e-2
    pair_epsilon = privacy_loss(policies[0].probabilities(REJECTION_CANDIDATES),
                                policies[1].probabilities(REJECTION_CANDIDATES))
    assert abs(math.log(failures[0] / failures[1])) > 10 * pair_epsilon  # the old failure channel
    claim = rejection_sampling_guarantee(PureDP(epsilon=pair_epsilon, unit="one record", neighbouring="add/remove"),
                                         q_bar)
    assert delta_for_epsilon(laws[0], laws[1], claim.epsilon) <= claim.delta
    assert claim.epsilon == pytest.approx(pair_epsilon - math.log1p(-q_bar)) and claim.delta == q_bar


def test_domain_guarantee_holds_over_its_domain(rng: np.random.Generator) -> None:
    """Theorem 2 at the public floor ℓ and n_max: every dataset of the domain audits below it."""
    floor, n_max = 30.0, 120
    checked = 0
    for _ in range(4):
        data = simulate_logged_contextual(rng.standard_normal(2) * 0.3, int(rng.integers(80, n_max + 1)), rng=rng)
        try:
            policy = KLLinearPolicy(eta=0.05, beta0=0.5, min_eigenvalue=floor, max_records=n_max).fit(data)
        except ValueError:
            continue  # outside the declared domain: refused
        actions = rng.standard_normal((4, 2))
        actions /= np.linalg.norm(actions, axis=1, keepdims=True)
        claim = policy.guarantee(actions, scope="domain")
        assert not claim.per_instance
        assert not audit_linear(policy, data, actions, rng=rng, n_random=50).violates(claim)
        checked += 1
    assert checked >= 2
