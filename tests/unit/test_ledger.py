"""The typed, atomic privacy ledger (issue 23): units and relations, per-instance refusals, conversions,
forks, threads, and pure events at δ = 0 under every method."""

from __future__ import annotations

import copy
import math
import pickle
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ledgertools import hammer

from dpbandits._core.errors import (
    ForkRefusedError,
    InvalidParameterError,
    LedgerUnitError,
    PerInstanceSpendError,
    PrivacyBudgetExceededError,
)
from dpbandits.privacy.accounting import (
    CONTINUATION_WINDOW,
    Accountant,
    ApproxEvent,
    ComposedEvent,
    GaussianEvent,
    GroupPrivacy,
    LaplaceEvent,
    NeighbouringConversion,
    PureEvent,
    spend,
)
from dpbandits.privacy.guarantees import (
    ApproxDP,
    Neighbouring,
    PureDP,
    UnsupportedConversionError,
    add_remove_to_replace_one,
)

REWARD = "one reward"
USER = "one user"


def _pure(epsilon: float, unit: str = REWARD, relation: str = "replace-one", **kw: object) -> PureDP:
    return PureDP(epsilon=epsilon, unit=unit, neighbouring=relation, **kw)  # type: ignore[arg-type]


# -- defect 5: pure events compose exactly at δ = 0 under every method -----------------------------


@pytest.mark.parametrize("method", ["basic", "pld", "rdp"])
def test_pure_events_compose_exactly_at_delta_zero_with_every_method(method: str) -> None:
    acc = Accountant(epsilon_budget=1.0, method=method)  # default delta_budget = 0
    for _ in range(10):
        acc.spend(LaplaceEvent(scale=10.0))  # ε = 0.1 each
    assert acc.spent().epsilon == 1.0 and acc.remaining().epsilon == 0.0
    with pytest.raises(PrivacyBudgetExceededError, match="nothing was spent"):
        acc.spend(PureEvent(1e-9))
    assert len(acc.entries()) == 10


def test_pure_ledger_never_reports_more_than_the_sum_at_positive_delta() -> None:
    acc = Accountant(method="rdp", delta_budget=1e-6)
    acc.spend(LaplaceEvent(scale=2.0), count=3)
    assert acc.spent().epsilon == 1.5  # RDP's own bound is larger here; the exact sum is kept
    mixed = Accountant(method="basic")
    mixed.spend(GaussianEvent(sigma=2.0))
    assert math.isinf(mixed.spent().epsilon)  # a Gaussian release has no finite ε at δ = 0


@settings(max_examples=60, deadline=None, derandomize=True, database=None)
@given(st.lists(st.sampled_from([0.05, 0.1, 0.125, 0.2, 0.25, 0.3, 0.7]), max_size=25),
       st.sampled_from([0.5, 1.0, 1.7]), st.sampled_from(["basic", "pld", "rdp"]))
def test_the_refusal_point_is_the_exact_sum(spends: list[float], budget: float, method: str) -> None:
    acc = Accountant(epsilon_budget=budget, method=method)
    accepted: list[float] = []
    for index, epsilon in enumerate(spends):
        event = LaplaceEvent(scale=1.0 / epsilon) if index % 2 else PureEvent(epsilon)
        if math.fsum([*accepted, event.epsilon]) <= budget:
            acc.spend(event)
            accepted.append(event.epsilon)
        else:
            with pytest.raises(PrivacyBudgetExceededError):
                acc.spend(event)
    assert len(acc.entries()) == len(accepted)
    assert acc.spent().epsilon == math.fsum(accepted)


# -- defect 4: units and relations are never mixed silently ----------------------------------------


def test_units_and_relations_of_algorithms_are_not_mixed() -> None:
    from dpbandits.algorithms.bai.dp_bai import DPBAI
    from dpbandits.algorithms.offline import KLMABPolicy

    kl = KLMABPolicy(n_arms=3, eta=0.5, beta0=0.1).fit([0] * 40 + [1] * 30 + [2] * 30, [1, 0] * 50)
    bai = DPBAI(np.eye(3), 30, 1.0)
    acc = Accountant()
    acc.spend(kl.privacy, allow_per_instance=True)
    with pytest.raises(LedgerUnitError, match=r"this spend protects .* but the ledger protects"):
        acc.spend(bai.privacy)
    assert len(acc.entries()) == 1 and acc.entries()[0].scope == "per-instance"
    acc.spend(LaplaceEvent(scale=1.0))  # a bare event counts for the ledger's own unit and relation
    assert acc.entries()[1].unit == kl.privacy.unit and acc.entries()[1].neighbouring is kl.privacy.neighbouring


