"""Adapters for Open Bandit Pipeline's logged bandit feedback dictionaries (no dependency on ``obp``).

Open Bandit Pipeline (OBP; Saito et al. 2021) hands logged data around as a plain ``dict``, the
``bandit_feedback`` of ``obtain_batch_bandit_feedback()``. The keys read here:

==================  ===========================  ====================================================
key                 shape                        meaning
==================  ===========================  ====================================================
``n_rounds``        int                          number of logged records n
``n_actions``       int                          number of actions K (public: the action set)
``action``          (n,) int                     the logged action a_i in [0, K)
``reward``          (n,)                         the observed reward r_i
``position``        (n,) int or None             the slot a_i was shown in (slates); optional
``pscore``          (n,)                         the logging policy's probability of a_i; optional
``context``         (n, d_x)                     the context x_i (contextual data only)
``action_context``  (K, d_a)                     a feature vector per action; optional (one-hot)
==================  ===========================  ====================================================

Other keys (``expected_reward``, ``pi_b``, ...) are ignored. The arrays are checked as the readers
check files: K comes from ``n_actions`` (never from the actions seen), rewards must lie in [0, R]
(OBP's clicks are 0/1; its continuous rewards are unbounded, so pass their public bound or
``clip=True``), every array must have ``n_rounds`` entries, and propensities, when present, must lie in
(0, 1]. ``position`` selects the records of one slot of a slate; by default every record is kept,
each one logged record (the protected unit of the KL policies).

For the linear KL policy each record becomes φ(x_i, a_i): ``features="outer"`` (default) is the
Kronecker product ``action_context[a] ⊗ x`` — with OBP's default one-hot ``action_context`` this is
the disjoint model, x in the block of action a — and ``"concat"`` is ``[x, action_context[a]] / √2``.
Both keep ‖φ‖ <= 1 when ‖x‖ <= 1 and every ‖action_context[a]‖ <= 1; rows that are longer are an
error unless ``clip=True`` (each row scaled to norm 1, a per-record map that needs no data-dependent
choice). OBP's synthetic contexts are standard normal: scale them by a public bound first.

References
----------
Saito, Aihara, Matsutani, Narita (2021), "Open Bandit Dataset and Pipeline: Towards Realistic and
Reproducible Off-Policy Evaluation", NeurIPS Datasets and Benchmarks; the ``bandit_feedback`` keys
are those documented for ``OpenBanditDataset`` and ``SyntheticBanditDataset``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from dpbandits._core.errors import DataFormatError, InvalidParameterError
from dpbandits._core.typing import BoolArray, FloatArray, IntArray
from dpbandits._core.validation import check_int, check_one_of, check_positive_float
from dpbandits.envs.logged import FEATURE_NORM_TOLERANCE, LoggedBanditData, LoggedContextualData, check_n_arms

__all__ = ["FEATURE_MAPS", "obp_action_features", "obp_logged_bandit", "obp_logged_contextual"]

FEATURE_MAPS = ("outer", "concat")
"""Joint feature maps φ(x, a) built from OBP's ``context`` and ``action_context``."""


def _array(feedback: Mapping[str, Any], key: str, n_rounds: int | None, ndim: int) -> np.ndarray:
    if key not in feedback or feedback[key] is None:
        raise DataFormatError(f"bandit_feedback[{key!r}] is needed; got none (keys: {sorted(feedback)})")
    value = np.asarray(feedback[key])
    if value.dtype.kind not in "iuf" or value.ndim != ndim:
        raise DataFormatError(f"bandit_feedback[{key!r}] must be a {ndim}-d array of numbers; "
                              f"got dtype {value.dtype}, shape {value.shape}")
    if n_rounds is not None and value.shape[0] != n_rounds:
        raise DataFormatError(f"bandit_feedback[{key!r}] must have n_rounds = {n_rounds} rows; got {value.shape[0]}")
    if value.dtype.kind == "f" and not np.all(np.isfinite(value)):
        where = np.argwhere(~np.isfinite(value))[0]
        raise DataFormatError(f"bandit_feedback[{key!r}] must be finite; got {value[tuple(where)]!r} at {tuple(where)}")
    return value


