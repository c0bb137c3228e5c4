"""The linear and RLHF policies' ``variant="tight"`` against a brute force over neighbours.

On small instances (d = 2, a few records) the per-instance loss is recomputed from scratch, with a
sampling law computed independently of the library: the ridge estimate by ``numpy.linalg.solve``,
the constrained Bradley–Terry MLE by SciPy's SLSQP, Σ⁻¹ by ``numpy.linalg.inv``. Every removal and
label flip is refitted; additions are searched on a grid of the disc (with each reward end point or
label) refined by Nelder–Mead. The printed ε must never be below the loss found (valid) and at most
1.5× above it (tight; the loss found is itself at most the exact supremum). A bracket that skips the
additions is shown to fail the same check.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import expit, log_expit, logsumexp

from dpbandits.algorithms.offline import KLLinearPolicy, KLRLHFPolicy, certified_linear, certified_rlhf
from dpbandits.algorithms.offline.loss_bracket import LossBracket

ETA, BETA0 = 0.5, 0.3
ROUNDING = 1e-9  # the brute force's own rounding (SLSQP solves to ~1e-12)


def _log_gibbs(theta: np.ndarray, covariance: np.ndarray, actions: np.ndarray) -> np.ndarray:
    inverse = np.linalg.inv(covariance)
    u = (actions @ theta - BETA0 * np.sqrt(np.einsum("ij,jk,ik->i", actions, inverse, actions))) / ETA
    return np.asarray(u - logsumexp(u))


def _linear_law(x: np.ndarray, r: np.ndarray, actions: np.ndarray, ridge: float) -> np.ndarray:
    covariance = ridge * np.eye(x.shape[1]) + x.T @ x
    return _log_gibbs(np.linalg.solve(covariance, x.T @ r), covariance, actions)


def _bt_mle(z: np.ndarray, y: np.ndarray, bound: float) -> np.ndarray:
    def value(t: np.ndarray) -> float:
        m = z @ t
        return float(-(y @ m + np.sum(log_expit(-m))))

    def gradient(t: np.ndarray) -> np.ndarray:
        return np.asarray(-(z.T @ (y - expit(z @ t))))

    ball = {"type": "ineq", "fun": lambda t: bound**2 - t @ t, "jac": lambda t: -2.0 * t}
    res = minimize(value, np.zeros(z.shape[1]), jac=gradient, constraints=[ball], method="SLSQP",
                   options={"ftol": 1e-15, "maxiter": 1000})
    return np.asarray(res.x)


def _rlhf_law(z: np.ndarray, y: np.ndarray, actions: np.ndarray, ridge: float, bound: float) -> np.ndarray:
    return _log_gibbs(_bt_mle(z, y, bound), ridge * np.eye(z.shape[1]) + z.T @ z, actions)


def _search_disc(loss: Callable[[np.ndarray, float], float], radius: float, extras: tuple[float, ...]) -> float:
    """Largest loss of an added record: a polar grid of the disc, then Nelder–Mead from the best points."""
    scored = []
    for extra in extras:
        for angle in np.linspace(0.0, 2.0 * math.pi, 24, endpoint=False):
            for rho in (0.5 * radius, radius):
                point = rho * np.array([math.cos(angle), math.sin(angle)])
                scored.append((loss(point, extra), point, extra))
    scored.sort(key=lambda item: -item[0])
    best = scored[0][0]

    def clipped(v: np.ndarray) -> np.ndarray:
        norm = float(np.linalg.norm(v))
        return v if norm <= radius else v * (radius / norm)

    for _, start, extra in scored[:3]:
        res = minimize(lambda v, e=extra: -loss(clipped(v), e), start, method="Nelder-Mead",
                       options={"xatol": 1e-7, "fatol": 1e-10, "maxiter": 300})
        best = max(best, -float(res.fun))
    return best


def _instance(seed: int, n: int, norm: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    gen = np.random.default_rng(seed)
    x = gen.standard_normal((n, 2))
    x *= np.minimum(1.0, norm / np.linalg.norm(x, axis=1))[:, None]
    actions = gen.standard_normal((3, 2))
    actions /= np.linalg.norm(actions, axis=1, keepdims=True)
    return x, gen.random(n), actions


def _linear_brute_force(seed: int) -> tuple[KLLinearPolicy, np.ndarray, float]:
    x, r, actions = _instance(seed, 5, 1.0)
    ridge = 2.0
    base = _linear_law(x, r, actions, ridge)
    removals = max(float(np.max(np.abs(_linear_law(np.delete(x, i, 0), np.delete(r, i), actions, ridge) - base)))
                   for i in range(len(r)))

    def added(point: np.ndarray, reward: float) -> float:
        law = _linear_law(np.vstack([x, point]), np.append(r, reward), actions, ridge)
        return float(np.max(np.abs(law - base)))

    additions = _search_disc(added, 1.0, (0.0, 1.0))
    policy = KLLinearPolicy(eta=ETA, beta0=BETA0, ridge=ridge).fit(x, r)
    return policy, actions, max(removals, additions)


def _rlhf_brute_force(seed: int, neighbouring: str) -> tuple[KLRLHFPolicy, np.ndarray, float]:
    z, u, actions = _instance(seed, 6, 1.9)
    y = (u < 0.5).astype(float)
    ridge, bound = 1.0, 1.0
    base = _rlhf_law(z, y, actions, ridge, bound)
    policy = KLRLHFPolicy(eta=ETA, beta0=BETA0, ridge=ridge, norm_bound=bound).fit(z, y)
    if neighbouring == "label":
        flips = [np.where(np.arange(len(y)) == i, 1.0 - y, y) for i in range(len(y))]
        return policy, actions, max(float(np.max(np.abs(_rlhf_law(z, f, actions, ridge, bound) - base)))
                                    for f in flips)
    removals = max(float(np.max(np.abs(_rlhf_law(np.delete(z, i, 0), np.delete(y, i), actions, ridge, bound)
                                       - base))) for i in range(len(y)))

    def added(point: np.ndarray, label: float) -> float:
        law = _rlhf_law(np.vstack([z, point]), np.append(y, label), actions, ridge, bound)
        return float(np.max(np.abs(law - base)))

    return policy, actions, max(removals, _search_disc(added, 2.0, (0.0, 1.0)))


def _check(printed: float, found: float) -> None:
    assert printed >= found - ROUNDING, f"printed {printed} below the loss of a neighbour {found}: invalid"
    assert printed <= 1.5 * found, f"printed {printed} more than 1.5x the loss found {found}"


@pytest.mark.parametrize("seed", [1, 2])
def test_linear_tight_is_valid_and_within_1_5x(seed: int) -> None:
    policy, actions, found = _linear_brute_force(seed)
    guarantee = policy.guarantee(actions, variant="tight")
    _check(guarantee.epsilon, found)
    assert "a neighbour reaches" in guarantee.reference and "of the exact loss" in guarantee.reference
    assert policy.guarantee(actions, variant="refined").epsilon > 3.0 * found  # what the old word meant


@pytest.mark.parametrize("seed", [2, 3])
def test_rlhf_label_tight_is_valid_and_within_1_5x(seed: int) -> None:
    policy, actions, found = _rlhf_brute_force(seed, "label")
    _check(policy.guarantee(actions, variant="tight").epsilon, found)


def test_rlhf_add_remove_tight_is_valid_and_within_1_5x() -> None:
    policy, actions, found = _rlhf_brute_force(5, "add_remove")
    guarantee = policy.guarantee(actions, variant="tight", neighbouring="add_remove")
    _check(guarantee.epsilon, found)
    assert guarantee.epsilon < policy.guarantee(actions, neighbouring="add_remove").epsilon / 3


@pytest.mark.slow
@pytest.mark.parametrize("seed", [3, 4, 5, 6])
def test_more_instances_slow(seed: int) -> None:
    policy, actions, found = _linear_brute_force(seed)
    _check(policy.guarantee(actions, variant="tight").epsilon, found)
    rlhf, prompts, found = _rlhf_brute_force(seed, "label")
    _check(rlhf.guarantee(prompts, variant="tight").epsilon, found)
    rlhf, prompts, found = _rlhf_brute_force(seed + 10, "add_remove")
    _check(rlhf.guarantee(prompts, variant="tight", neighbouring="add_remove").epsilon, found)


def _without_additions(*args: object, **kwargs: object) -> LossBracket:
    return LossBracket(0.0, 0.0, "additions skipped", 0, True)


def test_the_check_fails_when_the_additions_are_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    """The planted bug: a bracket over removals (and flips) only is too small, and the check says so."""
    policy, actions, found = _linear_brute_force(1)
    monkeypatch.setattr(certified_linear, "branch_and_bound", _without_additions)
    with pytest.raises(AssertionError, match="invalid"):
        _check(policy.guarantee(actions, variant="tight").epsilon, found)
    rlhf, prompts, found = _rlhf_brute_force(5, "add_remove")
    monkeypatch.setattr(certified_rlhf, "branch_and_bound", _without_additions)
    with pytest.raises(AssertionError, match="invalid"):
        _check(rlhf.guarantee(prompts, variant="tight", neighbouring="add_remove").epsilon, found)
