"""USCA's baselines as contextual ask/tell agents: feature ridge on uniform samples (B1, B4) and CGP-UCB (B3).

Each agent learns for ``horizon`` rounds, ``ask(context)`` an action and ``tell(context, reward)``
its reward, in the feature space of a data-independent feature map φ of the kernel; then its
``recommendation`` is the released policy, the greedy choice argmax_{x ∈ X_N} φ(x, c)ᵀθ on the
output grid X_N (the same grid and feature maps as the registered simulations, which clip rewards to
±B_y as ``clip=True`` does).

Random streams, spawned from ``rng`` in this order: feature map, learning actions, privacy noise
(:class:`UniformFeatureRidge` with seeded noise only).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike
from scipy import linalg

from dpbandits._core.errors import InvalidActionError, InvalidParameterError, NotFittedError
from dpbandits._core.persistence import Persistable
from dpbandits._core.rng import RNGLike, as_generator, spawn_seed_sequences
from dpbandits._core.schema import Array, Maybe, Spec, StateSchema, rule
from dpbandits._core.typing import FloatArray
from dpbandits._core.validation import (
    check_bounded_array,
    check_epsilon,
    check_int,
    check_positive_float,
    check_real,
)
from dpbandits.algorithms.kernel.baselines import PrivateFeatureRidge
from dpbandits.algorithms.kernel.features import FeatureMap, make_feature_map
from dpbandits.algorithms.kernel.usca import PROTECTED_UNIT, action_grid
from dpbandits.algorithms.own_agent import OwnAgent
from dpbandits.algorithms.registry import register_algorithm_class
from dpbandits.envs.kernel import StationaryKernel, joint_points
from dpbandits.privacy.guarantees import ApproxDP, Neighbouring, NonPrivate
from dpbandits.privacy.noise import NoiseBackend, privacy_noise

__all__ = ["CGPUCB", "UniformFeatureRidge"]


class _FeatureLearner(OwnAgent, Persistable, ABC):
    """Common part: parameters, feature map, output grid, round checks, the greedy recommendation."""

    environment_params: ClassVar[tuple[str, ...]] = ("kernel", "action_dim", "context_dim")
    deployment_params: ClassVar[tuple[str, ...]] = ("clip",)  # the simulations always clip rewards
    _replay_rng = True  # rng draws public coins (feature map, learning actions)
    _rounds: int

    def _setup(self, horizon: int, reward_bound: float, kernel: StationaryKernel, action_dim: int,
               context_dim: int, tau: float, feature_map: str, n_features: int | None,
               grid_points_per_dim: int | None, clip: bool, map_seed: Any) -> None:
        self.horizon = check_int(horizon, "horizon", minimum=1)
        self.reward_bound = check_positive_float(reward_bound, "reward_bound")
        if not isinstance(kernel, StationaryKernel):
            raise InvalidParameterError(f"kernel must be a StationaryKernel; got {type(kernel).__name__}")
        self.kernel = kernel
        self.action_dim = check_int(action_dim, "action_dim", minimum=1)
        self.context_dim = check_int(context_dim, "context_dim", minimum=1)
        self.tau = check_positive_float(tau, "tau")
        self.clip = bool(clip)
        if not isinstance(feature_map, str):
            raise InvalidParameterError(f"feature_map must be a feature map's name; got {type(feature_map).__name__}")
        self.feature_map: FeatureMap = make_feature_map(kernel, self.action_dim + self.context_dim, feature_map,
                                                        n_features, map_seed)
        self.grid = action_grid(self.action_dim, grid_points_per_dim)
        self._rounds = 0
        # the told contexts and rewards (after clipping): the state saved; every statistic is derived from them
        self._told_contexts: list[FloatArray] = []
        self._told_rewards: list[float] = []

    def _progress(self) -> tuple[int, int]:
        """(rounds told, the horizon)."""
        return self._rounds, self.horizon

    def _check_context(self, context: ArrayLike) -> FloatArray:
        """One context c in [0, 1]^dc (projected only with ``clip``), shape (dc,)."""
        c = check_bounded_array(context, "context", 0.0, 1.0, clip=self.clip, ndim=(0, 1)).reshape(-1)
        if c.shape[0] != self.context_dim:
            raise InvalidParameterError(f"context must be one context of {self.context_dim} coordinate(s); "
                                        f"got {c.shape[0]} values")
        return c

    def _check_reward(self, reward: float) -> float:
        """yₜ in [−B_y, B_y] (clipped only with ``clip``)."""
        y = check_real(reward, "reward")
        if self.clip:
            return float(np.clip(y, -self.reward_bound, self.reward_bound))
        if not -self.reward_bound <= y <= self.reward_bound:
            raise InvalidParameterError(f"reward must lie in [-{self.reward_bound}, {self.reward_bound}] "
                                        f"(reward_bound; or clip=True); got {y}")
        return y

    def _record(self, context: FloatArray, reward: float) -> None:
        """Keep round ``_rounds``'s context and reward (the saved state) and count the round."""
        self._told_contexts.append(np.array(context, dtype=np.float64))
        self._told_rewards.append(float(reward))
        self._rounds += 1

    def _told_state(self) -> dict[str, Any]:
        return {"contexts": np.array(self._told_contexts, dtype=np.float64).reshape(-1, self.context_dim),
                "rewards": np.array(self._told_rewards, dtype=np.float64)}

    def _check_learning(self) -> None:
        if self._rounds >= self.horizon:
            raise NotFittedError(f"all horizon={self.horizon} learning rounds were told; read recommendation")

    @abstractmethod
    def _coefficients(self) -> FloatArray:
        """θ of the greedy policy (once all rounds are told)."""

    def recommend(self, context: ArrayLike) -> FloatArray:
        """The greedy action at context c: argmax_{x ∈ X_N} φ(x, c)ᵀθ (post-processing of the released θ).

        Raises
        ------
        NotFittedError
            Before all ``horizon`` rounds are told.
        """
        if self._rounds < self.horizon:
            raise NotFittedError(f"{type(self).__name__} recommends after all horizon={self.horizon} rounds; "
                                 f"{self._rounds} told")
        c = self._check_context(context)
        scores = self.feature_map.transform(joint_points(self.grid, c[None, :])) @ self._coefficients()
        return self.grid[int(np.argmax(scores))].copy()

    @property
    def recommendation(self) -> Any:
        """The released policy: :meth:`recommend`, a function from a context to an action.

        Raises
        ------
        NotFittedError
            Before all ``horizon`` rounds are told.
        """
        if self._rounds < self.horizon:
            raise NotFittedError(f"{type(self).__name__} has told {self._rounds} of its {self.horizon} rounds")
        return self.recommend


