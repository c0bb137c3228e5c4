"""CoLSTIM, a non-private linear dueling-bandit baseline for GOptimal-DPDB.

The arms have features x_i and P(i ≻ j) = F(θ*ᵀ(x_i − x_j)) with the logistic F, the linear
stochastic transitivity model whose utilities θ*ᵀx_i + ε_i have standard Gumbel noise ε_i. CoLSTIM
(Bengs, Saha & Hüllermeier 2022, Algorithm 1) *imitates* that model: after ``exploration_rounds``
= τ uniformly random pairs of distinct arms, every round t:

1. θ̂_t: the logistic MLE on every past comparison (ridge λ for existence:
   :mod:`dpbandits.algorithms.dueling._pairwise_logistic`), M_t = λI + Σ_s z_s z_sᵀ;
2. perturbations ε_i ~ Gumbel(0, 1) (inverse CDF of coin (t, i)), trimmed to
   ε̃_i = max(−C, min(C, ε_i)) with threshold C = ``threshold`` (default √(d·ln T));
3. the first arm i_t = argmax_i θ̂ᵀx_i + ε̃_i·‖x_i‖_{M_t⁻¹} (the perturbed "winner" of the model);
4. the second arm j_t = argmax_j θ̂ᵀx_j + c₁·‖x_j − x_{i_t}‖_{M_t⁻¹}, c₁ = ``confidence_width``
   (default √(d·ln T)): its strongest optimistic competitor (j = i_t allowed, a self-duel).

The perturbations are drawn independently for every arm in every round. The paper's regret analysis
also considers coupling them (one shared perturbation with a probability that decays with t); that
variant is not implemented here. The defaults C = c₁ = √(d·ln T) are those of the paper's
experiments (as implemented by its authors' group); τ = d·K and λ = 1 are this implementation's
choices (ties: lowest index).

References
----------
V. Bengs, A. Saha and E. Hüllermeier, "Stochastic Contextual Dueling Bandits under Linear Stochastic
Transitivity Models", ICML 2022, Algorithm 1 (CoLSTIM) and Theorem 3.2 (regret Õ(√(dT))).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from dpbandits._core.rng import RNGLike
from dpbandits._core.typing import FloatArray, IntArray
from dpbandits._core.validation import check_positive_float
from dpbandits.algorithms.dueling._common import (
    DUELING_ENVIRONMENTS,
    check_dueling_env,
    round_horizon_precheck,
)
from dpbandits.algorithms.dueling._pairwise_logistic import PairwiseLogistic
from dpbandits.algorithms.dueling._rounds import (
    RoundAgent,
    RoundPolicy,
    simulate_policy,
    uniform_distinct_pair,
)
from dpbandits.algorithms.dueling._streams import counter_gumbel, round_coins, trial_streams
from dpbandits.algorithms.dueling.maxinp import LinearDuelingSettings, linear_dueling_settings
from dpbandits.algorithms.registry import register_algorithm, register_algorithm_class
from dpbandits.algorithms.sizes import check_pairwise_state
from dpbandits.envs.dueling import REGRET_METRICS, UtilityDuelingEnvironment

__all__ = ["CoLSTIM", "CoLSTIMPolicy", "simulate_colstim"]


def _widths(settings: LinearDuelingSettings, threshold: float | None, confidence_width: float | None) -> tuple[float, float]:
    default = math.sqrt(settings.dim * math.log(max(settings.horizon, 2)))  # √(d·ln T)
    c_thresh = default if threshold is None else check_positive_float(threshold, "threshold")
    c1 = default if confidence_width is None else check_positive_float(confidence_width, "confidence_width")
    return c_thresh, c1


class CoLSTIMPolicy(RoundPolicy):
    """CoLSTIM's state (pairwise statistics and θ̂) and step for a batch of trials.

    Coins of round t: ``round_coins(keys, t, K)``; coin 0 draws the exploration pair, coin i the
    Gumbel perturbation of arm i afterwards.
    """

    def __init__(self, settings: LinearDuelingSettings, keys: np.ndarray, threshold: float, width: float) -> None:
        super().__init__(settings.n_arms, keys)
        self.settings = settings
        self.threshold, self.width = threshold, width
        self.model = PairwiseLogistic(settings.features, self.n_trials, settings.ridge)

    def choose(self, t: int) -> tuple[IntArray, IntArray]:
        """The pair of round t in every trial (the step in the module docstring)."""
        k = self.n_arms
        if t <= self.settings.exploration_rounds:
            return uniform_distinct_pair(round_coins(self.keys, t, k, 1)[:, 0], k)  # coin 0 only
        theta = self.model.fit()
        products = self.model.feature_products()
        utilities = theta @ self.settings.features.T  # θ̂ᵀx_i
        own = np.sqrt(np.maximum(np.einsum("nii->ni", products), 0.0))  # ‖x_i‖_{M⁻¹}
        noise = np.clip(counter_gumbel(self.keys, t, k), -self.threshold, self.threshold)  # ε̃_i
        first = np.asarray(np.argmax(utilities + noise * own, axis=1), dtype=np.int64)
        spread = PairwiseLogistic.difference_norms(products, first)  # ‖x_j − x_{i_t}‖_{M⁻¹}
        second = np.asarray(np.argmax(utilities + self.width * spread, axis=1), dtype=np.int64)
        return first, second

    def update(self, first: IntArray, second: IntArray, outcome: IntArray, t: int) -> None:
        """Record the outcomes of round t."""
        self.model.add(first, second, outcome)

    def recommendation(self) -> IntArray:
        """argmax_x θ̂ᵀx."""
        theta = self.model.fit()
        return np.asarray(np.argmax(theta @ self.settings.features.T, axis=1), dtype=np.int64)


@register_algorithm_class("colstim")
class CoLSTIM(RoundAgent):
    """Ask/tell CoLSTIM agent (non-private).

    Parameters
    ----------
    features : array_like (K, d)
        The arms.
    horizon : int
        T (sets the default threshold and width √(d·ln T)).
    exploration_rounds : int, optional
        τ random pairs first (default d·K).
    ridge : float, default 1.0
        λ of the regularised MLE and of M.
    threshold : float, optional
        C, the trimming threshold of the perturbations (default √(d·ln T)).
    confidence_width : float, optional
        c₁ of the second arm (default √(d·ln T)).
    rng : int, SeedSequence, Generator or None
        The trial's seed (its algorithm stream gives the perturbations).

    Privacy
    -------
    None: a non-private baseline (it stores every raw outcome).

    References
    ----------
    Bengs, Saha & Hüllermeier (2022), Algorithm 1.

    Examples
    --------
    >>> from dpbandits.algorithms.dueling.colstim import CoLSTIM
    >>> agent = CoLSTIM([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]], horizon=100, rng=0)
    >>> agent.tell(agent.ask(), first_wins=True)
    """

    def __init__(self, features: Any, horizon: int, *, exploration_rounds: int | None = None, ridge: float = 1.0,
                 threshold: float | None = None, confidence_width: float | None = None, rng: RNGLike = None) -> None:
        settings = linear_dueling_settings(features, horizon, exploration_rounds, ridge, 1.0)
        check_pairwise_state("colstim", settings.n_arms)
        c_thresh, c1 = _widths(settings, threshold, confidence_width)
        policy = CoLSTIMPolicy(settings, np.array([trial_streams(rng).algorithm_key]), c_thresh, c1)
        super().__init__(policy, settings.horizon)


@register_algorithm(
    "colstim",
    precheck=functools.partial(round_horizon_precheck, algorithm="colstim"),
    family="dueling",
    privacy="none (non-private)",
    metrics=(*REGRET_METRICS, "identified_best"),
    proportion_metrics=("identified_best",),
    environments=DUELING_ENVIRONMENTS,
)
def simulate_colstim(
    env: UtilityDuelingEnvironment,
    *,
    n_trials: int,
    rng: RNGLike,
    horizon: int,
    exploration_rounds: int | None = None,
    ridge: float = 1.0,
    threshold: float | None = None,
    confidence_width: float | None = None,
) -> Mapping[str, FloatArray]:
    """CoLSTIM (Bengs, Saha & Hüllermeier 2022), all trials advanced together one round at a time.

    Parameters
    ----------
    env : UtilityDuelingEnvironment
        Arms with features (finite instances, or a net of the unit ball); logistic link assumed.
    n_trials : int
    rng : int, SeedSequence, Generator or None
        Trial k uses ``trial_seed_sequences(rng, n_trials)[k]`` (environment, algorithm streams).
    horizon : int
        T (at most 10⁸).
    exploration_rounds, ridge, threshold, confidence_width
        As in :class:`CoLSTIM`.

    Returns
    -------
    dict of str to ndarray (n_trials,)
        Regret metrics and ``identified_best`` (argmax θ̂ᵀx at T is the best arm).

    Privacy
    -------
    None: a non-private baseline.

    References
    ----------
    Bengs, Saha & Hüllermeier (2022), Algorithm 1 and Theorem 3.2 (regret Õ(√(dT))).
    """
    check_pairwise_state("colstim", check_dueling_env(env).n_arms, n_trials)
    settings = linear_dueling_settings(env.features, horizon, exploration_rounds, ridge, 1.0)
    c_thresh, c1 = _widths(settings, threshold, confidence_width)
    metrics, _ = simulate_policy(env, n_trials, rng, settings.horizon,
                                 lambda keys: CoLSTIMPolicy(settings, keys, c_thresh, c1), algorithm="colstim")
    return metrics
