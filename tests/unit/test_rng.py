from __future__ import annotations

import numpy as np
import pytest

from dpbandits._core.errors import InvalidParameterError
from dpbandits._core.rng import as_generator, as_seed_sequence, spawn_generators


def test_int_seed_reproduces(seed: int) -> None:
    assert as_generator(seed).random() == as_generator(seed).random()


def test_generator_passes_through(rng: np.random.Generator) -> None:
    assert as_generator(rng) is rng


def test_seed_sequence_accepted(seed: int) -> None:
    ss = np.random.SeedSequence(seed)
    assert as_generator(ss).random() == np.random.default_rng(np.random.SeedSequence(seed)).random()


def test_spawned_streams_are_fixed_and_distinct(seed: int) -> None:
    a = [g.random() for g in spawn_generators(seed, 3)]
    b = [g.random() for g in spawn_generators(seed, 3)]
    assert a == b
    assert len(set(a)) == 3


def test_none_gives_fresh_entropy() -> None:
    assert as_seed_sequence(None).entropy != as_seed_sequence(None).entropy


@pytest.mark.parametrize("bad", [-1, 1.5, "3", True])
def test_bad_rng_is_refused_with_a_clear_message(bad: object) -> None:
    with pytest.raises(InvalidParameterError, match="rng must be"):
        as_generator(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("which", [(1, 2), (0,), (2, 0)])
def test_spawned_children_are_the_spawned_streams(seed: int, which: tuple[int, ...]) -> None:
    from dpbandits._core.rng import spawn_seed_sequences, spawned_children

    for rng in (seed, np.random.SeedSequence(seed), np.random.default_rng(seed)):
        expected = [spawn_seed_sequences(_fresh(rng), 3)[i].generate_state(4).tolist() for i in which]
        got = [child.generate_state(4).tolist() for child in spawned_children(_fresh(rng), 3, which)]
        assert got == expected
    sequence = np.random.SeedSequence(seed)
    spawned_children(sequence, 3, which)  # a SeedSequence passed in advances by all n children, as spawn does
    assert sequence.n_children_spawned == 3
    with pytest.raises(InvalidParameterError, match="which must"):
        spawned_children(seed, 3, (3,))


def _fresh(rng: object) -> object:
    """The same seed-like value, unspent (SeedSequence.spawn and Generators are stateful)."""
    if isinstance(rng, np.random.SeedSequence):
        return np.random.SeedSequence(rng.entropy)
    if isinstance(rng, np.random.Generator):
        return np.random.default_rng(rng.bit_generator.seed_seq.entropy)  # type: ignore[attr-defined]
    return rng
