"""Privacy audit of the binary-tree counter with a broken-noise negative control.

Streams v = 0^T and v' = e_{t0} are neighbours (one element changes by 1). The node p-sums are
recovered from the releases (α̂_t = c_t − c_{t & (t−1)}); the event E = "every node containing t0
has α̂ >= 1" has probability ratio exactly e^{(#nodes ∋ t0)/b}, which equals e^ε for t0 = 1 (it lies in
all L nodes). Clopper–Pearson bounds at level 1e-6 each give a lower confidence bound on ε.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dpbandits.privacy.counters import (
    binary_tree_node_scale,
    binary_tree_prefix_sums,
)

pytestmark = pytest.mark.statistical

HORIZON, EPSILON, CHANGED_TIME, RUNS = 16, 1.0, 1, 200_000
ALPHA = 1e-6  # per Clopper–Pearson bound; the audit's false-failure rate is <= 2·ALPHA


def _node_psums(releases: np.ndarray) -> np.ndarray:
    times = np.arange(1, HORIZON + 1)
    parents = times & (times - 1)
    padded = np.concatenate([np.zeros((releases.shape[0], 1)), releases], axis=1)
    return padded[:, times] - padded[:, parents]  # α̂_t = c_t − c_{t & (t−1)}


def _epsilon_lower_bound(noise_scale_factor: float, seed: int) -> float:
    base, neighbour = np.zeros((RUNS, HORIZON)), np.zeros((RUNS, HORIZON))
    neighbour[:, CHANGED_TIME - 1] = 1.0
    scale = binary_tree_node_scale(HORIZON, EPSILON) * noise_scale_factor
    seed_base, seed_neighbour = np.random.SeedSequence(seed).spawn(2)
    gen_base, gen_neighbour = np.random.default_rng(seed_base), np.random.default_rng(seed_neighbour)
    releases_base = binary_tree_prefix_sums(base, EPSILON, node_noise=gen_base.laplace(0, scale, base.shape))
    releases_neighbour = binary_tree_prefix_sums(
        neighbour, EPSILON, node_noise=gen_neighbour.laplace(0, scale, neighbour.shape)
    )
    containing = [t for t in range(1, HORIZON + 1)
                  if t - (t & -t) < CHANGED_TIME <= t]  # nodes (t − lowbit(t), t] ∋ t0
    assert len(containing) == HORIZON.bit_length()

    def event(releases: np.ndarray) -> int:
        psums = _node_psums(releases)[:, np.asarray(containing) - 1]
        return int(np.all(psums >= 1.0, axis=1).sum())

    hits_neighbour, hits_base = event(releases_neighbour), event(releases_base)
    lower_neighbour = stats.beta.ppf(ALPHA, hits_neighbour, RUNS - hits_neighbour + 1)
    upper_base = stats.beta.ppf(1 - ALPHA, hits_base + 1, RUNS - hits_base)
    return math.log(lower_neighbour / upper_base)


def test_counter_passes_audit_and_is_tight(seed: int) -> None:
    eps_lb = _epsilon_lower_bound(1.0, seed)
    assert eps_lb <= EPSILON
    assert eps_lb >= 0.7 * EPSILON  # the event attains ε exactly: the audit has power


def test_broken_counter_with_halved_noise_is_caught(seed: int) -> None:
    # halved noise: the true privacy loss of this event is 2ε
    assert _epsilon_lower_bound(0.5, seed) > EPSILON
