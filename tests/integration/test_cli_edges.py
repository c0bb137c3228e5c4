"""The CLI's edges (issues 24 and 26): global options anywhere, flags shown as flags, --json errors,
a closed pipe, any terminal encoding, oversized study files, killed workers, `account`'s bounds and
table, `show`'s plain text and copyable TOML, `version`'s dependencies, `init-study`'s default."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dpbandits._core.versions import RESULT_PACKAGES
from dpbandits.cli import app
from dpbandits.experiments.bundled import bundled_study_text, list_bundled_studies
from dpbandits.experiments.config import MAX_STUDY_FILE_BYTES, parse_study_text

runner = CliRunner()

STUDY = """
name = "edges"
seed = 3
trials = 10
chunk_size = 10
[environment]
name = "bernoulli"
means = [0.7, 0.4]
[[algorithms]]
name = "dp-bai"
[grid]
budget = [20]
epsilon = [1.0]
"""


def _invoke(*args: str, columns: int = 120):
    return runner.invoke(app, list(args), env={"COLUMNS": str(columns)})


def _command(*args: str, env: dict[str, str] | None = None, stdin: str | None = None,
             shell: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``dpbandits`` in a fresh interpreter (a real stdout: encodings, pipes)."""
    full_env = {**os.environ, **(env or {})}
    encoding = full_env.get("PYTHONIOENCODING", "utf-8")
    if shell is not None:
        return subprocess.run(["bash", "-c", f"set -o pipefail; {shell}"], capture_output=True, encoding=encoding,
                              env=full_env, timeout=120)
    return subprocess.run([sys.executable, "-m", "dpbandits", *args], capture_output=True, encoding=encoding,
                          env=full_env, timeout=120, input=stdin)


# ------------------------------------------------------------------ global options, flags, --json
def test_quiet_and_verbose_are_accepted_after_the_command(tmp_path: Path) -> None:
    study = tmp_path / "study.toml"
    study.write_text(STUDY, encoding="utf-8")
    quiet = runner.invoke(app, ["run", str(study), "--out", str(tmp_path / "q"), "--no-plot", "-q"])
    assert quiet.exit_code == 0, quiet.output
    assert quiet.stderr == "" and "complete:" in quiet.stdout
    verbose = runner.invoke(app, ["run", str(study), "--out", str(tmp_path / "v"), "--no-plot", "--verbose"])
    assert verbose.exit_code == 0 and "dpbandits.run: cell p0000-a00 done" in verbose.stderr
    mixed = runner.invoke(app, ["-q", "list", "-v"])
    assert mixed.exit_code == 2 and "exclude each other" in mixed.output
    assert _invoke("list", "--json", "-q").exit_code == 0


def test_json_before_the_command_and_json_errors_on_stdout() -> None:
    before = _invoke("--json", "list")
    assert before.exit_code == 0 and "algorithms" in json.loads(before.stdout)
    missing = _invoke("show", "no-such-thing", "--json")
    assert missing.exit_code == 1
    error = json.loads(missing.stdout)
    assert error["exit_code"] == 1 and "no algorithm, environment or bundled study" in error["error"]
    assert missing.stderr == ""
    usage = _invoke("status", "--json", "--no-such-option")
    assert usage.exit_code == 2 and "No such option" in json.loads(usage.stdout)["error"]
    no_json = _invoke("--json", "plot", "x")
    assert no_json.exit_code == 2 and "prints no JSON" in json.loads(no_json.stdout)["error"]


@pytest.mark.parametrize("command", [[], ["run"], ["list"], ["status"], ["account"], ["api-key", "create"]])
def test_help_shows_flags_as_flags(command: list[str]) -> None:
    result = _invoke(*command, "--help")
    assert result.exit_code == 0, result.output
    assert "<bool>" not in result.stdout
    assert "--help" in result.stdout


@pytest.mark.parametrize("command", ["account", "status", "audit"])
def test_help_paragraphs_wrap_to_the_terminal(command: str) -> None:
    # a docstring wrapped at 100 columns printed its lines as they were: ragged on 80 columns
    # ("columns other than those named are" / "ignored. mab: ...")
    text = _invoke(command, "--help", columns=80).stdout
    description = text.split("Usage:", 1)[1].split("╭", 1)[0]
    lines = [line.strip() for line in description.splitlines()[2:]]  # after the usage line
    for line, after in itertools.pairwise(lines):
        if line and after:  # two lines of one paragraph: the first is filled (no short line mid-paragraph)
            assert len(line) + len(after.split()[0]) + 1 > 76, (line, after)


