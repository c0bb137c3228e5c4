"""The binary tree's arithmetic: its levels, node noise scale, decomposition, guarantee and error bound.

Shared by the streaming counters (:mod:`dpbandits.privacy.counters`, which re-exports every name
here) and their vectorised forms.
"""

from __future__ import annotations

import math

from dpbandits._core.validation import (
    check_epsilon,
    check_in_interval,
    check_int,
    check_one_of,
    check_sensitivity,
)
from dpbandits.privacy.guarantees import Neighbouring, PureDP

__all__ = [
    "REFERENCE",
    "binary_tree_error_bound",
    "binary_tree_guarantee",
    "binary_tree_node_scale",
    "decomposition_nodes",
    "tree_levels",
]

REFERENCE = "Chan, Shi & Song (2011), Algorithm 2 and Theorem 3.5 (Binary Mechanism)"


def tree_levels(horizon: int) -> int:
    """Number of tree levels L = ⌊log₂T⌋ + 1 for a horizon T >= 1.

    Every t <= T has at most L binary digits, so each stream element lies in at most L nodes.

    Examples
    --------
    >>> from dpbandits.privacy.counters import tree_levels
    >>> tree_levels(1), tree_levels(16), tree_levels(17)
    (1, 5, 5)
    """
    horizon = check_int(horizon, "horizon", minimum=1)
    return horizon.bit_length()  # ⌊log₂T⌋ + 1


def binary_tree_node_scale(horizon: int, epsilon: float, sensitivity: float = 1.0) -> float:
    """Laplace scale per node b = L·Δ/ε (0 when ε = ∞).

    Parameters
    ----------
    horizon : int
        T >= 1.
    epsilon : float
        ε > 0, or ``inf`` for an exact (non-private) counter.
    sensitivity : float, default 1.0
        Δ: the most one stream element may change between neighbouring streams.
    """
    levels = tree_levels(horizon)
    eps = check_epsilon(epsilon, allow_inf=True)
    delta_s = check_sensitivity(sensitivity)
    if math.isinf(eps):
        return 0.0
    return levels * delta_s / eps  # b = L·Δ/ε


def decomposition_nodes(t: int) -> list[int]:
    """End times of the nodes whose p-sums make up the release at time t (largest first).

    The node ending at time s has level = lowest set bit of s and covers (s − 2^level, s]. The list
    has ``popcount(t)`` entries: t, t & (t − 1), … down to the highest power of two in t.

    Examples
    --------
    >>> from dpbandits.privacy.counters import decomposition_nodes
    >>> decomposition_nodes(11)
    [11, 10, 8]
    """
    t = check_int(t, "t", minimum=1)
    nodes = []
    while t:
        nodes.append(t)
        t &= t - 1
    return nodes


def binary_tree_guarantee(epsilon: float, sensitivity: float = 1.0) -> PureDP:
    """The guarantee of a binary-tree counter: ε-DP for a change of one stream element by <= Δ.

    Parameters
    ----------
    epsilon : float
        ε > 0 (``inf`` gives the vacuous guarantee of an exact counter).
    sensitivity : float, default 1.0
        Δ, the largest change of one element between neighbouring streams.
    """
    eps = check_epsilon(epsilon, allow_inf=True)
    delta_s = check_sensitivity(sensitivity)
    unit = f"one stream element (change <= {delta_s:g})"
    if math.isinf(eps):
        return PureDP.infinite(
            unit=unit, neighbouring=Neighbouring.REPLACE_ONE, reference=REFERENCE,
            reason="epsilon = inf: the counter is exact (non-private)",
        )
    return PureDP(epsilon=eps, unit=unit, neighbouring=Neighbouring.REPLACE_ONE, reference=REFERENCE)


def binary_tree_error_bound(
    horizon: int,
    epsilon: float,
    beta: float,
    method: str = "css",
    sensitivity: float = 1.0,
) -> float:
    """High-probability bound B on the error of one release: Pr[|c_t − Σ_{s≤t} v_s| > B] <= β.

    The error at time t is a sum of popcount(t) <= L independent Laplace(b) variables with
    b = L·Δ/ε. The bound holds for each fixed t (union over t is the caller's job).

    Parameters
    ----------
    horizon : int
        T >= 1.
    epsilon : float
        ε > 0 of the counter (``inf`` gives 0).
    beta : float
        Failure probability β in (0, 1).
    method : {"css", "union"}, default "css"
        ``"css"``: Chan–Shi–Song Corollary 2.9,
        B = b·max{√L, √ln(2/β)}·√(8·ln(2/β))·(1 + 1e-9) (the factor keeps their strict inequality).
        ``"union"``: each |Lap(b)| <= b·ln(L/β) with probability 1 − β/L, so B = L·b·ln(L/β).
    sensitivity : float, default 1.0
        Δ.

    Returns
    -------
    float

    References
    ----------
    Chan, Shi & Song (2011), Corollary 2.9.

    Examples
    --------
    >>> from dpbandits.privacy.counters import binary_tree_error_bound
    >>> round(binary_tree_error_bound(1024, 1.0, 0.01, "union"), 3)
    847.371
    """
    levels = tree_levels(horizon)
    scale = binary_tree_node_scale(horizon, epsilon, sensitivity)
    beta = check_in_interval(beta, "beta", 0.0, 1.0, closed="neither")
    method = check_one_of(method, "method", ("css", "union"))
    if scale == 0.0:
        return 0.0
    if method == "union":
        return levels * scale * math.log(levels / beta)  # B = L·b·ln(L/β)
    log_term = math.log(2.0 / beta)
    # ν > max{√(Σ b_i²), b_max·√ln(2/β)} with Σ b_i² <= L·b²;  B = ν·√(8·ln(2/β))
    nu = scale * max(math.sqrt(levels), math.sqrt(log_term)) * (1.0 + 1e-9)
    return nu * math.sqrt(8.0 * log_term)
