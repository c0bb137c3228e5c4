"""dpbandits: differentially private bandit algorithms, with audits and a study runner.

The main classes are importable from here (loaded on first use, so ``import dpbandits`` stays
light)::

    from dpbandits import DPBAI, KLMABPolicy, DPEBSElimination, USCA, Accountant

Layers (imports go downward only): ``_core`` → ``privacy`` → ``envs`` → ``algorithms`` →
``audit`` → ``experiments`` → ``cli``.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS: dict[str, str] = {
    # best-arm identification (Chen et al. 2024)
    "DPBAI": "dpbandits.algorithms.bai.dp_bai",
    "DPBAIGauss": "dpbandits.algorithms.bai.dp_bai",
    "Baseline": "dpbandits.algorithms.bai.dp_bai",
    "DPOD": "dpbandits.algorithms.bai.dp_od",
    "ODLinBAI": "dpbandits.algorithms.bai.od_linbai",
    "SequentialHalving": "dpbandits.algorithms.bai.sequential_halving",
    # dueling bandits (Saha & Asi 2024) and comparators
    "DPEBSElimination": "dpbandits.algorithms.dueling.dp_ebs_elimination",
    "GOptimalDPDB": "dpbandits.algorithms.dueling.goptimal_dpdb",
    "LDPEBSElimination": "dpbandits.algorithms.dueling.ldp_ebs_elimination",
    "RUCB": "dpbandits.algorithms.dueling.rucb",
    "InterleavedFilter": "dpbandits.algorithms.dueling.interleaved_filter",
    # kernelised contextual bandits (Pavlovic et al. 2025)
    "USCA": "dpbandits.algorithms.kernel.usca",
    "PrivateFeatureRidge": "dpbandits.algorithms.kernel.baselines",
    # KL-regularised offline policies (Zhang et al. 2025)
    "KLMABPolicy": "dpbandits.algorithms.offline.kl_mab",
    "KLLinearPolicy": "dpbandits.algorithms.offline.kl_linear",
    "KLRLHFPolicy": "dpbandits.algorithms.offline.kl_rlhf",
    # privacy: guarantees, mechanisms, noise, counters, accounting
    "PureDP": "dpbandits.privacy.guarantees",
    "ApproxDP": "dpbandits.privacy.guarantees",
    "Neighbouring": "dpbandits.privacy.guarantees",
    "LaplaceMechanism": "dpbandits.privacy.mechanisms",
    "GaussianMechanism": "dpbandits.privacy.mechanisms",
    "ExponentialMechanism": "dpbandits.privacy.mechanisms",
    "ReportNoisyMaxMechanism": "dpbandits.privacy.mechanisms",
    "SecureNoise": "dpbandits.privacy.noise",
    "NumpyNoise": "dpbandits.privacy.noise",
    "privacy_noise": "dpbandits.privacy.noise",
    "BinaryTreeCounter": "dpbandits.privacy.counters",
    "Accountant": "dpbandits.privacy.accounting",
    "DurableAccountant": "dpbandits.privacy.ledger_store",
    # auditing
    "audit_exact": "dpbandits.audit.exact",
    "epsilon_lower_bound": "dpbandits.audit.statistical",
    "float_attack": "dpbandits.audit.floating_point",
    # studies
    "Study": "dpbandits.experiments.config",
    "load_study": "dpbandits.experiments.config",
    "load_bundled_study": "dpbandits.experiments.bundled",
    "run_study": "dpbandits.experiments.runner",
    "plot_run": "dpbandits.experiments.plots",
    "load_run": "dpbandits.experiments.frames",
    "export_run": "dpbandits.experiments.frames",
    # errors and warnings
    "DPBanditsError": "dpbandits._core.errors",
    "InvalidParameterError": "dpbandits._core.errors",
    "PrivacyBudgetExceededError": "dpbandits._core.errors",
    "ForkRefusedError": "dpbandits._core.errors",
    "LedgerUnitError": "dpbandits._core.errors",
    "PerInstanceSpendError": "dpbandits._core.errors",
    "InsecureNoiseWarning": "dpbandits._core.errors",
    "PrivacyWarning": "dpbandits._core.errors",
}

__all__ = ["__version__", *sorted(_EXPORTS)]


def __getattr__(name: str) -> Any:
    """Load a public name (or ``__version__``) on first use (PEP 562)."""
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            value = version("dpbandits")
        except PackageNotFoundError:  # pragma: no cover - a source tree without install
            value = "0.0.0+unknown"
    elif name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
    else:
        raise AttributeError(f"module 'dpbandits' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
