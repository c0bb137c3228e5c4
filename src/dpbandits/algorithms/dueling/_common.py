"""Checks shared by the dueling algorithms' public entry points and ask/tell agents."""

from __future__ import annotations

from typing import Any

import numpy as np

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


def check_told(
    asked: tuple[int, int] | None, pair: tuple[int, int], winner: Any = None, first_wins: Any = None
) -> tuple[tuple[int, int], int]:
    """Validate a ``tell(pair, winner)`` or ``tell(pair, first_wins=...)`` against the last asked pair.

    Exactly one of ``winner`` (the index of the arm that won, one of ``pair``) and ``first_wins``
    (True iff ``pair[0]`` won) must be given. A self-duel (i, i) can only be told with
    ``first_wins``: the winning arm's index does not say which side won.

    Returns
    -------
    (pair, outcome)
        The asked pair (as ints) and the outcome o = 1[pair[0] won] as 0/1.

    Raises
    ------
    InvalidActionError
        If ``pair`` is not the pair returned by the last ``ask()``.
    InvalidParameterError
        If both or neither of ``winner`` and ``first_wins`` are given, ``winner`` is not an arm of
        the pair (or the pair is a self-duel), or ``first_wins`` is not 0/1 (or a bool).
    """
    if (not isinstance(pair, tuple | list) or len(pair) != 2
            or any(isinstance(a, bool | np.bool_) or not isinstance(a, int | np.integer) for a in pair)):
        raise InvalidActionError(f"pair must be the last asked pair, two int arm indices; got {pair!r}")
    if asked is None or (int(pair[0]), int(pair[1])) != asked:
        raise InvalidActionError(f"pair must be the last asked pair {asked}; got {pair!r}")
    if (winner is None) == (first_wins is None):
        raise InvalidParameterError(
            "tell needs exactly one of winner (the arm that won) and first_wins (True iff pair[0] won); "
            f"got winner={winner!r}, first_wins={first_wins!r}"
        )
    if first_wins is not None:
        if not isinstance(first_wins, bool | np.bool_ | int | np.integer) or first_wins not in (0, 1):
            raise InvalidParameterError(f"first_wins must be 0 or 1 (or a bool); got {first_wins!r}")
        return asked, int(first_wins)
    if isinstance(winner, bool | np.bool_) or not isinstance(winner, int | np.integer) or winner not in asked:
        raise InvalidParameterError(f"winner must be one of the asked arms {asked}; got {winner!r}")
    if asked[0] == asked[1]:
        raise InvalidParameterError(
            f"winner cannot say which side of the self-duel {asked} won; tell it with first_wins=True/False"
        )
    return asked, int(winner == asked[0])
