"""Privacy audit of DP-EBS-Elimination: exact privacy loss of its whole transcript (spec §8.5, A3).

Neighbouring response tables (K = 3, T = 64): in ``o`` every user prefers the lower index (self-duels
answer 1); ``o'`` is identical except that user t0 = 1 answers the opposite in every pair. For each
run on ``o`` (with ``conf_scale = 0.1`` so that eliminations, and hence the subtraction path, happen
mid-horizon in about a third of the runs) the
released transcript (every counter's noisy prefix sums, a superset of the output) is replayed by an
independent oracle of the spec's bookkeeping (§3.5–§3.6) under ``o`` and ``o'`` with the same pairs and
eliminations (they are functions of the transcript and of data-free coins). The node p-sums
α̂_t = c_t − c_{t & (t−1)} are recovered from the releases, and the exact log-density ratio of the
transcript is Σ_nodes (|α̂ − α'| − |α̂ − α|)/b over every counter's released nodes, b being the noise
scale the counters really use. Its supremum over the node noise, Σ_nodes |α' − α|/b, is the exact
worst-case privacy loss of the counters' releases for the streams this run generated (the quantity
the privacy proof bounds by 2ε_c). The audit checks, over sampled runs, that the realised loss stays
below that supremum and the supremum below the claimed ε (ε/2 under the tight accounting with
ε_c = ε/4); the broken variant (budget not split across counters: ε_c = ε, still claiming ε) must
show a supremum above ε. Realised losses near the supremum need many node noises aligned, which is
rare, so the supremum is what gives the negative control its power.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from dpbandits.algorithms.dueling._streams import trial_seed_sequences
from dpbandits.algorithms.dueling.dp_ebs_elimination import DPEBSElimination

pytestmark = pytest.mark.statistical

N_ARMS, HORIZON, EPSILON, FLIPPED_USER, CONF_SCALE = 3, 64, 1.0, 1, 0.1


class BudgetNotSplit(DPEBSElimination):
    """Deliberately broken: every counter gets the whole ε (the split across counters is omitted)."""

    def _counter_epsilon(self) -> float:
        return self.constants.epsilon


def _outcome(pair: tuple[int, int], flipped: bool) -> int:
    lower_wins = 1 if pair[0] <= pair[1] else 0  # self-duels answer 1
    return 1 - lower_wins if flipped else lower_wins


def _oracle_streams(pairs: list[tuple[int, int]], outcomes: list[int], eliminated_at: dict[int, int]) -> dict[int, list[float]]:
    """Stream elements of every counter per recorded round, from the spec's bookkeeping."""
    wins = np.zeros((N_ARMS, N_ARMS))
    streams: dict[int, list[float]] = {i: [] for i in range(N_ARMS)}
    for t, ((left, right), o) in enumerate(zip(pairs, outcomes, strict=True), start=1):
        gone_last_round = [k for k, r in eliminated_at.items() if r == t - 1]
        for i in range(N_ARMS):
            if eliminated_at.get(i, HORIZON + 1) < t:
                continue
            subtraction = sum(wins[i, k] for k in gone_last_round)
            streams[i].append(o * (i == left) - subtraction)
        wins[left, right] += o
    return streams


