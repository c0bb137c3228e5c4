"""Validated containers of logged (offline) bandit data.

Three kinds of logged data feed the KL-regularised offline policies:

* :class:`LoggedBanditData` — multi-armed bandit records ``(a_i, r_i)`` with ``a_i ∈ [0, K)`` and
  ``r_i ∈ [0, R]``; the number of arms K is public input, given by the caller, never read off the data;
* :class:`LoggedContextualData` — linear contextual records ``(φ(x_i, a_i), r_i)`` with
  ``‖φ‖ ≤ 1`` and ``r_i ∈ [0, R]``;
* :class:`PreferenceData` — RLHF comparisons ``(φ(x_i, a¹_i), φ(x_i, a²_i), y_i)`` with
  ``y_i = 1[a¹_i ≻ a²_i]``; the policies use the feature differences ``z_i = φ(a¹) − φ(a²)``.

Generators of such data live in :mod:`dpbandits.envs.offline`, readers of files and DataFrames in
:mod:`dpbandits.envs.readers`, adapters of Open Bandit Pipeline's dictionaries in :mod:`dpbandits.envs.obp`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from dpbandits._core.errors import InvalidParameterError
from dpbandits._core.typing import FloatArray, IntArray
from dpbandits._core.validation import check_array, check_bounded_array, check_int, check_positive_float

__all__ = [
    "FEATURE_NORM_TOLERANCE",
    "MAX_ARMS",
    "BanditStatistics",
    "LoggedBanditData",
    "LoggedContextualData",
    "PreferenceData",
    "check_feature_norms",
    "check_n_arms",
]

MAX_ARMS = 10_000_000
"""Largest number of arms K accepted: fitting and accounting hold about a dozen float arrays of length K
(~1 GB at K = 10^7); a larger K is refused up front instead of failing on allocation."""


def check_n_arms(n_arms: object, name: str = "n_arms") -> int:
    """Return the public number of arms K as an int in ``[1, MAX_ARMS]``.

    Parameters
    ----------
    n_arms : int
    name : str, default "n_arms"
        The name used in the error message (a CLI passes its option, ``--n-arms``).
    """
    return check_int(n_arms, name, minimum=1, maximum=MAX_ARMS)


FEATURE_NORM_TOLERANCE = 1e-9
"""Slack allowed on ``‖φ‖ ≤ bound`` (validated with a small tolerance for round-off)."""


def check_feature_norms(features: ArrayLike, name: str, bound: float = 1.0) -> FloatArray:
    """Return a 2-d float array whose rows have Euclidean norm ``≤ bound·(1 + 1e-9)``.

    Parameters
    ----------
    features : array_like of shape (n, d)
    name : str
        Parameter name used in error messages.
    bound : float, default 1
        The norm bound (1 for features, 2 for RLHF feature differences).

    Raises
    ------
    InvalidParameterError
        If a row is too long; the message names the row.
    """
    arr = check_array(features, name, ndim=2, allow_empty=True)
    norms = np.sqrt(np.einsum("ij,ij->i", arr, arr))
    too_long = norms > bound * (1.0 + FEATURE_NORM_TOLERANCE)
    if np.any(too_long):
        row = int(np.flatnonzero(too_long)[0])
        raise InvalidParameterError(
            f"rows of {name} must have Euclidean norm <= {bound}; got {float(norms[row])!r} in row {row}"
        )
    return np.asarray(arr, dtype=np.float64)


@dataclass(frozen=True)
class LoggedBanditData:
    """Logged multi-armed bandit data ``D = {(a_i, r_i)}``.

    Parameters
    ----------
    actions : array_like of int, shape (n,)
        Arm pulled in each record, in ``[0, n_arms)``.
    rewards : array_like of float, shape (n,)
        Observed rewards, in ``[0, reward_bound]``.
    n_arms : int
        K, public: 1 <= K <= MAX_ARMS (never read off the data).
    reward_bound : float, default 1
        R > 0.
    clip : bool, default False
        Clip rewards into ``[0, R]`` instead of raising.
    """

    actions: IntArray
    rewards: FloatArray
    n_arms: int
    reward_bound: float = 1.0

    def __init__(
        self,
        actions: ArrayLike,
        rewards: ArrayLike,
        n_arms: int,
        reward_bound: float = 1.0,
        *,
        clip: bool = False,
    ) -> None:
        k = check_n_arms(n_arms)
        bound = check_positive_float(reward_bound, "reward_bound")
        acts = check_array(actions, "actions", ndim=1, dtype=None, allow_empty=True)
        if acts.size and acts.dtype.kind not in "iu" and not (
            acts.dtype.kind == "f" and np.all(np.isfinite(acts)) and np.all(acts == np.round(acts))
        ):
            raise InvalidParameterError(f"actions must be integers; got dtype {acts.dtype}")
        outside = (acts < 0) | (acts >= k)  # in the input's dtype: a float 1e19 must not wrap on the cast
        if np.any(outside):
            bad = int(np.flatnonzero(outside)[0])
            raise InvalidParameterError(f"actions must lie in [0, {k}); got {acts[bad].item()!r} in record {bad}")
        acts = acts.astype(np.int64, copy=False)
        rew = check_bounded_array(rewards, "rewards", 0.0, bound, clip=clip, ndim=1, allow_empty=True)
        if rew.shape != acts.shape:
            raise InvalidParameterError(
                f"rewards must have the shape of actions {acts.shape}; got {rew.shape}"
            )
        object.__setattr__(self, "actions", acts)
        object.__setattr__(self, "rewards", rew)
        object.__setattr__(self, "n_arms", k)
        object.__setattr__(self, "reward_bound", bound)

    @property
    def n_records(self) -> int:
        """Number of logged records n."""
        return int(self.actions.shape[0])

    def counts(self) -> IntArray:
        """N(a; D), the number of records of each arm."""
        return np.bincount(self.actions, minlength=self.n_arms).astype(np.int64)

    def reward_sums(self) -> FloatArray:
        """S(a; D), the sum of the rewards of each arm."""
        return np.bincount(self.actions, weights=self.rewards, minlength=self.n_arms).astype(np.float64)


@dataclass(frozen=True)
class BanditStatistics:
    """Sufficient statistics of logged multi-armed bandit data: N(a; D) and S(a; D) per arm.

    What the KL-regularised MAB policy needs (``KLMABPolicy.fit_statistics``); a reader can produce it
    from a file of any length in memory proportional to K, not to the number of records.

    Attributes
    ----------
    counts : ndarray of int, shape (K,)
        N(a; D), the number of records of each arm.
    reward_sums : ndarray, shape (K,)
        S(a; D), the sum of the rewards of each arm.
    n_arms : int
        K (public).
    reward_bound : float
        R; every reward was checked to lie in [0, R].
    """

    counts: IntArray
    reward_sums: FloatArray
    n_arms: int
    reward_bound: float

    @property
    def n_records(self) -> int:
        """Number of logged records n = Σ_a N(a; D)."""
        return int(self.counts.sum())


@dataclass(frozen=True)
class LoggedContextualData:
    """Logged linear contextual bandit data ``D = {(φ(x_i, a_i), r_i)}``.

    Parameters
    ----------
    features : array_like, shape (n, d)
        φ(x_i, a_i), rows of Euclidean norm ≤ 1.
    rewards : array_like, shape (n,)
        Rewards in ``[0, reward_bound]``.
    reward_bound : float, default 1
        R > 0.
    clip : bool, default False
        Clip rewards into ``[0, R]`` instead of raising.
    """

    features: FloatArray
    rewards: FloatArray
    reward_bound: float = 1.0

    def __init__(
        self, features: ArrayLike, rewards: ArrayLike, reward_bound: float = 1.0, *, clip: bool = False
    ) -> None:
        bound = check_positive_float(reward_bound, "reward_bound")
        phi = check_feature_norms(features, "features")
        rew = check_bounded_array(rewards, "rewards", 0.0, bound, clip=clip, ndim=1, allow_empty=True)
        if rew.shape[0] != phi.shape[0]:
            raise InvalidParameterError(
                f"rewards must have one entry per row of features ({phi.shape[0]}); got {rew.shape[0]}"
            )
        object.__setattr__(self, "features", phi)
        object.__setattr__(self, "rewards", rew)
        object.__setattr__(self, "reward_bound", bound)

    @property
    def n_records(self) -> int:
        """Number of logged records n."""
        return int(self.features.shape[0])

    @property
    def dimension(self) -> int:
        """Feature dimension d."""
        return int(self.features.shape[1])


@dataclass(frozen=True)
class PreferenceData:
    """Pairwise preference data ``D = {(z_i, y_i)}`` with ``z_i = φ(x_i, a¹_i) − φ(x_i, a²_i)``.

    Parameters
    ----------
    feature_differences : array_like, shape (n, d)
        z_i, rows of Euclidean norm ≤ 2 (each φ has norm ≤ 1).
    labels : array_like of {0, 1}, shape (n,)
        y_i = 1 when the first response is preferred.
    """

    feature_differences: FloatArray
    labels: FloatArray

    def __init__(self, feature_differences: ArrayLike, labels: ArrayLike) -> None:
        z = check_feature_norms(feature_differences, "feature_differences", bound=2.0)
        y = check_array(labels, "labels", ndim=1, allow_empty=True)
        not_binary = (y != 0.0) & (y != 1.0)
        if np.any(not_binary):
            row = int(np.flatnonzero(not_binary)[0])
            raise InvalidParameterError(f"labels must be 0 or 1; got {float(y[row])!r} in row {row}")
        if y.shape[0] != z.shape[0]:
            raise InvalidParameterError(
                f"labels must have one entry per row of feature_differences ({z.shape[0]}); got {y.shape[0]}"
            )
        object.__setattr__(self, "feature_differences", z)
        object.__setattr__(self, "labels", y)

    @classmethod
    def from_pairs(cls, first: ArrayLike, second: ArrayLike, labels: ArrayLike) -> PreferenceData:
        """Build from the features of both responses (rows of norm ≤ 1 each)."""
        phi1 = check_feature_norms(first, "first")
        phi2 = check_feature_norms(second, "second")
        if phi1.shape != phi2.shape:
            raise InvalidParameterError(f"second must have the shape of first {phi1.shape}; got {phi2.shape}")
        return cls(phi1 - phi2, labels)

    @property
    def n_records(self) -> int:
        """Number of comparisons n."""
        return int(self.labels.shape[0])

    @property
    def dimension(self) -> int:
        """Feature dimension d."""
        return int(self.feature_differences.shape[1])
