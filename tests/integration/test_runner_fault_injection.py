"""Fault injection: a process-backend run killed with SIGKILL or SIGTERM at a random point resumes to
the same bytes, and no process of the killed run is left alive (workers, fork server, resource tracker).

Each case starts ``dpbandits run --backend process`` in a subprocess whose environment carries a
unique marker; every process of the run inherits it, so the survivors of the kill are found by
scanning ``/proc`` for the marker, including orphans that were re-parented to init.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import numpy as np
import pytest
from runprocesses import wait_until_gone

from dpbandits.experiments.config import load_study
from dpbandits.experiments.runner import run_study
from dpbandits.experiments.store import is_in_use

STUDY = """
name = "fault-injection"
seed = {seed}
trials = 160
chunk_size = 40

[environment]
name = "uniform"
means = [0.6, 0.5, 0.45, 0.4, 0.35, 0.3]

[[algorithms]]
name = "sequential-halving"
reward_draws = "streams"

[[algorithms]]
name = "uniform"
reward_draws = "streams"

[grid]
budget = [3000, 3100, 3200, 3300, 3400, 3500, 3600, 3700]
"""

pytestmark = pytest.mark.skipif(not (sys.platform.startswith("linux") and Path("/proc/self/environ").exists()),
                                reason="finds the run's processes through /proc")


@pytest.mark.parametrize("kill_signal", [signal.SIGKILL, signal.SIGTERM, signal.SIGKILL, signal.SIGTERM],
                         ids=["sigkill-1", "sigterm-1", "sigkill-2", "sigterm-2"])
@pytest.mark.slow
def test_killed_process_run_leaves_no_process_and_resumes_to_the_same_summary(
    tmp_path: Path, seed: int, kill_signal: signal.Signals
) -> None:
    rng = np.random.default_rng(seed)
    study_file = tmp_path / "study.toml"
    study_file.write_text(STUDY.format(seed=seed), encoding="utf-8")
    study = load_study(study_file)
    reference = run_study(study, tmp_path / "reference", progress="none").summary_path.read_bytes()

    marker = f"DPBANDITS_FAULT_INJECTION={uuid.uuid4().hex}"
    run_dir = tmp_path / "run"
    env = {**os.environ, "MPLBACKEND": "Agg", marker.split("=")[0]: marker.split("=")[1]}
    process = subprocess.Popen(
        [sys.executable, "-m", "dpbandits", "run", str(study_file), "--out", str(run_dir), "--backend", "process",
         "--workers", "2", "--progress", "none", "--no-plot"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env,
    )
    try:
        deadline = time.monotonic() + 60
        while not (run_dir / "manifest.json").exists() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(float(rng.uniform(0.0, 1.5)))  # a random point of the run: before, between or in cells
        process.send_signal(kill_signal)
        _, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    survivors = wait_until_gone(marker, timeout=5.0)
    for pid in survivors:  # do not leave them to the next test either
        os.kill(pid, signal.SIGKILL)
    assert not survivors, f"processes of the killed run still alive: {survivors}"

    manifest = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    status = manifest.get("status", "running")  # a manifest written before the session was recorded
    assert is_in_use(run_dir) is False
    if status == "complete":  # the run had finished: the signal came after, or in the printing of the table
        # (a SIGTERM in the epilogue is still handled as an interrupt: exit 143, cells kept)
        handled = (143,) if kill_signal == signal.SIGTERM else ()
        assert process.returncode in (0, -kill_signal, *handled), stderr
    elif kill_signal == signal.SIGTERM:
        assert process.returncode == 143, stderr
        assert stderr.decode().startswith("Error: stopped by SIGTERM; finished cells are saved in")
        assert "Traceback" not in stderr.decode()
        assert status == "interrupted"
        assert not list(run_dir.glob("**/.tmp-*"))
    else:
        assert process.returncode == -signal.SIGKILL
        assert status == "running"  # killed: no end recorded; `status` asks the lock instead

    resumed = run_study(study, run_dir, resume=True, progress="none")
    assert resumed.status == "complete"
    assert not list(run_dir.glob("**/.tmp-*"))
    assert resumed.summary_path.read_bytes() == reference
