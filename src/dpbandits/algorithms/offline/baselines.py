"""Baselines for utility comparisons with the KL-regularised MAB policy (spec §3.5 and study E5).

By default the private baselines use the same **per-instance** sensitivity as Theorem 1: for arms
with N(a) >= N_min >= 2, one added or removed record moves u(a) = r̄(a) − β0/√N(a) by at most
Δ = 2R/(N_min − 1) + β0/(2(N_min − 1)^{3/2}) (App. B), and only the arm of that record changes.
The guarantee then holds for D and its neighbours only, and Δ itself depends on D.

With ``min_count=m`` (a public lower bound on every arm's count, fixed before seeing the data) they
are the standard mechanisms with the **global** sensitivity Δ(m) over the domain
{D : N(a; D) >= m for every arm} (spec §4.1, ``scope="domain"``): the noise no longer depends on D,
the guarantee is an ordinary (not per-instance) ε-DP statement for neighbouring datasets in the
domain, and data outside the domain is refused.

* :class:`ExponentialMechanismMAB` — the standard exponential mechanism on u (β0 = 0: "EM-mean";
  β0 > 0: "EM-pessimistic") with temperature 2Δ/ε and a uniform base measure;
* :class:`ReportNoisyMaxMAB` — argmax_a (u(a) + Lap(Δ/ε)), ε-DP because one utility changes;
* :class:`LaplaceStatisticsGreedyMAB` — releases ũ = u + Lap(Δ/ε)^K once (ℓ1-sensitivity Δ since one
  arm changes) and acts greedily: every later sample is post-processing (policy-level privacy);
* :class:`PessimisticGreedyMAB` — the non-private argmax of u (ties broken uniformly at random).

Arms without data (N = 0) are excluded, as in the KL policy; if some arm has N <= 1 the
sensitivity is unbounded and the guarantee is ε = ∞ with the reason.
"""

from __future__ import annotations

import math

import numpy as np

from dpbandits._core.errors import EmptySupportError, InvalidParameterError, NotFittedError
from dpbandits._core.rng import RNGLike, as_generator
from dpbandits._core.typing import FloatArray, IntArray
from dpbandits._core.validation import check_in_interval, check_int, check_positive_float
from dpbandits.algorithms.offline.accountants import UNIT_MAB
from dpbandits.algorithms.offline.kl_mab import mab_utilities
from dpbandits.envs.offline import LoggedBanditData
from dpbandits.privacy.guarantees import Guarantee, Neighbouring, PureDP
from dpbandits.privacy.mechanisms import ExponentialMechanism, LaplaceMechanism, report_noisy_max

__all__ = [
    "ExponentialMechanismMAB",
    "LaplaceStatisticsGreedyMAB",
    "PessimisticGreedyMAB",
    "ReportNoisyMaxMAB",
    "mab_utility_sensitivity",
]


def mab_utility_sensitivity(n_min: int, *, reward_bound: float, beta0: float) -> float:
    """Δ = 2R/(N_min − 1) + β0/(2(N_min − 1)^{3/2}) (App. B); ∞ if N_min <= 1."""
    if n_min <= 1:
        return math.inf
    m = n_min - 1
    return 2.0 * reward_bound / m + beta0 / (2.0 * m**1.5)


