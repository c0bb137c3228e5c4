"""Speed of the offline KL policies (issue 5 targets), as ratios against references run beside them.

1. RLHF: the constrained Bradley–Terry MLE (SciPy trust-exact + Newton) on n comparisons with d
   features, against scikit-learn's LogisticRegression fitting the *same* model (no intercept, no
   penalty, X = z, y = labels) in the same process. Target: ratio ours / sklearn <= 1 at n = 10^6, d = 32.
2. MAB: fit (validation, sufficient statistics, Gibbs log-probabilities) and one sample with K = 10^6 arms
   and n = 10^7 records, with the secure default sampler (OpenDP) and with seeded simulation noise.
   Target: < 1 s; the ratios are secure/seeded and against one ``numpy.bincount`` pass over the data.

Usage::

    python benchmarks/bench_kl.py                 # full size (the lead's run)
    python benchmarks/bench_kl.py --scale 0.1     # smaller sizes
    python benchmarks/bench_kl.py --quick         # a smoke run (--scale 0.01 --repeats 1), as run.py --quick
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import interleaved, load_average, report_ratio

from dpbandits.algorithms.offline import KLMABPolicy, bradley_terry_mle
from dpbandits.envs.offline import simulate_preferences


def bench_rlhf(n: int, d: int, repeats: int) -> None:
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(20261122)
    theta = rng.standard_normal(d)
    theta *= 0.5 / np.linalg.norm(theta)
    data = simulate_preferences(theta, n, n_prompts=2000, responses_per_prompt=10, rng=rng)
    z, y = data.feature_differences, data.labels
    bound = 10.0  # interior solution, the same optimum as the unpenalised logistic regression
    fit = bradley_terry_mle(z, y, bound)

    def sklearn_fit() -> LogisticRegression:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return LogisticRegression(penalty=None, fit_intercept=False, tol=1e-8, max_iter=1000).fit(z, y)

    medians = interleaved({"ours": lambda: bradley_terry_mle(z, y, bound), "sklearn": sklearn_fit}, repeats,
                          warmup=False)
    ours, ref = medians["ours"], medians["sklearn"]
    gap = float(np.max(np.abs(sklearn_fit().coef_[0] - fit.theta)))
    print(f"rlhf  n={n:>9,d} d={d:3d}: ours {ours:7.3f}s  sklearn LogisticRegression {ref:7.3f}s  "
          f"max|theta diff| {gap:.1e}  KKT residual {fit.kkt_residual:.1e}")
    report_ratio(f"rlhf MLE n={n} d={d}: ours / sklearn LogisticRegression", ours / ref,
                 numerator=f"bradley_terry_mle {ours:.3f} s", denominator=f"sklearn {ref:.3f} s", target="<= 1",
                 met=ours <= ref)


def bench_mab(n_arms: int, n_records: int, repeats: int) -> None:
    rng = np.random.default_rng(20261123)
    actions = rng.integers(0, n_arms, size=n_records)
    rewards = rng.random(n_records)

    def fit_and_sample(secure: bool) -> None:
        policy = KLMABPolicy(n_arms, eta=0.1, beta0=0.5).fit(actions, rewards)
        if secure:  # the deployment default: OpenDP's exact Gumbel noisy-max
            policy.sample()
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                policy.sample(rng=rng, insecure_seeded_noise=True)

    medians = interleaved({"secure": lambda: fit_and_sample(True), "seeded": lambda: fit_and_sample(False),
                           "bincount": lambda: np.bincount(actions, weights=rewards, minlength=n_arms)}, repeats)
    secure, seeded, ref = medians["secure"], medians["seeded"], medians["bincount"]
    print(f"mab   K={n_arms:>9,d} n={n_records:>11,d}: fit + 1 secure sample {secure:7.3f}s  (target < 1 s)  "
          f"fit + 1 seeded sample {seeded:7.3f}s")
    report_ratio(f"mab K={n_arms} n={n_records}: secure / seeded (fit + 1 sample)", secure / seeded,
                 numerator=f"secure {secure:.3f} s", denominator=f"seeded {seeded:.3f} s")
    report_ratio(f"mab K={n_arms} n={n_records}: secure fit + sample / one weighted bincount", secure / ref,
                 numerator=f"secure {secure:.3f} s", denominator=f"bincount {ref:.4f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", type=float, default=1.0, help="Multiply every size by this factor.")
    parser.add_argument("--repeats", type=int, default=5, help="interleaved rounds (medians are reported)")
    parser.add_argument("--quick", action="store_true", help="A smoke run: --scale 0.01 --repeats 1.")
    args = parser.parse_args()
    if args.quick:
        args.scale, args.repeats = 0.01, 1
    print(f"# medians of {args.repeats} interleaved runs; {load_average()}")
    bench_rlhf(max(1000, int(1_000_000 * args.scale)), 32, args.repeats)
    bench_mab(max(10, int(1_000_000 * args.scale)), max(100, int(10_000_000 * args.scale)), args.repeats)


if __name__ == "__main__":
    main()
