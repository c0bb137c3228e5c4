"""Best-arm identification: fixed-budget algorithms, private and non-private.

DP-BAI family (Chen et al. 2024): DP-BAI, DP-BAI-Gauss, Baseline, OD-LinBAI, DP-OD; and Sequential
Halving and uniform allocation. Importing this package registers its algorithms in
:mod:`dpbandits.algorithms.registry`.
"""

from dpbandits.algorithms.bai import dp_bai, dp_od, od_linbai, sequential_halving, uniform
from dpbandits.algorithms.bai.dp_bai import DPBAI, Baseline, DPBAIGauss
from dpbandits.algorithms.bai.dp_od import DPOD
from dpbandits.algorithms.bai.od_linbai import ODLinBAI
from dpbandits.algorithms.bai.sequential_halving import SequentialHalving
from dpbandits.algorithms.bai.uniform import UniformAllocation

__all__ = [
    "DPBAI",
    "DPOD",
    "Baseline",
    "DPBAIGauss",
    "ODLinBAI",
    "SequentialHalving",
    "UniformAllocation",
    "dp_bai",
    "dp_od",
    "od_linbai",
    "sequential_halving",
    "uniform",
]
