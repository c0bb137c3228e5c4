"""Unit tests of dpbandits.privacy.accounting, with a cross-check against dp_accounting."""

from __future__ import annotations

import math

import dp_accounting
import pytest
from dp_accounting import pld, rdp

from dpbandits._core.errors import InvalidParameterError, PrivacyBudgetExceededError, UnsupportedEventError
from dpbandits.privacy.accounting import (
    Accountant,
    ApproxEvent,
    ComposedEvent,
    EpsilonDelta,
    GaussianEvent,
    LaplaceEvent,
    PureEvent,
    advanced_composition,
    basic_composition,
    compose_guarantees,
    gaussian_delta,
    gaussian_epsilon,
    to_dp_accounting,
)
from dpbandits.privacy.guarantees import ApproxDP, Neighbouring, PureDP
from dpbandits.privacy.mechanisms import GaussianMechanism, LaplaceMechanism

# --------------------------------------------------------------------------- events


def test_event_validation() -> None:
    with pytest.raises(InvalidParameterError, match="scale"):
        LaplaceEvent(scale=0.0)
    with pytest.raises(InvalidParameterError, match="sigma"):
        GaussianEvent(sigma=-1.0)
    with pytest.raises(InvalidParameterError, match="epsilon"):
        PureEvent(math.nan)
    with pytest.raises(InvalidParameterError, match="delta"):
        ApproxEvent(1.0, 1.0)
    with pytest.raises(InvalidParameterError, match="count"):
        ComposedEvent((PureEvent(1.0),), count=0)
    with pytest.raises(InvalidParameterError, match="events must not be empty"):
        ComposedEvent(())


def test_events_are_frozen() -> None:
    event = LaplaceEvent(scale=2.0, sensitivity=1.0)
    with pytest.raises(AttributeError):
        event.scale = 1.0  # type: ignore[misc]
    assert event.epsilon == 0.5


# --------------------------------------------------------------------------- composition theorems


def test_basic_composition_of_events_and_guarantees() -> None:
    events = [LaplaceEvent(2.0), PureEvent(0.25), ApproxEvent(0.1, 1e-6),
              ComposedEvent((PureEvent(0.1), ApproxEvent(0.2, 1e-7)), count=3)]
    eps, delta = basic_composition(events)
    assert eps == pytest.approx(0.5 + 0.25 + 0.1 + 3 * 0.3)
    assert delta == pytest.approx(1e-6 + 3e-7)
    g = [PureDP(epsilon=0.5, unit="u", neighbouring="add/remove"),
         ApproxDP(epsilon=0.5, delta=1e-6, unit="u", neighbouring="add/remove")]
    assert basic_composition(g) == EpsilonDelta(1.0, 1e-6)


def test_basic_composition_refuses_gaussian_and_mixed_relations() -> None:
    with pytest.raises(UnsupportedEventError, match="Accountant"):
        basic_composition([GaussianEvent(1.0)])
    mixed = [PureDP(epsilon=0.5, unit="u", neighbouring="add/remove"),
             PureDP(epsilon=0.5, unit="u", neighbouring="replace-one")]
    with pytest.raises(InvalidParameterError, match="neighbouring"):
        basic_composition(mixed)


def test_compose_guarantees() -> None:
    a = PureDP(epsilon=0.5, unit="one reward", neighbouring="replace-one", reference="A")
    b = ApproxDP(epsilon=0.25, delta=1e-6, unit="one reward", neighbouring="replace-one", reference="B",
                 per_instance=True)
    g = compose_guarantees([a, b])
    assert isinstance(g, ApproxDP)
    assert (g.epsilon, g.delta, g.per_instance) == (0.75, 1e-6, True)
    assert "A" in g.reference and "B" in g.reference
    with pytest.raises(InvalidParameterError, match="unit"):
        compose_guarantees([a, PureDP(epsilon=1.0, unit="other", neighbouring="replace-one")])
    with pytest.raises(InvalidParameterError, match="empty"):
        compose_guarantees([])


