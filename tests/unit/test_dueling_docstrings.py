"""Every dueling entry point documents what it protects and where it comes from (issue 6, DESIGN)."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

import dpbandits.algorithms.dueling  # noqa: F401  (registers the family)
from dpbandits.algorithms.dueling.beat_the_mean import BeatTheMean
from dpbandits.algorithms.dueling.colstim import CoLSTIM
from dpbandits.algorithms.dueling.copeland_confidence_bound import CopelandConfidenceBound
from dpbandits.algorithms.dueling.double_thompson import DoubleThompsonSampling
from dpbandits.algorithms.dueling.dp_ebs_elimination import DPEBSElimination, dp_ebs_guarantee
from dpbandits.algorithms.dueling.goptimal_dpdb import (
    GOptimalDPDB,
    goptimal_dpdb_guarantee,
    private_logistic_mle,
)
from dpbandits.algorithms.dueling.interleaved_filter import InterleavedFilter
from dpbandits.algorithms.dueling.ldp_ebs_elimination import LDPEBSElimination
from dpbandits.algorithms.dueling.maxinp import MaxInP
from dpbandits.algorithms.dueling.rmed import RMED1
from dpbandits.algorithms.dueling.rucb import RUCB
from dpbandits.algorithms.dueling.theory import alg1_heuristic, alg1_upper, thm3_schedule_bound
from dpbandits.algorithms.registry import list_algorithms

DUELING = [spec for spec in list_algorithms() if spec.family == "dueling"]
OTHERS: list[Any] = [DPEBSElimination, GOptimalDPDB, LDPEBSElimination, RUCB, InterleavedFilter,
                     BeatTheMean, RMED1, DoubleThompsonSampling, CopelandConfidenceBound, MaxInP, CoLSTIM,
                     dp_ebs_guarantee, goptimal_dpdb_guarantee, private_logistic_mle,
                     alg1_heuristic, alg1_upper, thm3_schedule_bound]


def _sections(obj: Any) -> set[str]:
    lines = (inspect.getdoc(obj) or "").splitlines()
    return {lines[i].strip() for i in range(len(lines) - 1)
            if lines[i + 1].strip() and set(lines[i + 1].strip()) == {"-"}}


@pytest.mark.parametrize("spec", DUELING, ids=lambda s: s.name)
def test_registered_dueling_entry_points_have_privacy_and_references(spec: Any) -> None:
    assert {"Privacy", "References"} <= _sections(spec.simulate)


@pytest.mark.parametrize("obj", OTHERS, ids=lambda o: o.__name__)
def test_agents_guarantees_and_theory_curves_have_the_sections(obj: Any) -> None:
    needed = {"References"} if obj in (alg1_heuristic, alg1_upper, thm3_schedule_bound) else {"Privacy", "References"}
    assert needed <= _sections(obj)


COMPARATORS = ("rucb", "rmed1", "copeland-confidence-bound", "double-thompson-sampling", "beat-the-mean")


@pytest.mark.parametrize("name", COMPARATORS)
def test_the_comparators_share_one_registration_and_one_simulation(name: str) -> None:
    # written once (dueling/_rounds.py): the registry fields and the simulation's checks and loop
    from dpbandits.algorithms.dueling._rounds import COMPARATOR_METRICS
    from dpbandits.algorithms.registry import get_algorithm

    spec = get_algorithm(name)
    assert spec.privacy == "none (non-private)" and spec.metrics[: len(COMPARATOR_METRICS)] == COMPARATOR_METRICS
    assert "identified_best" in spec.proportion_metrics and spec.precheck is not None
    source = inspect.getsource(spec.simulate)
    assert "@register_comparator(" in source and "simulate_comparator(" in source
    assert "check_pairwise_state" not in source and "family=" not in source
    assert "env, n_trials, rng, horizon\n" in (inspect.getdoc(spec.simulate) or "")  # documented once, not four times
