"""Checks shared by the dueling algorithms' public entry points and ask/tell agents."""

from __future__ import annotations

from typing import Any

import numpy as np

from dpbandits._core.errors import InvalidActionError, InvalidParameterError
from dpbandits._core.validation import check_int
from dpbandits.envs.dueling import UtilityDuelingEnvironment
from dpbandits.privacy.guarantees import NonPrivate

__all__ = [
    "DUELING_ENVIRONMENTS",
    "ELIMINATION_MAX_ARM_ROUNDS",
    "ROUND_BY_ROUND_MAX_HORIZON",
    "UNIT",
    "check_dueling_env",
    "check_elimination_horizon",
    "check_round_horizon",
    "check_told",
    "elimination_horizon_precheck",
    "non_private",
    "round_horizon_precheck",
]

DUELING_ENVIRONMENTS: tuple[str, ...] = (
    "dueling-f1", "dueling-f2", "dueling-f3", "dueling-f4", "dueling-utility", "dueling-unit-ball",
)
"""The registered environments every finite-arm dueling algorithm runs on."""

UNIT = "one preference label (one round's feedback, the user's whole response function)"
"""The unit the private dueling algorithms protect."""


def non_private(name: str) -> NonPrivate:
    """The guarantee of a non-private dueling comparator: none, for :data:`UNIT`."""
    return NonPrivate(unit=UNIT, reason=f"{name} is a non-private comparator: it keeps every raw outcome")


ROUND_BY_ROUND_MAX_HORIZON = 10**8
"""Largest horizon of a simulation that advances one round at a time (RUCB, BTM, RMED1, DTS, CCB,
MaxInP, CoLSTIM). Such a round costs about 0.1–5 ms for a batch of 20 trials with K = 10
(``benchmarks/bench_dueling.py`` prints the measured costs), so T = 10⁸ already takes hours to days
per call and T = 10⁹ weeks. Memory does not grow with T."""

ELIMINATION_MAX_ARM_ROUNDS = 5 * 10**10
"""Largest K·T of a block-vectorised elimination simulation (DP-EBS-Elimination, its twins, IF2).
Its worst case (no elimination before T, so no commit fast-forward) costs about 0.05 µs per arm
and round on an idle core (0.2 µs measured on the shared machine under load; see
``benchmarks/bench_dueling.py``), so K·T = 5·10¹⁰ is 45 minutes to 3 hours per trial. Memory does
not grow with T."""


_FLAGS = (bool, np.bool_)


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
    if (pair.__class__ is tuple and asked is not None and pair == asked and pair[0].__class__ is int
            and pair[1].__class__ is int and winner is None and first_wins.__class__ in _FLAGS):
        return asked, int(first_wins)  # the common case (the asked tuple back, a bool): checked as below, faster
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


def check_round_horizon(horizon: Any, algorithm: str) -> int:
    """``horizon`` as an int in [1, ROUND_BY_ROUND_MAX_HORIZON], else one-line :class:`InvalidParameterError`."""
    value = check_int(horizon, "horizon", minimum=1)
    if value > ROUND_BY_ROUND_MAX_HORIZON:
        raise InvalidParameterError(
            f"horizon must be <= {ROUND_BY_ROUND_MAX_HORIZON} for {algorithm} (simulated round by round at about "
            f"0.1-5 ms per round, so T = {value:.0e} would take weeks); got {value}"
        )
    return value


def check_elimination_horizon(horizon: Any, n_arms: int, algorithm: str) -> int:
    """``horizon`` as an int >= 1 with K·T <= ELIMINATION_MAX_ARM_ROUNDS, else one-line :class:`InvalidParameterError`."""
    value = check_int(horizon, "horizon", minimum=1)
    limit = ELIMINATION_MAX_ARM_ROUNDS // n_arms
    if value > limit:
        raise InvalidParameterError(
            f"horizon must be <= {limit} for {algorithm} with K = {n_arms} arms (worst case 0.05-0.2 us per arm "
            f"and round: K*T <= {ELIMINATION_MAX_ARM_ROUNDS:.0e}, 45 min to 3 h per trial); got {value}"
        )
    return value


def round_horizon_precheck(env: Any, *, algorithm: str, horizon: Any = None, **_: Any) -> None:
    """Registry ``precheck`` of a round-by-round simulation: the horizon limit, at study validation."""
    if horizon is not None:
        check_round_horizon(horizon, algorithm)


def elimination_horizon_precheck(env: Any, *, algorithm: str, horizon: Any = None, **_: Any) -> None:
    """Registry ``precheck`` of a block-vectorised elimination: the K·T limit, at study validation."""
    if horizon is not None:
        check_elimination_horizon(horizon, check_dueling_env(env).n_arms, algorithm)
