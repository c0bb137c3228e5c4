"""Offline KL-regularised policies whose *sampled action* is differentially private.

The policies (MAB, linear contextual, RLHF) are fitted scikit-learn style; their accountants
give per-instance guarantees per theorem of Zhang et al. (2025), with the corrected bounds of
the paper errata (KL-C1 to KL-C5) as the default.

Importing this package is light: each name below is imported from its module when first used, so
``dpbandits account mab`` loads the MAB policy only, not the linear and RLHF policies (and the
SciPy solvers they need) or the simulations. :data:`REGISTERING_MODULE` is the module whose import
registers every offline algorithm and policy class with the registries (the algorithm registry and
the state-file codec import it by that name).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dpbandits._core.lazy import lazy_dir, load_lazily

if TYPE_CHECKING:  # the names as the type checker sees them; at run time they come from __getattr__
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

REGISTERING_MODULE = "dpbandits.algorithms.offline.simulate"
"""Importing it imports every offline module that registers an algorithm or a persistable class."""

_HOMES = {
    "BradleyTerryFit": "kl_rlhf",
    "KLLinearPolicy": "kl_linear",
    "KLMABPolicy": "kl_mab",
    "KLRLHFPolicy": "kl_rlhf",
    "accountants": None,
    "baselines": None,
    "bradley_terry_mle": "kl_rlhf",
    "mab_utilities": "kl_mab",
    "simulate": None,
}
"""Public name -> the submodule defining it (None: the name is a submodule)."""


def __getattr__(name: str) -> Any:
    return load_lazily(__name__, name, _HOMES, globals())


def __dir__() -> list[str]:
    return lazy_dir(globals(), __all__)
