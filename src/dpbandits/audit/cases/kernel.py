"""Privacy cases of the kernel family (USCA, USCA with the trivial sensitivity, the private feature ridge).

Unit: one round's context and reward (joint DP, the t-neighbouring relation of Pavlovic et al.,
Definition 2.4). The learning actions, the approximating set, Ŝ, Δ and the output grid are public
coins; DP must hold for every value of them, so the audits condition on them (an input carries its
learning actions) and compare output laws on datasets that differ in one round.

USCA releases one grid point from the exponential mechanism, whose law on the grid is computable:
exact audits on the kernel and feature backends (and the refined sensitivity) over adversarial
pairs — the reward flipped from +B_y to −B_y at the grid point of largest posterior variance, a
context moved to the far corner with and without a flip, the reward flip at the certified argmax of
σ̄² over W (where Lemma 7.1's bound is attained), and random in-domain changes — plus a statistical
audit of the deployed sampler (OpenDP's exact Gumbel noisy-max) on the worst pair, with events
from the exact laws' log-likelihood ratio.

The private feature ridge releases M̃ = M + N (Gaussian on the upper triangle). Two datasets that
differ in one round shift the mean by the upper triangle of aaᵀ − a'a'ᵀ (the other rounds shift both
laws alike), so the law of the projection of M̃ on that shift's direction is a sufficient statistic
for the pair; its exact δ(ε) is that of two Gaussians, and it is attained by the tail beyond the
point where the log-likelihood ratio crosses ε — an edge of the discretisation, so the discretised
exact audit gives the Gaussian δ(ε) itself.

Negative controls: Δ understated tenfold (exact and statistical), Δ_ref understated, the trivial
sensitivity understated, and the ridge's Gaussian noise halved.
"""

from __future__ import annotations

import copy
import functools
import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray
from scipy import stats

from dpbandits.algorithms.kernel.baselines import PrivateFeatureRidge
from dpbandits.algorithms.kernel.features import FeatureMap, quadrature_fourier_features
from dpbandits.algorithms.kernel.sup_bound import sup_bound
from dpbandits.algorithms.kernel.usca import USCA
from dpbandits.audit.contract import NeighbourPair, PrivacyCase, register_privacy_cases, with_power
from dpbandits.audit.exact import interval_log_probabilities
from dpbandits.envs.kernel import KernelBanditEnvironment, StationaryKernel, joint_points

__all__ = [
    "RidgeRound",
    "USCAData",
    "adversarial_usca_pairs",
    "adversarial_usca_rounds",
    "audited_usca_agents",
    "realised_ridge_shift",
    "ridge_feature_map",
    "ridge_rounds",
    "usca_agent",
    "usca_log_distribution",
    "usca_surrogate_mean",
]

HORIZON, REWARD_BOUND, EPSILON = 100, 1.5, 1.0
ENVIRONMENT = KernelBanditEnvironment(function_seed=4)
PAIRS_SEED = 20261122  # the audit's own choice of random pairs (fixed: the cases are deterministic)
RIDGE_BOUND, RIDGE_DELTA = 1.5, 1e-6


class USCAData(NamedTuple):
    """One dataset of USCA: the learning actions (public coins), the rounds' data, and c_{T+1}."""

    actions: NDArray[np.float64]
    contexts: NDArray[np.float64]
    rewards: NDArray[np.float64]
    next_context: NDArray[np.float64]


def usca_agent(**options: Any) -> USCA:
    """USCA on the audit's environment (T = 100, B_y = 1.5, ε = 1), public coins from a fixed seed."""
    settings: dict[str, Any] = {"grid_points_per_dim": 256, "rng": np.random.SeedSequence(20261122), **options}
    return USCA(horizon=HORIZON, epsilon=EPSILON, reward_bound=REWARD_BOUND, kernel=ENVIRONMENT.kernel,
                context_generator=ENVIRONMENT.sample_contexts, **settings)


