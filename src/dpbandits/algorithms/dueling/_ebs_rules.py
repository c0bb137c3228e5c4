"""What DP-EBS-Elimination's agent and its vectorised simulation share: constants, bounds, guarantee, opponents.

Every public name here is public from :mod:`dpbandits.algorithms.dueling.dp_ebs_elimination`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpbandits._core.errors import InvalidParameterError
from dpbandits._core.typing import FloatArray, IntArray
from dpbandits._core.validation import (
    MAX_EXACT_COUNT,
    check_epsilon,
    check_in_interval,
    check_int,
    check_one_of,
)
from dpbandits.algorithms.dueling._common import (
    UNIT,
)
from dpbandits.privacy.counters import (
    binary_tree_error_bound,
    binary_tree_node_scale,
    tree_levels,
)
from dpbandits.privacy.guarantees import Neighbouring, NonPrivate, PureDP

__all__ = [
    "REFERENCE",
    "STATS_REMOVAL",
    "EBSConstants",
    "dp_ebs_guarantee",
    "ebs_confidence_bounds",
    "ebs_constants",
    "ebs_widths",
]

REFERENCE = (
    "Saha & Asi (2024), DP-Dueling, Lemma 2 and Theorem 1 (DP-EBS-Elimination); "
    "reconstruction, paper errata DUEL-3/4"
)
_BUDGET_SPLIT = {"quarter": 4.0, "half": 2.0, "whole": 1.0}
STATS_REMOVAL = ("subtract", "restart")


@dataclass(frozen=True)
class EBSConstants:
    """The constants of DP-EBS-Elimination.

    Attributes
    ----------
    n_arms, horizon : int
        K and T.
    epsilon : float
        ε of the whole algorithm (``inf`` for the non-private twin).
    counter_epsilon : float
        ε_c per counter.
    failure_probability : float
        δ, the failure probability of the good event (not a DP parameter).
    levels : int
        L_T.
    confidence_log : float
        λ.
    beta : float
        β, the per-release failure probability of the tree bound.
    tree_bound : float
        B (0 when ε = ∞).
    counter_scale : float
        Laplace scale per tree node, b = L_T/ε_c (0 when ε = ∞).
    """

    n_arms: int
    horizon: int
    epsilon: float
    counter_epsilon: float
    failure_probability: float
    levels: int
    confidence_log: float
    beta: float
    tree_bound: float
    counter_scale: float


def ebs_constants(
    n_arms: int,
    horizon: int,
    epsilon: float,
    failure_probability: float | None = None,
    *,
    counter_epsilon: str = "quarter",
    tree_bound: str = "css",
    union_bound: str = "paper",
    stats_removal: str = "subtract",
) -> EBSConstants:
    """Compute the constants of errata DUEL-6 (and of the restart variant).

    Parameters
    ----------
    n_arms : int
        K >= 2.
    horizon : int
        T >= 1.
    epsilon : float
        ε > 0 or ``inf``.
    failure_probability : float, optional
        δ in (0, 1); default 1/T (the paper's choice in the proof of Theorem 1), or ½ when T = 1.
    counter_epsilon : {"quarter", "half", "whole"}
        ε_c = ε/4 (the paper's Lemma 2 proof; default) or ε/2 (its main text; valid because a user
        touches one counter, at most twice, in this bookkeeping), or ε (only with
        ``stats_removal="restart"``, where a user enters one counter once).
    tree_bound : {"css", "union"}
        Which bound B_tree of :func:`dpbandits.privacy.counters.binary_tree_error_bound`.
    union_bound : {"paper", "rigorous"}
        λ = ln(4K²T/δ) or ln(4K·2^K·T/δ) (errata DUEL-8).
    stats_removal : {"subtract", "restart"}
        How eliminated opponents' statistics leave the survivors' counters: subtracted through the
        counters' streams (the paper, default) or by restarting every counter at each elimination
        (ablation: the tree bound then holds per (arm, phase), β = δ/(2K²T)).

    Raises
    ------
    InvalidParameterError
        If an option is unknown, or ``counter_epsilon="whole"`` is asked with subtraction (a label
        then changes two elements of its counter: ε_c = ε would give 2ε).
    """
    k = check_int(n_arms, "n_arms", minimum=2)
    t = check_int(horizon, "horizon", minimum=1, maximum=MAX_EXACT_COUNT)
    eps = check_epsilon(epsilon, allow_inf=True)
    split = _BUDGET_SPLIT[check_one_of(counter_epsilon, "counter_epsilon", tuple(_BUDGET_SPLIT))]
    removal = check_one_of(stats_removal, "stats_removal", STATS_REMOVAL)
    if counter_epsilon == "whole" and removal != "restart":
        raise InvalidParameterError(
            "counter_epsilon must be 'quarter' or 'half' with stats_removal='subtract' (a label changes two "
            f"elements of its counter, so ε_c = ε would give 2ε); got {counter_epsilon!r}"
        )
    check_one_of(tree_bound, "tree_bound", ("css", "union"))
    check_one_of(union_bound, "union_bound", ("paper", "rigorous"))
    if failure_probability is None:
        delta = 1.0 / t if t > 1 else 0.5
    else:
        delta = check_in_interval(failure_probability, "failure_probability", 0.0, 1.0, closed="neither")
    eps_c = eps / split  # ε_c = ε/4, ε/2 or ε
    if union_bound == "paper":
        lam = math.log(4 * k * k * t / delta)  # λ = ln(4K²T/δ)
    else:
        lam = math.log(4 * k * t / delta) + k * math.log(2)  # λ = ln(4K·2^K·T/δ)
    # β = δ/(2KT); with restarts the union also runs over the <= K phases: β = δ/(2K²T)
    beta = delta / (2 * k * t) if removal == "subtract" else delta / (2 * k * k * t)
    bound = binary_tree_error_bound(t, eps_c, beta, tree_bound)
    return EBSConstants(
        n_arms=k,
        horizon=t,
        epsilon=eps,
        counter_epsilon=eps_c,
        failure_probability=delta,
        levels=tree_levels(t),
        confidence_log=lam,
        beta=beta,
        tree_bound=bound,
        counter_scale=binary_tree_node_scale(t, eps_c),
    )


def ebs_widths(counts: FloatArray | IntArray, constants: EBSConstants, conf_scale: float = 1.0) -> FloatArray:
    """Confidence widths conf_scale·(√(λ/(2n)) + B/n) elementwise (inf/nan where n = 0)."""
    n = np.asarray(counts, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        # wid(n) = √(λ/(2n)) + B/n
        return np.asarray(conf_scale * (np.sqrt(constants.confidence_log / (2.0 * n)) + constants.tree_bound / n))


def _scalar_width(count: int, constants: EBSConstants, conf_scale: float) -> float:
    """:func:`ebs_widths` of one count n >= 1, in Python floats (the same correctly rounded operations)."""
    return conf_scale * (math.sqrt(constants.confidence_log / (2.0 * count)) + constants.tree_bound / count)


def ebs_confidence_bounds(
    released: FloatArray | IntArray,
    counts: FloatArray | IntArray,
    constants: EBSConstants,
    conf_scale: float = 1.0,
    *,
    widths: FloatArray | None = None,
    flip_probability: float = 0.0,
) -> tuple[FloatArray, FloatArray]:
    """UCB and LCB of the noisy EBS b̃ = w̃/n: b̃ ± conf_scale·(√(λ/(2n)) + B/n); ±∞ where n = 0.

    Elementwise on arrays of any (equal) shape, so the ask/tell and vectorised forms compute the
    same floating-point numbers. ``widths`` may pass precomputed :func:`ebs_widths` of ``counts``
    (for example looked up in a table computed by the same function: the numbers are the same).
    ``flip_probability`` q > 0 debiases counts of randomised-response reports: b̂ = (w̃/n − q)/(1 − 2q).
    """
    n = np.asarray(counts, dtype=np.float64)
    width = ebs_widths(n, constants, conf_scale) if widths is None else widths
    with np.errstate(divide="ignore", invalid="ignore"):
        estimate = released / n  # b̃_i = w̃_i / n_i
        if flip_probability:
            estimate = (estimate - flip_probability) / (1.0 - 2.0 * flip_probability)
        if np.all(n > 0):
            return estimate + width, estimate - width
        upper = np.where(n > 0, estimate + width, np.inf)
        lower = np.where(n > 0, estimate - width, -np.inf)
    return upper, lower


def dp_ebs_guarantee(epsilon: float, counter_epsilon: str = "quarter", stats_removal: str = "subtract") -> PureDP:
    """The guarantee of DP-EBS-Elimination.

    With subtraction (the paper), each user's label enters one counter (that of its left arm), at
    most twice (added at its round, subtracted when its opponent is eliminated), each time changing
    one stream element by <= 1, so that counter's releases are 2ε_c-DP (group privacy); the paper
    counts two counters, giving 4ε_c. With ε_c = ε/4 the paper's accounting gives ε (our tight
    accounting ε/2); with ε_c = ε/2 the tight accounting gives ε. With restarts, each label
    enters one counter of one phase, once: every counter's releases are ε_c-DP and the counters of
    all arms and phases hold disjoint labels (parallel composition), so ε_c <= ε gives ε. Everything
    else the algorithm outputs is post-processing of the counter releases and of data-independent coins.

    Privacy
    -------
    Returns the pure ε-DP guarantee (central model) for one preference label; ``inf`` gives the
    vacuous guarantee of the non-private twin.

    References
    ----------
    Saha & Asi (2024), Lemma 2 (privacy of Algorithm 1); Chan, Shi & Song (2011), Theorem 3.5
    (binary mechanism).
    """
    eps = check_epsilon(epsilon, allow_inf=True)
    check_one_of(counter_epsilon, "counter_epsilon", tuple(_BUDGET_SPLIT))
    removal = check_one_of(stats_removal, "stats_removal", STATS_REMOVAL)
    if math.isinf(eps):
        return NonPrivate(
            unit=UNIT, neighbouring=Neighbouring.LABEL_ONLY, reference=REFERENCE,
            reason="epsilon = inf: the non-private twin releases exact counts",
        )
    if removal == "restart":
        reason = f"restart: each label enters one counter of one phase once (parallel composition), ε_c = ε/{_BUDGET_SPLIT[counter_epsilon]:g}"
    elif counter_epsilon == "quarter":
        reason = "paper accounting: 2 counters × group of 2 × ε/4 (tight accounting: ε/2)"
    else:
        reason = "tight accounting: 1 counter × group of 2 × ε/2"
    return PureDP(epsilon=eps, unit=UNIT, neighbouring=Neighbouring.LABEL_ONLY, reference=REFERENCE,
                  reason=reason)


def _check_options(opponent: str, conf_scale: float, check_every: int = 1) -> tuple[str, float, int]:
    opp = check_one_of(opponent, "opponent", ("with_self", "without_self"))
    scale = check_in_interval(conf_scale, "conf_scale", 0.0, math.inf, closed="left")
    return opp, scale, check_int(check_every, "check_every", minimum=1)


def _opponents(uniforms: FloatArray, active: IntArray, left_index: IntArray, opponent: str) -> IntArray:
    """y_t ~ Unif(A) (with self) or Unif(A without x_t) from the round's uniform coin."""
    m = active.size
    if opponent == "with_self":
        return active[np.minimum((uniforms * m).astype(np.int64), m - 1)]
    j = np.minimum((uniforms * (m - 1)).astype(np.int64), m - 2)
    j = j + (j >= left_index)  # skip x_t's position
    return active[j]
