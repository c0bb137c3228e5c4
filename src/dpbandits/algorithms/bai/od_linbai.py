"""OD-LinBAI (Yang & Tan, NeurIPS 2022): fixed-budget linear BAI with G-optimal designs, non-private.

With d = dim span{a_i}, R = ⌈log₂ d⌉ phases (R = 1 when d = 1) and a base allocation

    m = (T − min{K, d(d+1)/2} − Σ_{r=1}^{R−1} ⌈d/2^r⌉) / R,

phase r (active set A_{r−1}, A_0 = [K]) projects the active arms onto an orthonormal basis of their
span *only when the dimension drops* (d_r < d_{r−1}), computes a G-optimal design π_r on them
(support <= d_r(d_r+1)/2), pulls each arm of the support ⌈π_r(i)·m⌉ times, fits ordinary least
squares on this phase's rewards only, θ̂_r = V_r⁻¹ U_r, and keeps the ⌈d/2^r⌉ arms with the largest
⟨θ̂_r, a_i⟩. The schedule was checked against a public third-party implementation (same m, phase
count, projection rule, ⌈π·m⌉ allocation and ⌈d/2^r⌉ rule; errata BAI-D1).

The same planner, with Laplace noise added to U_r, is DP-OD (:mod:`~dpbandits.algorithms.bai.dp_od`).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping
from typing import cast

import numpy as np
from numpy.typing import ArrayLike

from dpbandits._core.errors import InvalidParameterError
from dpbandits._core.rng import RNGLike
from dpbandits._core.typing import FloatArray
from dpbandits._core.validation import MAX_EXACT_COUNT, check_array, check_int
from dpbandits.algorithms.bai.designs import GOptimalDesign, g_optimal_design, reduce_dimension
from dpbandits.algorithms.bai.dp_bai import environment_features
from dpbandits.algorithms.bai.phased import PhasedAlgorithm, PhasePlan
from dpbandits.algorithms.bai.schedule import InsufficientBudgetError
from dpbandits.algorithms.registry import register_algorithm, register_algorithm_class
from dpbandits.envs.base import BanditEnvironment
from dpbandits.privacy.guarantees import Guarantee, NonPrivate

__all__ = ["L_MODES", "ODLinBAI", "OptimalDesignPlanner", "od_linbai_base_allocation"]

L_MODES = ("l1", "paper")
_State = tuple[tuple[int, ...], int, tuple[tuple[int, ...], ...]]


def od_linbai_base_allocation(n_arms: int, dim: int, budget: int) -> tuple[int, float]:
    """Return (R, m): the number of phases and the base allocation of OD-LinBAI.

    Raises
    ------
    InsufficientBudgetError
        If m <= 0.
    """
    n_phases = max(math.ceil(math.log2(dim)), 1) if dim > 1 else 1  # R = ⌈log₂ d⌉
    reserve = min(n_arms, dim * (dim + 1) / 2) + sum(math.ceil(dim / 2**r) for r in range(1, n_phases))
    m = (budget - reserve) / n_phases  # m = (T − min{K, d(d+1)/2} − Σ_{r<R} ⌈d/2^r⌉)/R
    if m <= 0:
        raise InsufficientBudgetError(
            f"budget must exceed OD-LinBAI's reservation {reserve:g} (K={n_arms}, d={dim}); got budget={budget}"
        )
    return n_phases, m


class OptimalDesignPlanner:
    """Phase plans of OD-LinBAI and DP-OD.

    State = (active arms, pulls used, the active sets at which a projection happened); the
    coordinates of a phase are recovered by replaying those projections, so the noise of DP-OD is
    added in exactly the coordinates OD-LinBAI would use.

    Parameters
    ----------
    features : ndarray, shape (K, d_in)
    budget : int
    epsilon : float or None
        None: non-private (OD-LinBAI). Otherwise Lap(L_r/ε) noise on each coordinate of U_r.
    l_mode : {"l1", "paper"}
        L_r = max_{i∈A} ‖a_i^{(r)}‖₁ in the coordinates used (exact ε-DP), or the paper's constant
        L = max_i ‖a_i‖₂.
    """

    def __init__(self, features: FloatArray, budget: int, *, epsilon: float | None = None,
                 l_mode: str = "l1") -> None:
        self.base, self.dim = reduce_dimension(features)
        if self.dim == 0:
            raise InvalidParameterError("features must not all be 0")
        self.n_arms = features.shape[0]
        self.budget = budget
        self.epsilon = epsilon
        self.l_mode = l_mode
        self.noise_kind: str | None = None if epsilon is None or math.isinf(epsilon) else "laplace"
        self.paper_norm = float(np.max(np.linalg.norm(features, axis=1)))  # L = max_i ‖a_i‖₂
        self.n_phases, self.base_allocation = od_linbai_base_allocation(self.n_arms, self.dim, budget)
        self._designs: dict[Hashable, GOptimalDesign] = {}

    def initial_state(self) -> Hashable:
        """All arms active, nothing used, no projection yet."""
        return (tuple(range(self.n_arms)), 0, ())

    def _coordinates(self, projections: tuple[tuple[int, ...], ...]) -> FloatArray:
        coords: FloatArray = self.base
        for subset in projections:
            _, _, vt = np.linalg.svd(coords[list(subset)], full_matrices=False)
            rank = reduce_dimension(coords[list(subset)])[1]
            coords = np.asarray(coords @ vt[:rank].T, dtype=np.float64)
        return coords

    def plan(self, phase: int, state: Hashable) -> PhasePlan:
        """Plan phase ``phase`` (0-based): projection, G-optimal design, allocation, OLS weights."""
        active_tuple, used, projections = cast(_State, state)
        active = np.asarray(active_tuple, dtype=np.int64)
        coords = self._coordinates(projections)
        x_active, rank = reduce_dimension(coords[active])
        projected = rank < coords.shape[1]  # project only when the dimension drops
        if not projected:
            x_active = coords[active]
        key = (projections, active_tuple)
        if key not in self._designs:  # designs depend only on the coordinates: cache by active set
            self._designs[key] = g_optimal_design(x_active)
        design = self._designs[key]
        support = design.support
        pulls = np.ceil(design.weights[support] * self.base_allocation - 1e-9).astype(np.int64)  # ⌈π(i)·m⌉
        pulls = np.maximum(pulls, 1)
        clipped = used + int(pulls.sum()) > self.budget
        if clipped:  # safety net (errata BAI-A11): shrink proportionally so the budget is never exceeded
            pulls = np.floor(pulls * (self.budget - used) / pulls.sum()).astype(np.int64)
            if np.any(pulls < 1):
                raise InsufficientBudgetError(
                    f"budget={self.budget} leaves no pull for some design point in phase {phase + 1}"
                )
        x_pulled = x_active[support]
        gram = (x_pulled * pulls[:, None]).T @ x_pulled  # V_r = Σ_i T_r(i) a_i a_iᵀ
        solve = np.linalg.solve(gram, x_active.T).T  # rows a_iᵀ V_r⁻¹ for the active arms
        keep = max(math.ceil(self.dim / 2 ** (phase + 1)), 1)  # ⌈d/2^r⌉, with the original d
        if phase + 1 == self.n_phases:
            keep = 1
        noise_weights: FloatArray = np.zeros((active.shape[0], 0))
        noise_scales: FloatArray = np.zeros(0)
        bound = 0.0
        if self.epsilon is not None:
            # L_r = max ‖a_i^{(r)}‖₁ (l1: exact sensitivity of U_r) or the paper's max ‖a_i‖₂
            bound = float(np.max(np.abs(x_active).sum(axis=1))) if self.l_mode == "l1" else self.paper_norm
            noise_weights = np.asarray(solve, dtype=np.float64)  # μ̃ = a_iᵀ V⁻¹ (U + ξ)
            noise_scales = np.full(x_active.shape[1], bound / self.epsilon)  # ξ_k ~ Lap(L_r/ε)
        return PhasePlan(
            active=active, pulled=active[support], pulls=pulls,
            sum_weights=solve @ x_pulled.T,  # U_r = Σ_i a_i S_i, μ̂ = a_iᵀ V⁻¹ U_r
            noise_weights=noise_weights, noise_scales=noise_scales, keep=keep, clipped=bool(clipped),
            statistic_weights=x_pulled.T if self.epsilon is not None else np.zeros((0, 0)),  # U = Σ a_i S_i
            info={"phase": phase + 1, "dim": int(x_active.shape[1]), "projected": projected,
                  "g_value": design.g_value, "sensitivity_bound": bound},
        )

    def next_state(self, phase: int, state: Hashable, plan: PhasePlan, survivors: tuple[int, ...]) -> Hashable:
        """(survivors, used + pulls, projections + this active set if it was projected)."""
        active_tuple, used, projections = cast(_State, state)
        if plan.info["projected"]:
            projections = (*projections, active_tuple)
        return (survivors, used + plan.total_pulls, projections)


@register_algorithm_class("od-linbai")
class ODLinBAI(PhasedAlgorithm):
    """OD-LinBAI: non-private fixed-budget linear BAI with G-optimal designs (Yang & Tan 2022).

    Parameters
    ----------
    features : array_like, shape (n_arms, dim)
    budget : int
        T; the algorithm uses at most T pulls.
    tie_break : {"random", "index"}, default "random"
    clip_rewards, allow_out_of_range : bool, default False
        As for :class:`~dpbandits.algorithms.bai.dp_bai.DPBAI` (OD-LinBAI itself needs no bound).

    Privacy
    -------
    None: this is the non-private comparator of Chen et al. (2024), §5.

    References
    ----------
    J. Yang, V. Y. F. Tan, "Minimax optimal fixed-budget best arm identification in linear bandits",
    NeurIPS 2022, Algorithm 1 and eq. (2).
    """

    def __init__(self, features: ArrayLike, budget: int, *, tie_break: str = "random", clip_rewards: bool = False,
                 allow_out_of_range: bool = True) -> None:
        self.features = check_array(features, "features", ndim=2)
        self.budget = check_int(budget, "budget", minimum=1, maximum=MAX_EXACT_COUNT)
        self.planner = OptimalDesignPlanner(self.features, self.budget)
        self._set_common(tie_break, clip_rewards, allow_out_of_range)

    @property
    def privacy(self) -> Guarantee:
        """No privacy (ε = ∞)."""
        return NonPrivate(unit="one entry of the reward table", reason="OD-LinBAI is non-private")


@register_algorithm("od-linbai", family="bai", privacy="none (non-private)", metrics=("success", "pulls_used"),
                    proportion_metrics=("success",), environments=("linear", "mab"))
def simulate_od_linbai(env: BanditEnvironment, *, n_trials: int, rng: RNGLike, budget: int,
                       tie_break: str = "random", pull_consistent: bool = False) -> Mapping[str, np.ndarray]:
    """OD-LinBAI (Yang & Tan 2022): G-optimal designs and OLS, halving the dimension each phase.

    Privacy
    -------
    None: the non-private comparator.

    References
    ----------
    Yang & Tan, NeurIPS 2022, Algorithm 1.
    """
    result = ODLinBAI(environment_features(env), budget, tie_break=tie_break).simulate(
        env, n_trials, rng, pull_consistent=pull_consistent)
    return {"success": (result.recommended == env.best_arm).astype(np.float64),
            "pulls_used": result.pulls_used.astype(np.float64)}
