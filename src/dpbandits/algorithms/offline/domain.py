"""Declared public domains of the offline policies: refusing data outside them, and budgets without them.

A policy's ``scope="domain"`` guarantee is an ordinary (data-independent) DP guarantee over a public
domain of datasets declared when the policy is built (a per-arm count floor, a floor on λ_min(Σ_D), a
bound on n). Two rules keep every budget decision independent of the data:

* data outside the declared domain is refused at ``fit`` with a message that says only *which
  declared condition* fails, never the statistic that failed it (the refusal is one bit about the
  data; the message adds nothing to it);
* spending on an :class:`~dpbandits.privacy.accounting.Accountant` needs a declared domain: without
  one, ``sample(accountant=...)`` is refused from the policy's public parameters alone, before any
  count or statistic is read (:func:`require_declared_domain`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dpbandits._core.errors import InvalidParameterError, PerInstanceSpendError
from dpbandits._core.typing import FloatArray, IntArray

__all__ = ["refuse_outside_count_floor", "refuse_outside_domain", "require_declared_domain"]


def refuse_outside_domain(condition: str) -> InvalidParameterError:
    """The error of data outside a declared domain; ``condition`` names the declared condition only."""
    return InvalidParameterError(
        f"data must lie in the declared domain {condition}; this dataset does not (refused before any release; "
        "the statistic that fails is not reported)"
    )


def refuse_outside_count_floor(counts: IntArray, min_count: int, log_reference: FloatArray | None = None) -> None:
    """Refuse statistics with N(a) < m for some arm (with π0(a) > 0 when ``log_reference`` is given).

    Raises
    ------
    InvalidParameterError
        Naming the declared floor m, never the arm or its count.
    """
    active = np.ones(counts.shape, dtype=bool) if log_reference is None else np.isfinite(log_reference)
    if np.any(active & (counts < min_count)):
        which = "every arm" if log_reference is None else "every arm with pi0(a) > 0"
        raise refuse_outside_domain(f"N(a) >= min_count = {min_count} for {which}")


def require_declared_domain(policy: str, missing: Sequence[str], declare: str) -> None:
    """Refuse ``accountant=`` on a policy whose domain is not declared (public parameters only).

    Parameters
    ----------
    policy : str
        The policy's class name.
    missing : sequence of str
        The public domain parameters that are ``None`` (nothing to refuse when empty).
    declare : str
        How to declare them, e.g. ``"KLMABPolicy(..., min_count=m)"``.

    Raises
    ------
    PerInstanceSpendError
        One line saying what to declare.
    """
    if missing:
        raise PerInstanceSpendError(
            f"accountant= needs {policy}'s data-independent guarantee over a declared public domain "
            f"(its per-instance guarantee depends on the data); declare {' and '.join(missing)} when the "
            f"policy is built: {declare}"
        )
