"""Checks shared by the dueling algorithms' public entry points and ask/tell agents."""

from __future__ import annotations

from typing import Any

from dpbandits._core.errors import InvalidActionError, InvalidParameterError
from dpbandits.envs.dueling import UtilityDuelingEnvironment

__all__ = ["check_dueling_env", "check_told"]


def check_dueling_env(env: Any) -> UtilityDuelingEnvironment:
    """Return ``env`` if it is a dueling environment, else raise :class:`InvalidParameterError`."""
    if not isinstance(env, UtilityDuelingEnvironment):
        raise InvalidParameterError(
            f"env must be a UtilityDuelingEnvironment (kind 'dueling'); got {type(env).__name__}"
        )
    return env


def check_told(asked: tuple[int, int] | None, pair: tuple[int, int], first_wins: Any) -> tuple[tuple[int, int], int]:
    """Validate a ``tell(pair, first_wins)`` against the last asked pair.

    Returns
    -------
    (pair, outcome)
        The asked pair (as ints) and the outcome as 0/1.

    Raises
    ------
    InvalidActionError
        If ``pair`` is not the pair returned by the last ``ask()``.
    InvalidParameterError
        If ``first_wins`` is not 0/1 (or a bool).
    """
    if asked is None or tuple(int(a) for a in pair) != asked:
        raise InvalidActionError(f"pair must be the last asked pair {asked}; got {pair!r}")
    if first_wins not in (0, 1):
        raise InvalidParameterError(f"first_wins must be 0 or 1; got {first_wins!r}")
    return asked, int(first_wins)