class _MABBaseline:
    """Shared fitting: statistics, pessimistic utilities, covered arms and Δ."""

    name = "baseline"

    def __init__(self, n_arms: int, epsilon: float, beta0: float = 0.0, reward_bound: float = 1.0,
                 min_count: int | None = None) -> None:
        self.n_arms = check_int(n_arms, "n_arms", minimum=1)
        self.epsilon = check_positive_float(epsilon, "epsilon", allow_inf=True)
        self.beta0 = check_in_interval(beta0, "beta0", 0.0, math.inf, closed="left")
        self.reward_bound = check_positive_float(reward_bound, "reward_bound")
        # m: public lower bound on every N(a) (domain scope); None: per-instance sensitivity from D
        self.min_count = None if min_count is None else check_int(min_count, "min_count", minimum=2)

    def fit(self, data: LoggedBanditData, rng: RNGLike = None) -> _MABBaseline:
        """Compute u(a) and Δ from logged data (``rng`` is used only by policy-level releases)."""
        counts = data.counts()
        self.counts_: IntArray = counts
        self.utilities_: FloatArray = mab_utilities(counts, data.reward_sums(), self.beta0)
        self.covered_ = np.flatnonzero(counts > 0)
        if self.covered_.size == 0:
            raise EmptySupportError("no arm has data; the baseline has no action to choose")
        n_min = int(counts.min())
        if self.min_count is not None and n_min < self.min_count:
            arm = int(np.argmin(counts))
            raise InvalidParameterError(
                f"data must lie in the declared domain N(a) >= min_count = {self.min_count} for every arm; "
                f"got N({arm}) = {n_min}"
            )
        # Δ over the domain (global, data-independent) or at D (per instance)
        self.sensitivity_ = mab_utility_sensitivity(n_min if self.min_count is None else self.min_count,
                                                    reward_bound=self.reward_bound, beta0=self.beta0)
        return self

    def _check_fitted(self) -> None:
        if not hasattr(self, "utilities_"):
            raise NotFittedError(f"{type(self).__name__} is not fitted; call fit(data) first")

    def privacy(self) -> Guarantee:
        """Pure guarantee of one sample (add/remove of one logged record): per instance, or over the domain."""
        self._check_fitted()
        if not math.isfinite(self.sensitivity_) or not math.isfinite(self.epsilon):
            return PureDP.infinite(unit=UNIT_MAB, neighbouring=Neighbouring.ADD_REMOVE,
                                   reason="min_a N(a;D) <= 1 (unbounded sensitivity) or epsilon = inf",
                                   reference=type(self).__name__)
        scope = ("per-instance sensitivity" if self.min_count is None
                 else f"global sensitivity over the domain N(a) >= {self.min_count}")
        return PureDP(epsilon=self.epsilon, unit=UNIT_MAB, neighbouring=Neighbouring.ADD_REMOVE,
                      reference=f"{type(self).__name__} (spec §3.5), {scope}",
                      per_instance=self.min_count is None)

    def _sensitivity_for_noise(self) -> float:
        # with unbounded sensitivity no finite noise helps; use the N = 2 value so sampling still works
        return self.sensitivity_ if math.isfinite(self.sensitivity_) else mab_utility_sensitivity(
            2, reward_bound=self.reward_bound, beta0=self.beta0)


class ExponentialMechanismMAB(_MABBaseline):
    """Exponential mechanism on u(a) = r̄(a) − β0/√N(a) with η = 2Δ/ε and a uniform base measure.

    Parameters
    ----------
    n_arms : int
    epsilon : float
        Target ε > 0.
    beta0 : float, default 0
        0 gives "EM-mean"; > 0 gives "EM-pessimistic".
    reward_bound : float, default 1
    min_count : int, optional
        m >= 2, a public lower bound on every arm's count: Δ = Δ(m) is the global sensitivity over
        that domain (see the module docstring); default: per-instance Δ(N_min(D)).

    Privacy
    -------
    ε-DP for add/remove of one logged record: per instance (Δ depends on N_min of D), or, with
    ``min_count``, for every pair of neighbouring datasets in the domain N(a) >= m.

    References
    ----------
    McSherry & Talwar (2007); KL paper eq. (6); spec §3.5.
    """

    name = "em"

    def _mechanism(self) -> ExponentialMechanism:
        return ExponentialMechanism(self._sensitivity_for_noise(), self.epsilon)

    def probabilities(self) -> FloatArray:
        """Exact output distribution over all arms (0 for arms without data)."""
        self._check_fitted()
        probs = np.zeros(self.n_arms)
        probs[self.covered_] = self._mechanism().probabilities(self.utilities_[self.covered_])
        return probs

    def sample(self, rng: RNGLike = None, size: int | None = None) -> IntArray:
        """Sample arms; each sample is a separate ε-DP release."""
        self._check_fitted()
        return np.asarray(self.covered_[self._mechanism().sample(self.utilities_[self.covered_], rng, size)])


