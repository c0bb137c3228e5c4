"""dpbandits: differentially private bandit algorithms, with audits and a study runner.

The main classes are importable from here (loaded on first use, so ``import dpbandits`` stays
light)::

    from dpbandits import DPBAI, KLMABPolicy, DPEBSElimination, USCA, Accountant

Every public class, function and error is importable from here, and :func:`load` reads any file
that ``save`` wrote (the file records its class)::

    agent = dpbandits.load("agent.npz")

Layers (imports go downward only): ``_core`` → ``privacy`` → ``envs`` → ``algorithms`` →
``audit`` → ``experiments`` → ``cli``.
"""

from __future__ import annotations

import importlib
import os
from typing import Any

_EXPORTS: dict[str, str] = {
    # best-arm identification (Chen et al. 2024)
    "DPBAI": "dpbandits.algorithms.bai.dp_bai",
    "DPBAIGauss": "dpbandits.algorithms.bai.dp_bai",
    "Baseline": "dpbandits.algorithms.bai.dp_bai",
    "DPOD": "dpbandits.algorithms.bai.dp_od",
    "ODLinBAI": "dpbandits.algorithms.bai.od_linbai",
    "SequentialHalving": "dpbandits.algorithms.bai.sequential_halving",
    "UniformAllocation": "dpbandits.algorithms.bai.uniform",
    "PhasedAgent": "dpbandits.algorithms.bai.phased",
    "InsufficientBudgetError": "dpbandits.algorithms.bai.schedule",
    "DegenerateInstanceError": "dpbandits.algorithms.bai.schedule",
    # dueling bandits (Saha & Asi 2024) and comparators
    "DPEBSElimination": "dpbandits.algorithms.dueling.dp_ebs_elimination",
    "GOptimalDPDB": "dpbandits.algorithms.dueling.goptimal_dpdb",
    "LDPEBSElimination": "dpbandits.algorithms.dueling.ldp_ebs_elimination",
    "RUCB": "dpbandits.algorithms.dueling.rucb",
    "InterleavedFilter": "dpbandits.algorithms.dueling.interleaved_filter",
    "BeatTheMean": "dpbandits.algorithms.dueling.beat_the_mean",
    "CopelandConfidenceBound": "dpbandits.algorithms.dueling.copeland_confidence_bound",
    "RMED1": "dpbandits.algorithms.dueling.rmed",
    "DoubleThompsonSampling": "dpbandits.algorithms.dueling.double_thompson",
    "MaxInP": "dpbandits.algorithms.dueling.maxinp",
    "CoLSTIM": "dpbandits.algorithms.dueling.colstim",
    # kernelised contextual bandits (Pavlovic et al. 2025)
    "USCA": "dpbandits.algorithms.kernel.usca",
    "PrivateFeatureRidge": "dpbandits.algorithms.kernel.baselines",
    "UniformFeatureRidge": "dpbandits.algorithms.kernel.learners",
    "CGPUCB": "dpbandits.algorithms.kernel.learners",
    # KL-regularised offline policies (Zhang et al. 2025)
    "KLMABPolicy": "dpbandits.algorithms.offline.kl_mab",
    "KLLinearPolicy": "dpbandits.algorithms.offline.kl_linear",
    "KLRLHFPolicy": "dpbandits.algorithms.offline.kl_rlhf",
    "ExponentialMechanismMAB": "dpbandits.algorithms.offline.baselines",
    "ReportNoisyMaxMAB": "dpbandits.algorithms.offline.baselines",
    "LaplaceStatisticsGreedyMAB": "dpbandits.algorithms.offline.baselines",
    "PessimisticGreedyMAB": "dpbandits.algorithms.offline.baselines",
    # the roles every algorithm plays
    "Algorithm": "dpbandits.algorithms.protocols",
    "Agent": "dpbandits.algorithms.protocols",
    "OfflinePolicy": "dpbandits.algorithms.protocols",
    "missing_members": "dpbandits.algorithms.protocols",
    "SimulationResult": "dpbandits.algorithms.results",
    # privacy: guarantees, mechanisms, noise, counters, accounting
    "PureDP": "dpbandits.privacy.guarantees",
    "ApproxDP": "dpbandits.privacy.guarantees",
    "Neighbouring": "dpbandits.privacy.guarantees",
    "NonPrivate": "dpbandits.privacy.guarantees",
    "Guarantee": "dpbandits.privacy.guarantees",
    "UnsupportedConversionError": "dpbandits.privacy.guarantees",
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
    # the rest of the public API of each subpackage (its __all__): environments, privacy building blocks,
    # auditors, study files, offline helpers
    "mab_utilities": "dpbandits.algorithms.offline.kl_mab",
    "BradleyTerryFit": "dpbandits.algorithms.offline.kl_rlhf",
    "bradley_terry_mle": "dpbandits.algorithms.offline.kl_rlhf",
    "ExactAuditReport": "dpbandits.audit.exact",
    "LaplaceDistribution": "dpbandits.audit.exact",
    "delta_for_epsilon": "dpbandits.audit.exact",
    "delta_for_epsilon_batch": "dpbandits.audit.exact",
    "hockey_stick_divergence": "dpbandits.audit.exact",
    "interval_log_probabilities": "dpbandits.audit.exact",
    "privacy_loss": "dpbandits.audit.exact",
    "privacy_loss_batch": "dpbandits.audit.exact",
    "FloatAttackReport": "dpbandits.audit.floating_point",
    "OutcomeEvent": "dpbandits.audit.statistical",
    "StatisticalAuditReport": "dpbandits.audit.statistical",
    "ThresholdEvent": "dpbandits.audit.statistical",
    "clopper_pearson": "dpbandits.audit.statistical",
    "select_events": "dpbandits.audit.statistical",
    "threshold_events": "dpbandits.audit.statistical",
    "RecordingNoise": "dpbandits.audit.transcript",
    "ReplayNoise": "dpbandits.audit.transcript",
    "TranscriptComparison": "dpbandits.audit.transcript",
    "compare_transcripts": "dpbandits.audit.transcript",
    "BanditEnvironment": "dpbandits.envs.base",
    "RewardStreams": "dpbandits.envs.base",
    "LinearBandit": "dpbandits.envs.linear",
    "dp_bai_instance": "dpbandits.envs.linear",
    "dp_bai_two_arm_instance": "dpbandits.envs.linear",
    "BernoulliBandit": "dpbandits.envs.mab",
    "BetaBandit": "dpbandits.envs.mab",
    "ClippedGaussianBandit": "dpbandits.envs.mab",
    "UniformBandit": "dpbandits.envs.mab",
    "list_bundled_studies": "dpbandits.experiments.bundled",
    "parse_study_text": "dpbandits.experiments.config",
    "RunFrames": "dpbandits.experiments.frames",
    "RunResult": "dpbandits.experiments.runner",
    "load_trials": "dpbandits.experiments.store",
    "read_summary": "dpbandits.experiments.store",
    "advanced_composition": "dpbandits.privacy.accounting",
    "basic_composition": "dpbandits.privacy.accounting",
    "compose_guarantees": "dpbandits.privacy.accounting",
    "gaussian_delta": "dpbandits.privacy.accounting",
    "gaussian_epsilon": "dpbandits.privacy.accounting",
    "to_dp_accounting": "dpbandits.privacy.dp_accounting_bridge",
    "ApproxEvent": "dpbandits.privacy.events",
    "ComposedEvent": "dpbandits.privacy.events",
    "EpsilonDelta": "dpbandits.privacy.events",
    "GaussianEvent": "dpbandits.privacy.events",
    "LaplaceEvent": "dpbandits.privacy.events",
    "PrivacyEvent": "dpbandits.privacy.events",
    "PureEvent": "dpbandits.privacy.events",
    "add_remove_to_label": "dpbandits.privacy.guarantees",
    "add_remove_to_replace_one": "dpbandits.privacy.guarantees",
    "replace_one_to_add_remove": "dpbandits.privacy.guarantees",
    "replace_one_to_label": "dpbandits.privacy.guarantees",
    "GibbsMechanism": "dpbandits.privacy.mechanisms",
    "GridExponentialMechanism": "dpbandits.privacy.mechanisms",
    "Mechanism": "dpbandits.privacy.mechanisms",
    "analytic_gaussian_sigma": "dpbandits.privacy.mechanisms",
    "classical_gaussian_sigma": "dpbandits.privacy.mechanisms",
    "gibbs_log_probabilities": "dpbandits.privacy.mechanisms",
    "list_mechanisms": "dpbandits.privacy.mechanisms",
    "report_noisy_max": "dpbandits.privacy.mechanisms",
    "sample_log_weights": "dpbandits.privacy.mechanisms",
    "uniform_grid": "dpbandits.privacy.mechanisms",
    "NoiseBackend": "dpbandits.privacy.noise",
    "OpenDPNoise": "dpbandits.privacy.noise",
    "get_noise_backend": "dpbandits.privacy.noise",
    "GroupPrivacy": "dpbandits.privacy.ledger",
    "LedgerEntry": "dpbandits.privacy.ledger",
    "NeighbouringConversion": "dpbandits.privacy.ledger",
    "detectable_violation": "dpbandits.audit.statistical",
    # errors and warnings (every class of dpbandits._core.errors)
    "DPBanditsError": "dpbandits._core.errors",
    "InvalidParameterError": "dpbandits._core.errors",
    "InvalidActionError": "dpbandits._core.errors",
    "NotFittedError": "dpbandits._core.errors",
    "EmptySupportError": "dpbandits._core.errors",
    "UnsupportedEventError": "dpbandits._core.errors",
    "UnknownParameterError": "dpbandits._core.errors",
    "PrivacyBudgetExceededError": "dpbandits._core.errors",
    "DependencyNotInstalledError": "dpbandits._core.errors",
    "DataFormatError": "dpbandits._core.errors",
    "UnsafeTargetError": "dpbandits._core.errors",
    "UserAlgorithmError": "dpbandits._core.errors",
    "StudyError": "dpbandits._core.errors",
    "DPBanditsWarning": "dpbandits._core.errors",
    "ForkRefusedError": "dpbandits._core.errors",
    "LedgerUnitError": "dpbandits._core.errors",
    "PerInstanceSpendError": "dpbandits._core.errors",
    "LedgerNotFoundError": "dpbandits._core.errors",
    "LedgerCorruptError": "dpbandits._core.errors",
    "LedgerStorageError": "dpbandits._core.errors",
    "PrivacyWarning": "dpbandits._core.errors",
    "PaperVariantWarning": "dpbandits._core.errors",
    "InsecureNoiseWarning": "dpbandits._core.errors",
    "NumericsWarning": "dpbandits._core.errors",
    "ExperimentalWarning": "dpbandits._core.errors",
}

__all__ = ["__version__", "load", *sorted(_EXPORTS)]


def load(path: str | os.PathLike[str], **overrides: Any) -> Any:
    """Load whatever a state file holds: an agent, an algorithm or a fitted policy.

    The file records its class (only dpbandits classes are ever built, through their constructors:
    a file cannot run code), so one call reads every file that a ``save(path)`` wrote; the object
    continues exactly as the saved one would. ``Class.load(path)`` does the same and also checks the
    class.

    Parameters
    ----------
    path : str or PathLike
    **overrides
        Values of constructor arguments that could not be saved (callables), by name.

    Returns
    -------
    object
        The saved object.

    Raises
    ------
    DataFormatError
        If the file is not a dpbandits state file, comes from a newer format version, or names a
        class that is not a dpbandits class that can be loaded.

    Examples
    --------
    >>> import dpbandits, tempfile, os
    >>> agent = dpbandits.RUCB(3, horizon=10, rng=0)
    >>> path = agent.save(os.path.join(tempfile.mkdtemp(), "agent.npz"))
    >>> type(dpbandits.load(path)).__name__
    'RUCB'
    """
    from dpbandits._core.persistence import Persistable

    return Persistable.load(path, **overrides)


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
