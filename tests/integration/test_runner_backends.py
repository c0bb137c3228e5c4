"""The same study gives identical results on the serial, process and dask backends."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from dpbandits._core.errors import InvalidParameterError
from dpbandits.experiments.backends import (
    DaskBackend,
    ProcessBackend,
    SerialBackend,
    fork_is_safe,
    make_backend,
)
from dpbandits.experiments.config import Study
from dpbandits.experiments.runner import run_study


def _study(seed: int) -> Study:
    return Study.from_mapping({
        "name": "backends",
        "seed": seed,
        "trials": 90,
        "chunk_size": 20,  # 5 chunks per cell, the last one short
        "environment": {"name": "uniform", "means": [0.6, 0.5, 0.45, 0.4, 0.35]},
        "algorithms": [{"name": "uniform"}, {"name": "sequential-halving", "reward_draws": "streams"}],
        "grid": {"budget": [15, 60], "reuse_samples": [False, True]},
    })


def _cells(run_dir: Path) -> dict[str, dict[str, np.ndarray]]:
    out = {}
    for path in sorted((run_dir / "cells").glob("*.npz")):
        with np.load(path) as data:
            out[path.name] = {key: data[key] for key in data.files}
    return out


@pytest.mark.slow
def test_serial_process_and_dask_give_identical_results(tmp_path: Path, seed: int) -> None:
    study = _study(seed)
    backends = {
        "serial": SerialBackend(),
        "process": ProcessBackend(workers=2, max_pending=3, startup_seconds=1e-6),  # the pool, even for a small study
        "dask": DaskBackend(workers=2, processes=False),
    }
    results = {name: run_study(study, tmp_path / name, backend=backend, progress="none")
               for name, backend in backends.items()}
    assert all(result.status == "complete" for result in results.values())
    reference_summary = (tmp_path / "serial" / "summary.csv").read_bytes()
    reference_cells = _cells(tmp_path / "serial")
    assert len(reference_cells) == 8
    for name in ("process", "dask"):
        assert (tmp_path / name / "summary.csv").read_bytes() == reference_summary, name
        cells = _cells(tmp_path / name)
        assert cells.keys() == reference_cells.keys()
        for key, metrics in reference_cells.items():
            for metric, values in metrics.items():
                np.testing.assert_array_equal(cells[key][metric], values, err_msg=f"{name} {key} {metric}")


def test_make_backend_checks_its_arguments() -> None:
    assert make_backend("serial").name == "serial"
    assert make_backend("process", workers=3).describe()["workers"] == 3
    with pytest.raises(InvalidParameterError, match="backend must be one of"):
        make_backend("cloud")
    with pytest.raises(InvalidParameterError, match="scheduler is only used by the dask backend"):
        make_backend("process", scheduler="tcp://localhost:8786")


def test_dask_backend_connects_to_a_running_scheduler(tmp_path: Path, seed: int) -> None:
    from distributed import LocalCluster

    study = _study(seed).with_overrides(trials=30)
    serial = run_study(study, tmp_path / "serial", progress="none")
    with LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None) as cluster:
        backend = DaskBackend(scheduler=cluster.scheduler_address)
        result = run_study(study, tmp_path / "dask", backend=backend, progress="none")
    assert result.backend["scheduler"] == cluster.scheduler_address
    assert (tmp_path / "dask" / "summary.csv").read_bytes() == serial.summary_path.read_bytes()


def test_the_dask_backend_sends_tasks_in_batches_and_yields_each_task_once() -> None:
    """Issue 38: a dask task costs milliseconds of CPU in several processes, so tasks travel in batches
    (about four per worker thread), and each result still comes back under its own index."""
    from distributed import LocalCluster

    from dpbandits.experiments.backends import DASK_BATCHES_PER_THREAD, _batch_size

    assert DASK_BATCHES_PER_THREAD == 4
    assert [_batch_size(n, 2) for n in (0, 1, 8, 9, 37, 240)] == [1, 1, 1, 2, 5, 30]
    assert _batch_size(240, 0) == 60  # no thread known yet: as for one
    tasks = [-i for i in range(37)]
    notes: list[str] = []
    cluster = LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None)
    with cluster, DaskBackend(scheduler=cluster.scheduler_address) as backend:
        pairs = list(backend.map_unordered(abs, tasks, notify=notes.append))
    assert sorted(pairs) == [(i, i) for i in range(37)]
    assert notes == ["dask backend: 37 tasks in batches of 5"]


def test_a_nested_dask_block_reuses_the_outer_cluster() -> None:
    """A nested ``with`` (the runner's, inside the caller's) once started a second cluster and left the
    first one open; it now reuses the outer cluster, which only the outer block closes."""
    backend = DaskBackend(workers=1, processes=False)
    with backend:
        client = backend._client
        with backend:
            assert backend._client is client
            assert dict(backend.map_unordered(abs, [-3, 4])) == {0: 3, 1: 4}
        assert backend._client is client and client.status == "running"
        assert dict(backend.map_unordered(abs, [-5])) == {0: 5}
    assert backend._client is None and client.status == "closed"


@pytest.mark.slow
def test_a_local_dask_cluster_keeps_glibcs_malloc_defaults_in_its_workers() -> None:
    """dask's MALLOC_TRIM_THRESHOLD_ (set in every worker it spawns) made each large temporary array an
    mmap/munmap pair (Figure 1: 2.2 s of system time instead of 0.5 s). Our local cluster leaves it unset."""
    import os

    with DaskBackend(workers=1) as backend:
        found = backend._client.run(lambda: os.environ.get("MALLOC_TRIM_THRESHOLD_"))
        profiling = backend._client.run(lambda dask_worker: "profile" in dask_worker.periodic_callbacks)
    assert list(found.values()) == [None]
    assert list(profiling.values()) == [False]  # no stack sampling every 10 ms in a worker


@pytest.mark.slow
def test_a_dask_cluster_started_earlier_in_the_process_does_not_hand_its_trim_threshold_to_ours(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A dask nanny writes MALLOC_TRIM_THRESHOLD_ into its own process's environment: after any earlier
    local cluster in this process (the user's, or one with dask's defaults) the variable is there, and
    every later worker inherited it (this test failed inside the whole suite for that reason)."""
    import os

    import dask

    dasks = dask.config.get("distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_")
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", str(dasks))  # what an earlier cluster leaves behind
    with DaskBackend(workers=1) as backend:
        found = backend._client.run(lambda: os.environ.get("MALLOC_TRIM_THRESHOLD_"))
    assert list(found.values()) == [None]
    assert os.environ["MALLOC_TRIM_THRESHOLD_"] == str(dasks)  # put back for whoever set it


