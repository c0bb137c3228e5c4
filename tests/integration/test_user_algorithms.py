"""A user's own algorithm in a study: by import path or entry point, as an agent class or a function.

The docs' worked example (examples/private_ucb.py) runs beside DP-BAI on the serial and process
backends with identical summaries; a dueling agent and a vectorised function run too; a user's
failure is one line naming the algorithm and the step.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pandas as pd
import pytest

from dpbandits._core.errors import StudyError, UserAlgorithmError
from dpbandits.algorithms.registry import get_algorithm
from dpbandits.experiments.config import Study
from dpbandits.experiments.frames import load_run
from dpbandits.experiments.runner import run_study

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

DUELING_AGENT = '''
import numpy as np


class RoundRobinDuels:
    """Duels every pair in turn; recommends the arm with most wins (not private)."""

    def __init__(self, n_arms, horizon, rng=None):
        self.n_arms, self.horizon, self.time = n_arms, horizon, 0
        self.wins = np.zeros(n_arms)
        self.pairs = [(i, j) for i in range(n_arms) for j in range(i + 1, n_arms)]

    @property
    def done(self):
        return self.time >= self.horizon

    def ask(self):
        return self.pairs[self.time % len(self.pairs)]

    def tell(self, pair, winner=None, first_wins=None):
        self.wins[winner] += 1
        self.time += 1

    @property
    def recommendation(self):
        return int(np.argmax(self.wins))
'''

FUNCTION = '''
import numpy as np

from dpbandits._core.rng import spawn_generators


def uniform_guess(env, *, n_trials, rng, budget):
    """Recommends a uniformly random arm (a vectorised simulate function)."""
    (algorithm_rng,) = spawn_generators(rng, 1)
    arms = algorithm_rng.integers(env.n_arms, size=n_trials)
    best = np.asarray(env.means).max()
    return {"success": (np.asarray(env.means)[arms] == best).astype(float)}


uniform_guess.metrics = ("success",)
uniform_guess.proportion_metrics = ("success",)


def returns_a_number(env, *, n_trials, rng, budget):
    return 3


returns_a_number.metrics = ("success",)


class Broken:
    """Fails at its tell number `at`; in every trial, or only in the trial of index `bad` (known by build order)."""

    built = 0

    def __init__(self, n_arms, budget, at=7, bad=None):
        self.n_arms, self.budget, self.t, self.at, self.bad = n_arms, budget, 0, at, bad
        self.trial, Broken.built = Broken.built, Broken.built + 1

    done = property(lambda self: self.t >= self.budget)
    recommendation = 0

    def ask(self):
        return 0

    def tell(self, arm, reward):
        self.t += 1
        if self.t == self.at and self.bad in (None, self.trial):
            raise KeyError("my bug" if self.bad is None else f"my bug in trial {self.trial}")
'''


DUCK_TYPED = '''
from dpbandits import NonPrivate


class Greedy:
    """Pulls the arms in turn; recommends the best empirical sum (not private). Attributes set in __init__."""

    def __init__(self, n_arms, budget, epsilon=None):
        self.n_arms, self.budget, self.t, self.sums = n_arms, budget, 0, [0.0] * n_arms
        self.done = False
        self.recommendation = None
        self.privacy = NonPrivate(unit="one entry of the reward table", reason="it keeps every raw reward")

    def ask(self):
        return self.t % self.n_arms

    def tell(self, arm, reward):
        self.sums[arm] += reward
        self.t += 1
        if self.t >= self.budget:
            self.done, self.recommendation = True, max(range(self.n_arms), key=self.sums.__getitem__)


class NoDone:
    def __init__(self, n_arms, budget):
        self.recommendation = 0

    def ask(self):
        return 0

    def tell(self, arm, reward):
        pass
'''


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A directory holding the worked example and helper modules, importable (as the working directory is)."""
    for name in ("private_ucb.py", "private_ucb_study.toml"):
        shutil.copy(EXAMPLES / name, tmp_path / name)
    (tmp_path / "my_duels.py").write_text(DUELING_AGENT)
    (tmp_path / "my_functions.py").write_text(FUNCTION)
    (tmp_path / "my_duck.py").write_text(DUCK_TYPED)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    return tmp_path


def _small_example(workdir: Path) -> Study:
    data = tomllib.loads((workdir / "private_ucb_study.toml").read_text())
    data.update(trials=40, chunk_size=10, grid={"budget": [200], "epsilon": [0.5, 2.0]})
    return Study.from_mapping(data)


@pytest.mark.slow
def test_the_worked_example_runs_with_identical_summaries_on_serial_and_process(workdir: Path) -> None:
    study = _small_example(workdir)
    serial = run_study(study, workdir / "serial", backend="serial", progress="none")
    process = run_study(study, workdir / "process", backend="process", workers=2, progress="none")
    first, second = pd.read_csv(serial.summary_path), pd.read_csv(process.summary_path)
    pd.testing.assert_frame_equal(first, second)
    labels = set(first["algorithm"])
    assert labels == {"Private UCB (yours)", "DP-BAI"}
    ucb = first[first["algorithm"] == "Private UCB (yours)"]
    assert set(ucb["epsilon"]) == {0.5, 2.0} and (ucb["success_rate"] > 0).all()


