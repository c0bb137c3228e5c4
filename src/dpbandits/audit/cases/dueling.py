"""Privacy cases of the dueling family (DP-EBS-Elimination, GOptimal-DPDB, the local-DP baseline).

Unit: one preference label — one round's feedback, the user's whole response function. An input is
a response table ``first_wins[t − 1, x, y]`` (what user t answers when asked the pair (x, y)); its
neighbour flips every answer of one user. The adversarial users are t0 = 1, whose label lies in
every node of its counter's binary tree (L = ⌊log₂T⌋ + 1 nodes), and a user whose opponent is
later eliminated, whose label enters its counter a second time (the subtraction at the round after
the elimination).

The central-model agents are adaptive, so their output law is not enumerable; they are audited by
the transcript loss of :mod:`dpbandits.audit.transcript`: each sampled run of the ask/tell agent on
its secure default noise (OpenDP's exact discrete Laplace) is replayed on the neighbour with the
same public coins, and the supremum over the noise of the transcript's exact log-density ratio,
Σ |x' − x|/b over every released node or per-pair sum, must stay <= ε — with b the scale the agent
really used. The local-DP users' randomised response is audited statistically on its deployed
OpenDP coin.

Negative controls: DP-EBS with every counter given the whole ε (budget not split), with each label
added twice to its counter (double-counted label), GOptimal-DPDB with halved noise, randomised
response flipping half as often as ε needs, and a counter bank that adds Laplace noise drawn at 0 to
the count in NumPy floats (caught by the floating-point attack; its correct twin is the secure
integer counter bank).
"""

from __future__ import annotations

import dataclasses
import itertools
import warnings
from collections.abc import Callable, Hashable
from typing import Any, cast

import numpy as np
from numpy.typing import NDArray

from dpbandits._core.errors import InsecureNoiseWarning
from dpbandits._core.rng import RNGLike
from dpbandits.algorithms.dueling._common import check_told
from dpbandits.algorithms.dueling._streams import trial_seed_sequences
from dpbandits.algorithms.dueling.dp_ebs_elimination import DPEBSElimination
from dpbandits.algorithms.dueling.goptimal_dpdb import GOptimalDPDB
from dpbandits.algorithms.dueling.ldp_ebs_elimination import (
    flip_probability,
    ldp_guarantee,
    randomised_response,
)
from dpbandits.audit.contract import NeighbourPair, PrivacyCase, register_privacy_cases, with_power
from dpbandits.audit.transcript import TranscriptComparison, compare_transcripts
from dpbandits.privacy.counters import BinaryTreeCounterBank
from dpbandits.privacy.noise import NoiseBackend, SecureNoise

__all__ = [
    "BudgetNotSplit",
    "DoubleCountedLabel",
    "FloatAdditionCounterBank",
    "HalvedNoise",
    "ebs_factory",
    "flip_user",
    "forced_subtraction_coins",
    "forced_subtraction_factory",
    "goptimal_factory",
    "lower_index_wins",
    "transcript_comparisons",
]

Agent = DPEBSElimination | GOptimalDPDB
AgentFactory = Callable[..., Agent]

# DP-EBS at a deployed-like ε: K = 3, T = 64 (L = 7), conf_scale 0.1 so that eliminations (and the
# subtraction path) happen mid-horizon in about a third of the runs
EBS_ARMS, EBS_HORIZON, EBS_EPSILON, EBS_CONF_SCALE = 3, 64, 1.0, 0.1
# DP-EBS with the subtraction path forced: T = 63 (L = 6, no node spans the whole horizon), ε = 32 so
# that the node noise is small (discrete Laplace of scale L/ε_c = 0.375) and arm 2 — which loses
# every duel but its self-duels — is eliminated in the second half of the horizon in most runs
# (typically rounds 35–50), after user 1 played (0, 2): user 1's label then enters counter 0 at t = 1
# and again (subtracted) at a round whose tree nodes are disjoint from those of t = 1. The loss is
# counted in units of 1/b and the claim is ε = 2L/b, so a large ε audits the same node combinatorics
# as a small one.
FORCED_HORIZON, FORCED_EPSILON, FORCED_CONF_SCALE = 63, 32.0, 0.3
GOPTIMAL_FEATURES = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]])
GOPTIMAL_HORIZON, GOPTIMAL_EPSILON, GOPTIMAL_SCALE = 400, 1.0, 0.0004  # phase 1 has a few dozen rounds


