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

from dpbandits.algorithms.dueling.beat_the_mean import BeatTheMean
from dpbandits.algorithms.dueling.colstim import CoLSTIM
from dpbandits.algorithms.dueling.copeland_confidence_bound import CopelandConfidenceBound
from dpbandits.algorithms.dueling.double_thompson import DoubleThompsonSampling
from dpbandits.algorithms.dueling.dp_ebs_elimination import DPEBSElimination
from dpbandits.algorithms.dueling.goptimal_dpdb import GOptimalDPDB
from dpbandits.algorithms.dueling.interleaved_filter import InterleavedFilter
from dpbandits.algorithms.dueling.ldp_ebs_elimination import LDPEBSElimination
from dpbandits.algorithms.dueling.maxinp import MaxInP
from dpbandits.algorithms.dueling.rmed import RMED1
from dpbandits.algorithms.dueling.rucb import RUCB

__all__ += [
    "RMED1",
    "RUCB",
    "BeatTheMean",
    "CoLSTIM",
    "CopelandConfidenceBound",
    "DPEBSElimination",
    "DoubleThompsonSampling",
    "GOptimalDPDB",
    "InterleavedFilter",
    "LDPEBSElimination",
    "MaxInP",
]
