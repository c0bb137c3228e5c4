"""The MAB accountant's log-sum-exp (issue 38): NumPy's, so ``dpbandits account mab`` need not import
``scipy.special``, and the accountant's results are those of SciPy's ``logsumexp`` to the bit.

Theorem 1′'s δ = min(1, e^ε·X/(X + Y)) sums exponentials of the arms' utility bounds; the sum was
SciPy's ``logsumexp`` and is now ``_kl_accounting._logsumexp`` (imported by ``accountants_mab``
and by the linear and RLHF accountants), which performs the same floating-point operations
(SciPy >= 1.15). Checked here: the same float on random and adversarial arrays (ties of the maximum, ``-inf`` entries, huge and tiny magnitudes), the same (ε, δ) from ``theorem1_corrected_delta``
on random instances, and an error against a 60-digit evaluation of at most a few units in the last place.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpbandits.algorithms.offline import accountants, accountants_mab
from dpbandits.algorithms.offline.accountants_mab import _logsumexp, theorem1_corrected_delta

scipy_special = pytest.importorskip("scipy.special")
import scipy  # noqa: E402

SCIPY_SAME_OPERATIONS = tuple(int(part) for part in scipy.__version__.split(".")[:2]) >= (1, 15)


def _arrays(seed: int, count: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    arrays: list[np.ndarray] = []
    for _ in range(count):
        k = int(rng.integers(1, 40))
        a = rng.normal(size=k) * 10.0 ** rng.uniform(-3, 4) + rng.normal() * 10.0 ** rng.uniform(0, 3)
        if rng.random() < 0.3:  # ties of the maximum (the sum divides by their number)
            a[rng.integers(0, k, size=int(rng.integers(1, k + 1)))] = a.max()
        if rng.random() < 0.1:  # an arm whose term vanishes
            a[rng.integers(0, k)] = -np.inf
        if rng.random() < 0.1:
            a = np.round(a)
        arrays.append(a)
    arrays += [np.array(v, dtype=np.float64) for v in (
        [], [-np.inf], [-np.inf, -np.inf], [np.inf, 1.0], [1e308, 1e308], [-1e308, 5.0], [800.0, 800.0, 1.0],
        [0.0], [-745.0, -745.0], [709.0, 709.5], [1.0, 1.0 + 2**-52],
    )]
    return arrays


@pytest.mark.skipif(not SCIPY_SAME_OPERATIONS, reason="SciPy before 1.15 sums log-sum-exp another way")
def test_the_log_sum_exp_is_scipys_to_the_bit() -> None:
    for a in _arrays(0, 3000):
        with np.errstate(all="ignore"):
            expected = float(scipy_special.logsumexp(a))
        got = _logsumexp(a)
        assert got == expected or (math.isnan(got) and math.isnan(expected)), (a, got, expected)


def _instances(seed: int, count: int) -> list[dict[str, object]]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        k = int(rng.integers(2, 30))
        counts = rng.integers(0, 3000, size=k).astype(np.float64)
        counts[rng.random(k) < 0.2] = rng.integers(0, 3)  # thin arms
        sums = counts * rng.uniform(0, 1, size=k)
        pi0 = rng.dirichlet(np.ones(k))
        pi0[rng.random(k) < 0.1] = 0.0
        with np.errstate(divide="ignore"):
            log_pi0 = np.log(pi0)
        out.append({"counts": counts, "reward_sums": sums, "log_reference": log_pi0,
                    "n0": float(rng.integers(1, 2000)), "reward_bound": 1.0,
                    "beta0": float(rng.uniform(0, 3)), "eta": float(10.0 ** rng.uniform(-3, 1))})
    return out


@pytest.mark.skipif(not SCIPY_SAME_OPERATIONS, reason="SciPy before 1.15 sums log-sum-exp another way")
def test_theorem1_corrected_delta_is_unchanged_to_the_bit(monkeypatch: pytest.MonkeyPatch) -> None:
    instances = _instances(1, 400)
    ours = [theorem1_corrected_delta(**case) for case in instances]  # type: ignore[arg-type]
    monkeypatch.setattr(accountants_mab, "_logsumexp", lambda a: float(scipy_special.logsumexp(a)))
    theirs = [theorem1_corrected_delta(**case) for case in instances]  # type: ignore[arg-type]
    assert ours == theirs
    assert sum(0.0 < delta < 1.0 for _, delta in ours) > 50  # the sums decided δ, not the cap


@pytest.mark.skipif(not SCIPY_SAME_OPERATIONS, reason="SciPy before 1.15 sums log-sum-exp another way")
def test_the_elliptical_delta_of_the_linear_and_rlhf_accountants_is_unchanged_to_the_bit(
        monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(3)
    instances = []
    for _ in range(300):
        k = int(rng.integers(2, 40))
        logits = rng.normal(0.0, 3.0, k)
        log_p = logits - float(np.log(np.exp(logits).sum()))
        log_p[rng.random(k) < 0.1] = -np.inf  # actions the policy never chooses
        instances.append({"log_probabilities": log_p, "penalties": rng.uniform(0.0, 2.0, k),
                          "coefficient": float(rng.uniform(0.1, 5.0)), "threshold": float(rng.uniform(0.1, 1.5)),
                          "eta": float(10.0 ** rng.uniform(-1, 2))})
    ours = [accountants.elliptical_corrected_delta(**case) for case in instances]
    monkeypatch.setattr(accountants, "_logsumexp", lambda a: float(scipy_special.logsumexp(a)))
    theirs = [accountants.elliptical_corrected_delta(**case) for case in instances]
    assert ours == theirs
    assert sum(0.0 < delta < 1.0 for _, delta in ours) > 30  # the sums decided δ, not the cap


def test_the_log_sum_exp_is_within_a_few_ulps_of_the_exact_value() -> None:
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 60
    worst = 0.0
    for a in _arrays(2, 600):
        finite = a[np.isfinite(a)]
        if a.size == 0 or finite.size != a.size or abs(a).max() > 700:
            continue
        exact = mpmath.log(mpmath.fsum(mpmath.exp(mpmath.mpf(float(v))) for v in a))
        got = _logsumexp(a)
        # absolute error of log1p(s/m) + log m + a_max: a few roundings of terms of size |a_max| and log(k)
        scale = math.ulp(max(abs(float(a.max())), math.log(a.size) + 1.0))
        error = abs(float(mpmath.mpf(got) - exact))
        worst = max(worst, error / scale)
        assert error <= 4 * scale, (a, got, exact)
    assert worst > 0  # some case is inexact: the check compares, not copies
