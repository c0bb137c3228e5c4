"""Cost of the audit search's plug-in score: Beta quantiles by ``betaincinv`` against ``beta.ppf``.

The search of ``dpbandits audit`` scores every neighbouring pair it tries by the plug-in strength
of its best event (:func:`dpbandits.audit.search.search_score`), whose Clopper–Pearson ends are Beta
quantiles. The library takes them with ``scipy.special.betaincinv``; the reference here is the same
computation through ``scipy.stats.beta.ppf`` (what the search used before), in the same process,
on the candidate events of one pair (24 classifier thresholds and the prefix sets of a discrete
observable, n = 50 selection runs per input). The values are identical (checked here); the ratio is
the library's time over the reference's. A whole small audit (a private successive halving, the
suite's repeated-audit budget) is timed too.

Usage::

    python benchmarks/bench_audit_search.py            # 2000 scores per round, 3 rounds
    python benchmarks/bench_audit_search.py --quick    # 200 scores, one round (run.py --quick)
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import interleaved, load_average, report_ratio, report_value

from dpbandits.audit import search

_ALPHA = search._SEARCH_ALPHA


def reference_plugin(k_d: np.ndarray, k_e: np.ndarray, n_d: int, n_e: int, delta: float) -> np.ndarray:
    """The plug-in score with ``scipy.stats.beta.ppf`` (the search's former implementation)."""
    from scipy.stats import beta

    def low(k: np.ndarray, n: int) -> np.ndarray:
        return np.where(k <= 0, 0.0, beta.ppf(_ALPHA / 2, np.maximum(k, 1e-9), n - k + 1))

    def high(k: np.ndarray, n: int) -> np.ndarray:
        return np.where(k >= n, 1.0, beta.ppf(1 - _ALPHA / 2, k + 1, np.maximum(n - k, 1e-9)))

    best = np.full(k_d.shape, -np.inf)
    for p_k, p_n, q_k, q_n in ((k_d, n_d, k_e, n_e), (k_e, n_e, k_d, n_d),
                               (n_d - k_d, n_d, n_e - k_e, n_e), (n_e - k_e, n_e, n_d - k_d, n_d)):
        p_low, q_high = low(p_k, p_n), high(q_k, q_n)
        with np.errstate(divide="ignore", invalid="ignore"):
            bound = np.where(p_low > delta, np.log(np.maximum(p_low - delta, 1e-300) / q_high), -np.inf)
        best = np.maximum(best, bound)
    return best


def _audit_seconds() -> float:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "audit"))
    import user_gallery

    from dpbandits.audit.user import audit_algorithm

    started = time.perf_counter()
    audit_algorithm(user_gallery.PrivateHalving, epsilon=1.0, n_arms=3, params={"budget": 12}, seeded_noise=True,
                    rng=0, search_runs=10, climb=0, certify_pairs=1, runs=100)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scores", type=int, default=2000, help="pairs' candidate sets scored per round")
    parser.add_argument("--repeats", type=int, default=3, help="interleaved rounds (medians are reported)")
    parser.add_argument("--quick", action="store_true", help="A smoke run: 200 scores, one round.")
    args = parser.parse_args()
    if args.quick:
        args.scores, args.repeats = 200, 1
    rng = np.random.default_rng(20261129)
    n = 50
    candidates = [(np.sort(rng.integers(0, n + 1, 24)).astype(np.float64),
                   np.sort(rng.integers(0, n + 1, 24)).astype(np.float64)) for _ in range(args.scores)]
    for k_d, k_e in candidates[:50]:
        assert np.array_equal(search._plugin(k_d, k_e, n, n, 0.0), reference_plugin(k_d, k_e, n, n, 0.0))
    reference_plugin(*candidates[0], n, n, 0.0)  # scipy.stats imported before timing
    print(f"# medians of {args.repeats} interleaved runs; {load_average()}")
    medians = interleaved({
        "betaincinv": lambda: [search._plugin(k_d, k_e, n, n, 0.0) for k_d, k_e in candidates],
        "beta.ppf": lambda: [reference_plugin(k_d, k_e, n, n, 0.0) for k_d, k_e in candidates],
    }, args.repeats)
    print(f"{args.scores} plug-in scores: betaincinv {medians['betaincinv']:.3f}s, beta.ppf {medians['beta.ppf']:.3f}s")
    report_ratio("audit search plug-in score: betaincinv / beta.ppf", medians["betaincinv"] / medians["beta.ppf"],
                 numerator=f"betaincinv {medians['betaincinv']:.3f} s",
                 denominator=f"beta.ppf {medians['beta.ppf']:.3f} s")
    report_value("a small seeded audit of a private successive halving (10 search runs, 100 certified)",
                 _audit_seconds(), "s")


if __name__ == "__main__":
    main()
