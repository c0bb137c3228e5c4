"""Immutable privacy-guarantee values: what is promised, to which unit, under which neighbouring.

A guarantee is a value object: pure ε-DP (:class:`PureDP`) or approximate (ε, δ)-DP
(:class:`ApproxDP`), carrying the *unit* it protects (for example "one reward in the reward table"),
the neighbouring notion (:class:`Neighbouring`), the reference (paper and theorem), and whether it is
per-instance (data-dependent). A guarantee whose precondition fails is ``epsilon = inf`` with the
reason in ``reason``.

Conversions between neighbouring notions are the correct ones only:

* add/remove (ε, δ) ⇒ replace-one (2ε, (1 + e^ε)·δ) — a replacement is a removal then an addition;
* add/remove (ε, δ) ⇒ label-only (2ε, (1 + e^ε)·δ) — a label flip is a replacement;
* replace-one ⇒ label-only with the same (ε, δ);
* replace-one ⇒ add/remove is **false in general** (a mechanism releasing ``len(D)`` is (0, 0)
  replace-one DP and not add/remove DP for any finite ε); it is only available under the
  bounded-with-null-element model, where it is the identity.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from enum import StrEnum
from numbers import Real
from typing import Self

from dpbandits._core.errors import DPBanditsError, InvalidParameterError

__all__ = [
    "PER_INSTANCE_NOTE",
    "ApproxDP",
    "Guarantee",
    "Neighbouring",
    "NonPrivate",
    "PureDP",
    "UnsupportedConversionError",
    "add_remove_to_label",
    "add_remove_to_replace_one",
    "replace_one_to_add_remove",
    "replace_one_to_label",
]


class UnsupportedConversionError(DPBanditsError, NotImplementedError):
    """A conversion between neighbouring notions that does not hold in general."""


class Neighbouring(StrEnum):
    """Neighbouring relation between datasets under which a guarantee holds."""

    ADD_REMOVE = "add/remove"
    """Datasets differ by adding or removing one record."""
    REPLACE_ONE = "replace-one"
    """Datasets of the same size differ in one record (also called swap or bounded DP)."""
    LABEL_ONLY = "label-only"
    """Datasets differ in the label (reward, preference) of one record; features are public."""
    JOINT = "joint"
    """Joint DP: one user's (round's) data changes; the outputs to all *other* users are protected."""


PER_INSTANCE_NOTE = (
    "per-instance: holds for this dataset and its neighbours only, NOT a worst-case DP guarantee "
    "(publishing it leaks information about the data)"
)
"""Printed with every per-instance guarantee (``str(guarantee)``)."""


def _check_guarantee_epsilon(epsilon: float) -> float:
    if isinstance(epsilon, bool) or not isinstance(epsilon, Real):
        raise InvalidParameterError(f"epsilon must be a float >= 0 or inf; got {epsilon!r}")
    eps = float(epsilon)
    if math.isnan(eps) or eps < 0:
        raise InvalidParameterError(f"epsilon must be a float >= 0 or inf; got {eps!r}")
    return eps


@dataclass(frozen=True, kw_only=True)
class Guarantee:
    """Common fields of every guarantee (all keyword-only).

    Parameters
    ----------
    epsilon : float
        ε >= 0; ``inf`` means no guarantee (see ``reason``).
    delta : float, default 0
        δ in [0, 1]; 0 for pure DP.
    unit : str
        What is protected, in words ("one reward in the reward table").
    neighbouring : Neighbouring
        The neighbouring relation.
    reference : str, optional
        Paper and theorem that give the guarantee.
    per_instance : bool, default False
        True for data-dependent guarantees, which hold for the given dataset and its neighbours
        only, not for every pair of neighbouring datasets. The printed form then says so
        (:data:`PER_INSTANCE_NOTE`).
    reason : str, optional
        Why ``epsilon`` is infinite, or any caveat.
    domain : str, optional
        For a data-independent guarantee calibrated from declared public quantities: the domain
        over which it holds ("N(a) >= 5 for every arm, rewards in [0, 1]"), printed with it.
    """

    epsilon: float
    delta: float = 0.0
    unit: str
    neighbouring: Neighbouring
    reference: str = ""
    per_instance: bool = False
    reason: str = ""
    domain: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", _check_guarantee_epsilon(self.epsilon))
        delta = self.delta
        if isinstance(delta, bool) or not isinstance(delta, Real) or not (0.0 <= delta <= 1.0):
            raise InvalidParameterError(f"delta must be a float in [0, 1]; got {delta!r}")
        object.__setattr__(self, "delta", float(delta))
        if not isinstance(self.neighbouring, Neighbouring):
            try:
                object.__setattr__(self, "neighbouring", Neighbouring(self.neighbouring))
            except ValueError as exc:
                raise InvalidParameterError(
                    f"neighbouring must be one of {[n.value for n in Neighbouring]}; "
                    f"got {self.neighbouring!r}"
                ) from exc
        if not isinstance(self.unit, str) or not self.unit:
            raise InvalidParameterError(f"unit must be a non-empty string; got {self.unit!r}")

    @property
    def is_pure(self) -> bool:
        """Whether δ = 0."""
        return self.delta == 0.0

    @property
    def is_finite(self) -> bool:
        """Whether the guarantee says anything (ε < ∞ and δ < 1)."""
        return math.isfinite(self.epsilon) and self.delta < 1.0

    def to_dict(self) -> dict[str, object]:
        """Return a JSON-serialisable description."""
        return {
            "kind": type(self).__name__,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "unit": self.unit,
            "neighbouring": self.neighbouring.value,
            "reference": self.reference,
            "per_instance": self.per_instance,
            "reason": self.reason,
            "domain": self.domain,
            "scope": self.scope_note,
        }

    @property
    def scope_note(self) -> str:
        """Where the guarantee holds: the per-instance warning, the declared domain, or ""."""
        if self.per_instance:
            return PER_INSTANCE_NOTE
        return f"over the declared domain: {self.domain}" if self.domain else ""

    def with_parameters(
        self, epsilon: float, delta: float, neighbouring: Neighbouring | None = None
    ) -> Guarantee:
        """Return a guarantee with the same unit and reference and new (ε, δ) and relation.

        The result is :class:`PureDP` when ``delta == 0`` and :class:`ApproxDP` otherwise.
        """
        cls: type[Guarantee] = PureDP if delta == 0.0 else ApproxDP
        return cls(
            epsilon=epsilon,
            delta=delta,
            unit=self.unit,
            neighbouring=self.neighbouring if neighbouring is None else neighbouring,
            reference=self.reference,
            per_instance=self.per_instance,
            reason=self.reason,
            domain=self.domain,
        )

    def group(self, k: int) -> Guarantee:
        """Group privacy for ``k`` units: (kε, k·e^{(k−1)ε}·δ).

        Parameters
        ----------
        k : int
            Group size, ``k >= 1``.
        """
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise InvalidParameterError(f"k must be an int >= 1; got {k!r}")
        eps = k * self.epsilon
        # δ_k = k·e^{(k−1)ε}·δ, capped at 1
        delta = min(1.0, k * math.exp((k - 1) * self.epsilon) * self.delta) if self.delta else 0.0
        return replace(self.with_parameters(eps, delta), unit=f"{k} × ({self.unit})")

    def __str__(self) -> str:
        head = f"({self.epsilon:.6g}, {self.delta:.3g})-DP" if self.delta else f"{self.epsilon:.6g}-DP"
        extra = ", per-instance" if self.per_instance else ""
        note = f"; {self.scope_note}" if self.scope_note else ""
        return f"{head} [{self.neighbouring.value}{extra}] protecting {self.unit}{note}"


@dataclass(frozen=True, kw_only=True)
class PureDP(Guarantee):
    """Pure ε-differential privacy (δ = 0).

    Examples
    --------
    >>> from dpbandits.privacy.guarantees import PureDP, Neighbouring
    >>> g = PureDP(epsilon=1.0, unit="one reward", neighbouring=Neighbouring.REPLACE_ONE)
    >>> g.delta
    0.0
    """

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.delta != 0.0:
            raise InvalidParameterError(f"delta of a PureDP guarantee must be 0; got {self.delta!r}")

    @classmethod
    def infinite(
        cls, *, unit: str, neighbouring: Neighbouring, reason: str, reference: str = ""
    ) -> Self:
        """Return the vacuous guarantee ε = ∞, with the reason a precondition failed."""
        return cls(epsilon=math.inf, unit=unit, neighbouring=neighbouring, reference=reference,
                   reason=reason)

    def to_approx(self, delta: float = 0.0) -> ApproxDP:
        """Pure ε-DP implies (ε, δ)-DP for every δ >= 0."""
        return ApproxDP(
            epsilon=self.epsilon, delta=delta, unit=self.unit, neighbouring=self.neighbouring,
            reference=self.reference, per_instance=self.per_instance, reason=self.reason, domain=self.domain,
        )


@dataclass(frozen=True, kw_only=True)
class ApproxDP(Guarantee):
    """Approximate (ε, δ)-differential privacy.

    Examples
    --------
    >>> from dpbandits.privacy.guarantees import ApproxDP, Neighbouring
    >>> ApproxDP(epsilon=1.0, delta=1e-6, unit="one record", neighbouring="add/remove").delta
    1e-06
    """


@dataclass(frozen=True, kw_only=True)
class NonPrivate(PureDP):
    """The explicit statement that an algorithm gives no privacy guarantee (ε = ∞).

    A non-private comparator still names the unit a private algorithm of its family protects, so
    that its ``privacy`` reads beside theirs; ``epsilon`` is always ``inf`` and ``is_finite`` False.

    Parameters
    ----------
    unit : str
        The unit a private algorithm of the family protects ("one preference label").
    reason : str, default "non-private algorithm"
        Why there is no guarantee.
    neighbouring : Neighbouring, default replace-one

    Examples
    --------
    >>> from dpbandits.privacy.guarantees import NonPrivate
    >>> print(NonPrivate(unit="one preference label", reason="RUCB stores every raw outcome"))
    non-private (no guarantee) for one preference label: RUCB stores every raw outcome
    """

    epsilon: float = math.inf
    neighbouring: Neighbouring = Neighbouring.REPLACE_ONE
    reason: str = "non-private algorithm"

    def __post_init__(self) -> None:
        super().__post_init__()
        if not math.isinf(self.epsilon):
            raise InvalidParameterError(f"epsilon of a NonPrivate guarantee must be inf; got {self.epsilon!r}")

    def __str__(self) -> str:
        return f"non-private (no guarantee) for {self.unit}: {self.reason}"


def add_remove_to_replace_one(guarantee: Guarantee) -> Guarantee:
    """Convert an add/remove guarantee into a replace-one guarantee: (2ε, (1 + e^ε)·δ).

    A replacement is a removal followed by an addition (Proposition 1, first half, of the KL paper).

    Raises
    ------
    InvalidParameterError
        If ``guarantee`` is not an add/remove guarantee.

    Examples
    --------
    >>> from dpbandits.privacy.guarantees import ApproxDP, Neighbouring, add_remove_to_replace_one
    >>> g = add_remove_to_replace_one(
    ...     ApproxDP(epsilon=1.0, delta=1e-5, unit="one record", neighbouring=Neighbouring.ADD_REMOVE))
    >>> round(g.epsilon, 6), round(g.delta, 9)
    (2.0, 3.7183e-05)
    """
    return _from_add_remove(guarantee, Neighbouring.REPLACE_ONE)


def add_remove_to_label(guarantee: Guarantee) -> Guarantee:
    """Convert an add/remove guarantee into a label-only guarantee: (2ε, (1 + e^ε)·δ).

    A label flip is a replacement of one record by the same features with another label.
    """
    return _from_add_remove(guarantee, Neighbouring.LABEL_ONLY)


def _from_add_remove(guarantee: Guarantee, target: Neighbouring) -> Guarantee:
    if guarantee.neighbouring is not Neighbouring.ADD_REMOVE:
        raise InvalidParameterError(
            f"guarantee.neighbouring must be {Neighbouring.ADD_REMOVE.value!r}; "
            f"got {guarantee.neighbouring.value!r}"
        )
    eps = 2.0 * guarantee.epsilon
    # δ' = (1 + e^ε)·δ, capped at 1 (and 0 stays 0 even when ε = ∞)
    delta = min(1.0, (1.0 + math.exp(guarantee.epsilon)) * guarantee.delta) if guarantee.delta else 0.0
    return guarantee.with_parameters(eps, delta, target)


def replace_one_to_label(guarantee: Guarantee) -> Guarantee:
    """A replace-one guarantee is a label-only guarantee with the same (ε, δ)."""
    if guarantee.neighbouring is not Neighbouring.REPLACE_ONE:
        raise InvalidParameterError(
            f"guarantee.neighbouring must be {Neighbouring.REPLACE_ONE.value!r}; "
            f"got {guarantee.neighbouring.value!r}"
        )
    return guarantee.with_parameters(guarantee.epsilon, guarantee.delta, Neighbouring.LABEL_ONLY)


def replace_one_to_add_remove(guarantee: Guarantee, *, bounded_with_null: bool = False) -> Guarantee:
    """Convert replace-one to add/remove — only under the bounded-with-null-element model.

    The KL paper's Proposition 1 claims replace-one (ε', δ') ⇒ add/remove (ε, e^ε·δ). That is false
    in general: releasing ``len(D)`` is (0, 0) replace-one DP and not add/remove DP for any finite ε.
    When datasets are modelled with a null element ⊥ so
    that adding or removing a record *is* a replacement with ⊥, the guarantee carries over unchanged.

    Parameters
    ----------
    guarantee : Guarantee
        A replace-one guarantee.
    bounded_with_null : bool, default False
        Assert the bounded-with-null-element model. Without it the conversion is refused.

    Raises
    ------
    UnsupportedConversionError
        Unless ``bounded_with_null=True``.
    """
    if guarantee.neighbouring is not Neighbouring.REPLACE_ONE:
        raise InvalidParameterError(
            f"guarantee.neighbouring must be {Neighbouring.REPLACE_ONE.value!r}; "
            f"got {guarantee.neighbouring.value!r}"
        )
    if not bounded_with_null:
        raise UnsupportedConversionError(
            "replace-one DP does not imply add/remove DP in general (a mechanism releasing len(D) "
            "is (0, 0) replace-one DP and not add/remove DP for any finite epsilon; the KL paper's "
            "Proposition 1, second half, is wrong). Pass bounded_with_null=True only if add and "
            "remove are modelled as replacements with a null element; the map is then the identity."
        )
    return guarantee.with_parameters(guarantee.epsilon, guarantee.delta, Neighbouring.ADD_REMOVE)
