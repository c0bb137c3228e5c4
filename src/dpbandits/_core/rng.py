"""The one place where NumPy Generators and SeedSequences are built.

Every stochastic callable in dpbandits takes ``rng`` (an ``int``, a :class:`numpy.random.SeedSequence`,
a :class:`numpy.random.Generator` or ``None``) and normalises it once with :func:`as_generator`.
Independent streams come from :func:`spawn_generators` / :func:`spawn_seed_sequences`, which use
``SeedSequence.spawn`` (never ``seed + i``), in a fixed order documented at each call site.

Notes
-----
Seeded pseudo-random noise is right for *simulation*. It is not a deployment-grade source of
differential-privacy noise; use the secure noise backend (:mod:`dpbandits.privacy.noise`) there.
"""

from __future__ import annotations

from typing import TypeAlias

import numpy as np

from dpbandits._core.errors import InvalidParameterError

__all__ = [
    "RNGLike",
    "as_generator",
    "as_seed_sequence",
    "spawn_generators",
    "spawn_seed_sequences",
    "spawned_children",
]

RNGLike: TypeAlias = np.random.Generator | np.random.SeedSequence | int | None


def _check_rng_like(rng: object) -> None:
    if rng is None or isinstance(rng, np.random.Generator | np.random.SeedSequence):
        return
    if isinstance(rng, bool) or not isinstance(rng, int | np.integer):
        raise InvalidParameterError(
            "rng must be an int >= 0, a numpy SeedSequence, a numpy Generator or None; "
            f"got {type(rng).__name__} {rng!r}"
        )
    if int(rng) < 0:
        raise InvalidParameterError(f"rng must be an int >= 0 when an int; got {int(rng)}")


def as_seed_sequence(rng: RNGLike) -> np.random.SeedSequence:
    """Turn a seed-like value into a :class:`~numpy.random.SeedSequence`.

    Parameters
    ----------
    rng : int, SeedSequence, Generator or None
        ``None`` draws fresh OS entropy (recorded in ``entropy`` of the result). A Generator is
        consumed: a child sequence is spawned from its bit generator's seed sequence.

    Returns
    -------
    numpy.random.SeedSequence

    Raises
    ------
    InvalidParameterError
        If ``rng`` is of another type or a negative int.
    """
    _check_rng_like(rng)
    if isinstance(rng, np.random.SeedSequence):
        return rng
    if isinstance(rng, np.random.Generator):
        seed_seq = rng.bit_generator.seed_seq
        if isinstance(seed_seq, np.random.SeedSequence):
            (child,) = seed_seq.spawn(1)
            return child
        return np.random.SeedSequence(rng.integers(0, 2**63 - 1, size=4).tolist())
    return np.random.SeedSequence(None if rng is None else int(rng))


def as_generator(rng: RNGLike) -> np.random.Generator:
    """Normalise a seed-like value into a :class:`~numpy.random.Generator`.

    A Generator passes through unchanged, so a caller keeps control of its stream.

    Parameters
    ----------
    rng : int, SeedSequence, Generator or None

    Returns
    -------
    numpy.random.Generator

    Raises
    ------
    InvalidParameterError
        If ``rng`` is of another type or a negative int.

    Examples
    --------
    >>> from dpbandits._core.rng import as_generator
    >>> float(as_generator(7).random()) == float(as_generator(7).random())
    True
    """
    _check_rng_like(rng)
    if isinstance(rng, np.random.Generator):
        return rng
    return np.random.default_rng(rng)


def spawn_seed_sequences(rng: RNGLike, n: int) -> list[np.random.SeedSequence]:
    """Spawn ``n`` independent child seed sequences, in a fixed order.

    Parameters
    ----------
    rng : int, SeedSequence, Generator or None
    n : int
        Number of children, ``n >= 0``.

    Returns
    -------
    list of numpy.random.SeedSequence
    """
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 0:
        raise InvalidParameterError(f"n must be an int >= 0; got {n!r}")
    return as_seed_sequence(rng).spawn(int(n))


def spawned_children(rng: RNGLike, n: int, which: tuple[int, ...]) -> list[np.random.SeedSequence]:
    """The children ``which`` of ``spawn_seed_sequences(rng, n)``, building only those when ``rng`` is an int.

    A per-trial object that uses some of a fixed set of streams (an ask/tell agent needs the
    algorithm and noise streams of a simulation's three, not its environment stream) gets the same
    streams without building the others. An int seed is used once (nothing else sees its root
    sequence), so its children are built directly from their spawn keys; any other ``rng`` spawns all
    ``n``, as :func:`spawn_seed_sequences` does (a SeedSequence or Generator passed in advances by ``n``
    children either way).

    Parameters
    ----------
    rng : int, SeedSequence, Generator or None
    n : int
        Number of children the streams are spawned as, ``n >= 0``.
    which : tuple of int
        Indices of the children wanted, each in ``[0, n)``.

    Returns
    -------
    list of numpy.random.SeedSequence
        ``[spawn_seed_sequences(rng, n)[i] for i in which]`` (equal streams).
    """
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 0:
        raise InvalidParameterError(f"n must be an int >= 0; got {n!r}")
    if any(not 0 <= i < n for i in which):
        raise InvalidParameterError(f"which must hold indices in [0, {n}); got {which!r}")
    if isinstance(rng, int | np.integer) and not isinstance(rng, bool) and rng >= 0:
        entropy = int(rng)
        return [np.random.SeedSequence(entropy, spawn_key=(int(i),)) for i in which]
    children = spawn_seed_sequences(rng, n)
    return [children[i] for i in which]


def spawn_generators(rng: RNGLike, n: int) -> list[np.random.Generator]:
    """Spawn ``n`` independent Generators, in a fixed order.

    Parameters
    ----------
    rng : int, SeedSequence, Generator or None
    n : int
        Number of children, ``n >= 0``.

    Returns
    -------
    list of numpy.random.Generator
        ``spawn_generators(s, n)[i]`` is the same stream on every call with the same ``s``.

    Examples
    --------
    >>> from dpbandits._core.rng import spawn_generators
    >>> env_rng, algo_rng, noise_rng = spawn_generators(0, 3)
    """
    return [np.random.default_rng(child) for child in spawn_seed_sequences(rng, n)]