# ------------------------------------------------------------------ output: pipes and encodings
@pytest.mark.slow
@pytest.mark.parametrize(("command", "first"), [("list", "Environments"), ("--help", ""), ("run --help", "")])
def test_a_closed_pipe_ends_quietly(command: str, first: str) -> None:
    # --help (typer's own console) ended with status 1: a failure under `set -o pipefail`
    done = _command(shell=f"{sys.executable} -m dpbandits {command} | head -1")
    assert done.returncode in (0, 141), done.stderr
    assert done.stderr == ""
    assert done.stdout.startswith(first)


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
@pytest.mark.parametrize("args", [["list"], ["show", "dp-bai"], ["show", "quickstart"], ["show", "kl-mab"]])
def test_list_and_show_work_on_any_terminal_encoding(encoding: str, args: list[str]) -> None:
    result = CliRunner(charset=encoding).invoke(app, args, env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert result.stderr == ""


@pytest.mark.slow
def test_a_terminal_without_unicode_gets_ascii_spellings() -> None:
    done = _command("show", "dp-bai", env={"PYTHONIOENCODING": "ascii"})
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert "eps-DP for one entry of the reward table" in done.stdout  # ε spelled in ASCII, not "?"


# ------------------------------------------------------------------ study files, workers
def test_a_device_or_huge_study_file_is_refused_up_front(tmp_path: Path) -> None:
    device = _invoke("run", "/dev/zero", "--out", str(tmp_path / "run"))
    assert device.exit_code == 1 and "is a device, not a study file" in device.output
    huge = tmp_path / "huge.toml"
    huge.write_bytes(b"#" * (MAX_STUDY_FILE_BYTES + 1))
    refused = _invoke("run", str(huge), "--out", str(tmp_path / "run"))
    assert refused.exit_code == 1 and "is larger than 1,048,576 bytes" in refused.output
    assert not (tmp_path / "run").exists()


_KILLER = '''
import multiprocessing, os, signal, time
import numpy as np
from dpbandits.algorithms.registry import register_algorithm

@register_algorithm("test-killer", family="test", privacy="none (non-private)", metrics=("success",))
def simulate_killer(env, n_trials, rng, budget=1):
    if os.getpid() != int(os.environ["KILLER_PARENT"]):  # in a worker: die as if killed
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(0.05)
    return {"success": np.ones(n_trials)}
'''
_KILLER_STUDY = """
name = "killer"
seed = 1
trials = 400
chunk_size = 1
[environment]
name = "bernoulli"
means = [0.5, 0.4]
[[algorithms]]
name = "test-killer"
"""


def _run_with_killed_worker(tmp_path: Path, backend: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "killer.py").write_text(textwrap.dedent(_KILLER), encoding="utf-8")
    (tmp_path / "study.toml").write_text(_KILLER_STUDY, encoding="utf-8")
    code = ("import os, sys; os.environ['KILLER_PARENT'] = str(os.getpid()); import killer; "
            "sys.argv = ['dpbandits', *sys.argv[1:]]; from dpbandits.cli import main; main()")
    path = os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])
    return subprocess.run(
        [sys.executable, "-c", code, "run", "study.toml", "--out", "run", "--backend", backend, "--workers", "2" if backend == "process" else "1",
         "--no-plot", "--progress", "none"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": path, "DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": "0"})


@pytest.mark.slow
def test_a_killed_process_worker_says_resume(tmp_path: Path) -> None:
    done = _run_with_killed_worker(tmp_path, "process")
    assert done.returncode == 1, done.stderr
    lines = [line for line in done.stderr.splitlines() if not line.startswith("[dpbandits]")]
    assert lines == ["Error: a worker process died (killed, or out of memory?); the finished cells are saved in "
                     "run: continue with --resume"], done.stderr
    assert "internal error" not in done.stderr


@pytest.mark.slow
def test_a_killed_dask_worker_is_one_line(tmp_path: Path) -> None:
    pytest.importorskip("distributed")
    done = _run_with_killed_worker(tmp_path, "dask")
    assert done.returncode == 1, done.stderr
    lines = [line for line in done.stderr.splitlines() if not line.startswith("[dpbandits]")]
    assert lines == ["Error: a dask worker died (killed, or out of memory?) running a task of this run; the "
                     "finished cells are saved in run: continue with --resume"], done.stderr


# ------------------------------------------------------------------ show, version, init-study
@pytest.mark.parametrize("name", ["dp-bai", "usca", "rucb", "kl-mab"])
def test_show_prints_docstrings_as_plain_text(name: str) -> None:
    result = _invoke("show", name)
    assert result.exit_code == 0, result.output
    for raw in (":class:`", ":func:`", ":attr:`", ":mod:`", "``"):
        assert raw not in result.stdout, raw


@pytest.mark.parametrize("name", [study.name for study in list_bundled_studies()])
def test_show_prints_a_bundled_study_that_parses_when_copied(name: str) -> None:
    result = _invoke("show", name, columns=400)
    assert result.exit_code == 0, result.output
    study_block = result.stdout[result.stdout.index(f"{name} (bundled study)"):]  # a name may be an environment's too
    printed = study_block[study_block.index("\n\n") + 2:]  # after the header and the run/edit line
    assert "\\[" not in printed
    assert tomllib.loads(printed) == tomllib.loads(bundled_study_text(name))


def test_version_lists_every_dependency_that_matters() -> None:
    result = _invoke("version")
    assert result.exit_code == 0, result.output
    names = {line.split()[0] for line in result.stdout.splitlines()}
    assert {"python", "dpbandits", "opendp", "dp-accounting", "numpy", "scipy"} <= names
    assert set(RESULT_PACKAGES) <= names
    listed = json.loads(_invoke("version", "--json").stdout)
    assert listed["opendp"] and listed["dp-accounting"] and listed["python"]


def test_init_study_starts_from_a_private_study(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = _invoke("init-study")
    assert result.exit_code == 0, result.output
    (written,) = tmp_path.glob("*.toml")
    study = parse_study_text(written.read_text(encoding="utf-8"))
    from dpbandits.algorithms.registry import get_algorithm

    assert any(not get_algorithm(entry.name).privacy.startswith("none") for entry in study.algorithms)


# ------------------------------------------------------------------ account
def _preferences(tmp_path: Path) -> tuple[Path, Path]:
    import numpy as np

    rng = np.random.default_rng(5)
    z = rng.normal(size=(60, 2))
    z /= 1.5 * np.maximum(1.0, np.linalg.norm(z, axis=1))[:, None]
    labels = (rng.random(60) < 0.5).astype(int)
    data = tmp_path / "preferences.csv"
    data.write_text("z0,z1,label\n" + "".join(f"{a},{b},{y}\n" for (a, b), y in zip(z, labels, strict=True)),
                    encoding="utf-8")
    actions = tmp_path / "actions.csv"
    actions.write_text("x0,x1\n0.5,0\n0,0.5\n0.3,0.3\n", encoding="utf-8")
    return data, actions


@pytest.mark.parametrize("bound", ["50", "200", "500", "1e308"])
def test_account_rlhf_with_a_huge_norm_bound_names_the_cli_option(tmp_path: Path, bound: str) -> None:
    data, actions = _preferences(tmp_path)
    result = _invoke("account", "rlhf", "--data", str(data), "--actions", str(actions), "--norm-bound", bound)
    assert result.exit_code == 1, result.output
    line = result.output.strip()
    assert line.count("\n") == 0
    assert line.startswith(f"Error: --norm-bound {float(bound):g}:") and "lower --norm-bound" in line
    assert "solver_tolerance" not in line and "internal error" not in line


def test_account_rlhf_with_a_vanishing_norm_bound_says_raise_it(tmp_path: Path) -> None:
    data, actions = _preferences(tmp_path)
    result = _invoke("account", "rlhf", "--data", str(data), "--actions", str(actions), "--norm-bound", "1e-300")
    assert result.exit_code == 1, result.output
    assert "raise --norm-bound" in result.output and "lower --norm-bound" not in result.output


def test_account_table_explains_itself(tmp_path: Path) -> None:
    data, actions = _preferences(tmp_path)
    result = _invoke("account", "rlhf", "--data", str(data), "--actions", str(actions), columns=200)
    assert result.exit_code == 0, result.output
    rows = {line.split("│")[1].strip(): line for line in result.stdout.splitlines() if line.count("│") >= 4}
    assert "reason" not in rows  # no empty row
    assert "pure DP" in rows["epsilon0"]
    assert "the pure epsilon0 again" in rows["epsilon"]
    approximate = _invoke("account", "rlhf", "--data", str(data), "--actions", str(actions), "--lambda0", "0.5",
                          columns=200)
    assert "(epsilon, delta)-DP from --lambda0" in approximate.stdout
