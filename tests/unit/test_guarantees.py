"""Unit tests of dpbandits.privacy.guarantees."""

from __future__ import annotations

import math

import pytest

from dpbandits._core.errors import InvalidParameterError
from dpbandits.privacy.guarantees import (
    ApproxDP,
    Neighbouring,
    PureDP,
    UnsupportedConversionError,
    add_remove_to_label,
    add_remove_to_replace_one,
    replace_one_to_add_remove,
    replace_one_to_label,
)


def _approx(eps: float = 1.0, delta: float = 1e-5, rel: str = "add/remove") -> ApproxDP:
    return ApproxDP(epsilon=eps, delta=delta, unit="one record", neighbouring=rel, reference="ref")


def test_fields_and_string_relation() -> None:
    g = _approx()
    assert g.neighbouring is Neighbouring.ADD_REMOVE
    assert not g.is_pure and g.is_finite
    assert "add/remove" in str(g) and "one record" in str(g)
    assert g.to_dict()["kind"] == "ApproxDP"


@pytest.mark.parametrize("bad_eps", [-1.0, math.nan, "1", True])
def test_bad_epsilon(bad_eps: object) -> None:
    with pytest.raises(InvalidParameterError, match="epsilon"):
        PureDP(epsilon=bad_eps, unit="u", neighbouring="add/remove")  # type: ignore[arg-type]


@pytest.mark.parametrize("bad_delta", [-0.1, 1.5, math.nan])
def test_bad_delta(bad_delta: float) -> None:
    with pytest.raises(InvalidParameterError, match="delta"):
        ApproxDP(epsilon=1.0, delta=bad_delta, unit="u", neighbouring="add/remove")


def test_bad_unit_and_relation() -> None:
    with pytest.raises(InvalidParameterError, match="unit"):
        PureDP(epsilon=1.0, unit="", neighbouring="add/remove")
    with pytest.raises(InvalidParameterError, match="neighbouring must be one of"):
        PureDP(epsilon=1.0, unit="u", neighbouring="swap")  # type: ignore[arg-type]


def test_pure_requires_zero_delta_and_converts() -> None:
    with pytest.raises(InvalidParameterError, match="PureDP"):
        PureDP(epsilon=1.0, delta=1e-6, unit="u", neighbouring="add/remove")
    g = PureDP(epsilon=1.0, unit="u", neighbouring="add/remove")
    assert g.is_pure
    approx = g.to_approx(1e-6)
    assert isinstance(approx, ApproxDP) and approx.delta == 1e-6


def test_infinite_guarantee_carries_a_reason() -> None:
    g = PureDP.infinite(unit="u", neighbouring=Neighbouring.JOINT, reason="budget too small")
    assert not g.is_finite and g.reason == "budget too small"


def test_numpy_scalars_accepted() -> None:
    import numpy as np

    g = ApproxDP(epsilon=np.float32(0.5), delta=np.float64(1e-6), unit="u", neighbouring="add/remove")
    assert type(g.epsilon) is float and g.epsilon == 0.5 and type(g.delta) is float


def test_frozen() -> None:
    with pytest.raises(AttributeError):
        _approx().epsilon = 2.0  # type: ignore[misc]


def test_add_remove_to_replace_one() -> None:
    g = add_remove_to_replace_one(_approx(1.0, 1e-5))
    assert g.neighbouring is Neighbouring.REPLACE_ONE
    assert g.epsilon == 2.0
    # δ' = (1 + e^ε)·δ
    assert g.delta == pytest.approx((1 + math.e) * 1e-5)
    assert g.unit == "one record" and g.reference == "ref"


def test_add_remove_to_label_and_pure_stays_pure() -> None:
    g = add_remove_to_label(PureDP(epsilon=0.5, unit="u", neighbouring="add/remove"))
    assert isinstance(g, PureDP) and g.epsilon == 1.0 and g.neighbouring is Neighbouring.LABEL_ONLY


def test_conversions_check_the_source_relation() -> None:
    with pytest.raises(InvalidParameterError, match="add/remove"):
        add_remove_to_replace_one(_approx(rel="replace-one"))
    with pytest.raises(InvalidParameterError, match="replace-one"):
        replace_one_to_label(_approx(rel="add/remove"))


def test_replace_one_to_label_is_identity_on_parameters() -> None:
    g = replace_one_to_label(_approx(rel="replace-one"))
    assert (g.epsilon, g.delta, g.neighbouring) == (1.0, 1e-5, Neighbouring.LABEL_ONLY)


def test_replace_one_to_add_remove_refused_without_null_model() -> None:
    with pytest.raises(UnsupportedConversionError, match="len"):
        replace_one_to_add_remove(_approx(rel="replace-one"))
    g = replace_one_to_add_remove(_approx(rel="replace-one"), bounded_with_null=True)
    assert g.neighbouring is Neighbouring.ADD_REMOVE and g.epsilon == 1.0


def test_group_privacy() -> None:
    g = _approx(0.5, 1e-6).group(3)
    assert g.epsilon == 1.5
    # δ_k = k·e^{(k−1)ε}·δ
    assert g.delta == pytest.approx(3 * math.exp(1.0) * 1e-6)
    assert g.unit.startswith("3 ×")
    with pytest.raises(InvalidParameterError, match="k must be an int >= 1"):
        _approx().group(0)
    pure = PureDP(epsilon=1.0, unit="u", neighbouring="add/remove").group(2)
    assert isinstance(pure, PureDP) and pure.delta == 0.0


def test_the_printed_form_states_the_scope_whatever_builds_the_guarantee() -> None:
    """Per-instance guarantees say they are not worst-case DP in str(), also after composition."""
    from dpbandits.privacy.accounting import compose_guarantees
    from dpbandits.privacy.guarantees import PER_INSTANCE_NOTE

    g = PureDP(epsilon=0.5, unit="one record", neighbouring=Neighbouring.ADD_REMOVE, per_instance=True)
    assert PER_INSTANCE_NOTE in str(g) and "NOT a worst-case DP guarantee" in str(g)
    assert PER_INSTANCE_NOTE in str(compose_guarantees([g, g]))
    assert PER_INSTANCE_NOTE in str(g.with_parameters(1.0, 1e-6)) and PER_INSTANCE_NOTE in str(g.to_approx(1e-6))
    assert PER_INSTANCE_NOTE in str(g.group(2))
    domain = PureDP(epsilon=0.5, unit="one record", neighbouring=Neighbouring.ADD_REMOVE, domain="N(a) >= 5")
    assert str(domain).endswith("over the declared domain: N(a) >= 5")
    assert "per-instance" not in str(domain) and domain.to_dict()["domain"] == "N(a) >= 5"