def test_an_entry_point_names_an_installed_algorithm(workdir: Path) -> None:
    site = workdir / "site"
    info = site / "my_ucb_package-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: my-ucb-package\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[dpbandits.algorithms]\nmy-ucb = private_ucb:PrivateUCB\n")
    sys.path.insert(0, str(site))
    try:
        spec = get_algorithm("my-ucb", "mab")
        assert spec.family == "user" and "cumulative_regret" in spec.metrics
    finally:
        sys.path.remove(str(site))


def test_a_dueling_agent_and_a_vectorised_function_run_beside_built_ins(workdir: Path) -> None:
    duels = Study.from_mapping({
        "name": "user-duels", "seed": 1, "trials": 6, "chunk_size": 3,
        "environment": {"name": "dueling-f1"},
        "algorithms": [{"algorithm": "my_duels:RoundRobinDuels", "label": "round robin"},
                       {"name": "rucb"}],
        "grid": {"horizon": [60]},
    })
    result = run_study(duels, workdir / "duels", progress="none")
    summary = pd.read_csv(result.summary_path)
    assert {"round robin", "rucb"} <= set(summary["algorithm"])
    assert summary[summary["algorithm"] == "round robin"]["weak_regret_mean"].notna().all()
    mab = Study.from_mapping({
        "name": "user-function", "seed": 1, "trials": 20, "chunk_size": 10,
        "environment": {"name": "bernoulli", "means": [0.9, 0.5, 0.1]},
        "algorithms": [{"algorithm": "my_functions:uniform_guess"}, {"name": "uniform"}],
        "grid": {"budget": [30]},
    })
    summary = pd.read_csv(run_study(mab, workdir / "function", progress="none").summary_path)
    assert set(summary["algorithm"]) == {"my_functions:uniform_guess", "uniform"}


def _two_arms(algorithm: dict, *, budget: int, **options: int) -> Study:
    """A study of one user's algorithm on a two-armed Bernoulli bandit (two trials unless told)."""
    return Study.from_mapping({"name": "user-two-arms", "seed": 1, "trials": 2, **options,
                               "environment": {"name": "bernoulli", "means": [0.9, 0.5]},
                               "algorithms": [algorithm], "grid": {"budget": [budget]}})


