"""Random streams shared by every dueling algorithm, so ask/tell agents and simulations agree.

Seeding order of one trial (fixed, documented): the trial's seed sequence is copied fresh (a
SeedSequence's ``spawn`` is stateful) and spawned into three children, in this order:

1. **environment** stream: keys of the per-pair feedback streams
   (:meth:`dpbandits.envs.dueling.UtilityDuelingEnvironment.streams`);
2. **algorithm** stream: one 64-bit key; the algorithm's own coin at round t (for example the
   random opponent) is the counter-based uniform ``counter_uniforms(key, t)``, a pure function of
   (key, t), so a simulation that looks ahead over a block of rounds and restarts the block at an
   elimination reads exactly the coins an ask/tell agent draws one by one;
3. **privacy-noise** stream: spawned once more into one child per noise consumer (for example one
   per binary-tree counter).

A simulation of ``n_trials`` trials uses ``fresh(rng).spawn(n_trials)[k]`` as trial k's sequence, so an
agent built with ``rng=trial_seed_sequences(rng, n)[k]`` and fed by ``env.streams(...)`` of the same
trial reproduces trial k of the simulation.

Counter layout of the algorithm key (uint64 counters of :func:`dpbandits.envs.base.counter_uniforms`)
--------------------------------------------------------------------------------------------------
* coins of round t: counters ``t·n + k`` for k = 0..n−1 (:func:`round_coins`; n fixed per algorithm);
* Gamma/Beta variates (:func:`counter_beta`, Double Thompson Sampling): counters with bit 62 set,
  ``2⁶² | (c << 17) | (attempt << 1) | b`` for the variate's index c < 2⁴⁵, so they never meet the coins.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import special

from dpbandits._core.errors import InvalidParameterError
from dpbandits._core.rng import RNGLike, as_seed_sequence
from dpbandits._core.typing import FloatArray
from dpbandits._core.validation import check_int
from dpbandits.envs.base import WEYL_INCREMENT, counter_uniform, counter_uniforms, mix_to_uniforms

__all__ = [
    "GAMMA_INDEX_LIMIT",
    "TrialStreams",
    "counter_beta",
    "counter_gumbel",
    "counter_standard_gamma",
    "fresh_seed_sequence",
    "round_coins",
    "trial_seed_sequences",
    "trial_streams",
]

GAMMA_INDEX_LIMIT = 1 << 45
"""Variate indices of :func:`counter_standard_gamma` must lie below this (counter layout above)."""
_SMALL_GAMMA_BATCH = 2048  # up to this many variates, two attempts in the first pass (see _standard_gamma)
_ATTEMPT_BITS = 16  # attempts per variate: acceptance >= 0.95 each, so 2¹⁶ attempts are never all used
_MASK64 = (1 << 64) - 1
# Weyl states of the Gamma uniforms (see _gamma_origins): z = key + (counter + 1)·γ (mod 2⁶⁴) with
# counter = 2⁶² + index·2¹⁷ + 2a + b (index < 2⁴⁵, 2a + b < 2¹⁷: the | of the layout is a +), so
# z = origin + (2a + b)·γ where origin = index·(2¹⁷·γ) + (key + (2⁶² + 1)·γ)
_ORIGIN_OFFSET = ((1 << 62) + 1) * WEYL_INCREMENT & _MASK64  # (2⁶² + 1)·γ mod 2⁶⁴
_INDEX_STRIDE = np.array((WEYL_INCREMENT << (_ATTEMPT_BITS + 1)) & _MASK64, dtype=np.uint64)  # 2¹⁷·γ mod 2⁶⁴
_WEYL_GAMMA = np.array(WEYL_INCREMENT, dtype=np.uint64)
_WEYL_STEPS = np.arange(16, dtype=np.uint64) * _WEYL_GAMMA  # k·γ mod 2⁶⁴: the state offset of uniform k


def fresh_seed_sequence(rng: RNGLike) -> np.random.SeedSequence:
    """A copy of ``as_seed_sequence(rng)`` that has spawned no children yet."""
    seq = as_seed_sequence(rng)
    return np.random.SeedSequence(seq.entropy, spawn_key=seq.spawn_key, pool_size=seq.pool_size)


def trial_seed_sequences(rng: RNGLike, n_trials: int) -> list[np.random.SeedSequence]:
    """The seed sequences of trials 0..n_trials−1 (``spawn(n)[k]`` does not depend on n)."""
    return fresh_seed_sequence(rng).spawn(check_int(n_trials, "n_trials", minimum=1))


@dataclass(frozen=True)
class TrialStreams:
    """The three streams of one trial.

    Attributes
    ----------
    environment : numpy.random.SeedSequence
        Seed of the feedback streams.
    algorithm_key : numpy.uint64
        Key of the algorithm's counter-based coins.
    noise : numpy.random.SeedSequence
        Seed of the privacy noise (spawn it into one child per consumer).
    """

    environment: np.random.SeedSequence
    algorithm_key: np.uint64
    noise: np.random.SeedSequence


def trial_streams(rng: RNGLike) -> TrialStreams:
    """Split one trial's seed into (environment, algorithm, privacy-noise), in that order."""
    env_seq, algo_seq, noise_seq = fresh_seed_sequence(rng).spawn(3)
    key = algo_seq.generate_state(1, dtype=np.uint64)[0]
    return TrialStreams(environment=env_seq, algorithm_key=np.uint64(key), noise=noise_seq)


