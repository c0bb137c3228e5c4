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
