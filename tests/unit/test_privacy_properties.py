"""Property-based tests (hypothesis) of the privacy core's invariants."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from dpbandits.privacy.accounting import Accountant, GaussianEvent, gaussian_delta, gaussian_epsilon
from dpbandits.privacy.mechanisms import ExponentialMechanism, GibbsMechanism, analytic_gaussian_sigma

finite = st.floats(min_value=-50, max_value=50, allow_nan=False, allow_infinity=False)
utilities = arrays(np.float64, st.integers(min_value=1, max_value=8), elements=finite)


@settings(max_examples=60, deadline=None, derandomize=True, database=None)
@given(u=utilities, sensitivity=st.floats(0.01, 5.0), epsilon=st.floats(0.01, 5.0), data=st.data())
def test_exponential_mechanism_privacy_loss_bounded(u: np.ndarray, sensitivity: float, epsilon: float,
                                                   data: st.DataObject) -> None:
    # any neighbour whose utilities move by at most Δ each: max |log π(a) − log π'(a)| <= ε
    shift = data.draw(arrays(np.float64, u.shape, elements=st.floats(-1.0, 1.0))) * sensitivity
    mech = ExponentialMechanism(sensitivity, epsilon)
    loss = np.max(np.abs(mech.log_probabilities(u) - mech.log_probabilities(u + shift)))
    assert loss <= epsilon * (1 + 1e-9) + 1e-12


@settings(max_examples=60, deadline=None, derandomize=True, database=None)
@given(u=utilities, temperature=st.floats(0.01, 100.0))
def test_gibbs_probabilities_normalised(u: np.ndarray, temperature: float) -> None:
    p = GibbsMechanism(None, temperature).probabilities(u)
    assert np.all(p >= 0)
    assert abs(p.sum() - 1.0) < 1e-9


@settings(max_examples=40, deadline=None, derandomize=True, database=None)
@given(epsilon=st.floats(0.01, 10.0), delta=st.floats(1e-12, 0.5), sensitivity=st.floats(0.01, 10.0))
def test_analytic_sigma_meets_delta(epsilon: float, delta: float, sensitivity: float) -> None:
    sigma = analytic_gaussian_sigma(sensitivity, epsilon, delta)
    assert gaussian_delta(sigma, sensitivity, epsilon) <= delta
    # and the accountant reports at most ε for that one release
    acc = Accountant()
    acc.spend(GaussianEvent(sigma, sensitivity))
    assert acc.get_epsilon(delta) <= epsilon * (1 + 1e-9)


@settings(max_examples=40, deadline=None, derandomize=True, database=None)
@given(sigma=st.floats(0.05, 50.0), delta=st.floats(1e-12, 0.5))
def test_gaussian_epsilon_inverts_delta(sigma: float, delta: float) -> None:
    eps = gaussian_epsilon(sigma, 1.0, delta)
    assert gaussian_delta(sigma, 1.0, eps) <= delta
