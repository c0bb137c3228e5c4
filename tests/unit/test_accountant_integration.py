"""Every private algorithm and release takes ``accountant=``, records its event, and is refused
*before* any noise is drawn when the budget would be exceeded (issue 14, "Budgets that are spent").

A spy noise backend (the secure backend, counting its draws) shows that nothing was drawn.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from dpbandits._core.errors import PrivacyBudgetExceededError
from dpbandits.algorithms.bai.dp_bai import DPBAI, DPBAIGauss
from dpbandits.algorithms.bai.dp_od import DPOD
from dpbandits.algorithms.dueling.dp_ebs_elimination import DPEBSElimination
from dpbandits.algorithms.dueling.goptimal_dpdb import GOptimalDPDB
from dpbandits.algorithms.dueling.ldp_ebs_elimination import LDPEBSElimination
from dpbandits.privacy.accounting import Accountant, GaussianEvent, PureEvent
from dpbandits.privacy.mechanisms import (
    ExponentialMechanism,
    GaussianMechanism,
    GridExponentialMechanism,
    LaplaceMechanism,
    ReportNoisyMaxMechanism,
    uniform_grid,
)
from dpbandits.privacy.noise import SecureNoise


class SpyNoise(SecureNoise):
    """The secure backend, counting every draw."""

    def __init__(self) -> None:
        super().__init__()
        self.draws = 0

    def _add(self, kind: str, values: Any, scale: Any) -> Any:
        self.draws += 1
        return super()._add(kind, values, scale)

    def gumbel_max(self, log_weights: Any, size: int | None = None) -> Any:
        self.draws += 1
        return super().gumbel_max(log_weights, size)


def _check(release: Any, epsilon: float) -> None:
    """``release(accountant, spy)`` is refused under a budget below ε and recorded under one above."""
    spy = SpyNoise()
    tight = Accountant(epsilon_budget=0.5 * epsilon, delta_budget=1e-3)
    with pytest.raises(PrivacyBudgetExceededError, match="nothing was spent"):
        release(tight, spy)
    assert spy.draws == 0 and tight.events == ()
    enough = Accountant(epsilon_budget=1.5 * epsilon, delta_budget=1e-3)
    release(enough, spy)
    assert len(enough.events) == 1 and enough.spent().epsilon > 0.0


@pytest.mark.parametrize("mechanism", [
    LaplaceMechanism(1.0, 1.0), GaussianMechanism(1.0, 1.0, 1e-5), ExponentialMechanism(1.0, 1.0),
    ReportNoisyMaxMechanism(1.0, 1.0), GridExponentialMechanism(uniform_grid(0.0, 1.0, [8]), 1.0, 1.0),
], ids=lambda m: m.name)
def test_mechanisms(mechanism: Any) -> None:
    _check(lambda acc, spy: mechanism.release(mechanism.example_input(), backend=spy, accountant=acc), mechanism.epsilon)


@pytest.mark.parametrize("algorithm", [
    DPBAI(np.eye(3), 30, 1.0), DPBAIGauss(np.eye(3), 30, 1.0, 1e-6, calibration="analytic"), DPOD(np.eye(3), 30, 1.0),
], ids=lambda a: type(a).__name__)
def test_bai_agents(algorithm: Any) -> None:
    _check(lambda acc, spy: algorithm.agent(noise_backend=spy, accountant=acc), algorithm.privacy.epsilon)


def test_dueling_agents() -> None:
    _check(lambda acc, spy: DPEBSElimination(3, 50, 1.0, noise_backend=spy, accountant=acc), 1.0)
    _check(lambda acc, spy: GOptimalDPDB(np.eye(2), 50, 1.0, noise_backend=spy, accountant=acc), 1.0)
    _check(lambda acc, spy: LDPEBSElimination(3, 50, 1.0, accountant=acc), 1.0)


def test_usca_recommend_and_feature_ridge_release() -> None:
    from dpbandits.algorithms.kernel.baselines import PrivateFeatureRidge
    from dpbandits.algorithms.kernel.features import quadrature_fourier_features
    from dpbandits.algorithms.kernel.usca import USCA
    from dpbandits.envs.kernel import KernelBanditEnvironment, StationaryKernel

    env = KernelBanditEnvironment(function_seed=1)
    agent = USCA(horizon=20, epsilon=1.0, reward_bound=1.5, kernel=env.kernel,
                 context_generator=env.sample_contexts, clip=True, rng=0)
    contexts = env.sample_contexts(20, rng=1)
    agent.observe(contexts, env.sample_rewards(agent.learning_actions, contexts, rng=2))
    _check(lambda acc, spy: agent.recommend([0.3], backend=spy, accountant=acc), 1.0)
    acc = Accountant(epsilon_budget=10.0)
    agent.recommend([0.3], size=3, accountant=acc)
    assert acc.spent().epsilon == pytest.approx(3.0)  # three draws, three releases
    qff = quadrature_fourier_features(StationaryKernel("se", 0.2), 2, nodes_per_axis=4)
    model = PrivateFeatureRidge(qff, epsilon=1.0, delta=1e-6, reward_bound=1.5)
    points, rewards = np.random.default_rng(0).random((5, 2)), np.zeros(5)
    spy = SpyNoise()
    with pytest.raises(PrivacyBudgetExceededError):
        model.release(points, rewards, backend=spy, accountant=Accountant(epsilon_budget=0.5, delta_budget=1e-6))
    assert spy.draws == 0
    acc = Accountant(method="pld")
    model.release(points, rewards, accountant=acc)
    assert acc.events[0].events == (GaussianEvent(model.sigma, model.l2_sensitivity),)


def test_an_accountant_composes_releases_of_one_unit() -> None:
    acc = Accountant(epsilon_budget=1.0)
    mechanism = LaplaceMechanism(1.0, 0.25)
    for _ in range(4):
        mechanism.release([0.0], accountant=acc)
    assert acc.remaining().epsilon == pytest.approx(0.0)
    with pytest.raises(PrivacyBudgetExceededError):
        mechanism.release([0.0], accountant=acc)
    assert acc.can_spend(PureEvent(0.0))


def test_kl_policies_and_baselines() -> None:
    from dpbandits.algorithms.offline import KLLinearPolicy, KLMABPolicy
    from dpbandits.algorithms.offline.baselines import (
        ExponentialMechanismMAB,
        LaplaceStatisticsGreedyMAB,
        ReportNoisyMaxMAB,
    )
    from dpbandits.envs.offline import LoggedBanditData, simulate_logged_contextual

    actions, rewards = [0] * 40 + [1] * 30 + [2] * 30, [1, 0] * 50
    mab = KLMABPolicy(n_arms=3, eta=0.5, beta0=0.1, min_count=20).fit(actions, rewards)
    _check(lambda acc, spy: mab.sample(backend=spy, accountant=acc), mab.sample_guarantee().epsilon)
    linear = KLLinearPolicy(eta=1.0, beta0=0.5, ridge=2.0, min_eigenvalue=20.0, max_records=400).fit(
        simulate_logged_contextual([0.3, 0.2], 300, rng=np.random.default_rng(0)))
    features = np.array([[0.5, 0.1], [0.0, 0.6], [0.3, 0.3]])
    _check(lambda acc, spy: linear.sample(features, backend=spy, accountant=acc), linear.sample_guarantee().epsilon)
    data = LoggedBanditData(actions, rewards, 3, 1.0)
    for cls in (ExponentialMechanismMAB, ReportNoisyMaxMAB):
        baseline = cls(3, epsilon=1.0, min_count=20).fit(data)
        _check(lambda acc, spy, b=baseline: b.sample(backend=spy, accountant=acc), 1.0)
    greedy = LaplaceStatisticsGreedyMAB(3, epsilon=1.0, min_count=20)
    _check(lambda acc, spy: greedy.fit(data, backend=spy, accountant=acc), 1.0)
