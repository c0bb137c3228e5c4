"""Every bundled study runs on the serial, process and dask backends and gives identical summaries.

Each study is scaled down (:meth:`Study.scaled_down`: 2 trials in 2 chunks, its first grid points,
small horizons / data sets) so that the whole file takes seconds per study; what is checked is that
every task pickles to worker processes (functions defined inside functions do not) and that the
results do not depend on the backend.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dpbandits.envs.registry import get_environment
from dpbandits.experiments.backends import DaskBackend, ProcessBackend, SerialBackend
from dpbandits.experiments.bundled import list_bundled_studies, load_bundled_study
from dpbandits.experiments.config import Study
from dpbandits.experiments.runner import run_study

pytestmark = pytest.mark.slow  # every bundled study on every backend

NAMES = [study.name for study in list_bundled_studies()]

# Small sizes per environment kind: enough to run every code path of the task, nothing more.
SMALL_PARAMETERS: dict[str, dict[str, Any]] = {
    "dueling": {"horizon": 600},
    "kernel": {"horizon": 10, "grid_points_per_dim": 16, "n_test_contexts": 2, "n_features": 6},
    "offline": {"n_records": 60, "min_pulls": 5, "mc_samples": 100, "n_prompts": 20, "n_samples": 2},
}


def small_study(name: str) -> Study:
    study = load_bundled_study(name)
    kind = get_environment(study.environment.name).kind
    return study.scaled_down(trials=2, max_points=1 if kind == "kernel" else 2,
                             parameters=SMALL_PARAMETERS.get(kind, {}))


@pytest.fixture(scope="module")
def dask_scheduler() -> Iterator[str]:
    """One local cluster of worker *processes* (tasks are pickled to them), shared by the module."""
    import dask
    from distributed import LocalCluster

    # generous start-up timeouts: on a loaded 2-core machine the workers' imports can take a while
    with dask.config.set({"distributed.comm.timeouts.connect": "120s", "distributed.deploy.lost-worker-timeout": "120s"}), \
            LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                         timeout="120s") as cluster:
        yield cluster.scheduler_address


@pytest.fixture(scope="module")
def process_backend() -> Iterator[ProcessBackend]:
    """One pool of warm workers for every study of the module (the runner's ``with`` nests in it)."""
    with ProcessBackend(workers=2) as backend:
        yield backend


@pytest.mark.filterwarnings("ignore::dpbandits._core.errors.PaperVariantWarning")
@pytest.mark.parametrize("name", NAMES)
def test_bundled_study_gives_identical_summaries_on_every_backend(
    name: str, tmp_path: Path, dask_scheduler: str, process_backend: ProcessBackend
) -> None:
    study = small_study(name)
    backends = {
        "serial": SerialBackend(),
        "process": process_backend,
        "dask": DaskBackend(scheduler=dask_scheduler),
    }
    summaries = {}
    for backend_name, backend in backends.items():
        result = run_study(study, tmp_path / backend_name, backend=backend, progress="none")
        assert result.status == "complete", (backend_name, result.status)
        summaries[backend_name] = result.summary_path.read_bytes()
    assert summaries["serial"].count(b"\n") == len(study.cells()) + 1
    assert summaries["process"] == summaries["serial"]
    assert summaries["dask"] == summaries["serial"]


def test_scaled_down_study_keeps_the_first_points_and_sets_small_sizes() -> None:
    study = load_bundled_study("dueling-smoke")
    small = study.scaled_down(trials=3, max_points=2, parameters={"horizon": 500, "link": "probit"})
    assert small.trials == 3 and small.chunk_size == 2 and small.analyses == []
    assert [point["horizon"] for point in small.grid_points()] == [500, 500]
    assert [point["epsilon"] for point in small.grid_points()] == [p["epsilon"] for p in study.grid_points()[:2]]
    assert small.environment.params["link"] == "probit"  # accepted by the environment, not given before
