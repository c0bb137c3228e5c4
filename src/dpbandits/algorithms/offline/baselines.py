"""Baselines for utility comparisons with the KL-regularised MAB policy (study kl-e5-privacy-utility).

The private baselines are standard mechanisms calibrated **only from public quantities**: the
number of arms K, the reward bound R, the pessimism β0, ε, and a per-arm count floor ``min_count``
= m declared before seeing the data (required: nothing about the noise is ever read off the data).
The declared domain is {D : N(a; D) >= m for every arm, rewards in [0, R]}; data outside it is
refused. Between two add/remove neighbours that both lie in the domain only the changed record's
arm moves, and its utility u = r̄ − β0/√N moves by at most
Δ(m) = R/(m + 1) + β0·(1/√m − 1/√(m + 1))
(:func:`dpbandits.algorithms.offline.accountants.mab_domain_sensitivity`), so each baseline is
ε-DP for every pair of neighbouring datasets in the domain — an ordinary, not per-instance, DP
statement.

* :class:`ExponentialMechanismMAB` — the standard exponential mechanism on u (β0 = 0: "EM-mean";
  β0 > 0: "EM-pessimistic") with temperature 2Δ/ε and a uniform base measure;
* :class:`ReportNoisyMaxMAB` — argmax_a (u(a) + Lap(Δ/ε)), ε-DP because one utility changes;
* :class:`LaplaceStatisticsGreedyMAB` — releases ũ = u + Lap(Δ/ε)^K once (ℓ1-sensitivity Δ since one
  arm changes) and acts greedily: every later sample is post-processing (policy-level privacy);
* :class:`PessimisticGreedyMAB` — the non-private argmax of u (ties broken uniformly at random).

Releases (``sample``, the Laplace release in ``fit``) go through
:func:`dpbandits.privacy.noise.privacy_noise`: secure OpenDP noise unless
``insecure_seeded_noise=True``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpbandits._core.errors import InvalidParameterError, NotFittedError
from dpbandits._core.persistence import Persistable
from dpbandits._core.rng import RNGLike, as_generator
from dpbandits._core.schema import Array, StateSchema
from dpbandits._core.typing import FloatArray, IntArray
from dpbandits._core.validation import check_epsilon, check_in_interval, check_int, check_positive_float
from dpbandits.algorithms.offline.accountants import UNIT_MAB, mab_domain_sensitivity
from dpbandits.algorithms.offline.deployment import DeployedPolicy
from dpbandits.algorithms.offline.domain import refuse_outside_count_floor
from dpbandits.algorithms.offline.kl_mab import MAB_COUNTS, MAB_SUMS, MAB_SUMS_WITHIN_COUNTS, mab_utilities
from dpbandits.algorithms.registry import register_algorithm_class
from dpbandits.envs.offline import LoggedBanditData
from dpbandits.privacy.accounting import Accountant, spend
from dpbandits.privacy.guarantees import Guarantee, Neighbouring, NonPrivate, PureDP
from dpbandits.privacy.mechanisms import ExponentialMechanism, ReportNoisyMaxMechanism, report_noisy_max
from dpbandits.privacy.noise import NoiseBackend, privacy_noise

__all__ = [
    "ExponentialMechanismMAB",
    "LaplaceStatisticsGreedyMAB",
    "PessimisticGreedyMAB",
    "ReportNoisyMaxMAB",
]


def _statistics(data: LoggedBanditData, n_arms: int, reward_bound: float) -> tuple[IntArray, FloatArray]:
    """N(a; D), S(a; D) of data checked against the public action space and reward bound."""
    if not isinstance(data, LoggedBanditData):
        raise InvalidParameterError(f"data must be a LoggedBanditData; got {type(data).__name__}")
    if data.n_arms != n_arms:
        raise InvalidParameterError(f"data.n_arms must equal the public n_arms = {n_arms}; got {data.n_arms}")
    if data.rewards.size and float(data.rewards.max()) > reward_bound:
        raise InvalidParameterError(
            f"rewards must lie in the declared [0, reward_bound] = [0, {reward_bound}]; got {float(data.rewards.max())!r}"
        )
    return data.counts(), data.reward_sums()


class _MABBaseline(DeployedPolicy, Persistable):
    """Shared fitting: statistics, pessimistic utilities, the domain check and the public Δ(m)."""

    name = "baseline"

    _fitted_schema = True  # an unfitted baseline saves no state
    _schema = StateSchema(
        counts_=Array("int64", ("n_arms",), low="min_count"),  # the declared domain N(a) >= m
        reward_sums_=MAB_SUMS, rules=[MAB_SUMS_WITHIN_COUNTS], derived=("utilities_",),
    )

    def __init__(self, n_arms: int, epsilon: float, beta0: float = 0.0, reward_bound: float = 1.0, *,
                 min_count: int) -> None:
        self.n_arms = check_int(n_arms, "n_arms", minimum=1)
        self.epsilon = check_epsilon(epsilon)
        self.beta0 = check_in_interval(beta0, "beta0", 0.0, math.inf, closed="left")
        self.reward_bound = check_positive_float(reward_bound, "reward_bound")
        # m: public lower bound on every N(a), fixed before seeing the data
        self.min_count = check_int(min_count, "min_count", minimum=1)
        # Δ(m), from public quantities only
        _check_magnitudes("reward_bound", self.reward_bound)
        self.sensitivity = mab_domain_sensitivity(self.min_count, reward_bound=self.reward_bound, beta0=self.beta0)
        _check_magnitudes("the sensitivity Δ(m)", self.sensitivity)
        _check_magnitudes("the noise scale Δ(m)/epsilon", self.sensitivity / self.epsilon)
        if self.reward_bound * self.epsilon / self.sensitivity > _MAX_RATIO:
            raise InvalidParameterError(
                f"epsilon = {self.epsilon:.4g} makes the noise scale Δ(m)/epsilon = {self.sensitivity / self.epsilon:.3g} "
                f"finer than the float resolution of utilities up to reward_bound = {self.reward_bound:g} "
                f"(reward_bound/scale above 2^52): the noise would vanish in rounding; lower epsilon"
            )

    def _fit_utilities(self, data: LoggedBanditData) -> None:
        counts, sums = _statistics(data, self.n_arms, self.reward_bound)
        refuse_outside_count_floor(counts, self.min_count)
        self.counts_: IntArray = counts
        self.reward_sums_: FloatArray = sums
        self.utilities_: FloatArray = mab_utilities(counts, sums, self.beta0)

    def _set_state(self, state: dict[str, Any]) -> None:
        """Restore the statistics and recompute the utilities from them."""
        super()._set_state(state)
        self.utilities_ = mab_utilities(self.counts_, self.reward_sums_, self.beta0)

    def _check_fitted(self) -> None:
        if not hasattr(self, "utilities_"):
            raise NotFittedError(f"{type(self).__name__} is not fitted; call fit(data) first")

    def guarantee(self) -> Guarantee:
        """The guarantee (as :attr:`privacy`; the baselines have no variants)."""
        return self.privacy

    @property
    def privacy(self) -> Guarantee:
        """Pure ε-DP of one release (add/remove of one logged record) over the declared domain."""
        return PureDP(
            epsilon=self.epsilon, unit=UNIT_MAB, neighbouring=Neighbouring.ADD_REMOVE,
            reference=(f"{type(self).__name__}, noise calibrated by the public Delta(m) = "
                       f"{self.sensitivity:.6g} from min_count m, reward bound R, beta0 and epsilon"),
            domain=(f"N(a) >= min_count = {self.min_count} for every arm, rewards in [0, {self.reward_bound:g}]; "
                    "every pair of add/remove neighbours in it"),
        )


_MAGNITUDES = (1e-300, 1e300)
"""Where a baseline's arithmetic (utilities over the noise scale, the exponential weights' log-sum-exp, the
integration range of the exact report-noisy-max distribution) neither overflows nor loses all precision."""


_MAX_RATIO = 2.0**52
"""The largest reward_bound/noise scale: beyond it the noise is below the float resolution of a utility."""


def _check_magnitudes(what: str, value: float) -> None:
    """Refuse ``value`` (reward_bound, Δ(m), the noise scale Δ(m)/ε) outside ``_MAGNITUDES``."""
    low, high = _MAGNITUDES
    if not low <= value <= high:
        raise InvalidParameterError(
            f"{what} = {value:.3g} (from reward_bound, beta0, min_count and epsilon) lies outside "
            f"[{low:g}, {high:g}], where the mechanism's arithmetic overflows or loses all precision"
        )


@register_algorithm_class("em-mab")
class ExponentialMechanismMAB(_MABBaseline):
    """Exponential mechanism on u(a) = r̄(a) − β0/√N(a) with η = 2Δ(m)/ε and a uniform base measure.

    Parameters
    ----------
    n_arms : int
        K, the public action space.
    epsilon : float
        Target ε > 0.
    beta0 : float, default 0
        0 gives "EM-mean"; > 0 gives "EM-pessimistic".
    reward_bound : float, default 1
        R; rewards outside [0, R] are refused.
    min_count : int
        m >= 1, the **public** per-arm count floor (required): Δ(m) is the sensitivity of u over
        the domain N(a) >= m; data outside it is refused.

    Privacy
    -------
    ε-DP for add/remove of one logged record, for every pair of neighbouring datasets in the domain
    N(a) >= m (Δ(m) from m, R and β0 only). :meth:`sample` draws with OpenDP's exact Gumbel
    noisy-max unless ``insecure_seeded_noise=True``.

    References
    ----------
    McSherry & Talwar (2007); KL paper eq. (6).
    """

    name = "em"

    def fit(self, data: LoggedBanditData) -> ExponentialMechanismMAB:
        """Compute u from logged data in the declared domain (no release)."""
        self._fit_utilities(data)
        return self

    def _mechanism(self) -> ExponentialMechanism:
        return ExponentialMechanism(self.sensitivity, self.epsilon)

    def probabilities(self) -> FloatArray:
        """Exact output distribution over the arms."""
        self._check_fitted()
        return np.asarray(self._mechanism().probabilities(self.utilities_), dtype=np.float64)

    def sample(self, rng: RNGLike = None, size: int | None = None, *, backend: NoiseBackend | str | None = None,
               insecure_seeded_noise: bool = False, accountant: Accountant | None = None) -> IntArray:
        """Sample arms; each sample is a separate ε-DP release, recorded in ``accountant`` before any draw."""
        self._check_fitted()
        spend(self._release_accountant(accountant), self.privacy, 1 if size is None else check_int(size, "size", minimum=1))
        return self._mechanism().sample(self.utilities_, rng, size, backend, insecure_seeded_noise=insecure_seeded_noise)


@register_algorithm_class("rnm-mab")
class ReportNoisyMaxMAB(_MABBaseline):
    """Report-noisy-max: argmax_a (u(a) + Lap(Δ(m)/ε)) (one utility changes between neighbours).

    Parameters are those of :class:`ExponentialMechanismMAB` (``min_count`` required).

    Privacy
    -------
    ε-DP for add/remove of one logged record over the domain N(a) >= m (Dwork & Roth, Claim 3.9
    argument with one utility changing by at most Δ(m)). The noise is added by OpenDP unless
    ``insecure_seeded_noise=True``.

    References
    ----------
    Dwork & Roth (2014), §3.3.
    """

    name = "rnm"

    def fit(self, data: LoggedBanditData) -> ReportNoisyMaxMAB:
        """Compute u from logged data in the declared domain (no release)."""
        self._fit_utilities(data)
        return self

    @property
    def noise_scale(self) -> float:
        """The public noise scale b = Δ(m)/ε."""
        return self._mechanism().scale

    def _mechanism(self) -> ReportNoisyMaxMechanism:
        return ReportNoisyMaxMechanism(self.sensitivity, self.epsilon, one_utility_changes=True)

    def probabilities(self) -> FloatArray:
        """Exact output distribution (numerical integration, :meth:`ReportNoisyMaxMechanism.probabilities`)."""
        self._check_fitted()
        return self._mechanism().probabilities(self.utilities_)

    def sample(self, rng: RNGLike = None, size: int | None = None, *, backend: NoiseBackend | str | None = None,
               insecure_seeded_noise: bool = False, accountant: Accountant | None = None) -> IntArray:
        """Sample arms; each sample is a separate ε-DP release, recorded in ``accountant`` before any draw."""
        self._check_fitted()
        spend(self._release_accountant(accountant), self.privacy, 1 if size is None else check_int(size, "size", minimum=1))
        u = self.utilities_
        batch = u if size is None else np.broadcast_to(u, (check_int(size, "size", minimum=1), u.size))
        return report_noisy_max(batch, self.sensitivity, self.epsilon, rng, one_utility_changes=True,
                                backend=backend, insecure_seeded_noise=insecure_seeded_noise)


@register_algorithm_class("laplace-greedy-mab")
class LaplaceStatisticsGreedyMAB(_MABBaseline):
    """Release ũ = u + Lap(Δ(m)/ε) for every arm once, then act greedily on ũ.

    ``fit(data)`` performs the (only) private release; :meth:`sample` is post-processing, so any
    number of samples costs no further privacy. Parameters are those of
    :class:`ExponentialMechanismMAB` (``min_count`` required).

    Privacy
    -------
    ε-DP for the released vector over the domain N(a) >= m (ℓ1-sensitivity Δ(m): one arm changes).
    The noise is added by OpenDP (floating-point safe) unless ``insecure_seeded_noise=True``.

    References
    ----------
    Dwork & Roth (2014), Theorem 3.6 and E6.
    """

    _schema = _MABBaseline._schema.extend(noisy_utilities_=Array("float64", ("n_arms",)))  # the release

    name = "laplace-greedy"

    @property
    def noise_scale(self) -> float:
        """The public noise scale b = Δ(m)/ε (ℓ1-sensitivity Δ(m) of the utility vector)."""
        return self.sensitivity / self.epsilon

    def fit(self, data: LoggedBanditData, rng: RNGLike = None, *, backend: NoiseBackend | str | None = None,
            insecure_seeded_noise: bool = False, accountant: Accountant | None = None) -> LaplaceStatisticsGreedyMAB:
        """Compute u and release ũ = u + Lap(b)^K, recorded in ``accountant`` before any draw."""
        self._fit_utilities(data)
        noise = privacy_noise(rng, insecure_seeded_noise=insecure_seeded_noise, backend=backend)
        spend(self._release_accountant(accountant), self.privacy)  # or the one given to agent()
        self.noisy_utilities_: FloatArray = noise.add_laplace(self.utilities_, self.noise_scale)
        return self

    def _check_deployment(self, accountant: Accountant) -> None:
        """Its one release is at ``fit``: an accountant given after it would record nothing that happened."""
        if hasattr(self, "noisy_utilities_"):
            raise InvalidParameterError("LaplaceStatisticsGreedyMAB releases its statistics at fit, which already "
                                        "happened: give agent(accountant=...) before fit, or fit(..., accountant=...)")

    def sample(self, size: int | None = None) -> IntArray:
        """Greedy arm on ũ (deterministic post-processing of the release)."""
        if not hasattr(self, "noisy_utilities_"):
            raise NotFittedError("LaplaceStatisticsGreedyMAB is not fitted; call fit(data) first")
        best = np.int64(np.argmax(self.noisy_utilities_))
        return np.asarray(best if size is None else np.full(check_int(size, "size", minimum=1), best))


@register_algorithm_class("greedy-mab")
class PessimisticGreedyMAB(DeployedPolicy, Persistable):
    """Non-private reference: argmax_a (r̄(a) − β0/√N(a)), ties broken uniformly at random.

    Parameters
    ----------
    n_arms : int
    beta0 : float, default 0
    reward_bound : float, default 1

    Privacy
    -------
    None: the arg-max is deterministic in the data (ε = ∞); a utility reference for study E5.

    References
    ----------
    Non-private references (not in the paper).
    """

    name = "greedy"

    _fitted_schema = True
    _schema = StateSchema(counts_=MAB_COUNTS, reward_sums_=MAB_SUMS, rules=[MAB_SUMS_WITHIN_COUNTS],
                          derived=("utilities_",))

    def __init__(self, n_arms: int, beta0: float = 0.0, reward_bound: float = 1.0) -> None:
        self.n_arms = check_int(n_arms, "n_arms", minimum=1)
        self.beta0 = check_in_interval(beta0, "beta0", 0.0, math.inf, closed="left")
        self.reward_bound = check_positive_float(reward_bound, "reward_bound")

    def _check_deployment(self, accountant: Accountant) -> None:
        """Non-private: no finite guarantee to record, so the accountant refuses it."""
        spend(accountant, self.privacy, label="PessimisticGreedyMAB.agent")

    def fit(self, data: LoggedBanditData) -> PessimisticGreedyMAB:
        """Compute u (arms without data get −∞)."""
        counts, sums = _statistics(data, self.n_arms, self.reward_bound)
        self.counts_, self.reward_sums_ = counts, sums
        self.utilities_: FloatArray = mab_utilities(counts, sums, self.beta0)
        return self

    def _set_state(self, state: dict[str, Any]) -> None:
        """Restore the statistics and recompute the utilities from them."""
        super()._set_state(state)
        self.utilities_ = mab_utilities(self.counts_, self.reward_sums_, self.beta0)

    def _best(self) -> np.ndarray:
        if not hasattr(self, "utilities_"):
            raise NotFittedError("PessimisticGreedyMAB is not fitted; call fit(data) first")
        return np.asarray(self.utilities_ == np.max(self.utilities_))

    def sample(self, rng: RNGLike = None, size: int | None = None) -> IntArray:
        """Arg-max arm (uniform among ties; ``rng`` only breaks ties, nothing here is private)."""
        return np.asarray(as_generator(rng).choice(np.flatnonzero(self._best()), size=size))

    def probabilities(self) -> FloatArray:
        """Uniform over the arg-max arms."""
        best = self._best()
        return np.asarray(best / best.sum(), dtype=np.float64)

    def guarantee(self) -> Guarantee:
        """The guarantee (as :attr:`privacy`)."""
        return self.privacy

    @property
    def privacy(self) -> Guarantee:
        """No privacy: ε = ∞."""
        return NonPrivate(unit=UNIT_MAB, neighbouring=Neighbouring.ADD_REMOVE,
                          reason="non-private reference (deterministic arg-max)")
