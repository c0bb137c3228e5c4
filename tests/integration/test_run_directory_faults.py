"""Faults of the run directory and of the file system end in one line and a non-zero exit, never a
traceback or a silently wrong answer; a finished run stays readable from a read-only medium."""

from __future__ import annotations

import errno
import fcntl
import json
import os
import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from dpbandits._core.errors import StudyError
from dpbandits.cli import app
from dpbandits.experiments import store as store_module
from dpbandits.experiments.config import Study
from dpbandits.experiments.interrupts import RunTerminated
from dpbandits.experiments.runner import run_study
from dpbandits.experiments.store import read_manifest

runner = CliRunner()

STUDY = """
name = "faults"
description = "{description}"
seed = {seed}
trials = 20
chunk_size = 10

[environment]
name = "bernoulli"
means = [0.7, 0.5, 0.4]

[[algorithms]]
name = "uniform"

[[algorithms]]
name = "sequential-halving"

[grid]
budget = [12, 24, 48]
"""


def _study_file(tmp_path: Path, seed: int, description: str = "first") -> Path:
    path = tmp_path / f"study-{description}.toml"
    path.write_text(STUDY.format(seed=seed, description=description), encoding="utf-8")
    return path


def _cli(*args: Any) -> Any:
    return runner.invoke(app, [str(arg) for arg in args])


def _assert_one_line_error(result: Any, message: str, code: int = 1) -> None:
    assert result.exit_code == code, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.output
    assert message in lines[0], result.output


@pytest.fixture
def finished_run(tmp_path: Path, seed: int) -> Path:
    run_dir = tmp_path / "run"
    result = _cli("run", _study_file(tmp_path, seed), "--out", run_dir, "--progress", "none", "--no-plot")
    assert result.exit_code == 0, result.output
    return run_dir


def _no_temporary_files(run_dir: Path) -> bool:
    return not list(run_dir.glob("**/.tmp-*"))


