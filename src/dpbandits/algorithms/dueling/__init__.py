"""Dueling bandits: DP-EBS-Elimination, GOptimal-DPDB, their twins, baselines and theory curves.

Non-private baselines: RUCB, Interleaved Filter, Beat-the-Mean, Copeland Confidence Bound, RMED1,
Double Thompson Sampling, and the linear MaxInP and CoLSTIM; the local-DP baseline.

Importing this package registers its algorithms in :mod:`dpbandits.algorithms.registry`.
"""

from dpbandits.algorithms.dueling import (
    beat_the_mean,
    colstim,
    copeland_confidence_bound,
    double_thompson,
    dp_ebs_elimination,
    goptimal_dpdb,
    interleaved_filter,
    ldp_ebs_elimination,
    maxinp,
    rmed,
    rucb,
    theory,
)

__all__ = [
    "beat_the_mean",
    "colstim",
    "copeland_confidence_bound",
    "double_thompson",
    "dp_ebs_elimination",
    "goptimal_dpdb",
    "interleaved_filter",
    "ldp_ebs_elimination",
    "maxinp",
    "rmed",
    "rucb",
    "theory",
]