@pytest.mark.slow
def test_a_users_failure_is_one_line_naming_the_algorithm_and_step(workdir: Path) -> None:
    study = _two_arms({"algorithm": "my_functions:Broken"}, budget=20)
    with pytest.raises(StudyError, match=r"algorithm 'my_functions:Broken' \(trial 0, step 7\): tell\(\) raised "
                                         r"KeyError: 'my bug'"):
        run_study(study, workdir / "broken", progress="none")
    command = subprocess.run(
        [sys.executable, "-m", "dpbandits", "run", "private_ucb_study.toml", "--out", "runs/x", "--trials", "2"],
        cwd=workdir, capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": os.environ["PYTHONPATH"]},
    )
    assert command.returncode == 0, command.stderr
    # beside DP-BAI in the printed summary, its privacy line (its own statement, unchecked), plots and DataFrames
    assert ("Private UCB (yours): ε-DP [replace-one] protecting one entry of the reward table (its agents' own "
            "statement: a study does not check it, dpbandits audit does), at ε = {0.5, 2.0}") in command.stdout
    assert sorted(path.name for path in (workdir / "runs/x/plots").glob("*.png")) == [
        "simple_regret_vs_budget.png", "simple_regret_vs_epsilon.png", "success_vs_budget.png",
        "success_vs_epsilon.png"]
    trials = load_run(workdir / "runs/x").trials
    assert set(trials["algorithm"]) == {"Private UCB (yours)", "DP-BAI"} and len(trials) == 2 * 8
    (workdir / "bad.toml").write_text(textwrap.dedent("""
        name = "bad"
        seed = 1
        trials = 2
        [environment]
        name = "bernoulli"
        means = [0.9, 0.5]
        [[algorithms]]
        algorithm = "my_functions:Broken"
        [grid]
        budget = [20]
    """))
    failed = subprocess.run([sys.executable, "-m", "dpbandits", "run", "bad.toml", "--out", "runs/bad"],
                            cwd=workdir, capture_output=True, text=True, timeout=300)
    assert failed.returncode == 1
    errors = [line for line in failed.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and "my_functions:Broken" in errors[0] and "step 7" in errors[0], failed.stderr
    assert "Traceback" not in failed.stderr
    assert "internal error" not in failed.stderr
    debug = subprocess.run([sys.executable, "-m", "dpbandits", "run", "bad.toml", "--out", "runs/bad-debug"],
                           cwd=workdir, capture_output=True, text=True, timeout=300,
                           env={**os.environ, "DPBANDITS_DEBUG": "1"})
    assert debug.returncode == 1 and "Traceback" in debug.stderr
    assert "my_functions.py" in debug.stderr and "KeyError: 'my bug'" in debug.stderr  # the user's own frame


@pytest.mark.parametrize("bad", [0, 3, 6])
def test_a_failure_names_the_trial_as_the_cell_numbers_it_across_chunks(workdir: Path, bad: int) -> None:
    import my_functions

    my_functions.Broken.built = 0  # the serial backend builds the chunks' agents in trial order
    study = _two_arms({"algorithm": "my_functions:Broken", "at": 2, "bad": bad}, budget=4, trials=7, chunk_size=3)
    with pytest.raises(StudyError, match=rf"\(trial {bad}, step 2\): tell\(\) raised KeyError: 'my bug in trial {bad}'$"):
        run_study(study, workdir / f"chunks{bad}", progress="none")


def test_a_function_that_returns_no_mapping_is_the_users_error(workdir: Path) -> None:
    study = _two_arms({"algorithm": "my_functions:returns_a_number"}, budget=4)
    with pytest.raises(StudyError, match=r"'my_functions:returns_a_number' \(a chunk of 2 trials\): simulate returned 3, "
                                         r"not a mapping \{metric: array"):
        run_study(study, workdir / "number", progress="none")


@pytest.mark.parametrize(("name", "message"), [
    ("no_such_module:Agent", "cannot import 'no_such_module'"),
    ("my_functions:Missing", "has no 'Missing'"),
    ("my_functions:spawn_generators", "must declare the metrics"),
])
def test_bad_names_are_refused_when_the_study_is_validated(workdir: Path, name: str, message: str) -> None:
    with pytest.raises(StudyError, match=message):
        Study.from_mapping({"name": "bad", "seed": 1, "trials": 2, "environment": {"name": "bernoulli", "means": [0.9, 0.5]},
                            "algorithms": [{"algorithm": name}], "grid": {"budget": [20]}})
    with pytest.raises(UserAlgorithmError):
        get_algorithm(name)


@pytest.mark.slow
def test_the_worked_example_gives_the_same_summary_on_dask_worker_processes(workdir: Path) -> None:
    pytest.importorskip("distributed")
    from dpbandits.experiments.backends import DaskBackend

    study = _small_example(workdir)
    serial = run_study(study, workdir / "serial", progress="none")
    run_study(study, workdir / "dask", backend=DaskBackend(workers=2, processes=True), progress="none")
    assert (workdir / "dask" / "summary.csv").read_bytes() == serial.summary_path.read_bytes()


def test_an_agent_whose_members_are_set_in_init_runs_and_states_its_own_privacy(workdir: Path) -> None:
    # duck-typed on an instance: done and recommendation are attributes set in __init__ (the common way)
    from dpbandits.cli import privacy_lines

    study = Study.from_mapping({
        "name": "duck", "seed": 1, "trials": 3, "environment": {"name": "bernoulli", "means": [0.9, 0.5]},
        "algorithms": [{"algorithm": "my_duck:Greedy", "label": "greedy"},
                       {"algorithm": "private_ucb:PrivateUCB", "label": "ucb"}],
        "grid": {"budget": [20], "epsilon": [0.5, 1.0]},
    })
    summary = pd.read_csv(run_study(study, workdir / "duck", progress="none").summary_path)
    assert set(summary["algorithm"]) == {"greedy", "ucb"}
    lines = privacy_lines(study)
    # the class's own statement; a non-private one gets no "at ε = {...}"
    assert "  greedy: none (non-private): it keeps every raw reward" in lines
    assert ("  ucb: ε-DP [replace-one] protecting one entry of the reward table (its agents' own statement: a "
            "study does not check it, dpbandits audit does), at ε = {0.5, 1.0}") in lines
    with pytest.raises(StudyError, match=r"'my_duck:NoDone' \(trial 0, step 0\): the agent has no done"):
        run_study(_two_arms({"algorithm": "my_duck:NoDone"}, budget=4), workdir / "nodone", progress="none")


def test_show_describes_what_a_study_accepts(workdir: Path) -> None:
    from typer.testing import CliRunner

    from dpbandits.cli import app

    for name, parameter in (("my_duck:Greedy", "budget"), ("my_functions:uniform_guess", "budget")):
        shown = CliRunner().invoke(app, ["show", name, "--json"])
        assert shown.exit_code == 0, shown.output
        (entry,) = json.loads(shown.output)
        assert entry["name"] == name and entry["family"] == "user"
        assert parameter in [p["name"] for p in entry["parameters"]]
    missing = CliRunner().invoke(app, ["show", "my_duck:Missing"])
    assert missing.exit_code == 1 and "has no 'Missing'" in missing.output
