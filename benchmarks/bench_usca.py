"""Benchmark: USCA time and peak memory against the horizon T, feature backend vs exact kernel backend.

One run per (backend, T), each in a fresh process (a full-size run takes minutes, so the figures
are single measurements, not medians; the load average is printed beside each).

Each (backend, T) runs in a fresh Python process (so its peak resident memory is its own, and no
Gram sum is cached from an earlier run): build USCA (γ̂, the approximating set of M = T·K points,
the certified sup), observe T rounds, one private prediction. Then, in the same process, a second
USCA with the same coins at another ε: the cost of each further ε of a sweep (the Gram sum comes
from the in-process cache). The report prints seconds, peak RSS and the peak of traced NumPy
allocations (tracemalloc: the algorithm's own arrays, without the interpreter and libraries),
their ratios to the smallest T of the same backend, the log-log growth exponents in T (over all
horizons and over the larger half), the exact backend's traced peak against its documented formula
``exact_kernel_peak_bytes``, and the exact/feature ratios where both run.

Also (issue 38) the peak RSS of a study cell (``simulate`` of ``usca``, one trial: the run plus its
evaluation metrics over 64 contexts × the 1024-point grid) against the bare run (build, observe, one
private prediction), each in a fresh process at T = 8000 (``--quick``: 1000); target <= 1.2.

Target (issue 15): the feature backend at T = 100 000 in under 10 minutes on 2 cores with peak
memory under 2 GiB. The exact backend needs about 11·M² bytes, M ≈ T²/γ_T, so it stops near T ≈ 500.
On a machine shared with other BLAS-heavy processes, times can be several times longer (OpenBLAS
threads contend); the load average is printed with the results.

    python benchmarks/bench_usca.py            # full: feature backend up to T = 100 000 (the target)
    python benchmarks/bench_usca.py --quick    # reduced sizes, to check that it runs (a few seconds)
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import report_ratio

REDUCED = {"features": [250, 500, 1000, 2000], "kernel": [100, 250]}
FULL = {"features": [250, 500, 1000, 2000, 5000, 10000, 20000, 50000, 100000], "kernel": [100, 250, 500]}
TARGET_HORIZON = 100_000  # issue 15: the feature backend at T = 100 000 in < 10 min and < 2 GiB
TARGET_SECONDS = 600.0
TARGET_MIB = 2048.0


def run_child(backend: str, horizon: int, precision: str) -> dict:
    import numpy as np

    from dpbandits.algorithms.kernel.surrogate import exact_kernel_peak_bytes
    from dpbandits.algorithms.kernel.usca import USCA
    from dpbandits.envs.kernel import KernelBanditEnvironment

    env = KernelBanditEnvironment(function_seed=0)
    root = np.random.SeedSequence(20250110)
    streams = root.spawn(3)
    tracemalloc.start()
    start = time.perf_counter()

    def build(epsilon: float) -> USCA:
        # a fresh copy of the algorithm stream each time: spawning from one SeedSequence object twice
        # gives other children, hence other coins (and no Gram cache hit)
        coins = np.random.SeedSequence(root.entropy, spawn_key=streams[0].spawn_key)
        return USCA(horizon=horizon, epsilon=epsilon, reward_bound=1.5, kernel=env.kernel,
                    context_generator=env.sample_contexts, backend=backend, clip=True, rng=coins,
                    precision=precision, max_exact_size=20_000)

    agent = build(1.0)
    setup = time.perf_counter() - start
    gen = np.random.default_rng(streams[1])
    contexts = env.sample_contexts(horizon, gen)
    rewards = env.sample_rewards(agent.learning_actions, contexts, gen)
    agent.observe(contexts, rewards)
    agent.recommend(env.sample_contexts(1, gen)[0], rng=streams[2], insecure_seeded_noise=True)  # a timing, not a release
    total = time.perf_counter() - start
    traced_peak = tracemalloc.get_traced_memory()[1]
    second_start = time.perf_counter()
    other = build(5.0)  # same coins, another ε: the cost of one more ε of a sweep
    other.observe(contexts, rewards)
    other.recommend(contexts[0], rng=streams[2], insecure_seeded_noise=True)
    second = time.perf_counter() - second_start
    return {
        "backend": backend, "horizon": horizon, "seconds": total, "setup_seconds": setup,
        "second_epsilon_seconds": second,
        "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
        "traced_mib": traced_peak / 2**20,
        "formula_mib": exact_kernel_peak_bytes(agent.approx_size, horizon) / 2**20 if backend == "kernel" else None,
        "approx_size": agent.approx_size, "gamma": agent.gamma, "sensitivity": agent.sensitivity,
    }


CELL_HORIZON, CELL_HORIZON_QUICK = 8000, 1000


def memory_child(mode: str, horizon: int) -> dict:
    """Peak RSS of a bare USCA run or of a study cell (the same trial plus its evaluation metrics)."""
    import numpy as np

    from dpbandits.algorithms.kernel.evaluation import draw_trial_data, trial_streams
    from dpbandits.algorithms.kernel.usca import USCA
    from dpbandits.algorithms.registry import get_algorithm
    from dpbandits.envs.kernel import KernelBanditEnvironment
    from dpbandits.privacy.noise import NumpyNoise

    env = KernelBanditEnvironment(function_seed=0)
    root = np.random.SeedSequence(20250110)
    if mode == "bare":  # the cell's trial without its metrics: the same streams, data and agent
        ((env_seed, algo_seed, noise_seed),) = trial_streams(root, 1)
        data = draw_trial_data(env, horizon, 64, env_seed)
        agent = USCA(horizon=horizon, epsilon=1.0, reward_bound=1.5, kernel=env.kernel,
                     context_generator=env.sample_contexts, action_dim=env.action_dim, context_dim=env.context_dim,
                     clip=True, rng=algo_seed)
        agent.observe(data.contexts, data.rewards(env, agent.learning_actions))
        agent._draw(data.next_context, NumpyNoise(noise_seed))
    else:
        get_algorithm("usca").simulate(env, n_trials=1, rng=root, horizon=horizon, n_test_contexts=64)
    return {"peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0}


def cell_memory(horizon: int) -> None:
    peaks = {}
    for mode in ("bare", "cell"):
        out = subprocess.run([sys.executable, __file__, "--memory-child", mode, str(horizon)], capture_output=True,
                             text=True, check=True)
        peaks[mode] = json.loads(out.stdout.strip().splitlines()[-1])["peak_mib"]
    report_ratio(f"USCA T={horizon}: study cell peak RSS / the bare run", peaks["cell"] / peaks["bare"],
                 numerator=f"cell {peaks['cell']:.0f} MiB", denominator=f"bare run {peaks['bare']:.0f} MiB",
                 target="<= 1.2", met=peaks["cell"] <= 1.2 * peaks["bare"])


def slope(xs: list[float], ys: list[float]) -> float:
    lx, ly = [math.log(x) for x in xs], [math.log(y) for y in ys]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly, strict=True)) / sum((a - mx) ** 2 for a in lx)


def growth(rows: list[dict], key: str) -> str:
    t = [r["horizon"] for r in rows]
    text = f"T^{slope(t, [r[key] for r in rows]):.2f}"
    upper = rows[len(rows) // 2:]
    if len(upper) >= 2 and len(upper) < len(rows):
        text += f" (T >= {upper[0]['horizon']}: T^{slope([r['horizon'] for r in upper], [r[key] for r in upper]):.2f})"
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="reduced sizes (the target T is not reached)")
    parser.add_argument("--precision", default="float32", choices=["float32", "float64"],
                        help="arithmetic of the approximating-set accumulation (feature backend)")
    parser.add_argument("--child", nargs=2, metavar=("BACKEND", "T"), help=argparse.SUPPRESS)
    parser.add_argument("--memory-child", nargs=2, metavar=("MODE", "T"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(run_child(args.child[0], int(args.child[1]), args.precision)))
        return
    if args.memory_child:
        print(json.dumps(memory_child(args.memory_child[0], int(args.memory_child[1]))))
        return
    cell_memory(CELL_HORIZON_QUICK if args.quick else CELL_HORIZON)

    sizes = REDUCED if args.quick else FULL
    results: dict[str, list[dict]] = {"features": [], "kernel": []}
    for backend in ("kernel", "features"):
        for horizon in sizes[backend]:
            out = subprocess.run([sys.executable, __file__, "--precision", args.precision, "--child", backend,
                                  str(horizon)], capture_output=True, text=True, check=True)
            row = json.loads(out.stdout.strip().splitlines()[-1])
            results[backend].append(row)
            print(f"  ran {backend:8s} T={horizon:6d}: {row['seconds']:8.2f} s, {row['peak_mib']:8.1f} MiB "
                  f"(load average {os.getloadavg()[0]:.1f})", flush=True)

    print(f"\nUSCA time and peak memory vs T (precision={args.precision}; ratios to the smallest T of each backend; "
          "traced = NumPy allocations)")
    print(f"{'backend':9s} {'T':>6s} {'M':>11s} {'gamma':>7s} {'Delta':>7s} {'seconds':>9s} {'x time':>8s} "
          f"{'2nd eps s':>9s} {'peak MiB':>9s} {'x mem':>7s} {'traced':>8s} {'x trc':>7s}")
    for backend, rows in results.items():
        base = rows[0]
        for row in rows:
            print(f"{backend:9s} {row['horizon']:6d} {row['approx_size']:11d} {row['gamma']:7.1f} "
                  f"{row['sensitivity']:7.3f} {row['seconds']:9.2f} {row['seconds'] / base['seconds']:8.2f} "
                  f"{row['second_epsilon_seconds']:9.2f} {row['peak_mib']:9.1f} {row['peak_mib'] / base['peak_mib']:7.2f} "
                  f"{row['traced_mib']:8.1f} {row['traced_mib'] / base['traced_mib']:7.2f}")
        if len(rows) > 1:
            print(f"{backend:9s} growth: time ~ {growth(rows, 'seconds')}, peak RSS ~ {growth(rows, 'peak_mib')}, "
                  f"traced peak ~ {growth(rows, 'traced_mib')}")
    for row in results["kernel"]:
        report_ratio(f"exact backend T={row['horizon']}: traced peak / documented formula",
                     row["traced_mib"] / row["formula_mib"], numerator=f"traced {row['traced_mib']:.1f} MiB",
                     denominator=f"formula {row['formula_mib']:.1f} MiB", target="<= 1")
    common = sorted({r["horizon"] for r in results["kernel"]} & {r["horizon"] for r in results["features"]})
    for horizon in common:
        k = next(r for r in results["kernel"] if r["horizon"] == horizon)
        f = next(r for r in results["features"] if r["horizon"] == horizon)
        report_ratio(f"T={horizon}: exact / feature backend, time", k["seconds"] / f["seconds"],
                     numerator=f"exact {k['seconds']:.2f} s", denominator=f"feature {f['seconds']:.2f} s")
        report_ratio(f"T={horizon}: exact / feature backend, peak memory", k["peak_mib"] / f["peak_mib"],
                     numerator=f"exact {k['peak_mib']:.0f} MiB", denominator=f"feature {f['peak_mib']:.0f} MiB")
    largest = results["features"][-1]
    if largest["horizon"] < TARGET_HORIZON:
        print(f"# reduced run: largest feature-backend T = {largest['horizon']}; the target T = {TARGET_HORIZON} "
              "is measured by the full run")
        return
    verdict = "meets" if largest["seconds"] < TARGET_SECONDS and largest["peak_mib"] < TARGET_MIB else "MISSES"
    report_ratio(f"feature backend T={largest['horizon']}: time / the {TARGET_SECONDS:.0f} s target",
                 largest["seconds"] / TARGET_SECONDS, numerator=f"{largest['seconds']:.1f} s",
                 denominator=f"{TARGET_SECONDS:.0f} s", target="<= 1", met=largest["seconds"] < TARGET_SECONDS)
    report_ratio(f"feature backend T={largest['horizon']}: peak memory / {TARGET_MIB:.0f} MiB",
                 largest["peak_mib"] / TARGET_MIB, numerator=f"{largest['peak_mib']:.0f} MiB",
                 denominator=f"{TARGET_MIB:.0f} MiB", target="<= 1", met=largest["peak_mib"] < TARGET_MIB)
    print(f"feature backend at T={largest['horizon']}: {largest['seconds']:.1f} s, {largest['peak_mib']:.0f} MiB; "
          f"time ratio to the {TARGET_SECONDS:.0f} s target {largest['seconds'] / TARGET_SECONDS:.3f}, memory ratio "
          f"to {TARGET_MIB:.0f} MiB {largest['peak_mib'] / TARGET_MIB:.3f} -> {verdict} the target")


if __name__ == "__main__":
    main()
