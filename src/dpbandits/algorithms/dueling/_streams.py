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
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpbandits._core.rng import RNGLike, as_seed_sequence
from dpbandits._core.validation import check_int

__all__ = ["TrialStreams", "fresh_seed_sequence", "trial_seed_sequences", "trial_streams"]


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