# ------------------------------------------------------------------------------------ broken agents
class BudgetNotSplit(DPEBSElimination):
    """Deliberately broken: every counter gets the whole ε (the split across counters is omitted)."""

    def _counter_epsilon(self) -> float:
        return self.constants.epsilon


class DoubleCountedLabel(DPEBSElimination):
    """Deliberately broken: each user's outcome enters its left arm's counter twice (element 2·o_t).

    The win tables keep one copy, so the subtraction after an elimination removes it once.
    """

    def tell(self, pair: tuple[int, int], winner: int | None = None, *, first_wins: int | bool | None = None) -> None:
        """Record the outcome, adding it once more to the left arm's counter."""
        if not self.committed:
            _, outcome = check_told(self._asked, pair, winner, first_wins)
            self._pending[pair[0]] -= outcome  # the round's element becomes 2·o_t − pending
        super().tell(pair, winner, first_wins=first_wins)


class HalvedNoise(GOptimalDPDB):
    """Deliberately broken: Laplace scale 1/(2ε) on the per-pair sums while still claiming ε."""

    def _noise_scale(self) -> float:
        return 0.5 / self.settings.epsilon


class FloatAdditionCounterBank(BinaryTreeCounterBank):
    """Deliberately broken: node noise drawn at 0 and added to the p-sums in NumPy floats.

    The noise itself comes from the secure backend (OpenDP, OS CSPRNG); only the addition is done
    outside it — the defect the floating-point attack reads through the low-order bits.
    """

    def _noisy(self, psums: NDArray[Any]) -> NDArray[Any]:
        noise = cast(NoiseBackend, self._noise)  # one backend for the bank (the default)
        return np.asarray(psums, dtype=np.float64) + noise.laplace(self.scale, size=psums.shape)


# ------------------------------------------------------------------------------------ inputs
def lower_index_wins(horizon: int, n_arms: int) -> NDArray[np.int8]:
    """The response table in which every user prefers the lower index (self-duels answer "first wins")."""
    first, second = np.meshgrid(np.arange(n_arms), np.arange(n_arms), indexing="ij")
    return np.broadcast_to(first <= second, (horizon, n_arms, n_arms)).astype(np.int8)


def flip_user(table: NDArray[np.int8], user: int) -> NDArray[np.int8]:
    """The neighbour in which user ``user`` (1-based round) answers the opposite of every pair."""
    neighbour = table.copy()
    neighbour[user - 1] = 1 - neighbour[user - 1]
    return neighbour


def _drive(agent: Agent, table: NDArray[np.int8]) -> Hashable:
    """Feed the table to an ask/tell agent until it commits or the horizon ends; the public record.

    Once committed an agent plays (a, a) and releases nothing more, so the run stops there.
    """
    pairs = []
    while not agent.committed and agent.time < table.shape[0]:
        pair = agent.ask()
        agent.tell(pair, first_wins=int(table[agent.time, pair[0], pair[1]]))
        pairs.append(pair)
    if isinstance(agent, DPEBSElimination):
        return tuple(pairs), tuple(sorted(agent.elimination_rounds.items())), agent.recommendation
    return tuple(pairs), tuple(int(a) for a in agent.active)


def _builder(factory: AgentFactory, seed: np.random.SeedSequence | int) -> Callable[[NoiseBackend], Agent]:
    """``noise -> agent`` with the run's public coins ``seed``; a seeded (replay) noise is allowed, silently."""

    def build(noise: NoiseBackend) -> Agent:
        with warnings.catch_warnings():  # the replay twin is deterministic on purpose (audit only)
            warnings.simplefilter("ignore", InsecureNoiseWarning)
            return factory(rng=seed, noise_backend=noise, insecure_seeded_noise=noise.seeded)

    return build


