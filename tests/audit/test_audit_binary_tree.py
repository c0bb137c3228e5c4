"""Privacy audits of the binary-tree counter (``dpbandits.privacy.counters``) with the auditors.

Neighbouring streams differ in one element by Δ. The releases c_1..c_T are a bijective
post-processing of the noisy p-sums α̂_s = α_s + η_s, one per node s (the node ending at s covers
(s − lowbit(s), s]); this is checked first on the implementation. The p-sums are independent
Laplace(b), so nodes whose true p-sum is the same in both streams have identical, independent
distributions and contribute nothing to the privacy loss nor to δ(ε). The exact audit therefore
discretises the joint distribution of the nodes whose p-sums differ (at most L = ⌊log₂T⌋ + 1 of
them) onto a product of intervals; tail intervals attain the density ratio exactly, so the audited
loss is exactly (number of differing nodes)·Δ/b, which is ε for t0 = 1 (it lies in L nodes).

Broken variant: the budget not split across levels, b = Δ/ε instead of L·Δ/ε (loss L·ε).

The statistical audits run the actual samplers (the vectorised form with ``rng``, the streaming
bank of counters on its secure default path and the lazily drawn ``TreeNoiseTable``) on v = 0 and v' = Δ·e₁, recover the p-sums and use threshold events
on their log-likelihood ratio, with thresholds chosen on a separate calibration draw.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpbandits._core.rng import spawn_generators
from dpbandits.audit import (
    LaplaceDistribution,
    audit_exact,
    epsilon_lower_bound,
    interval_log_probabilities,
    threshold_events,
)
from dpbandits.privacy.counters import (
    BinaryTreeCounter,
    BinaryTreeCounterBank,
    TreeNoiseTable,
    binary_tree_node_scale,
    binary_tree_prefix_sums,
    decomposition_nodes,
    tree_levels,
)

pytestmark = pytest.mark.statistical

EPSILON = 1.0
CONFIDENCE = 1 - 1e-5  # false-failure rate of every "ε_lb <= ε" assertion: <= 1e-5
N_INTERVALS = 12  # per node; the tail intervals already attain the exact density ratio


def _recover_psums(releases: np.ndarray) -> np.ndarray:
    """α̂_s = c_s − c_{s & (s−1)} (c_0 = 0), along the last axis."""
    horizon = releases.shape[-1]
    times = np.arange(1, horizon + 1)
    padded = np.concatenate([np.zeros((*releases.shape[:-1], 1)), releases], axis=-1)
    return padded[..., times] - padded[..., times & (times - 1)]


def _true_psums(stream: np.ndarray, sensitivity: float) -> np.ndarray:
    """The implementation's noise-free p-sums (node noise set to 0)."""
    releases = binary_tree_prefix_sums(stream[None, :], EPSILON, sensitivity, node_noise=np.zeros((1, stream.size)))
    return _recover_psums(releases)[0]


def test_releases_are_a_bijective_function_of_noisy_psums(rng: np.random.Generator) -> None:
    horizon = 13
    stream = rng.normal(scale=3.0, size=horizon)
    node_noise = rng.laplace(size=horizon)
    releases = binary_tree_prefix_sums(stream[None, :], EPSILON, node_noise=node_noise[None, :])[0]
    noisy_psums = _recover_psums(releases)
    # recovered p-sums are the true p-sums plus the node noise, one independent draw per node
    np.testing.assert_allclose(noisy_psums - _true_psums(stream, 1.0), node_noise, atol=1e-12)
    # and the releases are the sums of the noisy p-sums over each time's binary decomposition
    for t in range(1, horizon + 1):
        assert releases[t - 1] == pytest.approx(sum(noisy_psums[s - 1] for s in decomposition_nodes(t)))


