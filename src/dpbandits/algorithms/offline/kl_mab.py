"""KL-regularised pessimistic policy for the offline multi-armed bandit (eq. 8 of the KL paper).

π̃(a; D) ∝ π0(a)·exp((r̄(a; D) − β0·Γ(a; D))/η), with r̄ the empirical mean and Γ(a; D) = 1/√N(a; D).
The released output is **one action sampled** from π̃; the policy itself is not private.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from dpbandits._core.errors import EmptySupportError, InvalidParameterError, NotFittedError, PrivacyWarning
from dpbandits._core.persistence import Persistable
from dpbandits._core.resources import check_fits
from dpbandits._core.rng import RNGLike
from dpbandits._core.schema import Array, StateSchema, rule
from dpbandits._core.typing import FloatArray, IntArray
from dpbandits._core.validation import (
    check_in_interval,
    check_int,
    check_one_of,
    check_positive_float,
    check_probability_vector,
)
from dpbandits.algorithms.offline.accountants_mab import account_mab
from dpbandits.algorithms.offline.deployment import DeployedPolicy
from dpbandits.algorithms.offline.domain import refuse_outside_count_floor, require_declared_domain
from dpbandits.algorithms.registry import register_algorithm_class
from dpbandits.envs.offline import LoggedBanditData
from dpbandits.privacy.accounting import Accountant, spend
from dpbandits.privacy.guarantees import Guarantee
from dpbandits.privacy.mechanisms import gibbs_log_probabilities, sample_log_weights
from dpbandits.privacy.noise import NoiseBackend

__all__ = ["KLMABPolicy", "check_mab_statistics", "kl_log_policy", "log_reference_policy", "mab_utilities"]

_SUM_ROUNDING = 1e-9  # relative float slack allowed on S(a) <= N(a)·R (sums of in-range floats round)


def log_reference_policy(reference: ArrayLike | None, n_actions: int, name: str = "reference") -> FloatArray:
    """Return log π0 for a reference policy given as probabilities (``None`` = uniform).

    Zero entries give ``-inf`` (the action is never chosen).
    """
    if reference is None:
        return np.full(n_actions, -math.log(n_actions))
    pi0 = check_probability_vector(reference, name)
    if pi0.shape[0] != n_actions:
        raise InvalidParameterError(f"{name} must have {n_actions} entries; got {pi0.shape[0]}")
    with np.errstate(divide="ignore"):
        return np.asarray(np.log(pi0), dtype=np.float64)


def kl_log_policy(log_reference: ArrayLike, utilities: ArrayLike, eta: float) -> FloatArray:
    """Log π̃ ∝ log π0 + u/η via :func:`gibbs_log_probabilities`, with u shifted by its largest value on the support.

    Actions with π0(a) = 0 are excluded first (u = −∞; they are never chosen), then u is shifted by its
    largest finite value. The shift leaves the distribution unchanged and keeps u/η from overflowing
    to ∞ (which would give NaN) for tiny η; it is applied per row (last axis = actions). For finite η
    the scaled utilities u/η are formed here, so a value that overflows is exactly −∞ (weight 0).
    """
    log_pi0 = np.asarray(log_reference, dtype=np.float64)
    u = np.where(np.isneginf(log_pi0), -np.inf, np.asarray(utilities, dtype=np.float64))
    finite = np.isfinite(u)
    top = np.max(np.where(finite, u, -np.inf), axis=-1, keepdims=True)
    shifted = np.where(finite, u - np.where(np.isfinite(top), top, 0.0), u)
    if not math.isfinite(eta):
        return gibbs_log_probabilities(log_pi0, shifted, eta)
    with np.errstate(over="ignore"):  # shifted <= 0 on the support: overflow can only give −∞
        scaled = shifted / check_positive_float(eta, "eta")
    return gibbs_log_probabilities(log_pi0, scaled, 1.0)


def mab_utilities(counts: ArrayLike, reward_sums: ArrayLike, beta0: float) -> FloatArray:
    """Pessimistic utilities u(a) = r̄(a) − β0/√N(a), and ``-inf`` where N(a) = 0.

    Parameters
    ----------
    counts : array_like of shape (..., K)
        N(a; D) >= 0 (any leading batch shape).
    reward_sums : array_like of shape (..., K)
        S(a; D).
    beta0 : float
        β0 >= 0.

    Returns
    -------
    ndarray of shape (..., K)
        An arm with no data gets u = -inf: Γ = 1/√0 = ∞, so π̃(a) = 0 (errata KL-22).
    """
    n = np.asarray(counts, dtype=np.float64)
    s = np.asarray(reward_sums, dtype=np.float64)
    covered = n > 0
    safe_n = np.where(covered, n, 1.0)
    # u(a) = S(a)/N(a) − β0/√N(a)
    u = s / safe_n - beta0 / np.sqrt(safe_n)
    return np.asarray(np.where(covered, u, -np.inf), dtype=np.float64)


def check_mab_statistics(counts: ArrayLike, reward_sums: ArrayLike, *, n_arms: int,
                         reward_bound: float) -> tuple[IntArray, FloatArray]:
    """Validate sufficient statistics N(a; D), S(a; D) of a MAB dataset; never truncate or coerce.

    Statistics are possible for some dataset with rewards in [0, R] exactly when every count is a
    non-negative integer and 0 <= S(a) <= N(a)·R (up to a relative float rounding of 1e-9 on the
    upper end, which sums of in-range floats can produce). Anything else is refused: the privacy
    analysis (the sensitivity of r̄) assumes it.

    Parameters
    ----------
    counts : array_like of shape (K,)
        N(a; D): integers >= 0 (integral floats such as ``3.0`` are accepted, ``2.5`` is not).
    reward_sums : array_like of shape (K,)
        S(a; D), finite, in [0, N(a)·R].
    n_arms : int
        K.
    reward_bound : float
        R.

    Returns
    -------
    (ndarray of int64, ndarray of float64)

    Raises
    ------
    InvalidParameterError
        Naming the statistic, the arm, the constraint and the value.
    """
    n_raw = np.asarray(counts)
    s = np.asarray(reward_sums)
    for name, arr in (("counts", n_raw), ("reward_sums", s)):
        if arr.shape != (n_arms,):
            raise InvalidParameterError(f"{name} must have shape ({n_arms},) (one entry per arm); got {arr.shape}")
        if arr.dtype.kind not in "iuf":
            raise InvalidParameterError(f"{name} must be numeric; got dtype {arr.dtype}")
    n_float = n_raw.astype(np.float64)
    s = s.astype(np.float64)
    bad = np.flatnonzero(~np.isfinite(n_float) | (n_float < 0) | (n_float != np.round(n_float)))
    if bad.size:
        arm = int(bad[0])
        raise InvalidParameterError(
            f"counts must be non-negative integers; got N({arm}) = {n_raw[arm].item()!r}"
        )
    n = n_float.astype(np.int64)
    upper = n * reward_bound
    bad = np.flatnonzero(~np.isfinite(s) | (s < 0) | (s > upper * (1.0 + _SUM_ROUNDING)))
    if bad.size:
        arm = int(bad[0])
        raise InvalidParameterError(
            f"reward_sums must lie in [0, N(a)*R] = [0, {float(upper[arm])!r}] for arm {arm} "
            f"(N = {int(n[arm])}, R = {reward_bound!r}); got S({arm}) = {s[arm].item()!r}"
        )
    return n, s


MAB_COUNTS = Array("int64", ("n_arms",), low=0)
"""N(a): whole counts >= 0, one per arm."""
MAB_SUMS = Array("float64", ("n_arms",), low=0)
"""S(a): reward sums >= 0, one per arm."""
MAB_SUMS_WITHIN_COUNTS = rule("S(a) <= N(a)·R for every arm",
                              lambda p, s: (s["reward_sums_"] <= s["counts_"] * p.reward_bound * (1 + 1e-12)).all())


def _extremes_fit(counts: IntArray, sums: FloatArray, minima: FloatArray, maxima: FloatArray, r: float) -> bool:
    """Whether per-arm reward extremes are NaN where N = 0 and consistent with (N, S) elsewhere."""
    empty = counts == 0
    if not (np.isnan(minima[empty]).all() and np.isnan(maxima[empty]).all()):
        return False
    n, s, lo, hi = counts[~empty], sums[~empty], minima[~empty], maxima[~empty]
    slack = 1e-9 * np.maximum(1.0, n * r)
    return bool(np.all(lo <= hi) and np.all(n * lo <= s + slack) and np.all(s <= n * hi + slack)
                and np.all(hi <= s + slack) and np.all(s <= lo + (n - 1) * r + slack))


@register_algorithm_class("kl-mab", "kl-mab-repeated")
class KLMABPolicy(DeployedPolicy, Persistable):
    """KL-regularised pessimistic policy for logged multi-armed bandit data (eq. 8).

    Parameters
    ----------
    n_arms : int
        K >= 1, the public action space (never inferred from the data).
    eta : float
        η > 0, the KL-regularisation strength (temperature).
    beta0 : float, default 1
        β0 >= 0, the pessimism level (approximate-DP results need β0 > 0).
    reward_bound : float, default 1
        R > 0; rewards must lie in [0, R].
    reference : array_like of shape (K,), optional
        π0, probabilities (zeros allowed); uniform when omitted.
    empty_fallback : {"raise", "reference"}, default "raise"
        What to do when no arm has data: raise :class:`EmptySupportError`, or use π0 (documented:
        then **no** privacy guarantee holds, and a :class:`PrivacyWarning` is issued).
    min_count : int, optional
        m >= 1, a **public** per-arm count floor fixed before seeing the data: the declared domain is
        {D : N(a; D) >= m for every arm with π0(a) > 0}. With it, ``fit`` refuses data outside the
        domain and ``privacy(scope="domain")`` gives an ordinary (data-independent) DP guarantee.

    Attributes
    ----------
    counts_ : ndarray of int, shape (K,)
        N(a; D).
    reward_sums_ : ndarray, shape (K,)
        S(a; D).
    reward_minima_, reward_maxima_ : ndarray, shape (K,)
        Smallest and largest reward of each arm (NaN where N(a) = 0); from statistics alone, the
        extremes any dataset with those statistics can have. Used by ``variant="tight"``.
    utilities_ : ndarray, shape (K,)
        u(a) = r̄(a) − β0/√N(a) (``-inf`` for arms with no data).
    log_probabilities_ : ndarray, shape (K,)
        log π̃(a; D).
    n_records_ : int
        n = |D|.

    Privacy
    -------
    One action sampled from π̃ protects one logged record (add/remove). Per instance (the default
    ``scope="instance"``): ε0 = (4R/(N_min − 1) + β0/(N_min − 1)^{3/2})/η when min_a N(a) > 1
    (Theorem 1), the exact per-instance loss with ``variant="tight"``, approximate guarantees from
    Theorem 1′ (corrected; the paper's approximate claim is false). Per-instance figures depend on D
    and are not worst-case DP guarantees. With the public floor ``min_count`` = m,
    ``scope="domain"`` is ε-DP for every pair of neighbouring datasets in the declared domain,
    calibrated only by the public η, β0, R and m. See :meth:`privacy` and
    :mod:`dpbandits.algorithms.offline.accountants`. Each further sample costs privacy again
    (composition): ``sample(accountant=...)`` records :meth:`sample_guarantee`, the domain
    guarantee Δ(m)/η, never a per-instance figure (which would make the ledger and the refusal
    point a function of D), and is refused without ``min_count``. :meth:`sample` draws with OpenDP's
    exact Gumbel noisy-max by default.

    References
    ----------
    Zhang, Panaganti, Shi, Ziani, Wierman (2025), "KL-regularization itself is differentially private
    in bandits and RLHF", eq. (8), Theorem 1 and Corollary 1.

    Examples
    --------
    >>> from dpbandits.algorithms.offline import KLMABPolicy
    >>> policy = KLMABPolicy(n_arms=2, eta=0.5, beta0=0.1).fit([0, 0, 1, 1, 1], [1, 1, 0, 1, 0])
    >>> policy.probabilities().round(3).tolist()
    [0.787, 0.213]
    """

    _fitted_schema = True  # an unfitted policy saves no state
    _schema = StateSchema(
        counts_=MAB_COUNTS, reward_sums_=MAB_SUMS,
        reward_minima_=Array("float64", ("n_arms",), low=0, high="reward_bound", nan=True),
        reward_maxima_=Array("float64", ("n_arms",), low=0, high="reward_bound", nan=True),
        rules=[MAB_SUMS_WITHIN_COUNTS,
               rule("reward extremes: NaN exactly where N(a) = 0, else min <= S/N <= max and "
                    "max + (N - 1)·0 <= S <= min + (N - 1)·R",
                    lambda p, s: _extremes_fit(s["counts_"], s["reward_sums_"], s["reward_minima_"],
                                               s["reward_maxima_"], p.reward_bound))],
        derived=("utilities_", "log_probabilities_", "n_records_", "fallback_used_"),  # recomputed by _fit
    )

    def __init__(
        self,
        n_arms: int,
        eta: float,
        beta0: float = 1.0,
        reward_bound: float = 1.0,
        reference: ArrayLike | None = None,
        empty_fallback: str = "raise",
        min_count: int | None = None,
    ) -> None:
        self.n_arms = check_int(n_arms, "n_arms", minimum=1)
        check_fits("n_arms", self.n_arms, 8.0 * self.n_arms, what="the reference policy's log-probabilities")
        self.eta = check_positive_float(eta, "eta")
        self.beta0 = check_in_interval(beta0, "beta0", 0.0, math.inf, closed="left")
        self.reward_bound = check_positive_float(reward_bound, "reward_bound")
        self.log_reference = log_reference_policy(reference, self.n_arms)
        self.empty_fallback = check_one_of(empty_fallback, "empty_fallback", ("raise", "reference"))
        self.min_count = None if min_count is None else check_int(min_count, "min_count", minimum=1)

    # ------------------------------------------------------------------ fitting
    def fit(self, actions: ArrayLike | LoggedBanditData, rewards: ArrayLike | None = None, *,
            clip: bool = False) -> KLMABPolicy:
        """Fit π̃ to logged data.

        Parameters
        ----------
        actions : array_like of int or LoggedBanditData
            Arms pulled, in [0, K); or a :class:`LoggedBanditData` (then ``rewards`` is omitted).
        rewards : array_like, optional
            Rewards in [0, R].
        clip : bool, default False
            Clip rewards into [0, R] instead of raising.

        Returns
        -------
        KLMABPolicy
            ``self``.

        Raises
        ------
        InvalidParameterError
            If ``min_count`` is declared and some arm with π0(a) > 0 has fewer records.
        """
        if isinstance(actions, LoggedBanditData):
            data = actions
            if data.n_arms != self.n_arms or data.reward_bound != self.reward_bound:
                data = LoggedBanditData(data.actions, data.rewards, self.n_arms, self.reward_bound, clip=clip)
        else:
            data = LoggedBanditData(
                actions, [] if rewards is None else rewards, self.n_arms, self.reward_bound, clip=clip
            )
        minima = np.full(self.n_arms, np.inf)
        maxima = np.full(self.n_arms, -np.inf)
        np.minimum.at(minima, data.actions, data.rewards)
        np.maximum.at(maxima, data.actions, data.rewards)
        counts = data.counts()
        empty = counts == 0
        minima[empty], maxima[empty] = np.nan, np.nan
        return self._fit(counts, data.reward_sums(), minima, maxima)

    def fit_statistics(self, counts: ArrayLike, reward_sums: ArrayLike) -> KLMABPolicy:
        """Fit π̃ from sufficient statistics N(a; D) and S(a; D).

        The statistics are validated (:func:`check_mab_statistics`): fractional or negative counts,
        sums outside [0, N(a)·R] and wrong shapes are refused, never truncated.
        """
        n, s = check_mab_statistics(counts, reward_sums, n_arms=self.n_arms, reward_bound=self.reward_bound)
        r = self.reward_bound
        with np.errstate(divide="ignore", invalid="ignore"):
            # the extremes any dataset with these statistics can have: N records in [0, R] summing to S
            minima = np.where(n > 0, np.maximum(0.0, s - (n - 1) * r), np.nan)
            maxima = np.where(n > 0, np.minimum(r, s), np.nan)
        return self._fit(n, s, minima, maxima)

    def _fit(self, counts: IntArray, reward_sums: FloatArray, minima: FloatArray, maxima: FloatArray) -> KLMABPolicy:
        if self.min_count is not None:
            refuse_outside_count_floor(counts, self.min_count, self.log_reference)
        self.counts_: IntArray = np.asarray(counts, dtype=np.int64)
        self.reward_sums_: FloatArray = np.asarray(reward_sums, dtype=np.float64)
        self.reward_minima_: FloatArray = np.asarray(minima, dtype=np.float64)
        self.reward_maxima_: FloatArray = np.asarray(maxima, dtype=np.float64)
        self.n_records_ = int(self.counts_.sum())
        self.utilities_ = self.utilities_from_statistics(self.counts_, self.reward_sums_)
        self.fallback_used_ = False
        try:
            self.log_probabilities_ = kl_log_policy(self.log_reference, self.utilities_, self.eta)
        except EmptySupportError:
            if self.empty_fallback == "raise":
                raise EmptySupportError(
                    "no arm with positive reference probability has data (N(a) = 0 everywhere); "
                    "pass empty_fallback='reference' to fall back to pi0 without privacy"
                ) from None
            warnings.warn(
                "no arm has data: falling back to the reference policy pi0; no privacy guarantee holds",
                PrivacyWarning,
                stacklevel=3,
            )
            self.fallback_used_ = True
            self.log_probabilities_ = self.log_reference.copy()
        return self

    def _set_state(self, state: dict[str, Any]) -> None:
        """Refit from the saved sufficient statistics: π̃ and its guarantee never come from the file."""
        self._fit(state["counts_"], state["reward_sums_"], state["reward_minima_"], state["reward_maxima_"])

    def utilities_from_statistics(self, counts: ArrayLike, reward_sums: ArrayLike) -> FloatArray:
        """Utilities u(a) of eq. (8) for given statistics (the auditor recomputes neighbours with it)."""
        return mab_utilities(counts, reward_sums, self.beta0)

    def _check_fitted(self) -> None:
        if not hasattr(self, "log_probabilities_"):
            raise NotFittedError("KLMABPolicy is not fitted; call fit(actions, rewards) first")

    # ------------------------------------------------------------------ outputs
    @property
    def means_(self) -> FloatArray:
        """r̄(a; D), NaN for arms with no data."""
        self._check_fitted()
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.asarray(np.where(self.counts_ > 0, self.reward_sums_ / self.counts_, np.nan))

    def probabilities(self) -> FloatArray:
        """Return π̃(·; D) as probabilities."""
        self._check_fitted()
        return np.asarray(np.exp(self.log_probabilities_), dtype=np.float64)

    def sample(self, rng: RNGLike = None, size: int | None = None, *, backend: NoiseBackend | str | None = None,
               insecure_seeded_noise: bool = False, accountant: Accountant | None = None) -> IntArray:
        """Sample actions from π̃ (each sample is one use of the mechanism).

        Parameters
        ----------
        rng : int, SeedSequence, Generator or None
            Seed of the privacy noise; accepted only with ``insecure_seeded_noise=True``.
        size : int, optional
            Number of independent samples; each costs the guarantee again (composition).
        backend : NoiseBackend or str, optional
            Explicit noise source (a seeded one also needs the opt-in).
        insecure_seeded_noise : bool, default False
            Seeded NumPy Gumbel-max (reproducible; simulation and tests only; warns).
        accountant : Accountant, optional
            Records :meth:`sample_guarantee` (the data-independent guarantee over the declared domain)
            for each sample before anything is drawn (over budget: nothing is). Needs ``min_count``:
            without it the call is refused from the public parameters alone, before the data is read.

        Returns
        -------
        ndarray of int
            Shape ``()`` when ``size`` is None, else ``(size,)``.

        Privacy
        -------
        By default each draw is OpenDP's exact Gumbel report-noisy-max over log π̃ with OS CSPRNG
        randomness (:func:`dpbandits.privacy.noise.privacy_noise`): no float cutoff, so an action far
        below the best keeps its positive probability. Seeded draws are not private in deployment.
        """
        if size is not None:
            size = check_int(size, "size", minimum=1)
        accountant = self._release_accountant(accountant)  # or the one given to agent()
        if accountant is not None:
            spend(accountant, self.sample_guarantee(), 1 if size is None else size, label="KLMABPolicy.sample")
        self._check_fitted()
        return sample_log_weights(self.log_probabilities_, rng, size, backend=backend,
                                  insecure_seeded_noise=insecure_seeded_noise)

    @property
    def privacy(self) -> Guarantee:
        """The per-instance pure guarantee of one sample (Theorem 1); options: :meth:`guarantee`."""
        return self.guarantee()

    def _continuation_charge(self) -> Guarantee:
        """A fork of a loaded policy is charged one sample's data-independent guarantee, never a per-instance ε."""
        return self.sample_guarantee()

    def _check_deployment(self, accountant: Accountant) -> None:
        """``agent(accountant=...)`` needs the declared domain every sample's record needs."""
        self.sample_guarantee()

    def sample_guarantee(self) -> Guarantee:
        """The guarantee ``sample(accountant=...)`` records per sample: Δ(m)/η over the declared domain.

        ``guarantee(scope="domain", variant="tight")``: the exact utility sensitivity over the domain
        N(a) >= m (:func:`accountants.mab_domain_sensitivity`), from the public η, β0, R and m only,
        finite for every m >= 1. The same number for every dataset, so neither what an accountant
        records nor when it refuses depends on the data.

        Raises
        ------
        PerInstanceSpendError
            If ``min_count`` was not declared (from the public parameters, before any data is read).
        """
        require_declared_domain(type(self).__name__, [] if self.min_count is not None else ["min_count"],
                                "KLMABPolicy(..., min_count=m), m a public per-arm floor")
        return self.guarantee(scope="domain", variant="tight")

    def guarantee(self, kind: str = "pure", variant: str = "corrected", scope: str = "instance",
                  **kwargs: Any) -> Guarantee:
        """Return the guarantee of one sample; see :func:`accountants.account_mab`."""
        return account_mab(self, kind=kind, variant=variant, scope=scope, **kwargs)
