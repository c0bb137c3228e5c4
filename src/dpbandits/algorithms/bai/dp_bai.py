"""DP-BAI (Algorithm 1), DP-BAI-Gauss (Algorithm 2) and Baseline of Chen, Karthik, Chee & Tan (2024).

All three share the phase schedule of :mod:`~dpbandits.algorithms.bai.schedule` and the engine of
:mod:`~dpbandits.algorithms.bai.phased`. In phase p with active set A_p (|A_p| = s_p):

1. d_p = dim span{a_i : i ∈ A_p} (coordinates in an orthonormal basis of the span, eq. 9);
2. if d_p² < s_p, pull the d_p arms of a Max-Det collection B_p, else every arm of A_p
   (Baseline always pulls every arm);
3. each pulled arm is pulled m_p = ⌈T'/(M·n_p)⌉ times (budget guard, errata BAI-A11);
4. μ̃_j = (mean of this phase's m_p rewards of j) + noise, noise Lap(1/(ε·m_p)) (DP-BAI, Baseline)
   or N(0, 2·ln(1.25/δ)/(ε·m_p)²) (DP-BAI-Gauss);
5. arms outside B_p get μ̃_i = Σ_j α_{i,j}·μ̃_j with a_i = Σ_j α_{i,j}·b_j (eq. 12);
6. the s_{p+1} arms with the largest μ̃ stay active.

The decisions depend on the basis of step 1 only through the Max-Det collection and the α, both
invariant under a change of basis, so the plan of a phase is computed from the original
features of the active arms.
"""

from __future__ import annotations

import hashlib
import math
import threading
import warnings
from collections import OrderedDict
from collections.abc import Hashable, Mapping
from typing import cast

import numpy as np
from numpy.typing import ArrayLike

from dpbandits._core.errors import InvalidParameterError, PrivacyWarning
from dpbandits._core.rng import RNGLike
from dpbandits._core.typing import FloatArray, IntArray
from dpbandits._core.validation import (
    MAX_EXACT_COUNT,
    check_array,
    check_delta,
    check_epsilon,
    check_int,
    check_one_of,
)
from dpbandits.algorithms.bai.designs import (
    MAXDET_METHODS,
    extrapolation_coefficients,
    max_det_collection,
    reduce_dimension,
)
from dpbandits.algorithms.bai.phased import PhasedAlgorithm, PhasePlan, check_reward_bounds
from dpbandits.algorithms.bai.schedule import (
    BUDGET_MODES,
    DegenerateInstanceError,
    PhaseSchedule,
    dp_bai_schedule,
    guard_pulls,
)
from dpbandits.algorithms.registry import register_algorithm, register_algorithm_class
from dpbandits.envs.base import BanditEnvironment
from dpbandits.privacy.guarantees import ApproxDP, Guarantee, Neighbouring, PureDP
from dpbandits.privacy.mechanisms import analytic_gaussian_sigma

__all__ = ["DPBAI", "REWARD_TABLE_UNIT", "Baseline", "DPBAIGauss", "DPBAIPlanner", "environment_features"]

REWARD_TABLE_UNIT = "one entry of the reward table (the reward of one pull of one arm)"
_REFERENCE = ("Z. Chen, P. N. Karthik, Y. M. Chee, V. Y. F. Tan, Fixed-budget differentially private best "
              "arm identification, ICLR 2024 (arXiv:2401.09073)")


def environment_features(env: BanditEnvironment) -> FloatArray:
    """Return ``env.features`` (a linear bandit), or the identity (K orthogonal arms) for a plain MAB."""
    features = getattr(env, "features", None)
    if features is None:
        return np.eye(env.n_arms)
    return check_array(features, "env.features", ndim=2)