def _fit(agent: USCA, data: USCAData) -> None:
    """Give ``agent`` the dataset, observed with the dataset's learning actions (the coins conditioned on).

    The agent's own learning actions are restored afterwards: observing is where they are read.
    """
    coins = agent.learning_actions
    agent.learning_actions = data.actions
    try:
        agent.reset_data()
        agent.observe(data.contexts, data.rewards)
    finally:
        agent.learning_actions = coins


def usca_log_distribution(agent: USCA) -> Callable[[USCAData], NDArray[np.float64]]:
    """``data -> log P(x̂ = x_j)`` over the output grid, for the exact audit."""

    def distribution(data: USCAData) -> NDArray[np.float64]:
        _fit(agent, data)
        return np.asarray(agent.mechanism_log_probabilities(data.next_context)[0])

    return distribution


def usca_surrogate_mean(agent: USCA, data: USCAData) -> NDArray[np.float64]:
    """μ̄_T on the grid at c_{T+1} (what Lemma 7.1 bounds; not a release)."""
    _fit(agent, data)
    return agent._surrogate_mean(joint_points(agent.grid, data.next_context[None, :]))


def _variance_argmax(agent: USCA) -> NDArray[np.float64]:
    """The certified argmax of σ̄² over W (computed here when the agent used the trivial bound)."""
    if agent.sup.argmax is not None:
        return agent.sup.argmax
    certified = sup_bound("certified", agent.surrogate, agent.action_dim + agent.context_dim)
    return np.asarray(certified.argmax)


def adversarial_usca_rounds(agent: USCA, rng: np.random.Generator,
                            n_random: int) -> list[tuple[str, USCAData, USCAData]]:
    """(label, D, D') for the adversarial changes of one round, then ``n_random`` random ones.

    The base data are the environment's (rewards clipped to ±B_y); round t0 is changed.
    """
    contexts = ENVIRONMENT.sample_contexts(HORIZON, rng)
    rewards = np.clip(ENVIRONMENT.sample_rewards(agent.learning_actions, contexts, rng), -REWARD_BOUND, REWARD_BOUND)
    next_context = ENVIRONMENT.sample_contexts(1, rng)[0]
    variances = agent.surrogate.variance(joint_points(agent.grid, next_context[None, :]))
    x_star = agent.grid[int(np.argmax(variances))]  # the grid point of largest σ̄² at c_{T+1}
    far = 1.0 - np.round(next_context)
    corner = _variance_argmax(agent)

    def change(t: int, action: Any, c: Any, y: float, c_prime: Any, y_prime: float,
               c_next: Any) -> tuple[USCAData, USCAData]:
        actions = agent.learning_actions.copy()
        if action is not None:
            actions[t] = action
        first_c, first_y, second_c, second_y = contexts.copy(), rewards.copy(), contexts.copy(), rewards.copy()
        first_c[t], first_y[t], second_c[t], second_y[t] = c, y, c_prime, y_prime
        return USCAData(actions, first_c, first_y, c_next), USCAData(actions, second_c, second_y, c_next)

    b, t0 = REWARD_BOUND, int(rng.integers(HORIZON))
    rounds = [
        ("reward +B -> -B at the grid point of largest σ̄²", *change(t0, x_star, next_context, b, next_context, -b,
                                                                      next_context)),
        ("context moved to the far corner", *change(t0, x_star, next_context, b, far, b, next_context)),
        ("context moved to the far corner and reward flipped", *change(t0, x_star, next_context, b, far, -b,
                                                                       next_context)),
        ("reward +B -> -B at the certified argmax of σ̄² over W", *change(t0, corner[:1], corner[1:], b, corner[1:],
                                                                          -b, corner[1:])),
    ]
    for _ in range(n_random):  # random in-domain changes of one round
        t = int(rng.integers(HORIZON))
        rounds.append(("a random in-domain change of one round",
                       *change(t, None, contexts[t], rewards[t], rng.random(1), rng.uniform(-b, b), next_context)))
    return rounds


