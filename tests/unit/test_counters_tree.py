"""Unit tests of the binary-tree counters (exactness, structure, equivalence)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from dpbandits._core.errors import InsecureNoiseWarning, InvalidParameterError, PrivacyBudgetExceededError
from dpbandits.privacy.counters import (
    BinaryTreeCounter,
    BinaryTreeCounterBank,
    TreeNoiseTable,
    binary_tree_error_bound,
    binary_tree_guarantee,
    binary_tree_node_scale,
    binary_tree_prefix_sums,
    decomposition_nodes,
    tree_levels,
)
from dpbandits.privacy.guarantees import PureDP
from dpbandits.privacy.noise import NumpyNoise, SecureNoise


def test_tree_levels_and_scale() -> None:
    assert [tree_levels(t) for t in (1, 2, 3, 4, 15, 16, 17)] == [1, 2, 2, 3, 4, 5, 5]
    assert binary_tree_node_scale(16, 2.0, 3.0) == pytest.approx(5 * 3.0 / 2.0)
    assert binary_tree_node_scale(16, math.inf) == 0.0


def test_exact_with_noise_off_including_large_negative_elements(rng: np.random.Generator) -> None:
    values = rng.normal(scale=100.0, size=(4, 200))
    values[:, 50] = -1e6
    expected = np.cumsum(values, axis=-1)
    np.testing.assert_allclose(binary_tree_prefix_sums(values, math.inf), expected, rtol=1e-12)
    counter = BinaryTreeCounter(200, math.inf)
    streamed = [counter.update(v) for v in values[0]]
    np.testing.assert_allclose(streamed, expected[0], rtol=1e-12)


@pytest.mark.parametrize("horizon", [1, 7, 16, 100])
def test_each_release_uses_exactly_its_decomposition_nodes(horizon: int) -> None:
    levels = tree_levels(horizon)
    covering = np.zeros(horizon + 1, dtype=int)  # how many released nodes contain each element
    for t in range(1, horizon + 1):
        nodes = decomposition_nodes(t)
        assert len(nodes) == bin(t).count("1") <= levels
        # nodes tile (0, t]: node ending at s covers (s − lowbit(s), s]
        spans = sorted((s - (s & -s), s) for s in nodes)
        assert spans[0][0] == 0 and spans[-1][1] == t
        assert all(a[1] == b[0] for a, b in itertools.pairwise(spans))
        lo = t - (t & -t)
        covering[lo + 1 : t + 1] += 1
    assert covering[1:].max() <= levels
    # a unit of node noise at s enters the release at t iff s is one of t's nodes
    for s in range(1, horizon + 1):
        node_noise = np.zeros(horizon)
        node_noise[s - 1] = 1.0
        released = binary_tree_prefix_sums(np.zeros(horizon), 1.0, node_noise=node_noise)
        uses = [s in decomposition_nodes(t) for t in range(1, horizon + 1)]
        np.testing.assert_array_equal(released, np.asarray(uses, dtype=float))


def test_streaming_vectorised_and_table_agree_exactly(seed: int) -> None:
    horizon, n_streams = 300, 3
    data_seed, noise_seed, table_seed = np.random.SeedSequence(seed).spawn(3)
    values = np.random.default_rng(data_seed).integers(-3, 4, size=(n_streams, horizon)).astype(float)
    vectorised = binary_tree_prefix_sums(values, 0.7, 2.0, np.random.default_rng(noise_seed))
    shared = np.random.default_rng(noise_seed)  # streaming counters drawn one after another
    streamed = np.array([[c.update(v) for v in row] for row in values
                         for c in [BinaryTreeCounter(horizon, 0.7, 2.0, rng=shared, insecure_seeded_noise=True)]])
    # the streaming counter sums noisy p-sums (float safe), the vectorised form adds the summed
    # node noise to the exact prefix sum: the same numbers up to float association
    np.testing.assert_allclose(streamed, vectorised, rtol=1e-12, atol=1e-9)
    seeds = table_seed.spawn(n_streams)
    table = TreeNoiseTable(horizon, 0.7, [np.random.default_rng(s) for s in seeds], 2.0, chunk=32)
    windows = [table.errors(1, 40), table.errors(40, 41), table.errors(41, 130), table.errors(100, 301)]
    errors = np.concatenate([windows[0], windows[1], windows[2][:, :59], windows[3]], axis=1)
    counters = [BinaryTreeCounter(horizon, 0.7, 2.0, rng=np.random.default_rng(s), insecure_seeded_noise=True)
                for s in seeds]
    released = np.array([[c.update(0.0) for _ in range(horizon)] for c in counters])
    np.testing.assert_allclose(errors, released, rtol=1e-12, atol=1e-9)


def test_integer_forms_agree_bit_for_bit(seed: int) -> None:
    """Integer streams: bank (one stream per counter), table and vectorised sums are identical."""
    horizon, n_counters = 300, 3
    data_seed, noise_seed = np.random.SeedSequence(seed).spawn(2)
    values = np.random.default_rng(data_seed).integers(-3, 4, size=(n_counters, horizon))
    seeds = noise_seed.spawn(n_counters)
    bank = BinaryTreeCounterBank(n_counters, horizon, 0.7, 2.0, integer=True, insecure_seeded_noise=True,
                                 backend=[NumpyNoise(s) for s in seeds])
    streamed = np.array([bank.update(values[:, t]) for t in range(horizon)]).T
    assert streamed.dtype == np.int64
    table = TreeNoiseTable(horizon, 0.7, [np.random.default_rng(s) for s in seeds], 2.0, chunk=32, integer=True)
    np.testing.assert_array_equal(np.cumsum(values, axis=1) + table.errors(1, horizon + 1), streamed)
    vectorised = binary_tree_prefix_sums(values[:1], 0.7, 2.0, np.random.default_rng(seeds[0]), integer=True)
    np.testing.assert_array_equal(vectorised[0], streamed[0])


def test_bank_retire_freezes_a_counter_and_stops_its_noise(seed: int) -> None:
    seeds = np.random.SeedSequence(seed).spawn(2)
    bank = BinaryTreeCounterBank(2, 50, 1.0, integer=True, insecure_seeded_noise=True,
                                 backend=[NumpyNoise(s) for s in seeds])
    table = TreeNoiseTable(50, 1.0, [np.random.default_rng(s) for s in seeds], chunk=8, integer=True)
    for _ in range(10):
        bank.update([1, 1])
    frozen = bank.update([1, 1])[1]
    bank.retire(1)
    table.retire(1)
    assert not bank.live[1]
    for _ in range(20):
        released = bank.update([1, 5])  # the retired entry is ignored
        assert released[1] == frozen
    assert released[0] == 31 + table.errors(1, 32)[0, -1]
    with pytest.raises(InvalidParameterError, match="counters must be indices"):
        bank.retire(2)


def test_counters_are_secure_by_default_and_refuse_a_seed_without_the_switch(seed: int) -> None:
    counter = BinaryTreeCounter(8, 1.0, integer=True)
    assert isinstance(counter._bank._noise, SecureNoise)
    released = counter.update(1)
    assert isinstance(released, int)  # exact integer release: nothing for a float attack to read
    with pytest.raises(InvalidParameterError, match="insecure_seeded_noise=True"):
        BinaryTreeCounter(8, 1.0, rng=seed)
    with pytest.raises(InvalidParameterError, match="insecure_seeded_noise=True"):
        BinaryTreeCounter(8, 1.0, backend=NumpyNoise(seed))
    with pytest.warns(InsecureNoiseWarning, match="NOT differentially private in deployment"):
        BinaryTreeCounter(8, 1.0, rng=seed, insecure_seeded_noise=True)
    with pytest.raises(InvalidParameterError, match="must be integers"):
        counter.update(0.5)
    with pytest.raises(InvalidParameterError, match="sensitivity must be an integer"):
        BinaryTreeCounter(8, 1.0, 1.5, integer=True)


def test_table_retire_and_backwards_window_rules(seed: int) -> None:
    gens = [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(2)]
    table = TreeNoiseTable(100, 1.0, gens, chunk=8)
    first = table.errors(1, 20)
    assert np.isfinite(first).all()
    table.retire(1)
    later = table.errors(20, 40)
    assert np.isfinite(later[0]).all() and np.isnan(later[1, 5:]).all()
    with pytest.raises(InvalidParameterError, match="start must be >="):
        table.errors(1, 3)
    with pytest.raises(InvalidParameterError, match="stop"):
        table.errors(20, 102)


def test_backend_is_used_and_horizon_is_enforced(seed: int) -> None:
    counter = BinaryTreeCounter(2, 1.0, backend=NumpyNoise(seed), insecure_seeded_noise=True)
    twin = BinaryTreeCounter(2, 1.0, rng=seed, insecure_seeded_noise=True)
    assert counter.update(1.0) == twin.update(1.0)
    counter.update(0.0)
    with pytest.raises(PrivacyBudgetExceededError, match="horizon=2"):
        counter.update(0.0)
    with pytest.raises(InvalidParameterError, match="value must be a finite float"):
        twin.update(math.nan)


def test_guarantee() -> None:
    g = binary_tree_guarantee(0.5, 2.0)
    assert isinstance(g, PureDP) and g.epsilon == 0.5 and g.delta == 0.0
    assert "one stream element (change <= 2)" in g.unit
    assert "Chan" in g.reference
    assert BinaryTreeCounter(4, 0.5, 2.0).privacy == g
    assert not binary_tree_guarantee(math.inf).is_finite


def test_error_bound_closed_forms() -> None:
    horizon, eps, beta = 1000, 0.5, 1e-3
    levels = 10
    b = levels / eps
    union = levels * b * math.log(levels / beta)
    assert binary_tree_error_bound(horizon, eps, beta, "union") == pytest.approx(union, rel=1e-12)
    log_term = math.log(2 / beta)
    css = b * max(math.sqrt(levels), math.sqrt(log_term)) * math.sqrt(8 * log_term)
    assert binary_tree_error_bound(horizon, eps, beta) == pytest.approx(css, rel=1e-8)
    assert binary_tree_error_bound(horizon, eps, beta) > css
    assert binary_tree_error_bound(horizon, math.inf, beta) == 0.0
    assert binary_tree_error_bound(horizon, eps, beta, sensitivity=2.0) == pytest.approx(2 * css, rel=1e-8)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"beta": 0.0}, "beta must lie in"),
        ({"beta": 1.0}, "beta must lie in"),
        ({"method": "tight"}, "method must be one of"),
        ({"epsilon": -1.0}, "epsilon must be"),
        ({"horizon": 0}, "horizon must be an int >= 1"),
    ],
)
def test_error_bound_validation(kwargs: dict[str, object], message: str) -> None:
    params: dict[str, object] = {"horizon": 10, "epsilon": 1.0, "beta": 0.1, "method": "css"}
    params.update(kwargs)
    with pytest.raises(InvalidParameterError, match=message):
        binary_tree_error_bound(**params)  # type: ignore[arg-type]


def test_prefix_sums_validation() -> None:
    with pytest.raises(InvalidParameterError, match="horizon must be >= the stream length"):
        binary_tree_prefix_sums(np.zeros(8), 1.0, horizon=4)
    with pytest.raises(InvalidParameterError, match="node_noise must have the shape"):
        binary_tree_prefix_sums(np.zeros(8), 1.0, node_noise=np.zeros(7))
    with pytest.raises(InvalidParameterError, match="values must be finite"):
        binary_tree_prefix_sums([1.0, math.inf], 1.0)
    with pytest.raises(InvalidParameterError, match="sensitivity must be"):
        BinaryTreeCounter(4, 1.0, 0.0)


def test_counters_sharing_one_stream_draw_in_counter_order_each_update(seed: int) -> None:
    """Per-counter backends on one Generator are not read ahead: the numbers are those of one call per counter."""
    shared = NumpyNoise(seed)
    bank = BinaryTreeCounterBank(3, 40, 1.0, integer=True, insecure_seeded_noise=True, backend=[shared] * 3)
    reference = NumpyNoise(seed)
    exact = np.zeros(3, dtype=np.int64)
    for t in range(1, 9):  # at t = 1, 2, 4, 8 the release is the exact prefix plus one fresh node per counter
        released = bank.update([1, 2, 3])
        exact += [1, 2, 3]
        noise = [reference.add_discrete_laplace(np.zeros(1, dtype=np.int64), bank.scale)[0] for _ in range(3)]
        if t & (t - 1) == 0:
            np.testing.assert_array_equal(released, exact + noise)
