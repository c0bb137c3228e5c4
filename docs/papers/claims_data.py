"""The claims pages' privacy data: the privacy contract's audits of one paper's algorithms, stored as JSON.

For a proof of privacy, the claims pages show what the library's audits measure against the claimed
ε: the exact privacy loss (an exact computation, no interval), the supremum of the transcript's
log-density ratio over sampled runs (a lower estimate of the worst case), or the Clopper–Pearson
lower bound on ε from sampled releases (one-sided, at confidence 1 − 10⁻⁶), for every registered
privacy case of the paper's algorithms, the negative controls included. The cases are those of
:mod:`dpbandits.audit.cases` (the privacy contract); the long ("heavy") ones are left out.

Usage: ``python docs/papers/claims_data.py FAMILY [FAMILY ...]`` writes
``docs/papers/data/privacy-<family>.json``; ``tests/unit/test_claims_data.py`` re-runs the audits and
compares (the exact losses to 1e-9; the sampled audits, which draw secure noise, to their verdict).
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

from dpbandits.audit.contract import load_privacy_cases, privacy_cases, run_privacy_case

DATA = Path(__file__).resolve().parent / "data"
SEED = 20261127
FAMILIES: dict[str, tuple[str, ...]] = {
    "dp-bai": ("dp-bai", "dp-bai-baseline", "dp-bai-gauss", "dp-od"),
    "dueling": ("dp-ebs-elimination", "goptimal-dpdb", "ldp-ebs-elimination"),
    "usca": ("usca", "usca-trivial-sensitivity", "private-feature-ridge"),
}


def _number(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)


def audit_family(family: str) -> dict[str, Any]:
    """Audit every non-heavy privacy case of ``family``'s algorithms; the largest loss per case."""
    load_privacy_cases()
    cases = []
    for algorithm in FAMILIES[family]:
        for index, case in enumerate(privacy_cases(algorithm)):
            if case.heavy:
                continue
            report = run_privacy_case(case, rng=SEED + index)
            pairs = report.pairs
            kind = ("exact" if case.distribution is not None else
                    "transcript" if case.transcript_loss is not None else "statistical")
            field = {"exact": "exact_loss", "transcript": "transcript_loss", "statistical": "epsilon_lower_bound"}[kind]
            measured = max((getattr(p, field) for p in pairs if getattr(p, field) is not None), default=0.0)
            claim = pairs[0]
            cases.append({
                "algorithm": algorithm, "description": case.description, "kind": kind,
                "negative_control": case.broken, "pairs": len(pairs),
                "samples": None if kind == "exact" else case.n_samples,
                "epsilon_claimed": max(p.epsilon_claimed for p in pairs), "delta_claimed": claim.delta_claimed,
                "measured": _number(measured), "refuted": report.refuted,
                "float_attack_cells": sum(p.float_attack_cells or 0 for p in pairs),
                # an (ε, δ) claim is audited by the exact δ at the claimed ε
                "exact_delta": (max(p.exact_delta for p in pairs if p.exact_delta is not None)
                                if kind == "exact" and claim.delta_claimed > 0 else None),
            })
    return {
        "family": family, "seed": SEED,
        "command": f"python docs/papers/claims_data.py {family}",
        "description": ("Per privacy case of the contract (heavy cases left out): the claimed epsilon (largest over "
                        "the pairs), and what the audit measures, the largest over the pairs: exact = the exact "
                        "privacy loss; transcript = the supremum over the sampled runs of the released transcript's "
                        "log-density ratio; statistical = the Clopper-Pearson lower bound on epsilon at confidence "
                        "1 - 1e-6; float_attack_cells = the output cells whose low-order bits tell the inputs apart (a refutation); exact_delta (approximate-DP claims) = the exact delta at the claimed epsilon. A negative control is a deliberately broken variant whose audit must refute it."),
        "cases": cases,
    }


def main(argv: list[str]) -> None:
    for family in argv or list(FAMILIES):
        if family not in FAMILIES:
            raise SystemExit(f"unknown family {family!r}; choose from {', '.join(FAMILIES)}")
        path = DATA / f"privacy-{family}.json"
        path.write_text(json.dumps(audit_family(family), indent=1) + "\n", encoding="utf-8")
        print(path)


if __name__ == "__main__":
    main(sys.argv[1:])
