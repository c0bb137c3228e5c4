"""Shared query side of the linear and RLHF KL policies: θᵀφ − β0·‖φ‖_{Σ⁻¹}, then a Gibbs policy.

Both eq. (10) (ridge estimate) and eq. (11) (Bradley–Terry MLE) give, at a public context x with
candidate features F_x (rows φ(x, a)), the utility u(a) = θ̂ᵀφ(x, a) − β0·‖φ(x, a)‖_{Σ_D⁻¹} and the
policy π̃(a|x; D) ∝ π0(a|x)·exp(u(a)/η). Σ_D is kept as its Cholesky factor; Σ⁻¹ is never formed.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike
from scipy.linalg import solve_triangular

from dpbandits._core.errors import InvalidParameterError, NotFittedError
from dpbandits._core.rng import RNGLike, as_generator
from dpbandits._core.typing import FloatArray, IntArray
from dpbandits._core.validation import check_int
from dpbandits.algorithms.offline.kl_mab import kl_log_policy, log_reference_policy
from dpbandits.envs.offline import check_feature_norms
from dpbandits.privacy.mechanisms import sample_log_weights

__all__ = ["EllipticalKLPolicy"]


class EllipticalKLPolicy:
    """Base of :class:`KLLinearPolicy` and :class:`KLRLHFPolicy` (query methods only).

    Subclasses set ``eta``, ``beta0`` and, in ``fit``, ``theta_`` (θ̂), ``cholesky_`` (lower factor
    L of Σ_D = L·Lᵀ), ``lambda_min_`` and ``n_features_in_``.
    """

    eta: float
    beta0: float
    theta_: FloatArray
    cholesky_: FloatArray
    lambda_min_: float
    n_features_in_: int

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
    ) -> IntArray:
        """Sample candidate indices from π̃(·|x; D); each sample is one use of the mechanism.

        Parameters
        ----------
        action_features : array_like of shape (K, d)
        rng : int, SeedSequence, Generator or None
            The privacy-noise stream.
        size : int, optional
            Number of samples; each costs the guarantee again (composition).
        reference : array_like of shape (K,), optional
            π0(·|x).
        """
        return sample_log_weights(self.log_probabilities(action_features, reference), rng, size)

    def sample_by_rejection(
        self,
        propose: Callable[[np.random.Generator, int], ArrayLike],
        rng: RNGLike = None,
        *,
        batch: int = 1024,
        max_proposals: int = 10_000_000,
    ) -> FloatArray:
        """Draw one action exactly from π̃(·|x; D) when the candidate set is huge or implicit (spec §3.1).

        Proposals a ~ π0(·|x) are accepted with probability exp((u(a) − U)/η), where
        U = ‖θ̂‖ >= max_a u(a) (‖φ‖ <= 1 and the penalty is >= 0). The accepted action has law exactly
        π̃, so the privacy guarantees are unchanged. The number of proposals depends on the data and is
        a side channel: it is never returned; hitting ``max_proposals`` raises instead of returning an
        inexact sample.

        Parameters
        ----------
        propose : callable
            ``propose(generator, m)`` returns the features of m independent draws from π0(·|x), shape (m, d).
        rng : int, SeedSequence, Generator or None
            The privacy-noise stream (proposals and acceptance draws).
        batch : int, default 1024
            Proposals drawn per round.
        max_proposals : int, default 10**7

        Returns
        -------
        ndarray of shape (d,)
            The features φ(x, a) of the sampled action.

        Raises
        ------
        InvalidParameterError
            If ``max_proposals`` proposals were rejected.
        """
        self._check_fitted()
        gen = as_generator(rng)
        m = check_int(batch, "batch", minimum=1)
        cap = check_int(max_proposals, "max_proposals", minimum=1)
        bound = float(np.linalg.norm(self.theta_))  # U >= θ̂ᵀφ − β0Γ for every ‖φ‖ <= 1
        drawn = 0
        while drawn < cap:
            features = self._check_query(propose(gen, m))
            drawn += features.shape[0]
            # accept with probability exp((u(a) − U)/η)
            log_accept = (self.utilities(features) - bound) / self.eta
            accepted = np.flatnonzero(np.log(gen.random(features.shape[0])) < log_accept)
            if accepted.size:
                return np.asarray(features[accepted[0]], dtype=np.float64)
        raise InvalidParameterError(
            f"max_proposals must be large enough for the rejection sampler; {cap} proposals were all rejected"
        )
