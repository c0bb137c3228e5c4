"""Contract suite run over every registered mechanism (``list_mechanisms``)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpbandits._core.errors import InvalidParameterError
from dpbandits.privacy.accounting import Accountant, PrivacyEvent
from dpbandits.privacy.guarantees import Guarantee, Neighbouring
from dpbandits.privacy.mechanisms import Mechanism, list_mechanisms

MECHANISMS = sorted(list_mechanisms())


@pytest.fixture(params=MECHANISMS)
def mechanism(request: pytest.FixtureRequest) -> Mechanism:
    return list_mechanisms()[request.param]()


def test_registry_lists_every_family() -> None:
    assert {"laplace", "gaussian_analytic", "gaussian_classical", "exponential", "gibbs",
            "grid_exponential", "report_noisy_max"} <= set(MECHANISMS)


def test_factories_build_fresh_mechanisms() -> None:
    for name, factory in list_mechanisms().items():
        mech = factory()
        assert isinstance(mech, Mechanism), name
        assert mech is not factory()


def test_output_shape_matches_input(mechanism: Mechanism, seed: int) -> None:
    x = mechanism.example_input()
    out = mechanism.release(x, rng=seed, insecure_seeded_noise=True)
    batch = np.stack([x, x, x])
    out_batch = mechanism.release(batch, rng=seed, insecure_seeded_noise=True)
    if out.dtype.kind == "f" and out.shape == x.shape:  # additive noise: same shape
        assert out_batch.shape == batch.shape
    else:  # selection: one output per batch row
        assert out_batch.shape[0] == 3
        assert out_batch.shape[1:] == out.shape


def test_same_seed_same_output(mechanism: Mechanism, seed: int) -> None:
    x = np.tile(mechanism.example_input(), (20, 1))
    first = mechanism.release(x, rng=seed, insecure_seeded_noise=True)
    assert np.array_equal(first, mechanism.release(x, rng=seed, insecure_seeded_noise=True))
    assert np.array_equal(first, mechanism.release(x, rng=np.random.default_rng(seed), insecure_seeded_noise=True))


def test_secure_backend_runs(mechanism: Mechanism, seed: int) -> None:
    x = mechanism.example_input()
    assert mechanism.release(x, backend="opendp").shape == mechanism.release(x, rng=seed, insecure_seeded_noise=True).shape


@pytest.mark.parametrize("bad", [[], [math.nan], [math.inf]])
def test_bad_inputs_raise_typed_errors(mechanism: Mechanism, bad: list[float], seed: int) -> None:
    with pytest.raises(InvalidParameterError):
        mechanism.release(bad, rng=seed, insecure_seeded_noise=True)


def test_bad_rng_raises(mechanism: Mechanism) -> None:
    with pytest.raises(InvalidParameterError, match="rng"):
        mechanism.release(mechanism.example_input(), rng=-1, insecure_seeded_noise=True)


def test_guarantee_and_event_present(mechanism: Mechanism) -> None:
    g = mechanism.guarantee("one record", Neighbouring.REPLACE_ONE)
    assert isinstance(g, Guarantee)
    assert g.epsilon == mechanism.epsilon and math.isfinite(g.epsilon) and g.epsilon > 0
    assert g.delta == mechanism.delta
    assert g.unit == "one record" and g.reference
    event = mechanism.event
    assert isinstance(event, PrivacyEvent)
    acc = Accountant()
    acc.spend(event)
    # the ledger's exact bound for one release, at the mechanism's δ, never exceeds the claimed ε
    # (equal for every calibration except the classical Gaussian one, which is loose)
    ledger_epsilon = acc.get_epsilon(mechanism.delta)
    assert ledger_epsilon <= mechanism.epsilon * (1 + 1e-9)
    if getattr(mechanism, "calibration", None) != "classical":
        assert ledger_epsilon == pytest.approx(mechanism.epsilon, rel=1e-6)


def test_docstring_has_privacy_and_references(mechanism: Mechanism) -> None:
    doc = type(mechanism).__doc__ or ""
    assert "Privacy" in doc and "References" in doc


def test_finite_output_mechanisms_expose_probabilities(mechanism: Mechanism) -> None:
    probabilities = getattr(mechanism, "probabilities", None)
    scale = getattr(mechanism, "scale", getattr(mechanism, "sigma", None))
    assert probabilities is not None or scale is not None
    if probabilities is not None:
        p = probabilities(mechanism.example_input())
        assert np.all(p >= 0)
        assert p.sum() == pytest.approx(1.0)
