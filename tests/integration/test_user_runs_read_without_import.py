"""Reading a run of a user's algorithm imports none of its code (a run directory may come from anyone),
and resuming it after its module was edited is refused or recorded, as a change of version.

``dpbandits status`` and ``load_run`` rebuild a user's algorithm from what the manifest recorded of
it; a name in a run directory's files never selects code to import. Each read runs in a fresh
interpreter from the module's own directory (where an import would find it), and the module leaves a
file behind when it is imported.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from dpbandits._core.errors import StudyError
from dpbandits.experiments.config import Study
from dpbandits.experiments.runner import run_study

AGENT = '''
from pathlib import Path

Path("imported.txt").write_text("the module ran")  # the side effect a read must never cause


class FirstArm:
    """Always pulls arm 0 (not private)."""

    def __init__(self, n_arms, budget, extra=1):
        self.budget, self.t = budget, 0

    done = property(lambda self: self.t >= self.budget)
    recommendation = 0

    def ask(self):
        return 0

    def tell(self, arm, reward):
        self.t += 1
'''


@pytest.fixture
def finished_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "marked_agent.py").write_text(AGENT, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "marked_agent", raising=False)  # another test's copy: import this one
    study = Study.from_mapping({
        "name": "read-without-import", "seed": 3, "trials": 6, "chunk_size": 3,
        "environment": {"name": "bernoulli", "means": [0.6, 0.4, 0.3]},
        "algorithms": [{"name": "marked_agent:FirstArm"}, {"name": "sequential-halving"}],
        "grid": {"budget": [30, 60]},
    })
    run_dir = tmp_path / "run"
    run_study(study, run_dir, progress="none")
    (tmp_path / "imported.txt").unlink()  # the run imported it; from here on, nothing may
    monkeypatch.delitem(sys.modules, "marked_agent")
    return run_dir


def _read(arguments: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """``python ARGUMENTS`` in ``cwd``; ``-m`` and ``-c`` put ``cwd`` first on the import path."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    return subprocess.run([sys.executable, *arguments], cwd=cwd, capture_output=True, text=True, env=env,
                          timeout=120)


def test_status_and_load_run_read_a_users_run_without_importing_it(finished_run: Path) -> None:
    workdir = finished_run.parent
    status = _read(["-m", "dpbandits", "status", str(finished_run), "--json"], workdir)
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["cells_done"] == 4
    trials = _read(["-c", "from dpbandits.experiments.frames import load_run; run = load_run('run'); "
                          "print(len(run.trials), sorted(set(run.trials['algorithm'])))"], workdir)
    assert trials.returncode == 0, trials.stderr
    assert trials.stdout.split(" ", 1)[0] == str(4 * 6)
    assert "marked_agent:FirstArm" in trials.stdout or "FirstArm" in trials.stdout
    assert not (workdir / "imported.txt").exists(), "reading the run imported the user's module"


def test_a_run_directory_that_names_code_it_does_not_describe_is_refused_without_importing(
        finished_run: Path) -> None:
    manifest_path = finished_run / "manifest.json"
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    assert set(manifest["user_algorithms"]) == {"marked_agent:FirstArm"}
    del manifest["user_algorithms"]  # a crafted directory: a study that names a module, and no record of it
    manifest_path.write_text(json.dumps(manifest), encoding="utf-8")
    status = _read(["-m", "dpbandits", "status", str(finished_run)], finished_run.parent)
    assert status.returncode != 0
    message = status.stderr.strip()
    assert len(message.splitlines()) == 1 and "would import its code" in message, message
    assert not (finished_run.parent / "imported.txt").exists()


@pytest.mark.parametrize(("field", "value"), [
    ("parameters", [{"name": "budget; import os", "kind": "keyword_only", "required": True}]),
    ("parameters", [{"name": "budget", "kind": "var_positional", "required": True}]),
    ("metrics", []),
    ("proportion_metrics", ["not_a_metric_of_it"]),
    ("privacy", 7),
])
def test_a_damaged_record_is_one_line_naming_the_field(finished_run: Path, field: str, value: object) -> None:
    manifest_path = finished_run / "manifest.json"
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    manifest["user_algorithms"]["marked_agent:FirstArm"][field] = value
    manifest_path.write_text(json.dumps(manifest), encoding="utf-8")
    status = _read(["-m", "dpbandits", "status", str(finished_run)], finished_run.parent)
    assert status.returncode != 0
    message = status.stderr.strip()
    assert len(message.splitlines()) == 1 and "is damaged" in message and field in message, message
    assert not (finished_run.parent / "imported.txt").exists()


def test_a_resumed_run_is_read_back_the_same(finished_run: Path) -> None:
    from dpbandits.experiments.frames import load_run
    from dpbandits.experiments.store import RunStore

    before = load_run(finished_run).trials
    recorded = RunStore.read_only(finished_run).study
    with pytest.raises(StudyError, match="cannot run here"):
        recorded.algorithm_spec(0).simulate()
    study = Study.from_mapping(json.loads((finished_run / "study.json").read_text(encoding="utf-8")))
    resumed = run_study(study, finished_run, resume=True, progress="none")  # imports: it runs the code
    assert resumed.cells_skipped == 4
    pd.testing.assert_frame_equal(load_run(finished_run).trials, before)


def test_resuming_after_the_users_module_was_edited_is_refused_or_recorded(finished_run: Path) -> None:
    # the code of a user's algorithm is a version of the run, like NumPy's: results of two versions
    # of it are not mixed silently
    module = finished_run.parent / "marked_agent.py"
    study = Study.from_mapping(json.loads((finished_run / "study.json").read_text(encoding="utf-8")))
    recorded = json.loads((finished_run / "manifest.json").read_text(encoding="utf-8"))["sessions"][-1]["versions"]
    assert recorded["code of marked_agent:FirstArm"].startswith("sha256:")
    module.write_text(module.read_text(encoding="utf-8") + "\n# edited after the run\n", encoding="utf-8")
    with pytest.raises(StudyError, match=r"other versions \(code of marked_agent:FirstArm sha256:\w+ -> sha256:\w+\)"):
        run_study(study, finished_run, resume=True, progress="none")
    resumed = run_study(study, finished_run, resume=True, progress="none", allow_version_change=True)
    assert resumed.cells_skipped == 4
    sessions = json.loads((finished_run / "manifest.json").read_text(encoding="utf-8"))["sessions"]
    assert sessions[-1]["versions"]["code of marked_agent:FirstArm"] != recorded["code of marked_agent:FirstArm"]