class DPBAIPlanner:
    """Phase plans of DP-BAI / DP-BAI-Gauss / Baseline (state = (active arms, pulls used)).

    Parameters
    ----------
    features : ndarray, shape (K, d)
    budget : int
        T.
    schedule : PhaseSchedule
    budget_mode : {"paper", "strict"}
    noise_kind : {"laplace", "gaussian"}
    noise_multiplier : float
        Noise scale = ``noise_multiplier / m_p``: 1/ε (Laplace) or √(2·ln(1.25/δ))/ε (Gaussian).
    use_max_det : bool
        False for Baseline.
    maxdet : {"auto", "exact", "dominant"}
    """

    def __init__(self, features: FloatArray, budget: int, schedule: PhaseSchedule, *, budget_mode: str,
                 noise_kind: str, noise_multiplier: float, use_max_det: bool, maxdet: str) -> None:
        self.features = features
        self.budget = budget
        self.schedule = schedule
        self.budget_mode = budget_mode
        # ε = ∞ (multiplier 0): no noise is drawn at all
        self.noise_kind: str | None = noise_kind if noise_multiplier > 0 else None
        self.noise_multiplier = noise_multiplier
        self.use_max_det = use_max_det
        self.maxdet = maxdet
        self.n_arms = schedule.n_arms
        self.n_phases = schedule.n_phases
        self._designs: dict[tuple[int, ...], tuple[int, FloatArray, IntArray, str]] = {}
        self._plans: OrderedDict[tuple[int, Hashable], PhasePlan] = OrderedDict()
        self._key: tuple[object, ...] | None = None  # set by shared_planner: the public parameters it is kept under
        nu = schedule.max_pulled_dp_bai() if use_max_det else np.asarray(schedule.sizes[:-1])
        self.effective_budget = schedule.effective_budget(budget, budget_mode=budget_mode, max_pulled=nu)

    def __setstate__(self, state: dict[str, object]) -> None:
        """Unpickle; the planner becomes the process's shared one of its parameters if there is none yet.

        The server receives agents built or loaded by its child processes pickled: the next agent of
        those parameters in the server process then plans nothing.
        """
        self.__dict__.update(state)
        key = getattr(self, "_key", None)
        if key is not None:
            _keep_planner(key, self)

    def _design(self, active_tuple: tuple[int, ...]) -> tuple[int, FloatArray, IntArray, str]:
        """(d_p, α, pulled arms, branch) of an active set, cached by the active set."""
        if active_tuple in self._designs:
            return self._designs[active_tuple]
        active = np.asarray(active_tuple, dtype=np.int64)
        s_p = active.shape[0]
        coords, d_p = reduce_dimension(self.features[active])
        if d_p == 0:
            raise DegenerateInstanceError(
                f"the features of the active arms {active.tolist()} are all 0: their means are equal"
            )
        if self.use_max_det and d_p * d_p < s_p:  # d_p < √s_p (Alg. 1 line 6, exact integer test)
            basis = max_det_collection(coords, method=self.maxdet)
            alpha = extrapolation_coefficients(coords, basis)  # a_i = Σ_j α_{i,j} b_j
            design = (d_p, alpha, active[basis], "max-det")
        else:
            design = (d_p, np.eye(s_p), active, "all-arms")
        self._designs[active_tuple] = design
        return design

    def initial_state(self) -> Hashable:
        """All arms active, no pull used."""
        return (tuple(range(self.n_arms)), 0)

    def plan(self, phase: int, state: Hashable) -> PhasePlan:
        """Plan phase ``phase`` from (active arms, pulls used); the latest plans are remembered.

        A plan is a pure function of the planner's public parameters and of ``(phase, state)``; the
        :data:`_PLANS_KEPT` latest are kept (a load of a saved agent validates its state against the
        plan of its phase several times, and an agent of a planner shared by :func:`shared_planner`
        starts from the plan another one computed).
        """
        key = (phase, state)
        found = self._plans.get(key)
        if found is not None:
            return found
        made = self._plan(phase, state)
        with _GUARD:
            self._plans[key] = made
            while len(self._plans) > _PLANS_KEPT:
                self._plans.popitem(last=False)
        return made

    def _plan(self, phase: int, state: Hashable) -> PhasePlan:
        active_tuple, used = cast(tuple[tuple[int, ...], int], state)
        active = np.asarray(active_tuple, dtype=np.int64)
        d_p, alpha, pulled, branch = self._design(active_tuple)
        n_p = pulled.shape[0]
        planned = math.ceil(self.effective_budget / (self.n_phases * n_p))  # m_p = ⌈T'/(M·n_p)⌉
        m_arr, clipped_arr = guard_pulls(np.array([planned]), np.array([n_p]), np.array([used]), self.budget,
                                         budget_mode=self.budget_mode)
        m_p = int(m_arr[0])
        scale = self.noise_multiplier / m_p  # Laplace b = 1/(ε·m_p); Gaussian σ = √(2 ln(1.25/δ))/(ε·m_p)
        return PhasePlan(
            active=active, pulled=pulled, pulls=np.full(n_p, m_p, dtype=np.int64),
            sum_weights=alpha / m_p,  # per-phase mean μ̂_j = S_j/m_p, extrapolated by α
            noise_weights=alpha, noise_scales=np.full(n_p, scale), keep=self.schedule.sizes[phase + 1],
            statistic_weights=np.eye(n_p) / m_p,  # z_j = S_j/m_p + ξ_j, the noisy phase mean
            clipped=bool(clipped_arr[0]),
            info={"phase": phase + 1, "dim": d_p, "branch": branch, "pulls_per_arm": m_p, "noise_scale": scale},
        )

    def next_state(self, phase: int, state: Hashable, plan: PhasePlan, survivors: tuple[int, ...]) -> Hashable:
        """(survivors, used + pulls of this phase)."""
        return (survivors, cast(tuple[tuple[int, ...], int], state)[1] + plan.total_pulls)