def transcript_comparisons(
    factory: AgentFactory, data: NDArray[np.int8], neighbour: NDArray[np.int8], n_runs: int, rng: RNGLike,
    *, public_coins: int | None = None,
) -> list[TranscriptComparison]:
    """``n_runs`` runs of the agent on ``data`` (secure noise), each replayed on ``neighbour``.

    Parameters
    ----------
    factory : callable
        ``factory(rng=, noise_backend=, insecure_seeded_noise=) -> agent`` (a configured agent class).
    data, neighbour : ndarray
        Response tables.
    n_runs : int
    rng : int, SeedSequence, Generator or None
        Seeds of the runs' public coins (the opponents' draws), one trial stream per run.
    public_coins : int, optional
        Hold the public coins fixed at this seed in every run (the audit conditions on them).
    """
    seeds: list[Any] = [public_coins] * n_runs if public_coins is not None else trial_seed_sequences(rng, n_runs)
    return [compare_transcripts(_builder(factory, seed), _drive, SecureNoise(), data, neighbour) for seed in seeds]


def _transcript_loss(factory: AgentFactory, public_coins: int | None = None) -> Callable[..., NDArray[np.float64]]:
    def loss(data: Any, neighbour: Any, n: int, rng: np.random.Generator) -> NDArray[np.float64]:
        runs = transcript_comparisons(factory, data, neighbour, n, rng, public_coins=public_coins)
        return np.array([run.supremum for run in runs])

    return loss


def ebs_factory(agent_class: type[DPEBSElimination] = DPEBSElimination, *, horizon: int = EBS_HORIZON,
                epsilon: float = EBS_EPSILON, conf_scale: float = EBS_CONF_SCALE, **options: Any) -> AgentFactory:
    """``(rng=, noise_backend=, insecure_seeded_noise=) -> agent``: DP-EBS on K = 3 arms (the audited configuration).

    ``options`` go to the agent (``counter_epsilon``, ``record_transcript``, ...).
    """

    def factory(**streams: Any) -> DPEBSElimination:
        return agent_class(EBS_ARMS, horizon, epsilon, conf_scale=conf_scale, **options, **streams)

    return factory


def goptimal_factory(agent_class: type[GOptimalDPDB] = GOptimalDPDB) -> Callable[..., GOptimalDPDB]:
    """``(rng=, noise_backend=, insecure_seeded_noise=) -> agent``: GOptimal-DPDB, d = 2, three arms."""

    def factory(**streams: Any) -> GOptimalDPDB:
        return agent_class(GOPTIMAL_FEATURES, GOPTIMAL_HORIZON, GOPTIMAL_EPSILON, play_count_scale=GOPTIMAL_SCALE,
                           **streams)

    return factory


def forced_subtraction_coins() -> int:
    """The first public-coin seed under which user 1 of the forced DP-EBS configuration plays (0, 2)."""
    for seed in itertools.count():
        agent = DPEBSElimination(EBS_ARMS, FORCED_HORIZON, FORCED_EPSILON, counter_epsilon="half", rng=seed)
        if agent.ask() == (0, 2):
            return seed
    raise AssertionError("unreachable")  # pragma: no cover - a third of the seeds qualify


def forced_subtraction_factory(agent_class: type[DPEBSElimination] = DPEBSElimination) -> AgentFactory:
    """The DP-EBS configuration of the forced subtraction path (ε_c = ε/2, the tight accounting)."""
    return ebs_factory(agent_class, horizon=FORCED_HORIZON, epsilon=FORCED_EPSILON, conf_scale=FORCED_CONF_SCALE,
                       counter_epsilon="half")


