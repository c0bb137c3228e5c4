"""The base of every stochastic bandit environment: per-(trial, arm) reward streams and exact sums.

An environment is a set of ``n_arms`` reward distributions with bounded support. It offers two ways
to draw rewards for many independent trials at once (batch dimension first):

* :meth:`BanditEnvironment.streams` — **pull-consistent** rewards. Every (trial, arm) pair owns its
  own stream, so the k-th pull of arm ``a`` in trial ``i`` is the same number whatever order an
  algorithm pulls arms in. Two algorithms run on streams built from the same seed see the same
  rewards: comparisons between them are paired, and an ask/tell form and a vectorised form of one
  algorithm can be compared exactly.
* :meth:`BanditEnvironment.sample_sums` — **distribution-exact** sums of fresh i.i.d. rewards,
  drawn as cheaply as NumPy allows (Binomial for Bernoulli arms; for Uniform arms one draw of all
  rewards; for other arms one scalar-parameter draw per arm) and one segmented reduction. Not
  pull-consistent: the numbers depend on the request, only their law is fixed. Requests above 2²²
  rewards are processed in blocks of whole trials to bound memory.

Stream scheme (counter-based)
-----------------------------
``streams(rng, n_trials)`` turns ``rng`` into one :class:`numpy.random.SeedSequence` and takes
``n_trials · n_arms`` 64-bit words from its ``generate_state`` in row-major (trial, arm) order: word
``i·n_arms + a`` is the **key** of trial ``i``, arm ``a``. (``generate_state`` is prefix-stable, so a
trial's keys do not depend on how many trials follow it.) The k-th pull (k = 0, 1, ...) of that arm
is the SplitMix64 output (Steele, Lea & Flood 2014) at counter ``k``::

    z = key + (k + 1)·γ  (mod 2⁶⁴),  γ = 0x9E3779B97F4A7C15
    z = (z ⊕ (z ≫ 30))·0xBF58476D1CE4E5B9;  z = (z ⊕ (z ≫ 27))·0x94D049BB133111EB;  z = z ⊕ (z ≫ 31)
    u = (⌊z / 2¹¹⌋ + ½)·2⁻⁵³  ∈ (0, 1)

and the reward is ``F_a⁻¹(u)``, the arm's inverse CDF. A reward is therefore a pure function of
(key, arm, k): random access, no per-stream state besides a pull counter, and fully vectorised.
NumPy has no vectorised keyed counter-based generator (``numpy.random.Philox`` takes one key per
Generator object), so this small hash is written here; it is checked against an independent
integer reference in the tests. ``benchmarks/bench_envs.py`` measures it against NumPy's
``Generator.random`` and against one ``Philox`` generator per (trial, arm).

Seeding order: when an algorithm spawns (environment, algorithm, privacy-noise) streams from one
seed, the environment stream is the one passed to ``streams`` / ``sample_sums``.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from typing import Any, ClassVar, Literal, overload

import numpy as np
from numpy.typing import ArrayLike

from dpbandits._core.errors import InvalidActionError, InvalidParameterError
from dpbandits._core.rng import RNGLike, as_generator, as_seed_sequence
from dpbandits._core.typing import FloatArray, IntArray
from dpbandits._core.validation import check_array, check_finite_float, check_int

__all__ = [
    "WEYL_INCREMENT",
    "BanditEnvironment",
    "RewardStreams",
    "check_entries",
    "check_reward_bounds",
    "counter_uniform",
    "counter_uniforms",
    "mix_to_uniforms",
    "segment_sums",
]

WEYL_INCREMENT = 0x9E3779B97F4A7C15
"""γ of the Weyl states z = key + (k + 1)·γ (mod 2⁶⁴) that :func:`counter_uniforms` mixes."""

# SplitMix64 constants (Steele, Lea & Flood 2014; Vigna's reference splitmix64.c), as 0-d uint64
# arrays: a ufunc takes a 0-d array operand ~0.2 µs faster than a NumPy scalar (same arithmetic),
# which is half the cost of one pass on the few hundred values of an agent's step.
_GAMMA = np.array(WEYL_INCREMENT, dtype=np.uint64)
_MIX1 = np.array(0xBF58476D1CE4E5B9, dtype=np.uint64)
_MIX2 = np.array(0x94D049BB133111EB, dtype=np.uint64)
_SHIFT30 = np.array(30, dtype=np.uint64)
_SHIFT27 = np.array(27, dtype=np.uint64)
_SHIFT31 = np.array(31, dtype=np.uint64)
_SHIFT11 = np.array(11, dtype=np.uint64)
_ONE = np.array(1, dtype=np.uint64)
_TWO_POW_MINUS_53 = 2.0**-53


# Elements per chunk of the mixing passes: small enough to stay in cache, large enough to amortise
# the Python loop (measured by benchmarks/bench_envs.py; 2¹⁶–2¹⁸ are equally good).
_CHUNK = 1 << 17


def mix_to_uniforms(state: np.ndarray) -> FloatArray:
    """SplitMix64 output function applied to Weyl states ``z`` (1-d uint64, overwritten), as uniforms.

    ``mix_to_uniforms(key + (k + 1)·γ)`` is :func:`counter_uniforms` at (key, k), with γ =
    :data:`WEYL_INCREMENT`: a caller that reads counters in a fixed pattern may build the states
    by adding multiples of γ (mod 2⁶⁴) instead of going through the counters.
    """
    uniforms = np.empty(state.shape[0], dtype=np.float64)
    if state.shape[0] <= _CHUNK:  # one chunk (an agent's step: a few hundred values), no loop
        _mix_chunk(state, np.empty_like(state), uniforms)
        return uniforms
    scratch = np.empty(_CHUNK, dtype=np.uint64)
    for begin in range(0, state.shape[0], _CHUNK):
        end = min(begin + _CHUNK, state.shape[0])
        _mix_chunk(state[begin:end], scratch[: end - begin], uniforms[begin:end])
    return uniforms


def _mix_chunk(z: np.ndarray, tmp: np.ndarray, uniforms: np.ndarray) -> None:
    """:func:`mix_to_uniforms` of one chunk ``z`` (overwritten), into ``uniforms``; ``tmp`` is scratch."""
    np.right_shift(z, _SHIFT30, out=tmp)
    np.bitwise_xor(z, tmp, out=z)
    np.multiply(z, _MIX1, out=z)  # z = (z ⊕ (z ≫ 30))·0xBF58476D1CE4E5B9
    np.right_shift(z, _SHIFT27, out=tmp)
    np.bitwise_xor(z, tmp, out=z)
    np.multiply(z, _MIX2, out=z)  # z = (z ⊕ (z ≫ 27))·0x94D049BB133111EB
    np.right_shift(z, _SHIFT31, out=tmp)
    np.bitwise_xor(z, tmp, out=z)  # z = z ⊕ (z ≫ 31)
    np.right_shift(z, _SHIFT11, out=z)  # top 53 bits
    uniforms[:] = z
    uniforms += 0.5
    uniforms *= _TWO_POW_MINUS_53  # u = (⌊z / 2¹¹⌋ + ½)·2⁻⁵³ ∈ (0, 1)


def counter_uniforms(keys: ArrayLike, counters: ArrayLike) -> FloatArray:
    """Uniform(0, 1) numbers that are a pure function of (key, counter): SplitMix64 at a counter.

    Parameters
    ----------
    keys : array_like of uint64
        Stream keys.
    counters : array_like of int
        Pull indices ``k >= 0``; broadcast against ``keys``.

    Returns
    -------
    ndarray of float64
        ``u = (⌊z / 2¹¹⌋ + ½)·2⁻⁵³`` with ``z = splitmix64(key + (k + 1)·γ)``; every value lies in the
        open interval (0, 1), on the 2⁻⁵³ grid shifted by half a step.

    Examples
    --------
    >>> from dpbandits.envs.base import counter_uniforms
    >>> bool(counter_uniforms([7], [3])[0] == counter_uniforms([7, 7], [0, 3])[1])
    True
    """
    key_arr, counter_arr = np.asarray(keys, dtype=np.uint64), np.asarray(counters).astype(np.uint64)
    shape = key_arr.shape if key_arr.shape == counter_arr.shape else np.broadcast_shapes(key_arr.shape,
                                                                                        counter_arr.shape)
    if math.prod(shape) <= _SCALAR_LIMIT:  # a few values (an agent's step): Python integers, same bits
        key_list = np.broadcast_to(key_arr, shape).ravel().tolist()
        counter_list = np.broadcast_to(counter_arr, shape).ravel().tolist()
        return np.array([counter_uniform(key, counter) for key, counter in zip(key_list, counter_list, strict=True)],
                        dtype=np.float64).reshape(shape)
    if key_arr.shape != shape or counter_arr.shape != shape:
        key_arr, counter_arr = np.broadcast_arrays(key_arr, counter_arr)
    # 1-d arrays throughout, so that uint64 wrap-around is silent modular arithmetic.
    state = _weyl_states(key_arr.reshape(-1), np.array(counter_arr, ndmin=1).reshape(-1))
    return mix_to_uniforms(state).reshape(key_arr.shape)


_SCALAR_LIMIT = 16  # up to this many values, counter_uniforms computes in Python integers
_MASK64 = (1 << 64) - 1
_GAMMA_INT, _MIX1_INT, _MIX2_INT = int(_GAMMA), int(_MIX1), int(_MIX2)


def counter_uniform(key: int, counter: int) -> float:
    """One value of :func:`counter_uniforms` (bit for bit), in Python integers: for one-step callers.

    ``key`` and ``counter`` are taken modulo 2⁶⁴, as the uint64 arithmetic of the array form does.
    """
    z = (int(key) + ((int(counter) + 1) & _MASK64) * _GAMMA_INT) & _MASK64  # z = key + (k + 1)·γ
    z = ((z ^ (z >> 30)) * _MIX1_INT) & _MASK64
    z = ((z ^ (z >> 27)) * _MIX2_INT) & _MASK64
    z ^= z >> 31
    return ((z >> 11) + 0.5) * _TWO_POW_MINUS_53  # same float operations as the array form


def _weyl_states(keys: np.ndarray, counters: np.ndarray) -> np.ndarray:
    """Weyl states z = key + (k + 1)·γ (mod 2⁶⁴) of 1-d uint64 keys and 1-d int counters (a new array)."""
    state = counters.astype(np.uint64)
    np.add(state, _ONE, out=state)
    np.multiply(state, _GAMMA, out=state)  # (k + 1)·γ mod 2⁶⁴
    np.add(state, keys, out=state)  # z = key + (k + 1)·γ
    return state


def segment_sums(values: FloatArray, lengths: IntArray) -> FloatArray:
    """Sum consecutive segments of ``values`` whose lengths are ``lengths`` (zero lengths give 0).

    Parameters
    ----------
    values : ndarray of float64, shape (lengths.sum(),)
    lengths : ndarray of int, any shape
        Segment lengths in row-major order.

    Returns
    -------
    ndarray of float64, shape ``lengths.shape``
    """
    flat = lengths.reshape(-1)
    sums = np.zeros(flat.shape[0], dtype=np.float64)
    nonzero = flat > 0
    if values.size:
        starts = np.cumsum(flat) - flat
        sums[nonzero] = np.add.reduceat(values, starts[nonzero])
    return sums.reshape(lengths.shape)


def check_reward_bounds(value: Any, name: str = "reward_bounds") -> tuple[float, float]:
    """Return ``(low, high)`` as finite floats with ``low < high``."""
    try:
        low_raw, high_raw = value
    except (TypeError, ValueError):
        raise InvalidParameterError(
            f"{name} must be a pair (low, high) of finite floats; got {value!r}"
        ) from None
    low = check_finite_float(low_raw, f"{name}[0]")
    high = check_finite_float(high_raw, f"{name}[1]")
    if not low < high:
        raise InvalidParameterError(f"{name} must satisfy low < high; got ({low!r}, {high!r})")
    return low, high


def check_entries(values: np.ndarray, valid: np.ndarray, constraint: str) -> None:
    """Raise :class:`InvalidParameterError` naming the first entry of ``values`` where ``valid`` is False.

    The message is ``"{constraint}; got {value} at index {i}"``, e.g.
    ``means must be >= 0 for Uniform[0, 2μ] arms; got -0.1 at index 1``.
    """
    if not np.all(valid):
        idx = int(np.flatnonzero(~np.asarray(valid).reshape(-1))[0])
        raise InvalidParameterError(f"{constraint}; got {float(values.reshape(-1)[idx])!r} at index {idx}")


def _check_counts(counts: ArrayLike, n_arms: int, name: str = "counts") -> IntArray:
    """Return pull counts as an int64 array of shape (n_trials, n_arms) or (n_arms,), all >= 0."""
    arr = np.asarray(counts)
    if arr.dtype.kind not in "iu":
        if arr.dtype.kind == "f" and np.all(np.isfinite(arr)) and np.all(arr == np.round(arr)):
            arr = arr.astype(np.int64)
        else:
            raise InvalidParameterError(f"{name} must be an array of ints; got dtype {arr.dtype}")
    arr = arr.astype(np.int64, copy=False)
    if arr.ndim not in (1, 2) or arr.shape[-1] != n_arms:
        raise InvalidParameterError(
            f"{name} must have shape (n_trials, {n_arms}) or ({n_arms},); got {name}.shape={arr.shape}"
        )
    if arr.size and arr.min() < 0:
        raise InvalidParameterError(f"{name} must be >= 0 entrywise; got min {int(arr.min())}")
    return arr


# At most this many rewards are materialised at once (32 MiB of float64); larger requests are
# processed in blocks of whole trials (rows), which keeps memory bounded without changing the
# numbers of pull-consistent streams. A single trial above the limit is one block.
_MAX_BLOCK_VALUES = 1 << 22


def _row_blocks(counts: IntArray) -> list[slice]:
    """Consecutive row slices of ``counts`` (n_trials, n_arms), each with at most ``_MAX_BLOCK_VALUES`` pulls."""
    cumulative = np.cumsum(counts.sum(axis=1))
    blocks = []
    start, done = 0, 0
    while start < counts.shape[0]:
        stop = int(np.searchsorted(cumulative, done + _MAX_BLOCK_VALUES, side="right"))
        stop = max(stop, start + 1)
        blocks.append(slice(start, stop))
        done = int(cumulative[stop - 1])
        start = stop
    return blocks


class RewardStreams:
    """Pull-consistent reward streams of one environment for ``n_trials`` independent trials.

    Built by :meth:`BanditEnvironment.streams`; see :mod:`dpbandits.envs.base` for the scheme.
    The object keeps, per (trial, arm), how many rewards were consumed; :meth:`pull` and
    :meth:`pull_counts` return the next ones and advance the counters; :meth:`rewards_at` and
    :meth:`reward_table` read any pull by index without advancing anything.

    Attributes
    ----------
    env : BanditEnvironment
    n_trials, n_arms : int
    keys : ndarray of uint64, shape (n_trials, n_arms)
        The stream key of every (trial, arm).
    counts : ndarray of int64, shape (n_trials, n_arms)
        Rewards consumed so far (read-only view; use :meth:`reset` to rewind).
    """

    def __init__(self, env: BanditEnvironment, keys: np.ndarray) -> None:
        self.env = env
        self.keys = np.asarray(keys, dtype=np.uint64)
        self.keys.setflags(write=False)
        self.n_trials, self.n_arms = self.keys.shape
        self._counts = np.zeros(self.keys.shape, dtype=np.int64)
        self._trial_index = np.arange(self.n_trials)

    @property
    def counts(self) -> IntArray:
        """Rewards consumed so far per (trial, arm) (a read-only view)."""
        view = self._counts.view()
        view.setflags(write=False)
        return view

    def reset(self) -> None:
        """Rewind every stream to its first pull."""
        self._counts[:] = 0

    def rewards_at(self, trials: ArrayLike, arms: ArrayLike, pull_index: ArrayLike) -> FloatArray:
        """Reward of the ``pull_index``-th pull (0-based) of ``arms`` in ``trials`` (broadcast).

        Stateless: the counters are not advanced. Indices are trusted (checked by the callers).
        """
        trial_arr = np.asarray(trials, dtype=np.int64)
        arm_arr = np.asarray(arms, dtype=np.int64)
        uniforms = counter_uniforms(self.keys[trial_arr, arm_arr], pull_index)
        return self.env.rewards_from_uniforms(uniforms, np.broadcast_to(arm_arr, uniforms.shape))

    def reward_table(self, n_pulls: int) -> FloatArray:
        """The first ``n_pulls`` rewards of every (trial, arm): the reward table x[i, a, k].

        Stateless (the counters are not advanced); entry ``[i, a, k]`` is what the (k+1)-th pull of
        arm ``a`` in trial ``i`` returns.

        Parameters
        ----------
        n_pulls : int
            Pulls per arm, >= 0.

        Returns
        -------
        ndarray of float64, shape (n_trials, n_arms, n_pulls)
        """
        n = check_int(n_pulls, "n_pulls", minimum=0)
        return self.rewards_at(
            self._trial_index[:, None, None],
            np.arange(self.n_arms)[None, :, None],
            np.arange(n)[None, None, :],
        )

    def pull(self, arms: ArrayLike, trials: ArrayLike | None = None) -> FloatArray:
        """Pull one arm in each trial and return its reward (batched single pulls).

        Parameters
        ----------
        arms : int or array_like of int, shape (n_trials,) or (len(trials),)
            The arm pulled in each trial (an int: the same arm in every pulling trial).
        trials : array_like of int, optional
            The trials that pull (distinct indices); default all trials in order.

        Returns
        -------
        ndarray of float64
            One reward per pulling trial.

        Raises
        ------
        InvalidActionError
            If an arm is outside ``0 .. n_arms-1``.
        InvalidParameterError
            If the shapes disagree or a trial index is invalid or repeated.
        """
        if trials is None:
            trial_arr = self._trial_index
        else:
            trial_arr = check_array(trials, "trials", ndim=1, dtype=np.int64, allow_empty=True)
            if trial_arr.size and (trial_arr.min() < 0 or trial_arr.max() >= self.n_trials):
                raise InvalidParameterError(
                    f"trials must lie in [0, {self.n_trials - 1}]; got min {int(trial_arr.min())}, "
                    f"max {int(trial_arr.max())}"
                )
            if np.unique(trial_arr).size != trial_arr.size:
                raise InvalidParameterError("trials must be distinct (one pull per trial per call)")
        arm_arr = self.env.check_arms(arms, "arms")
        if arm_arr.ndim == 0:  # one arm for every pulling trial
            arm_arr = np.full(trial_arr.shape, int(arm_arr), dtype=np.int64)
        if arm_arr.shape != trial_arr.shape:
            raise InvalidParameterError(
                f"arms must have shape {trial_arr.shape} (one arm per pulling trial); got arms.shape={arm_arr.shape}"
            )
        cells = trial_arr * self.n_arms + arm_arr  # flat (trial, arm) index
        flat_counts = self._counts.reshape(-1)
        pull_index = flat_counts[cells]
        uniforms = mix_to_uniforms(_weyl_states(self.keys.reshape(-1)[cells], pull_index))
        rewards = self.env.rewards_from_uniforms(uniforms, arm_arr)
        flat_counts[cells] = pull_index + 1
        return rewards

    @overload
    def pull_counts(self, counts: ArrayLike, *, return_values: Literal[False] = ...) -> FloatArray: ...

    @overload
    def pull_counts(
        self, counts: ArrayLike, *, return_values: Literal[True]
    ) -> tuple[FloatArray, FloatArray]: ...

    def pull_counts(self, counts: ArrayLike, *, return_values: bool = False) -> Any:
        """Take the next ``counts[i, a]`` rewards of every arm ``a`` in every trial ``i``.

        Parameters
        ----------
        counts : array_like of int, shape (n_trials, n_arms)
            Number of pulls per (trial, arm), >= 0.
        return_values : bool, default False
            Also return the raw rewards.

        Returns
        -------
        sums : ndarray of float64, shape (n_trials, n_arms)
            Sum of the rewards of each (trial, arm).
        values : ndarray of float64, shape (counts.sum(),)
            Only with ``return_values``: the rewards in row-major (trial, arm, pull) order, i.e. the
            rewards of (i, a) are ``values[offset : offset + counts[i, a]]`` with ``offset`` the sum of
            the counts before (i, a) in row-major order. They equal, bit for bit, what the same pulls
            done one at a time with :meth:`pull` return.
        """
        count_arr = _check_counts(counts, self.n_arms)
        if count_arr.shape != self._counts.shape:
            raise InvalidParameterError(
                f"counts must have shape {self._counts.shape}; got counts.shape={count_arr.shape}"
            )
        sums = np.empty(count_arr.shape, dtype=np.float64)
        blocks = []
        for rows in _row_blocks(count_arr):
            block_values = self._values(rows, count_arr[rows])
            sums[rows] = segment_sums(block_values, count_arr[rows])
            if return_values:
                blocks.append(block_values)
        self._counts += count_arr
        if return_values:
            return sums, (np.concatenate(blocks) if blocks else np.empty(0, dtype=np.float64))
        return sums

    def _values(self, rows: slice, counts: IntArray) -> FloatArray:
        """Rewards of the next ``counts`` pulls of the trials ``rows``, in row-major (trial, arm, pull) order."""
        flat_counts = counts.reshape(-1)
        total = int(flat_counts.sum())
        # Pull j of the flat batch (row-major cells) is pull k = consumed + j − start of its cell, so
        # its Weyl state is key + (k + 1)·γ = [key + (consumed + 1 − start)·γ] + j·γ  (mod 2⁶⁴).
        segment_starts = (np.cumsum(flat_counts) - flat_counts).astype(np.uint64)
        cell_offsets = self._counts[rows].reshape(-1).astype(np.uint64) + np.uint64(1)
        np.subtract(cell_offsets, segment_starts, out=cell_offsets)
        np.multiply(cell_offsets, _GAMMA, out=cell_offsets)
        np.add(cell_offsets, self.keys[rows].reshape(-1), out=cell_offsets)
        state = np.arange(total, dtype=np.uint64)
        np.multiply(state, _GAMMA, out=state)
        state += np.repeat(cell_offsets, flat_counts)
        uniforms = mix_to_uniforms(state)
        arms = np.repeat(np.tile(np.arange(self.n_arms), counts.shape[0]), flat_counts)
        return self.env.rewards_from_uniforms(uniforms, arms)

    def __repr__(self) -> str:
        return f"RewardStreams(env={self.env!r}, n_trials={self.n_trials}, pulls={int(self._counts.sum())})"


class BanditEnvironment(ABC):
    """A stochastic multi-armed bandit with bounded rewards (the base of every environment).

    Subclasses set ``means`` and ``reward_bounds`` through :meth:`_init_arms` and implement the
    arm distributions: :meth:`rewards_from_uniforms` (inverse CDF, for pull-consistent streams),
    :meth:`variances`, and optionally faster exact sampling (:meth:`_fill_arm` or :meth:`_sample_sums`).

    Attributes
    ----------
    name : str
        Registry name of the environment family.
    n_arms : int
    means : ndarray of float64, shape (n_arms,)
        Exact expected rewards.
    reward_bounds : tuple of float
        ``(low, high)``: every reward lies in this interval (what sensitivity computations use).
    """

    name: ClassVar[str] = "abstract"
    kind: ClassVar[str] = "mab"

    means: FloatArray
    reward_bounds: tuple[float, float]

    # Array attributes kept read-only (also after unpickling).
    _read_only_arrays: ClassVar[tuple[str, ...]] = ("means",)

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        for name in self._read_only_arrays:
            getattr(self, name).setflags(write=False)

    def _init_arms(self, means: ArrayLike, reward_bounds: tuple[float, float]) -> None:
        mean_arr = check_array(means, "means", ndim=1)
        low, high = reward_bounds
        check_entries(
            mean_arr,
            (mean_arr >= low) & (mean_arr <= high),
            f"means must lie in the reward bounds [{low!r}, {high!r}]",
        )
        self.means = np.array(mean_arr, dtype=np.float64)
        self.means.setflags(write=False)
        self.reward_bounds = (float(low), float(high))

    # ------------------------------------------------------------------ instance quantities
    @property
    def n_arms(self) -> int:
        """Number of arms K."""
        return int(self.means.shape[0])

    @property
    def best_arm(self) -> int:
        """Index of the arm with the largest mean (lowest index among ties; see :attr:`best_arms`)."""
        return int(np.argmax(self.means))

    @property
    def best_arms(self) -> IntArray:
        """Indices of every arm whose mean equals the largest mean."""
        return np.flatnonzero(self.means == self.means.max()).astype(np.int64)

    @property
    def gaps(self) -> FloatArray:
        """Suboptimality gaps Δ_a = μ* − μ_a (0 for the best arm)."""
        return np.asarray(self.means.max() - self.means, dtype=np.float64)

    @property
    @abstractmethod
    def variances(self) -> FloatArray:
        """Exact variance of each arm's reward distribution."""

    def describe(self) -> dict[str, Any]:
        """A JSON-friendly description: family, parameters and instance quantities."""
        return {
            "name": self.name,
            "kind": self.kind,
            "n_arms": self.n_arms,
            "means": self.means.tolist(),
            "reward_bounds": list(self.reward_bounds),
            "best_arm": self.best_arm,
            "unique_best_arm": bool(self.best_arms.size == 1),
            "params": self._params(),
        }

    @abstractmethod
    def _params(self) -> dict[str, Any]:
        """The constructor parameters as plain JSON values."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}(n_arms={self.n_arms}, best_arm={self.best_arm})"

    def check_arms(self, arms: ArrayLike, name: str = "arms") -> IntArray:
        """Return ``arms`` as an int64 array, raising :class:`InvalidActionError` outside 0..K-1."""
        arr = np.asarray(arms)
        if arr.dtype.kind not in "iu":
            raise InvalidActionError(f"{name} must be ints in [0, {self.n_arms - 1}]; got dtype {arr.dtype}")
        arr = arr.astype(np.int64, copy=False)
        if arr.size and (arr.min() < 0 or arr.max() >= self.n_arms):
            bad = arr[(arr < 0) | (arr >= self.n_arms)].reshape(-1)[0]
            raise InvalidActionError(f"{name} must be ints in [0, {self.n_arms - 1}]; got {int(bad)}")
        return arr

    # ------------------------------------------------------------------ distributions
    @abstractmethod
    def rewards_from_uniforms(self, uniforms: FloatArray, arms: IntArray) -> FloatArray:
        """Map uniforms ``u ∈ (0, 1)`` to rewards of ``arms`` by the inverse CDF, elementwise."""

    def _fill_arm(self, arm: int, out: FloatArray, generator: np.random.Generator) -> None:
        """Write fresh i.i.d. rewards of ``arm`` into ``out`` (default: inverse CDF of uniforms)."""
        uniforms = np.empty(out.shape[0], dtype=np.float64)
        generator.random(out=uniforms)
        out[:] = self.rewards_from_uniforms(uniforms, np.full(out.shape[0], arm, dtype=np.int64))

    def _sample_sums(self, counts: IntArray, generator: np.random.Generator) -> FloatArray:
        """Exact sums for a validated (n_trials, n_arms) count array; subclasses may specialise.

        Rewards are laid out arm-major, so each arm's rewards are one contiguous slice filled by one
        call with scalar parameters (:meth:`_fill_arm`), then reduced by one segmented sum.
        """
        arm_major = np.ascontiguousarray(counts.T)  # (n_arms, n_trials)
        per_arm = arm_major.sum(axis=1)
        values = np.empty(int(per_arm.sum()), dtype=np.float64)
        ends = np.cumsum(per_arm)
        for arm in np.flatnonzero(per_arm):
            self._fill_arm(int(arm), values[ends[arm] - per_arm[arm] : ends[arm]], generator)
        return np.ascontiguousarray(segment_sums(values, arm_major).T)

    # ------------------------------------------------------------------ public sampling
    def sample_sums(self, counts: ArrayLike, rng: RNGLike = None) -> FloatArray:
        """Sums of ``counts[i, a]`` fresh i.i.d. rewards of arm ``a``, for every trial ``i``.

        Distribution-exact (no normal approximation) and fast, but **not pull-consistent**: use
        :meth:`streams` when two algorithms or two forms of one algorithm must see the same rewards.

        Parameters
        ----------
        counts : array_like of int, shape (n_trials, n_arms) or (n_arms,)
            Number of rewards to draw per (trial, arm), >= 0.
        rng : int, SeedSequence, Generator or None
            The environment stream.

        Returns
        -------
        ndarray of float64, same shape as ``counts``

        Raises
        ------
        InvalidParameterError
            If ``counts`` is not an int array of the right shape or has a negative entry.
        """
        count_arr = _check_counts(counts, self.n_arms)
        generator = as_generator(rng)
        count_rows = np.atleast_2d(count_arr)
        sums = np.empty(count_rows.shape, dtype=np.float64)
        for rows in _row_blocks(count_rows):
            sums[rows] = self._sample_sums(count_rows[rows], generator)
        return sums.reshape(count_arr.shape)

    def streams(self, rng: RNGLike, n_trials: int) -> RewardStreams:
        """Pull-consistent per-(trial, arm) reward streams for ``n_trials`` trials.

        Parameters
        ----------
        rng : int, SeedSequence, Generator or None
            The environment stream. Keys are ``as_seed_sequence(rng).generate_state(n_trials·n_arms)``
            in row-major (trial, arm) order.
        n_trials : int
            Number of independent trials, >= 1.

        Returns
        -------
        RewardStreams
        """
        n = check_int(n_trials, "n_trials", minimum=1)
        seed_sequence = as_seed_sequence(rng)
        keys = seed_sequence.generate_state(n * self.n_arms, dtype=np.uint64).reshape(n, self.n_arms)
        return RewardStreams(self, keys)