_TOLD: dict[str, Spec] = {
    "contexts": Array("float64", (None, "context_dim"), low=0.0, high=1.0),
    "rewards": Array("float64", (None,), low=lambda a: -a.reward_bound, high="reward_bound"),
}
"""The told rounds: each context in [0, 1]^dc and reward in [−B_y, B_y] (as told, after ``clip``)."""
_TOLD_ROWS = rule("contexts and rewards: one row per told round, at most horizon",
                  lambda a, s: s["contexts"].shape[0] == s["rewards"].shape[0] <= a.horizon)



@register_algorithm_class("private-feature-ridge", non_private="gp-uniform")
class UniformFeatureRidge(_FeatureLearner):
    """Uniform sampling, then feature ridge regression: private (B4) or the GP posterior mean (B1, ε = ∞).

    Round t plays the data-independent action xₜ ~ Unif([0, 1]^dx) and accumulates the second moment
    M = Σₜ aₜaₜᵀ, aₜ = [φ(wₜ); yₜ], wₜ = (xₜ, cₜ). After the last round θ is released once: with
    ε < ∞ from the noisy M̃ of :class:`~dpbandits.algorithms.kernel.baselines.PrivateFeatureRidge`
    (θ̃ = Ṽ⁻¹ũ); with ε = ∞, θ = (ΦᵀΦ + τI)⁻¹Φᵀy, so that φ(w)ᵀθ is the GP posterior mean μ_T(w).

    Parameters
    ----------
    horizon : int
        T, the number of learning rounds.
    epsilon : float
        ε > 0 of the release; ``inf`` for the non-private GP-uniform baseline.
    reward_bound : float
        B_y: rewards must lie in [−B_y, B_y] (fixed before seeing data).
    kernel : StationaryKernel
        The kernel on the joint space W = [0, 1]^dx × [0, 1]^dc.
    delta : float, default 1e-6
        δ of the release (ignored at ε = ∞).
    action_dim, context_dim : int, default 1
    tau : float, default 1.0
        τ > 0, the regulariser.
    feature_map : {"auto", "qff", "rff", "nystrom"}, default "auto"
    n_features : int, optional
    grid_points_per_dim : int, optional
        Output grid resolution (default :func:`~dpbandits.algorithms.kernel.usca.default_grid_points`).
    clip : bool, default False
        Clip rewards to [−B_y, B_y] and project contexts onto [0, 1]^dc instead of raising.
    rng : int, SeedSequence, Generator or None
        Public coins (feature map, learning actions); the noise seed only with ``insecure_seeded_noise``.
    noise_backend : NoiseBackend, optional
        Source of the release's Gaussian noise; default the secure OpenDP backend.
    insecure_seeded_noise : bool, default False
        Seeded NumPy noise from ``rng`` (simulation only; warns).

    Privacy
    -------
    ε < ∞: (ε, δ)-joint-DP for one round's context and reward: the learning actions are public coins
    and θ̃ is the analytic Gaussian mechanism on the second moment (see
    :class:`~dpbandits.algorithms.kernel.baselines.PrivateFeatureRidge`); every recommendation is
    post-processing of θ̃, released once. ε = ∞: not private.

    References
    ----------
    Baselines B1 and B4 of USCA's evaluation (Pavlovic, Salgia & Zhao 2025); Balle & Wang (2018),
    analytic Gaussian mechanism.

    Examples
    --------
    >>> from dpbandits.envs.kernel import KernelBanditEnvironment
    >>> env = KernelBanditEnvironment(function_seed=1)
    >>> agent = UniformFeatureRidge(horizon=20, epsilon=float("inf"), reward_bound=1.5, kernel=env.kernel,
    ...                             clip=True, rng=0)
    >>> contexts = env.sample_contexts(20, rng=1)
    >>> for c in contexts:
    ...     x = agent.ask(c)
    ...     agent.tell(c, float(env.sample_rewards(x[None, :], c[None, :], rng=2)[0]))
    >>> agent.recommendation([0.3]).shape
    (1,)
    """

    _schema = StateSchema(
        {**_TOLD, "_theta": Maybe(Array("float64", (lambda a: a.feature_map.dim,)))},
        rules=[_TOLD_ROWS,
               rule("θ is released exactly when all rounds are told",
                    lambda a, s: (s["_theta"] is None) == (s["rewards"].shape[0] < a.horizon))],
    )
    """The state is the told rounds and the released θ: the second moment M and the round count are
    recomputed from the rows on load (the same additions as :meth:`tell`), so every state that loads
    is that of a run told these contexts and rewards; at epsilon = inf θ is recomputed too."""

    def __init__(
        self, *, horizon: int, epsilon: float, reward_bound: float, kernel: StationaryKernel, delta: float = 1e-6,
        action_dim: int = 1, context_dim: int = 1, tau: float = 1.0, feature_map: str = "auto",
        n_features: int | None = None, grid_points_per_dim: int | None = None, clip: bool = False,
        rng: RNGLike = None, noise_backend: NoiseBackend | None = None, insecure_seeded_noise: bool = False,
    ) -> None:
        map_seed, learn_seed, noise_seed = spawn_seed_sequences(rng, 3)
        self._setup(horizon, reward_bound, kernel, action_dim, context_dim, tau, feature_map, n_features,
                    grid_points_per_dim, clip, map_seed)
        epsilon = check_epsilon(epsilon, allow_inf=True)
        self._release: PrivateFeatureRidge | None = None
        if math.isfinite(epsilon):
            self._release = PrivateFeatureRidge(self.feature_map, epsilon=epsilon, delta=delta,
                                                reward_bound=self.reward_bound, tau=self.tau, clip=self.clip)
            # the gate of every release: secure noise unless seeded noise is opted into (checked now)
            self._noise = privacy_noise(noise_seed if insecure_seeded_noise else None,
                                        insecure_seeded_noise=insecure_seeded_noise, backend=noise_backend)
        self.epsilon = epsilon
        self.learning_actions: FloatArray = as_generator(learn_seed).random((self.horizon, self.action_dim))
        dim = self.feature_map.dim
        self._moment = np.zeros((dim + 1, dim + 1))
        self._theta: FloatArray | None = None

    @property
    def privacy(self) -> ApproxDP | NonPrivate:
        """(ε, δ)-joint-DP for one round's context and reward (one release; any number of predictions)."""
        if self._release is None:
            return NonPrivate(unit=PROTECTED_UNIT, neighbouring=Neighbouring.JOINT,
                              reason="epsilon = inf: the non-private GP posterior mean (GP-uniform)")
        return self._release.privacy

    def ask(self, context: ArrayLike | None = None) -> FloatArray:
        """The next learning action xₜ ~ Unif([0, 1]^dx) (data-independent: the context is not read)."""
        self._check_learning()
        return self.learning_actions[self._rounds].copy()

    def tell(self, context: ArrayLike, reward: float) -> None:
        """Record the round's context cₜ and reward yₜ (for the action of :meth:`ask`); the last releases θ."""
        self._check_learning()
        self._accumulate(self._check_context(context), self._check_reward(reward))
        if self._rounds == self.horizon:
            self._theta = self._fit()

    def _accumulate(self, c: FloatArray, y: float) -> None:
        w = np.concatenate([self.learning_actions[self._rounds], c])[None, :]
        a = np.append(self.feature_map.transform(w)[0], y)
        self._moment += np.outer(a, a)  # M += aₜaₜᵀ
        self._record(c, y)

    def _get_state(self) -> dict[str, Any]:
        return {**self._told_state(), "_theta": self._theta}

    def _set_state(self, state: dict[str, Any]) -> None:
        self._rounds, self._told_contexts, self._told_rewards = 0, [], []
        self._moment = np.zeros_like(self._moment)
        for c, y in zip(state["contexts"], state["rewards"].tolist(), strict=True):
            self._accumulate(c, y)  # the moment of the told rounds, added as tell added it
        self._theta = state["_theta"]
        if self._release is None and self._theta is not None:
            # at epsilon = inf θ is not a release but a function of the moment: recomputed, never read
            self._theta = self._fit()

    def _fit(self, moment: FloatArray | None = None) -> FloatArray:
        moment = self._moment if moment is None else moment
        if self._release is not None:
            return self._release._release_moment(moment, self._noise)
        d = self.feature_map.dim
        # θ = (ΦᵀΦ + τI)⁻¹Φᵀy
        gram = moment[:d, :d] + self.tau * np.eye(d)
        return np.asarray(linalg.cho_solve(linalg.cho_factor(gram, lower=True), moment[:d, d]))

    def _coefficients(self) -> FloatArray:
        assert self._theta is not None
        return self._theta


