"""dpbandits.privacy: guarantees, mechanisms, accounting and noise backends.

The ledger (:mod:`dpbandits.privacy.accounting`) is typed and atomic; its durable form
(:mod:`dpbandits.privacy.ledger_store`, SQLAlchemy) is imported on first use only.

Every release is secure by default: its noise comes from OpenDP (the OS CSPRNG, floating-point
safe) through :func:`~dpbandits.privacy.noise.privacy_noise`; seeded NumPy noise is for simulation,
and seeding a release needs ``insecure_seeded_noise=True``.
"""

from dpbandits.privacy.accounting import (
    Accountant,
    ApproxEvent,
    ComposedEvent,
    EpsilonDelta,
    GaussianEvent,
    LaplaceEvent,
    PrivacyEvent,
    PureEvent,
    advanced_composition,
    basic_composition,
    compose_guarantees,
    gaussian_delta,
    gaussian_epsilon,
    to_dp_accounting,
)
from dpbandits.privacy.guarantees import (
    ApproxDP,
    Guarantee,
    Neighbouring,
    PureDP,
    UnsupportedConversionError,
    add_remove_to_label,
    add_remove_to_replace_one,
    replace_one_to_add_remove,
    replace_one_to_label,
)
from dpbandits.privacy.ledger import GroupPrivacy, LedgerEntry, NeighbouringConversion
from dpbandits.privacy.mechanisms import (
    ExponentialMechanism,
    GaussianMechanism,
    GibbsMechanism,
    GridExponentialMechanism,
    LaplaceMechanism,
    Mechanism,
    ReportNoisyMaxMechanism,
    analytic_gaussian_sigma,
    classical_gaussian_sigma,
    gibbs_log_probabilities,
    list_mechanisms,
    report_noisy_max,
    sample_log_weights,
    uniform_grid,
)
from dpbandits.privacy.noise import NoiseBackend, NumpyNoise, OpenDPNoise, get_noise_backend

__all__ = [
    "Accountant",
    "ApproxDP",
    "ApproxEvent",
    "ComposedEvent",
    "EpsilonDelta",
    "ExponentialMechanism",
    "GaussianEvent",
    "GaussianMechanism",
    "GibbsMechanism",
    "GridExponentialMechanism",
    "GroupPrivacy",
    "Guarantee",
    "LaplaceEvent",
    "LaplaceMechanism",
    "LedgerEntry",
    "Mechanism",
    "Neighbouring",
    "NeighbouringConversion",
    "NoiseBackend",
    "NumpyNoise",
    "OpenDPNoise",
    "PrivacyEvent",
    "PureDP",
    "PureEvent",
    "ReportNoisyMaxMechanism",
    "UnsupportedConversionError",
    "add_remove_to_label",
    "add_remove_to_replace_one",
    "advanced_composition",
    "analytic_gaussian_sigma",
    "basic_composition",
    "classical_gaussian_sigma",
    "compose_guarantees",
    "gaussian_delta",
    "gaussian_epsilon",
    "get_noise_backend",
    "gibbs_log_probabilities",
    "list_mechanisms",
    "replace_one_to_add_remove",
    "replace_one_to_label",
    "report_noisy_max",
    "sample_log_weights",
    "to_dp_accounting",
    "uniform_grid",
]
