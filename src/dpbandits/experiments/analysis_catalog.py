"""The catalogue of post-run analyses: their names and what each computes.

A study names the analyses it wants (``analyses = [...]``); the study loader checks the names against
this catalogue, and :mod:`dpbandits.experiments.analyses` implements each entry. Keeping the
declarations here lets the loader validate a study without importing the implementations (which
read run directories through the store, which reads studies).
"""

from __future__ import annotations

from dpbandits._core.errors import StudyError

__all__ = ["ANALYSES", "check_analysis_name"]

ANALYSES: dict[str, str] = {
    "usca-rate-shape": (
        "Theorem 4.1's rate sqrt(gamma/T) + gamma/(T eps) log(e + T eps/gamma) against the prior-art "
        "sqrt(gamma/T) + sqrt(gamma/(T eps)): relative NNLS fits on the unsaturated cells, the exponent "
        "of the privacy excess in gamma/(T eps), bootstrap intervals over trials, and which shape the "
        "data support"
    ),
    "dueling-epsilon-fit": (
        "E2(a): fits R = a + b/eps to each private algorithm's reward regret over epsilon at fixed T, "
        "using only epsilons where >= 90% of trials committed (the studies' guard); pass: R^2 >= 0.95 and "
        "a within 20% of the non-private regret"
    ),
    "dueling-excess-vs-arms": (
        "E2(b): the privacy excess R(eps) - R(inf) against K for each epsilon (guarded points only), a "
        "line fit with its slope, the slope times epsilon (constant if the slope is proportional to "
        "1/eps) and R^2"
    ),
    "dueling-excess-vs-horizon": (
        "E2(c): the privacy excess R(eps) - R(inf) against T (guarded points only): its T-exponent from "
        "a log-log fit (polylog growth has a small, falling exponent) and its degree p in ln T, with 95% "
        "intervals"
    ),
    "dueling-horizon-slope": (
        "E3: the log-log slope of reward regret against T (expected about 1/2) for each algorithm, "
        "dimension d (the length of theta) and epsilon with three or more horizons, with 95% intervals"
    ),
    "dueling-dimension-exponent": (
        "E4: per dimension d, fits R = a + b/eps over epsilon at fixed T, then the exponent e of b ~ d^e "
        "with 95% intervals (trial noise; residuals) and which of 3 (the reconstruction, errata DUEL-10) and 6 "
        "(the paper's bound) the wider interval holds"
    ),
}
"""Name -> one-paragraph description of every registered analysis."""


def check_analysis_name(name: str) -> str:
    """Return ``name`` if it is a catalogued analysis.

    Raises
    ------
    StudyError
        If no analysis has that name.
    """
    if name not in ANALYSES:
        raise StudyError(f"analysis must be one of {sorted(ANALYSES)}; got {name!r}")
    return name