@register_algorithm_class("cgp-ucb")
class CGPUCB(_FeatureLearner):
    """Contextual GP-UCB (B3, non-private, adaptive): xₜ = argmax μ_{t−1}(x, cₜ) + β·σ_{t−1}(x, cₜ).

    Feature form: V⁻¹ = (ΦᵀΦ + τI)⁻¹ by Sherman–Morrison updates, b = Φᵀy, μ = φᵀV⁻¹b and
    σ² = τ·φᵀV⁻¹φ; actions are chosen on a coarser grid (``ucb_grid_points_per_dim`` per axis).

    Parameters
    ----------
    horizon : int
        T, the number of rounds.
    reward_bound : float
        B_y: rewards must lie in [−B_y, B_y] (or ``clip=True``).
    kernel : StationaryKernel
    action_dim, context_dim : int, default 1
    tau : float, default 1.0
    beta : float, default 2.0
        β > 0, the exploration weight (constant).
    feature_map : {"auto", "qff", "rff", "nystrom"}, default "auto"
    n_features : int, optional
    grid_points_per_dim : int, optional
        The output grid of the recommendation.
    ucb_grid_points_per_dim : int, default 128
        The grid the learning actions are chosen on.
    clip : bool, default False
    rng : int, SeedSequence, Generator or None
        The feature map's coins.

    Privacy
    -------
    None: this algorithm is not private.

    References
    ----------
    A. Krause, C. S. Ong, "Contextual Gaussian Process Bandit Optimization", NeurIPS 2011.
    """

    _schema = StateSchema(
        {**_TOLD, "_pending": Maybe(Array("float64", ("context_dim",), low=0.0, high=1.0))},
        rules=[_TOLD_ROWS,
               rule("_pending: no context pending once all rounds are told",
                    lambda a, s: s["_pending"] is None or s["rewards"].shape[0] < a.horizon)],
    )
    """The state is the told rounds (and a context asked but not yet told): V⁻¹, b, the actions and
    the round count are recomputed on load by replaying :meth:`ask` and :meth:`tell` on the told rows
    (the actions are a function of the rounds before them), so every state that loads is that of a
    run told these contexts and rewards. Loading therefore costs what the told rounds cost to run
    (one UCB evaluation over the UCB grid per round)."""

    def __init__(
        self, *, horizon: int, reward_bound: float, kernel: StationaryKernel, action_dim: int = 1,
        context_dim: int = 1, tau: float = 1.0, beta: float = 2.0, feature_map: str = "auto",
        n_features: int | None = None, grid_points_per_dim: int | None = None, ucb_grid_points_per_dim: int = 128,
        clip: bool = False, rng: RNGLike = None,
    ) -> None:
        self._setup(horizon, reward_bound, kernel, action_dim, context_dim, tau, feature_map, n_features,
                    grid_points_per_dim, clip, spawn_seed_sequences(rng, 1)[0])
        self.beta = check_positive_float(beta, "beta")
        self._ucb_grid = action_grid(self.action_dim, ucb_grid_points_per_dim)
        self._v_inverse = np.eye(self.feature_map.dim) / self.tau
        self._b = np.zeros(self.feature_map.dim)
        self._pending: FloatArray | None = None
        self._pending_index: int | None = None

    @property
    def privacy(self) -> NonPrivate:
        """None: CGP-UCB is not private (:class:`~dpbandits.privacy.guarantees.NonPrivate`)."""
        return NonPrivate(unit=PROTECTED_UNIT, neighbouring=Neighbouring.JOINT, reason="CGP-UCB is non-private")

    def ask(self, context: ArrayLike) -> FloatArray:
        """The UCB action at this round's context cₜ.

        Raises
        ------
        NotFittedError
            If the previous round was not told, or all rounds were.
        """
        self._check_learning()
        if self._pending is not None:
            raise NotFittedError("tell the reward of the action last asked before asking again")
        c = self._check_context(context)
        phi = self.feature_map.transform(joint_points(self._ucb_grid, c[None, :]))
        projected = phi @ self._v_inverse
        # UCB = φᵀθ + β·√(τ·φᵀV⁻¹φ)
        ucb = projected @ self._b + self.beta * np.sqrt(np.maximum(
            self.tau * np.einsum("ij,ij->i", projected, phi), 0.0))
        self._pending, self._pending_index = c, int(np.argmax(ucb))
        return self._ucb_grid[self._pending_index].copy()

    def tell(self, context: ArrayLike, reward: float) -> None:
        """Record the reward of the action last asked, at the context it was asked for.

        Raises
        ------
        InvalidActionError
            If nothing was asked, or ``context`` is not the context of the last ask.
        """
        if self._pending is None or not np.array_equal(self._check_context(context), self._pending):
            raise InvalidActionError("tell(context, reward) answers the last ask(context), with the same context")
        y = self._check_reward(reward)
        phi = self.feature_map.transform(np.concatenate([self._ucb_grid[self._pending_index], self._pending])[None, :])[0]
        # Sherman–Morrison: V⁻¹ ← V⁻¹ − (V⁻¹φ)(V⁻¹φ)ᵀ/(1 + φᵀV⁻¹φ)
        u = self._v_inverse @ phi
        self._v_inverse -= np.outer(u, u) / (1.0 + u @ phi)
        self._b += phi * y
        self._record(self._pending, y)
        self._pending = self._pending_index = None

    def _get_state(self) -> dict[str, Any]:
        return {**self._told_state(), "_pending": self._pending}

    def _set_state(self, state: dict[str, Any]) -> None:
        self._rounds, self._told_contexts, self._told_rewards = 0, [], []
        self._v_inverse = np.eye(self.feature_map.dim) / self.tau
        self._b = np.zeros(self.feature_map.dim)
        self._pending = self._pending_index = None
        for c, y in zip(state["contexts"], state["rewards"].tolist(), strict=True):
            self.ask(c)  # the action the run chose at this round (a function of the rounds before it)
            self.tell(c, y)
        if state["_pending"] is not None:
            self.ask(state["_pending"])

    def _coefficients(self) -> FloatArray:
        return np.asarray(self._v_inverse @ self._b)  # θ = V⁻¹b