def test_the_process_backend_runs_a_small_study_here_and_says_so(tmp_path: Path, seed: int) -> None:
    """Issue 17: never slower than serial — a study too small for the pool to gain runs in this process."""
    notes: list[str] = []

    class Notes:
        def start(self, **_: int) -> None: ...
        def advance(self, **_: int) -> None: ...
        def close(self) -> None: ...
        def note(self, text: str) -> None:
            notes.append(text)

    # a forkserver pool (a forked one starts with the backend, in milliseconds: see the tests below)
    backend = ProcessBackend(workers=2, startup_seconds=60.0, start_method="forkserver")
    result = run_study(_study(seed), tmp_path / "small", backend=backend, progress=Notes())
    assert result.status == "complete" and backend.ran_here == len(_study(seed).cells()) * _study(seed).n_chunks()
    assert len(notes) == 1 and "ran the" in notes[0] and "in this process" in notes[0]
    notes.clear()
    forced = ProcessBackend(workers=2, startup_seconds=1e-6, batch_seconds=10.0,  # the pool, batches of tasks
                            start_method="forkserver")
    run_study(_study(seed), tmp_path / "forced", backend=forced, progress=Notes())
    # tasks run here while the workers start (at least the one that timed the work), the rest on the pool
    total = len(_study(seed).cells()) * _study(seed).n_chunks()
    assert 1 <= forced.ran_here <= total and len(notes) == 1 and "worker processes" in notes[0]
    if forced.ran_here < total - 4:  # at least 2 tasks per worker were left: they travel in batches
        assert "in batches of" in notes[0] and "run here, while the workers started" in notes[0]
    assert (tmp_path / "forced" / "summary.csv").read_bytes() == (tmp_path / "small" / "summary.csv").read_bytes()