# ------------------------------------------------------------------------------ disk full
def test_a_full_disk_stops_the_run_in_one_line_and_leaves_no_temporary_file(
    tmp_path: Path, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    study_file = _study_file(tmp_path, seed)
    reference = tmp_path / "reference"
    assert _cli("run", study_file, "--out", reference, "--progress", "none", "--no-plot").exit_code == 0
    real_fsync = os.fsync
    calls = {"n": 0}

    def fsync_until_full(fd: int) -> None:
        calls["n"] += 1
        if calls["n"] > 8:  # the manifest and a few cells fit, then the disk is full
            raise OSError(errno.ENOSPC, "No space left on device")
        real_fsync(fd)

    monkeypatch.setattr(store_module.os, "fsync", fsync_until_full)
    run_dir = tmp_path / "run"
    result = _cli("run", study_file, "--out", run_dir, "--progress", "none", "--no-plot")
    _assert_one_line_error(result, "No space left on device")
    assert _no_temporary_files(run_dir)
    monkeypatch.setattr(store_module.os, "fsync", real_fsync)  # space freed: resume
    resumed = _cli("run", study_file, "--out", run_dir, "--progress", "none", "--no-plot", "--resume")
    assert resumed.exit_code == 0, resumed.output
    assert (run_dir / "summary.csv").read_bytes() == (reference / "summary.csv").read_bytes()


# ------------------------------------------------------------------------------ read-only medium
@pytest.fixture
def read_only(tmp_path: Path) -> Iterator[Any]:
    """Make a directory read-only: chmod for a normal user, a read-only bind mount for root."""
    mounts: list[Path] = []

    def make(source: Path) -> Path:
        if os.geteuid() != 0:
            for path in [source, *source.rglob("*")]:
                path.chmod(path.stat().st_mode & ~0o222)
            return source
        target = tmp_path / f"ro-{source.name}"
        target.mkdir()
        for command in (["mount", "--bind", str(source), str(target)],
                        ["mount", "-o", "remount,bind,ro", str(target)]):
            if subprocess.run(command, capture_output=True).returncode != 0:
                subprocess.run(["umount", str(target)], capture_output=True)
                pytest.skip("root without permission to mount a read-only bind mount")
        mounts.append(target)
        return target

    yield make
    for target in mounts:
        subprocess.run(["umount", str(target)], capture_output=True)


@pytest.mark.slow
def test_a_finished_run_is_readable_from_a_read_only_medium(
    finished_run: Path, tmp_path: Path, seed: int, read_only: Any
) -> None:
    (finished_run / "plots").mkdir()
    medium = read_only(finished_run)
    status = _cli("status", medium)
    assert status.exit_code == 0 and "status:   complete — 6/6 cells done" in status.output, status.output
    summary = _cli("summary", medium)
    assert summary.exit_code == 0 and "sequential-halving" in summary.output
    plotted = _cli("plot", medium, "--out", tmp_path / "elsewhere")
    assert plotted.exit_code == 0, plotted.output
    assert (tmp_path / "elsewhere" / "success_vs_budget.png").is_file()
    _assert_one_line_error(_cli("plot", medium), "pass --out DIR to write the plots elsewhere")
    study_file = _study_file(tmp_path, seed)
    _assert_one_line_error(_cli("run", study_file, "--out", medium, "--resume", "--no-plot"), "is not writable")
    _assert_one_line_error(_cli("run", study_file, "--out", medium / "new", "--no-plot"),
                           "cannot create run directory")
    assert _no_temporary_files(finished_run)


# ------------------------------------------------------------------------------ damaged run directories
def test_cells_replaced_by_a_file_is_refused(finished_run: Path, tmp_path: Path, seed: int) -> None:
    shutil.rmtree(finished_run / "cells")
    (finished_run / "cells").write_text("not a directory")
    _assert_one_line_error(_cli("status", finished_run), "cells' must be the directory of cell files")
    _assert_one_line_error(_cli("run", _study_file(tmp_path, seed), "--out", finished_run, "--resume"),
                           "the run directory is damaged")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("algorithm,n_trials\nuniform,20\n".encode("utf-16"), "is not UTF-8 text"),
        (b"\xff\xfe\x00 not text", "is not UTF-8 text"),
        (b"budget,n_trials\n12,20\n", "has no 'algorithm' column"),
        (b"budget,algorithm,n_trials,success_rate,success_stderr\n12,uniform\n", "line 2: must have 5 fields"),
        (b"budget,algorithm,n_trials,success_rate,success_stderr\n12,uniform,20,abc,0.1\n",
         "line 2: success_rate must be a number, got 'abc'"),
    ],
)
def test_a_summary_that_dpbandits_did_not_write_is_refused(finished_run: Path, content: bytes, message: str) -> None:
    (finished_run / "summary.csv").write_bytes(content)
    for command in ("summary", "plot"):
        _assert_one_line_error(_cli(command, finished_run), message)


@pytest.mark.parametrize(
    ("manifest", "message"),
    [
        ([1, 2], "must be a JSON object, got list"),
        ({"format": 2}, "must have the key 'study'"),
        ("changes", "'cells' must be dict, got 5"),
        ("sessions", "'sessions' must be list"),
        (b"\xff\xfe{", "not UTF-8 JSON"),
    ],
)
def test_a_manifest_of_the_wrong_shape_is_refused(
    finished_run: Path, tmp_path: Path, seed: int, manifest: Any, message: str
) -> None:
    path = finished_run / "manifest.json"
    if isinstance(manifest, bytes):
        path.write_bytes(manifest)
    elif manifest == "changes":
        path.write_text(json.dumps({**json.loads(path.read_text()), "cells": 5}))
    elif manifest == "sessions":
        path.write_text(json.dumps({**json.loads(path.read_text()), "sessions": {"a": 1}}))
    else:
        path.write_text(json.dumps(manifest))
    for args in (["status", finished_run], ["summary", finished_run],
                 ["run", _study_file(tmp_path, seed), "--out", finished_run, "--resume", "--no-plot"]):
        _assert_one_line_error(_cli(*args), message)