class ReportNoisyMaxMAB(_MABBaseline):
    """Report-noisy-max: argmax_a (u(a) + Lap(Δ/ε)) (one utility changes between neighbours).

    Privacy
    -------
    ε-DP per instance, add/remove of one logged record (Dwork & Roth, Claim 3.9 argument).

    References
    ----------
    Dwork & Roth (2014), §3.3; spec §3.5.
    """

    name = "rnm"

    def sample(self, rng: RNGLike = None, size: int | None = None) -> IntArray:
        """Sample arms; each sample is a separate ε-DP release."""
        self._check_fitted()
        u = self.utilities_[self.covered_]
        batch = u if size is None else np.broadcast_to(u, (check_int(size, "size", minimum=1), u.size))
        picks = report_noisy_max(batch, self._sensitivity_for_noise(), self.epsilon, rng, one_utility_changes=True)
        return np.asarray(self.covered_[picks])


class LaplaceStatisticsGreedyMAB(_MABBaseline):
    """Release ũ = u + Lap(Δ/ε) for every covered arm once, then act greedily on ũ.

    ``fit(data, rng)`` performs the (only) private release; :meth:`sample` is post-processing, so any
    number of samples costs no further privacy.

    Privacy
    -------
    ε-DP per instance for the released vector (ℓ1-sensitivity Δ: one arm changes).

    References
    ----------
    Dwork & Roth (2014), Theorem 3.6; spec §3.5 and E6.
    """

    name = "laplace-greedy"

    def fit(self, data: LoggedBanditData, rng: RNGLike = None) -> LaplaceStatisticsGreedyMAB:
        """Compute u and release ũ with the privacy-noise stream ``rng``."""
        super().fit(data)
        mech = LaplaceMechanism(self._sensitivity_for_noise(), self.epsilon)
        self.noisy_utilities_ = np.full(self.n_arms, -np.inf)
        self.noisy_utilities_[self.covered_] = mech.release(self.utilities_[self.covered_], rng=rng)
        return self

    def sample(self, rng: RNGLike = None, size: int | None = None) -> IntArray:
        """Greedy arm on ũ (deterministic; ``rng`` unused, kept for a uniform interface)."""
        self._check_fitted()
        best = np.int64(np.argmax(self.noisy_utilities_))
        return np.asarray(best if size is None else np.full(check_int(size, "size", minimum=1), best))


class PessimisticGreedyMAB(_MABBaseline):
    """Non-private reference: argmax_a (r̄(a) − β0/√N(a)), ties broken uniformly at random.

    Privacy
    -------
    None: the arg-max is deterministic in the data (ε = ∞); a utility reference for study E5.

    References
    ----------
    ``specs/spec_kl_regularization.md`` §3.5 (non-private references).
    """

    name = "greedy"

    def __init__(self, n_arms: int, beta0: float = 0.0, reward_bound: float = 1.0) -> None:
        super().__init__(n_arms, math.inf, beta0, reward_bound)

    def sample(self, rng: RNGLike = None, size: int | None = None) -> IntArray:
        """Arg-max arm (uniform among ties)."""
        self._check_fitted()
        best = np.flatnonzero(self.utilities_ == np.max(self.utilities_))
        gen = as_generator(rng)
        return np.asarray(gen.choice(best, size=size))

    def probabilities(self) -> FloatArray:
        """Uniform over the arg-max arms."""
        self._check_fitted()
        best = self.utilities_ == np.max(self.utilities_)
        return np.asarray(best / best.sum(), dtype=np.float64)

    def privacy(self) -> Guarantee:
        """No privacy: ε = ∞."""
        return PureDP.infinite(unit=UNIT_MAB, neighbouring=Neighbouring.ADD_REMOVE,
                               reason="non-private reference (deterministic arg-max)")

