"""Privacy mechanisms: Laplace, Gaussian, and the exponential mechanism.

The generalised exponential mechanism (Gibbs distribution)
π(a) ∝ π0(a)·exp(u(a)/η) is computed in log space by :func:`gibbs_log_probabilities`; this is the
sampler of the KL-regularised policies (``specs/spec_kl_regularization.md`` §3.1).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpbandits._core.errors import EmptySupportError, InvalidParameterError
from dpbandits._core.rng import RNGLike, as_generator
from dpbandits._core.validation import check_positive_float

__all__ = ["gibbs_log_probabilities", "sample_log_weights"]


def gibbs_log_probabilities(
    log_reference: ArrayLike, utility: ArrayLike, temperature: float
) -> NDArray[np.float64]:
    """Return log π(a) for the Gibbs distribution π(a) ∝ π0(a)·exp(u(a)/η), in log space.

    Parameters
    ----------
    log_reference : array_like of shape (..., n_actions)
        log π0(a); ``-inf`` where π0(a) = 0 (that action is never chosen).
    utility : array_like of shape (..., n_actions)
        u(a); ``-inf`` excludes an action.
    temperature : float
        η > 0 (``inf`` gives π = π0).

    Returns
    -------
    ndarray of shape (..., n_actions)
        Normalised log-probabilities (log-sum-exp over the last axis is 0).

    Raises
    ------
    EmptySupportError
        If every action has weight 0 in some row.

    Privacy
    -------
    With a utility of sensitivity Δu, sampling from this distribution is the (generalised)
    exponential mechanism and is 2Δu/η-DP (Δu/η for monotone utilities); see the KL paper's Lemma 1.

    References
    ----------
    McSherry & Talwar (2007); KL-regularisation paper, Lemma 1 and eq. (7).
    """
    eta = check_positive_float(temperature, "temperature", allow_inf=True)
    log_pi0 = np.asarray(log_reference, dtype=np.float64)
    u = np.asarray(utility, dtype=np.float64)
    if np.isnan(log_pi0).any() or np.isnan(u).any():
        raise InvalidParameterError("log_reference and utility must not contain NaN")
    # z(a) = log π0(a) + u(a)/η ; -inf propagates, never exponentiate before normalising
    with np.errstate(invalid="ignore"):
        scaled = np.where(np.isneginf(u), -np.inf, u / eta) if np.isinf(eta) else u / eta
        z = log_pi0 + np.where(np.isinf(eta) & np.isfinite(u), 0.0, scaled)
    m = np.max(z, axis=-1, keepdims=True)
    if np.any(np.isneginf(m)):
        raise EmptySupportError("every action has zero weight (pi0 = 0 or utility = -inf everywhere)")
    # log Z = m + log Σ exp(z − m)
    log_z = m + np.log(np.sum(np.exp(z - m), axis=-1, keepdims=True))
    return np.asarray(z - log_z, dtype=np.float64)


def sample_log_weights(log_weights: ArrayLike, rng: RNGLike = None, size: int | None = None) -> NDArray[np.int64]:
    """Sample indices from unnormalised log-weights by the Gumbel-max trick.

    Parameters
    ----------
    log_weights : array_like of shape (..., n_actions)
        Unnormalised log-weights; ``-inf`` entries are never chosen.
    rng : int, SeedSequence, Generator or None
    size : int, optional
        Number of independent draws (prepended to the batch shape).

    Returns
    -------
    ndarray of int
        argmax_a (z(a) + G(a)) with G i.i.d. Gumbel(0, 1): an exact draw from softmax(z).
    """
    z = np.asarray(log_weights, dtype=np.float64)
    if np.all(np.isneginf(z), axis=-1).any():
        raise EmptySupportError("every action has log-weight -inf")
    gen = as_generator(rng)
    shape = z.shape if size is None else (size, *z.shape)
    g = gen.gumbel(size=shape)
    return np.asarray(np.argmax(z + g, axis=-1), dtype=np.int64)