_FORKED_RUN = """
import json, os, sys
from pathlib import Path
from dpbandits.experiments.backends import ProcessBackend
from dpbandits.experiments.config import Study
from dpbandits.experiments.runner import run_study

def parent_of(pid):
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])

class Notes:
    notes, parents = [], []
    def start(self, **_): ...
    def advance(self, **_): ...
    def close(self): ...
    def note(self, text):  # called while the pool is up: who started its workers?
        self.notes.append(text)
        self.parents.extend(parent_of(pid) for pid in getattr(backend._pool, "_processes", None) or {})

backend = ProcessBackend(workers=2, batch_seconds=1e-3)
result = run_study(Study.from_mapping(json.loads(sys.argv[1])), sys.argv[2], backend=backend, progress=Notes())
print(json.dumps({"notes": Notes.notes, "forked_here": Notes.parents == [os.getpid()] * 2,
                  "status": result.status}))
"""


@pytest.mark.skipif(sys.platform != "linux", reason="workers are forked on Linux only")
def test_a_single_threaded_process_forks_its_workers_before_the_runs_threads(tmp_path: Path, seed: int) -> None:
    """Issue 38: no fork server to start (a second interpreter importing the library again): the
    workers are forked as the runner enters the backend, before the progress display and the cell
    writer start their threads; results are those of the serial backend. A fresh interpreter (no
    thread left by earlier tests) that prints every warning: Python 3.12 warns when a process with
    other threads forks."""
    study = _study(seed)
    mapping = {"name": "backends", "seed": seed, "trials": 90, "chunk_size": 20,
               "environment": {"name": "uniform", "means": [0.6, 0.5, 0.45, 0.4, 0.35]},
               "algorithms": [{"name": "uniform"}, {"name": "sequential-halving", "reward_draws": "streams"}],
               "grid": {"budget": [15, 60], "reuse_samples": [False, True]}}
    assert Study.from_mapping(mapping) == study
    completed = subprocess.run([sys.executable, "-W", "always", "-c", _FORKED_RUN, json.dumps(mapping),
                                str(tmp_path / "forked")], capture_output=True, text=True, timeout=120)
    assert completed.returncode == 0 and "Warning" not in completed.stderr, completed.stderr
    report = json.loads(completed.stdout)
    assert report["status"] == "complete" and report["forked_here"], report
    assert len(report["notes"]) == 1 and "(1 run here, to time the tasks)" in report["notes"][0], report
    manifest = json.loads((tmp_path / "forked" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["sessions"][-1]["start_method"] == "fork"
    serial = run_study(study, tmp_path / "serial", progress="none")
    assert (tmp_path / "forked" / "summary.csv").read_bytes() == serial.summary_path.read_bytes()


def test_a_process_with_another_thread_is_not_forked() -> None:
    """A thread could hold a lock at the fork, held forever in the child: then the pool starts from a
    fork server, and a ``fork`` asked for is refused in one line."""
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait, name="another thread")
    thread.start()
    try:
        assert not fork_is_safe()
        with pytest.raises(InvalidParameterError, match="start_method 'fork' needs"):
            ProcessBackend(workers=2, start_method="fork").__enter__()
        backend = ProcessBackend(workers=2)
        assert backend.describe()["start_method"] in ("forkserver", "spawn")
        with backend:
            assert backend._pool is None  # nothing forked: a forkserver pool starts when work needs it
    finally:
        stop.set()
        thread.join()
    with pytest.raises(InvalidParameterError, match="start_method"):
        ProcessBackend(start_method="threads")
