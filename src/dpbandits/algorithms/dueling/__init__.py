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

from dpbandits.algorithms.dueling.dp_ebs_elimination import DPEBSElimination
from dpbandits.algorithms.dueling.goptimal_dpdb import GOptimalDPDB
from dpbandits.algorithms.dueling.interleaved_filter import InterleavedFilter
from dpbandits.algorithms.dueling.ldp_ebs_elimination import LDPEBSElimination
from dpbandits.algorithms.dueling.rucb import RUCB

__all__ += ["RUCB", "DPEBSElimination", "GOptimalDPDB", "InterleavedFilter", "LDPEBSElimination"]