_PLANS_KEPT = 64
"""Plans a :class:`DPBAIPlanner` remembers (see :meth:`DPBAIPlanner.plan`)."""
_PLANNERS_KEPT = 8
"""Planners :func:`shared_planner` keeps (the most recently used)."""
_PLANNERS: OrderedDict[tuple[object, ...], DPBAIPlanner] = OrderedDict()
_GUARD = threading.Lock()


def shared_planner(features: FloatArray, budget: int, schedule: PhaseSchedule, *, schedule_name: str, dim: int,
                   budget_mode: str, noise_kind: str, noise_multiplier: float, use_max_det: bool,
                   maxdet: str) -> DPBAIPlanner:
    """The process's planner of these public parameters (a new one the first time).

    Planning a phase is expensive for many arms (the span of K = 1000 features, a singular value
    decomposition of seconds), and it is a pure function of the algorithm's public parameters: the
    features (keyed by the SHA-256 of their bytes, shape and type), the budget, the schedule, the
    budget mode, the noise and the Max-Det method. Algorithms built with equal parameters -- every
    load of a saved agent rebuilds its algorithm -- share one planner and its remembered plans.
    Nothing of an agent's state is part of the key: a saved state is validated against the plans
    whoever computed them.
    """
    contiguous = np.ascontiguousarray(features)
    key = (hashlib.sha256(contiguous.tobytes()).hexdigest(), contiguous.shape, contiguous.dtype.str, int(budget),
           schedule_name, schedule.n_arms, int(dim), budget_mode, noise_kind, float(noise_multiplier),
           bool(use_max_det), maxdet)
    with _GUARD:
        planner = _PLANNERS.get(key)
        if planner is not None:
            _PLANNERS.move_to_end(key)
            return planner
    kept = contiguous.copy()  # the planner's own read-only copy: a caller's later change to its array is not shared
    kept.setflags(write=False)
    planner = DPBAIPlanner(kept, budget, schedule, budget_mode=budget_mode, noise_kind=noise_kind,
                           noise_multiplier=noise_multiplier, use_max_det=use_max_det, maxdet=maxdet)
    planner._key = key
    return _keep_planner(key, planner)


def _keep_planner(key: tuple[object, ...], planner: DPBAIPlanner) -> DPBAIPlanner:
    """The process's planner under ``key``: ``planner`` unless one is kept already."""
    with _GUARD:
        planner = _PLANNERS.setdefault(key, planner)
        _PLANNERS.move_to_end(key)
        while len(_PLANNERS) > _PLANNERS_KEPT:
            _PLANNERS.popitem(last=False)
    return planner


