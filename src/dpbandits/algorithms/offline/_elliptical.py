"""Shared query side of the linear and RLHF KL policies: θᵀφ − β0·‖φ‖_{Σ⁻¹}, then a Gibbs policy.

Both eq. (10) (ridge estimate) and eq. (11) (Bradley–Terry MLE) give, at a public context x with
candidate features F_x (rows φ(x, a)), the utility u(a) = θ̂ᵀφ(x, a) − β0·‖φ(x, a)‖_{Σ_D⁻¹} and the
policy π̃(a|x; D) ∝ π0(a|x)·exp(u(a)/η). Σ_D is kept as its Cholesky factor; Σ⁻¹ is never formed.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy.linalg import solve_triangular

from dpbandits._core.errors import InvalidParameterError, NotFittedError
from dpbandits._core.rng import RNGLike, as_generator
from dpbandits._core.typing import FloatArray, IntArray
from dpbandits._core.validation import check_in_interval, check_int, check_positive_float
from dpbandits.algorithms.offline.accountants import rejection_sampling_guarantee
from dpbandits.algorithms.offline.deployment import DeployedPolicy
from dpbandits.algorithms.offline.domain import refuse_outside_domain
from dpbandits.algorithms.offline.kl_mab import kl_log_policy, log_reference_policy
from dpbandits.envs.offline import check_feature_norms
from dpbandits.privacy.accounting import Accountant, spend
from dpbandits.privacy.guarantees import Guarantee
from dpbandits.privacy.mechanisms import sample_log_weights
from dpbandits.privacy.noise import NoiseBackend, NumpyNoise, privacy_noise

__all__ = ["EllipticalKLPolicy", "check_declared_domain"]


def check_declared_domain(lambda_min: float, min_eigenvalue: float | None, n_records: int,
                          max_records: int | None) -> None:
    """Refuse data outside a declared public domain: λ_min(Σ_D) >= ℓ and n <= n_max (when declared).

    The message names the declared condition, never λ_min(Σ_D) or n (see :mod:`.domain`).
    """
    if min_eigenvalue is not None and lambda_min < min_eigenvalue:
        raise refuse_outside_domain(f"lambda_min(Sigma_D) >= min_eigenvalue = {min_eigenvalue!r}")
    if max_records is not None and n_records > max_records:
        raise refuse_outside_domain(f"n <= max_records = {max_records}")


class EllipticalKLPolicy(DeployedPolicy, ABC):
    """Base of :class:`KLLinearPolicy` and :class:`KLRLHFPolicy` (query methods only).

    Subclasses set ``eta``, ``beta0`` and, in ``fit``, ``theta_`` (θ̂), ``cholesky_`` (lower factor
    L of Σ_D = L·Lᵀ), ``lambda_min_`` and ``n_features_in_``.
    """

    eta: float
    beta0: float
    ridge: float
    theta_: FloatArray
    cholesky_: FloatArray
    lambda_min_: float
    n_features_in_: int
    @property
    def privacy(self) -> Guarantee:
        """The pure guarantee of one sampled action at every context; options: :meth:`guarantee`."""
        return self.guarantee()

    @abstractmethod
    def guarantee(self, action_features: ArrayLike | None = None, reference: ArrayLike | None = None,
                  **kwargs: Any) -> Guarantee:
        """The guarantee of one sample at one context (or every context when omitted)."""

    def _continuation_charge(self) -> Guarantee:
        """A fork of a loaded policy is charged one sample's data-independent guarantee, never a per-instance ε."""
        return self.sample_guarantee()

    def _check_deployment(self, accountant: Accountant) -> None:
        """``agent(accountant=...)`` needs the declared domain every sample's record needs."""
        self.sample_guarantee()

    @abstractmethod
    def sample_guarantee(self, action_features: ArrayLike | None = None,
                         reference: ArrayLike | None = None) -> Guarantee:
        """The data-independent guarantee ``sample(accountant=...)`` records per sample (domain scope).

        Refused (:class:`~dpbandits._core.errors.PerInstanceSpendError`, from the public parameters
        alone) when the policy declares no domain.
        """

    def _check_fitted(self) -> None:
        if not hasattr(self, "theta_"):
            raise NotFittedError(f"{type(self).__name__} is not fitted; call fit first")

    def _check_query(self, action_features: ArrayLike) -> FloatArray:
        self._check_fitted()
        features = check_feature_norms(action_features, "action_features")
        if features.shape[1] != self.n_features_in_ or features.shape[0] == 0:
            raise InvalidParameterError(
                f"action_features must have shape (n_actions >= 1, {self.n_features_in_}); got {features.shape}"
            )
        return features

    def penalties(self, action_features: ArrayLike) -> FloatArray:
        """Γ(x, a) = ‖φ(x, a)‖_{Σ_D⁻¹} for each row of ``action_features``."""
        features = self._check_query(action_features)
        # W = L⁻¹ Fᵀ, so ‖W[:, a]‖² = φ_aᵀ Σ⁻¹ φ_a
        w = solve_triangular(self.cholesky_, features.T, lower=True, check_finite=False)
        return np.asarray(np.sqrt(np.einsum("ij,ij->j", w, w)), dtype=np.float64)

    def estimated_rewards(self, action_features: ArrayLike) -> FloatArray:
        """θ̂ᵀφ(x, a) for each row of ``action_features``."""
        features = self._check_query(action_features)
        return np.asarray(features @ self.theta_, dtype=np.float64)

    def utilities(self, action_features: ArrayLike) -> FloatArray:
        """u(a) = θ̂ᵀφ(x, a) − β0·‖φ(x, a)‖_{Σ_D⁻¹}."""
        return self.estimated_rewards(action_features) - self.beta0 * self.penalties(action_features)

    def log_probabilities(self, action_features: ArrayLike, reference: ArrayLike | None = None) -> FloatArray:
        """Return log π̃(a|x; D) for the candidate actions (rows of ``action_features``).

        Parameters
        ----------
        action_features : array_like of shape (K, d)
            φ(x, a), rows of norm ≤ 1.
        reference : array_like of shape (K,), optional
            π0(·|x) as probabilities; uniform when omitted.
        """
        features = self._check_query(action_features)
        log_pi0 = log_reference_policy(reference, features.shape[0])
        return kl_log_policy(log_pi0, self.utilities(features), self.eta)

    def batch_probabilities(self, action_features: ArrayLike) -> FloatArray:
        """π̃(·|x; D) with uniform π0 for many contexts at once: features (m, K, d) → probabilities (m, K)."""
        features = np.asarray(action_features, dtype=np.float64)
        if features.ndim != 3:
            raise InvalidParameterError(f"action_features must have shape (m, K, d); got {features.shape}")
        m, k, _ = features.shape
        u = self.utilities(features.reshape(m * k, -1)).reshape(m, k)
        return np.exp(kl_log_policy(np.full(k, -np.log(k)), u, self.eta))

    def probabilities(self, action_features: ArrayLike, reference: ArrayLike | None = None) -> FloatArray:
        """π̃(a|x; D) for the candidate actions."""
        return np.asarray(np.exp(self.log_probabilities(action_features, reference)), dtype=np.float64)

    def sample(
        self,
        action_features: ArrayLike,
        rng: RNGLike = None,
        size: int | None = None,
        reference: ArrayLike | None = None,
        *,
        backend: NoiseBackend | str | None = None,
        insecure_seeded_noise: bool = False,
        accountant: Accountant | None = None,
    ) -> IntArray:
        """Sample candidate indices from π̃(·|x; D); each sample is one use of the mechanism.

        Parameters
        ----------
        action_features : array_like of shape (K, d)
        rng : int, SeedSequence, Generator or None
            Seed of the privacy noise; accepted only with ``insecure_seeded_noise=True``.
        size : int, optional
            Number of samples; each costs the guarantee again (composition).
        reference : array_like of shape (K,), optional
            π0(·|x).
        backend : NoiseBackend or str, optional
            Explicit noise source (a seeded one also needs the opt-in).
        insecure_seeded_noise : bool, default False
            Seeded NumPy Gumbel-max (simulation and tests only; warns).
        accountant : Accountant, optional
            Records :meth:`sample_guarantee` (the data-independent guarantee over the declared domain)
            for each sample before anything is drawn (over budget: nothing is); refused, before the
            data is read, when the policy declares no domain.

        Privacy
        -------
        By default each draw is OpenDP's exact Gumbel report-noisy-max over log π̃ with OS CSPRNG
        randomness (no float cutoff). Seeded draws are not private in deployment.
        """
        if size is not None:
            size = check_int(size, "size", minimum=1)
        accountant = self._release_accountant(accountant)  # or the one given to agent()
        if accountant is not None:
            self._check_query(action_features)  # a malformed query is refused before anything is spent
            spend(accountant, self.sample_guarantee(action_features, reference), 1 if size is None else size,
                  label=f"{type(self).__name__}.sample")
        log_p = self.log_probabilities(action_features, reference)
        return sample_log_weights(log_p, rng, size, backend=backend, insecure_seeded_noise=insecure_seeded_noise)

    # ------------------------------------------------------------------ rejection sampling
    def _public_theta_norm_bound(self) -> float | None:
        """A public bound on ‖θ̂‖ implied by the declared domain, if any (subclasses override)."""
        return None

    def _theta_norm_bound(self, theta_norm_bound: float | None) -> float:
        bound = self._public_theta_norm_bound() if theta_norm_bound is None else check_positive_float(
            theta_norm_bound, "theta_norm_bound")
        if bound is None:
            raise InvalidParameterError(
                "theta_norm_bound must be given (a public bound on ||theta_hat||, e.g. R*sqrt(n_max/ridge) for "
                "the ridge estimate); got None and the policy declares no max_records"
            )
        return bound

    def rejection_log_acceptance_floor(self, theta_norm_bound: float | None = None) -> float:
        """Log α_min, a public lower bound on one proposal's acceptance probability.

        With U = ``theta_norm_bound`` >= ‖θ̂‖, every utility satisfies
        −U − β0/√λ <= u(a) = θ̂ᵀφ − β0‖φ‖_{Σ⁻¹} <= U (‖φ‖ <= 1, λ_min(Σ_D) >= λ), so a proposal is
        accepted with probability E_{π0}[e^{(u − U)/η}] >= α_min = exp(−(2U + β0/√λ)/η).
        """
        bound = self._theta_norm_bound(theta_norm_bound)
        return -(2.0 * bound + self.beta0 / math.sqrt(self.ridge)) / self.eta

    def rejection_failure_bound(self, n_proposals: int, theta_norm_bound: float | None = None) -> float:
        """q̄ = (1 − α_min)^T: a public bound on the probability that all T proposals are rejected."""
        t = check_int(n_proposals, "n_proposals", minimum=1)
        alpha = math.exp(self.rejection_log_acceptance_floor(theta_norm_bound))
        return math.exp(t * math.log1p(-alpha)) if alpha < 1.0 else 0.0

    def rejection_proposals(self, failure_bound: float, theta_norm_bound: float | None = None) -> int:
        """The smallest T with (1 − α_min)^T <= ``failure_bound`` (a data-independent number)."""
        q = check_in_interval(failure_bound, "failure_bound", 0.0, 1.0, closed="neither")
        alpha = math.exp(self.rejection_log_acceptance_floor(theta_norm_bound))
        if alpha >= 1.0:
            return 1
        return max(1, math.ceil(math.log(q) / math.log1p(-alpha)))

    def sample_by_rejection(
        self,
        propose: Callable[[np.random.Generator, int], ArrayLike],
        rng: RNGLike = None,
        *,
        n_proposals: int,
        theta_norm_bound: float | None = None,
        batch: int = 4096,
        backend: NoiseBackend | str | None = None,
        insecure_seeded_noise: bool = False,
        accountant: Accountant | None = None,
    ) -> FloatArray:
        """Draw one action from π̃(·|x; D) when the candidate set is huge or implicit.

        Always exactly ``n_proposals`` = T proposals a_t ~ π0(·|x) are drawn and tested (in batches),
        plus one extra proposal a_fb ~ π0; proposal t is accepted when E_t > (U − u(a_t))/η with E_t
        ~ Exp(1), i.e. with probability exp((u(a_t) − U)/η), where U = ``theta_norm_bound`` >= ‖θ̂‖ >=
        max_a u(a) is **public**. The output is the first accepted proposal, or a_fb when none is.
        The work done (proposals drawn, utilities evaluated, noise drawn) does not depend on the data
        or on the outcome, and the sampler never fails.

        Parameters
        ----------
        propose : callable
            ``propose(generator, m)`` returns the features of m independent draws from π0(·|x), shape
            (m, d); it must not depend on the data.
        rng : int, SeedSequence, Generator or None
            Seed of the proposals and acceptance draws; only with ``insecure_seeded_noise=True``.
        n_proposals : int
            T >= 1, fixed before seeing the data (see :meth:`rejection_proposals`).
        theta_norm_bound : float, optional
            U, a public bound on ‖θ̂‖ (RLHF: the MLE radius B; linear: R·√(max_records/λ) when
            ``max_records`` is declared). Data with ‖θ̂‖ > U is outside the declared domain: refused.
        batch : int, default 4096
            Proposals per call of ``propose``.
        backend : NoiseBackend or str, optional
            Source of the Exp(1) acceptance draws (|Laplace(1)|).
        insecure_seeded_noise : bool, default False
            Seeded proposals and acceptance draws (simulation and tests only; warns).
        accountant : Accountant, optional
            Records the sampler's guarantee from :meth:`sample_guarantee` (data-independent, over the
            declared domain; below) before any draw; refused, before the data is read, when the
            policy declares no domain.

        Returns
        -------
        ndarray of shape (d,)
            The features φ(x, a) of the sampled action.

        Privacy
        -------
        With α_D = E_{π0}[e^{(u − U)/η}] the acceptance probability and q_D = (1 − α_D)^T, the output
        law is exactly the mixture (1 − q_D)·π̃(·; D) + q_D·π0: the first accepted proposal has law π̃,
        and the fallback a_fb has law π0, which does not depend on D. α_D >= α_min (see
        :meth:`rejection_log_acceptance_floor`), so q_D <= q̄ = (1 − α_min)^T for every dataset of the
        declared domain. If one sample of π̃ is (ε, δ)-DP for a pair D, D', then for every event S
        P_D(S) <= π̃_D(S) + q_D <= e^ε·π̃_{D'}(S) + δ + q̄ <= e^ε/(1 − q̄)·P_{D'}(S) + δ + q̄, since
        P_{D'}(S) >= (1 − q_{D'})·π̃_{D'}(S) >= (1 − q̄)·π̃_{D'}(S). The sampler is therefore
        (ε + ln(1/(1 − q̄)), δ + q̄)-DP (:func:`accountants.rejection_sampling_guarantee` with
        :meth:`rejection_failure_bound`). Neither the number of proposals nor the work depends on
        the data, so no count or timing is a side channel (beyond floating-point evaluation of
        the utilities, whose cost is the same for every dataset of a given size). By default the
        acceptance draws are OpenDP's exact Laplace samples from the OS CSPRNG (|L| ~ Exp(1), no
        float cutoff) and the proposals use a NumPy Generator freshly seeded from OS entropy.

        Raises
        ------
        InvalidParameterError
            If ‖θ̂‖ > U (data outside the declared domain), before any randomness is drawn.
        """
        self._check_fitted()
        t = check_int(n_proposals, "n_proposals", minimum=1)
        m = check_int(batch, "batch", minimum=1)
        bound = self._theta_norm_bound(theta_norm_bound)
        noise = privacy_noise(rng, insecure_seeded_noise=insecure_seeded_noise, backend=backend)
        accountant = self._release_accountant(accountant)  # or the one given to agent()
        # the sampler's data-independent guarantee at every context, before the data is read or noise drawn
        charge = (None if accountant is None
                  else rejection_sampling_guarantee(self.sample_guarantee(), self.rejection_failure_bound(t, bound)))
        if float(np.linalg.norm(self.theta_)) > bound:
            raise refuse_outside_domain(f"||theta_hat|| <= theta_norm_bound = {bound!r}")
        if charge is not None:
            spend(accountant, charge, label=f"{type(self).__name__}.sample_by_rejection")
        # proposals come from the seeded stream when seeded, else from fresh OS entropy
        gen = noise.rng if isinstance(noise, NumpyNoise) else as_generator(None)
        chosen: FloatArray | None = None
        drawn = 0
        while drawn < t:
            size = min(m, t - drawn)
            features = self._check_query(propose(gen, size))
            if features.shape[0] != size:
                raise InvalidParameterError(f"propose(generator, {size}) must return {size} rows; got {features.shape[0]}")
            exponential = np.abs(noise.laplace(1.0, size=size))
            # accept when E > (U − u(a))/η, an event of probability exp((u(a) − U)/η)
            accepted = np.flatnonzero(exponential > (bound - self.utilities(features)) / self.eta)
            if chosen is None and accepted.size:
                chosen = np.asarray(features[accepted[0]], dtype=np.float64)
            drawn += size
        fallback = self._check_query(propose(gen, 1))  # a_fb ~ π0, drawn whatever happened
        return chosen if chosen is not None else np.asarray(fallback[0], dtype=np.float64)
