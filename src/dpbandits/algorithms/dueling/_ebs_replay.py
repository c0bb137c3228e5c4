"""DP-EBS-Elimination's per-arm bookkeeping, recomputed from its pair tables and elimination rounds.

The agent's left-arm pointer, left counts ``n_i``, pending subtractions and number of counter
restarts are functions of what a saved state keeps anyway (the pair counts ``N_ik`` and wins
``W_ik``, the round at which each arm was eliminated, the time and the option ``stats_removal``),
so a state file does not hold them: ``load`` recomputes them, and a file cannot hold values of them
no run produces.

* The left arm of round ``t`` is the next active arm after that of round ``t − 1`` (round robin over
  the active set of the round; the pointer stops once one arm is left);
* ``n_i = Σ_k N_ik`` over the opponents ``k`` not eliminated before ``i`` (an elimination subtracts
  the pairs of the eliminated arms from the survivors' counts; with ``"restart"`` every table starts
  again at zero, and the same sum holds);
* the pending subtraction of a survivor is its wins against the arms eliminated at the last
  elimination, until the next round consumes it (never, once one arm is left);
* with ``"restart"`` the counters restart at every screen that eliminates;
* the pairs themselves are public coins: the left arm by the round robin, the opponent by the round's
  counter-based uniform of the agent's key, so the pair counts a file holds are replayed and checked.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterator, Mapping

import numpy as np

from dpbandits._core.typing import FloatArray, IntArray
from dpbandits.envs.base import counter_uniforms

__all__ = ["elimination_keys", "left_counts", "pending", "pointer", "replayed_pairs", "restarts"]

_NEVER = np.iinfo(np.int64).max


def elimination_keys(n_arms: int, elimination_rounds: Mapping[int, int]) -> IntArray:
    """The round at which each arm was eliminated (the largest int64 for an active arm)."""
    keys = np.full(n_arms, _NEVER, dtype=np.int64)
    for arm, round_ in elimination_rounds.items():
        keys[int(arm)] = int(round_)
    return keys


def left_counts(pair_counts: IntArray, elimination_rounds: Mapping[int, int]) -> IntArray:
    """``n_i``: the pairs of arm ``i`` (left) against opponents not eliminated before ``i``."""
    keys = elimination_keys(pair_counts.shape[0], elimination_rounds)
    kept = keys[None, :] >= keys[:, None]
    return np.asarray(np.where(kept, pair_counts, 0).sum(axis=1), dtype=np.int64)


def pending(pair_wins: IntArray, elimination_rounds: Mapping[int, int], time: int) -> IntArray:
    """The subtraction waiting for the next round: survivors' wins against the arms eliminated last.

    Non-zero only right after an elimination (in the round it happened), or for good once one arm
    is left (a committed agent feeds its counters no more rounds).
    """
    k = pair_wins.shape[0]
    out = np.zeros(k, dtype=np.int64)
    if not elimination_rounds:
        return out
    last = max(elimination_rounds.values())
    keys = elimination_keys(k, elimination_rounds)
    survivors = keys == _NEVER
    if last != time and int(survivors.sum()) != 1:
        return out
    out[survivors] = pair_wins[np.ix_(survivors, keys == last)].sum(axis=1)
    return out


def pointer(n_arms: int, elimination_rounds: Mapping[int, int], time: int) -> int:
    """The left arm of round ``time`` (−1 before the first round), replayed segment by segment.

    Between two eliminations the active set is fixed and the left arm moves round robin over it;
    once one arm is left the pointer stops (the committed agent's rounds do not move it).
    """
    keys = elimination_keys(n_arms, elimination_rounds)
    position, start = -1, 0
    for end in [*sorted({int(v) for v in elimination_rounds.values() if v < time}), time]:
        active = np.flatnonzero(keys > start).tolist()  # arms eliminated at `start` or before are out
        if len(active) <= 1:
            break
        rounds = end - start
        if rounds > 0:
            first = bisect.bisect_right(active, position) % len(active)
            position = active[(first + rounds - 1) % len(active)]
        start = end
    return int(position)


def restarts(elimination_rounds: Mapping[int, int], stats_removal: str) -> int:
    """Counter generations after the first: one per screen that eliminated, with ``"restart"``."""
    return len(set(elimination_rounds.values())) if stats_removal == "restart" else 0


Opponents = Callable[[FloatArray, IntArray, IntArray, str], IntArray]


def replayed_pairs(key: int, n_arms: int, elimination_rounds: Mapping[int, int], end: int, opponent: str,
                   choose: Opponents, chunk: int = 1 << 16) -> Iterator[tuple[IntArray, IntArray, IntArray]]:
    """The rounds ``1..end`` and their pairs (left, right), by blocks of at most ``chunk`` rounds.

    ``choose(uniforms, active, left_index, opponent)`` draws the opponents from the rounds' coins (the
    agent's rule). Rounds after one arm is left are not yielded (their pair is the committed arm's).
    """
    keys = elimination_keys(n_arms, elimination_rounds)
    key_array = np.array([key], dtype=np.uint64)
    position, start = -1, 0
    for stop in [*sorted({int(v) for v in elimination_rounds.values() if v < end}), end]:
        active = np.flatnonzero(keys > start)
        m = active.size
        if m <= 1:
            return
        first = int(np.searchsorted(active, position, side="right")) % m
        for lo in range(start, stop, chunk):
            hi = min(lo + chunk, stop)
            left_index = (first + np.arange(lo - start, hi - start)) % m
            times = np.arange(lo + 1, hi + 1)
            yield times, active[left_index], choose(counter_uniforms(key_array, times), active, left_index, opponent)
        if stop > start:
            position = int(active[(first + stop - start - 1) % m])
        start = stop