def _exact_audit(horizon: int, sensitivity: float, scale: float, rng: np.random.Generator):  # type: ignore[no-untyped-def]
    bases = [np.zeros(horizon), rng.normal(scale=3.0, size=horizon)]
    pairs = []
    for base in bases:
        for changed in range(horizon):
            for sign in (-1.0, 1.0):
                neighbour = base.copy()
                neighbour[changed] += sign * sensitivity
                mean, mean_prime = _true_psums(base, sensitivity), _true_psums(neighbour, sensitivity)
                nodes = tuple(int(s) for s in np.flatnonzero(np.abs(mean - mean_prime) > 1e-9))
                assert len(nodes) <= tree_levels(horizon)
                edges = tuple(
                    np.concatenate([[-math.inf], np.linspace(min(mean[s], mean_prime[s]) - 20 * scale,
                                                             max(mean[s], mean_prime[s]) + 20 * scale,
                                                             N_INTERVALS - 1), [math.inf]])
                    for s in nodes
                )
                pairs.append(((tuple(mean), nodes, edges), (tuple(mean_prime), nodes, edges)))

    def distribution(dataset: tuple[tuple[float, ...], tuple[int, ...], tuple[np.ndarray, ...]]) -> np.ndarray:
        mean, nodes, edges = dataset
        joint = np.zeros(1)
        for node, node_edges in zip(nodes, edges, strict=True):
            marginal = interval_log_probabilities(LaplaceDistribution(mean[node], scale), node_edges)
            joint = (joint[:, None] + marginal[None, :]).ravel()  # independent nodes: log-probs add
        return joint

    return audit_exact(distribution, pairs, epsilon=EPSILON, log=True)


@pytest.mark.parametrize("horizon", [4, 5, 8])
@pytest.mark.parametrize("sensitivity", [1.0, 2.5])
def test_exact_audit_passes_and_is_tight(horizon: int, sensitivity: float, rng: np.random.Generator) -> None:
    scale = BinaryTreeCounter(horizon, EPSILON, sensitivity).scale
    assert scale == pytest.approx(tree_levels(horizon) * sensitivity / EPSILON)  # b = L·Δ/ε
    report = _exact_audit(horizon, sensitivity, scale, rng)
    assert report.passed, str(report)
    assert report.max_log_ratio == pytest.approx(EPSILON, rel=1e-9)  # t0 = 1 lies in L nodes


@pytest.mark.parametrize("horizon", [4, 8])
def test_exact_audit_catches_budget_not_split_across_levels(horizon: int, rng: np.random.Generator) -> None:
    levels = tree_levels(horizon)
    broken_scale = binary_tree_node_scale(horizon, EPSILON * levels)  # b = Δ/ε
    report = _exact_audit(horizon, 1.0, broken_scale, rng)
    assert not report.passed
    assert report.max_log_ratio == pytest.approx(levels * EPSILON, rel=1e-9)


HORIZON, CHANGED = 8, 0  # t0 = 1 lies in every one of the L = 4 nodes


def _llr(releases: np.ndarray, scale: float) -> np.ndarray:
    """Laplace log-likelihood ratio log p_{v'}(α̂)/p_v(α̂) of the recovered p-sums."""
    mean = _true_psums(np.zeros(HORIZON), 1.0)
    shifted = np.zeros(HORIZON)
    shifted[CHANGED] = 1.0
    mean_prime = _true_psums(shifted, 1.0)
    psums = _recover_psums(releases)
    return np.asarray(np.sum(np.abs(psums - mean) - np.abs(psums - mean_prime), axis=-1) / scale)


