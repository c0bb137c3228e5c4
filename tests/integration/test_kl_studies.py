"""Study entry points of the offline KL family and the bundled kl-* studies."""

from __future__ import annotations

import numpy as np
import pytest

import dpbandits.audit.kl  # noqa: F401  (registers the study auditors)
from dpbandits.algorithms.registry import get_algorithm
from dpbandits.envs.registry import make_environment
from dpbandits.experiments.bundled import load_bundled_study

STUDIES = ["kl-e1-mab-decay", "kl-e2-linear-decay", "kl-e3-rlhf-label", "kl-e4-delta-k",
           "kl-e5-privacy-utility", "kl-e6-repeated"]


@pytest.mark.parametrize("name", STUDIES)
def test_bundled_kl_studies_validate(name: str) -> None:
    study = load_bundled_study(name)
    assert list(study.grid_points())


def test_kl_mab_entry_point_is_deterministic_and_audited(seed: int) -> None:
    env = make_environment("offline-bandit", means=[0.2, 0.5, 0.8], n_records=90, logging="zipf", min_pulls=2)
    simulate = get_algorithm("kl-mab").simulate
    first = simulate(env, n_trials=4, rng=np.random.SeedSequence(seed), eta=0.1, beta0=0.5, audit=True, k=4)
    again = simulate(env, n_trials=4, rng=np.random.SeedSequence(seed), eta=0.1, beta0=0.5, audit=True, k=4)
    for key, values in first.items():
        assert values.shape == (4,)
        np.testing.assert_array_equal(values, again[key])
    assert np.all(first["audit_ratio"] <= 0.5 + 1e-12)
    assert np.all(first["delta_audit"] <= first["delta_corrected"] + 1e-12)


def test_matched_epsilon_baselines_share_datasets(seed: int) -> None:
    env = make_environment("offline-bandit", means=[0.2, 0.5, 0.8], n_records=300)
    results = {
        name: get_algorithm(name).simulate(env, n_trials=3, rng=np.random.SeedSequence(seed), epsilon=1.0, beta0=0.5)
        for name in ("kl-mab", "em-mab", "rnm-mab", "laplace-greedy-mab", "greedy-mab")
    }
    np.testing.assert_allclose(results["kl-mab"]["epsilon0"], 1.0)
    assert np.all(results["greedy-mab"]["regret"] <= results["em-mab"]["regret"] + 1e-12)
    repeated = get_algorithm("kl-mab-repeated").simulate(env, n_trials=2, rng=np.random.SeedSequence(seed),
                                                         epsilon=0.1, n_samples=100)
    np.testing.assert_allclose(repeated["epsilon_advanced"], 6.308231, atol=1e-6)
    single = get_algorithm("kl-mab").simulate(env, n_trials=3, rng=np.random.SeedSequence(seed), epsilon=0.1,
                                              beta0=1.0)
    np.testing.assert_allclose(repeated["regret"], single["regret"][:2])  # same datasets, same policy


def test_linear_and_rlhf_entry_points(seed: int) -> None:
    env = make_environment("offline-linear", dimension=2, n_records=100, n_actions=5)
    out = get_algorithm("kl-linear").simulate(env, n_trials=2, rng=np.random.SeedSequence(seed), audit=True)
    assert np.all(out["epsilon_hat"] <= out["epsilon0"]) and np.all(out["epsilon0_tight"] <= out["epsilon0"])
    env = make_environment("offline-preferences", dimension=2, n_records=40, theta_norm=0.05, n_prompts=5,
                           responses_per_prompt=3, n_actions=3)
    out = get_algorithm("kl-rlhf").simulate(env, n_trials=2, rng=np.random.SeedSequence(seed), norm_bound=0.1,
                                            audit=True)
    assert np.all(out["epsilon_hat"] <= out["epsilon0_corrected"])
    assert set(np.unique(out["paper_violated"])) <= {0.0, 1.0}


def test_real_data_entry_point(seed: int) -> None:
    env = make_environment("sklearn-classification", dataset="iris", logging="noisy-oracle",
                           correct_probability=0.6)
    out = get_algorithm("kl-linear-classification").simulate(env, n_trials=2, rng=np.random.SeedSequence(seed),
                                                             eta=0.01)
    assert np.all(out["accuracy"] > 0.5)  # chance is 1/3
    assert np.all(out["epsilon0_tight_median"] <= out["epsilon0_tight_max"])
    assert np.all(out["epsilon0_tight_max"] <= out["epsilon0"])
    assert load_bundled_study("kl-real-data").name == "kl-real-data"


def test_audit_calibrated_eta_reaches_the_target_epsilon(seed: int) -> None:
    env = make_environment("offline-bandit", means=[0.2, 0.5, 0.8], n_records=300)
    out = get_algorithm("kl-mab").simulate(env, n_trials=2, rng=np.random.SeedSequence(seed), epsilon=0.5,
                                           calibration="audit", audit=True)
    np.testing.assert_allclose(out["epsilon_hat"], 0.5, rtol=1e-6)
    theorem = get_algorithm("kl-mab").simulate(env, n_trials=2, rng=np.random.SeedSequence(seed), epsilon=0.5)
    assert np.all(out["eta"] < theorem["eta"])  # tight accounting allows a smaller temperature


def test_matched_epsilon_comparisons_calibrate_from_the_public_floor_only(seed: int) -> None:
    """Regression (issue 12, defect 1): η and the baselines' noise were sized from N_min(D)."""
    from dpbandits._core.errors import InvalidParameterError

    env = make_environment("offline-bandit", means=[0.2, 0.5, 0.8], n_records=300, logging="zipf", min_pulls=10)
    kl = get_algorithm("kl-mab").simulate(env, n_trials=4, rng=np.random.SeedSequence(seed), epsilon=1.0, beta0=0.5,
                                          calibration="domain")
    assert np.all(kl["eta"] == kl["eta"][0])  # the same η whatever the dataset: no data-dependent calibration
    np.testing.assert_allclose(kl["epsilon_domain"], 1.0)
    assert np.all(kl["epsilon_tight"] <= 1.0 + 1e-12)  # every dataset lies in the domain
    for name in ("em-mab", "rnm-mab", "laplace-greedy-mab"):
        out = get_algorithm(name).simulate(env, n_trials=2, rng=np.random.SeedSequence(seed), epsilon=1.0, beta0=0.5)
        np.testing.assert_allclose(out["epsilon"], 1.0)
    no_floor = make_environment("offline-bandit", means=[0.2, 0.5, 0.8], n_records=300, logging="zipf")
    with pytest.raises(InvalidParameterError, match="min_count must be a public per-arm floor"):
        get_algorithm("rnm-mab").simulate(no_floor, n_trials=1, rng=np.random.SeedSequence(seed), epsilon=1.0)
