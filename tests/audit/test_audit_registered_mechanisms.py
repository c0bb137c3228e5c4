"""Every registered mechanism is audited: a registration without an audit fails this suite.

For each factory of :func:`dpbandits.privacy.mechanisms.list_mechanisms`, the mechanism's claim
(ε, δ) is checked by the exact auditor, and the same mechanism with its noise parameter halved
(σ, b or η) is caught:

* additive Gaussian noise (``sigma``): δ(ε) of the discretised N(0, σ²) vs N(Δ, σ²);
* finite outputs (``log_probabilities`` / ``probabilities``): worst-case neighbouring utility
  vectors u' = u + Δ·s (sign patterns s allowed by the mechanism's neighbouring assumption:
  monotone, one utility, or general) on the example input and on bases with one action far below
  the others (which make the general bound tight);
* additive Laplace noise (``scale``): the discretised Laplace(0, b) vs Laplace(Δ, b).

The detailed, mechanism-specific audits (statistical ones included) are in the sibling files.
"""

from __future__ import annotations

import copy
import functools
import itertools
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from scipy import stats

from dpbandits.audit import ExactAuditReport, LaplaceDistribution, audit_exact, interval_log_probabilities
from dpbandits.privacy.mechanisms import Mechanism, list_mechanisms

REGISTERED = sorted(list_mechanisms())
MAX_ALL_SIGNS = 5  # enumerate all of {−1, 0, 1}^K up to K = 5 actions, else sample patterns


def _additive_audit(mechanism: Any, epsilon: float, delta: float, gaussian: bool) -> ExactAuditReport:
    sensitivity = mechanism.l2_sensitivity if gaussian else mechanism.sensitivity
    spread = mechanism.sigma if gaussian else mechanism.scale
    step = spread / 200 if gaussian else spread / 20
    edges = np.concatenate([[-math.inf], np.arange(-40 * spread, sensitivity + 40 * spread, step), [math.inf]])

    def distribution(true_value: float) -> np.ndarray:
        law = stats.norm(true_value, spread) if gaussian else LaplaceDistribution(true_value, spread)
        return interval_log_probabilities(law, edges)

    return audit_exact(distribution, [(0.0, sensitivity), (sensitivity, 0.0)], epsilon=epsilon, delta=delta,
                       log=True)


def _is_monotone(mechanism: Any) -> bool:
    """Whether the mechanism assumes monotone neighbours (possibly through its inner selector)."""
    inner = getattr(mechanism, "selector", None)
    return bool(getattr(mechanism, "monotone", False) or getattr(inner, "monotone", False))


def _sign_patterns(n_actions: int, mechanism: Any, rng: np.random.Generator) -> list[tuple[int, ...]]:
    exact_integration = not hasattr(mechanism, "log_probabilities")  # slow: corners only
    if n_actions <= MAX_ALL_SIGNS and not exact_integration:
        signs = list(itertools.product((-1, 0, 1), repeat=n_actions))
    else:
        signs = [tuple(int(a == b) * sign for b in range(n_actions)) for a in range(n_actions) for sign in (-1, 1)]
        signs += [tuple(np.where(np.arange(n_actions) == a, -sign, sign)) for a in range(n_actions) for sign in (-1, 1)]
        signs += [(1,) * n_actions, (-1,) * n_actions]
        if not exact_integration:
            signs += [tuple(int(v) for v in rng.choice([-1, 1], size=n_actions)) for _ in range(30)]
    if getattr(mechanism, "one_utility_changes", False):
        signs = [s for s in signs if sum(map(abs, s)) <= 1]
    elif _is_monotone(mechanism):
        signs = [s for s in signs if min(s) >= 0 or max(s) <= 0]
    return signs


def _finite_output_audit(mechanism: Any, epsilon: float, rng: np.random.Generator) -> ExactAuditReport:
    sensitivity = mechanism.sensitivity
    example = np.asarray(mechanism.example_input(), dtype=np.float64)
    n_actions = example.size
    bases = [example]
    if hasattr(mechanism, "log_probabilities"):  # cheap: add the bases that make the bound tight
        for action in range(n_actions):
            far_below = example.copy()
            far_below[action] -= 60.0 * sensitivity
            bases.append(far_below)
    pairs = [(tuple(u), tuple(u + sensitivity * np.asarray(s))) for u in bases
             for s in _sign_patterns(n_actions, mechanism, rng)]
    log_space = hasattr(mechanism, "log_probabilities")
    compute: Callable[[np.ndarray], np.ndarray] = (
        mechanism.log_probabilities if log_space else mechanism.probabilities
    )
    distribution = functools.lru_cache(maxsize=None)(lambda utilities: compute(np.asarray(utilities)))
    # numerical integration (report-noisy-max) is accurate to ~1e-10: tolerance 1e-6 there
    return audit_exact(distribution, pairs, epsilon=epsilon, log=log_space,
                       tolerance=1e-9 if log_space else 1e-6)


def _audit(mechanism: Mechanism, epsilon: float, delta: float, rng: np.random.Generator) -> ExactAuditReport:
    if hasattr(mechanism, "sigma"):
        return _additive_audit(mechanism, epsilon, delta, gaussian=True)
    if hasattr(mechanism, "probabilities"):
        return _finite_output_audit(mechanism, epsilon, rng)
    if hasattr(mechanism, "scale"):
        return _additive_audit(mechanism, epsilon, delta, gaussian=False)
    raise AssertionError(f"no audit for registered mechanism {type(mechanism).__name__}: add one here")


def _halve_noise(mechanism: Any) -> Any:
    broken = copy.copy(mechanism)
    if hasattr(broken, "selector"):  # a mechanism that delegates to an inner selection mechanism
        broken.selector = _halve_noise(broken.selector)
        return broken
    for attribute in ("sigma", "temperature", "scale"):
        if hasattr(broken, attribute):
            setattr(broken, attribute, getattr(broken, attribute) / 2.0)
            return broken
    raise AssertionError(f"no noise parameter known for {type(mechanism).__name__}")


@pytest.mark.parametrize("name", REGISTERED)
def test_registered_mechanism_passes_its_audit(name: str, rng: np.random.Generator) -> None:
    mechanism = list_mechanisms()[name]()
    report = _audit(mechanism, mechanism.epsilon, mechanism.delta, rng)
    assert report.passed, f"{name}: {report}"


@pytest.mark.parametrize("name", REGISTERED)
def test_registered_mechanism_with_halved_noise_is_caught(name: str, rng: np.random.Generator) -> None:
    mechanism = list_mechanisms()[name]()
    # the claim stays the original one (a Gibbs mechanism would otherwise re-derive ε from η)
    report = _audit(_halve_noise(mechanism), mechanism.epsilon, mechanism.delta, rng)
    assert not report.passed, f"{name}: {report}"
