"""Vectorised binary-tree counting for simulations: all prefix sums at once, and lazy tables of errors.

Both use the node-noise convention of the streaming counters (:mod:`dpbandits.privacy.counters`,
which re-exports every name here), so the three forms agree exactly given the same node noise.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpbandits._core.errors import InvalidParameterError
from dpbandits._core.rng import RNGLike, as_generator
from dpbandits._core.validation import (
    check_array,
    check_int,
)
from dpbandits.privacy._tree_arithmetic import binary_tree_node_scale
from dpbandits.privacy.noise import (
    NumpyNoise,
    discrete_laplace_from_uniforms,
)

__all__ = [
    "TreeNoiseTable",
    "binary_tree_prefix_sums",
]


@lru_cache(maxsize=32)
def _popcount_groups(n: int) -> tuple[tuple[NDArray[np.int64], NDArray[np.int64]], ...]:
    """For t = 1..n grouped by popcount (>= 2): (t − 1, parent(t) − 1) with parent(t) = t & (t − 1).

    Processing the groups in order of increasing popcount evaluates e_t = η_t + e_{parent(t)} with
    every parent already computed; popcount-1 times (powers of two) have parent 0 and e_t = η_t.
    """
    times = np.arange(1, n + 1, dtype=np.int64)
    parents = times & (times - 1)
    popcounts = np.zeros(n, dtype=np.int64)
    tmp = times.copy()
    while np.any(tmp):
        popcounts += tmp & 1
        tmp >>= 1
    groups = []
    for p in range(2, int(popcounts.max(initial=1)) + 1):
        sel = times[popcounts == p]
        groups.append((sel - 1, parents[sel - 1] - 1))
    return tuple(groups)


def _errors_from_node_noise(node_noise: NDArray[np.float64]) -> NDArray[np.float64]:
    """e_t = η_t + e_{t & (t−1)} along the last axis (time t = 1..T), with e_0 = 0."""
    errors = node_noise + 0.0  # popcount-1 times: e_t = η_t + e_0, same association as streaming
    for idx, parent_idx in _popcount_groups(node_noise.shape[-1]):
        errors[..., idx] = node_noise[..., idx] + errors[..., parent_idx]
    return errors


def binary_tree_prefix_sums(
    values: ArrayLike,
    epsilon: float,
    sensitivity: float = 1.0,
    rng: RNGLike = None,
    *,
    horizon: int | None = None,
    node_noise: ArrayLike | None = None,
    integer: bool = False,
) -> NDArray[np.float64]:
    """All T noisy prefix sums of many independent streams at once (vectorised binary mechanism).

    Simulation noise: seeded NumPy draws (not a deployment release; deploy with
    :class:`~dpbandits.privacy.counters.BinaryTreeCounter` or :class:`~dpbandits.privacy.counters.BinaryTreeCounterBank`, secure by default).

    Parameters
    ----------
    values : array_like of shape (..., T)
        Independent streams (batch dimensions first, time last).
    epsilon : float
        ε > 0 per stream, or ``inf`` (exact prefix sums).
    sensitivity : float, default 1.0
        Δ, the most one element changes between neighbouring streams.
    rng : int, SeedSequence, Generator or None
        Seed of the node noise. The node noise is drawn as one array of shape ``values.shape`` in
        row-major order, so stream k gets the same noise as a :class:`~dpbandits.privacy.counters.BinaryTreeCounter` that
        draws after the counters of streams 0..k−1 from the same Generator.
    horizon : int, optional
        The declared horizon that sets L (default T = ``values.shape[-1]``; must be >= T).
    node_noise : array_like of shape (..., T), optional
        Explicit node noise η (η[..., t−1] belongs to the node ending at t); overrides ``rng``.
        For audits and equivalence tests.
    integer : bool, default False
        Discrete Laplace node noise (integer streams), drawn as
        :meth:`~dpbandits.privacy.noise.NumpyNoise.discrete_laplace` does.

    Returns
    -------
    ndarray of shape (..., T)
        c_t = Σ_{s≤t} v_s + e_t with e_t = η_t + e_{t & (t−1)}; O(T) work per stream.

    Privacy
    -------
    Each stream's releases are ε-DP for a change of one of its elements by at most Δ.

    References
    ----------
    Chan, Shi & Song (2011), Algorithm 2.

    Examples
    --------
    >>> from dpbandits.privacy.counters import binary_tree_prefix_sums
    >>> binary_tree_prefix_sums([[1, 2, 3]], float("inf")).tolist()
    [[1.0, 3.0, 6.0]]
    """
    v = check_array(values, "values", ndim=tuple(range(1, 33)))
    n_steps = v.shape[-1]
    declared = n_steps if horizon is None else check_int(horizon, "horizon", minimum=1)
    if declared < n_steps:
        raise InvalidParameterError(
            f"horizon must be >= the stream length values.shape[-1]={n_steps}; got {declared}"
        )
    scale = binary_tree_node_scale(declared, epsilon, sensitivity)
    if node_noise is not None:
        eta = check_array(node_noise, "node_noise")
        if eta.shape != v.shape:
            raise InvalidParameterError(
                f"node_noise must have the shape of values {v.shape}; got node_noise.shape={eta.shape}"
            )
    elif scale == 0.0:
        eta = np.zeros_like(v)
    elif integer:
        eta = NumpyNoise(rng).discrete_laplace(scale, size=v.shape).astype(np.float64)
    else:
        eta = NumpyNoise(rng).laplace(scale, size=v.shape)
    return np.cumsum(v, axis=-1) + _errors_from_node_noise(eta)


class TreeNoiseTable:
    """Error sequences e_t of many binary-tree counters, drawn lazily by chunks of time.

    Counter k draws its node noise η_1, η_2, … one value per time step from its own Generator, in
    time order, exactly as a :class:`~dpbandits.privacy.counters.BinaryTreeCounter` seeded with the same Generator does; so a
    release ``exact_prefix_sum + errors(...)`` equals that counter's release (bit for bit for
    integer streams with ``integer=True``). Simulation noise: seeded NumPy draws, not a deployment
    release. Windows of
    times may be requested repeatedly (for example after a vectorised simulation has to restart a
    block at an elimination round), as long as windows never move backwards past a discarded chunk.

    Parameters
    ----------
    horizon : int
        T >= 1 of every counter.
    epsilon : float
        ε per counter (``inf``: all errors are 0 and no noise is drawn).
    generators : sequence of numpy.random.Generator
        One node-noise stream per counter.
    sensitivity : float, default 1.0
        Δ per counter.
    chunk : int, default 16384
        Chunk length (rounded up to a power of two).
    integer : bool, default False
        Discrete Laplace node noise (integer streams), two uniforms per node as
        :meth:`~dpbandits.privacy.noise.NumpyNoise.discrete_laplace` draws them.

    Privacy
    -------
    Same as :class:`~dpbandits.privacy.counters.BinaryTreeCounter`, per counter.

    References
    ----------
    Chan, Shi & Song (2011), Algorithm 2.
    """

    def __init__(
        self,
        horizon: int,
        epsilon: float,
        generators: Sequence[np.random.Generator],
        sensitivity: float = 1.0,
        *,
        chunk: int = 16384,
        integer: bool = False,
    ) -> None:
        self.horizon = check_int(horizon, "horizon", minimum=1)
        self.scale = binary_tree_node_scale(self.horizon, epsilon, sensitivity)
        self.integer = bool(integer)
        self._generators = [as_generator(g) for g in generators]
        if not self._generators:
            raise InvalidParameterError("generators must hold at least one Generator; got 0")
        size = check_int(chunk, "chunk", minimum=1)
        self.chunk = 1 << (size - 1).bit_length()
        self.n_counters = len(self._generators)
        self._live = np.ones(self.n_counters, dtype=bool)
        self._chunks: dict[int, NDArray[np.float64]] = {}
        self._next_chunk = 0
        self._lowest_kept = 0
        # e at the times m·chunk (m = 0, 1, …): the only values later chunks refer back to
        self._at_multiples: list[NDArray[np.float64]] = [np.zeros(self.n_counters)]

    def retire(self, counter: int) -> None:
        """Stop drawing noise for ``counter`` (its future errors become NaN)."""
        self._live[check_int(counter, "counter", minimum=0, maximum=self.n_counters - 1)] = False

    def errors(self, start: int, stop: int) -> NDArray[np.float64]:
        """e_t for times t = start, …, stop − 1 (1-based, half-open) of every counter.

        Returns
        -------
        ndarray of shape (n_counters, stop − start)
            Rows of retired counters hold NaN for times computed after retirement.
        """
        start = check_int(start, "start", minimum=1)
        stop = check_int(stop, "stop", minimum=start, maximum=self.horizon + 1)
        if stop == start:
            return np.zeros((self.n_counters, 0))
        first, last = start // self.chunk, (stop - 1) // self.chunk  # chunk c holds times [cC, (c+1)C)
        if first < self._lowest_kept:
            raise InvalidParameterError(
                f"start must be >= {max(1, self._lowest_kept * self.chunk)} (earlier chunks were "
                f"discarded); got {start}"
            )
        for c in [c for c in self._chunks if c < first]:
            del self._chunks[c]
        self._lowest_kept = first
        while self._next_chunk <= last:
            self._compute_chunk(self._next_chunk)
        if first == last:
            window = self._chunks[first]
        else:
            window = np.concatenate([self._chunks[c] for c in range(first, last + 1)], axis=1)
        offset = first * self.chunk
        return window[:, start - offset : stop - offset]

    def _compute_chunk(self, c: int) -> None:
        """Compute e for times c·C … (c+1)·C − 1 (C = chunk; capped at T), drawing η in time order.

        Time c·C (a multiple of C) has its parent at an earlier multiple of C; every other time
        c·C + r (0 < r < C) decomposes as c·C plus the nodes of r, so, going down the levels j of
        r from the highest, e ← η_{node of level j} + e on the times whose bit j is set: the same
        association as the streaming recurrence e_t = η_t + e_{t & (t−1)}.
        """
        size = self.chunk
        first_time = c * size
        n_draws = min(size, self.horizon + 1 - first_time) - (1 if c == 0 else 0)  # no η_0
        eta = np.zeros((self.n_counters, size))
        if self.scale != 0.0:
            offset = 1 if c == 0 else 0
            for k in np.flatnonzero(self._live):
                generator = self._generators[k]
                eta[k, offset : offset + n_draws] = (
                    discrete_laplace_from_uniforms(generator.random((n_draws, 2)), self.scale)
                    if self.integer else generator.laplace(0.0, self.scale, size=n_draws)
                )
        if c == 0:
            base = np.zeros(self.n_counters)  # e_0 = 0
        else:
            parent = first_time & (first_time - 1)
            base = eta[:, 0] + self._at_multiples[parent // size]  # e_{cC} = η_{cC} + e_{parent}
            self._at_multiples.append(base)
        ext = np.repeat(base[:, None], size, axis=1)
        for level in range(size.bit_length() - 2, -1, -1):
            half = 1 << level
            if half >= 32:  # long contiguous runs: one broadcast over (counters, blocks, half)
                view = ext.reshape(self.n_counters, size // (2 * half), 2, half)
                node = eta.reshape(self.n_counters, size // (2 * half), 2, half)[:, :, 1, :1]
                view[:, :, 1, :] = node + view[:, :, 1, :]
            else:  # short runs: one strided slice per offset (avoids tiny inner loops)
                node = eta[:, half :: 2 * half]
                for offset in range(half):
                    run = ext[:, half + offset :: 2 * half]
                    run[...] = node + run
        ext[~self._live] = np.nan
        self._chunks[c] = ext
        self._next_chunk = c + 1