def test_a_cell_file_copied_over_another_is_refused_not_summarised(
    finished_run: Path, tmp_path: Path, seed: int
) -> None:
    summary = (finished_run / "summary.csv").read_bytes()
    cells = finished_run / "cells"
    shutil.copyfile(cells / "p0000-a00.npz", cells / "p0001-a00.npz")
    message = "holds cell 'p0000-a00' of study digest"
    _assert_one_line_error(_cli("status", finished_run), message)
    _assert_one_line_error(_cli("run", _study_file(tmp_path, seed), "--out", finished_run, "--resume",
                                "--no-plot"), message)
    assert (finished_run / "summary.csv").read_bytes() == summary
    with np.load(cells / "p0002-a01.npz") as data:  # every cell file names itself
        assert json.loads(str(data["__identity__"])) == {
            "cell": "p0002-a01", "study_digest": read_manifest(finished_run)["study_digest"], "seed": str(seed)}


def test_status_counts_cell_files_not_the_manifest(finished_run: Path) -> None:
    for path in (finished_run / "cells").glob("*.npz"):
        path.unlink()
    status = _cli("status", finished_run)
    assert status.exit_code == 0
    assert "status:   incomplete (the manifest says complete, but 6 cell file(s) are missing or damaged) — 0/6" \
        in status.output


def test_plot_of_an_empty_summary_fails_clearly(finished_run: Path) -> None:
    path = finished_run / "summary.csv"
    path.write_text(path.read_text().splitlines()[0] + "\n")
    _assert_one_line_error(_cli("plot", finished_run), "has no rows: no cell of the run has finished")


# ------------------------------------------------------------------------------ sessions and signals
def test_status_asks_the_lock_whether_a_session_is_running(finished_run: Path) -> None:
    path = finished_run / "manifest.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "status": "running"}))
    assert "status:   interrupted (its last session ended without recording its end" in _cli("status", finished_run).output
    with open(finished_run / ".lock", "a+") as handle:  # a live process holds the run
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        assert "status:   running (a live process holds the run)" in _cli("status", finished_run).output


class _TerminateAfter:
    """A progress reporter that sends SIGTERM to this process after ``cells`` finished cells."""

    def __init__(self, cells: int) -> None:
        self.cells = cells

    def start(self, **_: int) -> None:
        """Nothing to show."""

    def advance(self, *, trials: int, cells: int) -> None:
        self.cells -= cells
        if self.cells <= 0:
            os.kill(os.getpid(), signal.SIGTERM)

    def close(self) -> None:
        """Nothing to close."""


def test_sigterm_interrupts_a_run_that_keeps_its_cells_and_resumes(tmp_path: Path, seed: int) -> None:
    study = Study.from_mapping({"name": "sigterm", "seed": seed, "trials": 20, "chunk_size": 10,
                                "environment": {"name": "bernoulli", "means": [0.7, 0.5, 0.4]},
                                "algorithms": [{"name": "uniform"}], "grid": {"budget": [12, 24, 48, 96]}})
    reference = run_study(study, tmp_path / "reference", progress="none").summary_path.read_bytes()
    run_dir = tmp_path / "run"
    handler = signal.getsignal(signal.SIGTERM)
    with pytest.raises(RunTerminated):
        run_study(study, run_dir, progress=_TerminateAfter(cells=2))
    assert signal.getsignal(signal.SIGTERM) is handler  # restored
    manifest = read_manifest(run_dir)
    assert manifest["status"] == "interrupted"
    assert sorted(key for key, cell in manifest["cells"].items() if cell["status"] == "done") == [
        "p0000-a00", "p0001-a00"]
    resumed = run_study(study, run_dir, resume=True, progress="none")
    assert (resumed.cells_run, resumed.cells_skipped) == (2, 2)
    assert resumed.summary_path.read_bytes() == reference


# ------------------------------------------------------------------------------ small things
def test_editing_the_description_keeps_resume(finished_run: Path, tmp_path: Path, seed: int) -> None:
    edited = _study_file(tmp_path, seed, description="second")
    result = _cli("run", edited, "--out", finished_run, "--resume", "--progress", "none", "--no-plot")
    assert result.exit_code == 0 and "0 cells run, 6 already done" in result.output, result.output