def test_advanced_composition_formula() -> None:
    eps, delta, k, dp = 0.1, 1e-7, 100, 1e-6
    result = advanced_composition(eps, delta, k, dp)
    # ε' = √(2k ln(1/δ'))·ε + k·ε·(e^ε − 1), δ'' = kδ + δ'
    assert result.epsilon == pytest.approx(math.sqrt(200 * math.log(1e6)) * 0.1 + 10 * (math.exp(0.1) - 1))
    assert result.delta == pytest.approx(1e-5 + 1e-6)


@pytest.mark.parametrize(("args", "name"), [((0.0, 0.0, 2, 1e-6), "epsilon"), ((1.0, 1.0, 2, 1e-6), "delta"),
                                            ((1.0, 0.0, 0, 1e-6), "k"), ((1.0, 0.0, 2, 0.0), "delta_prime")])
def test_advanced_composition_validation(args: tuple[float, float, int, float], name: str) -> None:
    with pytest.raises(InvalidParameterError, match=name):
        advanced_composition(*args)


def test_gaussian_profile_inverse() -> None:
    eps = gaussian_epsilon(3.0, 1.0, 1e-5)
    assert gaussian_delta(3.0, 1.0, eps) <= 1e-5
    assert gaussian_delta(3.0, 1.0, eps * 0.999) > 1e-5
    with pytest.raises(InvalidParameterError, match="delta must be > 0"):
        gaussian_epsilon(3.0, 1.0, 0.0)
    with pytest.raises(InvalidParameterError, match="epsilon"):
        gaussian_delta(3.0, 1.0, -1.0)


# --------------------------------------------------------------------------- accountant


def test_accountant_pure_laplace() -> None:
    acc = Accountant()
    acc.spend(LaplaceMechanism(1.0, 0.1).event, count=10)
    assert acc.get_epsilon(0.0) == pytest.approx(1.0)
    assert len(acc.events) == 1


def test_accountant_uses_advanced_composition_when_better() -> None:
    acc = Accountant()
    acc.spend(PureEvent(0.1), count=100)
    assert acc.get_epsilon(0.0) == pytest.approx(10.0)
    assert acc.get_epsilon(1e-6) == pytest.approx(advanced_composition(0.1, 0.0, 100, 1e-6).epsilon)


def test_accountant_composes_gaussians_exactly() -> None:
    acc = Accountant()
    acc.spend(GaussianEvent(sigma=2.0, l2_sensitivity=1.0), count=4)
    # four Gaussians with Δ/σ = ½ are one Gaussian with μ = √(4·¼) = 1, i.e. σ = 1
    assert acc.get_epsilon(1e-5) == pytest.approx(gaussian_epsilon(1.0, 1.0, 1e-5))
    assert math.isinf(acc.get_epsilon(0.0))


def test_accountant_mixed_and_delta_checks() -> None:
    acc = Accountant()
    acc.spend(ApproxEvent(0.5, 1e-6))
    acc.spend(GaussianEvent(5.0))
    assert acc.get_epsilon(1e-5) == pytest.approx(0.5 + gaussian_epsilon(5.0, 1.0, 1e-5 - 1e-6))
    with pytest.raises(InvalidParameterError, match="delta must be >="):
        acc.get_epsilon(1e-7)
    g = acc.guarantee(1e-5, unit="one reward", neighbouring=Neighbouring.REPLACE_ONE)
    assert isinstance(g, ApproxDP) and g.delta == 1e-5
    assert math.isinf(acc.guarantee(1e-6, unit="one reward", neighbouring="replace-one").epsilon)
    budgeted = Accountant(delta_budget=1e-5)  # delta defaults to the budget's δ, as spent() (issue 26)
    budgeted.spend(ApproxEvent(0.5, 1e-6))
    assert budgeted.guarantee(unit="one reward", neighbouring="replace-one").delta == 1e-5


