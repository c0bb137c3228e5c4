"""Benchmark of the privacy core, printed as ratios against NumPy references run in the same process.

Usage::

    python benchmarks/bench_privacy_noise.py            # full size (lead's run)
    python benchmarks/bench_privacy_noise.py --quick    # reduced size, to check the script works

Measured (each as a ratio of medians of interleaved runs, ``_harness.interleaved``):

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
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import interleaved, load_average, report_ratio

from dpbandits._core.errors import InsecureNoiseWarning
from dpbandits._core.rng import as_generator
from dpbandits.privacy.mechanisms import (
    ExponentialMechanism,
    analytic_gaussian_sigma,
    classical_gaussian_sigma,
)
from dpbandits.privacy.noise import NumpyNoise, OpenDPNoise

warnings.simplefilter("ignore", InsecureNoiseWarning)  # seeded noise on purpose: a timing


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="reduced size (a smoke run)")
    args = parser.parse_args()
    n, n_secure, repeats = (20_000, 2_000, 3) if args.quick else (1_000_000, 20_000, 7)
    generator = as_generator(0)
    numpy_backend = NumpyNoise(as_generator(1))
    secure = OpenDPNoise()

    print(f"# medians of {repeats} interleaved runs; {load_average()}")
    print(f"noise draws: n = {n} (NumPy), n = {n_secure} (OpenDP); ratios are per draw")
    for kind, reference in (("laplace", generator.laplace), ("gaussian", generator.normal)):
        medians = interleaved({
            "reference": lambda reference=reference: reference(0.0, 1.0, size=n) is not None and n,
            "numpy": lambda kind=kind: getattr(numpy_backend, kind)(1.0, size=n) is not None and n,
            "opendp": lambda kind=kind: getattr(secure, kind)(1.0, size=n_secure) is not None and n_secure,
        }, repeats)
        ref = medians["reference"]
        print(f"  {kind:9s} reference {ref * 1e9:8.1f} ns/draw")
        report_ratio(f"NumpyNoise.{kind} / Generator per draw", medians["numpy"] / ref,
                     numerator=f"NumpyNoise {medians['numpy'] * 1e9:.1f} ns", denominator=f"Generator {ref * 1e9:.1f} ns")
        report_ratio(f"SecureNoise.{kind} / Generator per draw", medians["opendp"] / ref,
                     numerator=f"OpenDP {medians['opendp'] * 1e9:.0f} ns", denominator=f"Generator {ref * 1e9:.1f} ns")

    n_rows, n_actions = (n // 10, 10)
    utilities = generator.random((n_rows, n_actions))
    mech = ExponentialMechanism(sensitivity=1.0, epsilon=1.0)
    log_w = mech.log_probabilities(utilities)
    small = utilities[: max(1, n_secure // 10)]
    medians = interleaved({
        "reference": lambda: np.argmax(log_w + generator.gumbel(size=log_w.shape), axis=-1) is not None and n_rows,
        "ours": lambda: mech.sample(utilities, rng=generator, insecure_seeded_noise=True) is not None and n_rows,
        "opendp": lambda: mech.sample(small, backend="opendp") is not None and small.shape[0],
    }, repeats)
    ref = medians["reference"]
    print(f"exponential mechanism, {n_rows} rows x {n_actions} actions: reference {ref * 1e9:8.1f} ns/row")
    report_ratio("ExponentialMechanism.sample / NumPy Gumbel-max per row", medians["ours"] / ref,
                 numerator=f"ours {medians['ours'] * 1e9:.1f} ns", denominator=f"NumPy {ref * 1e9:.1f} ns")
    report_ratio("OpenDP noisy-max / NumPy Gumbel-max per row", medians["opendp"] / ref,
                 numerator=f"OpenDP {medians['opendp'] * 1e9:.0f} ns", denominator=f"NumPy {ref * 1e9:.1f} ns")

    calls = 200 if args.quick else 2_000
    medians = interleaved({
        "classical": lambda: [classical_gaussian_sigma(1.0, 0.5, 1e-5) for _ in range(calls)] and calls,
        "analytic": lambda: [analytic_gaussian_sigma(1.0, 0.5, 1e-5) for _ in range(calls)] and calls,
    }, repeats)
    print(f"Gaussian calibration: classical {medians['classical'] * 1e6:8.2f} us/call")
    report_ratio("analytic_gaussian_sigma / classical_gaussian_sigma per call",
                 medians["analytic"] / medians["classical"], numerator=f"analytic {medians['analytic'] * 1e6:.2f} us",
                 denominator=f"classical {medians['classical'] * 1e6:.2f} us")


if __name__ == "__main__":
    main()
