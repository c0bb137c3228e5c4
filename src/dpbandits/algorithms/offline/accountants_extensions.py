"""Guarantees of the KL policies' samplers beyond one exact sample.

Repeated samples, approximate policies and rejection sampling: the paper's §4.4 extensions, with
the corrections of the paper errata.
"""

from __future__ import annotations

import math
from dataclasses import replace

from dpbandits._core.errors import InvalidParameterError
from dpbandits._core.validation import check_in_interval, check_int, check_one_of
from dpbandits.algorithms.offline._kl_accounting import _paper_warning
from dpbandits.privacy.accounting import advanced_composition, basic_composition
from dpbandits.privacy.guarantees import Guarantee

__all__ = ["inexact_policy", "rejection_sampling_guarantee", "repeated_sampling"]


# ---------------------------------------------------------------- extensions (paper §4.4)
def repeated_sampling(guarantee: Guarantee, n_samples: int, *, method: str = "basic",
                      delta_prime: float | None = None) -> Guarantee:
    """Guarantee of ``n_samples`` independent samples from the same policy (same context).

    ``"basic"``: (Tε, Tδ). ``"advanced"`` (Dwork & Roth Thm 3.20, with the paper's typo fixed,
    errata KL-17): (√(2T·ln(1/δ'))·ε + T·ε·(e^ε − 1), T·δ + δ') with δ' ∈ (0, 1).

    Examples
    --------
    >>> from dpbandits.privacy.guarantees import PureDP
    >>> g = PureDP(epsilon=0.1, unit="one record", neighbouring="add/remove")
    >>> round(repeated_sampling(g, 100, method="advanced", delta_prime=1e-6).epsilon, 6)
    6.308231
    """
    t = check_int(n_samples, "n_samples", minimum=1)
    check_one_of(method, "method", ("basic", "advanced"))
    eps, delta = guarantee.epsilon, guarantee.delta
    if method == "basic":
        new_eps, new_delta = basic_composition([guarantee] * t)
    elif not math.isfinite(eps) or eps == 0.0 or delta >= 1.0:
        if delta_prime is None:
            raise InvalidParameterError("delta_prime must be a float in (0, 1) for method='advanced'; got None")
        new_eps, new_delta = t * eps, min(1.0, t * delta + float(delta_prime))
    else:
        if delta_prime is None:
            raise InvalidParameterError("delta_prime must be a float in (0, 1) for method='advanced'; got None")
        new_eps, new_delta = advanced_composition(eps, delta, t, delta_prime)
    composed = guarantee.with_parameters(new_eps, new_delta)
    return replace(composed, unit=f"{guarantee.unit}; {t} samples ({method} composition)")


def inexact_policy(guarantee: Guarantee, divergence: float, *, variant: str = "corrected",
                   neighbour_divergence: float | None = None) -> Guarantee:
    """Guarantee of an approximate policy π̂ with D∞(π̃‖π̂) <= ε̂ and D∞(π̂‖π̃) <= ε̂ on every dataset.

    Corrected: (ε + 2ε̂, e^{ε̂}·δ) (errata KL-18). Paper: (ε + 2ε̂, δ), invalid when δ > 0 (warning).
    If π̂ ∝ π0·e^{û/η} with ‖û − u‖∞ <= e, then ε̂ = 2e/η.

    With ``neighbour_divergence`` = ε̂' (the bound at the neighbouring datasets, where it may differ
    from ``divergence`` = ε̂ at D): (ε + ε̂ + ε̂', e^{max(ε̂, ε̂')}·δ), since
    π̂_D(S) <= e^{ε̂}(e^ε·π̃_{D'}(S) + δ) <= e^{ε̂ + ε + ε̂'}·π̂_{D'}(S) + e^{ε̂}·δ and symmetrically.
    """
    check_one_of(variant, "variant", ("corrected", "paper"))
    eh = check_in_interval(divergence, "divergence", 0.0, math.inf, closed="left")
    other = eh if neighbour_divergence is None else check_in_interval(
        neighbour_divergence, "neighbour_divergence", 0.0, math.inf, closed="left")
    delta = guarantee.delta
    if variant == "paper":
        if delta > 0:
            _paper_warning("the inexact-policy extension with delta > 0")
    elif delta > 0:
        delta = min(1.0, math.exp(max(eh, other)) * delta)
    return guarantee.with_parameters(guarantee.epsilon + eh + other, delta)


def rejection_sampling_guarantee(guarantee: Guarantee, failure_bound: float) -> Guarantee:
    """Guarantee of :meth:`EllipticalKLPolicy.sample_by_rejection` from that of one exact sample.

    The sampler outputs (1 − q_D)·π̃(·; D) + q_D·π0 with q_D <= q̄ = ``failure_bound`` on every dataset
    of the declared domain (a data-independent fallback when all proposals are rejected); an
    (ε, δ)-DP π̃ gives (ε + ln(1/(1 − q̄)), δ + q̄) (proof in the sampler's Privacy section).

    Examples
    --------
    >>> from dpbandits.privacy.guarantees import PureDP
    >>> g = rejection_sampling_guarantee(PureDP(epsilon=0.5, unit="one record", neighbouring="add/remove"), 1e-9)
    >>> round(g.epsilon, 9), g.delta
    (0.500000001, 1e-09)
    """
    q = check_in_interval(failure_bound, "failure_bound", 0.0, 1.0, closed="left")
    # ε' = ε + ln(1/(1 − q̄)), δ' = δ + q̄
    return guarantee.with_parameters(guarantee.epsilon - math.log1p(-q), min(1.0, guarantee.delta + q))
