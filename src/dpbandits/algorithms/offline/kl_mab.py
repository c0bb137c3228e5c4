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
from dpbandits._core.rng import RNGLike
from dpbandits._core.typing import FloatArray, IntArray
from dpbandits._core.validation import (
    check_in_interval,
    check_int,
    check_one_of,
    check_positive_float,
    check_probability_vector,
)
from dpbandits.envs.offline import LoggedBanditData
from dpbandits.privacy.guarantees import Guarantee
from dpbandits.privacy.mechanisms import gibbs_log_probabilities, sample_log_weights

__all__ = ["KLMABPolicy", "kl_log_policy", "log_reference_policy", "mab_utilities"]


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
        An arm with no data gets u = -inf: Γ = 1/√0 = ∞, so π̃(a) = 0 (spec §3.2, §7 item 22).
    """
    n = np.asarray(counts, dtype=np.float64)
    s = np.asarray(reward_sums, dtype=np.float64)
    covered = n > 0
    safe_n = np.where(covered, n, 1.0)
    # u(a) = S(a)/N(a) − β0/√N(a)
    u = s / safe_n - beta0 / np.sqrt(safe_n)
    return np.asarray(np.where(covered, u, -np.inf), dtype=np.float64)


class KLMABPolicy:
    """KL-regularised pessimistic policy for logged multi-armed bandit data (eq. 8).

    Parameters
    ----------
    n_arms : int
        K >= 1.
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

    Attributes
    ----------
    counts_ : ndarray of int, shape (K,)
        N(a; D).
    reward_sums_ : ndarray, shape (K,)
        S(a; D).
    utilities_ : ndarray, shape (K,)
        u(a) = r̄(a) − β0/√N(a) (``-inf`` for arms with no data).
    log_probabilities_ : ndarray, shape (K,)
        log π̃(a; D).
    n_records_ : int
        n = |D|.

    Privacy
    -------
    One action sampled from π̃ is ε0-DP per instance, add/remove of one logged record (Theorem 1),
    with ε0 = (4R/(N_min − 1) + β0/(N_min − 1)^{3/2})/η when min_a N(a) > 1; approximate guarantees
    from Theorem 1′ (corrected; the paper's approximate claim is false). See :meth:`privacy` and
    :mod:`dpbandits.algorithms.offline.accountants`. Each further sample costs privacy again
    (composition). Seeded floating-point sampling is for simulation only.

    References
    ----------
    Zhang, Panaganti, Shi, Ziani, Wierman (2025), "KL-regularization itself is differentially private
    in bandits and RLHF", eq. (8), Theorem 1 and Corollary 1; ``specs/spec_kl_regularization.md`` §3.2.

    Examples
    --------
    >>> from dpbandits.algorithms.offline import KLMABPolicy
    >>> policy = KLMABPolicy(n_arms=2, eta=0.5, beta0=0.1).fit([0, 0, 1, 1, 1], [1, 1, 0, 1, 0])
    >>> policy.probabilities().round(3).tolist()
    [0.787, 0.213]
    """

    def __init__(
        self,
        n_arms: int,
        eta: float,
        beta0: float = 1.0,
        reward_bound: float = 1.0,
        reference: ArrayLike | None = None,
        empty_fallback: str = "raise",
    ) -> None:
        self.n_arms = check_int(n_arms, "n_arms", minimum=1)
        self.eta = check_positive_float(eta, "eta")
        self.beta0 = check_in_interval(beta0, "beta0", 0.0, math.inf, closed="left")
        self.reward_bound = check_positive_float(reward_bound, "reward_bound")
        self.log_reference = log_reference_policy(reference, self.n_arms)
        self.empty_fallback = check_one_of(empty_fallback, "empty_fallback", ("raise", "reference"))

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
        """
        if isinstance(actions, LoggedBanditData):
            data = actions
            if data.n_arms != self.n_arms or data.reward_bound != self.reward_bound:
                data = LoggedBanditData(data.actions, data.rewards, self.n_arms, self.reward_bound, clip=clip)
        else:
            data = LoggedBanditData(
                actions, [] if rewards is None else rewards, self.n_arms, self.reward_bound, clip=clip
            )
        return self.fit_statistics(data.counts(), data.reward_sums())

    def fit_statistics(self, counts: ArrayLike, reward_sums: ArrayLike) -> KLMABPolicy:
        """Fit π̃ from sufficient statistics N(a; D) and S(a; D) (trusted, not re-validated)."""
        self.counts_: IntArray = np.asarray(counts, dtype=np.int64)
        self.reward_sums_: FloatArray = np.asarray(reward_sums, dtype=np.float64)
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
                stacklevel=2,
            )
            self.fallback_used_ = True
            self.log_probabilities_ = self.log_reference.copy()
        return self

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

    def sample(self, rng: RNGLike = None, size: int | None = None) -> IntArray:
        """Sample actions from π̃ (each sample is one use of the mechanism).

        Parameters
        ----------
        rng : int, SeedSequence, Generator or None
            The privacy-noise stream.
        size : int, optional
            Number of independent samples; each costs ε0 again (basic composition).

        Returns
        -------
        ndarray of int
            Shape ``()`` when ``size`` is None, else ``(size,)``.
        """
        self._check_fitted()
        return sample_log_weights(self.log_probabilities_, rng, size)

    def privacy(self, kind: str = "pure", variant: str = "corrected", **kwargs: Any) -> Guarantee:
        """Return the per-instance guarantee of one sample; see :func:`accountants.account_mab`."""
        from dpbandits.algorithms.offline.accountants import account_mab

        return account_mab(self, kind=kind, variant=variant, **kwargs)
