"""DP-EBS-Elimination's transcript audit: what the privacy contract does not check.

The privacy contract (:mod:`dpbandits.audit.cases.dueling`) bounds, on the secure agent, the supremum
over the node noise of every sampled run's exact transcript loss by ε, and catches the broken
variants (budget not split, double-counted label). Here, on the same runs (K = 3, T = 64,
``conf_scale = 0.1``, user t0 = 1 flipped, ε_c = ε/2 so that the bound is ε itself): the agent's
bookkeeping equals an independent oracle (errata DUEL-3/4, DUEL-26) — a user changes at most two
elements, by at most 1, of one counter; the subtraction path is exercised; and the realised loss stays
below the supremum and gets close to the bound, so the audit has power. Realised losses near the
supremum need many node noises aligned, which is rare, so the supremum is what the contract checks.

The ``stats_removal="restart"`` ablation is audited here on its own: every (arm, phase)
counter is a fresh tree, a label enters one of them once, and with ε per counter the supremum of the
transcript loss must stay <= ε; a broken restart (2ε per fresh counter) must exceed it.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from dpbandits.algorithms.dueling._streams import trial_seed_sequences
from dpbandits.algorithms.dueling.dp_ebs_elimination import DPEBSElimination
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
RESTART_CONF_SCALE = 0.1  # eliminations (hence restarts) mid-horizon in about a third of the runs


def _oracle_streams(pairs: list[tuple[int, int]], outcomes: list[int],
                    eliminated_at: dict[int, int]) -> dict[int, list[int]]:
    """Stream elements of every counter per recorded round, from an independent bookkeeping."""
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


@pytest.mark.slow
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
            assert recorded == base[i]  # the agent's bookkeeping is the oracle's
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


# ---------------------------------------------------------------- stats_removal = "restart"
def _outcome(pair: tuple[int, int], flipped: bool) -> int:
    lower_wins = 1 if pair[0] <= pair[1] else 0  # every user prefers the lower index; self-duels answer 1
    return 1 - lower_wins if flipped else lower_wins


class RestartBudgetDoubled(DPEBSElimination):
    """Deliberately broken restart: every fresh counter gets 2ε while the guarantee still claims ε."""

    def _counter_epsilon(self) -> float:
        return 2.0 * self.constants.epsilon


def _restart_supremum(agent_class: type[DPEBSElimination], seed: int, runs: int) -> tuple[float, float, int]:
    """Worst realised and supremum privacy loss of the restart variant's transcript, and restarts seen.

    With restarts a counter's stream element at round t is o_t·1[i = x_t] (no subtraction), and the
    counters' times start again after every elimination: each (arm, phase) is its own binary tree.
    """
    worst, worst_sup, restarts = 0.0, 0.0, 0
    for seq in trial_seed_sequences(seed, runs):
        agent = agent_class(EBS_ARMS, EBS_HORIZON, EBS_EPSILON, stats_removal="restart", counter_epsilon="whole",
                            conf_scale=RESTART_CONF_SCALE, rng=seq, record_transcript=True, insecure_seeded_noise=True)
        while not agent.committed and agent.time < EBS_HORIZON:
            pair = agent.ask()
            agent.tell(pair, first_wins=_outcome(pair, flipped=False))
        records = agent.transcript
        boundaries = [0, *sorted(set(agent.elimination_rounds.values())), EBS_HORIZON]
        restarts += len(boundaries) - 2
        loss, sup_loss, differing = 0.0, 0.0, 0
        for start, stop in itertools.pairwise(boundaries):
            phase = [r for r in records if start < r["round"] <= stop]
            for i in range(EBS_ARMS):
                mine = [r for r in phase if i in r["released"]]
                if not mine:
                    continue
                base = [_outcome(r["pair"], False) * (r["pair"][0] == i) for r in mine]
                neighbour = [_outcome(r["pair"], r["round"] == FLIPPED_USER) * (r["pair"][0] == i) for r in mine]
                assert [r["stream_elements"][i] for r in mine] == base  # no subtraction element
                differing += sum(a != b for a, b in zip(base, neighbour, strict=True))
                released = np.array([0.0] + [r["released"][i] for r in mine])
                times = np.arange(1, released.size)
                parents = times & (times - 1)
                noisy = released[times] - released[parents]
                prefix, prefix_n = (np.concatenate([[0.0], np.cumsum(x)]) for x in (base, neighbour))
                psums, psums_n = prefix[times] - prefix[parents], prefix_n[times] - prefix_n[parents]
                scale = agent._counters.scale
                loss += float(np.sum(np.abs(noisy - psums_n) - np.abs(noisy - psums)) / scale)
                sup_loss += float(np.sum(np.abs(psums_n - psums)) / scale)
        assert differing <= 1  # a label enters one counter of one phase, once
        worst, worst_sup = max(worst, abs(loss)), max(worst_sup, sup_loss)
    return worst, worst_sup, restarts


def test_restart_transcript_privacy_loss_is_within_epsilon(seed: int) -> None:
    worst, worst_sup, restarts = _restart_supremum(DPEBSElimination, seed, runs=120)
    assert restarts >= 12  # the restart path was exercised
    assert worst <= worst_sup + 1e-12
    assert worst_sup <= EBS_EPSILON + 1e-9  # one element of one tree changes by <= 1: ε_c = ε
    assert worst >= 0.3 * EBS_EPSILON  # the audit has power


def test_broken_restart_budget_is_caught(seed: int) -> None:
    _, worst_sup, _ = _restart_supremum(RestartBudgetDoubled, seed, runs=60)
    assert RestartBudgetDoubled(EBS_ARMS, EBS_HORIZON, EBS_EPSILON, stats_removal="restart",
                                counter_epsilon="whole").privacy.epsilon == EBS_EPSILON
    assert worst_sup > EBS_EPSILON + 1e-9