class _DPBAIFamily(PhasedAlgorithm):
    _use_max_det = True
    _name = "DP-BAI"

    def _build(self, features: ArrayLike, budget: int, *, schedule: str, budget_mode: str, maxdet: str,
               use_effective_dimension: bool, noise_kind: str, noise_multiplier: float, tie_break: str,
               clip_rewards: bool, allow_out_of_range: bool) -> None:
        self.features = check_array(features, "features", ndim=2)
        self.budget = check_int(budget, "budget", minimum=1, maximum=MAX_EXACT_COUNT)
        check_one_of(budget_mode, "budget_mode", BUDGET_MODES)
        check_one_of(maxdet, "maxdet", MAXDET_METHODS)
        n_arms, dim = self.features.shape
        if use_effective_dimension:
            dim = max(int(np.linalg.matrix_rank(self.features)), 1)
        self.schedule = dp_bai_schedule(n_arms, dim, schedule=schedule)
        self.budget_mode = budget_mode
        self.planner = shared_planner(self.features, self.budget, self.schedule, schedule_name=schedule,
                                      dim=dim, budget_mode=budget_mode, noise_kind=noise_kind,
                                      noise_multiplier=noise_multiplier, use_max_det=self._use_max_det,
                                      maxdet=maxdet)
        self._set_common(tie_break, clip_rewards, allow_out_of_range)


@register_algorithm_class("dp-bai")
class DPBAI(_DPBAIFamily):
    """DP-BAI: ε-DP fixed-budget best-arm identification in linear bandits (Algorithm 1).

    Parameters
    ----------
    features : array_like, shape (n_arms, dim)
        The public feature vectors a_i (one per row); mean rewards are a_iᵀθ*.
    budget : int
        T, the number of pulls; the algorithm uses at most T.
    epsilon : float
        ε > 0; ``math.inf`` means no noise (the non-private limit).
    schedule : {"canonical", "literal"}, default "canonical"
        Phase-schedule reading of eqs. (7)–(8) (errata BAI-A1).
    budget_mode : {"paper", "strict"}, default "paper"
        ``"paper"``: eq. (8) with a runtime clip guard; ``"strict"``: a larger reservation that never
        needs the guard.
    maxdet : {"auto", "exact", "dominant"}, default "auto"
        How Max-Det collections are found (utility only; privacy never depends on it).
    use_effective_dimension : bool, default False
        Use rank{a_i} instead of the ambient dimension in the schedule.
    tie_break : {"random", "index"}, default "random"
    clip_rewards : bool, default False
        Clip rewards to [0, 1] instead of refusing an environment whose rewards may exceed it.
    allow_out_of_range : bool, default False
        Run on rewards outside [0, 1] without clipping (replication of Appendix E.2 only; the
        guarantee then does not hold and :attr:`privacy` cannot vouch for it).

    Privacy
    -------
    ε-DP (Definition 2.1) for one entry of the reward table x_{i,n} (the n-th reward of arm i) under
    replacement, rewards in [0, 1] (Proposition 4.1, Appendix F). Each reward enters one per-phase
    mean of m_p rewards (sensitivity 1/m_p) released with Laplace noise of scale 1/(ε·m_p); all
    decisions are post-processing; phases use disjoint rewards (parallel composition).

    References
    ----------
    Z. Chen, P. N. Karthik, Y. M. Chee, V. Y. F. Tan, "Fixed-budget differentially private best arm
    identification", ICLR 2024 (arXiv:2401.09073): Algorithm 1, Proposition 4.1, Theorem 4.2.

    Examples
    --------
    >>> import numpy as np
    >>> from dpbandits.algorithms.bai.dp_bai import DPBAI
    >>> algo = DPBAI(np.eye(3), budget=300, epsilon=1.0)
    >>> algo.privacy.epsilon
    1.0
    """

    def __init__(self, features: ArrayLike, budget: int, epsilon: float, *, schedule: str = "canonical",
                 budget_mode: str = "paper", maxdet: str = "auto", use_effective_dimension: bool = False,
                 tie_break: str = "random", clip_rewards: bool = False, allow_out_of_range: bool = False) -> None:
        self.epsilon = check_epsilon(epsilon, allow_inf=True)
        self._build(features, budget, schedule=schedule, budget_mode=budget_mode, maxdet=maxdet,
                    use_effective_dimension=use_effective_dimension, noise_kind="laplace",
                    noise_multiplier=1.0 / self.epsilon, tie_break=tie_break, clip_rewards=clip_rewards,
                    allow_out_of_range=allow_out_of_range)

    @property
    def privacy(self) -> Guarantee:
        """ε-DP for one entry of the reward table (Proposition 4.1)."""
        reference = f"{_REFERENCE}, Proposition 4.1 ({self._name})"
        reason = self._void_reason()
        if reason:
            return PureDP.infinite(unit=REWARD_TABLE_UNIT, neighbouring=Neighbouring.REPLACE_ONE,
                                   reason=reason, reference=reference)
        return PureDP(epsilon=self.epsilon, unit=REWARD_TABLE_UNIT, neighbouring=Neighbouring.REPLACE_ONE,
                      reference=reference)

    def _void_reason(self) -> str:
        if math.isinf(self.epsilon):
            return "epsilon=inf: no noise is added"
        if self.allow_out_of_range:
            return "allow_out_of_range=True: rewards may exceed [0, 1], so the sensitivity is unbounded"
        return ""