def test_accountant_budget_refuses_before_spending() -> None:
    acc = Accountant(epsilon_budget=1.0)
    acc.spend(LaplaceEvent(scale=2.0), count=2)
    with pytest.raises(PrivacyBudgetExceededError, match="epsilon_budget"):
        acc.spend(LaplaceEvent(scale=2.0))
    assert acc.get_epsilon(0.0) == pytest.approx(1.0)
    assert len(acc.events) == 1


def test_accountant_rejects_non_events() -> None:
    with pytest.raises(InvalidParameterError, match="PrivacyEvent"):
        Accountant().spend(1.0)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- dp_accounting export and cross-check


def test_to_dp_accounting_mapping() -> None:
    assert to_dp_accounting(LaplaceEvent(scale=3.0, sensitivity=1.5)) == dp_accounting.LaplaceDpEvent(2.0)
    assert to_dp_accounting(GaussianEvent(sigma=4.0, l2_sensitivity=2.0)) == dp_accounting.GaussianDpEvent(2.0)
    rr = to_dp_accounting(PureEvent(math.log(3.0)))
    assert rr == dp_accounting.RandomizedResponseDpEvent(noise_parameter=0.5, num_buckets=2)
    composed = to_dp_accounting(ComposedEvent((LaplaceEvent(1.0), GaussianEvent(1.0)), count=3))
    assert composed == dp_accounting.SelfComposedDpEvent(
        dp_accounting.ComposedDpEvent([dp_accounting.LaplaceDpEvent(1.0), dp_accounting.GaussianDpEvent(1.0)]), 3)
    with pytest.raises(UnsupportedEventError, match="delta"):
        to_dp_accounting(ApproxEvent(1.0, 1e-6))


def _pld_epsilon(event: object, delta: float, relation: object = None) -> float:
    acc = pld.PLDAccountant() if relation is None else pld.PLDAccountant(relation)
    acc.compose(to_dp_accounting(event))  # type: ignore[arg-type]
    return float(acc.get_epsilon(delta))


def _rdp_epsilon(event: object, delta: float) -> float:
    acc = rdp.RdpAccountant()
    acc.compose(to_dp_accounting(event))  # type: ignore[arg-type]
    return float(acc.get_epsilon(delta))


def test_cross_check_laplace_composition_equals_pld() -> None:
    event = ComposedEvent((LaplaceEvent(scale=2.0),), count=10)
    acc = Accountant()
    acc.spend(event)
    ours = acc.get_epsilon(0.0)  # basic composition: 10 × ½
    assert ours == pytest.approx(5.0)
    pld_eps = _pld_epsilon(event, 1e-9)
    # ours is an upper bound, and pure composition of Laplace is tight at tiny δ
    assert ours >= pld_eps
    assert ours - pld_eps <= 1e-3 * ours


def test_cross_check_gaussian_composition_against_pld_and_rdp() -> None:
    event = ComposedEvent((GaussianMechanism(1.0, 1.0, 1e-5).event,), count=10)
    acc = Accountant()
    acc.spend(event)
    ours = acc.get_epsilon(1e-5)
    pld_eps = _pld_epsilon(event, 1e-5)
    # ours is exact; PLD (pessimistic discretisation) is within its discretisation error above it
    assert ours == pytest.approx(pld_eps, abs=0.02)
    # RDP is a looser upper bound
    assert ours <= _rdp_epsilon(event, 1e-5)


def test_cross_check_pure_events_via_randomised_response() -> None:
    event = ComposedEvent((PureEvent(0.3), PureEvent(0.2), PureEvent(0.5)))
    ours = basic_composition([event]).epsilon
    theirs = _pld_epsilon(event, 0.0, dp_accounting.NeighboringRelation.REPLACE_ONE)
    assert ours == pytest.approx(theirs, abs=1e-3)


