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
from dpbandits._core.schema import Array, Int, Maybe, StateSchema, rule
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
        _rounds=Int(0, "horizon"),
        _moment=Array("float64", (lambda a: a.feature_map.dim + 1, lambda a: a.feature_map.dim + 1)),
        _theta=Maybe(Array("float64", (lambda a: a.feature_map.dim,))),
        rules=[rule("θ is released exactly when all rounds are told",
                    lambda a, s: (s["_theta"] is None) == (s["_rounds"] < a.horizon)),
               rule("_moment = Σₜ aₜaₜᵀ of _rounds rounds: symmetric, positive semi-definite, zero before the "
                    "first round, Σₜ yₜ² <= _rounds·reward_bound² and trace <= _rounds·(max φᵀφ + reward_bound²)",
                    lambda a, s: _moment_reachable(a, s["_moment"], s["_rounds"])),
               rule("_moment positive definite enough to fit θ = (ΦᵀΦ + τI)⁻¹Φᵀy at epsilon = inf",
                    lambda a, s: a._release is not None or s["_theta"] is None
                    or bool(np.isfinite(a._fit(s["_moment"])).all()))],
    )

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
        c, y = self._check_context(context), self._check_reward(reward)
        w = np.concatenate([self.learning_actions[self._rounds], c])[None, :]
        a = np.append(self.feature_map.transform(w)[0], y)
        self._moment += np.outer(a, a)  # M += aₜaₜᵀ
        self._rounds += 1
        if self._rounds == self.horizon:
            self._theta = self._fit()

    def _set_state(self, state: dict[str, Any]) -> None:
        super()._set_state(state)
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
        _rounds=Int(0, "horizon"),
        _v_inverse=Array("float64", (lambda a: a.feature_map.dim, lambda a: a.feature_map.dim)),
        _b=Array("float64", (lambda a: a.feature_map.dim,)),
        _pending=Maybe(Array("float64", ("context_dim",), low=0.0, high=1.0)),
        _pending_index=Maybe(Int(0, lambda a: a._ucb_grid.shape[0] - 1)),
        rules=[rule("a pending context has its action's index", lambda a, s:
                    (s["_pending"] is None) == (s["_pending_index"] is None)),
               rule("_v_inverse = (ΦᵀΦ + τI)⁻¹ of _rounds rounds: I/τ before the first round, symmetric, "
                    "eigenvalues within [1/(τ + _rounds·max φᵀφ), 1/τ]",
                    lambda a, s: _v_inverse_reachable(a, s["_v_inverse"], s["_rounds"])),
               rule("_b = Φᵀy of _rounds rounds: ‖_b‖ <= _rounds·reward_bound·sqrt(max φᵀφ)",
                    lambda a, s: float(np.linalg.norm(s["_b"])) <= _slack(
                        s["_rounds"] * a.reward_bound * math.sqrt(a.feature_map.max_diag)))],
    )

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
        self._rounds += 1
        self._pending = self._pending_index = None

    def _coefficients(self) -> FloatArray:
        return np.asarray(self._v_inverse @ self._b)  # θ = V⁻¹b


def _slack(bound: float) -> float:
    """``bound`` with room for rounding (relative 1e-9 and absolute 1e-12)."""
    return bound * (1.0 + 1e-9) + 1e-12


def _moment_reachable(agent: UniformFeatureRidge, moment: FloatArray, rounds: int) -> bool:
    """Whether ``moment`` is Σₜ aₜaₜᵀ (aₜ = [φ(wₜ); yₜ]) of ``rounds`` rounds of ``agent``."""
    if rounds == 0:
        return not moment.any()
    if not np.array_equal(moment, moment.T):  # each aₜaₜᵀ is exactly symmetric, and so is their sum
        return False
    bound = agent.reward_bound**2
    trace = float(np.trace(moment))
    if not (0.0 <= moment[-1, -1] <= _slack(rounds * bound) and trace <= _slack(rounds * (agent.feature_map.max_diag + bound))):
        return False
    return bool(np.linalg.eigvalsh(moment)[0] >= -1e-9 * max(trace, 1.0))


def _v_inverse_reachable(agent: CGPUCB, v_inverse: FloatArray, rounds: int) -> bool:
    """Whether ``v_inverse`` is (ΦᵀΦ + τI)⁻¹ of ``rounds`` rows φ with φᵀφ <= max_diag."""
    if rounds == 0:
        return bool(np.array_equal(v_inverse, np.eye(v_inverse.shape[0]) / agent.tau))
    if not np.array_equal(v_inverse, v_inverse.T):  # Sherman–Morrison updates keep it exactly symmetric
        return False
    eigenvalues = np.linalg.eigvalsh(v_inverse)
    low = 1.0 / (agent.tau + rounds * agent.feature_map.max_diag)
    return bool(eigenvalues[0] >= low * (1.0 - 1e-6) and eigenvalues[-1] <= _slack(1.0 / agent.tau) * (1.0 + 1e-6))
