"""USCA — Uniform Sampling with Covariance Approximation: ε-jointly-DP kernelised contextual bandits.

Algorithm 1 of Pavlovic, Salgia & Zhao (2025), with the fixes of the paper errata (USCA-A1 to USCA-A7):

1. *Public precomputation* (no data): feature map (feature backend), γ̂ (data-independent estimate),
   K = ⌈T/γ̂⌉, M = T·K, the approximating set 𝒵 ~ ϱ^M, the surrogate Z̃, a **certified** upper bound
   Ŝ >= sup_W σ̄², the sensitivity Δ = 2·B_y·Ŝ, the output grid X_N and the learning actions.
2. *Learning*: for t = 1..T play xₜ ~ Unif(X) (drawn in step 1), observe cₜ (projected onto C only if
   asked) and yₜ (clipped to [−B_y, B_y] only if asked; otherwise out-of-range data is an error).
3. *Prediction*: for c_{T+1}, sample x̂ from P(x_j) ∝ exp(ε·μ̄_T(x_j, c_{T+1})/(2Δ)) on X_N (the
   exponential mechanism with a uniform base measure on a data-independent grid).

Random streams, spawned from the algorithm's ``rng`` in this order: feature map, γ̂ estimation,
approximating set, learning actions. The mechanism's randomness is the ``rng`` passed to
:meth:`USCA.recommend` (the privacy-noise stream, last).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from dpbandits._core.errors import InvalidParameterError, NotFittedError
from dpbandits._core.persistence import Persistable
from dpbandits._core.resources import check_fits
from dpbandits._core.rng import RNGLike, as_generator, spawn_seed_sequences
from dpbandits._core.schema import Array, Int, StateSchema, rule
from dpbandits._core.typing import FloatArray
from dpbandits._core.validation import (
    check_array,
    check_bounded_array,
    check_epsilon,
    check_int,
    check_one_of,
    check_positive_float,
    check_real,
)
from dpbandits.algorithms.kernel._usca_simulation import EVALUATION_POINTS as EVALUATION_POINTS
from dpbandits.algorithms.kernel._usca_simulation import USCA_METRICS as USCA_METRICS
from dpbandits.algorithms.kernel._usca_simulation import _evaluate as _evaluate
from dpbandits.algorithms.kernel._usca_simulation import simulate_usca
from dpbandits.algorithms.kernel._usca_simulation import simulate_usca_nonprivate as simulate_usca_nonprivate
from dpbandits.algorithms.kernel._usca_simulation import simulate_usca_trivial as simulate_usca_trivial
from dpbandits.algorithms.kernel.evaluation import (
    argmax_log_probabilities,
    grid_points,
)
from dpbandits.algorithms.kernel.features import FeatureMap, make_feature_map
from dpbandits.algorithms.kernel.information_gain import resolve_gamma
from dpbandits.algorithms.kernel.sup_bound import SupBound, sup_bound
from dpbandits.algorithms.kernel.surrogate import (
    ApproximatingSet,
    ContextGenerator,
    ExactKernelSurrogate,
    FeatureSurrogate,
    accumulate_feature_gram,
    exact_kernel_peak_bytes,
)
from dpbandits.algorithms.own_agent import OwnAgent
from dpbandits.algorithms.registry import register_algorithm_class
from dpbandits.envs.kernel import StationaryKernel, joint_points
from dpbandits.privacy.accounting import Accountant, spend
from dpbandits.privacy.guarantees import Neighbouring, NonPrivate, PureDP
from dpbandits.privacy.mechanisms import BackendLike, GridExponentialMechanism, uniform_grid
from dpbandits.privacy.noise import NoiseBackend, privacy_noise

__all__ = [
    "BACKENDS",
    "PROTECTED_UNIT",
    "SENSITIVITY_METHODS",
    "USCA",
    "USCA_REFERENCE",
    "action_grid",
    "default_grid_points",
    "simulate_usca",
]

BACKENDS = ("features", "kernel")
SENSITIVITY_METHODS = ("paper", "refined")
PROTECTED_UNIT = "one round's context and reward"
USCA_REFERENCE = (
    "Pavlovic, Salgia & Zhao (2025), Differentially Private Kernelized Contextual Bandits, "
    "Theorem 4.1 (= Theorem 7.3; Lemmas 7.1-7.2), with a certified sup of the surrogate variance "
    "(errata USCA-A3)"
)
_DEFAULT_MAX_EXACT_SIZE = 12_000  # exact_kernel_peak_bytes(12 000, T) ≈ 1.6 GB (an M × M factor of 1.15 GB)


def default_grid_points(action_dim: int) -> int:
    """Points per axis of the default output grid: 1024 for d = 1, 64² for d = 2, 24³ for d = 3."""
    return {1: 1024, 2: 64, 3: 24}.get(action_dim, max(2, round(4096 ** (1.0 / action_dim))))


def action_grid(action_dim: int, points_per_dim: int | None) -> FloatArray:
    """The output grid X_N: cell centres of a regular grid of [0, 1]^dx, fixed before any data.

    ``points_per_dim`` per axis (default :func:`default_grid_points`); a grid whose N = n^dx points
    cannot fit in memory is refused before it is built (``grid_points_per_dim`` named).
    """
    n = check_int(default_grid_points(action_dim) if points_per_dim is None else points_per_dim,
                  "grid_points_per_dim", minimum=1)
    check_fits("grid_points_per_dim", n, 8.0 * action_dim * float(n) ** action_dim,
               what=f"the output grid of n^{action_dim} points")
    return uniform_grid(0.0, 1.0, [n] * action_dim)


@register_algorithm_class("usca", "usca-trivial-sensitivity", non_private="usca-nonprivate")
class USCA(OwnAgent, Persistable):
    """ε-jointly-DP USCA with an exact kernel backend (small T) or a feature backend (large T).

    Parameters
    ----------
    horizon : int
        T, the number of learning rounds.
    epsilon : float
        ε > 0 per prediction; ``inf`` gives the non-private USCA (argmax of μ̄_T, baseline B2).
    reward_bound : float
        B_y: rewards must lie in [−B_y, B_y] (fixed before seeing data).
    kernel : StationaryKernel
        The kernel k on the joint space W = [0, 1]^dx × [0, 1]^dc, w = (x, c).
    context_generator : callable
        ``generator(size, rng) -> (size, dc)`` draws from the context law κ (Assumption 2.10);
        its draws are the algorithm's own coins, never data.
    action_dim, context_dim : int, default 1
    tau : float, default 1.0
        τ > 0, the regulariser (fixed a priori).
    backend : {"features", "kernel"}, default "features"
        ``"kernel"``: exact eqs. 4–5 (M × M, small T only). ``"features"``: the feature form (D_f × D_f).
        Both keep the observed rounds' contexts and rewards ((dc + 1) floats a round) and compute
        b = Σₜ φ(wₜ)·yₜ (or the exact fit) from them once, at the first prediction.
    feature_map : {"auto", "qff", "rff", "nystrom"} or FeatureMap, default "auto"
        Feature backend only; a string builds one from the feature-map stream.
    n_features : int, optional
        Size parameter of the feature map (see :func:`make_feature_map`).
    gamma : {"random", "greedy", "formula"} or float, default "random"
        γ̂, see :mod:`dpbandits.algorithms.kernel.information_gain`.
    approx_size : int, optional
        Override M (the paper's M = T·K otherwise); a flagged deviation with the T/M scaling.
    sup_method : {"certified", "trivial"}, default "certified"
        ``"trivial"`` uses Ŝ = sup k(w, w)/τ (baseline B6).
    sensitivity_method : {"paper", "refined"}, default "paper"
        ``"paper"``: Δ = 2·B_y·Ŝ (Lemma 4.2). ``"refined"``: Δ_ref(c) = 2·B_y·√(max_{X_N} σ̄²(·, c))·√Ŝ
        <= Δ at the prediction context (valid because the score is only evaluated on X_N × {c};
        errata USCA-R1, not in the paper; a flagged deviation).
    sup_rtol : float, default 1e-2
    sup_max_evaluations : int, default 200000
    grid_points_per_dim : int, optional
        Output grid resolution (default :func:`default_grid_points`).
    clip : bool, default False
        Clip rewards to [−B_y, B_y] and project contexts onto [0, 1]^dc instead of raising.
    rng : int, SeedSequence, Generator or None
        The algorithm stream (see the module docstring for the spawn order).
    chunk_size : int, default 8192
        Streaming chunk of the feature backend (results do not depend on it beyond rounding).
    precision : {"float32", "float64"}, default "float32"
        Arithmetic of the approximating-set accumulation (feature backend): float32 chunks summed
        in float64, about 1.5–3× faster than float64; see
        :func:`~dpbandits.algorithms.kernel.surrogate.accumulate_feature_gram`. Privacy is unaffected
        (the certified sup uses the computed Z̃ and its smallest eigenvalue); μ̄ and σ̄² are always
        evaluated in float64.
    max_exact_size : int, default 12000
        Largest M the exact backend accepts. Its peak memory is
        :func:`~dpbandits.algorithms.kernel.surrogate.exact_kernel_peak_bytes` (8·M² bytes for the
        Cholesky factor plus a chunked workspace, about 11·M² bytes for large M): 1.6 GB at M = 12 000.
    max_approx_size : int, optional
        Largest M = T·⌈T/γ̂⌉ accepted when ``approx_size`` is not given (a bound on the set-up's
        cost, checked once γ̂ is known and before the approximating set is drawn); default no bound.

    Privacy
    -------
    Each :meth:`recommend` call is ε-jointly-DP (pure, δ = 0) for the *t*-neighbouring relation of
    Definition 2.4: one round's (context, reward) pair changes, within [0, 1]^dc × [−B_y, B_y]. The
    learning actions, 𝒵, Ŝ, Δ and the grid are data-independent; μ̄_T is linear in Y with
    |μ̄_T(w) − μ̄'_T(w)| <= 2·B_y·sup σ̄² <= Δ (Lemma 7.1, by Cauchy–Schwarz in the Z̃⁻¹ inner
    product), so the exponential mechanism with exponent ε·μ̄/(2Δ) is ε-DP (Lemma 7.2). The guarantee
    holds for every T (the paper's T > T₀ is for utility only). k predictions from the same learning
    data cost k·ε (basic composition; :attr:`privacy_spent`). Seeded floating-point sampling is for
    simulation; it is not formally DP (Mironov 2012).

    A saved state (:meth:`save`, ``to_bytes``) is not a release but the curator's secret internal
    state: it holds the observed contexts and rewards (the reward vector b that earlier versions saved
    was already a function of them), so it must be kept as private as the raw data.

    References
    ----------
    N. Pavlovic, S. Salgia, Q. Zhao, "Differentially Private Kernelized Contextual Bandits",
    AISTATS 2025 (arXiv:2501.07046): Algorithm 1, Lemma 3.1 (eqs. 4–5), Lemma 4.2, Theorem 4.1.

    Examples
    --------
    >>> from dpbandits.envs.kernel import KernelBanditEnvironment
    >>> env = KernelBanditEnvironment(function_seed=1)
    >>> agent = USCA(horizon=50, epsilon=1.0, reward_bound=1.5, kernel=env.kernel,
    ...              context_generator=env.sample_contexts, clip=True, rng=0)
    >>> contexts = env.sample_contexts(50, rng=1)
    >>> agent.observe(contexts, env.sample_rewards(agent.learning_actions, contexts, rng=2))
    >>> agent.recommend([0.3]).shape
    (1,)
    """

    _schema = StateSchema(
        contexts=Array("float64", (None, "context_dim"), low=0.0, high=1.0),
        rewards=Array("float64", (None,), low=lambda a: -a.reward_bound, high="reward_bound"),
        n_releases=Int(0, None),
        rules=[rule("contexts and rewards: one row per observed round, at most horizon",
                    lambda a, s: s["contexts"].shape[0] == s["rewards"].shape[0] <= a.horizon)],
        derived=("learning_actions",),  # public coins: replayed from the recorded rng
        retired={"_reward_vector": "this USCA file has the layout of an earlier dpbandits, which kept the sum "
                                   "Σ φ(w)·y of the rounds instead of their contexts and rewards, and load cannot "
                                   "check that a run reached it; observe the learning rounds again and save"},
    )
    """The state is the observed rounds' contexts and rewards (as observed, after ``clip``) and the count
    of releases: the round count, the reward vector b = Σₜ φ(wₜ)·yₜ (feature backend) and the exact
    backend's fit are recomputed from them (the action xₜ of each wₜ = (xₜ, cₜ) is public coins, replayed),
    with the arithmetic of the run, so every state that loads is that of a run observing these contexts and
    rewards (any context in [0, 1]^dc and reward within ±reward_bound is some data set's)."""
    _unsaved_params = ("context_generator",)
    environment_params = ("kernel", "action_dim", "context_dim")
    # the simulation draws contexts from the environment and clips; the others are resource limits
    deployment_params = ("context_generator", "clip", "chunk_size", "max_exact_size", "max_approx_size")
    _replay_rng = True  # rng draws the public coins (feature map, γ̂, approximating set, learning actions)

    def __init__(
        self,
        *,
        horizon: int,
        epsilon: float,
        reward_bound: float,
        kernel: StationaryKernel,
        context_generator: ContextGenerator,
        action_dim: int = 1,
        context_dim: int = 1,
        tau: float = 1.0,
        backend: str = "features",
        feature_map: str | FeatureMap = "auto",
        n_features: int | None = None,
        gamma: str | float = "random",
        approx_size: int | None = None,
        sup_method: str = "certified",
        sensitivity_method: str = "paper",
        sup_rtol: float = 1e-2,
        sup_max_evaluations: int = 200_000,
        grid_points_per_dim: int | None = None,
        clip: bool = False,
        rng: RNGLike = None,
        chunk_size: int = 8192,
        precision: str = "float32",
        max_exact_size: int = _DEFAULT_MAX_EXACT_SIZE,
        max_approx_size: int | None = None,
    ) -> None:
        self.horizon = check_int(horizon, "horizon", minimum=1)
        self.epsilon = check_epsilon(epsilon, allow_inf=True)
        self.reward_bound = check_positive_float(reward_bound, "reward_bound")
        if not isinstance(kernel, StationaryKernel):
            raise InvalidParameterError(f"kernel must be a StationaryKernel; got {type(kernel).__name__}")
        self.kernel = kernel
        if not callable(context_generator):
            raise InvalidParameterError(
                f"context_generator must be callable (size, rng) -> contexts; got {type(context_generator).__name__}"
            )
        self.action_dim = check_int(action_dim, "action_dim", minimum=1)
        self.context_dim = check_int(context_dim, "context_dim", minimum=1)
        self.tau = check_positive_float(tau, "tau")
        self.backend = check_one_of(backend, "backend", BACKENDS)
        self.clip = bool(clip)
        self.deviations: list[str] = []
        dim = self.action_dim + self.context_dim
        check_fits("horizon", self.horizon, 8.0 * self.horizon * self.action_dim,
                   what="USCA's T learning actions")  # drawn below, after the set-up that is linear in T

        # streams: feature map, γ̂, approximating set, learning actions (privacy noise: recommend's rng)
        map_seed, gamma_seed, set_seed, learn_seed = spawn_seed_sequences(rng, 4)

        self.feature_map: FeatureMap | None = None
        if self.backend == "features":
            self.feature_map = (
                make_feature_map(kernel, dim, feature_map, n_features, map_seed)
                if isinstance(feature_map, str)
                else feature_map
            )
        self.gamma = resolve_gamma(
            gamma,
            horizon=self.horizon,
            tau=self.tau,
            action_dim=self.action_dim,
            dim=dim,
            kernel=kernel,
            context_generator=context_generator,
            rng=gamma_seed,
            exact_kernel=kernel if self.backend == "kernel" else None,
            feature_map=self.feature_map,
        )
        if not (math.isfinite(self.gamma) and self.gamma > 0):
            raise InvalidParameterError(
                f"the information gain estimate must be a positive number; got gamma={self.gamma!r} (the kernel's "
                f"length scale {kernel.length_scale!r} is too small for the feature map to represent)"
            )
        # K = ⌈T/γ̂⌉ ; M = T·K
        self.scale_factor = max(1, math.ceil(self.horizon / self.gamma))
        if approx_size is None:
            self.approx_size = self.horizon * self.scale_factor
            if max_approx_size is not None and self.approx_size > check_int(max_approx_size, "max_approx_size",
                                                                              minimum=0):
                raise InvalidParameterError(
                    f"horizon: T={self.horizon} with gamma={self.gamma:.4g} needs an approximating set of "
                    f"M = T*ceil(T/gamma) = {self.approx_size} points, more than max_approx_size={max_approx_size} "
                    "(the set-up cost limit); lower the horizon"
                )
        else:
            self.approx_size = check_int(approx_size, "approx_size", minimum=1)
            self.deviations.append(
                f"approx_size M={self.approx_size} instead of T*K={self.horizon * self.scale_factor} "
                "(T/M scaling; outside the paper's analysis, privacy unaffected)"
            )
        approx_set = ApproximatingSet(self.approx_size, self.action_dim, context_generator, set_seed,
                                      size_name="horizon" if approx_size is None else "approx_size")
        self.surrogate: FeatureSurrogate | ExactKernelSurrogate
        if self.feature_map is not None:
            gram = accumulate_feature_gram(self.feature_map, approx_set, chunk_size, precision)
            self.surrogate = FeatureSurrogate(self.feature_map, gram, self.approx_size, self.horizon, self.tau)
        else:
            limit = check_int(max_exact_size, "max_exact_size", minimum=1)
            if self.approx_size > limit:
                need = exact_kernel_peak_bytes(self.approx_size, self.horizon)
                raise InvalidParameterError(
                    f"approx_size must be <= max_exact_size={limit} for the exact kernel backend "
                    f"(its peak memory is 8*M^2 + 48*q*(M + T) bytes, q = max(256, M/16): {need / 2**30:.2f} GiB "
                    f"here); got M={self.approx_size}. Use backend='features'."
                )
            self.surrogate = ExactKernelSurrogate(kernel, approx_set.points(), self.horizon, self.tau)
        self.sup: SupBound = sup_bound(
            sup_method, self.surrogate, dim, rtol=sup_rtol, max_evaluations=sup_max_evaluations
        )
        # Δ = 2·B_y·Ŝ  (Lemma 4.2 with the certified Ŝ >= sup σ̄²)
        self.sensitivity = 2.0 * self.reward_bound * self.sup.upper
        self.sensitivity_method = check_one_of(sensitivity_method, "sensitivity_method", SENSITIVITY_METHODS)
        if self.sensitivity_method == "refined":
            self.deviations.append("refined sensitivity 2*B*sqrt(max_grid sigma2(., c))*sqrt(S) (errata USCA-R1, not in the paper)")
        # X_N: cell centres of a regular grid of [0, 1]^dx, fixed before any data (equal cell volumes)
        self.grid = action_grid(self.action_dim, grid_points_per_dim)
        self.learning_actions: FloatArray = as_generator(learn_seed).random((self.horizon, self.action_dim))

        # the observed rounds as joint points wₜ = (xₜ, cₜ) (the learning action read when the round is
        # observed, the context after clip) and rewards; their contexts and rewards are the saved state,
        # from which everything the prediction needs is recomputed; buffers grown by doubling (no
        # horizon-sized allocation up front)
        self._rounds = 0
        self._points = np.empty((0, self.action_dim + self.context_dim))
        self._rewards = np.empty(0)
        self._coefficients: FloatArray | None = None
        self._exact_mean: Any = None
        self.n_releases = 0

    # ----------------------------------------------------------------------------- privacy
    @property
    def privacy(self) -> PureDP:
        """The guarantee of one prediction: ε-joint-DP for one round's context and reward."""
        if math.isinf(self.epsilon):
            return NonPrivate(
                unit=PROTECTED_UNIT, neighbouring=Neighbouring.JOINT, reference=USCA_REFERENCE,
                reason="epsilon = inf: non-private USCA (argmax of the surrogate mean)",
            )
        return PureDP(
            epsilon=self.epsilon,
            unit=PROTECTED_UNIT,
            neighbouring=Neighbouring.JOINT,
            reference=USCA_REFERENCE,
            reason="per prediction call; k predictions from the same learning data cost k*epsilon",
        )

    @property
    def privacy_spent(self) -> PureDP:
        """Total guarantee of the predictions made so far (basic composition: n·ε)."""
        g = self.privacy
        if not g.is_finite:
            return g
        return PureDP(epsilon=self.n_releases * self.epsilon, unit=g.unit, neighbouring=g.neighbouring,
                      reference=g.reference, reason=f"{self.n_releases} prediction(s), basic composition")

    # ----------------------------------------------------------------------------- learning
    @property
    def rounds_observed(self) -> int:
        """Number of learning rounds observed so far."""
        return self._rounds

    def _progress(self) -> tuple[int, int]:
        """(learning rounds observed, the horizon)."""
        return self._rounds, self.horizon

    def ask(self, context: ArrayLike | None = None) -> FloatArray:
        """Return the next learning action xₜ ~ Unif([0, 1]^dx) (data-independent: ``context`` is not read).

        ``context`` is accepted so that USCA is driven as every contextual agent is
        (``ask(context)`` then ``tell(context, reward)``).
        """
        if self._rounds >= self.horizon:
            raise InvalidParameterError(f"all horizon={self.horizon} learning rounds were already observed")
        return self.learning_actions[self._rounds].copy()

    def scheduled(self, limit: int | None = None) -> FloatArray:
        """The learning actions still to play (at most ``limit``), in order (data-independent); ``ask()`` is the first."""
        end = None if limit is None else self._rounds + max(int(limit), 0)
        return self.learning_actions[self._rounds:end].copy()

    def tell(self, context: ArrayLike, reward: float) -> None:
        """Record the current round's context cₜ and reward yₜ (for the action of :meth:`ask`)."""
        fast = self._one_round(context, reward)
        if fast is None:  # anything unusual (wrong type or shape, out of range, clipping): the general path
            c = check_array(context, "context", ndim=(0, 1))
            self.observe(np.reshape(c, (1, -1)), np.array([check_real(reward, "reward")]))
            return
        self._append(*fast)

    def _one_round(self, context: Any, reward: Any) -> tuple[FloatArray, FloatArray] | None:
        """(cₜ as a (1, dc) array, [yₜ]) for a plain in-range round, or None to take the general path."""
        if self._rounds >= self.horizon or not isinstance(reward, float | int) or isinstance(reward, bool):
            return None
        y = float(reward)
        if not -self.reward_bound <= y <= self.reward_bound:  # NaN fails too
            return None
        if isinstance(context, float) and self.context_dim == 1:
            c = np.array([[context]])
        elif isinstance(context, np.ndarray) and context.shape in ((self.context_dim,), ()) and context.dtype == np.float64:
            c = context.reshape(1, -1)
        else:
            return None
        if not (c.min() >= 0.0 and c.max() <= 1.0):  # NaN fails too
            return None
        return c, np.array([y])

    def _append(self, contexts: FloatArray, rewards: FloatArray) -> None:
        """Keep checked rounds (contexts (n, dc) in [0, 1], rewards (n,) within ±B_y) after those observed."""
        start, end = self._rounds, self._rounds + rewards.shape[0]
        if end > self._rewards.shape[0]:  # grow by doubling, up to the horizon: O(1) amortised per round
            capacity = min(self.horizon, max(end, 2 * self._rewards.shape[0], 16))
            grown_points, grown_rewards = np.empty((capacity, self._points.shape[1])), np.empty(capacity)
            grown_points[:start] = self._points[:start]
            grown_rewards[:start] = self._rewards[:start]
            self._points, self._rewards = grown_points, grown_rewards
        # the round's action is read now, when it is observed (a privacy audit conditions on other coins by
        # setting learning_actions around observe)
        self._points[start:end, : self.action_dim] = self.learning_actions[start:end]
        self._points[start:end, self.action_dim :] = contexts
        self._rewards[start:end] = rewards
        self._rounds = end
        self._coefficients = None
        self._exact_mean = None

    def _data(self) -> tuple[FloatArray, FloatArray]:
        """The observed rounds as joint points wₜ = (xₜ, cₜ), shape (rounds, dx + dc), and their rewards."""
        n = self._rounds
        return self._points[:n], self._rewards[:n]

    def observe(self, contexts: ArrayLike, rewards: ArrayLike) -> None:
        """Record a batch of consecutive rounds (the actions are the next ``learning_actions``).

        Parameters
        ----------
        contexts : array_like of shape (n, dc)
            Must lie in [0, 1]^dc unless ``clip=True`` (then they are projected).
        rewards : array_like of shape (n,)
            Must lie in [−B_y, B_y] unless ``clip=True`` (then they are clipped).
        """
        c = check_bounded_array(contexts, "contexts", 0.0, 1.0, clip=self.clip, ndim=2)
        y = check_bounded_array(rewards, "rewards", -self.reward_bound, self.reward_bound, clip=self.clip, ndim=1)
        if c.shape != (y.shape[0], self.context_dim):
            raise InvalidParameterError(
                f"contexts must have shape ({y.shape[0]}, {self.context_dim}) to match rewards; got {c.shape}"
            )
        n = y.shape[0]
        if self._rounds + n > self.horizon:
            raise InvalidParameterError(
                f"observing {n} more rounds would exceed horizon={self.horizon} ({self._rounds} observed)"
            )
        self._append(c, y)

    # ----------------------------------------------------------------------------- prediction
    def _surrogate_mean(self, points: FloatArray) -> FloatArray:
        if self._rounds < self.horizon:
            raise NotFittedError(
                f"USCA predicts after all horizon={self.horizon} learning rounds; {self._rounds} observed"
            )
        if isinstance(self.surrogate, FeatureSurrogate):
            if self._coefficients is None:
                self._coefficients = self.surrogate.coefficients(self._reward_vector(self.surrogate))  # θ̄ = Z̃⁻¹b
            return self.surrogate.mean(self._coefficients, points)
        if self._exact_mean is None:
            self._exact_mean = self.surrogate.fit(*self._data())
        return np.asarray(self._exact_mean(points))

    def _reward_vector(self, surrogate: FeatureSurrogate) -> FloatArray:
        """The reward vector b = Σₜ φ(wₜ)·yₜ of the observed rounds, in one pass over the kept rows.

        A function of the rows only (the same arithmetic in a run and in a loaded state, so a loaded
        agent's b is the original's bit for bit); never stored.
        """
        return surrogate.reward_vector(*self._data())

    def _check_context(self, context: ArrayLike) -> FloatArray:
        """One context c (a scalar when dc = 1, or dc coordinates), as an array of shape (1, dc)."""
        c = check_bounded_array(context, "context", 0.0, 1.0, clip=self.clip, ndim=(0, 1)).reshape(1, -1)
        if c.shape[1] != self.context_dim:
            raise InvalidParameterError(
                f"context must be one context of {self.context_dim} coordinate(s); got {c.shape[1]} values"
            )
        return c

    def _check_contexts(self, contexts: ArrayLike) -> FloatArray:
        c = check_bounded_array(contexts, "context", 0.0, 1.0, clip=self.clip, ndim=(1, 2))
        c = c.reshape(-1, self.context_dim) if c.ndim == 2 else c.reshape(1, -1)
        if c.shape[1] != self.context_dim:
            raise InvalidParameterError(f"context must have {self.context_dim} coordinates; got shape {c.shape}")
        return c

    def mechanism_log_probabilities(self, contexts: ArrayLike) -> FloatArray:
        """Exact log-probabilities of the output grid for each context, shape (n_contexts, N).

        For audits and for the exact evaluation of the error rate only: the probabilities reveal μ̄_T
        and are **not** a private release (only a sample from them, :meth:`recommend`, is).
        """
        c = self._check_contexts(contexts)
        return self._log_probabilities(c, self._surrogate_mean(grid_points(self.grid, c)).reshape(c.shape[0], -1))

    def _log_probabilities(self, c: FloatArray, scores: FloatArray) -> FloatArray:
        """The mechanism's log-probabilities at checked contexts ``c`` from the scores μ̄_T(x_j, c_i)."""
        if math.isinf(self.epsilon):
            return argmax_log_probabilities(scores)  # ε = ∞: uniform over the argmax set
        # log P(x_j) = ε·μ̄(x_j, c)/(2Δ) − log Z  (uniform base measure on X_N)
        return np.stack([self._mechanism(row).log_probabilities(score) for row, score in zip(c, scores, strict=True)])

    def context_sensitivity(self, context: ArrayLike) -> float:
        """The sensitivity used at prediction context c: Δ, or Δ_ref(c) when ``sensitivity_method="refined"``.

        Δ_ref(c) = 2·B_y·√(max_{x ∈ X_N} σ̄²(x, c))·√Ŝ <= Δ bounds |μ̄_T − μ̄'_T| on X_N × {c}:
        |yₜ·c̄(w, wₜ)| <= B_y·√σ̄²(w)·√σ̄²(wₜ). It depends only on 𝒵 and on c, which joint DP does
        not protect.
        """
        if self.sensitivity_method == "paper":
            return self.sensitivity
        c = self._check_context(context)
        grid_max = float(np.max(self.surrogate.variance(grid_points(self.grid, c))))
        # Δ_ref(c) = 2·B_y·√(max_{X_N} σ̄²(·, c))·√Ŝ, never above Δ
        refined = 2.0 * self.reward_bound * math.sqrt(max(grid_max, 0.0) * self.sup.upper) * (1.0 + 1e-9)
        return min(self.sensitivity, refined)

    def _mechanism(self, context: FloatArray) -> GridExponentialMechanism:
        return GridExponentialMechanism(self.grid, sensitivity=self.context_sensitivity(context), epsilon=self.epsilon)

    _agent_accountant: Accountant | None = None
    """The accountant of :meth:`agent`: each recommendation drawn records its release in it (not saved)."""

    def _record_run(self, accountant: Accountant) -> None:
        """``agent(accountant=...)``: keep the accountant; every draw of :meth:`recommend` records its ε in it.

        The learning rounds release nothing (the released policy is what costs), so nothing is recorded
        now; the non-private USCA (ε = ∞) has no finite guarantee and the accountant refuses it now.
        """
        if not isinstance(accountant, Accountant):
            raise InvalidParameterError(f"accountant must be an Accountant or None; got {accountant!r:.100}")
        if not math.isfinite(self.epsilon):
            spend(accountant, self.privacy, label=f"{type(self).__name__}.agent")
        self._agent_accountant = accountant

    @property
    def recommendation(self) -> Any:
        """The released policy: :meth:`recommend`, a function from a context to an action.

        Each call ``recommendation(context, ...)`` is one ε-joint-DP draw (k calls cost k·ε).

        Raises
        ------
        NotFittedError
            Before all ``horizon`` learning rounds are observed.
        """
        if self._rounds < self.horizon:
            raise NotFittedError(f"USCA has observed {self._rounds} of its {self.horizon} learning rounds")
        return self.recommend

    def recommend(
        self, context: ArrayLike, rng: RNGLike = None, size: int | None = None, backend: BackendLike = None,
        *, insecure_seeded_noise: bool = False, accountant: Accountant | None = None,
    ) -> FloatArray:
        """Sample x̂(c_{T+1}) from the exponential mechanism on the grid (one ε-JDP release per draw).

        Parameters
        ----------
        context : array_like of shape (dc,)
            c_{T+1} (public under JDP; projected only if ``clip=True``).
        rng : int, SeedSequence, Generator or None
            Seed of the draw; only with ``insecure_seeded_noise=True``.
        size : int, optional
            Number of independent draws; each one is a release (``size`` draws cost size·ε).
        backend : {"opendp", "secure"} or NoiseBackend, optional
            Source of the draw; default the secure OpenDP sampler (exact Gumbel noisy-max over the
            OS CSPRNG, no cutoff).
        insecure_seeded_noise : bool, default False
            Seeded NumPy Gumbel-max instead: reproducible, for simulation only (warns).
        accountant : Accountant, optional
            Records ``size`` (or one) ε-JDP releases before drawing; over budget, nothing is drawn.
            Default: the accountant given to :meth:`agent`, if any.

        Returns
        -------
        ndarray of shape (dx,), or (size, dx) when ``size`` is given

        Privacy
        -------
        Each draw is ε-joint-DP for one round's context and reward (Lemma 4.2, Theorem 4.1).
        """
        noise = privacy_noise(rng, insecure_seeded_noise=insecure_seeded_noise, backend=backend)
        if accountant is None:
            accountant = self._agent_accountant
        if math.isfinite(self.epsilon):
            spend(accountant, self.privacy, 1 if size is None else check_int(size, "size", minimum=1),
                  label=f"{type(self).__name__}.sample")
        return self._draw(context, noise, size)

    def _draw(self, context: ArrayLike, noise: NoiseBackend, size: int | None = None) -> FloatArray:
        """Draw from the grid mechanism with an explicit noise source (simulations pass NumpyNoise)."""
        n = 1 if size is None else check_int(size, "size", minimum=1)
        c = self._check_context(context)
        if math.isinf(self.epsilon):
            log_p = self.mechanism_log_probabilities(c)[0]
            index = np.flatnonzero(log_p > -np.inf)[0] if size is None else np.full(n, np.argmax(log_p))
            return self.grid[index].copy()
        points = joint_points(self.grid, c)
        mechanism = self._mechanism(c[0])
        index = noise.gumbel_max(mechanism.log_probabilities(self._surrogate_mean(points)), size=size)
        self.n_releases += n
        return np.asarray(mechanism.grid[index], dtype=np.float64)

    def _get_state(self) -> dict[str, Any]:
        n = self._rounds
        return {"contexts": self._points[:n, self.action_dim :].copy(), "rewards": self._rewards[:n].copy(),
                "n_releases": self.n_releases}

    def _set_state(self, state: dict[str, Any]) -> None:
        # the round count, b and the fit are recomputed from the rows (caches emptied), never read
        self.reset_data()
        self._append(state["contexts"], state["rewards"])  # with the learning actions of those rounds
        self.n_releases = state["n_releases"]

    def reset_data(self) -> None:
        """Forget the learning data, keeping the public (data-independent) precomputation.

        Used to run the same coins on several datasets (privacy audits condition on the coins).
        """
        self._rounds = 0
        self._points, self._rewards = np.empty((0, self.action_dim + self.context_dim)), np.empty(0)
        self._coefficients = None
        self._exact_mean = None

    def summary(self) -> dict[str, Any]:
        """Public (data-independent) quantities of the run."""
        return {
            "horizon": self.horizon,
            "epsilon": self.epsilon,
            "tau": self.tau,
            "backend": self.backend,
            "feature_dim": None if self.feature_map is None else self.feature_map.dim,
            "gamma": self.gamma,
            "scale_factor": self.scale_factor,
            "approx_size": self.approx_size,
            "sup_variance": self.sup.upper,
            "sup_variance_lower": self.sup.lower,
            "sup_converged": self.sup.converged,
            "sensitivity": self.sensitivity,
            "grid_size": int(self.grid.shape[0]),
            "deviations": list(self.deviations),
        }