def _selected(feedback: Mapping[str, Any], position: int | None) -> tuple[int, int, IntArray, BoolArray]:
    """Check the keys every adapter reads; return (n_rounds, K, actions, mask of the records kept)."""
    if not isinstance(feedback, Mapping):
        raise InvalidParameterError(f"bandit_feedback must be a dict; got {type(feedback).__name__}")
    for key in ("n_rounds", "n_actions"):
        if key not in feedback:
            raise DataFormatError(f"bandit_feedback[{key!r}] is needed; got none (keys: {sorted(feedback)})")
    n = check_int(feedback["n_rounds"], "bandit_feedback['n_rounds']", minimum=0)
    k = check_n_arms(feedback["n_actions"], "bandit_feedback['n_actions']")
    actions = _array(feedback, "action", n, 1)
    bad = ~((actions >= 0) & (actions < k) & (actions == np.floor(actions)))
    if np.any(bad):
        i = int(np.flatnonzero(bad)[0])
        raise DataFormatError(f"bandit_feedback['action'][{i}] must be an integer action in [0, {k}); "
                              f"got {actions[i].item()!r}")
    if feedback.get("pscore") is not None:
        pscore = _array(feedback, "pscore", n, 1)
        bad = ~((pscore > 0) & (pscore <= 1))
        if np.any(bad):
            i = int(np.flatnonzero(bad)[0])
            raise DataFormatError(f"bandit_feedback['pscore'][{i}] must lie in (0, 1]; got {pscore[i].item()!r}")
    keep = np.ones(n, dtype=bool)
    if position is not None:
        slot = check_int(position, "position", minimum=0)
        if feedback.get("position") is None:
            raise DataFormatError(f"position={slot} selects a slot, but bandit_feedback['position'] is missing")
        keep = _array(feedback, "position", n, 1) == slot
    return n, k, actions.astype(np.int64), keep


def _rewards(feedback: Mapping[str, Any], n: int, keep: BoolArray, bound: float, clip: bool) -> FloatArray:
    rewards = np.asarray(_array(feedback, "reward", n, 1)[keep], dtype=np.float64)
    if clip:
        return np.clip(rewards, 0.0, bound)
    bad = (rewards < 0.0) | (rewards > bound)
    if np.any(bad):
        i = int(np.flatnonzero(keep)[np.flatnonzero(bad)[0]])
        raise DataFormatError(f"bandit_feedback['reward'][{i}] must lie in [0, {bound}] (reward_bound); "
                              f"got {float(feedback['reward'][i])!r}; pass the public bound or clip=True")
    return rewards


def obp_logged_bandit(feedback: Mapping[str, Any], *, reward_bound: float = 1.0, position: int | None = None,
                      clip: bool = False) -> LoggedBanditData:
    """Logged multi-armed bandit data (action, reward) from an OBP ``bandit_feedback`` dict.

    Parameters
    ----------
    feedback : dict
        OBP's logged bandit feedback (module docstring); ``n_actions`` gives K.
    reward_bound : float, default 1
        R, the public reward bound.
    position : int, optional
        Keep only the records shown in this slot; by default all.
    clip : bool, default False
        Clip rewards into [0, R] instead of raising.

    Returns
    -------
    LoggedBanditData

    Examples
    --------
    >>> import numpy as np
    >>> feedback = {"n_rounds": 4, "n_actions": 3, "action": np.array([0, 2, 2, 1]),
    ...             "reward": np.array([1, 0, 1, 1]), "position": np.array([0, 0, 1, 0]),
    ...             "pscore": np.full(4, 1 / 3)}
    >>> obp_logged_bandit(feedback).counts().tolist()
    [1, 1, 2]
    >>> obp_logged_bandit(feedback, position=0).counts().tolist()
    [1, 1, 1]
    """
    bound = check_positive_float(reward_bound, "reward_bound")
    n, k, actions, keep = _selected(feedback, position)
    return LoggedBanditData(actions[keep], _rewards(feedback, n, keep, bound, clip), k, bound)