def adversarial_usca_pairs(agent: USCA, n_random: int = 10) -> list[NeighbourPair]:
    """The pairs of :func:`adversarial_usca_rounds` (fixed seed), as the contract's neighbour pairs."""
    rounds = adversarial_usca_rounds(agent, np.random.default_rng(PAIRS_SEED), n_random)
    return [NeighbourPair(label, first, second, adversarial=not label.startswith("a random"))
            for label, first, second in rounds]


def _variant(agent: USCA, *, epsilon: float | None = None, sensitivity_factor: float = 1.0) -> USCA:
    """A copy sharing the public precomputation, with another ε or a deliberately understated Δ."""
    clone = copy.copy(agent)
    clone.reset_data()  # its own data state
    if epsilon is not None:
        clone.epsilon = epsilon
    clone.sensitivity = agent.sensitivity * sensitivity_factor
    return clone


def _exact_usca_case(name: str, description: str, agent: USCA, pairs: list[NeighbourPair],
                     control: str = "") -> PrivacyCase:
    return PrivacyCase(name, description, agent.privacy, pairs, distribution=usca_log_distribution(agent),
                       broken=bool(control), notes={"control": control} if control else {})


class _LogLikelihoodRatio:
    """log P_D(x̂)/P_D'(x̂) of a sampled grid point, from the exact laws of the case's one pair.

    The events of the statistical audit are thresholds on it, chosen on a calibration draw; the laws
    are computed on the first call (never from the samples).
    """

    def __init__(self, agent: USCA, pair: NeighbourPair) -> None:
        self._agent, self._pair = agent, pair
        self._ratio: NDArray[np.float64] | None = None

    def __call__(self, releases: NDArray[Any]) -> NDArray[np.float64]:
        if self._ratio is None:
            distribution = usca_log_distribution(self._agent)
            self._ratio = distribution(self._pair.data) - distribution(self._pair.neighbour)
        index = np.searchsorted(self._agent.grid[:, 0], np.asarray(releases, dtype=np.float64))
        return self._ratio[index]


def _recommendations(agent: USCA) -> Callable[[USCAData, int, np.random.Generator], NDArray[np.float64]]:
    """``n`` draws of x̂ by the deployed :meth:`USCA.recommend` (secure OpenDP sampler) on a dataset."""

    def sample(data: USCAData, n: int, rng: np.random.Generator) -> NDArray[np.float64]:
        _fit(agent, data)
        return np.asarray(agent.recommend(data.next_context, size=n)[:, 0])

    return sample


def _sampled_usca_case(description: str, agent: USCA, pair: NeighbourPair, n_samples: int,
                       control: str = "") -> PrivacyCase:
    return PrivacyCase("usca", description, agent.privacy, [pair], sample=_recommendations(agent),
                       statistic=_LogLikelihoodRatio(agent, pair), n_samples=n_samples, broken=bool(control),
                       notes={"control": control} if control else {})


@functools.cache
def audited_usca_agents() -> dict[str, USCA]:
    """The USCA configurations the cases audit, built once: "kernel", "features", "refined", "trivial".

    Same public coins for all; only the precomputation is shared (each use resets the data).
    """
    return {
        "kernel": usca_agent(backend="kernel"),
        "features": usca_agent(n_features=12),
        "refined": usca_agent(n_features=12, sensitivity_method="refined"),
        "trivial": usca_agent(n_features=12, sup_method="trivial", grid_points_per_dim=128),
    }