def _max_abs_privacy_loss(
    agent_class: type[DPEBSElimination], counter_epsilon: str, seed: int, runs: int
) -> tuple[float, float, int]:
    worst, worst_sup, runs_with_subtraction = 0.0, 0.0, 0
    for seq in trial_seed_sequences(seed, runs):
        agent = agent_class(N_ARMS, HORIZON, EPSILON, counter_epsilon=counter_epsilon, conf_scale=CONF_SCALE,
                            rng=seq, record_transcript=True, insecure_seeded_noise=True)
        while not agent.committed and agent.time < HORIZON:
            pair = agent.ask()
            agent.tell(pair, first_wins=_outcome(pair, flipped=False))
        records = agent.transcript
        pairs = [r["pair"] for r in records]
        outcomes = [_outcome(p, False) for p in pairs]
        outcomes_neighbour = [_outcome(p, t == FLIPPED_USER) for t, p in enumerate(pairs, start=1)]
        base = _oracle_streams(pairs, outcomes, agent.elimination_rounds)
        neighbour = _oracle_streams(pairs, outcomes_neighbour, agent.elimination_rounds)
        loss, sup_loss, differing = 0.0, 0.0, 0
        for i in range(N_ARMS):
            recorded = [r["stream_elements"][i] for r in records if i in r["stream_elements"]]
            assert recorded == base[i]  # the agent's bookkeeping is the spec's
            diff = np.asarray(neighbour[i]) - np.asarray(base[i])
            assert np.all(np.abs(diff) <= 1)
            differing += int(np.count_nonzero(diff))
            released = np.array([0.0] + [r["released"][i] for r in records if i in r["released"]])
            times = np.arange(1, released.size)
            parents = times & (times - 1)
            noisy_psums = released[times] - released[parents]  # α̂_t = c_t − c_{t & (t−1)}
            prefix = np.concatenate([[0.0], np.cumsum(base[i])])
            prefix_neighbour = np.concatenate([[0.0], np.cumsum(neighbour[i])])
            psums = prefix[times] - prefix[parents]
            psums_neighbour = prefix_neighbour[times] - prefix_neighbour[parents]
            scale = agent._counters.scale
            loss += float(np.sum(np.abs(noisy_psums - psums_neighbour) - np.abs(noisy_psums - psums)) / scale)
            sup_loss += float(np.sum(np.abs(psums_neighbour - psums)) / scale)  # sup over the node noise
        assert differing <= 2  # a user changes at most two elements, of one counter
        runs_with_subtraction += int(differing == 2)
        worst = max(worst, abs(loss))
        worst_sup = max(worst_sup, sup_loss)
    return worst, worst_sup, runs_with_subtraction


@pytest.mark.parametrize(("counter_epsilon", "tight_bound"), [("quarter", EPSILON / 2), ("half", EPSILON)])
def test_transcript_privacy_loss_is_within_epsilon(counter_epsilon: str, tight_bound: float, seed: int) -> None:
    worst, worst_sup, with_subtraction = _max_abs_privacy_loss(DPEBSElimination, counter_epsilon, seed, runs=120)
    assert with_subtraction >= 12  # the subtraction path was exercised
    assert worst <= worst_sup + 1e-12
    assert worst_sup <= tight_bound + 1e-9  # one counter, two elements, each by <= 1: 2ε_c
    assert worst_sup <= EPSILON  # the claimed guarantee
    assert worst >= 0.3 * tight_bound  # sampled transcripts get close to the bound: the audit has power


def test_broken_budget_split_is_caught(seed: int) -> None:
    # ε_c = ε instead of ε/2 while claiming ε: the true worst-case loss is 2ε
    _, worst_sup, with_subtraction = _max_abs_privacy_loss(BudgetNotSplit, "half", seed, runs=120)
    assert with_subtraction >= 1
    assert BudgetNotSplit(N_ARMS, HORIZON, EPSILON, counter_epsilon="half").privacy.epsilon == EPSILON
    assert worst_sup > EPSILON + 1e-9


# ---------------------------------------------------------------- stats_removal = "restart" (spec §3.9)
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
        agent = agent_class(N_ARMS, HORIZON, EPSILON, stats_removal="restart", counter_epsilon="whole",
                            conf_scale=CONF_SCALE, rng=seq, record_transcript=True, insecure_seeded_noise=True)
        while not agent.committed and agent.time < HORIZON:
            pair = agent.ask()
            agent.tell(pair, first_wins=_outcome(pair, flipped=False))
        records = agent.transcript
        boundaries = [0, *sorted(set(agent.elimination_rounds.values())), HORIZON]
        restarts += len(boundaries) - 2
        loss, sup_loss, differing = 0.0, 0.0, 0
        for start, stop in itertools.pairwise(boundaries):
            phase = [r for r in records if start < r["round"] <= stop]
            for i in range(N_ARMS):
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
    assert worst_sup <= EPSILON + 1e-9  # one element of one tree changes by <= 1: ε_c = ε
    assert worst >= 0.3 * EPSILON  # the audit has power


def test_broken_restart_budget_is_caught(seed: int) -> None:
    _, worst_sup, _ = _restart_supremum(RestartBudgetDoubled, seed, runs=60)
    assert RestartBudgetDoubled(N_ARMS, HORIZON, EPSILON, stats_removal="restart",
                                counter_epsilon="whole").privacy.epsilon == EPSILON
    assert worst_sup > EPSILON + 1e-9
