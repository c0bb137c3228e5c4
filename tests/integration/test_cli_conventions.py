"""CLI conventions: --json on list/show/status/summary/run/reproduce, show NAME, whole names, -q/-v
through logging, init-study, shell completion, and each algorithm's guarantee printed with the ε it ran at."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dpbandits.algorithms.registry import list_algorithms
from dpbandits.cli import app
from dpbandits.envs.registry import list_environments
from dpbandits.experiments.bundled import bundled_study_text, list_bundled_studies
from dpbandits.experiments.config import parse_study_text

runner = CliRunner()

PRIVATE_STUDY = """
name = "private-cli"
seed = 7
trials = 40
chunk_size = 40
metrics = ["success"]

[environment]
name = "bernoulli"
means = [0.8, 0.4, 0.3]

[[algorithms]]
name = "dp-bai"
label = "DP-BAI"

[[algorithms]]
name = "dp-bai-gauss"
label = "Gauss"
delta = 1e-6

[[algorithms]]
name = "uniform"

[grid]
budget = [60]
epsilon = [0.5, 0.9]
"""


def _invoke(*args: str, columns: int = 80):
    return runner.invoke(app, list(args), env={"COLUMNS": str(columns)})


def test_list_json_holds_every_registered_name() -> None:
    result = _invoke("list", "--json")
    assert result.exit_code == 0, result.output
    listed = json.loads(result.stdout)
    assert [a["name"] for a in listed["algorithms"]] == [spec.name for spec in list_algorithms()]
    assert [e["name"] for e in listed["environments"]] == [env.name for env in list_environments()]
    assert [s["name"] for s in listed["studies"]] == [study.name for study in list_bundled_studies()]
    assert all(a["privacy"] for a in listed["algorithms"])


@pytest.mark.parametrize("columns", [60, 80, 200])
def test_list_never_cuts_a_name(columns: int) -> None:
    result = _invoke("list", columns=columns)
    assert result.exit_code == 0, result.output
    cells = {cell.strip() for line in result.stdout.splitlines() for cell in line.split("│")}
    names = [spec.name for spec in list_algorithms()] + [env.name for env in list_environments()]
    names += [study.name for study in list_bundled_studies()]
    missing = [name for name in names if name not in cells]
    assert not missing, f"names cut or wrapped at {columns} columns: {missing}"
    assert "…" not in result.stdout


def test_show_an_algorithm_an_environment_and_a_study() -> None:
    algorithm = _invoke("show", "dp-bai", columns=120)
    assert algorithm.exit_code == 0, algorithm.output
    for text in ("ε-DP for one entry of the reward table", "epsilon", "required", "schedule", '"canonical"',
                 "Proposition 4.1"):
        assert text in algorithm.stdout, text
    environment = _invoke("show", "linear", "--json")
    (described,) = json.loads(environment.stdout)
    assert described["type"] == "environment" and described["kind"] == "linear"
    assert {"name": "reward", "required": False, "default": "uniform"} in described["parameters"]
    assert {"name": "features", "required": True} in described["parameters"]
    study = _invoke("show", "quickstart")
    assert study.exit_code == 0
    assert bundled_study_text("quickstart").strip().splitlines()[-1] in study.stdout


def test_show_names_the_class_of_every_algorithm_and_marks_theory_curves() -> None:
    # issue 26: one shape for every algorithm; the class that runs it, or "a theory curve"
    usca = _invoke("show", "usca", columns=120)
    assert "class:        dpbandits.USCA" in usca.stdout, usca.output
    assert json.loads(_invoke("show", "gp-uniform", "--json").stdout)[0]["class"] == "dpbandits.UniformFeatureRidge"
    theory = _invoke("show", "theory-dp-ebs-upper", columns=120)
    assert "(theory curve, family dueling)" in theory.stdout and "it reads no data" in theory.stdout


def test_show_an_unknown_name_is_one_line_with_suggestions() -> None:
    result = _invoke("show", "dp-bia")
    assert result.exit_code == 1
    assert result.output.strip().count("\n") == 0
    assert "no algorithm, environment or bundled study is named 'dp-bia'; did you mean 'dp-bai'" in result.output


def test_init_study_writes_an_editable_copy_and_refuses_to_overwrite(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    first = _invoke("init-study", "bai-smoke")
    assert first.exit_code == 0, first.output
    written = tmp_path / "bai-smoke.toml"
    assert written.read_text(encoding="utf-8") == bundled_study_text("bai-smoke")
    assert parse_study_text(written.read_text(encoding="utf-8")).name == "bai-smoke"
    written.write_text("# my edits\n", encoding="utf-8")
    again = _invoke("init-study", "bai-smoke")
    assert again.exit_code == 1 and "exists; pass --force" in again.output
    assert written.read_text(encoding="utf-8") == "# my edits\n"
    forced = _invoke("init-study", "bai-smoke", "--force", "--out", str(tmp_path / "mine.toml"))
    assert forced.exit_code == 0 and (tmp_path / "mine.toml").exists()
    (tmp_path / "studies").mkdir()
    into_directory = _invoke("init-study", "quickstart", "--out", str(tmp_path / "studies"))
    assert into_directory.exit_code == 0 and (tmp_path / "studies" / "quickstart.toml").exists()
    missing = _invoke("init-study", "no-such-study")
    assert missing.exit_code == 1 and "bundled study must be one of" in missing.output


def test_init_study_suggests_a_run_directory_the_readme_did_not_fill(tmp_path: Path, monkeypatch) -> None:
    # the README's first command fills runs/quickstart; following the hint must not collide with it
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs" / "quickstart").mkdir(parents=True)
    first = _invoke("init-study")
    assert first.exit_code == 0, first.output
    assert first.output.strip().endswith("dpbandits run quickstart.toml --out runs/my-quickstart")
    (tmp_path / "runs" / "my-quickstart").mkdir()
    again = _invoke("init-study", "--out", "second.toml")
    assert again.output.strip().endswith("--out runs/my-quickstart-2")


def test_shell_completion_is_enabled() -> None:
    # typer provides it: --install-completion / --show-completion on the root command
    shown = _invoke("--help")
    assert "--install-completion" in shown.output and "--show-completion" in shown.output
    script = runner.invoke(app, ["--show-completion", "bash"], prog_name="dpbandits")
    assert script.exit_code == 0, script.output
    assert "_dpbandits_completion" in script.output and "complete " in script.output


def _run_private(tmp_path: Path, *options: str):
    tmp_path.mkdir(parents=True, exist_ok=True)
    study = tmp_path / "study.toml"
    study.write_text(PRIVATE_STUDY, encoding="utf-8")
    return runner.invoke(app, [*options, "run", str(study), "--out", str(tmp_path / "run"), "--no-plot",
                               "--progress", "auto"])


def test_run_prints_each_guarantee_with_the_privacy_parameters_it_ran_at(tmp_path: Path) -> None:
    result = _run_private(tmp_path)
    assert result.exit_code == 0, result.output
    assert "  DP-BAI: ε-DP for one entry of the reward table, at ε = {0.5, 0.9}" in result.stdout
    assert "  Gauss: (ε, δ)-DP for one entry of the reward table, at ε = {0.5, 0.9}, δ = 1e-06" in result.stdout
    assert "  uniform: none (non-private)" in result.stdout


def test_quiet_and_verbose_go_through_logging(tmp_path: Path) -> None:
    normal = _run_private(tmp_path / "normal")
    assert "[dpbandits] starting: 6 cells" in normal.stderr
    quiet = _run_private(tmp_path / "quiet", "-q")
    assert quiet.exit_code == 0 and quiet.stderr == ""
    assert "privacy:" in quiet.stdout  # results are still printed
    verbose = _run_private(tmp_path / "verbose", "--verbose")
    assert "dpbandits.run: cell p0000-a00 done: DP-BAI" in verbose.stderr
    both = runner.invoke(app, ["-q", "-v", "list"])
    assert both.exit_code == 2 and "exclude each other" in both.output
    # the CLI's handler is gone after the command: the library logs as its host configures it
    assert not logging.getLogger("dpbandits").handlers


def test_run_and_summary_json(tmp_path: Path) -> None:
    study = tmp_path / "study.toml"
    study.write_text(PRIVATE_STUDY, encoding="utf-8")
    ran = runner.invoke(app, ["run", str(study), "--out", str(tmp_path / "run"), "--no-plot", "--json"])
    assert ran.exit_code == 0, ran.output
    result = json.loads(ran.stdout)  # stdout is the JSON object only
    assert result["status"] == "complete" and result["cells_run"] == 6 and result["cells_skipped"] == 0
    assert result["run_dir"] == str(tmp_path / "run") and result["plots"] == []
    assert {row["algorithm"] for row in result["rows"]} == {"DP-BAI", "Gauss", "uniform"}
    assert all(0.0 <= row["success_rate"] <= 1.0 and row["n_trials"] == 40 for row in result["rows"])
    privacy = {entry["label"]: entry for entry in result["privacy"]}
    assert privacy["DP-BAI"]["at"] == {"epsilon": [0.5, 0.9]} and privacy["DP-BAI"]["private"]
    assert privacy["Gauss"]["at"] == {"epsilon": [0.5, 0.9], "delta": [1e-06]}
    assert not privacy["uniform"]["private"] and privacy["uniform"]["at"] == {}
    summary = _invoke("summary", str(tmp_path / "run"), "--json")
    assert summary.exit_code == 0, summary.output
    assert json.loads(summary.stdout)["rows"] == result["rows"]
    assert json.loads(summary.stdout)["metrics"] == {"success": "success_rate"}


def test_reproduce_json(tmp_path: Path) -> None:
    ran = runner.invoke(app, ["reproduce", "bai-smoke", "--trials", "2", "--out", str(tmp_path / "smoke"), "--no-plot",
                              "--json", "--progress", "none"])
    assert ran.exit_code == 0, ran.output
    assert json.loads(ran.stdout)["status"] == "complete"


def test_status_json(tmp_path: Path) -> None:
    _run_private(tmp_path)
    result = _invoke("status", str(tmp_path / "run"), "--json")
    assert result.exit_code == 0, result.output
    status = json.loads(result.stdout)
    assert status["state"] == "complete" and status["cells_done"] == status["cells_total"] == 6
    assert status["study"] == "private-cli" and status["seed"] == 7 and len(status["sessions"]) == 1


@pytest.mark.slow
def test_show_describes_every_listed_name() -> None:
    listed = json.loads(_invoke("list", "--json").stdout)
    for group, entries in listed.items():
        for entry in entries:
            result = _invoke("show", entry["name"], "--json")
            assert result.exit_code == 0, (entry["name"], result.output)
            kinds = {described["type"] for described in json.loads(result.stdout)}
            assert {"environments": "environment", "algorithms": "algorithm", "studies": "study"}[group] in kinds
