"""Best-arm identification: fixed-budget algorithms, private and non-private.

Importing this package registers its algorithms in :mod:`dpbandits.algorithms.registry`.
"""

from dpbandits.algorithms.bai import sequential_halving, uniform

__all__ = ["sequential_halving", "uniform"]
