"""DP-EBS-Elimination's transcript audit (spec §8.5, A3): what the privacy contract does not check.

The privacy contract (:mod:`dpbandits.audit.cases.dueling`) bounds, on the secure agent, the supremum
over the node noise of every sampled run's exact transcript loss by ε, and catches the broken
variants (budget not split, double-counted label). Here, on the same runs (K = 3, T = 64,
``conf_scale = 0.1``, user t0 = 1 flipped, ε_c = ε/2 so that the bound is ε itself): the agent's
bookkeeping equals an independent oracle of the spec (§3.5–§3.6) — a user changes at most two
elements, by at most 1, of one counter; the subtraction path is exercised; and the realised loss stays
below the supremum and gets close to the bound, so the audit has power. Realised losses near the
supremum need many node noises aligned, which is rare, so the supremum is what the contract checks.
"""

from __future__ import annotations

import numpy as np
import pytest

from dpbandits.audit.cases.dueling import (
    EBS_ARMS,
    EBS_EPSILON,
    EBS_HORIZON,
    ebs_factory,
    flip_user,
    lower_index_wins,
    transcript_comparisons,
)

pytestmark = pytest.mark.statistical

FLIPPED_USER = 1


def _oracle_streams(pairs: list[tuple[int, int]], outcomes: list[int],
                    eliminated_at: dict[int, int]) -> dict[int, list[int]]:
    """Stream elements of every counter per recorded round, from the spec's bookkeeping."""
    wins = np.zeros((EBS_ARMS, EBS_ARMS), dtype=np.int64)
    streams: dict[int, list[int]] = {i: [] for i in range(EBS_ARMS)}
    for t, ((left, right), o) in enumerate(zip(pairs, outcomes, strict=True), start=1):
        gone_last_round = [k for k, r in eliminated_at.items() if r == t - 1]
        for i in range(EBS_ARMS):
            if eliminated_at.get(i, EBS_HORIZON + 1) < t:
                continue
            subtraction = sum(int(wins[i, k]) for k in gone_last_round)
            streams[i].append(o * (i == left) - subtraction)
        wins[left, right] += o
    return streams


def test_bookkeeping_and_realised_transcript_loss(seed: int) -> None:
    table = lower_index_wins(EBS_HORIZON, EBS_ARMS)
    neighbour = flip_user(table, FLIPPED_USER)
    factory = ebs_factory(counter_epsilon="half", record_transcript=True)
    runs = transcript_comparisons(factory, table, neighbour, 120, seed)
    with_subtraction = 0
    for run in runs:
        agent = run.algorithm
        pairs = [record["pair"] for record in agent.transcript]
        base = _oracle_streams(pairs, [int(table[t, x, y]) for t, (x, y) in enumerate(pairs)], agent.elimination_rounds)
        flipped = _oracle_streams(pairs, [int(neighbour[t, x, y]) for t, (x, y) in enumerate(pairs)],
                                  agent.elimination_rounds)
        differing = 0
        for i in range(EBS_ARMS):
            recorded = [record["stream_elements"][i] for record in agent.transcript if i in record["stream_elements"]]
            assert recorded == base[i]  # the agent's bookkeeping is the spec's
            gap = np.asarray(flipped[i]) - np.asarray(base[i])
            assert np.all(np.abs(gap) <= 1)
            differing += int(np.count_nonzero(gap))
        assert differing <= 2  # a user changes at most two elements, of one counter
        with_subtraction += int(differing == 2)
        assert run.reason == "" and abs(run.realised) <= run.supremum + 1e-12 <= EBS_EPSILON + 1e-9
    assert with_subtraction >= 12  # the subtraction path was exercised
    # sampled transcripts approach the bound: P(|realised| >= 4/14 = 0.29ε) ≈ 0.09 per run, so the
    # false-failure rate over 120 runs is ≈ 1e-5
    assert max(abs(run.realised) for run in runs) >= 0.25 * EBS_EPSILON
