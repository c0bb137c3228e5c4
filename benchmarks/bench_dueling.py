"""Speed of the dueling simulations (issue 6), as ratios of medians of interleaved runs, like for like.

Usage::

    python benchmarks/bench_dueling.py            # full size (lead's run)
    python benchmarks/bench_dueling.py --quick    # reduced size, to check the script works

On instance F2 (K = 10 arms) at epsilon = 1:

1. DP-EBS-Elimination (block-vectorised simulation) runs T = 10^6 rounds for 20 trials in < 30 s
   (issue 6's target), in one process and split over 2 worker processes.
2. Like for like, per round of one trial: the vectorised DP-EBS-Elimination simulation against a
   plain per-round NumPy loop of the same algorithm (``plain_loops.dp_ebs_elimination``), and our
   batched RUCB simulation (all trials advanced together) against duelpy's one-step-at-a-time RUCB
   (``RelativeUCB(MatrixFeedback(P)).run()``) on the same preference matrix.
3. Issue 6's original figure, duelpy RUCB per round / DP-EBS per round (target >= 20), compares two
   different algorithms: it is printed as such (the cost per round of each library's way to run a
   dueling study), not as a like-for-like ratio.
4. The per-round costs behind the horizon limits of :mod:`dpbandits.algorithms.dueling._common` (a
   round-by-round simulation of 20 trials is assumed to cost at most 5 ms per round, a
   block-vectorised elimination 0.05-0.2 us per arm and round when no elimination happens).

The ask/tell agents' per-step costs (against plain loops and duelpy) are in ``bench_agents.py``.

duelpy 1.0.0 (2021) does not import on NumPy >= 1.24 (``np.float``) nor use ``np.infty`` on NumPy 2; the
shim ``np.float = float; np.infty = np.inf`` is applied here, before the import, and nowhere else in
the project. duelpy is not a dependency of dpbandits: install it where the benchmarks find it
(``.venv-bench/peers``, git-ignored, added to ``sys.path`` when present)::

    python -m pip install --no-deps --target .venv-bench/peers duelpy==1.0.0

Without duelpy the comparison is skipped (and said so); the other figures are still printed.
duelpy is used for speed only, not as a reference for regret: its RUCB records every duel as won by the
first arm (``duel(c, d) < 0`` on a boolean), and its RMED1 was found broken as shipped as well.
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
PEERS = HERE.parent / ".venv-bench" / "peers"
if PEERS.is_dir():
    sys.path.append(str(PEERS))

import plain_loops  # noqa: E402
from _harness import interleaved, load_average, report_ratio, report_value  # noqa: E402

from dpbandits.algorithms.dueling.dp_ebs_elimination import simulate_dp_ebs_elimination  # noqa: E402
from dpbandits.algorithms.dueling.rucb import simulate_rucb  # noqa: E402
from dpbandits.envs.dueling import finite_instance  # noqa: E402


def load_duelpy() -> Any:
    """Import duelpy's RUCB and feedback classes with the NumPy-alias shim, or return None."""
    setattr(np, "float", float)  # noqa: B010  (the alias NumPy removed; duelpy 1.0.0 still uses it)
    setattr(np, "infty", np.inf)  # noqa: B010  (removed in NumPy 2; duelpy Savage uses it)
    try:
        from duelpy.algorithms import RelativeUCB
        from duelpy.feedback import MatrixFeedback
    except ImportError:
        return None
    return RelativeUCB, MatrixFeedback


def _half(job: tuple[np.random.SeedSequence, int, int, float]) -> int:
    seed, n_trials, horizon, epsilon = job
    simulate_dp_ebs_elimination(finite_instance("f2"), n_trials=n_trials, rng=seed, horizon=horizon, epsilon=epsilon)
    return n_trials


