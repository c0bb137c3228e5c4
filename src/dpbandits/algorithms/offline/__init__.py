"""Offline KL-regularised policies whose *sampled action* is differentially private.

The policies (MAB, linear contextual, RLHF) are fitted scikit-learn style; their accountants
give per-instance guarantees per theorem of Zhang et al. (2025), with the corrected bounds of
the paper errata (KL-C1 to KL-C5) as the default. Importing this package registers the
simulation entry points with the algorithm registry.
"""

from __future__ import annotations

from dpbandits.algorithms.offline import accountants, baselines, simulate
from dpbandits.algorithms.offline.kl_linear import KLLinearPolicy
from dpbandits.algorithms.offline.kl_mab import KLMABPolicy, mab_utilities
from dpbandits.algorithms.offline.kl_rlhf import BradleyTerryFit, KLRLHFPolicy, bradley_terry_mle

__all__ = [
    "BradleyTerryFit",
    "KLLinearPolicy",
    "KLMABPolicy",
    "KLRLHFPolicy",
    "accountants",
    "baselines",
    "bradley_terry_mle",
    "mab_utilities",
    "simulate",
]