def test_unit_and_relation_fixed_by_constructor_or_first_entry() -> None:
    acc = Accountant(unit=USER, neighbouring="add/remove")
    with pytest.raises(LedgerUnitError, match=r"'one reward'.*'one user'"):
        acc.spend(_pure(0.1, REWARD, "add/remove"))
    with pytest.raises(LedgerUnitError, match=r"replace-one.*add/remove"):
        acc.spend(_pure(0.1, USER, "replace-one"))
    with pytest.raises(LedgerUnitError):
        acc.spend(LaplaceEvent(1.0), unit=REWARD)
    assert acc.entries() == ()
    free = Accountant()
    free.spend(PureEvent(0.1))
    assert free.unit is None and free.entries()[0].unit is None
    free.spend(_pure(0.1))
    assert (free.unit, free.neighbouring) == (REWARD, Neighbouring.REPLACE_ONE)
    with pytest.raises(LedgerUnitError):
        free.spend(_pure(0.1, USER))


def test_a_guarantee_keeps_its_own_unit() -> None:
    with pytest.raises(InvalidParameterError, match="names its own unit"):
        Accountant().spend(_pure(0.1), unit=USER)


# -- conversions -------------------------------------------------------------------------------------


def test_group_privacy_conversion() -> None:
    acc = Accountant(epsilon_budget=10.0, delta_budget=1e-3, unit=USER, neighbouring="replace-one")
    acc.spend(_pure(0.5), conversion=GroupPrivacy(factor=3))
    acc.spend(LaplaceEvent(scale=2.0, sensitivity=1.0), unit=REWARD, conversion=GroupPrivacy(3))
    acc.spend(ApproxDP(epsilon=0.1, delta=1e-6, unit=REWARD, neighbouring="replace-one"), conversion=GroupPrivacy(2))
    acc.spend(GaussianEvent(sigma=4.0), unit=REWARD, conversion=GroupPrivacy(2))
    first, laplace, approx, gauss = acc.entries()
    assert first.event == PureEvent(1.5) and first.unit == USER and "group privacy (factor 3)" in first.conversion
    assert laplace.event == LaplaceEvent(2.0, 3.0)
    assert approx.event == ApproxEvent(0.2, 2 * math.exp(0.1) * 1e-6)  # (kε, k·e^{(k−1)ε}·δ)
    assert gauss.event == GaussianEvent(4.0, 2.0)
    with pytest.raises(InvalidParameterError, match="factor"):
        GroupPrivacy(0)


def test_neighbouring_conversions_are_the_correct_ones() -> None:
    acc = Accountant(neighbouring="replace-one", unit=REWARD, delta_budget=1e-3)
    add_remove = ApproxDP(epsilon=0.3, delta=1e-6, unit=REWARD, neighbouring="add/remove")
    with pytest.raises(LedgerUnitError):
        acc.spend(add_remove)
    to_replace = NeighbouringConversion("add/remove", "replace-one")
    acc.spend(add_remove, conversion=to_replace)
    expected = add_remove_to_replace_one(add_remove)
    assert acc.entries()[0].event == ApproxEvent(expected.epsilon, expected.delta)
    acc.spend(ComposedEvent((LaplaceEvent(1.0), GaussianEvent(3.0)), 2), neighbouring="add/remove", conversion=to_replace)
    assert acc.entries()[1].event == ComposedEvent((LaplaceEvent(1.0, 2.0), GaussianEvent(3.0, 2.0)), 2)
    with pytest.raises(UnsupportedConversionError, match="replace-one DP does not imply add/remove"):
        NeighbouringConversion("replace-one", "add/remove")
    with pytest.raises(UnsupportedConversionError):
        NeighbouringConversion("label-only", "replace-one")
    with pytest.raises(UnsupportedConversionError):
        NeighbouringConversion("joint", "add/remove")
    null = NeighbouringConversion("replace-one", "add/remove", bounded_with_null=True)
    assert null.apply(PureEvent(0.4)) == PureEvent(0.4)
    with pytest.raises(InvalidParameterError, match="conversion is from add/remove"):
        acc.spend(_pure(0.1), conversion=to_replace)
    with pytest.raises(InvalidParameterError, match="conversion must be"):
        acc.spend(_pure(0.1), conversion="group")


# -- defect 1 (the ledger's half): per-instance guarantees are refused by default --------------------