def round_coins(keys: np.ndarray, t: int, per_round: int, count: int | None = None) -> FloatArray:
    """The coins of round t for every trial: uniforms at counters t·n + k, shape (n_trials, count).

    ``per_round`` is n, the coins a round owns; ``count`` (default n) reads only its first ones.
    """
    keys = np.asarray(keys, dtype=np.uint64)
    count = per_round if count is None else count
    first = t * per_round
    if keys.shape == (1,) and count <= 16:  # one trial's few coins (an agent's step): the same numbers, no arrays
        key = int(keys[0])
        return np.array([[counter_uniform(key, first + k) for k in range(count)]])
    return counter_uniforms(keys[:, None], first + np.arange(count)[None, :])


def counter_gumbel(keys: np.ndarray, t: int, per_round: int) -> FloatArray:
    """Standard Gumbel variates −ln(−ln u) from the coins of round t (inverse CDF), shape (n_trials, n)."""
    return np.asarray(-np.log(-np.log(round_coins(keys, t, per_round))))


def counter_standard_gamma(keys: np.ndarray, indices: np.ndarray, shape: np.ndarray) -> FloatArray:
    """Gamma(shape, 1) variates (shape >= 1) that are pure functions of (key, index).

    Marsaglia & Tsang's rejection method: with d = shape − ⅓ and c = 1/√(9d), attempt a draws
    x = Φ⁻¹(u₁) and accepts d·v, v = (1 + c·x)³, iff v > 0 and ln u₂ < x²/2 + d − d·v + d·ln v, where
    u₁, u₂ are the uniforms at counters ``2⁶² | (index << 17) | (a << 1) | {0, 1}``. The attempts of
    one variate are read in order until one is accepted, so the variate does not depend on which
    other variates are drawn with it (ask/tell agents and batched simulations agree exactly).

    Parameters
    ----------
    keys, indices, shape : array_like, broadcast together
        Stream keys (uint64), variate indices (0 <= index < 2⁴⁵) and shapes (>= 1).

    References
    ----------
    G. Marsaglia and W. W. Tsang, "A simple method for generating gamma variables", ACM TOMS 26(3),
    2000.
    """
    key_arr, index_arr, shape_arr = np.broadcast_arrays(
        np.asarray(keys, dtype=np.uint64), np.asarray(indices, dtype=np.int64), np.asarray(shape, dtype=np.float64)
    )
    _check_gamma_arguments(index_arr, shape_arr, "shape")
    return _standard_gamma(key_arr.ravel(), index_arr.ravel(), shape_arr.ravel()).reshape(shape_arr.shape)


def _check_gamma_arguments(indices: np.ndarray, shapes: np.ndarray, name: str) -> None:
    if indices.size and (indices.min() < 0 or indices.max() >= GAMMA_INDEX_LIMIT):
        raise InvalidParameterError(f"indices must lie in [0, 2**45); got range [{indices.min()}, {indices.max()}]")
    if shapes.size and not shapes.min() >= 1.0:
        raise InvalidParameterError(f"{name} must be >= 1; got min {shapes.min()!r}")


def _gamma_origins(keys: np.ndarray, flat_indices: np.ndarray) -> np.ndarray:
    """Weyl origins (1-d uint64) of Gamma variates: attempt a's uniform b has state origin + (2a + b)·γ.

    ``keys`` is one 0-d key or a 1-d array as long as ``flat_indices`` (int64, 0 <= index < 2⁴⁵).
    """
    origin = flat_indices.astype(np.uint64)
    origin *= _INDEX_STRIDE  # index·2¹⁷·γ
    if keys.ndim == 0:
        origin += np.array((int(keys) + _ORIGIN_OFFSET) & _MASK64, dtype=np.uint64)
    else:
        origin += keys
        origin += np.array(_ORIGIN_OFFSET, dtype=np.uint64)
    return origin


def _standard_gamma(flat_keys: np.ndarray, flat_indices: np.ndarray, flat_shape: np.ndarray) -> FloatArray:
    """:func:`counter_standard_gamma` of checked 1-d arrays of equal length (uint64, int64, float64)."""
    return _standard_gamma_at(_gamma_origins(flat_keys, flat_indices), flat_shape)