@register_privacy_cases("usca", "usca-trivial-sensitivity")
def usca_cases() -> list[PrivacyCase]:
    """Exact audits of USCA's backends and sensitivities, a secure-sampler audit, and controls."""
    agents = audited_usca_agents()
    exact, features, refined, trivial = (agents[k] for k in ("kernel", "features", "refined", "trivial"))
    exact_pairs, feature_pairs = adversarial_usca_pairs(exact), adversarial_usca_pairs(features)
    refined_pairs, trivial_pairs = adversarial_usca_pairs(refined), adversarial_usca_pairs(trivial)
    worst = next(pair for pair in feature_pairs if "certified argmax" in pair.label)
    understated, control = "Δ understated tenfold", "sensitivity understated"
    return [
        *(_exact_usca_case("usca", f"kernel backend, ε = {eps:g}", _variant(exact, epsilon=eps), exact_pairs)
          for eps in (0.5, 1.0, 4.0)),
        _exact_usca_case("usca", "feature backend (QFF, 12 per axis), its own kernel k_D", features, feature_pairs),
        _exact_usca_case("usca", "refined sensitivity Δ_ref(c)", refined, refined_pairs),
        *(with_power(_sampled_usca_case("deployed recommend() (OpenDP Gumbel noisy-max) on the worst pair", features,
                                        worst, n), 0.5, "a threshold event at the median log-likelihood ratio",
                     n_events=12, heavy=n > 800) for n in (800, 8000)),
        _exact_usca_case("usca-trivial-sensitivity", "Ŝ = sup k(w, w)/τ", trivial, trivial_pairs),
        # negative controls (the adversarial pairs only)
        _exact_usca_case("usca", f"kernel backend, {understated}", _variant(exact, sensitivity_factor=0.1),
                         exact_pairs[:4], control),
        _exact_usca_case("usca", f"feature backend, {understated}", _variant(features, sensitivity_factor=0.1),
                         feature_pairs[:4], control),
        _exact_usca_case("usca", "refined sensitivity capped at Δ/10", _variant(refined, sensitivity_factor=0.1),
                         refined_pairs[:4], control),
        _sampled_usca_case(f"deployed recommend(), {understated}", _variant(features, sensitivity_factor=0.1), worst,
                           800, control),
        _exact_usca_case("usca-trivial-sensitivity", f"Ŝ = sup k(w, w)/τ, {understated}",
                         _variant(trivial, sensitivity_factor=0.1), trivial_pairs[:4], control),
    ]


# ------------------------------------------------------------------------------- private feature ridge
@dataclass(frozen=True)
class RidgeRound:
    """The differing round of a ridge dataset, with the pair's projection (the audit's output set).

    Attributes
    ----------
    point : ndarray (1, D)
        The round's joint point w = (x, c).
    reward : float
    direction : ndarray
        u, the unit vector of the pair's mean shift on the upper triangle.
    edges : ndarray
        Interval edges on uᵀ·triu(M̃), shared by the pair; they include the two points where the
        log-likelihood ratio equals ±ε.
    """

    point: NDArray[np.float64]
    reward: float
    direction: NDArray[np.float64]
    edges: NDArray[np.float64]


def _upper(model: PrivateFeatureRidge, point: NDArray[np.float64], reward: float) -> NDArray[np.float64]:
    moment = model.second_moment(point, [reward])
    return np.asarray(moment[np.triu_indices_from(moment)])


def realised_ridge_shift(model: PrivateFeatureRidge, first: tuple[Any, Any], second: tuple[Any, Any]) -> float:
    """ℓ₂ norm of the upper triangle of aaᵀ − a'a'ᵀ: the mean shift of the released entries."""
    return float(np.linalg.norm(_upper(model, *first) - _upper(model, *second)))