@register_algorithm_class("dp-bai-baseline")
class Baseline(DPBAI):
    """Baseline of §5: DP-BAI without Max-Det collections (every active arm is pulled in every phase).

    Same parameters as :class:`DPBAI` (``maxdet`` is ignored).

    Privacy
    -------
    ε-DP for one entry of the reward table, by the argument of DP-BAI (Proposition 4.1): per-phase
    means of disjoint rewards with Laplace noise of scale 1/(ε·m_p).

    References
    ----------
    Chen et al., ICLR 2024 (arXiv:2401.09073), Section 5 ("Baseline").
    """

    _use_max_det = False
    _name = "Baseline"


@register_algorithm_class("dp-bai-gauss")
class DPBAIGauss(_DPBAIFamily):
    """DP-BAI-Gauss: (ε, δ)-DP variant of DP-BAI with Gaussian noise (Algorithm 2, Appendix D).

    Parameters
    ----------
    features, budget, schedule, budget_mode, maxdet, use_effective_dimension, tie_break, clip_rewards,
    allow_out_of_range
        As for :class:`DPBAI`.
    epsilon : float
        ε > 0.
    delta : float
        δ in (0, 1).
    calibration : {"classical", "analytic"}, default "classical"
        ``"classical"``: the paper's σ_p = √(2·ln(1.25/δ))/(ε·m_p). ``"analytic"``: the smallest σ of
        Balle & Wang (2018) for ℓ2-sensitivity 1/m_p, valid for every ε > 0.

    Warns
    -----
    PrivacyWarning
        If ε >= 1 with the classical calibration: the classical Gaussian calibration σ = √(2 ln(1.25/δ))·Δ/ε is proven for ε < 1 only
        (Dwork & Roth 2014, Theorem A.1), which the paper's proof cites.

    Privacy
    -------
    (ε, δ)-DP for one entry of the reward table (Proposition D.2): each per-phase mean (ℓ2-sensitivity
    1/m_p) is released with N(0, 2·ln(1.25/δ)/(ε·m_p)²) noise, phases use disjoint rewards. The
    guarantee is stated for ε < 1; for ε >= 1 :attr:`privacy` reports ε = ∞ with the reason, unless
    ``calibration="analytic"`` (Balle & Wang 2018, Theorem 8), which holds for every ε.

    References
    ----------
    Chen et al., ICLR 2024 (arXiv:2401.09073), Algorithm 2, Proposition D.2 and D.3.
    """

    _name = "DP-BAI-Gauss"

    def __init__(self, features: ArrayLike, budget: int, epsilon: float, delta: float, *,
                 calibration: str = "classical", schedule: str = "canonical", budget_mode: str = "paper",
                 maxdet: str = "auto", use_effective_dimension: bool = False, tie_break: str = "random",
                 clip_rewards: bool = False, allow_out_of_range: bool = False) -> None:
        self.epsilon = check_epsilon(epsilon)
        self.delta = check_delta(delta)
        self.calibration = check_one_of(calibration, "calibration", ("classical", "analytic"))
        if self.delta == 0.0:
            raise InvalidParameterError("delta must lie in (0, 1) for the Gaussian mechanism; got 0.0")
        if calibration == "analytic":
            # σ_p = σ_analytic(Δ = 1, ε, δ) / m_p: the analytic σ is linear in the sensitivity Δ = 1/m_p
            multiplier = analytic_gaussian_sigma(1.0, self.epsilon, self.delta)
        else:
            if self.epsilon >= 1.0:
                warnings.warn(
                    f"epsilon={self.epsilon} >= 1: the classical Gaussian calibration is proven for epsilon < 1 "
                    "only; the reported guarantee is void (epsilon=inf); use calibration='analytic'",
                    PrivacyWarning, stacklevel=2)
            # σ_p = √(2·ln(1.25/δ)) / (ε·m_p)
            multiplier = math.sqrt(2.0 * math.log(1.25 / self.delta)) / self.epsilon
        self._build(features, budget, schedule=schedule, budget_mode=budget_mode, maxdet=maxdet,
                    use_effective_dimension=use_effective_dimension, noise_kind="gaussian",
                    noise_multiplier=multiplier, tie_break=tie_break, clip_rewards=clip_rewards,
                    allow_out_of_range=allow_out_of_range)

    @property
    def privacy(self) -> Guarantee:
        """(ε, δ)-DP for one entry of the reward table (Proposition D.2), for ε < 1."""
        reference = f"{_REFERENCE}, Proposition D.2 (DP-BAI-Gauss)"
        if self.calibration == "analytic":
            reference += "; Balle & Wang (2018), Theorem 8 (analytic Gaussian calibration)"
        if (self.epsilon >= 1.0 and self.calibration == "classical") or self.allow_out_of_range:
            reason = ("classical Gaussian calibration is proven for epsilon < 1 only" if self.epsilon >= 1.0
                      else "allow_out_of_range=True: rewards may exceed [0, 1]")
            return ApproxDP(epsilon=math.inf, delta=self.delta, unit=REWARD_TABLE_UNIT,
                            neighbouring=Neighbouring.REPLACE_ONE, reference=reference, reason=reason)
        return ApproxDP(epsilon=self.epsilon, delta=self.delta, unit=REWARD_TABLE_UNIT,
                        neighbouring=Neighbouring.REPLACE_ONE, reference=reference)


