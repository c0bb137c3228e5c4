"""Resuming a run across versions (issue 24): refused by default in one line; with
``allow_version_change`` every session keeps its versions and every cell names the session that
computed it, and the run's recorded versions are never overwritten."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from dpbandits._core.errors import StudyError
from dpbandits._core.versions import dependency_versions, result_versions
from dpbandits.cli import app
from dpbandits.experiments.config import Study
from dpbandits.experiments.runner import run_study
from dpbandits.experiments.store import read_manifest, version_change

STUDY: dict[str, Any] = {
    "name": "versions",
    "trials": 20,
    "chunk_size": 20,
    "environment": {"name": "bernoulli", "means": [0.6, 0.4]},
    "algorithms": [{"name": "uniform"}],
    "grid": {"budget": [8, 16]},
}


def _interrupted_run(tmp_path: Path, seed: int, *, numpy: str = "1.0.0", old_format: bool = False) -> Path:
    """A run with one cell missing, as if it had been computed with NumPy ``numpy``."""
    run_dir = tmp_path / "run"
    run_study(Study.from_mapping({**STUDY, "seed": seed}), run_dir, progress="none")
    (run_dir / "cells" / "p0001-a00.npz").unlink()
    manifest = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    manifest["versions"]["numpy"] = numpy
    for session in manifest["sessions"]:
        if old_format:  # written before sessions recorded their versions
            session.pop("versions")
        else:
            session["versions"]["numpy"] = numpy
    if old_format:
        for cell in manifest["cells"].values():
            cell.pop("session", None)
    (run_dir / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return run_dir


@pytest.mark.parametrize("old_format", [False, True], ids=["sessions-record-versions", "older-manifest"])
def test_resume_with_other_versions_is_refused_and_records_nothing(tmp_path: Path, seed: int,
                                                                   old_format: bool) -> None:
    run_dir = _interrupted_run(tmp_path, seed, old_format=old_format)
    before = (run_dir / "manifest.json").read_bytes()
    current = result_versions()["numpy"]
    with pytest.raises(StudyError, match=rf"holds cells computed with other versions \(numpy 1\.0\.0 -> {current}\)"):
        run_study(Study.from_mapping({**STUDY, "seed": seed}), run_dir, progress="none", resume=True)
    assert (run_dir / "manifest.json").read_bytes() == before
    assert not (run_dir / "cells" / "p0001-a00.npz").exists()


def test_allowed_version_change_records_the_versions_of_every_cell(tmp_path: Path, seed: int) -> None:
    run_dir = _interrupted_run(tmp_path, seed)
    result = run_study(Study.from_mapping({**STUDY, "seed": seed}), run_dir, progress="none", resume=True,
                       allow_version_change=True)
    assert (result.cells_run, result.cells_skipped) == (1, 1)
    manifest = read_manifest(run_dir)
    assert manifest["versions"]["numpy"] == "1.0.0"  # the versions the run was created with: never overwritten
    first, second = manifest["sessions"]
    assert first["versions"]["numpy"] == "1.0.0"
    assert second["versions"] == dependency_versions()
    cells = manifest["cells"]
    assert cells["p0000-a00"]["session"] == 1 and cells["p0001-a00"]["session"] == 2
    versions_of = {key: manifest["sessions"][cell["session"] - 1]["versions"]["numpy"] for key, cell in cells.items()}
    assert versions_of == {"p0000-a00": "1.0.0", "p0001-a00": result_versions()["numpy"]}


def test_resume_with_the_same_versions_needs_no_flag(tmp_path: Path, seed: int) -> None:
    run_dir = _interrupted_run(tmp_path, seed, numpy=result_versions()["numpy"])
    result = run_study(Study.from_mapping({**STUDY, "seed": seed}), run_dir, progress="none", resume=True)
    assert result.cells_run == 1


def test_version_change_compares_only_what_can_change_a_result() -> None:
    current = dependency_versions()
    assert version_change(dict(current), current) is None
    assert version_change({**current, "platform": "elsewhere", "rich": "0.1"}, current) is None
    assert version_change({**current, "python": "3.10.0"}, current) == f"python 3.10.0 -> {current['python']}"
    assert version_change({k: v for k, v in current.items() if k != "opendp"}, current) == (
        f"opendp absent -> {current['opendp']}")
    assert version_change(None, current) == "the run records no versions"


def test_the_cli_refuses_in_one_line_and_continues_with_the_flag(tmp_path: Path, seed: int) -> None:
    run_dir = _interrupted_run(tmp_path, seed)
    study_file = tmp_path / "study.toml"
    study_file.write_text(
        f'name = "versions"\nseed = {seed}\ntrials = 20\nchunk_size = 20\n[environment]\nname = "bernoulli"\n'
        'means = [0.6, 0.4]\n[[algorithms]]\nname = "uniform"\n[grid]\nbudget = [8, 16]\n', encoding="utf-8")
    runner = CliRunner()
    refused = runner.invoke(app, ["run", str(study_file), "--out", str(run_dir), "--resume", "--no-plot", "-q"])
    assert refused.exit_code == 1
    assert refused.output.count("\n") == 1 and "pass --allow-version-change" in refused.output
    allowed = runner.invoke(app, ["run", str(study_file), "--out", str(run_dir), "--resume", "--no-plot",
                                  "--allow-version-change"])
    assert allowed.exit_code == 0, allowed.output
    assert "resuming with other versions than the run's last session (numpy 1.0.0 ->" in allowed.stderr
    status = runner.invoke(app, ["status", str(run_dir)])
    assert "session 2:" in status.stdout and "with other versions than session 1: numpy 1.0.0 ->" in status.stdout


def test_a_manifest_with_an_empty_sessions_list_is_refused_not_resumed(tmp_path: Path, seed: int) -> None:
    """An empty ``sessions`` list skipped the version check: old cells were credited to new code (issue 35)."""
    run_dir = _interrupted_run(tmp_path, seed)
    manifest = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    manifest["sessions"] = []
    (run_dir / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    with pytest.raises(StudyError, match="'sessions' must not be empty") as caught:
        run_study(Study.from_mapping({**STUDY, "seed": seed}), run_dir, progress="none", resume=True)
    assert "\n" not in str(caught.value)
    assert not (run_dir / "cells" / "p0001-a00.npz").exists()


def test_init_study_onto_a_symbolic_link_is_one_clear_line(tmp_path: Path) -> None:
    """It said "cannot write None"."""
    link = tmp_path / "study.toml"
    link.symlink_to(tmp_path / "elsewhere.toml")
    result = CliRunner().invoke(app, ["init-study", "--out", str(link), "--force"])
    assert result.exit_code != 0
    assert "None" not in result.output and "symbolic link" in result.output, result.output
    assert not (tmp_path / "elsewhere.toml").exists()
