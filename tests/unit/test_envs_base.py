"""Unit tests of the environment base: the counter-based generator, streams and validation."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpbandits._core.errors import InvalidActionError, InvalidParameterError
from dpbandits.envs import base
from dpbandits.envs.base import check_reward_bounds, counter_uniforms, segment_sums
from dpbandits.envs.linear import dp_bai_instance
from dpbandits.envs.mab import BernoulliBandit, UniformBandit

MASK64 = (1 << 64) - 1


def splitmix64_reference(key: int, counter: int) -> int:
    """Plain-integer SplitMix64 (Vigna's splitmix64.c): output number ``counter`` of a stream seeded ``key``."""
    z = (key + (counter + 1) * 0x9E3779B97F4A7C15) & MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def test_splitmix64_reference_matches_the_published_first_output() -> None:
    # splitmix64.c seeded with 0 first returns 0xE220A8397B1DCDAF.
    assert splitmix64_reference(0, 0) == 0xE220A8397B1DCDAF


def test_counter_uniforms_match_the_integer_reference(rng: np.random.Generator) -> None:
    keys = rng.integers(0, 2**64, size=200, dtype=np.uint64)
    counters = rng.integers(0, 2**40, size=200)
    got = counter_uniforms(keys, counters)
    expected = [
        ((splitmix64_reference(int(k), int(c)) >> 11) + 0.5) * 2.0**-53
        for k, c in zip(keys, counters, strict=True)
    ]
    np.testing.assert_array_equal(got, np.array(expected))


def test_the_few_value_path_gives_the_same_bits_as_the_array_path(rng: np.random.Generator) -> None:
    """Up to 16 values are computed in Python integers (an agent's step); the bits must not change."""
    keys = rng.integers(0, 2**64, size=40, dtype=np.uint64)
    counters = np.concatenate([rng.integers(0, 2**62, size=38), [-1, -7]])  # negative: modulo 2**64
    whole = counter_uniforms(keys, counters)  # 40 values: the array path
    for size in (1, 3, 16):
        np.testing.assert_array_equal(counter_uniforms(keys[-size:], counters[-size:]), whole[-size:])
    assert [base.counter_uniform(int(k), int(c)) for k, c in zip(keys[:5], counters[:5], strict=True)] \
        == whole[:5].tolist()
    assert base.counter_uniform(int(keys[-1]), -7) == whole[-1]


def test_counter_uniforms_are_the_same_across_chunk_boundaries(rng: np.random.Generator) -> None:
    n = base._CHUNK * 2 + 17
    keys = rng.integers(0, 2**64, size=n, dtype=np.uint64)
    counters = rng.integers(0, 1000, size=n)
    whole = counter_uniforms(keys, counters)
    picks = np.array([0, base._CHUNK - 1, base._CHUNK, 2 * base._CHUNK, n - 1])
    np.testing.assert_array_equal(whole[picks], counter_uniforms(keys[picks], counters[picks]))
    assert whole.min() > 0.0 and whole.max() < 1.0


def test_counter_uniforms_broadcast_and_scalars() -> None:
    table = counter_uniforms(np.array([[1], [2]], dtype=np.uint64), np.arange(3))
    assert table.shape == (2, 3)
    assert counter_uniforms(np.uint64(2), 1) == table[1, 1]


def test_segment_sums_handles_empty_segments() -> None:
    lengths = np.array([[2, 0, 1], [0, 0, 3]])
    values = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    np.testing.assert_array_equal(segment_sums(values, lengths), [[3.0, 0.0, 3.0], [0.0, 0.0, 15.0]])
    np.testing.assert_array_equal(
        segment_sums(np.empty(0), np.zeros((2, 2), dtype=np.int64)), np.zeros((2, 2))
    )


@pytest.mark.parametrize(
    ("value", "match"),
    [
        ((1.0, 0.0), "low < high"),
        ((0.0, float("nan")), r"reward_bounds\[1\] must be a finite float"),
        ((0.0,), "pair"),
        (3.0, "pair"),
    ],
)
def test_check_reward_bounds_rejects(value: object, match: str) -> None:
    with pytest.raises(InvalidParameterError, match=match):
        check_reward_bounds(value)


def test_stream_keys_of_a_trial_do_not_depend_on_the_number_of_trials(seed: int) -> None:
    env = UniformBandit([0.2, 0.4, 0.3])
    few, many = env.streams(seed, 3), env.streams(seed, 10)
    np.testing.assert_array_equal(few.keys, many.keys[:3])
    np.testing.assert_array_equal(few.pull(np.array([0, 1, 2])), many.pull(np.arange(10) % 3)[:3])


def test_pull_on_a_subset_of_trials_advances_only_those(seed: int) -> None:
    env = BernoulliBandit([0.5, 0.5])
    streams = env.streams(seed, 4)
    streams.pull(np.array([1, 1]), trials=np.array([3, 0]))
    np.testing.assert_array_equal(streams.counts, [[0, 1], [0, 0], [0, 0], [0, 1]])
    with pytest.raises(ValueError, match="read-only"):
        streams.counts[0, 0] = 5
    streams.reset()
    assert int(streams.counts.sum()) == 0


def test_rewards_at_reads_without_advancing(seed: int) -> None:
    env = UniformBandit([0.3, 0.1])
    streams = env.streams(seed, 5)
    peek = streams.rewards_at(np.arange(5), 1, 0)
    np.testing.assert_array_equal(streams.pull(np.ones(5, dtype=np.int64)), peek)


def test_sample_sums_accepts_one_dimensional_counts(seed: int) -> None:
    env = BernoulliBandit([1.0, 0.0, 1.0])
    np.testing.assert_array_equal(env.sample_sums([3, 4, 0], seed), [3.0, 0.0, 0.0])


@pytest.mark.parametrize(
    ("counts", "error", "match"),
    [
        (np.array([[1, -1]]), InvalidParameterError, "counts must be >= 0 entrywise; got min -1"),
        (np.array([[1, 2, 3]]), InvalidParameterError, r"counts must have shape \(n_trials, 2\)"),
        (np.array([[0.5, 1.0]]), InvalidParameterError, "counts must be an array of ints"),
        (np.zeros((2, 2, 2), dtype=int), InvalidParameterError, "counts must have shape"),
    ],
)
def test_sample_sums_rejects_bad_counts(counts: np.ndarray, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        BernoulliBandit([0.5, 0.5]).sample_sums(counts, 0)


def test_pull_rejects_bad_arms_and_trials(seed: int) -> None:
    streams = BernoulliBandit([0.5, 0.5]).streams(seed, 3)
    with pytest.raises(InvalidActionError, match=r"arms must be ints in \[0, 1\]; got 2"):
        streams.pull(np.array([0, 2, 1]))
    with pytest.raises(InvalidActionError, match="got dtype float64"):
        streams.pull(np.array([0.0, 1.0, 1.0]))
    with pytest.raises(InvalidParameterError, match=r"arms must have shape \(3,\)"):
        streams.pull(np.array([0, 1]))
    with pytest.raises(InvalidParameterError, match="trials must be distinct"):
        streams.pull(np.array([0, 1]), trials=np.array([1, 1]))
    with pytest.raises(InvalidParameterError, match=r"trials must lie in \[0, 2\]"):
        streams.pull(np.array([0]), trials=np.array([3]))
    with pytest.raises(InvalidParameterError, match=r"counts must have shape \(3, 2\)"):
        streams.pull_counts(np.ones((2, 2), dtype=np.int64))
    assert int(streams.counts.sum()) == 0, "failed calls must not consume rewards"


def test_streams_rejects_bad_n_trials_and_rng() -> None:
    env = BernoulliBandit([0.5])
    with pytest.raises(InvalidParameterError, match="n_trials must be an int >= 1; got 0"):
        env.streams(0, 0)
    with pytest.raises(InvalidParameterError, match="rng must be"):
        env.streams("seed", 2)  # type: ignore[arg-type]


def test_row_blocks_partition_the_trials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(base, "_MAX_BLOCK_VALUES", 10)
    counts = np.array([[3, 3], [20, 0], [1, 1], [2, 2], [5, 5], [0, 0]])
    blocks = base._row_blocks(counts)
    assert [(b.start, b.stop) for b in blocks] == [(0, 1), (1, 2), (2, 4), (4, 6)]
    assert all(counts[b].sum() <= 10 or b.stop - b.start == 1 for b in blocks)


def test_blocked_requests_give_the_same_stream_values(monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    env = UniformBandit([0.3, 0.2, 0.1])
    counts = np.arange(24).reshape(8, 3) % 5
    whole_sums, whole_values = env.streams(seed, 8).pull_counts(counts, return_values=True)
    monkeypatch.setattr(base, "_MAX_BLOCK_VALUES", 6)
    blocked_sums, blocked_values = env.streams(seed, 8).pull_counts(counts, return_values=True)
    np.testing.assert_array_equal(blocked_values, whole_values)
    np.testing.assert_array_equal(blocked_sums, whole_sums)
    sums = env.sample_sums(counts, seed)
    assert sums.shape == counts.shape
    assert np.all((sums >= 0) & (sums <= counts * 2 * env.means))
    np.testing.assert_array_equal(sums[counts == 0], 0.0)


def test_reward_table_is_the_pull_sequence(seed: int) -> None:
    env = UniformBandit([0.3, 0.2, 0.1])
    streams = env.streams(seed, 4)
    table = streams.reward_table(5)
    assert table.shape == (4, 3, 5)
    assert int(streams.counts.sum()) == 0
    _, values = streams.pull_counts(np.full((4, 3), 5), return_values=True)
    np.testing.assert_array_equal(table.ravel(), values)
    assert streams.reward_table(0).shape == (4, 3, 0)


operations = st.lists(
    st.one_of(
        st.tuples(
            st.just("pull"), st.lists(st.integers(0, 2), min_size=4, max_size=4), st.sets(st.integers(0, 3))
        ),
        st.tuples(
            st.just("pull_counts"), st.lists(st.integers(0, 3), min_size=12, max_size=12), st.just(set())
        ),
    ),
    max_size=12,
)


# The seed fixture is the same for every example, so sharing it across examples is intended.
@settings(
    derandomize=True,
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(ops=operations)
def test_any_interleaving_of_pulls_reads_the_reward_table(
    ops: list[tuple[str, list[int], set[int]]], seed: int
) -> None:
    """Whatever sequence of single and batched pulls is made, pull k of (i, a) returns table[i, a, k]."""
    env = BernoulliBandit([0.3, 0.5, 0.7]) if len(ops) % 2 else UniformBandit([0.3, 0.5, 0.7])
    streams = env.streams(seed, 4)
    table = streams.reward_table(40)
    consumed = np.zeros((4, 3), dtype=np.int64)
    for kind, numbers, trial_set in ops:
        if kind == "pull":
            trials = np.array(sorted(trial_set), dtype=np.int64)
            arms = np.array(numbers, dtype=np.int64)[: trials.size]
            got = streams.pull(arms, trials=trials)
            expected = table[trials, arms, consumed[trials, arms]]
            consumed[trials, arms] += 1
            np.testing.assert_array_equal(got, expected)
        else:
            counts = np.array(numbers, dtype=np.int64).reshape(4, 3)
            _, values = streams.pull_counts(counts, return_values=True)
            expected = np.concatenate(
                [
                    table[i, a, consumed[i, a] : consumed[i, a] + counts[i, a]]
                    for i in range(4)
                    for a in range(3)
                ]
            )
            consumed += counts
            np.testing.assert_array_equal(values, expected)
    np.testing.assert_array_equal(streams.counts, consumed)


def test_pull_broadcasts_a_single_arm(seed: int) -> None:
    env = UniformBandit([0.3, 0.2])
    np.testing.assert_array_equal(
        env.streams(seed, 3).pull(1), env.streams(seed, 3).pull(np.ones(3, dtype=np.int64))
    )
    streams = env.streams(seed, 3)
    streams.pull(0, trials=np.array([2]))
    np.testing.assert_array_equal(streams.counts, [[0, 0], [0, 0], [1, 0]])


def test_environments_and_streams_survive_pickling(seed: int) -> None:
    env = dp_bai_instance()
    copy = pickle.loads(pickle.dumps(env))
    for name in ("means", "features", "theta"):
        assert not getattr(copy, name).flags.writeable
    streams = env.streams(seed, 3)
    streams.pull(np.array([0, 1, 2]))
    resumed = pickle.loads(pickle.dumps(streams))
    np.testing.assert_array_equal(resumed.pull(2), streams.pull(2))