def _standard_gamma_at(origin: np.ndarray, flat_shape: np.ndarray) -> FloatArray:
    """Gamma(shape, 1) variates of the Weyl origins of :func:`_gamma_origins` (1-d, as long as ``flat_shape``)."""
    d = flat_shape - 1.0 / 3.0  # d = a − ⅓
    c = 1.0 / np.sqrt(9.0 * d)  # c = 1/√(9d)
    out = np.empty(flat_shape.size)
    pending: np.ndarray | None = None  # None: every variate
    # attempts are evaluated in blocks (the first accepted one is taken, whatever the blocks), then
    # four at a time for the few left. Each attempt is accepted with probability >= 0.95: a large
    # batch evaluates one attempt first (the few rejected ones go on, ~3x faster at 5000 variates);
    # a small one (an agent's step) two, which almost always ends in one pass of fixed cost
    first_attempt, block = 0, (1 if flat_shape.size > _SMALL_GAMMA_BATCH else 2)
    while True:
        if first_attempt + block > 1 << _ATTEMPT_BITS:  # probability < 0.05^(2^16): never in practice
            raise InvalidParameterError("shape gave no accepted Gamma attempt in 2**16 tries; it must be >= 1")
        if pending is None:
            origins, dp, cp = origin[:, None], d[:, None], c[:, None]
        else:
            origins, dp, cp = origin[pending, None], d[pending, None], c[pending, None]
        steps = _WEYL_STEPS[2 * first_attempt: 2 * (first_attempt + block)] if first_attempt < 4 else (
            np.arange(2 * first_attempt, 2 * (first_attempt + block), dtype=np.uint64) * _WEYL_GAMMA)
        uniforms = mix_to_uniforms((origins + steps).reshape(-1)).reshape(-1, block, 2)
        x = special.ndtri(uniforms[:, :, 0])
        v = (1.0 + cp * x) ** 3  # v = (1 + c·x)³
        positive = v > 0
        # ln v only where v > 0 (elsewhere the attempt is rejected whatever the right side is)
        accept = positive & (np.log(uniforms[:, :, 1]) < 0.5 * x * x + dp - dp * v + dp * np.log(np.where(positive, v, 1.0)))
        if block == 2:  # the first accepted of two attempts (the second if neither: not found, drawn again)
            value = np.where(accept[:, 0], v[:, 0], v[:, 1])
            value *= dp[:, 0]
            found = accept[:, 0] | accept[:, 1]
        else:
            chosen = np.argmax(accept, axis=1)
            rows = np.arange(chosen.size)
            found = accept[rows, chosen]
            value = dp[:, 0] * v[rows, chosen]
        if pending is None:
            if found.all():
                return value
            out[:] = value
            pending = np.flatnonzero(~found)
        else:
            out[pending] = value
            pending = pending[~found]
            if not pending.size:
                return out
        first_attempt, block = first_attempt + block, 4


def counter_beta(keys: np.ndarray, indices: np.ndarray, a: np.ndarray, b: np.ndarray, *,
                 check: bool = True) -> FloatArray:
    """Beta(a, b) variates (a, b >= 1) as G_a/(G_a + G_b) of two :func:`counter_standard_gamma` draws.

    Variate ``index`` uses the Gamma indices 2·index (for a) and 2·index + 1 (for b), so ``index``
    must lie below 2⁴⁴. ``check=False`` skips that check and a, b >= 1, for a caller whose indices
    and shapes are valid by construction (Double Thompson Sampling checks its horizon once, at
    construction, and its shapes are win counts + 1).
    """
    key_arr, index_arr = np.asarray(keys, dtype=np.uint64), np.asarray(indices, dtype=np.int64)
    a_arr, b_arr = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    # one key for all (an agent's step) stays a 0-d array: it broadcasts inside the Gamma draws
    if not (index_arr.shape == a_arr.shape == b_arr.shape and key_arr.shape in ((), index_arr.shape)):
        key_arr, index_arr, a_arr, b_arr = np.broadcast_arrays(key_arr, index_arr, a_arr, b_arr)
    flat_index = index_arr.ravel()
    shapes = np.concatenate([a_arr.ravel(), b_arr.ravel()])
    if check:
        _check_gamma_arguments(2 * flat_index + 1, shapes, "shape")  # the Gamma shapes a and b
    origin_a = _gamma_origins(key_arr if key_arr.ndim == 0 else key_arr.ravel(), 2 * flat_index)  # Gamma index 2·index
    both = _standard_gamma_at(np.concatenate([origin_a, origin_a + _INDEX_STRIDE]), shapes)  # and 2·index + 1
    g_a, g_b = both[: flat_index.size], both[flat_index.size:]
    return np.asarray(g_a / (g_a + g_b)).reshape(index_arr.shape)
