"""Audits of the offline MAB KL policy: exact worst-case loss against every accountant."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from dpbandits._core.errors import PaperVariantWarning
from dpbandits.algorithms.offline import KLMABPolicy
from dpbandits.audit.kl import audit_mab
from dpbandits.envs.offline import LoggedBanditData
from dpbandits.privacy.guarantees import PureDP


def _dataset(gen: np.random.Generator, counts: np.ndarray, continuous: bool) -> LoggedBanditData:
    actions = np.repeat(np.arange(counts.size), counts)
    means = gen.uniform(0.0, 1.0, counts.size)[actions]
    rewards = gen.uniform(0.0, 1.0, actions.size) if continuous else (gen.random(actions.size) < means) * 1.0
    return LoggedBanditData(actions, rewards, counts.size)


def _c1() -> LoggedBanditData:
    actions = np.r_[np.zeros(2, int), np.ones(10_000, int)]
    rewards = np.r_[1.0, 1.0, np.ones(6400), np.zeros(3600)]
    return LoggedBanditData(actions, rewards, 2)


def test_c1_paper_approx_claims_are_flagged_and_corrected_holds() -> None:
    data = _c1()
    policy = KLMABPolicy(2, eta=0.001, beta0=0.5).fit(data)
    np.testing.assert_allclose(policy.probabilities(), [0.999989, 1.07e-5], rtol=2e-3)
    for kwargs in ({"k": 16}, {"n0": 625}, {"k": 4}):
        with pytest.warns(PaperVariantWarning):
            paper = policy.guarantee(kind="approx", variant="paper", **kwargs)
        report = audit_mab(policy, data, epsilon=paper.epsilon)
        assert report.delta_hat == pytest.approx(1.0, abs=1e-4)
        assert report.violates(paper)
        corrected = policy.guarantee(kind="approx", **kwargs)
        assert corrected.epsilon == paper.epsilon
        assert not report.violates(corrected)
        assert corrected.delta == 1.0
    with pytest.warns(PaperVariantWarning):
        paper16 = policy.guarantee(kind="approx", variant="paper", k=16)
    assert paper16.epsilon == pytest.approx(6.432) and paper16.delta == pytest.approx(3.8018e-4, rel=1e-4)


def test_c2_uncovered_arm_breaks_lemma1_and_corrected_returns_one() -> None:
    data = LoggedBanditData(np.ones(10_000, int), np.zeros(10_000), 2)
    policy = KLMABPolicy(2, eta=0.001, beta0=0.5).fit(data)
    assert policy.probabilities()[0] == 0.0
    with pytest.warns(PaperVariantWarning):
        paper = policy.guarantee(kind="approx", variant="paper", n0=625)
    report = audit_mab(policy, data, epsilon=paper.epsilon)
    assert report.epsilon_hat == math.inf and report.delta_hat == pytest.approx(1.0)
    assert report.violates(paper)
    corrected = policy.guarantee(kind="approx", n0=625)
    assert corrected.delta == 1.0 and not report.violates(corrected)


def test_theorem1_pure_dominates_exact_loss_on_random_datasets(rng: np.random.Generator) -> None:
    """Exact enumeration: ε̂ <= ε0/2 always (the KL-MAB sensitivity item of the errata), so ε̂ <= ε0 (deterministic, no false failures)."""
    worst_ratio = 0.0
    for trial in range(40):
        k = int(rng.integers(2, 7))
        counts = rng.integers(2, 120, size=k)
        data = _dataset(rng, counts, continuous=bool(trial % 2))
        eta, beta0 = float(rng.uniform(0.003, 0.2)), float(rng.uniform(0.0, 10.0))
        reference = rng.dirichlet(np.ones(k)) if trial % 3 == 0 else None
        policy = KLMABPolicy(k, eta=eta, beta0=beta0, reference=reference).fit(data)
        guarantee = policy.guarantee()
        report = audit_mab(policy, data)
        assert report.exact_pure
        assert not report.violates(guarantee)
        assert report.epsilon_hat <= guarantee.epsilon / 2 * (1 + 1e-9) + 1e-12
        worst_ratio = max(worst_ratio, report.epsilon_hat / guarantee.epsilon)
    assert 0.05 < worst_ratio <= 0.5  # the audit is not trivially zero


def test_theorem1_prime_dominates_exact_delta_on_random_datasets(rng: np.random.Generator) -> None:
    informative = 0
    for trial in range(40):
        k = int(rng.integers(2, 6))
        counts = rng.integers(0, 600, size=k)
        counts[rng.integers(0, k)] = rng.integers(300, 1000)
        counts[rng.integers(0, k)] = rng.integers(0, 3)  # a poorly covered arm
        data = _dataset(rng, counts, continuous=bool(trial % 2))
        eta, beta0 = float(rng.uniform(0.003, 0.2)), float(rng.uniform(0.3, 10.0))
        policy = KLMABPolicy(k, eta=eta, beta0=beta0).fit(data)
        kk = float(rng.choice([1.5, 2.0, 4.0, 8.0, 16.0]))
        corrected = policy.guarantee(kind="approx", k=kk)
        if not math.isfinite(corrected.epsilon):
            continue
        report = audit_mab(policy, data, epsilon=corrected.epsilon)
        assert not report.violates(corrected), (trial, report, corrected)
        informative += corrected.delta < 0.1
    assert informative >= 5  # some corrected bounds are far from vacuous


class SumUtilityPolicy(KLMABPolicy):
    """Deliberately broken: the utility uses reward *sums*, whose sensitivity is R, not R/N."""

    def utilities_from_statistics(self, counts, reward_sums):  # type: ignore[no-untyped-def]
        n = np.asarray(counts, dtype=float)
        return np.where(n > 0, np.asarray(reward_sums, dtype=float) - self.beta0 / np.sqrt(np.maximum(n, 1)),
                        -np.inf)


def test_audit_catches_a_broken_mechanism(rng: np.random.Generator) -> None:
    data = _dataset(rng, np.array([50, 60, 70]), continuous=False)
    broken = SumUtilityPolicy(3, eta=0.5, beta0=1.0).fit(data)
    claim = broken.guarantee()  # the accountant assumes eq. (8): ε0 ≈ 0.17
    report = audit_mab(broken, data)
    assert report.violates(claim)
    assert report.epsilon_hat > 1.0
    honest = KLMABPolicy(3, eta=0.5, beta0=1.0).fit(data)
    assert not audit_mab(honest, data).violates(honest.guarantee())


def test_audit_catches_an_understated_epsilon(rng: np.random.Generator) -> None:
    data = _dataset(rng, np.array([3, 4]), continuous=False)
    policy = KLMABPolicy(2, eta=0.05, beta0=2.0).fit(data)
    report = audit_mab(policy, data)
    claim = policy.guarantee()
    halved = PureDP(epsilon=claim.epsilon / 8, unit=claim.unit, neighbouring=claim.neighbouring)
    assert not report.violates(claim) and report.violates(halved)


def test_audit_requires_the_fitted_dataset(rng: np.random.Generator) -> None:
    data = _dataset(rng, np.array([5, 6]), continuous=False)
    other = _dataset(rng, np.array([6, 5]), continuous=False)
    policy = KLMABPolicy(2, eta=0.1).fit(data)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="fitted on"):
            audit_mab(policy, other)


def test_pld_composition_of_repeated_samples_lies_below_basic_composition(rng: np.random.Generator) -> None:
    from dpbandits.audit.kl import repeated_sampling_epsilon_mab

    data = _dataset(rng, np.array([30, 40, 50]), continuous=False)
    policy = KLMABPolicy(3, eta=0.05, beta0=0.5).fit(data)
    eps_hat = audit_mab(policy, data).epsilon_hat
    one, _ = repeated_sampling_epsilon_mab(policy, data, 1, 1e-12)
    assert eps_hat * 0.9 <= one <= eps_hat + 2e-4  # one sample: the pure loss (pessimistic grid 1e-4)
    ten, _ = repeated_sampling_epsilon_mab(policy, data, 10, 1e-6)
    assert ten <= 10 * eps_hat + 2e-3  # never above basic composition of the exact per-sample loss
    assert ten < 10 * policy.guarantee().epsilon


class PerturbedUtilityPolicy(KLMABPolicy):
    """An inexact policy: utilities off by a data-dependent ξ with ‖ξ‖∞ <= error (spec E7)."""

    error = 0.01

    def utilities_from_statistics(self, counts, reward_sums):  # type: ignore[no-untyped-def]
        u = super().utilities_from_statistics(counts, reward_sums)
        xi = self.error * np.sign(np.sin(np.asarray(counts, dtype=float) * 1.7 + np.asarray(reward_sums)))
        return u + xi


def test_inexact_policy_extension_dominates_the_audit(rng: np.random.Generator) -> None:
    from dpbandits.algorithms.offline.accountants import inexact_policy

    for _ in range(10):
        data = _dataset(rng, rng.integers(3, 60, size=4), continuous=True)
        exact = KLMABPolicy(4, eta=0.05, beta0=0.5).fit(data)
        inexact = PerturbedUtilityPolicy(4, eta=0.05, beta0=0.5).fit(data)
        claim = inexact_policy(exact.guarantee(), 2 * PerturbedUtilityPolicy.error / 0.05)
        assert not audit_mab(inexact, data).violates(claim)


def test_replace_one_audit_is_within_the_converted_guarantee(rng: np.random.Generator) -> None:
    from dpbandits.privacy.guarantees import add_remove_to_replace_one

    worst = 0.0
    for _ in range(10):
        data = _dataset(rng, rng.integers(2, 40, size=3), continuous=True)
        policy = KLMABPolicy(3, eta=0.05, beta0=1.0).fit(data)
        claim = add_remove_to_replace_one(policy.guarantee())
        replace = audit_mab(policy, data, neighbouring="replace_one")
        assert not replace.violates(claim)
        # a replacement is a removal then an addition: at most twice the add/remove loss
        assert replace.epsilon_hat <= 2 * audit_mab(policy, data).epsilon_hat * (1 + 1e-9)
        worst = max(worst, replace.epsilon_hat / claim.epsilon)
    assert worst > 0.01


def test_corrected_delta_never_underflows_to_a_false_pure_claim() -> None:
    """An uncovered arm (N = 0) in Ī has mass e^{−3000} on a neighbour: δ is tiny but not 0.

    δ = 0 would read as pure ε-DP, which the exact audit refutes (the loss is infinite).
    """
    data = LoggedBanditData(np.ones(100, int), np.ones(100), 2)
    policy = KLMABPolicy(2, eta=0.003, beta0=10.0).fit(data)
    corrected = policy.guarantee(kind="approx", n0=4)
    assert math.isfinite(corrected.epsilon) and 0.0 < corrected.delta < 1e-300
    report = audit_mab(policy, data, epsilon=corrected.epsilon)
    assert report.epsilon_hat == math.inf  # not pure DP at any ε
    assert not report.violates(corrected)


# ------------------------------------------------------------ tight per-instance and domain scopes
def _random_instance(gen: np.random.Generator, trial: int) -> tuple[KLMABPolicy, LoggedBanditData]:
    """Random and adversarial instances: a least-covered arm, extreme rewards, an unseen arm, π0 zeros."""
    k = int(gen.integers(1, 7))
    counts = gen.integers(2, 80, size=k)
    kind = trial % 5
    if kind == 1:
        counts[gen.integers(0, k)] = 2  # least-covered arm
    if kind == 2 and k > 1:
        counts[gen.integers(0, k)] = int(gen.integers(0, 2))  # an unseen arm, or a single record
    data = _dataset(gen, counts, continuous=kind in (0, 3))
    if kind == 3:  # extreme rewards only
        data = LoggedBanditData(data.actions, np.round(data.rewards), k)
    reference = None
    if kind == 4 and k > 1:
        reference = gen.dirichlet(np.ones(k))
        reference[gen.integers(0, k)] = 0.0
        reference /= reference.sum()
    eta = float(10 ** gen.uniform(-2.5, 0.5))
    beta0 = float(gen.choice([0.0, gen.uniform(0, 3), gen.uniform(5, 50)]))
    return KLMABPolicy(k, eta=eta, beta0=beta0, reference=reference).fit(data), data


def test_tight_variant_equals_the_exact_audit(rng: np.random.Generator) -> None:
    """The closed form of mab_exact_loss against recomputing every extreme neighbour (deterministic)."""
    finite = infinite = 0
    for trial in range(300):
        policy, data = _random_instance(rng, trial)
        tight = policy.guarantee(variant="tight")
        audited = audit_mab(policy, data).epsilon_hat
        if math.isinf(audited):
            assert math.isinf(tight.epsilon) and tight.reason
            infinite += 1
            continue
        assert tight.epsilon == pytest.approx(audited, rel=1e-7, abs=1e-12), trial
        assert tight.per_instance and not audit_mab(policy, data).violates(tight)
        theorem = policy.guarantee().epsilon
        assert tight.epsilon <= theorem / 2 * (1 + 1e-9) + 1e-12  # errata: KL-MAB sensitivity
        finite += 1
    assert finite > 200 and infinite > 10


def test_tight_variant_from_statistics_is_the_worst_dataset_with_those_statistics(rng: np.random.Generator) -> None:
    """From (N, S) alone the tight value is the loss of the dataset holding both the smallest and the largest
    reward compatible with the statistics (one such dataset always exists)."""
    for _ in range(30):
        counts = rng.integers(2, 30, size=3)
        sums = rng.uniform(0, 1, size=3) * counts
        stats = KLMABPolicy(3, eta=0.05, beta0=1.0).fit_statistics(counts, sums)
        actions, rewards = [], []
        for arm, (n, s) in enumerate(zip(counts, sums, strict=True)):
            low, high = max(0.0, s - (n - 1)), min(1.0, s)
            rest = (s - low - high) / (n - 2) if n > 2 else 0.0
            actions += [arm] * int(n)
            rewards += [low, high] + [rest] * int(n - 2)
        worst = LoggedBanditData(actions, rewards, 3)
        policy = KLMABPolicy(3, eta=0.05, beta0=1.0).fit(worst)
        assert stats.guarantee(variant="tight").epsilon == pytest.approx(audit_mab(policy, worst).epsilon_hat,
                                                                       rel=1e-7)


def _in_domain_loss(policy_factory, data: LoggedBanditData, min_count: int) -> float:  # type: ignore[no-untyped-def]
    from dpbandits.audit.exact import privacy_loss
    from dpbandits.audit.kl import mab_neighbour_datasets

    base = policy_factory().fit(data).log_probabilities_
    return max(privacy_loss(base, policy_factory().fit(other).log_probabilities_, log=True)
               for _, other in mab_neighbour_datasets(data, min_count=min_count))


@pytest.mark.parametrize("beta0", [0.0, 2.0, 20.0])
def test_domain_guarantee_holds_over_adversarial_in_domain_neighbours(beta0: float, rng: np.random.Generator) -> None:
    """Δ(m)/η is the sup over in-domain pairs: never exceeded, and approached when the moving arm is rare
    under π̃ (the adversarial base: arm 0 at the floor with rewards 0, a tiny π0(0), an R added)."""
    m, eta = 5, 0.2

    def policy(reference: np.ndarray | None = None) -> KLMABPolicy:
        return KLMABPolicy(3, eta=eta, beta0=beta0, reference=reference, min_count=m)

    claim = policy().fit(LoggedBanditData(np.repeat([0, 1, 2], m), np.zeros(3 * m), 3)).guarantee(
        scope="domain", variant="tight")
    for _ in range(15):  # random in-domain datasets
        data = _dataset(rng, rng.integers(m, m + 6, size=3), continuous=bool(rng.integers(2)))
        assert _in_domain_loss(policy, data, m) <= claim.epsilon * (1 + 1e-9)
    reference = np.array([1e-9, 0.5, 0.5 - 1e-9])
    adversarial = LoggedBanditData(np.repeat([0, 1, 2], m), np.r_[np.zeros(m), np.ones(2 * m)], 3)
    loss = _in_domain_loss(lambda: policy(reference), adversarial, m)
    assert 0.99 * claim.epsilon <= loss <= claim.epsilon * (1 + 1e-9)
    # negative control: the floor off by one (Δ(m + 1)/η) is refuted by the same audit
    understated = KLMABPolicy(3, eta=eta, beta0=beta0, min_count=m + 1).fit(
        LoggedBanditData(np.repeat([0, 1, 2], m + 1), np.zeros(3 * (m + 1)), 3)).guarantee(scope="domain", variant="tight")
    assert loss > understated.epsilon
