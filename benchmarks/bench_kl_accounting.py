"""Cost of the certified per-instance accountant (``variant="tight"``) of the linear and RLHF policies.

On n logged records (10^4 by default) with d features and K candidates at one context, each
accountant is timed beside the fit of the same policy and beside the closed-form accountant it
replaces as "tight" (``variant="refined"``), in the same process: the ratios are tight / fit and
tight / refined. The certified bound and the loss of the worst neighbour found are printed too.

Usage::

    python benchmarks/bench_kl_accounting.py            # n = 10^4, d = 2 and 5 (the lead's run)
    python benchmarks/bench_kl_accounting.py --quick    # n = 10^3, d = 2, one round (run.py --quick)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import interleaved, load_average, report_ratio

from dpbandits.algorithms.offline import KLLinearPolicy, KLRLHFPolicy
from dpbandits.envs.offline import simulate_logged_contextual, simulate_preferences


def _actions(rng: np.random.Generator, d: int) -> np.ndarray:
    actions = rng.standard_normal((4, d))
    return actions / np.linalg.norm(actions, axis=1, keepdims=True)


def bench_linear(n: int, d: int, repeats: int) -> None:
    rng = np.random.default_rng(20261129)
    theta = rng.standard_normal(d)
    data = simulate_logged_contextual(theta / np.linalg.norm(theta), n, rng=rng)
    actions = _actions(rng, d)
    policy = KLLinearPolicy(eta=0.1, beta0=0.5).fit(data)
    medians = interleaved({
        "fit": lambda: KLLinearPolicy(eta=0.1, beta0=0.5).fit(data),
        "refined": lambda: policy.guarantee(actions, variant="refined"),
        "tight": lambda: policy.guarantee(actions, variant="tight"),
    }, repeats)
    tight = policy.guarantee(actions, variant="tight")
    print(f"linear n={n} d={d}: fit {medians['fit']:.4f}s refined {medians['refined']:.4f}s tight "
          f"{medians['tight']:.3f}s; epsilon tight {tight.epsilon:.4g} (refined "
          f"{policy.guarantee(actions, variant='refined').epsilon:.4g}); {tight.reference}")
    report_ratio(f"linear tight accountant n={n} d={d}: tight / fit", medians["tight"] / medians["fit"],
                 numerator=f"tight {medians['tight']:.3f} s", denominator=f"fit {medians['fit']:.4f} s")
    report_ratio(f"linear tight accountant n={n} d={d}: tight / refined", medians["tight"] / medians["refined"],
                 numerator=f"tight {medians['tight']:.3f} s", denominator=f"refined {medians['refined']:.4f} s")


def bench_rlhf(n: int, d: int, repeats: int, neighbouring: str) -> None:
    rng = np.random.default_rng(20261130)
    theta = rng.standard_normal(d)
    data = simulate_preferences(0.5 * theta / np.linalg.norm(theta), n, n_prompts=200, responses_per_prompt=5,
                                rng=rng)
    actions = _actions(rng, d)
    policy = KLRLHFPolicy(eta=0.1, beta0=0.5).fit(data)
    old = "refined" if neighbouring == "label" else "corrected"
    medians = interleaved({
        "fit": lambda: KLRLHFPolicy(eta=0.1, beta0=0.5).fit(data),
        old: lambda: policy.guarantee(actions, variant=old, neighbouring=neighbouring),
        "tight": lambda: policy.guarantee(actions, variant="tight", neighbouring=neighbouring),
    }, repeats)
    tight = policy.guarantee(actions, variant="tight", neighbouring=neighbouring)
    print(f"rlhf {neighbouring} n={n} d={d}: fit {medians['fit']:.4f}s {old} {medians[old]:.4f}s tight "
          f"{medians['tight']:.3f}s; epsilon tight {tight.epsilon:.4g} ({old} "
          f"{policy.guarantee(actions, variant=old, neighbouring=neighbouring).epsilon:.4g}); {tight.reference}")
    report_ratio(f"rlhf {neighbouring} tight accountant n={n} d={d}: tight / fit", medians["tight"] / medians["fit"],
                 numerator=f"tight {medians['tight']:.3f} s", denominator=f"fit {medians['fit']:.4f} s")
    report_ratio(f"rlhf {neighbouring} tight accountant n={n} d={d}: tight / {old}",
                 medians["tight"] / medians[old], numerator=f"tight {medians['tight']:.3f} s",
                 denominator=f"{old} {medians[old]:.4f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=10_000, help="n, the number of logged records")
    parser.add_argument("--repeats", type=int, default=3, help="interleaved rounds (medians are reported)")
    parser.add_argument("--quick", action="store_true", help="A smoke run: n = 1000, d = 2, one round.")
    args = parser.parse_args()
    dims = (2, 5)
    if args.quick:
        args.records, args.repeats, dims = 1000, 1, (2,)
    print(f"# medians of {args.repeats} interleaved runs; {load_average()}")
    for d in dims:
        bench_linear(args.records, d, args.repeats)
        bench_rlhf(args.records, d, args.repeats, "label")
        bench_rlhf(args.records, d, args.repeats, "add_remove")


if __name__ == "__main__":
    main()
