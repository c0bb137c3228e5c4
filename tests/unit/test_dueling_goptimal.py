"""Unit tests of GOptimal-DPDB."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from dpbandits._core.errors import InvalidParameterError
from dpbandits.algorithms.dueling._streams import trial_seed_sequences, trial_streams
from dpbandits.algorithms.dueling.goptimal_dpdb import (
    GOptimalDPDB,
    _finish_phase,
    _lambda_min_condition,
    _plan_phase,
    _settings,
    goptimal_dpdb_guarantee,
    phase_play_count,
    private_logistic_mle,
    simulate_goptimal_dpdb,
    simulate_goptimal_nonprivate,
)
from dpbandits.envs.dueling import finite_instance, unit_ball_environment


@pytest.mark.parametrize(("epsilon", "lambda_min_check"), [(math.inf, "warn"), (2.0, "warn"), (2.0, "enforce")])
def test_ask_tell_and_phase_simulation_agree_exactly(epsilon: float, lambda_min_check: str, seed: int) -> None:
    env, horizon = finite_instance("f3"), 5_000
    options: dict[str, Any] = {"play_count_scale": 0.001, "lambda_min_check": lambda_min_check}
    metrics = simulate_goptimal_dpdb(env, n_trials=2, rng=seed, horizon=horizon, epsilon=epsilon,
                                     feedback="streams", **options)
    seq = trial_seed_sequences(seed, 2)[1]
    feedback = env.streams(trial_streams(seq).environment, 1)
    # the simulation seeds its noise from the trial's noise stream: so must the agent, to agree exactly
    agent = GOptimalDPDB(env.features, horizon, epsilon, rng=seq, insecure_seeded_noise=True, **options)
    counts = np.zeros((env.n_arms, env.n_arms))
    for _ in range(horizon):
        pair = agent.ask()
        agent.tell(pair, first_wins=feedback.duel(*pair))
        counts[pair] += 1
    # several phases, eliminations and noise draws were compared (enforcing λ_min stretches phase 1 to T)
    assert len(agent.phases) >= (3 if lambda_min_check == "warn" else 1)
    expected = env.regret_from_pair_counts(counts)["reward_regret"]
    assert metrics["reward_regret"][1] == pytest.approx(expected, rel=1e-12)


def test_phase_play_count_closed_form() -> None:
    s = _settings(32, 10**6, 0.5, None, "slope_at_theta", 1.0, 0.01, 2.0, 1.0)
    kappa = 0.1049935854035065
    assert s.kappa == pytest.approx(kappa) and s.phase_union == 20 and s.failure_probability == 1e-6
    g, m, ell = 2.01, 4, 2
    acc = 0.25
    stat = 9 * g * math.log(6 * 32**2 * 20 / 1e-6) / (kappa**2 * acc**2)
    priv = 2 * m * g * math.log(2 * m * 20 / 1e-6) / (kappa * 0.5 * acc)
    assert phase_play_count(s, ell, g, m) == pytest.approx(stat + priv)
    s_inf = _settings(32, 10**6, math.inf, None, "li_et_al", 1.0, 0.01, 2.0, 0.1)
    assert s_inf.kappa == pytest.approx(0.0176627062)
    assert phase_play_count(s_inf, ell, g, m) == pytest.approx(
        0.1 * 9 * g * math.log(6 * 32**2 * 20 / 1e-6) / (s_inf.kappa**2 * acc**2))


def test_private_mle_recovers_theta_and_solves_the_paper_equation(rng: np.random.Generator) -> None:
    theta = np.array([0.6, -0.3])
    z = rng.normal(size=(6, 2))
    counts = np.full(6, 1e9)
    wins = counts / (1 + np.exp(-z @ theta))  # expected wins, no noise
    phi = private_logistic_mle(z, counts, wins)
    np.testing.assert_allclose(phi, theta, atol=1e-8)
    noisy_wins = np.clip(wins * rng.uniform(0.9, 1.1, 6), 0.5, counts - 0.5)
    phi = private_logistic_mle(z, counts / 1e6, noisy_wins / 1e6)
    residual = z.T @ (counts / 1e6 / (1 + np.exp(-z @ phi)) - noisy_wins / 1e6)
    np.testing.assert_allclose(residual, 0.0, atol=1e-8)


def test_design_diagnostics_and_spec_magnitudes(seed: int) -> None:
    env = unit_ball_environment([0.6, 0.8], net="sphere", n_points=32)
    agent = GOptimalDPDB(env.features, 10**6, 1.0, rng=seed)
    plan = agent.phases[0]
    assert 2.0 - 1e-9 <= plan.g_value <= 2.0 * 1.01 + 1e-9  # Kiefer–Wolfowitz: r <= g <= (1 + tol)·r
    assert plan.diagnostics["support"] <= 2 * 3 // 2 + 1
    # measured: d = 2, M = 32, T = 1e6 non-private regret ≈ 1.1e6
    out = simulate_goptimal_nonprivate(env, n_trials=2, rng=seed, horizon=10**6)
    assert 0.9e6 < out["reward_regret"].mean() < 1.3e6
    private = simulate_goptimal_dpdb(env, n_trials=2, rng=seed, horizon=10**6, epsilon=1.0)
    assert private["reward_regret"].mean() >= out["reward_regret"].mean() * 0.99


def test_commit_when_one_arm_or_no_distinct_pair() -> None:
    features = np.array([[1.0, 0.0], [1.0, 0.0]])
    agent = GOptimalDPDB(features, 5, 1.0, rng=0)
    assert agent.committed and agent.ask() == (0, 0)
    out = simulate_goptimal_dpdb(finite_instance("f1"), n_trials=1, rng=0, horizon=3, epsilon=1.0)
    assert out["reward_regret"][0] > 0


def test_guarantee_and_validation() -> None:
    g = goptimal_dpdb_guarantee(0.3)
    assert g.epsilon == 0.3 and g.delta == 0 and "preference label" in g.unit and "Theorem 3" in g.reference
    assert not goptimal_dpdb_guarantee(math.inf).is_finite
    with pytest.raises(InvalidParameterError, match="kappa must be one of"):
        GOptimalDPDB(np.eye(2), 10, 1.0, kappa="huge")
    with pytest.raises(InvalidParameterError, match="kappa must lie in"):
        GOptimalDPDB(np.eye(2), 10, 1.0, kappa=0.5)
    with pytest.raises(InvalidParameterError, match="feedback must be one of"):
        simulate_goptimal_dpdb(finite_instance("f1"), n_trials=1, rng=0, horizon=10, epsilon=1.0, feedback="x")


@pytest.mark.parametrize("epsilon", [math.inf, 0.5])
def test_play_counts_make_the_lemma7_width_at_most_the_phase_accuracy(epsilon: float) -> None:
    env = unit_ball_environment([0.6, 0.8], net="sphere", n_points=16)
    settings = _settings(env.n_arms, 10**7, epsilon, None, "slope_at_theta", 1.0, 0.01, 2.0, 1.0)
    active = np.arange(env.n_arms)
    for phase in (1, 2, 3):
        plan = _plan_phase(env.features, active, phase, settings)
        assert plan is not None
        wins = plan.counts / 2.0
        active, _ = _finish_phase(plan, wins, env.features, active, settings)
        diagnostics = plan.diagnostics
        # Corollary 2 by construction: t >= π·N gives ‖z‖²_{V⁻¹} <= g/N, each half of the width <= ε_ℓ/2
        assert diagnostics["confidence_width"] <= diagnostics["accuracy"] * (1 + 1e-9)
        assert diagnostics["confidence_width"] >= 0.25 * diagnostics["accuracy"]
        assert isinstance(diagnostics["lambda_min_ok"], bool)


def test_lambda_min_check_modes() -> None:
    env = unit_ball_environment([0.6, 0.8], n_points=32)
    warn, enforce, off = (GOptimalDPDB(env.features, 10**8, 1.0, lambda_min_check=mode, rng=0)
                          for mode in ("warn", "enforce", "off"))
    first = warn.phases[0].diagnostics
    # the paper's schedule misses Li et al.'s condition in phase 1 (errata DUEL-12) ...
    lambda_min, required = _lambda_min_condition(warn.phases[0].coordinates, warn.phases[0].counts, warn.settings)
    assert lambda_min < required
    # ... "enforce" raises N_1 until it holds (the design, hence the ratio, is unchanged) ...
    forced = enforce.phases[0]
    lambda_min, required = _lambda_min_condition(forced.coordinates, forced.counts, enforce.settings)
    assert lambda_min >= required and forced.diagnostics["N_enforcement_factor"] > 1.0
    assert forced.diagnostics["N"] == pytest.approx(first["N"] * forced.diagnostics["N_enforcement_factor"])
    capped = GOptimalDPDB(env.features, 200_000, 1.0, lambda_min_check="enforce", rng=0).phases[0]
    assert capped.diagnostics["N"] == 200_000  # N_ℓ is capped at the horizon
    # ... and "off" keeps the schedule of "warn" without computing the condition
    np.testing.assert_array_equal(off.phases[0].counts, warn.phases[0].counts)
    play = {"warn": warn, "off": off}
    for mode, agent in play.items():  # finish phase 1: only "warn" records the condition
        while len(agent.phases) == 1:
            pair = agent.ask()
            agent.tell(pair, first_wins=True)
        assert ("lambda_min_ok" in agent.phases[0].diagnostics) == (mode == "warn")
    assert warn.phases[0].diagnostics["lambda_min_ok"] is False
    with pytest.raises(InvalidParameterError, match="lambda_min_check must be one of"):
        GOptimalDPDB(env.features, 100, 1.0, lambda_min_check="strict")
