"""Dueling bandits: DP-EBS-Elimination and its non-private twin, classic baselines, theory curves.

Importing this package registers its algorithms in :mod:`dpbandits.algorithms.registry`.
"""

from dpbandits.algorithms.dueling import (
    dp_ebs_elimination,
    goptimal_dpdb,
    interleaved_filter,
    ldp_ebs_elimination,
    rucb,
    theory,
)

__all__ = ["dp_ebs_elimination", "goptimal_dpdb", "interleaved_filter", "ldp_ebs_elimination", "rucb", "theory"]
