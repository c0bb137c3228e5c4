"""Jointly-DP kernelised contextual bandits: USCA and its baselines (registration on import).

Modules: :mod:`~.features` (data-independent feature maps), :mod:`~.surrogate` (μ̄_T and σ̄², exact and
feature backends), :mod:`~.sup_bound` (certified sup σ̄²), :mod:`~.information_gain` (γ̂),
:mod:`~.usca` (the algorithm), :mod:`~.baselines` (B1, B3, B4), :mod:`~.learners` (their agents), :mod:`~.evaluation` (trial protocol),
:mod:`~.rates` (fit of the error-rate shape).
"""

from dpbandits.algorithms.kernel import baselines, learners, usca
from dpbandits.algorithms.kernel.baselines import PrivateFeatureRidge
from dpbandits.algorithms.kernel.learners import CGPUCB, UniformFeatureRidge
from dpbandits.algorithms.kernel.usca import USCA

__all__ = ["CGPUCB", "USCA", "PrivateFeatureRidge", "UniformFeatureRidge", "baselines", "learners", "usca"]