def ridge_rounds(model: PrivateFeatureRidge, rng: np.random.Generator,
                 n_random: int) -> list[tuple[str, tuple[Any, Any], tuple[Any, Any]]]:
    """(label, (w, y), (w', y')): the worst shift over corners × {−B_y, 0, B_y}, corner pairs, random rounds.

    The first round pair maximises the realised shift ‖triu(aaᵀ − a'a'ᵀ)‖ over every pair of rounds
    with w, w' at corners of [0, 1]² and y, y' in {−B_y, 0, B_y}.
    """
    corners = [np.array([[x, c]], dtype=np.float64) for x in (0.0, 1.0) for c in (0.0, 1.0)]
    b = RIDGE_BOUND
    candidates = [(w, y) for w in corners for y in (-b, 0.0, b)]
    uppers = [_upper(model, *candidate) for candidate in candidates]
    i, j = max(itertools.combinations(range(len(candidates)), 2),
               key=lambda ij: float(np.linalg.norm(uppers[ij[0]] - uppers[ij[1]])))
    worst = candidates[i], candidates[j]
    corner, opposite = corners[0], corners[-1]
    rounds: list[tuple[str, tuple[Any, Any], tuple[Any, Any]]] = [
        ("the worst shift over corners × {-B, 0, B}", *worst),
        ("corner, +B -> opposite corner, -B", (corner, b), (opposite, -b)),
        ("corner, reward +B -> -B", (corner, b), (corner, -b)),
        ("corner -> opposite corner, reward +B", (corner, b), (opposite, b)),
        ("corner, +B -> opposite corner, reward 0", (corner, b), (opposite, 0.0)),
    ]
    for _ in range(n_random):
        rounds.append(("a random in-domain change of one round", (rng.random((1, 2)), float(rng.choice([-b, b]))),
                       (rng.random((1, 2)), float(rng.uniform(-b, b)))))
    return rounds


def _ridge_pair(model: PrivateFeatureRidge, label: str, first: tuple[Any, Any],
                second: tuple[Any, Any]) -> NeighbourPair:
    upper_first, upper_second = _upper(model, *first), _upper(model, *second)
    shift = upper_first - upper_second
    u = shift / np.linalg.norm(shift)
    means = np.array([u @ upper_first, u @ upper_second])
    sigma, gap = model.sigma, float(means[0] - means[1])
    # log-likelihood ratio of the projection: (m₁ − m₂)(2x − m₁ − m₂)/(2σ²) = ±ε at these points
    crossings = means.mean() + np.array([-1.0, 1.0]) * model.epsilon * sigma**2 / gap
    grid = np.linspace(means.min() - 8 * sigma, means.max() + 8 * sigma, 41)
    edges = np.unique(np.concatenate([[-np.inf], grid, crossings, [np.inf]]))
    return NeighbourPair(label, RidgeRound(first[0], first[1], u, edges), RidgeRound(second[0], second[1], u, edges),
                         adversarial=not label.startswith("a random"))


def _ridge_distribution(model: PrivateFeatureRidge) -> Callable[[RidgeRound], NDArray[np.float64]]:
    """Law of uᵀ·triu(M̃) on the pair's intervals: N(uᵀ·triu(M), σ²) (one-round dataset)."""

    def distribution(data: RidgeRound) -> NDArray[np.float64]:
        mean = float(data.direction @ _upper(model, data.point, data.reward))
        return interval_log_probabilities(stats.norm(mean, model.sigma), data.edges)

    return distribution


class _HalvedNoiseRidge(PrivateFeatureRidge):
    """Deliberately broken: σ halved while claiming the same (ε, δ)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.sigma /= 2.0


def ridge_feature_map() -> FeatureMap:
    """The audited feature map: QFF of the SE kernel (length scale 0.2) on [0, 1]², 12 nodes per axis."""
    return quadrature_fourier_features(StationaryKernel("se", 0.2), 2, nodes_per_axis=12)


@register_privacy_cases("private-feature-ridge")
def ridge_cases() -> list[PrivacyCase]:
    """Exact Gaussian δ(ε) of the feature ridge's release on worst-case rounds, and a halved-noise control."""
    feature_map = ridge_feature_map()
    cases = []
    for model_class, control in ((PrivateFeatureRidge, ""), (_HalvedNoiseRidge, "noise too small")):
        model = model_class(feature_map, epsilon=EPSILON, delta=RIDGE_DELTA, reward_bound=RIDGE_BOUND)
        pairs = [_ridge_pair(model, *r) for r in ridge_rounds(model, np.random.default_rng(PAIRS_SEED), 10)]
        description = "QFF (12 per axis), analytic Gaussian" + (", σ halved" if control else "")
        cases.append(PrivacyCase("private-feature-ridge", description, model.privacy, pairs,
                                 distribution=_ridge_distribution(model), broken=bool(control),
                                 notes={"control": control} if control else {}))
    return cases
