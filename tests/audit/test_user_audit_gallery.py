"""The audit searches for the violation: a gallery of broken algorithms, each written as a user would.

Each broken algorithm of :mod:`user_gallery` passed the audit before it searched (its pairs changed
only an arm's first reward, on symmetric tables); each must now be REFUTED, and the correct twins
never. The suite runs the audits with a smaller search than the default (``BUDGET``) on the seeded path
with fixed seeds, so that it stays fast and deterministic; the default settings (``dpbandits audit``
without options, unseeded) refute each of them too, in a few minutes each on two cores.

False-failure rates: a REFUTED verdict on a correct algorithm has probability at most 1 −
``confidence`` (0.95 here) per audit; with fixed seeds every outcome here is deterministic.
"""

from __future__ import annotations

import math

import pytest
import user_gallery as gallery

from dpbandits._core.errors import InvalidParameterError
from dpbandits.audit.user import audit_algorithm

AGENT = {"epsilon": 1.0, "n_arms": 3, "params": {"budget": 24}}
BUDGET = {"search_runs": 20, "climb": 2, "certify_pairs": 2, "runs": 400}


DUELING = {"epsilon": 1.0, "n_arms": 3, "params": {"horizon": 24}}
POLICY = {"epsilon": 1.0, "n_arms": 3, "params": {"min_count": 2}}
SIX_ARMS = {"epsilon": 1.0, "n_arms": 6, "params": {"budget": 12}}


@pytest.mark.parametrize(("broken", "options"), [
    pytest.param(gallery.ExactFinalPhase, AGENT, id="final phase on exact sums"),
    pytest.param(gallery.RawMeansRecommendation, AGENT, id="raw means in the recommendation"),
    pytest.param(gallery.LargestRewardScale, AGENT, id="largest reward as sensitivity"),
    pytest.param(gallery.ExactGapStop, AGENT, id="exact-gap stop at 0.5"),
    pytest.param(gallery.HalfClaimRelease, AGENT, id="claims half its epsilon"),
    pytest.param(gallery.TreatmentArmReport, SIX_ARMS, id="raw mean of arm 5 of 6 reported"),
    pytest.param(gallery.RawFinalDueling, DUELING, id="dueling final on raw wins (label unit)"),
    pytest.param(gallery.PopularArmPolicy, POLICY, id="argmax of raw counts (record unit)"),
])
@pytest.mark.statistical
@pytest.mark.slow
def test_every_broken_algorithm_of_the_gallery_is_refuted(broken: type, options: dict) -> None:
    report = audit_algorithm(broken, rng=7, seeded_noise=True, **BUDGET, **options)  # seeded: deterministic
    assert report.refuted and report.epsilon_lower_bound > report.epsilon, str(report)
    assert str(report).startswith("REFUTED") and report.to_dict()["verdict"] == "REFUTED"


ONE_PAIR = {"seeded_noise": True, "search_runs": 20, "climb": 0, "certify_pairs": 1, "runs": 100}


def _worst(report):
    return max(report.certified, key=lambda item: item.epsilon_lower_bound).pair


@pytest.mark.statistical
def test_a_bug_hidden_on_arm_5_of_6_is_found_by_the_structured_search() -> None:
    """With K = 6 the bases change every arm between them (no hill-climb here): arm 4's raw mean is caught."""
    report = audit_algorithm(gallery.TreatmentArmReport, rng=5, **ONE_PAIR, **SIX_ARMS)
    assert report.refuted, str(report)
    assert "R[4, " in _worst(report), _worst(report)


@pytest.mark.parametrize("n_arms", [5, 6, 7, 13, 40, 200])
def test_the_reward_search_changes_every_arm_across_its_bases(n_arms: int) -> None:
    import numpy as np

    from dpbandits.audit.user_inputs import search_bases, search_points

    bases = search_bases("reward", n_arms, 4, rng=np.random.default_rng(0))
    pulls = np.zeros((10, n_arms), dtype=np.int64) + 1
    changed = {point.change[0] for index, (name, base) in enumerate(bases)
               for point in search_points("reward", name, base, pulls, slot=(index, len(bases)))}
    assert changed == set(range(n_arms))