def test_cross_check_repeated_pure_events() -> None:
    # a repeated pure event is exported so that dp_accounting's PLD really composes it count times
    event = ComposedEvent((PureEvent(0.5),), count=4)
    assert to_dp_accounting(event) == dp_accounting.ComposedDpEvent([to_dp_accounting(PureEvent(0.5))] * 4)
    theirs = _pld_epsilon(event, 0.0, dp_accounting.NeighboringRelation.REPLACE_ONE)
    assert basic_composition([event]).epsilon == pytest.approx(theirs, abs=1e-3)


def test_cross_check_mixed_events_ours_is_an_upper_bound() -> None:
    event = ComposedEvent((LaplaceEvent(scale=4.0), GaussianEvent(sigma=3.0)), count=5)
    acc = Accountant()
    acc.spend(event)
    ours = acc.get_epsilon(1e-6)
    assert ours >= _pld_epsilon(event, 1e-6) - 1e-9


def test_accountant_spent_remaining_and_refusal_before_recording() -> None:
    acc = Accountant(epsilon_budget=1.0)
    assert acc.remaining() == (1.0, 0.0) and acc.spent() == (0.0, 0.0)
    acc.spend(LaplaceEvent(scale=4.0), count=2)
    assert acc.spent().epsilon == pytest.approx(0.5) and acc.remaining().epsilon == pytest.approx(0.5)
    assert acc.can_spend(PureEvent(0.5)) and not acc.can_spend(PureEvent(0.6))
    with pytest.raises(PrivacyBudgetExceededError, match="nothing was spent"):
        acc.spend(PureEvent(0.6))
    assert len(acc.events) == 1  # the refused event was not recorded
    assert Accountant().remaining().epsilon == math.inf


@pytest.mark.parametrize("method", ["basic", "pld", "rdp"])
def test_every_method_bounds_a_mixed_ledger_and_pld_is_tightest(method: str) -> None:
    acc = Accountant(method=method)
    acc.spend(LaplaceEvent(scale=10.0), count=50)
    acc.spend(GaussianEvent(sigma=5.0), count=3)
    acc.spend(PureEvent(0.1), count=5)
    eps = acc.get_epsilon(1e-6)
    assert 0.0 < eps < 5.0 + 0.5 + 3.0  # far below plain basic composition of the parts
    if method == "pld":
        assert eps <= Accountant(method="basic")._epsilon(list(acc.entries()), 1e-6)


def test_pld_and_rdp_agree_with_dp_accounting_accountants() -> None:
    """Our PLD and RDP compositions match dp_accounting's own accountants on Laplace + Gaussian."""
    import dp_accounting as dpa
    from dp_accounting import pld, rdp

    events = [(LaplaceEvent(scale=3.0, sensitivity=1.5), 7), (GaussianEvent(sigma=4.0, l2_sensitivity=2.0), 5)]
    reference_pld, reference_rdp = pld.PLDAccountant(), rdp.RdpAccountant()
    for event, count in events:
        reference_pld.compose(to_dp_accounting(event), count)
        reference_rdp.compose(to_dp_accounting(event), count)
    for method, reference in (("pld", reference_pld), ("rdp", reference_rdp)):
        acc = Accountant(method=method)
        for event, count in events:
            acc.spend(event, count)
        assert acc.get_epsilon(1e-5) == pytest.approx(reference.get_epsilon(1e-5), rel=2e-3), method
    assert isinstance(dpa.LaplaceDpEvent(1.0), dpa.DpEvent)


def test_rdp_refuses_approximate_events_before_recording_and_pure_events_sum_at_delta_zero() -> None:
    acc = Accountant(method="rdp")
    with pytest.raises(UnsupportedEventError, match="method='basic' or method='pld'"):
        acc.spend(ApproxEvent(0.5, 1e-6))
    assert acc.events == ()
    acc.spend(PureEvent(0.25), count=4)
    assert acc.get_epsilon(0.0) == pytest.approx(1.0)
    assert Accountant(method="pld").get_epsilon(1e-6) == 0.0
    with pytest.raises(InvalidParameterError, match="method must be one of"):
        Accountant(method="moments")