def test_a_long_summary_says_where_it_is_and_the_summary_command_prints_it(tmp_path: Path, seed: int) -> None:
    budgets = ", ".join(str(12 + 2 * index) for index in range(21))
    text = STUDY.format(seed=seed, description="long").replace("budget = [12, 24, 48]", f"budget = [{budgets}]")
    study_file = tmp_path / "long.toml"
    study_file.write_text(text.replace("trials = 20", "trials = 4"), encoding="utf-8")
    run_dir = tmp_path / "run"
    result = _cli("run", study_file, "--out", run_dir, "--progress", "none", "--no-plot")
    assert result.exit_code == 0
    assert f"summary: 42 rows, more than 40: not printed here; see {run_dir / 'summary.csv'}" in result.output
    printed = _cli("summary", run_dir)
    assert printed.exit_code == 0 and "│     52 │ sequential-halving" in printed.output, printed.output


def test_reward_bounds_of_the_environment_are_checked_before_the_run(tmp_path: Path, seed: int) -> None:
    study_file = _study_file(tmp_path, seed)
    study_file.write_text(study_file.read_text().replace('name = "bernoulli"', 'name = "uniform"').replace(
        "means = [0.7, 0.5, 0.4]", "means = [0.7, 0.5, 0.4]\nreward_bounds = [0.0, 1.0]"))
    result = _cli("run", study_file, "--out", tmp_path / "run", "--no-plot")
    _assert_one_line_error(result, "environment: 'uniform' cannot be built: reward_bounds must contain every support")
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    ("args", "message", "code"),
    [
        (["--trials", "1e12"], "Invalid value for '--trials'", 2),
        (["--trials", "1000000000000"], "trials: 1000000000000 trials per cell need at least", 1),
        (["--workers", "0"], "Invalid value for '--workers'", 2),
        (["--bogus"], "No such option: --bogus", 2),
    ],
)
def test_usage_and_size_errors_are_one_line(tmp_path: Path, seed: int, args: list[str], message: str,
                                             code: int) -> None:
    result = _cli("run", _study_file(tmp_path, seed), "--out", tmp_path / "run", "--no-plot", *args)
    _assert_one_line_error(result, message, code)
    assert not (tmp_path / "run").exists()


def test_an_unexpected_error_is_one_line_too(tmp_path: Path, seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("something nobody foresaw")

    monkeypatch.delenv("DPBANDITS_DEBUG", raising=False)
    monkeypatch.setattr("dpbandits.experiments.runner.run_study", broken)
    result = _cli("run", _study_file(tmp_path, seed), "--out", tmp_path / "run", "--no-plot")
    _assert_one_line_error(result, "internal error (RuntimeError: something nobody foresaw); please report it")

    def out_of_memory(*args: Any, **kwargs: Any) -> None:
        raise MemoryError

    monkeypatch.setattr("dpbandits.experiments.runner.run_study", out_of_memory)
    result = _cli("run", _study_file(tmp_path, seed), "--out", tmp_path / "run", "--no-plot")
    _assert_one_line_error(result, "out of memory")


def test_study_errors_with_several_problems_are_one_line(tmp_path: Path, seed: int) -> None:
    study_file = _study_file(tmp_path, seed)
    study_file.write_text(study_file.read_text().replace("trials = 20", "trials = true").replace(
        "seed = ", "seed = -"))
    result = _cli("run", study_file, "--out", tmp_path / "run")
    _assert_one_line_error(result, "seed: must be >= 0")
    assert "; trials: must be a valid integer, got true" in result.output


def test_load_trials_refuses_a_damaged_study_copy(finished_run: Path) -> None:
    (finished_run / "study.json").write_text("[1, 2]")
    with pytest.raises(StudyError, match="must be a table of keys and values, got list"):
        store_module.load_trials(finished_run)


def test_a_study_file_that_is_not_utf8_is_one_line_and_a_bom_is_accepted(tmp_path: Path, seed: int) -> None:
    study_file = _study_file(tmp_path, seed)
    text = study_file.read_text(encoding="utf-8")
    study_file.write_bytes(text.encode("utf-16"))
    _assert_one_line_error(_cli("run", study_file, "--out", tmp_path / "run"), "is not UTF-8 text")
    study_file.write_bytes(text.encode("utf-8-sig"))
    result = _cli("run", study_file, "--out", tmp_path / "run", "--progress", "none", "--no-plot")
    assert result.exit_code == 0, result.output
