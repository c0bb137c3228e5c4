"""Privacy auditing: check a mechanism's privacy claim against its actual output distributions.

* :mod:`dpbandits.audit.exact` — for finite output sets (or continuous outputs discretised onto
  intervals): the exact privacy loss max_o |log p(o)/q(o)| and the smallest δ for a given ε, over
  given neighbouring pairs (:func:`audit_exact`).
* :mod:`dpbandits.audit.statistical` — from samples of a mechanism on two neighbouring inputs, a
  lower confidence bound on ε from Clopper–Pearson intervals on output events
  (:func:`epsilon_lower_bound`).
* :mod:`dpbandits.audit.floating_point` — the floating-point (low-order bits) attack on released
  values of two neighbours (:func:`float_attack`).
* :mod:`dpbandits.audit.transcript` — for adaptive algorithms that release through Laplace-type
  noise: the exact log-density ratio of one run's transcript and its supremum over the noise, by
  recording the releases and replaying them on a neighbour (:func:`compare_transcripts`).
* :mod:`dpbandits.audit.budgets` — the budget contract: what a release spends and when the budget
  refuses must be identical on neighbouring inputs, and shared ledgers must never be overspent.

:func:`detectable_violation` states the power of a statistical audit (the smallest excess over the
claim it detects).

A violation found by either auditor is evidence against the claim (exact: a counterexample;
statistical: at the stated confidence). Passing is evidence, not proof, unless the neighbouring
pairs audited are provably the worst case.
"""

from __future__ import annotations

from dpbandits.audit.exact import (
    ExactAuditReport,
    LaplaceDistribution,
    audit_exact,
    delta_for_epsilon,
    delta_for_epsilon_batch,
    hockey_stick_divergence,
    interval_log_probabilities,
    privacy_loss,
    privacy_loss_batch,
)
from dpbandits.audit.floating_point import FloatAttackReport, float_attack
from dpbandits.audit.statistical import (
    OutcomeEvent,
    StatisticalAuditReport,
    ThresholdEvent,
    clopper_pearson,
    detectable_violation,
    epsilon_lower_bound,
    select_events,
    threshold_events,
)
from dpbandits.audit.transcript import RecordingNoise, ReplayNoise, TranscriptComparison, compare_transcripts

__all__ = [
    "ExactAuditReport",
    "FloatAttackReport",
    "LaplaceDistribution",
    "OutcomeEvent",
    "RecordingNoise",
    "ReplayNoise",
    "StatisticalAuditReport",
    "ThresholdEvent",
    "TranscriptComparison",
    "audit_exact",
    "clopper_pearson",
    "compare_transcripts",
    "delta_for_epsilon",
    "delta_for_epsilon_batch",
    "detectable_violation",
    "epsilon_lower_bound",
    "float_attack",
    "hockey_stick_divergence",
    "interval_log_probabilities",
    "privacy_loss",
    "privacy_loss_batch",
    "select_events",
    "threshold_events",
]