# ------------------------------------------------------------------------------------ cases
def _transcript_case(name: str, description: str, factory: AgentFactory, pairs: list[NeighbourPair], runs: int,
                     public_coins: int | None = None, control: str = "") -> PrivacyCase:
    """A transcript-loss case; the claim is the one the (possibly broken) agent prints."""
    return PrivacyCase(name, description, factory(rng=0).privacy, pairs,
                       transcript_loss=_transcript_loss(factory, public_coins), n_samples=runs,
                       broken=bool(control), notes={"control": control} if control else {})


def _ebs_cases() -> list[PrivacyCase]:
    table = lower_index_wins(EBS_HORIZON, EBS_ARMS)
    first_user = [NeighbourPair("user t0 = 1 (in every tree node of its counter) flips its answers", table,
                                flip_user(table, 1))]
    forced = lower_index_wins(FORCED_HORIZON, EBS_ARMS)
    subtraction = [NeighbourPair(
        "user 1 (pair (0, 2); arm 2 later eliminated, so its label is also subtracted) flips its answers",
        forced, flip_user(forced, 1))]
    coins = forced_subtraction_coins()
    forced_setting = (f"subtraction path forced (T={FORCED_HORIZON}, ε={FORCED_EPSILON:g}, ε_c = ε/2, "
                      f"public coins {coins})")
    name = "dp-ebs-elimination"
    quarter = ebs_factory(counter_epsilon="quarter")
    # with ε_c = ε/4 the agent prints the paper's ε; its tight accounting (one counter, two elements)
    # promises ε/2, which is what this case audits
    tight = dataclasses.replace(quarter(rng=0).privacy, epsilon=EBS_EPSILON / 2,
                                reason="tight accounting of ε_c = ε/4: 1 counter × group of 2 × ε/4")
    return [
        PrivacyCase(name, f"K={EBS_ARMS}, T={EBS_HORIZON}, ε_c = ε/4, secure counters, against the tight ε/2", tight,
                    first_user, transcript_loss=_transcript_loss(quarter), n_samples=20),
        _transcript_case(name, f"K={EBS_ARMS}, T={EBS_HORIZON}, ε_c = ε/2, secure counters",
                         ebs_factory(counter_epsilon="half"), first_user, 20),
        _transcript_case(name, f"{forced_setting}, secure counters", forced_subtraction_factory(), subtraction, 8,
                         coins),
        _transcript_case(name, f"every counter given the whole ε; {forced_setting}",
                         forced_subtraction_factory(BudgetNotSplit), subtraction, 8, coins, "budget not split"),
        _transcript_case(name, f"each label added twice to its counter; {forced_setting}",
                         forced_subtraction_factory(DoubleCountedLabel), subtraction, 8, coins, "double-counted label"),
    ]


# the counter bank of DP-EBS at ε = 8 (ε_c = 2, node scale L/ε_c = 3.5): small enough a scale for the
# float attack to read the low-order bits of a float addition in a few thousand draws
FLOAT_EPSILON = 8.0


def _first_releases(bank_class: type[BinaryTreeCounterBank], **options: Any) -> Callable[..., NDArray[Any]]:
    """``n`` independent first releases of a counter fed the label ``bit``: one bank of n counters, one update."""
    counter_epsilon = DPEBSElimination(EBS_ARMS, EBS_HORIZON, FLOAT_EPSILON).constants.counter_epsilon

    def sample(bit: int, n: int, rng: np.random.Generator) -> NDArray[Any]:
        bank = bank_class(n, EBS_HORIZON, counter_epsilon, **options)
        return bank.update(np.full(n, bit, dtype=np.int64))

    return sample


def _as_float(releases: NDArray[Any]) -> NDArray[np.float64]:
    return np.asarray(releases, dtype=np.float64)


