"""Up-front cost checks: oversized studies are refused with one line naming the parameter and the limit."""

from __future__ import annotations

from typing import Any

import pytest

from dpbandits._core.errors import StudyError
from dpbandits.experiments.bundled import list_bundled_studies, load_bundled_study
from dpbandits.experiments.config import Study
from dpbandits.experiments.costs import MAX_CPU_SECONDS, check_study_cost, memory_limit

GB = 1e9


def _bai(algorithm: dict[str, Any], budget: int, trials: int = 10, **changes: Any) -> Study:
    environment = ({"name": "dp-bai-section5", "n_arms": 10} if "bai" in algorithm["name"] or "od" in algorithm["name"]
                   else {"name": "bernoulli", "means": [0.7, 0.5]})
    return Study.from_mapping({"name": "cost", "seed": 1, "trials": trials, "environment": environment,
                               "algorithms": [algorithm], "grid": {"budget": [budget]}, **changes})


def _one_line(exc: pytest.ExceptionInfo[StudyError]) -> str:
    message = str(exc.value)
    assert "\n" not in message
    return message


@pytest.mark.parametrize("trials", [10**12, 10**20])
def test_oversized_trials_are_refused_naming_trials(trials: int) -> None:
    with pytest.raises(StudyError) as caught:
        check_study_cost(_bai({"name": "uniform"}, 100, trials=trials), limit_bytes=16 * GB)
    message = _one_line(caught)
    assert message.startswith(f"trials: {trials} trials per cell need at least")
    assert "more than the 16 GB of memory available here" in message


@pytest.mark.parametrize("algorithm", [{"name": "dp-bai", "epsilon": 1.0}, {"name": "od-linbai"},
                                       {"name": "uniform", "reward_draws": "streams"}])
def test_a_budget_that_draws_every_pull_is_refused(algorithm: dict[str, Any]) -> None:
    with pytest.raises(StudyError) as caught:
        check_study_cost(_bai(algorithm, 10**14), limit_bytes=16 * GB)
    message = _one_line(caught)
    assert message.startswith("budget: 100000000000000 (algorithm ")
    assert "lower budget, chunk_size or --workers" in message


def test_a_budget_of_exact_sums_is_cheap_and_accepted() -> None:
    check_study_cost(_bai({"name": "sequential-halving"}, 10**14), limit_bytes=16 * GB)


def test_workers_multiply_the_memory_of_tasks() -> None:
    study = _bai({"name": "dp-bai", "epsilon": 1.0}, 10**8, trials=4)  # 3.2 GB per task of 4 trials
    check_study_cost(study, workers=1, limit_bytes=16 * GB)
    with pytest.raises(StudyError, match=r"to run 8 tasks of 4 trials at once"):
        check_study_cost(study, workers=8, limit_bytes=16 * GB)


def test_a_horizon_beyond_any_cpu_time_is_refused_naming_horizon() -> None:
    # (rucb's own precheck refuses such a horizon at validation already; GOptimal-DPDB has no per-round
    # limit, so this is the cost model's refusal)
    study = Study.from_mapping({"name": "cost", "seed": 1, "trials": 20, "environment": {"name": "dueling-f1"},
                                "algorithms": [{"name": "goptimal-dpdb-nonprivate"}], "grid": {"horizon": [10**18]}})
    with pytest.raises(StudyError) as caught:
        check_study_cost(study, limit_bytes=16 * GB)
    message = _one_line(caught)
    assert message.startswith("horizon: 1000000000000000000 makes the study need at least")
    assert f"more than the {MAX_CPU_SECONDS / (365.25 * 86400):.3g} CPU-years a run may take" in message


def test_tiny_chunks_and_huge_grids_are_refused() -> None:
    with pytest.raises(StudyError, match=r"^chunk_size: 1 with trials = 100000000 makes 100,000,000 tasks"):
        check_study_cost(_bai({"name": "uniform"}, 100, trials=10**8, chunk_size=1), limit_bytes=4 * GB)
    wide = {"name": "cost", "seed": 1, "trials": 1, "environment": {"name": "bernoulli", "means": [0.7, 0.5]},
            "algorithms": [{"name": "uniform"}],
            "grid": {"budget": list(range(1, 1001)), "reward_draws": ["sums"] * 1000}}
    with pytest.raises(StudyError, match=r"^grid: 1,000,000 cells"):
        check_study_cost(Study.from_mapping(wide), limit_bytes=0.1 * GB)


@pytest.mark.parametrize("name", [study.name for study in list_bundled_studies()])
def test_every_bundled_study_passes_the_cost_check(name: str) -> None:
    assert memory_limit() > 0
    check_study_cost(load_bundled_study(name), workers=2)


def test_too_many_local_worker_processes_are_refused() -> None:
    with pytest.raises(StudyError, match=r"^workers: 100000 worker processes need at least 1.3 TB, more than"):
        check_study_cost(_bai({"name": "uniform"}, 100), workers=100_000, local_processes=100_000,
                         limit_bytes=16 * GB)


def test_worker_processes_memory_adds_to_their_tasks() -> None:
    """13 MB per local worker process (their measured PSS) is held beside the tasks' memory."""
    study = _bai({"name": "dp-bai", "epsilon": 1.0}, 2 * 10**6)  # 8 B per pull: 160 MB for a task of 10 trials
    check_study_cost(study, workers=1, local_processes=0, limit_bytes=200e6)
    with pytest.raises(StudyError, match=r"^budget: 2000000 .* to run a task of 10 trials in 4 worker processes"):
        check_study_cost(study, workers=1, local_processes=4, limit_bytes=200e6)


@pytest.mark.parametrize(("environment", "algorithm"), [("offline-linear", "kl-linear"),
                                                         ("offline-preferences", "kl-rlhf")])
def test_an_offline_dimension_that_cannot_fit_is_refused(environment: str, algorithm: str) -> None:
    # d = 10⁶: the d x d covariance (8 TB) ran out of memory (linear) or ran for minutes (preferences)
    study = Study.from_mapping({"name": "d", "seed": 1, "trials": 2,
                                "environment": {"name": environment, "dimension": 10**6, "n_records": 10},
                                "algorithms": [{"name": algorithm}], "grid": {"eta": [1.0]}})
    with pytest.raises(StudyError, match=r"^dimension: 1000000 \(algorithm .* needs at least 8 TB"):
        check_study_cost(study, limit_bytes=16 * GB)
    small = Study.from_mapping({**study.model_dump(), "environment": {"name": environment, "dimension": 4,
                                                                       "n_records": 10}})
    check_study_cost(small, limit_bytes=16 * GB)


def test_a_kernel_horizon_whose_contexts_cannot_fit_is_refused() -> None:
    # T = 10¹²: a trial's T contexts (8 TB) ended in "out of memory" inside the run
    study = Study.from_mapping({"name": "t", "seed": 1, "trials": 2,
                                "environment": {"name": "kernel-rkhs", "action_dim": 1, "context_dim": 1},
                                "algorithms": [{"name": "usca", "epsilon": 1.0}], "grid": {"horizon": [10**12]}})
    with pytest.raises(StudyError, match=r"^horizon: 1000000000000 \(algorithm 'usca'.* needs at least 8 TB"):
        check_study_cost(study, limit_bytes=16 * GB)