def _vectorised_releases(epsilon_used: float, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    streams = np.zeros((2, n, HORIZON))
    streams[1, :, CHANGED] = 1.0
    releases = binary_tree_prefix_sums(streams, epsilon_used, rng=rng)
    return releases[0], releases[1]


def _statistical_audit(releases_for: object, epsilon_used: float, n: int, rng: np.random.Generator,  # type: ignore[no-untyped-def]
                       n_calibration: int = 2000):
    claimed_scale = binary_tree_node_scale(HORIZON, EPSILON)
    calibration_d, calibration_d_prime = releases_for(epsilon_used, n_calibration, rng)  # type: ignore[operator]
    events = threshold_events(np.concatenate([_llr(calibration_d, claimed_scale),
                                              _llr(calibration_d_prime, claimed_scale)]), 15)
    releases_d, releases_d_prime = releases_for(epsilon_used, n, rng)  # type: ignore[operator]
    return epsilon_lower_bound(_llr(releases_d, claimed_scale), _llr(releases_d_prime, claimed_scale),
                               events, confidence=CONFIDENCE)


def test_vectorised_counter_statistical_audit(rng: np.random.Generator) -> None:
    report = _statistical_audit(_vectorised_releases, EPSILON, 100_000, rng)
    assert report.epsilon_lower_bound <= EPSILON, str(report)  # false failure <= 1e-5
    # power: the extreme LLR atom has probability 1/16 vs e^−ε/16; the bound is ≈ 0.85 at 10⁵ runs
    assert report.epsilon_lower_bound >= 0.6 * EPSILON, str(report)
    broken = _statistical_audit(_vectorised_releases, EPSILON * tree_levels(HORIZON), 100_000, rng)
    assert broken.refutes(EPSILON), str(broken)  # true loss L·ε = 4; bound ≈ 3.7


def _streaming_releases(epsilon_used: float, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The deployment path: secure (OpenDP) integer counters, n of them per dataset in one bank."""
    out = []
    for dataset in range(2):
        bank = BinaryTreeCounterBank(n, HORIZON, epsilon_used, integer=True)
        out.append(np.array([bank.update(np.full(n, int(dataset and t == CHANGED))) for t in range(HORIZON)]).T)
    return out[0].astype(np.float64), out[1].astype(np.float64)


@pytest.mark.slow
def test_streaming_counter_statistical_audit(rng: np.random.Generator) -> None:
    # the secure default (exact discrete Laplace inside OpenDP, unseedable): the LLR of discrete
    # Laplace p-sums has the same form Σ(|α̂ − α| − |α̂ − α'|)/b; the broken variant (budget not
    # split across levels, true loss L·ε = 4) is caught
    report = _statistical_audit(_streaming_releases, EPSILON, 10_000, rng, n_calibration=1000)
    assert report.epsilon_lower_bound <= EPSILON, str(report)  # false failure <= 1e-5
    broken = _statistical_audit(_streaming_releases, EPSILON * tree_levels(HORIZON), 10_000, rng,
                                n_calibration=1000)
    assert broken.refutes(EPSILON), str(broken)


def _noise_table_releases(epsilon_used: float, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    # one node-noise Generator per counter (2n counters: n per dataset), spawned from the test stream
    table = TreeNoiseTable(HORIZON, epsilon_used, spawn_generators(rng, 2 * n), chunk=HORIZON)
    errors = table.errors(1, HORIZON + 1)
    streams = np.zeros((2 * n, HORIZON))
    streams[n:, CHANGED] = 1.0
    releases = np.cumsum(streams, axis=1) + errors  # c_t = Σ_{s<=t} v_s + e_t
    return releases[:n], releases[n:]


@pytest.mark.slow
def test_noise_table_statistical_audit(rng: np.random.Generator) -> None:
    # the lazily drawn error table used by vectorised simulations: same audit, 15000 counters per side
    report = _statistical_audit(_noise_table_releases, EPSILON, 15_000, rng, n_calibration=1000)
    assert report.epsilon_lower_bound <= EPSILON, str(report)  # false failure <= 1e-5
    broken = _statistical_audit(_noise_table_releases, EPSILON * tree_levels(HORIZON), 15_000, rng,
                                n_calibration=1000)
    assert broken.refutes(EPSILON), str(broken)  # true loss 4; the bound is ≈ 3 at 15000 counters
