"""Benchmark of environment sampling, printed as ratios against NumPy references run in the same process.

Usage::

    python benchmarks/bench_envs.py            # full size (lead's run)
    python benchmarks/bench_envs.py --quick    # reduced size, to check the script works

Every ratio is a ratio of medians of interleaved runs (``_harness.interleaved``). Reference: NumPy drawing one reward per pull (``Generator.random(N)`` / ``Generator.uniform``).
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
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import interleaved, load_average, report_ratio

from dpbandits._core.rng import as_generator, as_seed_sequence
from dpbandits.envs import base
from dpbandits.envs.linear import dp_bai_instance
from dpbandits.envs.mab import BernoulliBandit, BetaBandit, ClippedGaussianBandit, UniformBandit


def ratio(name: str, ours: float, reference: float, what: str, against: str) -> None:
    report_ratio(name, ours / reference, numerator=f"{what} {ours * 1e3:.3f} ms",
                 denominator=f"{against} {reference * 1e3:.3f} ms")


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
    n_trials, pulls, repeats = (100, 20, 3) if args.quick else (1000, 100, 7)
    n_arms = 30
    generator = as_generator(0)

    print(f"# medians of {repeats} interleaved runs; {load_average()}")
    print(
        f"# sample_sums: {n_trials} trials x {n_arms} arms x {pulls} pulls = {n_trials * n_arms * pulls} rewards"
    )
    counts = np.full((n_trials, n_arms), pulls)
    total = int(counts.sum())
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
    runs: dict[str, Callable[[], object]] = {"reference": lambda: generator.random(total)}
    for name, env in families.items():
        runs[f"sample_sums {name}"] = lambda env=env: env.sample_sums(counts, generator)
        runs[f"numpy {name}"] = natural[name]
    medians = interleaved(runs, repeats)
    reference = medians["reference"]
    print(f"reference  numpy Generator.random(N): {reference * 1e3:8.2f} ms  (ratio 1.00)")
    for name in families:
        elapsed, own = medians[f"sample_sums {name}"], medians[f"numpy {name}"]
        print(f"sample_sums {name:17s}: {elapsed * 1e3:8.2f} ms")
        ratio(f"sample_sums {name} / Generator.random(N)", elapsed, reference, f"sample_sums {name}", "Generator.random")
        ratio(f"sample_sums {name} / NumPy drawing {name} per pull", elapsed, own, f"sample_sums {name}",
              f"NumPy {name} per pull")

    budget = 1000
    per_arm = -(-(budget - 2) // 2)  # ⌈(T − 2)/2⌉ pulls of arms 1 and 3
    section5 = dp_bai_instance()
    bai_counts = np.zeros((n_trials, section5.n_arms), dtype=np.int64)
    bai_counts[:, [0, 2]] = per_arm
    bai_total = int(bai_counts.sum())
    medians = interleaved({
        "reference": lambda: generator.random(bai_total),
        "sample_sums": lambda: section5.sample_sums(bai_counts, generator),
        "pull_counts": lambda: section5.streams(0, n_trials).pull_counts(bai_counts),
    }, repeats)
    print(f"# DP-BAI §5 allocation, T={budget}, {n_trials} trials: {bai_total} rewards")
    print(f"reference  numpy Generator.random(N): {medians['reference'] * 1e3:8.2f} ms")
    ratio("sample_sums dp-bai-section5 / Generator.random(N)", medians["sample_sums"], medians["reference"],
          "sample_sums", "Generator.random")
    ratio("pull_counts dp-bai-section5 / Generator.random(N)", medians["pull_counts"], medians["reference"],
          "pull_counts", "Generator.random")

    print("# streams (pull-consistent)")
    uniform = families["uniform"]
    keys = as_seed_sequence(0).generate_state(n_trials * n_arms, dtype=np.uint64).reshape(n_trials, n_arms)
    runs = {"reference": lambda: generator.random(total)}
    for name, env in families.items():
        if name != "beta":  # Beta's inverse CDF (scipy.special.betaincinv) costs µs per reward: timed once below
            runs[name] = lambda env=env: env.streams(0, n_trials).pull_counts(counts)
    runs["philox"] = lambda: philox_per_stream_sums(keys, counts, 2.0 * uniform.means)
    medians = interleaved(runs, max(1, repeats // 2))
    beta = interleaved({"beta": lambda: families["beta"].streams(0, n_trials).pull_counts(counts)}, 1, warmup=False)
    for name in families:
        elapsed = beta["beta"] if name == "beta" else medians[name]
        ratio(f"pull_counts {name} / Generator.random(N)", elapsed, medians["reference"], f"pull_counts {name}",
              "Generator.random" + (" (beta: one run)" if name == "beta" else ""))
    ratio("rejected scheme, one Philox per (trial, arm) / Generator.random(N)", medians["philox"],
          medians["reference"], "Philox per stream", "Generator.random")

    streams = uniform.streams(0, n_trials)
    arms = np.arange(n_trials) % n_arms
    medians = interleaved({"reference": lambda: generator.random(n_trials), "pull": lambda: streams.pull(arms)},
                          repeats * 20)
    print(f"pull (one step of {n_trials} trials): {medians['pull'] * 1e6:8.1f} us")
    ratio(f"pull, one step of {n_trials} trials / Generator.random({n_trials})", medians["pull"],
          medians["reference"], "streams.pull", "Generator.random")

    print("# SplitMix64 mixing chunk size (pull_counts, uniform)")
    default_chunk = base._CHUNK

    def with_chunk(chunk: int) -> Callable[[], object]:
        def run() -> object:
            base._CHUNK = chunk
            try:
                return uniform.streams(0, n_trials).pull_counts(counts)
            finally:
                base._CHUNK = default_chunk
        return run

    chunks = (1 << 12, 1 << 14, 1 << 16, 1 << 17, 1 << 18, 1 << 20, 1 << 24)
    medians = interleaved({"reference": lambda: generator.random(total),
                           **{f"2^{c.bit_length() - 1}": with_chunk(c) for c in chunks}}, repeats)
    for chunk in chunks:
        label = f"2^{chunk.bit_length() - 1}"
        print(f"chunk {label:5s}: ratio {medians[label] / medians['reference']:5.2f}")
    print(f"# {load_average()}")


if __name__ == "__main__":
    main()