def _float_cases() -> list[PrivacyCase]:
    claim = DPEBSElimination(EBS_ARMS, EBS_HORIZON, FLOAT_EPSILON).privacy
    pair = [NeighbourPair("user 1's label 1 -> 0: the first element of its arm's counter", 1, 0)]
    return [
        with_power(PrivacyCase("dp-ebs-elimination", f"the agent's counter bank at ε = {FLOAT_EPSILON:g} (secure "
                               "exact integer noise): first releases", claim, pair,
                               sample=_first_releases(BinaryTreeCounterBank, integer=True), statistic=_as_float,
                               n_samples=8000, float_attack=True),
                   0.5, "a threshold event at the median release; at eps = 8 this case audits the low-order bits "
                   "(float attack), not the frequencies", n_events=12),
        PrivacyCase("dp-ebs-elimination", f"the agent's counter bank at ε = {FLOAT_EPSILON:g}, adding OpenDP noise "
                    "drawn at 0 in NumPy floats",
                    claim, pair, sample=_first_releases(FloatAdditionCounterBank), statistic=_as_float,
                    n_samples=8000, float_attack=True, broken=True, notes={"control": "float addition"}),
    ]


def _goptimal_cases() -> list[PrivacyCase]:
    n_arms = len(GOPTIMAL_FEATURES)
    table = lower_index_wins(GOPTIMAL_HORIZON, n_arms)
    # users alternate "first wins" / "second wins" whatever the pair: no arm is eliminated after phase 1
    alternating = np.broadcast_to((np.arange(GOPTIMAL_HORIZON) % 2)[:, None, None],
                                  (GOPTIMAL_HORIZON, n_arms, n_arms)).astype(np.int8)
    phase_two = int(goptimal_factory()(rng=0).phases[0].counts.sum()) + 1  # phase 1's schedule is data-free
    pairs = [
        NeighbourPair("user 5 (phase 1) flips its answers", table, flip_user(table, 5)),
        NeighbourPair(f"user {phase_two} (first of phase 2, its pair chosen from phase 1's release) flips its "
                      "answers", alternating, flip_user(alternating, phase_two)),
    ]
    return [
        _transcript_case("goptimal-dpdb", "d=2, three arms, secure per-pair sums", goptimal_factory(), pairs, 20),
        _transcript_case("goptimal-dpdb", "noise scale 1/(2ε) while claiming ε", goptimal_factory(HalvedNoise),
                         pairs, 5, control="noise too small"),
    ]


LDP_EPSILON = 1.0


def _deployed_reports(bit: int, n: int, rng: np.random.Generator) -> NDArray[np.int64]:
    """``n`` reports of a user holding ``bit``, each by the deployed randomiser (OpenDP's exact coin)."""
    return np.array([randomised_response(bit, LDP_EPSILON) for _ in range(n)], dtype=np.int64)


def _rarely_flipped_reports(bit: int, n: int, rng: np.random.Generator) -> NDArray[np.int64]:
    """Broken: flips with probability q/2 instead of q = 1/(1 + e^ε) (secure coins, wrong probability)."""
    return SecureNoise().randomized_response(np.full(n, bit), 1.0 - flip_probability(LDP_EPSILON) / 2)


def _ldp_cases() -> list[PrivacyCase]:
    pair = [NeighbourPair("the user's preference bit flipped (1 -> 0)", 1, 0)]
    claim = ldp_guarantee(LDP_EPSILON)
    return [
        *(with_power(PrivacyCase("ldp-ebs-elimination", "users' randomised response on the deployed OpenDP coin",
                                 claim, pair, sample=_deployed_reports),
                     1.0 - flip_probability(LDP_EPSILON), "the report equal to the user's bit", n_events=2,
                     n_samples=n, heavy=n > 2000) for n in (2000, 20_000)),
        PrivacyCase("ldp-ebs-elimination", "randomised response flipping half as often as ε needs", claim, pair,
                    sample=_rarely_flipped_reports, n_samples=1000, broken=True,
                    notes={"control": "noise too small"}),
    ]


@register_privacy_cases("dp-ebs-elimination", "goptimal-dpdb", "ldp-ebs-elimination")
def dueling_cases() -> list[PrivacyCase]:
    """Transcript-loss audits of the central-model agents, the local randomiser's audit, and controls."""
    return [*_ebs_cases(), *_float_cases(), *_goptimal_cases(), *_ldp_cases()]
