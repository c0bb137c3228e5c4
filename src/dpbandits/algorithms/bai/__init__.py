"""Best-arm identification: fixed-budget algorithms, private and non-private.

Importing this package registers its algorithms in :mod:`dpbandits.algorithms.registry`.
"""

from dpbandits.algorithms.bai import sequential_halving, uniform

__all__ = ["sequential_halving", "uniform"]

# DP-BAI family (Chen et al. 2024): DP-BAI, DP-BAI-Gauss, Baseline, OD-LinBAI, DP-OD.
from dpbandits.algorithms.bai import dp_bai, dp_od, od_linbai

__all__ += ["dp_bai", "dp_od", "od_linbai"]