_BUILT: dict[Hashable, PhasedAlgorithm] = {}
_BUILT_LIMIT = 16


def _built(cls: type[PhasedAlgorithm], features: FloatArray, *args: Hashable, **params: Hashable) -> PhasedAlgorithm:
    """``cls(features, *args, **params)``, reused across calls with equal arguments (a study's chunks of one cell).

    An algorithm is a pure function of its public arguments, and so are its phase plans (cached on
    it), so ``simulate`` calls for the same cell share the build and the plans instead of paying them
    per call. A build that warned is not kept, so that every call warns as before; at most
    ``_BUILT_LIMIT`` builds are kept (the oldest goes first).
    """
    array = np.ascontiguousarray(features, dtype=np.float64)
    key = (cls, array.shape, array.tobytes(), args, tuple(sorted(params.items())))
    found = _BUILT.get(key)
    if found is not None:
        return found
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        algorithm = cls(array, *args, **params)  # type: ignore[call-arg]
    for warning in caught:  # passed on as they came (the caller's filters apply)
        warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
    if not caught:
        if len(_BUILT) >= _BUILT_LIMIT:
            del _BUILT[next(iter(_BUILT))]
        _BUILT[key] = algorithm
    return algorithm


def _metrics(algorithm: PhasedAlgorithm, env: BanditEnvironment, n_trials: int, rng: RNGLike,
             pull_consistent: bool) -> Mapping[str, np.ndarray]:
    result = algorithm.simulate(env, n_trials, rng, pull_consistent=pull_consistent)
    return {metric: result[metric] for metric in _METRICS}


_METRICS = ("success", "pulls_used")


@register_algorithm("dp-bai", family="bai", privacy="ε-DP for one entry of the reward table",
                    metrics=_METRICS, proportion_metrics=("success",), environments=("linear", "mab"), precheck=check_reward_bounds)
