"""Per-step cost of every ask/tell agent against a plain NumPy loop of the same algorithm and its peers.

For each agent a deployer drives one step at a time (issue 17), four timings, medians of interleaved
rounds (``_harness.interleaved``), per step (one ``ask`` + one ``tell``, or one pull):

* **ours, fast**: the library's agent with seeded NumPy noise (``insecure_seeded_noise=True``);
* **ours, secure**: the same agent with its default secure noise (OpenDP, OS CSPRNG) — private
  algorithms only (for the others both paths are the same code);
* **plain loop**: an independent plain per-step NumPy loop of the same algorithm
  (``benchmarks/plain_loops.py``: no validation, no ask/tell interface, the state in arrays);
  for a private algorithm on the secure path, the plain loop whose noise is one direct OpenDP call
  per release (the cost floor set by OpenDP itself);
* **peer**: the same algorithm in another library, where one exists: duelpy 1.0.0 (RUCB,
  Beat-the-Mean, RMED1, Double Thompson Sampling, Copeland Confidence Bound, Interleaved Filtering),
  run with its own loop (``algorithm.run()`` on a ``MatrixFeedback``). duelpy is a **speed** peer
  only, never a reference for results: its RUCB records every duel as won by the first arm (its
  ``step`` tests ``feedback_mechanism.duel(c, d) < 0`` on the boolean that ``duel`` returns, which is
  never below 0), and an independent review found its RMED1 broken as shipped too; so its regret or
  its pulls must not be compared with dpbandits' (the plain loops are the like-for-like reference).

Targets: ours fast <= 2 × plain loop; ours secure <= 3 × the OpenDP-direct plain loop; ours faster
than the peer (ratio peer / ours > 1). For DP-BAI (issue 38) also **a do-nothing ask/tell object**
driven by the same loop (``ask`` returns arm 0, ``tell`` counts down the trial's pulls): ours fast,
building each trial's agent included, <= 2 × that floor of the interface itself; and the same per pull
inside one long phase (no building, no phase end), beside the microseconds of building a trial's agent
and of its phase end (what the per-trial ratio adds to the per-pull one). Feedback is the same in every loop: duel (a, b) at round t is
won by a iff ``u[t] < P[a, b]`` (instance F2, K = 10 arms), and a pull of arm i returns
``min(1, 2·μ_i·U_t)`` (the DP-BAI Section-5 instance, K = 30; for Sequential Halving ``2·μ_i·U_t``
unclipped, as its plain loop computes it, so that both make the same pulls and recommend the same arm).

No peer exists for DP-EBS-Elimination, its local-DP baseline, GOptimal-DPDB, MaxInP, CoLSTIM, DP-BAI,
Sequential Halving or USCA's learning stage in a maintained package (duelpy has no private and no
linear dueling algorithm; MABWiser's UCB1 is a regret-minimising K-armed bandit, an algorithm
dpbandits does not have, so there is no like-for-like pair: see ``docs`` of issue 17).

duelpy is not a dependency of dpbandits. Install it where this script finds it (``.venv-bench/peers``,
git-ignored; it is added to ``sys.path`` when present)::

    python -m pip install --no-deps --target .venv-bench/peers duelpy==1.0.0

duelpy 1.0.0 uses ``np.float`` and ``np.infty`` (removed from NumPy); the shim of
``bench_dueling.load_duelpy`` is applied before importing it. Without duelpy the peer column is
skipped and said so.

Usage::

    python benchmarks/bench_agents.py            # full
    python benchmarks/bench_agents.py --quick    # fewer steps and rounds, to check that it runs
    python benchmarks/bench_agents.py -k dp-ebs  # only the agents whose name contains this
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
PEERS = HERE.parent / ".venv-bench" / "peers"
if PEERS.is_dir():
    sys.path.append(str(PEERS))

import plain_loops as plain  # noqa: E402
from _harness import interleaved, load_average, report_ratio, report_value  # noqa: E402

from dpbandits._core.errors import InsecureNoiseWarning  # noqa: E402
from dpbandits.algorithms.bai.dp_bai import DPBAI  # noqa: E402
from dpbandits.algorithms.bai.sequential_halving import SequentialHalving  # noqa: E402
from dpbandits.algorithms.dueling.beat_the_mean import BeatTheMean  # noqa: E402
from dpbandits.algorithms.dueling.colstim import CoLSTIM  # noqa: E402
from dpbandits.algorithms.dueling.copeland_confidence_bound import CopelandConfidenceBound  # noqa: E402
from dpbandits.algorithms.dueling.double_thompson import DoubleThompsonSampling  # noqa: E402
from dpbandits.algorithms.dueling.dp_ebs_elimination import DPEBSElimination  # noqa: E402
from dpbandits.algorithms.dueling.goptimal_dpdb import GOptimalDPDB  # noqa: E402
from dpbandits.algorithms.dueling.interleaved_filter import InterleavedFilter  # noqa: E402
from dpbandits.algorithms.dueling.ldp_ebs_elimination import LDPEBSElimination  # noqa: E402
from dpbandits.algorithms.dueling.maxinp import MaxInP  # noqa: E402
from dpbandits.algorithms.dueling.rmed import RMED1  # noqa: E402
from dpbandits.algorithms.dueling.rucb import RUCB  # noqa: E402
from dpbandits.envs.dueling import finite_instance  # noqa: E402
from dpbandits.envs.linear import dp_bai_instance  # noqa: E402

warnings.simplefilter("ignore", InsecureNoiseWarning)  # the fast path is seeded on purpose (a timing)

SEED = 20250117
EPSILON = 1.0
HORIZON = 1_000_000  # declared T of the dueling agents (sets their confidence; the runs are shorter)
DUELING = finite_instance("f2")
P = DUELING.preference_matrix
K = DUELING.n_arms
FEATURES = DUELING.features
BAI = dp_bai_instance()
WIDTHS = 2.0 * BAI.means  # rewards Uniform[0, 2 mu_i], clipped to [0, 1] as DP-BAI's calibration assumes
BAI_BUDGET, BAI_EPSILON = 1000, 0.1


@dataclass
class Case:
    """One agent: its runs (each returns the number of steps it made), the plain loops and a peer."""

    name: str
    steps: int
    ours: Callable[[int, bool], int]
    plain: Callable[[int], int]
    private: bool = False
    plain_secure: Callable[[int], int] | None = None
    peer: tuple[str, Callable[[int], int]] | None = None
    do_nothing: Callable[[int], int] | None = None
    """The same driving loop around an ask/tell object that does nothing (the interface's own cost)."""


class DoNothingAgent:
    """An ask/tell object that does nothing but end after ``pulls`` pulls (the floor of the interface)."""

    def __init__(self, pulls: int) -> None:
        self.done = False
        self._left = pulls

    def ask(self) -> int:
        return 0

    def tell(self, arm: int, reward: float) -> None:
        self._left -= 1
        if not self._left:
            self.done = True


def uniforms(steps: int) -> list[float]:
    return np.random.default_rng(SEED).random(steps).tolist()


def duel(agent: Any, steps: int) -> int:
    u = uniforms(steps)
    ask, tell = agent.ask, agent.tell
    for t in range(steps):
        a, b = ask()
        tell((a, b), first_wins=u[t] < P[a, b])
    return steps


def secure_kwargs(secure: bool) -> dict[str, Any]:
    return {} if secure else {"rng": SEED, "insecure_seeded_noise": True}


def load_duelpy() -> Any:
    """duelpy's algorithms and MatrixFeedback with the NumPy-alias shim, or None."""
    setattr(np, "float", float)  # noqa: B010  (removed from NumPy; duelpy 1.0.0 still uses it)
    setattr(np, "infty", np.inf)  # noqa: B010
    try:
        import duelpy.algorithms as algorithms
        from duelpy.feedback import MatrixFeedback
    except ImportError:
        return None
    return algorithms, MatrixFeedback


def duelpy_run(class_name: str) -> Callable[[int], int] | None:
    loaded = load_duelpy()
    if loaded is None:
        return None
    algorithms, feedback = loaded

    def run(steps: int) -> int:
        state = np.random.RandomState(SEED)
        algorithm = getattr(algorithms, class_name)(feedback(P.copy(), random_state=state), time_horizon=steps,
                                                    random_state=np.random.RandomState(SEED + 1))
        algorithm.run()
        return steps

    return run


def bai_pulls(agent: Any, u: list[float], start: int, *, clip: bool = True) -> int:
    """Drive a best-arm agent to its end with rewards w_i·U, clipped to 1 if ``clip`` (as its plain loop
    computes them); returns the pulls made. ``done`` is read as a deployer's loop reads it."""
    i = start
    ask, tell = agent.ask, agent.tell
    if clip:
        while not agent.done:
            arm = ask()
            tell(arm, min(1.0, WIDTHS[arm] * u[i]))
            i += 1
    else:
        while not agent.done:
            arm = ask()
            tell(arm, WIDTHS[arm] * u[i])
            i += 1
    return i - start


def dp_bai_case(trials: int) -> Case:
    algorithm = DPBAI(BAI.features, BAI_BUDGET, BAI_EPSILON)
    u = np.random.default_rng(SEED).random(BAI_BUDGET * trials + 1).tolist()

    def ours(_: int, secure: bool) -> int:
        pulls = 0
        for trial in range(trials):
            agent = algorithm.agent(**({} if secure else {"rng": SEED + trial, "insecure_seeded_noise": True}))
            pulls += bai_pulls(agent, u, pulls)
        return pulls

    def loop(noise: str) -> Callable[[int], int]:
        def run(_: int) -> int:
            rng = np.random.default_rng(SEED)
            for trial in range(trials):
                plain.dp_bai(BAI.features, BAI_BUDGET, BAI_EPSILON, WIDTHS, u[trial * BAI_BUDGET:], rng, noise)
            return trials * BAI_BUDGET  # DP-BAI spends its whole budget here (T' = T − reserved, all phases)
        return run

    def do_nothing(_: int) -> int:
        pulls = 0
        for _trial in range(trials):
            pulls += bai_pulls(DoNothingAgent(BAI_BUDGET), u, pulls)
        return pulls

    return Case("dp-bai", trials, ours, loop("numpy"), private=True, plain_secure=loop("opendp"),
                do_nothing=do_nothing)


def dp_bai_parts(rounds: int, quick: bool) -> None:
    """DP-BAI's agent cost in its parts: per pull inside a long phase (÷ the do-nothing object), and the
    microseconds of building a trial's agent and of its phase end (what the per-trial ratio adds)."""
    pulls = 20_000 if quick else 200_000
    long_phase = DPBAI(BAI.features, 4 * pulls, BAI_EPSILON)  # phase 1 alone holds more than `pulls` pulls
    u = np.random.default_rng(SEED).random(pulls + 1).tolist()

    def steady(make: Callable[[], Any]) -> Callable[[], int]:
        def run() -> int:  # bai_pulls' loop, stopped after `pulls` pulls
            agent = make()
            ask, tell = agent.ask, agent.tell
            i = 0
            while not agent.done and i < pulls:
                arm = ask()
                tell(arm, min(1.0, WIDTHS[arm] * u[i]))
                i += 1
            return i
        return run

    medians = interleaved({
        "ours": steady(lambda: long_phase.agent(rng=SEED, insecure_seeded_noise=True)),
        "do-nothing": steady(lambda: DoNothingAgent(pulls + 1)),
    }, rounds)
    ours, floor = medians["ours"], medians["do-nothing"]
    report_ratio("dp-bai per pull inside a phase / a do-nothing ask/tell object", ours / floor,
                 numerator=f"ours {ours * 1e9:.0f} ns", denominator=f"do-nothing {floor * 1e9:.0f} ns",
                 target="<= 2", met=ours / floor <= 2)
    algorithm = DPBAI(BAI.features, BAI_BUDGET, BAI_EPSILON)
    n_agents = 200

    def build() -> int:
        for i in range(n_agents):
            algorithm.agent(rng=SEED + i, insecure_seeded_noise=True)
        return n_agents

    def one_pull_short() -> list[Any]:
        agents = [algorithm.agent(rng=SEED + i, insecure_seeded_noise=True) for i in range(n_agents)]
        for agent in agents:  # every pull of the first phase but its last
            while agent._position < agent._end - 1:
                agent.tell(agent.ask(), 0.5)
        return agents

    ends = []
    for _ in range(rounds):
        agents = one_pull_short()  # untimed
        start = time.perf_counter()
        for agent in agents:
            agent.tell(agent.ask(), 0.5)  # the phase's last pull: its end (release, selection, next plan)
        ends.append((time.perf_counter() - start) / n_agents)
    construct = interleaved({"build": build}, rounds)["build"]
    report_value("dp-bai: building a trial's agent", construct * 1e6, "us")
    report_value("dp-bai: the end of the first phase (with its last pull)", float(np.median(ends)) * 1e6, "us",
                 note=f"{algorithm.planner.n_phases} phase(s) per trial of {BAI_BUDGET} pulls")


def sequential_halving_case(trials: int) -> Case:
    u = np.random.default_rng(SEED).random(BAI_BUDGET * trials + 1).tolist()
    # the plain loop's rewards are w_i·U unclipped (Sequential Halving has no reward bound): ours gets the
    # same rewards, so both make the same pulls and recommend the same arm (checked here, untimed)
    for trial in range(trials):
        agent = SequentialHalving(BAI.n_arms, BAI_BUDGET, rng=SEED + trial)
        bai_pulls(agent, u, trial * BAI_BUDGET, clip=False)
        reference = plain.sequential_halving(BAI.n_arms, BAI_BUDGET, WIDTHS, u[trial * BAI_BUDGET:])
        if agent.recommendation != reference:
            raise SystemExit(f"sequential-halving: ours recommends {agent.recommendation}, the plain loop {reference}")

    def ours(_: int, secure: bool) -> int:
        pulls = 0
        for trial in range(trials):
            agent = SequentialHalving(BAI.n_arms, BAI_BUDGET, rng=SEED + trial)
            pulls += bai_pulls(agent, u, trial * BAI_BUDGET, clip=False)
        return pulls

    def loop(_: int) -> int:
        pulls = 0
        for trial in range(trials):
            plain.sequential_halving(BAI.n_arms, BAI_BUDGET, WIDTHS, u[trial * BAI_BUDGET:])
            rounds = int(np.ceil(np.log2(BAI.n_arms)))
            size = BAI.n_arms
            for _ in range(rounds):
                pulls += size * (BAI_BUDGET // (size * rounds))
                size = -(-size // 2)
        return pulls

    return Case("sequential-halving", trials, ours, loop)


def usca_case(steps: int, rounds: int) -> Case:
    from dpbandits.algorithms.kernel.usca import USCA
    from dpbandits.envs.kernel import KernelBanditEnvironment, joint_points

    env = KernelBanditEnvironment(function_seed=0)
    total = steps * (rounds + 2)
    agent = USCA(horizon=total, epsilon=1.0, reward_bound=1.5, kernel=env.kernel,
                 context_generator=env.sample_contexts, clip=True, rng=SEED)
    generator = np.random.default_rng(SEED)
    contexts = env.sample_contexts(total, generator)
    rewards = np.clip(generator.normal(size=total), -1.5, 1.5).tolist()
    feature_map = agent.feature_map
    assert feature_map is not None

    def ours(n: int, secure: bool) -> int:
        start = agent.rounds_observed
        for t in range(start, start + n):
            agent.ask()
            agent.tell(contexts[t], rewards[t])
        # tell keeps the round's context and reward; b = Σ φ(wₜ)·yₜ is computed from the kept rows at the
        # first prediction: its share for these rounds is timed here, so both sides do the same work
        agent.surrogate.reward_vector(joint_points(agent.learning_actions[start : start + n], contexts[start : start + n]),
                                      np.asarray(rewards[start : start + n]))
        return n

    def loop(n: int) -> int:
        plain.usca_learning(feature_map.frequencies, feature_map.weights, agent.learning_actions, contexts, rewards, n)
        return n

    return Case("usca (learning rounds)", steps, ours, loop)


def cases(quick: bool, rounds: int) -> list[Case]:
    scale = 0.2 if quick else 1.0

    def n(steps: int) -> int:
        return max(50, int(steps * scale))

    def loop(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Callable[[int], int]:
        def run(steps: int) -> int:
            fn(*args[:1], steps, uniforms(steps), *args[1:], **kwargs)
            return steps
        return run

    rng = np.random.default_rng
    goptimal_scale = 0.002  # phases of a few thousand rounds, so that phase ends (design, MLE, noise) are timed too
    return [
        Case("dp-ebs-elimination", n(3000), lambda s, sec: duel(DPEBSElimination(K, HORIZON, EPSILON, **secure_kwargs(sec)), s),
             loop(plain.dp_ebs_elimination, P, rng(SEED), HORIZON, EPSILON), private=True,
             plain_secure=loop(plain.dp_ebs_elimination, P, rng(SEED), HORIZON, EPSILON, noise="opendp")),
        Case("ldp-ebs-elimination", n(3000), lambda s, sec: duel(LDPEBSElimination(K, HORIZON, EPSILON, rng=SEED), s),
             loop(plain.ldp_ebs_elimination, P, rng(SEED), HORIZON, EPSILON)),
        Case("goptimal-dpdb", n(20000),
             lambda s, sec: duel(GOptimalDPDB(FEATURES, HORIZON, EPSILON, play_count_scale=goptimal_scale,
                                              **secure_kwargs(sec)), s),
             lambda s: (plain.goptimal_dpdb(FEATURES, P, s, uniforms(s), rng(SEED), HORIZON, EPSILON, goptimal_scale), s)[1],
             private=True,
             plain_secure=lambda s: (plain.goptimal_dpdb(FEATURES, P, s, uniforms(s), rng(SEED), HORIZON, EPSILON,
                                                         goptimal_scale, noise="opendp"), s)[1]),
        Case("rucb", n(2000), lambda s, sec: duel(RUCB(K, HORIZON, rng=SEED), s), loop(plain.rucb, P, rng(SEED)),
             peer=("duelpy RelativeUCB", duelpy_run("RelativeUCB"))),
        Case("beat-the-mean", n(3000), lambda s, sec: duel(BeatTheMean(K, HORIZON, rng=SEED), s),
             loop(plain.beat_the_mean, P, rng(SEED), HORIZON),
             peer=("duelpy BeatTheMeanBandit", duelpy_run("BeatTheMeanBandit"))),
        Case("rmed1", n(2000), lambda s, sec: duel(RMED1(K, HORIZON, rng=SEED), s), loop(plain.rmed1, P),
             peer=("duelpy Rmed1", duelpy_run("Rmed1"))),
        Case("double-thompson-sampling", n(1000), lambda s, sec: duel(DoubleThompsonSampling(K, HORIZON, rng=SEED), s),
             loop(plain.double_thompson, P, rng(SEED)),
             peer=("duelpy DoubleThompsonSampling", duelpy_run("DoubleThompsonSampling"))),
        Case("copeland-confidence-bound", n(1000),
             lambda s, sec: duel(CopelandConfidenceBound(K, HORIZON, rng=SEED), s),
             loop(plain.copeland_confidence_bound, P, rng(SEED)),
             peer=("duelpy CopelandConfidenceBound", duelpy_run("CopelandConfidenceBound"))),
        Case("maxinp", n(600), lambda s, sec: duel(MaxInP(FEATURES, HORIZON, confidence_scale=1.0, rng=SEED), s),
             lambda s: (plain.maxinp(FEATURES, P, s, uniforms(s), rng(SEED), HORIZON), s)[1]),
        Case("colstim", n(600), lambda s, sec: duel(CoLSTIM(FEATURES, HORIZON, rng=SEED), s),
             lambda s: (plain.colstim(FEATURES, P, s, uniforms(s), rng(SEED), HORIZON), s)[1]),
        Case("interleaved-filter", n(20000), lambda s, sec: duel(InterleavedFilter(K, HORIZON, rng=SEED), s),
             loop(plain.interleaved_filter, P, rng(SEED), HORIZON),
             peer=("duelpy InterleavedFiltering", duelpy_run("InterleavedFiltering"))),
        dp_bai_case(2 if quick else 10),
        sequential_halving_case(2 if quick else 10),
        usca_case(n(2000), rounds),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer steps and rounds, to check that it runs")
    parser.add_argument("-k", "--select", action="append", default=[], help="only agents whose name contains this")
    parser.add_argument("--rounds", type=int, default=None, help="interleaved rounds (default 7, quick 3)")
    args = parser.parse_args()
    rounds = args.rounds or (3 if args.quick else 7)
    print(f"# per-step medians of {rounds} interleaved rounds; {load_average()}")
    if load_duelpy() is None:
        print("# duelpy is not importable (see the module docstring): the peer column is skipped")
    for case in cases(args.quick, rounds):
        if args.select and not any(word in case.name for word in args.select):
            continue
        runs: dict[str, Callable[[], Any]] = {
            "ours fast": lambda c=case: c.ours(c.steps, False),
            "plain loop": lambda c=case: c.plain(c.steps),
        }
        if case.private:
            runs["ours secure"] = lambda c=case: c.ours(c.steps, True)
            if case.plain_secure is not None:
                runs["plain loop, OpenDP noise"] = lambda c=case: c.plain_secure(c.steps)  # type: ignore[misc]
        if case.peer is not None and case.peer[1] is not None:
            runs[case.peer[0]] = lambda c=case: c.peer[1](c.steps)  # type: ignore[index,misc]
        if case.do_nothing is not None:
            runs["do-nothing ask/tell"] = lambda c=case: c.do_nothing(c.steps)  # type: ignore[misc]
        medians = interleaved(runs, rounds)
        for label, seconds in medians.items():
            report_value(f"{case.name}: {label}", seconds * 1e6, "us/step")
        fast, reference = medians["ours fast"], medians["plain loop"]
        report_ratio(f"{case.name} fast / plain loop", fast / reference, numerator=f"ours {fast * 1e6:.2f} us",
                     denominator=f"plain loop {reference * 1e6:.2f} us", target="<= 2", met=fast / reference <= 2)
        if "do-nothing ask/tell" in medians:
            floor = medians["do-nothing ask/tell"]
            report_ratio(f"{case.name} fast / a do-nothing ask/tell object", fast / floor,
                         numerator=f"ours {fast * 1e6:.3f} us (its agents' construction included)",
                         denominator=f"do-nothing {floor * 1e6:.3f} us", target="<= 2", met=fast / floor <= 2)
        if "ours secure" in medians and "plain loop, OpenDP noise" in medians:
            secure, floor = medians["ours secure"], medians["plain loop, OpenDP noise"]
            report_ratio(f"{case.name} secure / plain loop with OpenDP noise", secure / floor,
                         numerator=f"ours secure {secure * 1e6:.2f} us",
                         denominator=f"OpenDP-direct loop {floor * 1e6:.2f} us", target="<= 3", met=secure / floor <= 3)
        if case.peer is not None:
            name, run = case.peer
            if run is None:
                print(f"# {case.name}: peer {name} not installed (see the module docstring)")
            else:
                peer = medians[name]
                report_ratio(f"{case.name} peer / ours (fast)", peer / fast, numerator=f"{name} {peer * 1e6:.2f} us",
                             denominator=f"ours {fast * 1e6:.2f} us", target="> 1", met=peer > fast)
    if not args.select or any(word in "dp-bai" for word in args.select):
        dp_bai_parts(rounds, args.quick)
    print(f"# {load_average()}")


if __name__ == "__main__":
    main()
