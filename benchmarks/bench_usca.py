"""Benchmark: USCA time and peak memory against the horizon T, feature backend vs exact kernel backend.

Each (backend, T) runs in a fresh Python process (so its peak resident memory is its own): build
USCA (γ̂, the approximating set of M = T·K points, the certified sup), observe T rounds, one private
prediction. The report prints seconds and peak RSS, their ratios to the smallest T of the same
backend (measured in this run), the log-log growth slopes, and the exact/feature ratio where both run.

Target (issue 7): the feature backend at T = 20 000 in under 2 minutes on 2 cores with peak memory
under 4 GiB; the exact backend needs 8·M² bytes, M ≈ T²/γ_T, so it stops near T ≈ 500.

    python benchmarks/bench_usca.py            # full: feature backend up to T = 20 000 (the target)
    python benchmarks/bench_usca.py --quick    # reduced sizes, to check that it runs (a few seconds)
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import subprocess
import sys
import time

REDUCED = {"features": [250, 500, 1000, 2000], "kernel": [100, 250]}
FULL = {"features": [250, 500, 1000, 2000, 5000, 10000, 20000], "kernel": [100, 250, 500]}
TARGET_HORIZON = 20_000  # issue 7: the feature backend at T = 20 000 in < 2 min and < 4 GiB


def run_child(backend: str, horizon: int, precision: str) -> dict:
    import numpy as np

    from dpbandits.algorithms.kernel.usca import USCA
    from dpbandits.envs.kernel import KernelBanditEnvironment

    env = KernelBanditEnvironment(function_seed=0)
    streams = np.random.SeedSequence(20250110).spawn(3)
    start = time.perf_counter()
    agent = USCA(horizon=horizon, epsilon=1.0, reward_bound=1.5, kernel=env.kernel,
                 context_generator=env.sample_contexts, backend=backend, clip=True, rng=streams[0],
                 precision=precision, max_exact_size=20_000)
    setup = time.perf_counter() - start
    gen = np.random.default_rng(streams[1])
    contexts = env.sample_contexts(horizon, gen)
    agent.observe(contexts, env.sample_rewards(agent.learning_actions, contexts, gen))
    agent.recommend(env.sample_contexts(1, gen)[0], rng=streams[2], insecure_seeded_noise=True)  # a timing, not a release
    total = time.perf_counter() - start
    return {
        "backend": backend, "horizon": horizon, "seconds": total, "setup_seconds": setup,
        "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
        "approx_size": agent.approx_size, "gamma": agent.gamma, "sensitivity": agent.sensitivity,
    }


def slope(xs: list[float], ys: list[float]) -> float:
    lx, ly = [math.log(x) for x in xs], [math.log(y) for y in ys]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly, strict=True)) / sum((a - mx) ** 2 for a in lx)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="reduced sizes (the target T is not reached)")
    parser.add_argument("--precision", default="float32", choices=["float32", "float64"],
                        help="arithmetic of the approximating-set accumulation (feature backend)")
    parser.add_argument("--child", nargs=2, metavar=("BACKEND", "T"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(run_child(args.child[0], int(args.child[1]), args.precision)))
        return

    sizes = REDUCED if args.quick else FULL
    results: dict[str, list[dict]] = {"features": [], "kernel": []}
    for backend in ("kernel", "features"):
        for horizon in sizes[backend]:
            out = subprocess.run([sys.executable, __file__, "--precision", args.precision, "--child", backend,
                                  str(horizon)], capture_output=True, text=True, check=True)
            row = json.loads(out.stdout.strip().splitlines()[-1])
            results[backend].append(row)
            print(f"  ran {backend:8s} T={horizon:6d}: {row['seconds']:8.2f} s, {row['peak_mib']:8.1f} MiB", flush=True)

    print(f"\nUSCA time and peak memory vs T (precision={args.precision}; ratios to the smallest T of each backend)")
    print(f"{'backend':9s} {'T':>6s} {'M':>10s} {'gamma':>7s} {'Delta':>7s} {'seconds':>9s} {'x time':>8s} "
          f"{'peak MiB':>9s} {'x mem':>7s}")
    for backend, rows in results.items():
        base = rows[0]
        for row in rows:
            print(f"{backend:9s} {row['horizon']:6d} {row['approx_size']:10d} {row['gamma']:7.1f} "
                  f"{row['sensitivity']:7.3f} {row['seconds']:9.2f} {row['seconds'] / base['seconds']:8.2f} "
                  f"{row['peak_mib']:9.1f} {row['peak_mib'] / base['peak_mib']:7.2f}")
        if len(rows) > 1:
            t = [r["horizon"] for r in rows]
            print(f"{backend:9s} growth: time ~ T^{slope(t, [r['seconds'] for r in rows]):.2f}, "
                  f"peak memory ~ T^{slope(t, [r['peak_mib'] for r in rows]):.2f}")
    common = sorted({r["horizon"] for r in results["kernel"]} & {r["horizon"] for r in results["features"]})
    for horizon in common:
        k = next(r for r in results["kernel"] if r["horizon"] == horizon)
        f = next(r for r in results["features"] if r["horizon"] == horizon)
        print(f"T={horizon}: exact/feature time ratio {k['seconds'] / f['seconds']:.2f}, "
              f"memory ratio {k['peak_mib'] / f['peak_mib']:.2f}")
    largest = results["features"][-1]
    if largest["horizon"] < TARGET_HORIZON:
        print(f"# reduced run: largest feature-backend T = {largest['horizon']}; the target T = {TARGET_HORIZON} "
              "is measured by the full run")
        return
    verdict = "meets" if largest["seconds"] < 120 and largest["peak_mib"] < 4096 else "MISSES"
    print(f"feature backend at T={largest['horizon']}: {largest['seconds']:.1f} s, {largest['peak_mib']:.0f} MiB; "
          f"time ratio to the 120 s target {largest['seconds'] / 120:.3f}, memory ratio to 4096 MiB "
          f"{largest['peak_mib'] / 4096:.3f} -> {verdict} the target")


if __name__ == "__main__":
    main()
