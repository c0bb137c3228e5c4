"""The audit accepts the agents and policies a study accepts: members are checked on the built object.

A study checks an agent's ``done`` and ``recommendation`` on the instance (methods, properties — not
evaluated — or attributes set in ``__init__``); the audit used to read a policy's shape off its
class, so a policy whose ``fit``/``sample`` are set in ``__init__`` was "of no known unit", and an
agent without ``recommendation`` was audited as releasing None. Both paths now share one check
(:func:`dpbandits.algorithms.user_simulation.has_member`).
"""

from __future__ import annotations

import types

import numpy as np
import pytest

from dpbandits import PureDP
from dpbandits._core.errors import UserAlgorithmError
from dpbandits.algorithms.user_simulation import AgentSimulation
from dpbandits.audit.user import audit_algorithm

TINY = {"epsilon": 1.0, "seeded_noise": True, "search_runs": 10, "climb": 0, "certify_pairs": 1, "runs": 20}


class AttributeAgent:
    """Round-robin, report-noisy-max; ``done`` and ``recommendation`` are attributes set in ``__init__``."""

    def __init__(self, n_arms, budget, epsilon, *, rng=None):
        self.privacy = PureDP(epsilon=epsilon, unit="one entry of the reward table", neighbouring="replace-one")
        self.noise, self.budget, self.epsilon = np.random.default_rng(rng), budget, epsilon
        self.sums, self.pulls = np.zeros(n_arms), np.zeros(n_arms, dtype=int)
        self.done = False
        self.recommendation = None

    def ask(self):
        return int(np.argmin(self.pulls))

    def tell(self, arm, reward):
        self.sums[arm] += reward
        self.pulls[arm] += 1
        if self.pulls.sum() >= self.budget:
            self.done = True
            noisy = self.sums + self.noise.laplace(scale=2.0 / self.epsilon, size=self.sums.size)
            self.recommendation = int(np.argmax(noisy))


def attribute_agent(n_arms, budget, epsilon, *, rng=None):
    """A factory function, not a class, building the same agent."""
    return AttributeAgent(n_arms, budget, epsilon, rng=rng)


class InstanceMembersPolicy:
    """An offline policy whose ``fit`` and ``sample`` are set on the instance (a wrapper around two closures)."""

    def __init__(self, n_arms, epsilon, *, rng=None):
        self.privacy = PureDP(epsilon=epsilon, unit="one logged record", neighbouring="add/remove")
        noise = np.random.default_rng(rng)
        state = {}

        def fit(actions, rewards):
            # report-noisy-max on per-arm reward sums (one record moves one sum by <= 1): Laplace(2/eps)
            sums = np.bincount(np.asarray(actions), weights=np.asarray(rewards), minlength=n_arms)
            state["best"] = int(np.argmax(sums + noise.laplace(scale=2.0 / epsilon, size=n_arms)))

        self.fit = fit
        self.sample = lambda: state["best"]


class NoRecommendation(AttributeAgent):
    def __init__(self, n_arms, budget, epsilon, *, rng=None):
        super().__init__(n_arms, budget, epsilon, rng=rng)
        del self.recommendation


@pytest.mark.parametrize("agent", [AttributeAgent, attribute_agent], ids=["class", "factory function"])
def test_an_agent_with_members_set_in_init_is_audited_as_a_study_runs_it(agent) -> None:
    report = audit_algorithm(agent, n_arms=2, params={"budget": 4}, rng=1, **TINY)
    assert report.unit == "reward" and not report.refuted, str(report)
    study = AgentSimulation(f"{__name__}:{agent.__name__}")
    assert len(study.build_agents(types.SimpleNamespace(n_arms=2), {"budget": 4, "epsilon": 1.0},
                                  [np.random.SeedSequence(0)])) == 1


def test_a_policy_with_members_set_in_init_is_audited_for_one_record() -> None:
    report = audit_algorithm(InstanceMembersPolicy, n_arms=2, rng=1, **TINY)
    assert report.unit == "record" and not report.refuted, str(report)


def test_an_agent_without_a_recommendation_is_refused_as_a_study_refuses_it() -> None:
    with pytest.raises(UserAlgorithmError, match=r"has no recommendation: audited as an ask/tell agent"):
        audit_algorithm(NoRecommendation, n_arms=2, params={"budget": 4}, rng=1, **TINY)
    study = AgentSimulation(f"{__name__}:NoRecommendation")
    with pytest.raises(UserAlgorithmError, match="the agent has no recommendation"):
        study.build_agents(types.SimpleNamespace(n_arms=2), {"budget": 4, "epsilon": 1.0}, [np.random.SeedSequence(0)])