def simulate_dp_bai(env: BanditEnvironment, *, n_trials: int, rng: RNGLike, budget: int, epsilon: float,
                    schedule: str = "canonical", budget_mode: str = "paper", maxdet: str = "auto",
                    use_effective_dimension: bool = False, tie_break: str = "random", clip_rewards: bool = False,
                    allow_out_of_range: bool = False, pull_consistent: bool = False) -> Mapping[str, np.ndarray]:
    """DP-BAI (Chen et al. 2024, Algorithm 1): Max-Det collections + Laplace-privatised phase means.

    Runs :class:`DPBAI` vectorised over ``n_trials``; returns per-trial ``success`` and ``pulls_used``.

    Privacy
    -------
    ε-DP for one entry of the reward table (replacement, rewards in [0, 1]); void with
    ``allow_out_of_range=True`` or ``epsilon=inf`` (see :attr:`DPBAI.privacy`).

    References
    ----------
    Chen et al., ICLR 2024 (arXiv:2401.09073), Algorithm 1, Proposition 4.1.
    """
    algorithm = _built(DPBAI, environment_features(env), budget, epsilon, schedule=schedule, budget_mode=budget_mode,
                       maxdet=maxdet, use_effective_dimension=use_effective_dimension, tie_break=tie_break,
                       clip_rewards=clip_rewards, allow_out_of_range=allow_out_of_range)
    return _metrics(algorithm, env, n_trials, rng, pull_consistent)


@register_algorithm("dp-bai-gauss", family="bai", privacy="(ε, δ)-DP for one entry of the reward table",
                    metrics=_METRICS, proportion_metrics=("success",), environments=("linear", "mab"), precheck=check_reward_bounds)
def simulate_dp_bai_gauss(env: BanditEnvironment, *, n_trials: int, rng: RNGLike, budget: int, epsilon: float,
                          delta: float, calibration: str = "classical", schedule: str = "canonical",
                          budget_mode: str = "paper", maxdet: str = "auto", use_effective_dimension: bool = False,
                          tie_break: str = "random",
                          clip_rewards: bool = False, allow_out_of_range: bool = False,
                          pull_consistent: bool = False) -> Mapping[str, np.ndarray]:
    """DP-BAI-Gauss (Chen et al. 2024, Algorithm 2): Gaussian-privatised phase means, (ε, δ)-DP.

    Privacy
    -------
    (ε, δ)-DP for one entry of the reward table (ε < 1 with the classical calibration; every ε
    with ``calibration="analytic"``); see :attr:`DPBAIGauss.privacy`.

    References
    ----------
    Chen et al., ICLR 2024 (arXiv:2401.09073), Algorithm 2, Proposition D.2.
    """
    algorithm = _built(DPBAIGauss, environment_features(env), budget, epsilon, delta, calibration=calibration,
                       schedule=schedule, budget_mode=budget_mode, maxdet=maxdet,
                       use_effective_dimension=use_effective_dimension, tie_break=tie_break,
                       clip_rewards=clip_rewards, allow_out_of_range=allow_out_of_range)
    return _metrics(algorithm, env, n_trials, rng, pull_consistent)


@register_algorithm("dp-bai-baseline", family="bai", privacy="ε-DP for one entry of the reward table",
                    metrics=_METRICS, proportion_metrics=("success",), environments=("linear", "mab"), precheck=check_reward_bounds)
def simulate_baseline(env: BanditEnvironment, *, n_trials: int, rng: RNGLike, budget: int, epsilon: float,
                      schedule: str = "canonical", budget_mode: str = "paper", use_effective_dimension: bool = False,
                      tie_break: str = "random", clip_rewards: bool = False, allow_out_of_range: bool = False,
                      pull_consistent: bool = False) -> Mapping[str, np.ndarray]:
    """Baseline (Chen et al. 2024, §5): DP-BAI without Max-Det; every active arm pulled each phase.

    Privacy
    -------
    ε-DP for one entry of the reward table, as DP-BAI (Proposition 4.1).

    References
    ----------
    Chen et al., ICLR 2024 (arXiv:2401.09073), Section 5.
    """
    algorithm = _built(Baseline, environment_features(env), budget, epsilon, schedule=schedule,
                       budget_mode=budget_mode, use_effective_dimension=use_effective_dimension, tie_break=tie_break,
                       clip_rewards=clip_rewards, allow_out_of_range=allow_out_of_range)
    return _metrics(algorithm, env, n_trials, rng, pull_consistent)