def _action_context(feedback: Mapping[str, Any], k: int) -> FloatArray:
    if feedback.get("action_context") is None:
        return np.eye(k)  # OBP's default: one-hot actions
    table = np.asarray(_array(feedback, "action_context", k, 2), dtype=np.float64)
    return table


def _joint_features(contexts: FloatArray, action_rows: FloatArray, features: str) -> FloatArray:
    """φ(x_i, a_i) for paired rows of contexts and action-context rows."""
    if features == "outer":
        # φ = action_context[a] ⊗ x: row i is the outer product flattened, ‖φ‖ = ‖action_context[a]‖·‖x‖
        return np.einsum("ia,ix->iax", action_rows, contexts).reshape(contexts.shape[0], -1)
    # φ = [x, action_context[a]] / √2
    return np.hstack([contexts, action_rows]) / np.sqrt(2.0)


def _bounded_rows(phi: FloatArray, clip: bool, what: str) -> FloatArray:
    norms = np.linalg.norm(phi, axis=1)
    if clip:
        return phi / np.maximum(1.0, norms)[:, None]
    bad = norms > 1.0 + FEATURE_NORM_TOLERANCE
    if np.any(bad):
        i = int(np.flatnonzero(bad)[0])
        raise DataFormatError(f"{what} {i} has Euclidean norm {float(norms[i])!r} > 1; scale context and "
                              "action_context by a public bound, or pass clip=True")
    return phi


def obp_logged_contextual(feedback: Mapping[str, Any], *, features: str = "outer", reward_bound: float = 1.0,
                          position: int | None = None, clip: bool = False) -> LoggedContextualData:
    """Logged linear contextual data (φ(x_i, a_i), r_i) from an OBP ``bandit_feedback`` dict.

    Parameters
    ----------
    feedback : dict
        OBP's logged bandit feedback with ``context`` (and optionally ``action_context``).
    features : {"outer", "concat"}, default "outer"
        The joint feature map (module docstring).
    reward_bound : float, default 1
    position : int, optional
        Keep only the records shown in this slot.
    clip : bool, default False
        Clip rewards into [0, R] and scale feature rows longer than 1 to norm 1, instead of raising.

    Returns
    -------
    LoggedContextualData
    """
    check_one_of(features, "features", FEATURE_MAPS)
    bound = check_positive_float(reward_bound, "reward_bound")
    n, k, actions, keep = _selected(feedback, position)
    contexts = np.asarray(_array(feedback, "context", n, 2), dtype=np.float64)[keep]
    action_rows = _action_context(feedback, k)[actions[keep]]
    phi = _bounded_rows(_joint_features(contexts, action_rows, features), clip, "the features of kept record")
    return LoggedContextualData(phi, _rewards(feedback, n, keep, bound, clip), bound)


def obp_action_features(feedback: Mapping[str, Any], context: Any, *, features: str = "outer",
                        clip: bool = False) -> FloatArray:
    """The candidates φ(x, a), a = 0..K−1, at one (public) query context x, in the map of the logged data.

    Parameters
    ----------
    feedback : dict
        Gives ``n_actions`` and ``action_context`` (one-hot when absent).
    context : array_like of shape (d_x,)
        The query context x.
    features : {"outer", "concat"}, default "outer"
    clip : bool, default False
        Scale rows longer than 1 to norm 1 instead of raising.

    Returns
    -------
    ndarray of shape (K, d)
        Row a is φ(x, a); pass it to ``KLLinearPolicy.probabilities``.
    """
    check_one_of(features, "features", FEATURE_MAPS)
    if not isinstance(feedback, Mapping) or "n_actions" not in feedback:
        raise DataFormatError("bandit_feedback['n_actions'] is needed to list the candidate actions; got none")
    k = check_n_arms(feedback["n_actions"], "bandit_feedback['n_actions']")
    x = np.asarray(context, dtype=np.float64)
    if x.ndim != 1 or not np.all(np.isfinite(x)):
        raise InvalidParameterError(f"context must be a finite 1-d array; got shape {x.shape}")
    table = _action_context(feedback, k)
    phi = _joint_features(np.broadcast_to(x, (k, x.size)), table, features)
    return _bounded_rows(phi, clip, "the features of action")
