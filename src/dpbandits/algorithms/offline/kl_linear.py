"""KL-regularised pessimistic policy for the offline linear contextual bandit (eq. 10 of the KL paper).

Σ_D = λI + Σ_i φ_iφ_iᵀ, θ̂ = Σ_D⁻¹ Σ_i r_iφ_i (ridge), and at a public context x
π̃(a|x; D) ∝ π0(a|x)·exp((θ̂ᵀφ(x, a) − β0·‖φ(x, a)‖_{Σ_D⁻¹})/η).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy.linalg import cho_solve, cholesky, eigvalsh

from dpbandits._core.persistence import Persistable
from dpbandits._core.schema import Array, StateSchema, rule
from dpbandits._core.validation import check_in_interval, check_int, check_positive_float
from dpbandits.algorithms.offline._elliptical import (
    EllipticalKLPolicy,
    check_declared_domain,
)
from dpbandits.algorithms.offline.accountants import account_linear
from dpbandits.algorithms.offline.domain import require_declared_domain
from dpbandits.algorithms.registry import register_algorithm_class
from dpbandits.envs.offline import LoggedContextualData
from dpbandits.privacy.guarantees import Guarantee

__all__ = ["KLLinearPolicy"]


_EARLIER_LAYOUT = ("saved by an earlier version of dpbandits, which kept Σ_D, θ̂ and n instead of the logged records, "
                   "and load cannot check that a data set gives them; fit the policy on its data again")


@register_algorithm_class("kl-linear", "kl-linear-classification")
class KLLinearPolicy(EllipticalKLPolicy, Persistable):
    """KL-regularised pessimistic policy for logged linear contextual bandit data (eq. 10).

    Parameters
    ----------
    eta : float
        η > 0.
    beta0 : float, default 1
        β0 >= 0.
    ridge : float, default 2
        λ > 0. Theorem 2 needs λ_min(Σ_D) > 1; λ > 1 guarantees it.
    reward_bound : float, default 1
        R > 0; rewards must lie in [0, R].
    min_eigenvalue : float, optional
        ℓ > 1, a **public** floor on λ_min(Σ_D) (ridge included) fixed before seeing the data, e.g.
        from the logging design's coverage. With ``max_records`` it declares the domain of
        ``privacy(scope="domain")``; ``fit`` refuses data outside it.
    max_records : int, optional
        n_max, a public bound on the number of records (n enters Theorem 2 and is private under
        add/remove).

    Attributes
    ----------
    theta_ : ndarray, shape (d,)
        Ridge estimate θ̂ = Σ_D⁻¹ b_D.
    covariance_ : ndarray, shape (d, d)
        Σ_D = λI + Σ_i φ_iφ_iᵀ.
    cholesky_ : ndarray, shape (d, d)
        Lower Cholesky factor of Σ_D.
    lambda_min_ : float
        λ_min(Σ_D) (ridge included).
    n_records_ : int
        n.
    n_features_in_ : int
        d.

    Privacy
    -------
    At a fixed public context x, one sampled action is ε0-DP per instance for add/remove of one
    logged record with ε0 = C2/(η√λ_min) (Theorem 2; valid); the paper's approximate form is false
    (C3) and is replaced by the corrected recipe (errata KL-8). With the public ``min_eigenvalue`` and
    ``max_records``, ``privacy(scope="domain")`` is ordinary DP over that domain. Each context and
    each sample compose; ``sample(accountant=...)`` records the domain guarantee
    (:meth:`sample_guarantee`) and needs both declared. :meth:`sample` draws with OpenDP's exact Gumbel noisy-max by default.
    A saved policy (:meth:`save`) is not a release: it holds the logged records, from which ``load``
    fits it again, and must be kept as private as the data.

    References
    ----------
    Zhang et al. (2025), eq. (10), Theorem 2, Corollary 2.

    Examples
    --------
    >>> import numpy as np
    >>> from dpbandits.algorithms.offline import KLLinearPolicy
    >>> phi = np.array([[1.0, 0.0], [0.0, 1.0]] * 50)
    >>> policy = KLLinearPolicy(eta=0.1, beta0=0.5).fit(phi, np.tile([1.0, 0.0], 50))
    >>> policy.probabilities([[1.0, 0.0], [0.0, 1.0]]).round(4).tolist()
    [0.9999, 0.0001]
    """

    _fitted_schema = True  # an unfitted policy saves no state
    _schema = StateSchema(
        _features=Array("float64", (None, None)),
        _rewards=Array("float64", (None,)),
        rules=[rule("_features and _rewards: the logged records, one reward per row (their bounds are fit's)",
                    lambda p, s: s["_rewards"].shape[0] == s["_features"].shape[0])],
        retired=dict.fromkeys(("covariance_", "theta_", "n_records_"), _EARLIER_LAYOUT),
    )
    # The records are saved and load fits them again (fit's own checks and arithmetic): Σ_D, θ̂, n, the Cholesky
    # factor and λ_min are derived, never read, so a loaded policy is one that fit reaches (and variant="tight",
    # which needs the records, works after a load).

    def __init__(self, eta: float, beta0: float = 1.0, ridge: float = 2.0, reward_bound: float = 1.0, *,
                 min_eigenvalue: float | None = None, max_records: int | None = None) -> None:
        self.eta = check_positive_float(eta, "eta")
        self.beta0 = check_in_interval(beta0, "beta0", 0.0, math.inf, closed="left")
        self.ridge = check_positive_float(ridge, "ridge")
        self.reward_bound = check_positive_float(reward_bound, "reward_bound")
        self.min_eigenvalue = (None if min_eigenvalue is None
                               else check_in_interval(min_eigenvalue, "min_eigenvalue", 1.0, math.inf, closed="neither"))
        self.max_records = None if max_records is None else check_int(max_records, "max_records", minimum=1)

    def fit(self, features: ArrayLike | LoggedContextualData, rewards: ArrayLike | None = None, *,
            clip: bool = False) -> KLLinearPolicy:
        """Fit the ridge estimate and Σ_D.

        Parameters
        ----------
        features : array_like of shape (n, d) or LoggedContextualData
            φ(x_i, a_i), rows of norm ≤ 1.
        rewards : array_like of shape (n,), optional
            r_i in [0, R] (omit when ``features`` is a LoggedContextualData).
        clip : bool, default False
            Clip rewards into [0, R] instead of raising.

        Returns
        -------
        KLLinearPolicy
        """
        if isinstance(features, LoggedContextualData):
            data = features
            if data.reward_bound != self.reward_bound:
                data = LoggedContextualData(data.features, data.rewards, self.reward_bound, clip=clip)
        else:
            data = LoggedContextualData(features, [] if rewards is None else rewards, self.reward_bound,
                                        clip=clip)
        phi, r = data.features, data.rewards
        d = phi.shape[1]
        # Σ_D = λI + ΦᵀΦ ; b_D = Φᵀr ; θ̂ = Σ_D⁻¹ b_D
        covariance = self.ridge * np.eye(d) + phi.T @ phi
        chol = cholesky(covariance, lower=True, check_finite=False)
        theta = np.asarray(cho_solve((chol, True), phi.T @ r, check_finite=False))
        self.covariance_, self.theta_, self.n_records_, self.cholesky_ = covariance, theta, int(phi.shape[0]), chol
        self.lambda_min_ = float(eigvalsh(covariance, subset_by_index=(0, 0))[0])
        self.n_features_in_ = d
        check_declared_domain(self.lambda_min_, self.min_eigenvalue, self.n_records_, self.max_records)
        self._features, self._rewards = phi, r  # the state saved; also variant="tight"'s records (its removals)
        return self

    def _set_state(self, state: dict[str, Any]) -> None:
        """Fit the saved records again: every statistic is derived (the guarantee never comes from the file)."""
        self.fit(state["_features"], state["_rewards"])

    def guarantee(self, action_features: ArrayLike | None = None, reference: ArrayLike | None = None, *,
                  kind: str = "pure", variant: str = "corrected", scope: str = "instance",
                  **kwargs: Any) -> Guarantee:
        """Guarantee at one context (or every context); see :func:`accountants.account_linear`.

        ``variant="tight"`` uses the records of the last :meth:`fit` unless ``records=`` is given.
        """
        if variant == "tight" and kwargs.get("records") is None and hasattr(self, "_features"):
            kwargs["records"] = (self._features, self._rewards)
        return account_linear(self, action_features, reference, kind=kind, variant=variant, scope=scope, **kwargs)

    def sample_guarantee(self, action_features: ArrayLike | None = None,
                         reference: ArrayLike | None = None) -> Guarantee:
        """The guarantee ``sample(accountant=...)`` records per sample: Theorem 2 over the declared domain.

        ``guarantee(scope="domain")``, from the public η, β0, R, λ, ℓ = ``min_eigenvalue``, n_max =
        ``max_records`` and d only (the same at every context): the same number for every dataset.

        Raises
        ------
        PerInstanceSpendError
            If ``min_eigenvalue`` or ``max_records`` was not declared (before any data is read).
        """
        missing = [name for name in ("min_eigenvalue", "max_records") if getattr(self, name) is None]
        require_declared_domain(type(self).__name__, missing,
                                "KLLinearPolicy(..., min_eigenvalue=l, max_records=n_max), both public")
        return self.guarantee(scope="domain")

    def _public_theta_norm_bound(self) -> float | None:
        """R·√(n_max/λ) when ``max_records`` is declared: λ‖θ̂‖² <= Σ r_i² <= n·R² for the ridge estimate."""
        if self.max_records is None:
            return None
        return self.reward_bound * math.sqrt(self.max_records / self.ridge)
