"""Floating-point attack on released values: do the low-order bits tell neighbours apart.

Textbook samplers compute ``value + noise`` in floating point. The set of doubles that such a sum can
produce depends on ``value``, so some outputs are possible under one dataset and impossible under
its neighbour: an infinite privacy loss that no ε accounts for (Mironov 2012). This auditor looks for
exactly that signature. It sorts each released double into a *cell* — its binary exponent and the
number of trailing zero bits of its mantissa (capped) — and reports the cells that hold many outputs
of one neighbour and none of the other.

A cell with the same probability p under both neighbours and n draws of each holds >= ``min_count``
outputs of one side and 0 of the other with probability at most max_λ P(Poisson(λ) >= m)·e^{−λ},
below 1e-8 for m = 20: a reported cell is a real hole in the output distribution, not sampling noise.
Integer releases (exact integer noise on integer statistics) are audited as values: the cell of an
integer is the integer itself.

References
----------
I. Mironov, "On significance of the least significant bits for differential privacy", CCS 2012.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from dpbandits._core.errors import InvalidParameterError
from dpbandits._core.validation import check_int

__all__ = ["FloatAttackReport", "float_attack", "float_cells"]

_MANTISSA_BITS = 52
_MAX_TRAILING_ZEROS = 8


def float_cells(values: ArrayLike) -> list[tuple[int, int]]:
    """The cell (binary exponent, trailing zero bits of the mantissa, capped at 8) of each double.

    Integer arrays map each value to the cell (value, -1).
    """
    arr = np.asarray(values)
    if arr.dtype.kind in "iu":
        flat_int = arr.reshape(-1).astype(np.int64)
        return list(zip(flat_int.tolist(), [-1] * flat_int.size, strict=True))
    flat = np.ascontiguousarray(arr, dtype=np.float64).reshape(-1)
    bits = flat.view(np.uint64)
    exponent = ((bits >> np.uint64(_MANTISSA_BITS)) & np.uint64(0x7FF)).astype(np.int64)
    mantissa = bits & np.uint64((1 << _MANTISSA_BITS) - 1)
    lowest_bit = mantissa & (~mantissa + np.uint64(1))  # 2^(trailing zeros), 0 for a zero mantissa
    with np.errstate(divide="ignore"):
        trailing = np.where(mantissa == 0, _MANTISSA_BITS, np.log2(lowest_bit.astype(np.float64)))
    capped = np.minimum(trailing, _MAX_TRAILING_ZEROS).astype(np.int64)
    return list(zip(exponent.tolist(), capped.tolist(), strict=True))


@dataclass(frozen=True)
class FloatAttackReport:
    """Outcome of :func:`float_attack`.

    Attributes
    ----------
    distinguishing_cells : list of (cell, count under D, count under D')
        Cells with >= ``min_count`` outputs of one neighbour and none of the other.
    n_draws : int
        Draws per neighbour.
    """

    distinguishing_cells: list[tuple[tuple[int, int], int, int]]
    n_draws: int

    @property
    def distinguished(self) -> bool:
        """Whether some cell separates the neighbours (an infinite empirical privacy loss)."""
        return bool(self.distinguishing_cells)

    def __str__(self) -> str:
        if not self.distinguished:
            return f"no distinguishing cell in {self.n_draws} draws per neighbour"
        cell, a, b = max(self.distinguishing_cells, key=lambda row: max(row[1], row[2]))
        return (f"{len(self.distinguishing_cells)} distinguishing cells in {self.n_draws} draws per neighbour; "
                f"largest {cell}: {a} vs {b}")


def float_attack(
    releases_d: ArrayLike, releases_d_prime: ArrayLike, *, min_count: int = 20
) -> FloatAttackReport:
    """Compare the cells of releases under two neighbouring datasets.

    Parameters
    ----------
    releases_d, releases_d_prime : array_like
        Released values under D and D' (same number of draws; any shape).
    min_count : int, default 20
        Outputs a cell must hold on one side (with none on the other) to count as distinguishing.

    Returns
    -------
    FloatAttackReport

    Examples
    --------
    >>> import numpy as np
    >>> from dpbandits.audit.floating_point import float_attack
    >>> noise = np.random.default_rng(0).laplace(size=20_000)
    >>> float_attack(0.0 + noise, 1.0 + noise).distinguished  # textbook float Laplace leaks
    True
    """
    a, b = np.asarray(releases_d), np.asarray(releases_d_prime)
    if a.size != b.size or a.size == 0:
        raise InvalidParameterError(
            f"releases_d and releases_d_prime must hold the same positive number of draws; got {a.size} and {b.size}"
        )
    threshold = check_int(min_count, "min_count", minimum=1)
    count_a, count_b = Counter(float_cells(a)), Counter(float_cells(b))
    cells = [
        (cell, count_a[cell], count_b[cell])
        for cell in sorted(set(count_a) | set(count_b))
        if (count_a[cell] == 0) != (count_b[cell] == 0) and max(count_a[cell], count_b[cell]) >= threshold
    ]
    return FloatAttackReport(cells, int(a.size))

