"""A run killed with SIGKILL loses only the cells in flight, leaves no corrupt file, and resumes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from dpbandits.experiments.config import load_study
from dpbandits.experiments.runner import make_tasks, run_study, run_task

STUDY = """
name = "kill-me"
seed = {seed}
trials = 300
chunk_size = 100

[environment]
name = "uniform"
means = [0.6, 0.5, 0.45, 0.4, 0.35, 0.3, 0.25, 0.2]

[[algorithms]]
name = "sequential-halving"
reward_draws = "streams"

[[algorithms]]
name = "uniform"
reward_draws = "streams"

[grid]
budget = [4000, 4100, 4200, 4300, 4400, 4500, 4600, 4700, 4800, 4900, 5000, 5100, 5200, 5300, 5400, 5500]
"""


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX SIGKILL")
@pytest.mark.slow
def test_sigkilled_run_resumes_without_losing_finished_cells(tmp_path: Path, seed: int) -> None:
    study_file = tmp_path / "study.toml"
    study_file.write_text(STUDY.format(seed=seed), encoding="utf-8")
    run_dir = tmp_path / "run"
    env = {**os.environ, "MPLBACKEND": "Agg"}
    process = subprocess.Popen(
        [sys.executable, "-m", "dpbandits", "run", str(study_file), "--out", str(run_dir),
         "--progress", "none", "--no-plot"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env,
    )
    cells_dir = run_dir / "cells"
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline and process.poll() is None:
            if cells_dir.is_dir() and any(cells_dir.glob("p*.npz")):  # kill at the first durable cell
                break
            time.sleep(0.01)
        still_running = process.poll() is None
        process.send_signal(signal.SIGKILL)
    finally:
        process.wait(timeout=60)
        if process.stderr is not None:
            process.stderr.close()
    assert still_running, "the run finished before it could be killed; make the study larger"

    # Nothing corrupt: every cell file loads completely, the manifest is valid JSON of this study.
    study = load_study(study_file)
    finished_before = sorted(path.stem for path in cells_dir.glob("p*.npz"))
    assert 1 <= len(finished_before) < len(study.cells()), "every cell was done before the kill: make the study larger"
    for name in finished_before:
        with np.load(cells_dir / f"{name}.npz") as data:
            assert all(data[key].shape == (300,) for key in ("success", "simple_regret"))
    manifest = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["study_digest"] == study.digest()
    assert manifest["status"] == "running"  # killed: the session never recorded its end
    saved = {name: (cells_dir / f"{name}.npz").read_bytes() for name in finished_before}

    result = run_study(study, run_dir, resume=True, progress="none")
    assert result.status == "complete"
    assert result.cells_skipped == len(finished_before)
    assert result.cells_run == len(study.cells()) - len(finished_before)
    assert not list(cells_dir.glob(".tmp-*")) and not list(run_dir.glob(".tmp-*"))
    for name, content in saved.items():  # finished cells were kept, not recomputed
        assert (cells_dir / f"{name}.npz").read_bytes() == content

    # The resumed numbers are the uninterrupted run's: recompute one kept and one resumed cell.
    cells = {cell.key: cell for cell in study.cells()}
    resumed = sorted(set(cells) - set(finished_before))
    for key in (finished_before[0], resumed[-1]):
        tasks = make_tasks(study, [cells[key]])
        expected = np.concatenate([run_task(task).values["success"] for task in tasks])
        with np.load(cells_dir / f"{key}.npz") as data:
            np.testing.assert_array_equal(data["success"], expected)