def test_per_instance_guarantees_are_refused_whatever_their_epsilon() -> None:
    acc = Accountant(epsilon_budget=1.7)
    for epsilon in (0.8063, 0.8963, math.inf):  # the same refusal for every dataset, even a vacuous one
        with pytest.raises(PerInstanceSpendError, match="per-instance guarantee"):
            acc.spend(_pure(epsilon, per_instance=True))
        with pytest.raises(PerInstanceSpendError):
            spend(acc, _pure(epsilon, per_instance=True), label="X.sample")
    with pytest.raises(PerInstanceSpendError):
        acc.spend(PureEvent(0.1), scope="per-instance")
    assert acc.entries() == ()
    spend(None, _pure(0.5, per_instance=True))  # no accountant: nothing recorded, nothing checked
    acc.spend(_pure(0.5, per_instance=True), allow_per_instance=True)
    assert acc.entries()[0].scope == "per-instance" and acc.guarantee(0.0).per_instance


def test_domain_guarantee_is_spent_as_domain_scope() -> None:
    acc = Accountant()
    acc.spend(_pure(0.5, domain="N(a) >= 5"), label="KLMABPolicy.sample")
    (entry,) = acc.entries()
    assert entry.scope == "domain" and entry.label == "KLMABPolicy.sample" and entry.event == PureEvent(0.5)


# -- defect 2: check-and-record is atomic --------------------------------------------------------------


def test_threads_sharing_an_accountant_never_overspend() -> None:
    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible: the old check-then-append raced
    try:
        for _trial in range(50):
            acc = Accountant(epsilon_budget=1.0)
            accepted = hammer(acc, n_threads=8, epsilon=0.1, attempts=3)
            assert accepted == math.floor(1.0 / 0.1) == len(acc.entries())
            assert acc.spent().epsilon == 1.0
    finally:
        sys.setswitchinterval(switch)


def test_can_spend_is_advisory_and_refusals_name_the_label() -> None:
    acc = Accountant(epsilon_budget=1.0)
    assert acc.can_spend(PureEvent(1.0)) and not acc.can_spend(PureEvent(1.5))
    acc.spend(PureEvent(0.75), label="first")
    with pytest.raises(PrivacyBudgetExceededError, match=r"^second: spending"):
        acc.spend(PureEvent(0.5), label="second")
    with pytest.raises(PerInstanceSpendError):
        acc.can_spend(_pure(0.1, per_instance=True))


def test_an_accountant_cannot_be_copied() -> None:
    acc = Accountant(epsilon_budget=1.0)
    for duplicate in (copy.copy, copy.deepcopy, pickle.dumps):
        with pytest.raises(InvalidParameterError, match="cannot be copied or pickled"):
            duplicate(acc)


# -- forks --------------------------------------------------------------------------------------------


def test_record_continuation_refuses_or_charges_a_fork() -> None:
    acc = Accountant(epsilon_budget=1.0)
    charge = _pure(0.4)
    issued = acc.record_continuation("lin", 3)
    assert issued == 3 + CONTINUATION_WINDOW  # the continuing object's generation: its saves come next
    acc.record_continuation("lin", issued + 1)  # a later save of that continuation: not a fork
    assert acc.entries() == ()
    with pytest.raises(ForkRefusedError, match="generation 3 of lineage lin was already continued"):
        acc.record_continuation("lin", 3)
    assert isinstance(ForkRefusedError("x"), PrivacyBudgetExceededError)
    acc.record_continuation("lin", 3, on_fork="charge", charge=charge)
    acc.record_continuation("lin", 3, on_fork="charge", charge=charge)
    first, second = acc.entries()
    assert first == second and first.lineage == "lin" and first.label == "continuation of lin generation 3"
    with pytest.raises(PrivacyBudgetExceededError):
        acc.record_continuation("lin", 3, on_fork="charge", charge=charge)
    assert len(acc.entries()) == 2
    with pytest.raises(PerInstanceSpendError):
        acc.record_continuation("lin", 3, on_fork="charge", charge=_pure(0.01, per_instance=True))
    with pytest.raises(InvalidParameterError, match="needs charge="):
        acc.record_continuation("lin", 3, on_fork="charge")
    for bad in ({"lineage": ""}, {"generation": -1}, {"on_fork": "allow"}):
        args = {"lineage": "lin", "generation": 0, "on_fork": "refuse", **bad}
        with pytest.raises(InvalidParameterError):
            acc.record_continuation(args.pop("lineage"), args.pop("generation"), **args)  # type: ignore[arg-type]


def test_spend_validates_its_keywords() -> None:
    acc = Accountant()
    for kw in ({"scope": "global"}, {"label": 3}, {"label": "a\nb"}, {"unit": ""}, {"neighbouring": "swap"},
               {"allow_per_instance": 1}, {"connection": object()}):
        with pytest.raises(InvalidParameterError):
            acc.spend(PureEvent(0.1), **kw)  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError, match="PrivacyEvent or a Guarantee"):
        acc.spend(0.5)  # type: ignore[arg-type]
    assert acc.entries() == ()
