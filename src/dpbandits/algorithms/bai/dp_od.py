"""DP-OD (Appendix E.1 of Chen et al. 2024): OD-LinBAI with a Laplace-privatised least-squares target.

Everything is as in OD-LinBAI (phases, projections, G-optimal designs, allocations, elimination
sizes); only the right-hand side of the least-squares fit is privatised:

    Ũ_r = U_r + ξ_r,  ξ_r ∈ R^{d_r} with i.i.d. Lap(L_r/ε) coordinates,  θ̃_r = V_r⁻¹ Ũ_r.

Changing one reward x → x' in [0, 1] moves U_r by a_i^{(r)}·(x − x'), whose ℓ1 norm is at most
‖a_i^{(r)}‖₁; the Laplace mechanism therefore needs L_r >= max_i ‖a_i^{(r)}‖₁ (``l_mode="l1"``,
the default). The paper's L = max_i ‖a_i‖₂ (``l_mode="paper"``) can under-noise by up to √d_r
(errata BAI-B2); on the paper's two experiments both coincide.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping

import numpy as np
from numpy.typing import ArrayLike

from dpbandits._core.errors import PaperVariantWarning
from dpbandits._core.rng import RNGLike
from dpbandits._core.validation import MAX_EXACT_COUNT, check_array, check_epsilon, check_int, check_one_of
from dpbandits.algorithms.bai.dp_bai import REWARD_TABLE_UNIT, environment_features
from dpbandits.algorithms.bai.od_linbai import L_MODES, OptimalDesignPlanner
from dpbandits.algorithms.bai.phased import PhasedAlgorithm, check_reward_bounds
from dpbandits.algorithms.registry import register_algorithm, register_algorithm_class
from dpbandits.envs.base import BanditEnvironment
from dpbandits.privacy.guarantees import Guarantee, Neighbouring, NonPrivate, PureDP

__all__ = ["DPOD"]


@register_algorithm_class("dp-od")
class DPOD(PhasedAlgorithm):
    """DP-OD: ε-DP OD-LinBAI with Laplace noise on the least-squares target (Appendix E.1).

    Parameters
    ----------
    features : array_like, shape (n_arms, dim)
    budget : int
        T; at most T pulls are used.
    epsilon : float
        ε > 0 (``math.inf``: no noise, i.e. OD-LinBAI).
    l_mode : {"l1", "paper"}, default "l1"
        Sensitivity bound L_r of U_r. ``"l1"``: max ‖a_i^{(r)}‖₁ over the active arms in the
        coordinates used (exact ε-DP). ``"paper"``: max_i ‖a_i‖₂ (warns; the guarantee reported is
        then ε·√d, which is what ℓ1 <= √d·ℓ2 supports).
    tie_break : {"random", "index"}, default "random"
    clip_rewards, allow_out_of_range : bool, default False
        As for :class:`~dpbandits.algorithms.bai.dp_bai.DPBAI`.

    Privacy
    -------
    ε-DP for one entry of the reward table (``l_mode="l1"``): each reward enters one U_r, released by
    the Laplace mechanism with ℓ1-sensitivity L_r; designs depend only on public features and
    earlier private outputs; phases use disjoint rewards (parallel composition).

    References
    ----------
    Chen et al., ICLR 2024 (arXiv:2401.09073), Appendix E.1 and Proposition E.1; Yang & Tan,
    NeurIPS 2022 (OD-LinBAI).
    """

    def __init__(self, features: ArrayLike, budget: int, epsilon: float, *, l_mode: str = "l1",
                 tie_break: str = "random", clip_rewards: bool = False, allow_out_of_range: bool = False) -> None:
        self.features = check_array(features, "features", ndim=2)
        self.budget = check_int(budget, "budget", minimum=1, maximum=MAX_EXACT_COUNT)
        self.epsilon = check_epsilon(epsilon, allow_inf=True)
        self.l_mode = check_one_of(l_mode, "l_mode", L_MODES)
        if l_mode == "paper":
            warnings.warn("l_mode='paper' uses the l2 norm max ||a_i||_2 as the Laplace sensitivity; it can "
                          "under-noise by up to sqrt(d); the reported guarantee is epsilon*sqrt(d)",
                          PaperVariantWarning, stacklevel=2)
        self.design_planner = OptimalDesignPlanner(self.features, self.budget, epsilon=self.epsilon, l_mode=l_mode)
        self.planner = self.design_planner
        self._set_common(tie_break, clip_rewards, allow_out_of_range)

    @property
    def privacy(self) -> Guarantee:
        """ε-DP for one entry of the reward table (ε·√d in the paper's ℓ2 mode)."""
        reference = ("Chen et al., ICLR 2024 (arXiv:2401.09073), Appendix E.1 (DP-OD), Laplace mechanism "
                     "with l1 sensitivity")
        unit, neighbouring = REWARD_TABLE_UNIT, Neighbouring.REPLACE_ONE
        if math.isinf(self.epsilon):
            return NonPrivate(unit=unit, neighbouring=neighbouring, reason="epsilon=inf: no noise",
                              reference=reference)
        if self.allow_out_of_range:
            return PureDP.infinite(unit=unit, neighbouring=neighbouring, reference=reference,
                                   reason="allow_out_of_range=True: rewards may exceed [0, 1]")
        if self.l_mode == "paper":
            # ‖a‖₁ <= √d_r·‖a‖₂ and projections onto a span containing a keep ‖a‖₂
            return PureDP(epsilon=self.epsilon * math.sqrt(self.design_planner.dim), unit=unit, neighbouring=neighbouring,
                          reference=reference, reason="l_mode='paper': l2 sensitivity used, bound eps*sqrt(d)")
        return PureDP(epsilon=self.epsilon, unit=unit, neighbouring=neighbouring, reference=reference)


@register_algorithm("dp-od", family="bai", privacy="ε-DP for one entry of the reward table",
                    metrics=("success", "pulls_used"), proportion_metrics=("success",), environments=("linear", "mab"), precheck=check_reward_bounds)
def simulate_dp_od(env: BanditEnvironment, *, n_trials: int, rng: RNGLike, budget: int, epsilon: float,
                   l_mode: str = "l1", tie_break: str = "random", clip_rewards: bool = False,
                   allow_out_of_range: bool = False, pull_consistent: bool = False) -> Mapping[str, np.ndarray]:
    """DP-OD (Chen et al. 2024, App. E.1): OD-LinBAI with Laplace noise on the least-squares target.

    Privacy
    -------
    ε-DP for one entry of the reward table with ``l_mode="l1"`` (ε·√d with ``"paper"``); see
    :attr:`DPOD.privacy`.

    References
    ----------
    Chen et al., ICLR 2024 (arXiv:2401.09073), Appendix E.1.
    """
    algorithm = DPOD(environment_features(env), budget, epsilon, l_mode=l_mode, tie_break=tie_break,
                     clip_rewards=clip_rewards, allow_out_of_range=allow_out_of_range)
    result = algorithm.simulate(env, n_trials, rng, pull_consistent=pull_consistent)
    return {"success": (result.recommended == env.best_arm).astype(np.float64),
            "pulls_used": result.pulls_used.astype(np.float64)}
