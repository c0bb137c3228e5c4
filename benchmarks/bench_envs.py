"""Benchmark of environment sampling, printed as ratios against NumPy references run in the same process.

Usage::

    python benchmarks/bench_envs.py            # full size (lead's run)
    python benchmarks/bench_envs.py --quick    # reduced size, to check the script works

Reference: NumPy drawing one reward per pull (``Generator.random(N)`` / ``Generator.uniform``).
Measured:

1. ``env.sample_sums`` (exact sums, the vectorised-simulation path) for each family and for the DP-BAI
   §5 instance with DP-BAI's allocation (two arms, ⌈(T − 2)/2⌉ pulls each).
2. ``streams.pull_counts`` (pull-consistent, counter-based SplitMix64) and the alternative scheme that
   was considered and rejected: one ``numpy.random.Philox`` generator per (trial, arm), keyed from the
   same SeedSequence words.
3. ``streams.pull`` (batched single pulls, the ask/tell path): time per step.
4. The chunk size of the SplitMix64 mixing passes.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np

from dpbandits._core.rng import as_generator, as_seed_sequence
from dpbandits.envs import base
from dpbandits.envs.linear import dp_bai_instance
from dpbandits.envs.mab import BernoulliBandit, BetaBandit, ClippedGaussianBandit, UniformBandit


def best_time(fn: Callable[[], object], repeats: int) -> float:
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def philox_per_stream_sums(keys: np.ndarray, counts: np.ndarray, widths: np.ndarray) -> np.ndarray:
    """The rejected scheme: one Philox generator per (trial, arm), keyed by the stream key."""
    sums = np.zeros(counts.shape)
    for trial in range(counts.shape[0]):
        for arm in range(counts.shape[1]):
            generator = np.random.Generator(np.random.Philox(key=int(keys[trial, arm])))
            sums[trial, arm] = widths[arm] * generator.random(counts[trial, arm]).sum()
    return sums


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="reduced size (a smoke run)")
    args = parser.parse_args()
    n_trials, pulls, repeats = (100, 20, 2) if args.quick else (1000, 100, 5)
    n_arms = 30
    generator = as_generator(0)

    print(
        f"# sample_sums: {n_trials} trials x {n_arms} arms x {pulls} pulls = {n_trials * n_arms * pulls} rewards"
    )
    counts = np.full((n_trials, n_arms), pulls)
    total = int(counts.sum())
    reference = best_time(lambda: generator.random(total), repeats)
    print(f"reference  numpy Generator.random(N): {reference * 1e3:8.2f} ms  (ratio 1.00)")
    means = np.linspace(0.05, 0.5, n_arms)
    families = {
        "uniform": UniformBandit(means),
        "bernoulli": BernoulliBandit(means),
        "beta": BetaBandit.from_means(means, 4.0),
        "clipped-gaussian": ClippedGaussianBandit(means, 0.3, (0.0, 1.0)),
    }
    # Natural reference per family: NumPy drawing that family's rewards, one per pull, in one call.
    natural: dict[str, Callable[[], object]] = {
        "uniform": lambda: generator.random(total),
        "bernoulli": lambda: generator.random(total) < 0.3,
        "beta": lambda: generator.beta(1.2, 2.8, total),
        "clipped-gaussian": lambda: np.clip(generator.normal(0.3, 0.3, total), 0.0, 1.0),
    }
    for name, env in families.items():
        elapsed = best_time(lambda env=env: env.sample_sums(counts, generator), repeats)
        own = best_time(natural[name], repeats)
        print(
            f"sample_sums {name:17s}: {elapsed * 1e3:8.2f} ms  (ratio {elapsed / reference:5.2f}; "
            f"vs NumPy drawing {name} per pull {elapsed / own:5.2f})"
        )

    budget = 1000
    per_arm = -(-(budget - 2) // 2)  # ⌈(T − 2)/2⌉ pulls of arms 1 and 3 (spec §6.1)
    section5 = dp_bai_instance()
    bai_counts = np.zeros((n_trials, section5.n_arms), dtype=np.int64)
    bai_counts[:, [0, 2]] = per_arm
    bai_total = int(bai_counts.sum())
    bai_reference = best_time(lambda: generator.random(bai_total), repeats)
    bai_elapsed = best_time(lambda: section5.sample_sums(bai_counts, generator), repeats)
    print(f"# DP-BAI §5 allocation, T={budget}, {n_trials} trials: {bai_total} rewards")
    print(f"reference  numpy Generator.random(N): {bai_reference * 1e3:8.2f} ms")
    print(
        f"sample_sums dp-bai-section5: {bai_elapsed * 1e3:8.2f} ms  (ratio {bai_elapsed / bai_reference:5.2f})"
    )
    stream_elapsed = best_time(lambda: section5.streams(0, n_trials).pull_counts(bai_counts), repeats)
    print(
        f"pull_counts dp-bai-section5: {stream_elapsed * 1e3:8.2f} ms  (ratio {stream_elapsed / bai_reference:5.2f})"
    )

    print("# streams (pull-consistent)")
    uniform = families["uniform"]
    keys = as_seed_sequence(0).generate_state(n_trials * n_arms, dtype=np.uint64).reshape(n_trials, n_arms)
    for name, env in families.items():
        # Beta's inverse CDF (scipy.special.betaincinv) costs microseconds per reward: time it once.
        stream_repeats = 1 if name == "beta" else repeats
        elapsed = best_time(lambda env=env: env.streams(0, n_trials).pull_counts(counts), stream_repeats)
        print(f"pull_counts {name:17s}: {elapsed * 1e3:8.2f} ms  (ratio {elapsed / reference:5.2f})")
    philox = best_time(
        lambda: philox_per_stream_sums(keys, counts, 2.0 * uniform.means), max(1, repeats // 2)
    )
    print(
        f"rejected: one Philox per (trial, arm), uniform: {philox * 1e3:8.2f} ms  (ratio {philox / reference:5.2f})"
    )

    step_reference = best_time(lambda: generator.random(n_trials), repeats * 20)
    streams = uniform.streams(0, n_trials)
    arms = np.arange(n_trials) % n_arms
    step = best_time(lambda: streams.pull(arms), repeats * 20)
    print(f"pull (one step of {n_trials} trials): {step * 1e6:8.1f} us  (ratio {step / step_reference:5.2f})")

    print("# SplitMix64 mixing chunk size (pull_counts, uniform)")
    default_chunk = base._CHUNK
    try:
        for chunk in (1 << 12, 1 << 14, 1 << 16, 1 << 17, 1 << 18, 1 << 20, 1 << 24):
            base._CHUNK = chunk
            elapsed = best_time(lambda: uniform.streams(0, n_trials).pull_counts(counts), repeats)
            print(f"chunk 2^{chunk.bit_length() - 1:<2d}: ratio {elapsed / reference:5.2f}")
    finally:
        base._CHUNK = default_chunk


if __name__ == "__main__":
    main()
