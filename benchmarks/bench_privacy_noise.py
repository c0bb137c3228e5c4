"""Benchmark of the privacy core, printed as ratios against NumPy references run in the same process.

Usage::

    python benchmarks/bench_privacy_noise.py            # full size (lead's run)
    python benchmarks/bench_privacy_noise.py --quick    # reduced size, to check the script works

Measured (each as time / reference time, best of ``repeats``):

1. ``NumpyNoise.laplace`` / ``gaussian`` against ``Generator.laplace`` / ``normal`` directly: the
   overhead of the backend layer (validation).
2. ``OpenDPNoise.laplace`` / ``gaussian`` against the same references: the cost of the secure backend.
3. ``ExponentialMechanism.sample`` over a batch (vectorised Gumbel-max) against a plain NumPy
   Gumbel-max on precomputed log-weights, and the OpenDP noisy-max sampler on a smaller batch
   (reported per draw).
4. ``analytic_gaussian_sigma`` (brentq) per call, against ``classical_gaussian_sigma``.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np

from dpbandits._core.rng import as_generator
from dpbandits.privacy.mechanisms import (
    ExponentialMechanism,
    analytic_gaussian_sigma,
    classical_gaussian_sigma,
)
from dpbandits.privacy.noise import NumpyNoise, OpenDPNoise


def best_time(fn: Callable[[], object], repeats: int) -> float:
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="reduced size (a smoke run)")
    args = parser.parse_args()
    n, n_secure, repeats = (20_000, 2_000, 2) if args.quick else (1_000_000, 20_000, 5)
    generator = as_generator(0)
    numpy_backend = NumpyNoise(as_generator(1))
    secure = OpenDPNoise()

    print(f"noise draws: n = {n} (NumPy), n = {n_secure} (OpenDP); ratios are per draw")
    for kind, reference in (("laplace", generator.laplace), ("gaussian", generator.normal)):
        ref = best_time(lambda reference=reference: reference(0.0, 1.0, size=n), repeats) / n
        ours = best_time(lambda kind=kind: getattr(numpy_backend, kind)(1.0, size=n), repeats) / n
        sec = best_time(lambda kind=kind: getattr(secure, kind)(1.0, size=n_secure), repeats) / n_secure
        print(f"  {kind:9s} reference {ref * 1e9:8.1f} ns/draw | NumpyNoise x{ours / ref:6.2f} | "
              f"OpenDPNoise x{sec / ref:9.1f}")

    n_rows, n_actions = (n // 10, 10)
    utilities = generator.random((n_rows, n_actions))
    mech = ExponentialMechanism(sensitivity=1.0, epsilon=1.0)
    log_w = mech.log_probabilities(utilities)
    ref = best_time(lambda: np.argmax(log_w + generator.gumbel(size=log_w.shape), axis=-1), repeats) / n_rows
    ours = best_time(lambda: mech.sample(utilities, rng=generator, insecure_seeded_noise=True), repeats) / n_rows
    small = utilities[: max(1, n_secure // 10)]
    sec = best_time(lambda: mech.sample(small, backend="opendp"), 1) / small.shape[0]
    print(f"exponential mechanism, {n_rows} rows x {n_actions} actions: reference {ref * 1e9:8.1f} ns/row | "
          f"ExponentialMechanism.sample x{ours / ref:6.2f} | OpenDP noisy-max x{sec / ref:9.1f}")

    calls = 200 if args.quick else 2_000
    ref = best_time(lambda: [classical_gaussian_sigma(1.0, 0.5, 1e-5) for _ in range(calls)], repeats) / calls
    ours = best_time(lambda: [analytic_gaussian_sigma(1.0, 0.5, 1e-5) for _ in range(calls)], repeats) / calls
    print(f"Gaussian calibration: classical {ref * 1e6:8.2f} us/call | analytic x{ours / ref:8.1f}")


if __name__ == "__main__":
    main()
