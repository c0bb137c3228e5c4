"""Read logged data from CSV files, Parquet files and pandas DataFrames, with a column mapping.

Each reader takes a ``source`` (a path or a DataFrame) and the names of the columns it needs; other
columns are ignored. Formats (the default column names; any can be renamed):

=================  ==================================  =========================================
reader             columns                             constraints
=================  ==================================  =========================================
logged bandit      ``action``, ``reward``              action an integer arm in [0, K), reward in [0, R]
logged contextual  ``x0, ..., x{d-1}``, ``reward``     ‖x‖ <= 1, reward in [0, R]
preferences        ``z0, ..., z{d-1}``, ``label``      z = φ(x, a¹) − φ(x, a²), ‖z‖ <= 2, label 0 or 1
action features    ``x0, ..., x{d-1}``                 candidates φ(x, a) at one context, ‖x‖ <= 1
=================  ==================================  =========================================

A feature-column argument is a pattern ``"x*"`` (``x0 ... x{d-1}``) or a list of names. The number of
arms K is **public input**: it comes from the caller, never from the data (``max(action) + 1`` would
let one record change the action set, and so the privacy guarantee). Out-of-range data is an error
naming the line (CSV) or row (Parquet, DataFrame) and the column, unless ``clip=True`` is asked for.
The text rules of CSV files are in :mod:`dpbandits.envs.tables`.

:func:`read_bandit_statistics` streams a file of any length into the per-arm counts and reward sums
(memory proportional to K); the other readers return the records.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from dpbandits._core.errors import DataFormatError
from dpbandits._core.typing import FloatArray, IntArray
from dpbandits._core.validation import check_positive_float
from dpbandits.envs.logged import (
    FEATURE_NORM_TOLERANCE,
    BanditStatistics,
    LoggedBanditData,
    LoggedContextualData,
    PreferenceData,
    check_n_arms,
)
from dpbandits.envs.tables import Table, open_table, resolve_columns

__all__ = [
    "read_action_features",
    "read_action_features_csv",
    "read_bandit_statistics",
    "read_logged_bandit",
    "read_logged_bandit_csv",
    "read_logged_contextual",
    "read_logged_contextual_csv",
    "read_preferences",
    "read_preferences_csv",
]

Source = Any
"""A path (str or path-like) to a CSV or Parquet file, or a pandas DataFrame."""


# ------------------------------------------------------------------------------ batch checks
def _finite(table: Table, first_row: int, name: str, values: FloatArray) -> FloatArray:
    bad = ~np.isfinite(values)
    if np.any(bad):
        raise table.error(first_row + int(np.flatnonzero(bad)[0]), name, "must be a finite number")
    return values


def _in_range(table: Table, first_row: int, name: str, values: FloatArray, bound: float, clip: bool) -> FloatArray:
    """Values in [0, bound] (clipped into it when ``clip``)."""
    values = _finite(table, first_row, name, values)
    if clip:
        return np.clip(values, 0.0, bound)
    bad = (values < 0.0) | (values > bound)
    if np.any(bad):
        raise table.error(first_row + int(np.flatnonzero(bad)[0]), name, f"must lie in [0, {bound}]")
    return values


def _arms(table: Table, first_row: int, name: str, values: FloatArray, n_arms: int) -> IntArray:
    """Integer arm ids in [0, K), checked on the floats before the cast (1e19 must not wrap)."""
    bad = ~((values >= 0) & (values < n_arms) & (values == np.floor(values)))  # NaN fails every comparison
    if np.any(bad):
        raise table.error(first_row + int(np.flatnonzero(bad)[0]), name,
                          f"must be an integer arm id in [0, {n_arms})")
    return values.astype(np.int64)


def _norms(table: Table, first_row: int, names: list[str], block: FloatArray, bound: float) -> FloatArray:
    norms = np.sqrt(np.einsum("ij,ij->i", block, block))
    bad = ~(norms <= bound * (1.0 + FEATURE_NORM_TOLERANCE))
    if np.any(bad):
        row = int(np.flatnonzero(bad)[0])
        raise DataFormatError(f"{table.place(first_row + row)}, columns {names[0]}..{names[-1]}: "
                              f"Euclidean norm must be <= {bound}; got {float(norms[row])!r}")
    return block


def _feature_block(table: Table, first_row: int, names: list[str], arrays: list[FloatArray],
                   bound: float) -> FloatArray:
    block = np.column_stack([_finite(table, first_row, name, a) for name, a in zip(names, arrays, strict=True)])
    return _norms(table, first_row, names, block.reshape(len(arrays[0]) if arrays else 0, len(names)), bound)


def _bandit_batches(source: Source, n_arms: int, reward_bound: float, action_column: str, reward_column: str,
                    clip: bool, file_format: str | None) -> Iterator[tuple[IntArray, FloatArray]]:
    table = open_table(source, file_format)
    action = resolve_columns(table, action_column, "action")[0]
    reward = resolve_columns(table, reward_column, "reward")[0]
    if action == reward:
        raise DataFormatError(f"{table.label}: the action and reward columns must differ; both are {action!r}")
    for first_row, (actions, rewards) in table.batches([action, reward]):
        arms = _arms(table, first_row, action, _finite(table, first_row, action, actions), n_arms)
        yield arms, _in_range(table, first_row, reward, rewards, reward_bound, clip)


def _labels(table: Table, first_row: int, name: str, values: FloatArray) -> FloatArray:
    bad = ~((values == 0.0) | (values == 1.0))
    if np.any(bad):
        raise table.error(first_row + int(np.flatnonzero(bad)[0]), name, "must be 0 or 1")
    return values


def _concatenate(parts: list[Any], empty_shape: tuple[int, ...], dtype: Any) -> Any:
    return np.concatenate(parts) if parts else np.empty(empty_shape, dtype=dtype)


def _features_and_target(source: Source, feature_columns: str | Sequence[str], norm_bound: float,
                         target_column: str, role: str,
                         check_target: Callable[[Table, int, str, FloatArray], FloatArray],
                         file_format: str | None) -> tuple[FloatArray, FloatArray]:
    """Feature rows (norm <= ``norm_bound``) and one target column (rewards or labels), checked block by block."""
    table = open_table(source, file_format)
    features = resolve_columns(table, feature_columns, "feature")
    target = resolve_columns(table, target_column, role)[0]
    if target in features:
        raise DataFormatError(f"{table.label}: the {role} column {target!r} is also a feature column")
    blocks, targets = [], []
    for first_row, arrays in table.batches([*features, target]):
        blocks.append(_feature_block(table, first_row, features, arrays[:-1], norm_bound))
        targets.append(check_target(table, first_row, target, arrays[-1]))
    return (_concatenate(blocks, (0, len(features)), np.float64), _concatenate(targets, (0,), np.float64))


# ------------------------------------------------------------------------------------ readers
def read_logged_bandit(source: Source, *, n_arms: int, reward_bound: float = 1.0, action_column: str = "action",
                       reward_column: str = "reward", clip: bool = False,
                       file_format: str | None = None) -> LoggedBanditData:
    """Read logged multi-armed bandit records (action, reward).

    Parameters
    ----------
    source : str, path-like or pandas.DataFrame
        A CSV or Parquet file, or a DataFrame; columns other than the two named are ignored.
    n_arms : int
        K, the public number of arms (1 <= K <= ``MAX_ARMS``); actions must lie in [0, K).
    reward_bound : float, default 1
        R; rewards outside [0, R] are an error naming the line and column.
    action_column, reward_column : str
        The columns holding the arm ids and the rewards.
    clip : bool, default False
        Clip rewards into [0, R] instead of raising.
    file_format : {"csv", "parquet"}, optional
        For a path; by default from its suffix (``.parquet``/``.pq`` are Parquet).

    Returns
    -------
    LoggedBanditData

    Raises
    ------
    DataFormatError
        On malformed data; the message names the line (CSV) or row and the column, and the value.

    Examples
    --------
    >>> import pandas as pd
    >>> frame = pd.DataFrame({"user": [7, 8, 9], "arm": [0, 2, 2], "click": [1.0, 0.0, 1.0]})
    >>> data = read_logged_bandit(frame, n_arms=3, action_column="arm", reward_column="click")
    >>> data.counts().tolist(), data.reward_sums().tolist()
    ([1, 0, 2], [1.0, 0.0, 1.0])
    """
    k = check_n_arms(n_arms)
    bound = check_positive_float(reward_bound, "reward_bound")
    actions, rewards = [], []
    for arms, values in _bandit_batches(source, k, bound, action_column, reward_column, clip, file_format):
        actions.append(arms)
        rewards.append(values)
    return LoggedBanditData(_concatenate(actions, (0,), np.int64), _concatenate(rewards, (0,), np.float64), k, bound)


def read_bandit_statistics(source: Source, *, n_arms: int, reward_bound: float = 1.0,
                           action_column: str = "action", reward_column: str = "reward", clip: bool = False,
                           file_format: str | None = None) -> BanditStatistics:
    """Stream logged bandit records into N(a; D) and S(a; D), in memory proportional to K, not to n.

    Same parameters, checks and errors as :func:`read_logged_bandit`; the records are read block by
    block and never held all at once, so a file of 10^7 records needs a few MB beyond the K-length
    statistics. Feed the result to ``KLMABPolicy.fit_statistics(stats.counts, stats.reward_sums)``.

    Returns
    -------
    BanditStatistics
    """
    k = check_n_arms(n_arms)
    bound = check_positive_float(reward_bound, "reward_bound")
    counts = np.zeros(k, dtype=np.int64)
    sums = np.zeros(k, dtype=np.float64)
    for arms, values in _bandit_batches(source, k, bound, action_column, reward_column, clip, file_format):
        if arms.size >= k:
            counts += np.bincount(arms, minlength=k)
            sums += np.bincount(arms, weights=values, minlength=k)
        else:  # many arms, a short block: only the arms it holds (a K-length bincount per block would dominate)
            present, slot = np.unique(arms, return_inverse=True)
            counts[present] += np.bincount(slot)
            sums[present] += np.bincount(slot, weights=values)
    return BanditStatistics(counts, sums, k, bound)


def read_logged_contextual(source: Source, *, reward_bound: float = 1.0, feature_columns: str | Sequence[str] = "x*",
                           reward_column: str = "reward", clip: bool = False,
                           file_format: str | None = None) -> LoggedContextualData:
    """Read linear contextual records (φ(x_i, a_i), r_i): feature columns and a reward column.

    Parameters
    ----------
    source : str, path-like or pandas.DataFrame
    reward_bound : float, default 1
        R; rewards must lie in [0, R].
    feature_columns : str or sequence of str, default "x*"
        The columns of φ: a pattern ``"x*"`` (x0 ... x{d-1}) or a list of names; rows must have norm <= 1.
    reward_column : str, default "reward"
    clip : bool, default False
        Clip rewards into [0, R] instead of raising (features are never clipped).
    file_format : {"csv", "parquet"}, optional

    Returns
    -------
    LoggedContextualData
    """
    bound = check_positive_float(reward_bound, "reward_bound")

    def rewards(table: Table, first_row: int, name: str, values: FloatArray) -> FloatArray:
        return _in_range(table, first_row, name, values, bound, clip)

    features, values = _features_and_target(source, feature_columns, 1.0, reward_column, "reward", rewards,
                                            file_format)
    return LoggedContextualData(features, values, bound)


def read_preferences(source: Source, *, feature_columns: str | Sequence[str] = "z*", label_column: str = "label",
                     file_format: str | None = None) -> PreferenceData:
    """Read RLHF comparisons (z_i, y_i): feature-difference columns and a 0/1 label column.

    Parameters
    ----------
    source : str, path-like or pandas.DataFrame
    feature_columns : str or sequence of str, default "z*"
        The columns of z = φ(x, a¹) − φ(x, a²) (rows of norm <= 2).
    label_column : str, default "label"
        y = 1 when the first response is preferred, else 0.
    file_format : {"csv", "parquet"}, optional

    Returns
    -------
    PreferenceData
    """
    # ‖z‖ = ‖φ(x, a¹) − φ(x, a²)‖ <= 2
    features, labels = _features_and_target(source, feature_columns, 2.0, label_column, "label", _labels,
                                            file_format)
    return PreferenceData(features, labels)


def read_action_features(source: Source, *, feature_columns: str | Sequence[str] = "x*",
                         file_format: str | None = None) -> FloatArray:
    """Read the candidate action features φ(x, a) at one context: one row per action, norm <= 1.

    Parameters
    ----------
    source : str, path-like or pandas.DataFrame
    feature_columns : str or sequence of str, default "x*"
    file_format : {"csv", "parquet"}, optional

    Returns
    -------
    ndarray of shape (n_actions, d)
    """
    table = open_table(source, file_format)
    features = resolve_columns(table, feature_columns, "feature")
    blocks = [_feature_block(table, first_row, features, arrays, 1.0)
              for first_row, arrays in table.batches(features)]
    result = _concatenate(blocks, (0, len(features)), np.float64)
    if result.shape[0] == 0:
        raise DataFormatError(f"{table.label}: at least one action (one row of features) is needed; got none")
    return np.asarray(result, dtype=np.float64)


# Earlier names of the readers (they read CSV only); kept so existing callers keep working.
read_logged_bandit_csv = read_logged_bandit
read_logged_contextual_csv = read_logged_contextual
read_preferences_csv = read_preferences
read_action_features_csv = read_action_features
