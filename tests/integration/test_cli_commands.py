"""The dpbandits command line: list, run, reproduce, plot, and clean user errors."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from dpbandits import cli
from dpbandits.cli import app

STUDY = """
name = "cli-study"
seed = {seed}
trials = 30
chunk_size = 16

[environment]
name = "bernoulli"
means = [0.7, 0.5, 0.4]

[[algorithms]]
name = "uniform"

[[algorithms]]
name = "sequential-halving"

[grid]
budget = [12, 24]
"""

runner = CliRunner()


def _write_study(tmp_path: Path, seed: int, text: str = STUDY) -> Path:
    path = tmp_path / "study.toml"
    path.write_text(text.format(seed=seed), encoding="utf-8")
    return path


def test_list_shows_environments_algorithms_with_privacy_and_bundled_studies() -> None:
    result = runner.invoke(app, ["list"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    for word in ("bernoulli", "sequential-halving", "none (non-private)", "bai-smoke"):
        assert word in result.output


@pytest.mark.slow
def test_run_resume_and_plot(tmp_path: Path, seed: int) -> None:
    study = _write_study(tmp_path, seed)
    out = tmp_path / "run"
    args = ["run", str(study), "--out", str(out), "--progress", "none"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "complete: 4 cells run, 0 already done" in result.output
    assert "mean or rate [95% CI]" in result.output and "sequential-halving" in result.output
    for name in ("study.toml", "study.json", "manifest.json", "summary.csv"):
        assert (out / name).is_file()
    assert (out / "study.toml").read_text() == study.read_text()
    assert sorted(p.name for p in (out / "plots").iterdir()) == [  # a run draws PNG; `plot` adds PDF
        "simple_regret_vs_budget.png", "success_vs_budget.png",
    ]
    again = runner.invoke(app, args)
    assert again.exit_code == 1
    assert "already holds results of this study; pass --resume" in again.output
    assert "Traceback" not in again.output
    resumed = runner.invoke(app, [*args, "--resume", "--no-plot"])
    assert resumed.exit_code == 0, resumed.output
    assert "0 cells run, 4 already done" in resumed.output
    other = runner.invoke(app, [*args, "--resume", "--seed", str(seed + 1)])
    assert other.exit_code == 1 and "holds another study" in other.output
    status = runner.invoke(app, ["status", str(out)])
    assert status.exit_code == 0
    assert "status:   complete — 4/4 cells done" in status.output and "session 2:" in status.output
    plotted = runner.invoke(app, ["plot", str(out)])
    assert plotted.exit_code == 0 and "success_vs_budget.png" in plotted.output
    assert "success_vs_budget.pdf" in plotted.output  # `plot` draws PDF too
    only_svg = runner.invoke(app, ["plot", str(out), "--out", str(tmp_path / "svg"), "--format", "svg"])
    assert only_svg.exit_code == 0, only_svg.output
    assert sorted(p.suffix for p in (tmp_path / "svg").iterdir()) == [".svg", ".svg"]
    wrong = runner.invoke(app, ["plot", str(out), "--format", "jpeg"])
    assert wrong.exit_code != 0 and "--format" in wrong.output and "Traceback" not in wrong.output


def test_reproduce_a_bundled_study_with_fewer_trials(tmp_path: Path) -> None:
    out = tmp_path / "smoke"
    result = runner.invoke(app, ["reproduce", "bai-smoke", "--out", str(out), "--trials", "20",
                                 "--progress", "none", "--no-plot"])
    assert result.exit_code == 0, result.output
    with open(out / "summary.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 12 and {row["n_trials"] for row in rows} == {"20"}
    assert {row["algorithm"] for row in rows} == {"Uniform allocation", "Sequential Halving"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["reproduce", "no-such-study"], "bundled study must be one of ["),
        (["run", "{missing}"], "cannot be read"),
        (["run", "{bad}"], "algorithms[1].epsilon: must be > 0, got -1"),
        (["run", "{good}", "--backend", "cloud"], "--backend must be one of ['serial', 'process', 'dask']; got 'cloud'"),
        (["run", "{good}", "--progress", "loud"], "--progress must be one of"),
        (["plot", "{missing}"], "has no summary.csv"),
        (["status", "{missing}"], "is not a dpbandits run directory"),
    ],
)
def test_user_errors_print_one_message_and_exit_non_zero(
    tmp_path: Path, seed: int, args: list[str], message: str
) -> None:
    good = _write_study(tmp_path, seed)
    bad = tmp_path / "bad.toml"
    bad.write_text(STUDY.format(seed=seed).replace('name = "sequential-halving"',
                                                   'name = "sequential-halving"\nepsilon = -1'), encoding="utf-8")
    paths = {"missing": str(tmp_path / "missing"), "bad": str(bad), "good": str(good)}
    result = runner.invoke(app, [arg.format(**paths) for arg in args] + (["--out", str(tmp_path / "o")]
                                                                       if args[0] == "run" else []))
    assert result.exit_code == 1
    assert message in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_console_script_error_has_no_traceback(tmp_path: Path) -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "dpbandits", "run", str(tmp_path / "missing.toml")],
        capture_output=True, text=True, env={**os.environ, "MPLBACKEND": "Agg"}, timeout=120,
    )
    assert completed.returncode == 1
    assert completed.stderr.startswith("Error: study file")
    assert "Traceback" not in completed.stderr


def test_cli_modules_register_their_commands(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = types.ModuleType("dpbandits.cli_fake")

    def register(target: typer.Typer) -> None:
        @target.command("fake")
        def fake_command() -> None:
            """A command added from another module."""
            typer.echo("fake ran")

    fake.register = register  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "dpbandits.cli_fake", fake)
    monkeypatch.setattr(cli.pkgutil, "iter_modules",
                        lambda path: [types.SimpleNamespace(name="cli_fake"), types.SimpleNamespace(name="config")])
    target = typer.Typer()

    @target.command("other")
    def other() -> None:
        """Keep the app a group."""

    assert cli.register_extensions(target) == ["dpbandits.cli_fake"]
    result = runner.invoke(target, ["fake"])
    assert result.exit_code == 0 and "fake ran" in result.output