def _round_costs(quick: bool) -> None:
    """Per-round cost of every round-by-round comparator (20 trials, F2), against the assumed 5 ms."""
    from dpbandits.algorithms.dueling.beat_the_mean import simulate_beat_the_mean
    from dpbandits.algorithms.dueling.colstim import simulate_colstim
    from dpbandits.algorithms.dueling.copeland_confidence_bound import simulate_copeland_confidence_bound
    from dpbandits.algorithms.dueling.double_thompson import simulate_double_thompson
    from dpbandits.algorithms.dueling.maxinp import simulate_maxinp
    from dpbandits.algorithms.dueling.rmed import simulate_rmed1

    env, rounds = finite_instance("f2"), (300 if quick else 3_000)
    for simulate in (simulate_rucb, simulate_beat_the_mean, simulate_rmed1, simulate_double_thompson,
                     simulate_copeland_confidence_bound, simulate_maxinp, simulate_colstim):
        started = time.perf_counter()
        simulate(env, n_trials=20, rng=1, horizon=rounds)
        per_round = (time.perf_counter() - started) / rounds
        report_ratio(f"{simulate.__name__} per round (20 trials) / the assumed 5 ms", per_round / 5e-3,
                     numerator=f"{per_round * 1e6:.0f} us", denominator="5 ms", target="<= 1", met=per_round <= 5e-3)
    # worst case of the elimination simulations: eps so small that nothing is eliminated before T
    horizon = 100_000 if quick else 1_000_000
    started = time.perf_counter()
    simulate_dp_ebs_elimination(env, n_trials=1, rng=1, horizon=horizon, epsilon=0.01)
    per_arm_round = (time.perf_counter() - started) / (horizon * env.n_arms)
    report_ratio("DP-EBS-Elimination without eliminations, per arm and round / the assumed 200 ns",
                 per_arm_round / 200e-9, numerator=f"{per_arm_round * 1e9:.1f} ns", denominator="200 ns",
                 target="<= 1", met=per_arm_round <= 200e-9)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="reduced sizes, to check the script works")
    args = parser.parse_args()
    horizon, trials = (100_000, 2) if args.quick else (1_000_000, 20)
    reference_rounds = 2_000 if args.quick else 20_000
    loop_rounds = 1_000 if args.quick else 5_000
    rounds = 3 if args.quick else 5
    epsilon = 1.0
    env = finite_instance("f2")
    print(f"# instance F2: K = {env.n_arms}, epsilon = {epsilon}; DP-EBS: T = {horizon}, {trials} trials; {load_average()}")

    # 1. issue 6's target (one timing each: a run is long)
    started = time.perf_counter()
    out = simulate_dp_ebs_elimination(env, n_trials=trials, rng=20240322, horizon=horizon, epsilon=epsilon)
    ebs_seconds = time.perf_counter() - started
    print(f"DP-EBS-Elimination, 1 process: {ebs_seconds:.2f} s for {trials} trials x {horizon} rounds "
          f"({ebs_seconds / (horizon * trials) * 1e9:.1f} ns per round); mean reward regret {out['reward_regret'].mean():.4g}")
    seeds = np.random.SeedSequence(20240322).spawn(2)  # the same trials split over 2 worker processes
    started = time.perf_counter()
    with ProcessPoolExecutor(max_workers=2) as pool:
        halves = list(pool.map(_half, [(seed, trials // 2, horizon, epsilon) for seed in seeds]))
    parallel_seconds = time.perf_counter() - started
    print(f"DP-EBS-Elimination, 2 processes: {parallel_seconds:.2f} s for {sum(halves)} trials")
    report_ratio("DP-EBS simulation: 1 process / 2 processes (speed-up)", ebs_seconds / parallel_seconds,
                 numerator=f"1 process {ebs_seconds:.2f} s", denominator=f"2 processes {parallel_seconds:.2f} s")
    if not args.quick:
        best = min(ebs_seconds, parallel_seconds)
        report_ratio("DP-EBS 10^6 rounds x 20 trials / the 30 s target", best / 30.0, numerator=f"{best:.1f} s",
                     denominator="30 s", target="<= 1", met=best < 30)

    # 2. like for like, per round of one trial (medians of interleaved runs)
    u = np.random.default_rng(20240322).random(loop_rounds).tolist()
    duelpy = load_duelpy()
    runs: dict[str, Any] = {
        "dp-ebs vectorised": lambda: simulate_dp_ebs_elimination(
            env, n_trials=trials, rng=20240322, horizon=horizon, epsilon=epsilon) and horizon * trials,
        "dp-ebs plain loop": lambda: plain_loops.dp_ebs_elimination(
            env.preference_matrix, loop_rounds, u, np.random.default_rng(1), horizon, epsilon) is not None
        and loop_rounds,
        "rucb batched": lambda: simulate_rucb(env, n_trials=trials, rng=20240322, horizon=reference_rounds)
        and reference_rounds * trials,
    }
    if duelpy is not None:
        relative_ucb, matrix_feedback = duelpy

        def duelpy_rucb() -> int:
            feedback = matrix_feedback(env.preference_matrix.copy(), random_state=np.random.RandomState(0))
            relative_ucb(feedback, time_horizon=reference_rounds, random_state=np.random.RandomState(0)).run()
            return reference_rounds

        runs["duelpy rucb"] = duelpy_rucb
    medians = interleaved(runs, rounds)
    for name, seconds in medians.items():
        report_value(f"{name}", seconds * 1e9, "ns per round of one trial")
    ebs, ebs_loop = medians["dp-ebs vectorised"], medians["dp-ebs plain loop"]
    report_ratio("DP-EBS: plain per-round loop / vectorised simulation (per round of one trial)", ebs_loop / ebs,
                 numerator=f"plain loop {ebs_loop * 1e9:.0f} ns", denominator=f"vectorised {ebs * 1e9:.1f} ns")
    if duelpy is None:
        print("# duelpy is not importable here: the duelpy comparisons are skipped (see the module docstring)")
    else:
        rucb, peer = medians["rucb batched"], medians["duelpy rucb"]
        report_ratio("RUCB: duelpy one step at a time / ours batched (per round of one trial)", peer / rucb,
                     numerator=f"duelpy {peer * 1e6:.2f} us", denominator=f"ours {rucb * 1e6:.2f} us",
                     target="> 1", met=peer > rucb)
        # 3. issue 6's cross-algorithm figure, labelled as such
        report_ratio("cross-algorithm (issue 6's figure, NOT like for like): duelpy RUCB / our DP-EBS per round",
                     peer / ebs, numerator=f"duelpy RUCB {peer * 1e6:.2f} us",
                     denominator=f"DP-EBS vectorised {ebs * 1e9:.1f} ns", target=">= 20", met=peer / ebs >= 20,
                     note="two different algorithms")

    _round_costs(args.quick)
    print(f"# {load_average()}")


if __name__ == "__main__":
    main()