@pytest.mark.statistical
@pytest.mark.slow
def test_a_dueling_bug_in_the_second_half_is_found_by_flipping_a_late_label() -> None:
    """The final on raw wins: only a user of the second half (round > 12 of 24) shows it."""
    report = audit_algorithm(gallery.RawFinalDueling, rng=3, **ONE_PAIR, **DUELING)
    assert report.refuted, str(report)
    round_flipped = int(_worst(report).split("round ")[1].split(" ")[0])
    assert round_flipped > 12, _worst(report)


@pytest.mark.statistical
@pytest.mark.slow
def test_a_rule_on_raw_record_counts_is_found() -> None:
    report = audit_algorithm(gallery.PopularArmPolicy, rng=3, **ONE_PAIR, **POLICY)
    assert report.refuted, str(report)


@pytest.mark.slow
def test_a_bug_in_the_last_phase_is_found_by_changing_a_late_reward() -> None:
    """Final phase on exact means: only a reward of the last phase shows it (the first pull never does)."""
    report = audit_algorithm(gallery.ExactFinalPhase, epsilon=1.0, n_arms=3, params={"budget": 12}, rng=3,
                             seeded_noise=True, search_runs=20, climb=0, certify_pairs=1, runs=200)
    assert report.refuted, str(report)
    worst = max(report.certified, key=lambda item: item.epsilon_lower_bound)
    position = int(worst.pair.split("pull ")[1].split(")")[0])
    assert position > 1, worst.pair  # a later pull than the first


def test_a_run_budget_that_cannot_finish_is_refused_up_front() -> None:
    with pytest.raises(InvalidParameterError, match=r"runs = 1000000000000: .* more than the \d"):
        audit_algorithm(gallery.PrivateHalving, runs=10**12, **AGENT)
    with pytest.raises(InvalidParameterError, match=r"search_runs = 1000000000: the audit plans about .* more than "
                                                    r"the limit of 1 minutes"):
        audit_algorithm(gallery.PrivateHalving, search_runs=10**9, max_seconds=60, **AGENT)


SMALL_AGENT = {"epsilon": 1.0, "n_arms": 2, "params": {"budget": 12}}
CORRECT = [
    pytest.param(gallery.PrivateHalving, {**AGENT, "params": {"budget": 12}}, id="private successive halving"),
    pytest.param(gallery.LaplaceMeanRelease, SMALL_AGENT, id="LaplaceMechanism release (seeded floats)"),
    pytest.param(gallery.PrivateDuelingFinal, {**DUELING, "params": {"horizon": 12}},
                 id="private dueling tournament (label unit)"),
    pytest.param(gallery.NoisyMeanPolicy, POLICY, id="noisy-mean policy (record unit)"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("correct", "options"), CORRECT)
def test_correct_algorithms_are_never_refuted_in_20_repeated_audits(correct: type, options: dict) -> None:
    small = {"search_runs": 10, "climb": 0, "certify_pairs": 1, "runs": 100}
    for seed in range(20):
        report = audit_algorithm(correct, seeded_noise=True, rng=seed, **small, **options)
        assert not report.refuted, f"seed {seed}: {report}"
        assert report.float_attacks == ()  # never on the seeded path, where NumPy floats are expected
        assert math.isfinite(report.epsilon_lower_bound)


def test_the_command_refuses_an_impossible_run_budget_in_one_line() -> None:
    import os
    import subprocess
    import sys
    from pathlib import Path

    here = str(Path(__file__).resolve().parent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([here, os.environ.get("PYTHONPATH", "")])}
    env.pop("DPBANDITS_DEBUG", None)
    result = subprocess.run([sys.executable, "-m", "dpbandits", "audit", "user_gallery:PrivateHalving", "--epsilon",
                             "1", "--param", "budget=24", "--runs", str(10**12)], env=env, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 1, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: runs = 1000000000000: "), result.stderr
