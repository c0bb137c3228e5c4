"""The offline KL policies spend a data-independent guarantee (issue 23, defect 1).

Before: ``sample(accountant=acc)`` spent ``policy.privacy``, the per-instance guarantee, a
deterministic function of the data. With η = 0.5, β0 = 0.1 and a budget of 1.7, a dataset whose
least-covered arm has 11 records and its neighbour without one of them spent 0.8063 and 0.8963 per
sample, so they got 2 and 1 samples before the refusal; an arm with <= 1 record made the call raise.
Now every policy spends its guarantee over a declared public domain, and ``accountant=`` without a
declared domain is refused from the public parameters alone.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from dpbandits._core.errors import InvalidParameterError, PerInstanceSpendError, PrivacyBudgetExceededError
from dpbandits.algorithms.offline import KLLinearPolicy, KLMABPolicy, KLRLHFPolicy
from dpbandits.envs.offline import simulate_logged_contextual, simulate_preferences
from dpbandits.privacy.accounting import Accountant

BUDGET = 1.7
ACTIONS = np.array([[1.0, 0.0], [0.0, 1.0], [0.6, 0.6]])


def _mab_records(counts: list[int]) -> tuple[list[int], list[float]]:
    actions = [arm for arm, n in enumerate(counts) for _ in range(n)]
    rewards = [float(i % 2) for i in range(len(actions))]
    return actions, rewards


def _until_refused(sample: Any, budget: float = BUDGET) -> tuple[int, float]:
    """(samples drawn before the budget refuses one, ε spent then)."""
    accountant = Accountant(epsilon_budget=budget)
    drawn = 0
    while drawn < 1000:
        try:
            sample(accountant)
        except PrivacyBudgetExceededError:
            break
        drawn += 1
    return drawn, accountant.spent().epsilon


def test_mab_remove_neighbours_get_the_same_samples_and_the_same_ledger() -> None:
    d = _mab_records([11, 14, 20])  # the least-covered arm has 11 records
    neighbour = _mab_records([10, 14, 20])  # remove one record of that arm
    per_instance = [KLMABPolicy(3, eta=0.5, beta0=0.1).fit(*data).privacy.epsilon for data in (d, neighbour)]
    assert per_instance == pytest.approx([0.8063, 0.8963], abs=1e-4)  # what the old code spent
    policies = [KLMABPolicy(3, eta=0.5, beta0=0.1, min_count=10).fit(*data) for data in (d, neighbour)]
    runs = [_until_refused(lambda acc, p=p: p.sample(accountant=acc)) for p in policies]
    assert runs[0] == runs[1]  # refusal point and ledger identical (the old code: 2 vs 1 samples)
    per_sample = policies[0].sample_guarantee()
    assert not per_sample.per_instance and runs[0][0] == int(BUDGET // per_sample.epsilon)
    one = [Accountant(epsilon_budget=BUDGET) for _ in policies]
    for policy, accountant in zip(policies, one, strict=True):
        policy.sample(accountant=accountant)
    assert one[0].spent() == one[1].spent()  # the old code: 0.8063 vs 0.8963


def test_mab_add_a_record_of_an_unseen_arm() -> None:
    unseen = _mab_records([12, 15, 0])
    added = _mab_records([12, 15, 1])
    # no domain declared: both refused with the same message, nothing spent, no per-instance ε read
    messages = []
    for data in (unseen, added):
        policy = KLMABPolicy(3, eta=0.5, beta0=0.1, empty_fallback="raise").fit(*data)
        accountant = Accountant(epsilon_budget=BUDGET)
        with pytest.raises(PerInstanceSpendError, match="declare min_count") as caught:
            policy.sample(accountant=accountant)
        messages.append(str(caught.value))
        assert accountant.spent().epsilon == 0.0
    assert messages[0] == messages[1]
    # a floor of 1 declared: the unseen arm is outside the domain (refused at fit, counts not named);
    # the neighbour with one record is inside and samples (before: a data-dependent exception)
    with pytest.raises(InvalidParameterError, match="min_count = 1 for every arm with pi0") as outside:
        KLMABPolicy(3, eta=0.5, beta0=0.1, min_count=1).fit(*unseen)
    assert "N(2)" not in str(outside.value) and "got" not in str(outside.value)
    inside = KLMABPolicy(3, eta=0.5, beta0=0.1, min_count=1).fit(*added)
    accountant = Accountant(epsilon_budget=BUDGET)
    inside.sample(accountant=accountant)
    assert accountant.spent().epsilon == inside.sample_guarantee().epsilon < BUDGET


def test_mab_refusal_reads_no_statistic() -> None:
    policy = KLMABPolicy(3, eta=0.5, beta0=0.1).fit(*_mab_records([11, 14, 20]))
    for name in ("counts_", "reward_sums_", "reward_minima_", "reward_maxima_"):
        setattr(policy, name, None)  # reading any of them would raise a TypeError
    with pytest.raises(PerInstanceSpendError, match="declare min_count"):
        policy.sample(accountant=Accountant())
    floored = KLMABPolicy(3, eta=0.5, beta0=0.1, min_count=5).fit(*_mab_records([11, 14, 20]))
    floored.counts_ = None  # type: ignore[assignment]
    assert floored.sample_guarantee().epsilon > 0.0  # the domain guarantee reads no count either


def test_domain_refusals_do_not_report_the_statistic() -> None:
    messages = set()
    for counts in ([3, 14, 20], [11, 14, 0]):
        with pytest.raises(InvalidParameterError) as caught:
            KLMABPolicy(3, eta=0.5, min_count=5).fit(*_mab_records(counts))
        messages.add(str(caught.value))
    assert len(messages) == 1  # one message for every dataset outside the domain


def test_linear_neighbours_spend_the_same_and_no_domain_is_refused() -> None:
    data = simulate_logged_contextual(np.array([0.3, 0.2]), 300, rng=np.random.default_rng(0))
    with pytest.raises(PerInstanceSpendError, match="declare min_eigenvalue and max_records"):
        KLLinearPolicy(eta=1.0).fit(data).sample(ACTIONS, accountant=Accountant())
    with pytest.raises(PerInstanceSpendError, match="declare max_records"):
        KLLinearPolicy(eta=1.0, min_eigenvalue=20.0).fit(data).sample(ACTIONS, accountant=Accountant())
    features, rewards = data.features, data.rewards
    neighbours = [(features, rewards), (features[1:], rewards[1:])]
    policies = [KLLinearPolicy(eta=1.0, beta0=0.5, min_eigenvalue=20.0, max_records=400).fit(f, r)
                for f, r in neighbours]
    assert policies[0].guarantee(ACTIONS).epsilon != policies[1].guarantee(ACTIONS).epsilon  # per instance
    runs = [_until_refused(lambda acc, p=p: p.sample(ACTIONS, accountant=acc), budget=5.0) for p in policies]
    assert runs[0] == runs[1] and runs[0][0] >= 1


def test_rlhf_label_neighbours_spend_the_same() -> None:
    prefs = simulate_preferences(np.array([0.05, 0.02]), 300, rng=np.random.default_rng(1))
    labels = prefs.labels.copy()
    labels[0] = 1.0 - labels[0]  # flip one label
    policies = [KLRLHFPolicy(eta=1.0, norm_bound=0.1).fit(prefs.feature_differences, y)
                for y in (prefs.labels, labels)]
    spent = []
    for policy in policies:
        accountant = Accountant(epsilon_budget=10.0)
        policy.sample(ACTIONS, accountant=accountant)
        spent.append(accountant.spent().epsilon)
        assert not policy.sample_guarantee(ACTIONS).per_instance
    assert spent[0] == spent[1] == policies[0].sample_guarantee(ACTIONS).epsilon


def test_rejection_sampler_spends_the_domain_guarantee() -> None:
    data = simulate_logged_contextual(np.array([0.3, 0.2]), 300, rng=np.random.default_rng(2))

    def propose(generator: np.random.Generator, m: int) -> Any:
        return ACTIONS[generator.integers(0, len(ACTIONS), size=m)]

    undeclared = KLLinearPolicy(eta=1.0).fit(data)
    undeclared.theta_ = None  # type: ignore[assignment]  # refused before θ̂ is read
    with pytest.raises(PerInstanceSpendError, match="declare min_eigenvalue and max_records"):
        undeclared.sample_by_rejection(propose, n_proposals=10, theta_norm_bound=50.0, accountant=Accountant())
    spent = []
    for f, r in ((data.features, data.rewards), (data.features[1:], data.rewards[1:])):
        policy = KLLinearPolicy(eta=1.0, beta0=0.5, min_eigenvalue=20.0, max_records=400).fit(f, r)
        accountant = Accountant(epsilon_budget=1e3, delta_budget=1e-6)
        policy.sample_by_rejection(propose, n_proposals=200, theta_norm_bound=1.0, accountant=accountant)
        spent.append(accountant.spent())
        assert accountant.spent().epsilon >= policy.sample_guarantee().epsilon
    assert spent[0] == spent[1]


def test_guarantees_before_fit_are_public_or_refused_in_one_line() -> None:
    """The MAB domain guarantee needs only public parameters, so it is given before ``fit``; the linear
    one needs the fitted features' width d and the RLHF one the fitted comparisons, so each is refused
    with :class:`NotFittedError` (they raised a bare AttributeError before)."""
    from dpbandits import NotFittedError
    from dpbandits.algorithms.offline.kl_linear import KLLinearPolicy
    from dpbandits.algorithms.offline.kl_rlhf import KLRLHFPolicy

    unfitted = KLMABPolicy(3, eta=0.5, beta0=0.1, min_count=10)
    fitted = KLMABPolicy(3, eta=0.5, beta0=0.1, min_count=10).fit(*_mab_records([11, 14, 20]))
    assert unfitted.sample_guarantee() == fitted.sample_guarantee()
    with pytest.raises(NotFittedError):
        KLMABPolicy(3, eta=0.5, beta0=0.1).guarantee()  # per instance: reads the counts
    for policy in (KLLinearPolicy(eta=0.5, min_eigenvalue=3.0, max_records=100),
                   KLRLHFPolicy(eta=0.5, min_eigenvalue=3.0)):
        with pytest.raises(NotFittedError, match="not fitted"):
            policy.sample_guarantee()
