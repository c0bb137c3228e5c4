"""The drawing process a run starts before it computes (issue 26's plot cost): it draws the files
``plot_run`` draws, reports failures at ``result()``, and never outlives its caller — closed, failed,
interrupted or killed by SIGKILL.

Each case runs its caller in a fresh interpreter: the process is forked only from a single-threaded
caller, which a pytest process that ran other tests need not be.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest
from runprocesses import processes_with, wait_until_gone

from dpbandits.experiments.plots import plot_run

pytestmark = pytest.mark.skipif(not (sys.platform.startswith("linux") and Path("/proc/self/environ").exists()),
                                reason="forks only on Linux; finds the processes through /proc")

HEADER = "budget,variant,algorithm,n_trials,success_rate,success_stderr,success_ci_low,success_ci_high\n"

STUDY = """
name = "plot-process"
seed = 5
trials = 400
chunk_size = 20

[environment]
name = "uniform"
means = [0.6, 0.5, 0.45, 0.4]

[[algorithms]]
name = "sequential-halving"

[grid]
budget = [2000, 2100, 2200, 2300, 2400, 2500, 2600, 2700, 2800, 2900, 3000, 3100]
"""


def _run_dir(tmp_path: Path) -> Path:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    rows = [f"{budget},{variant},alg1,50,0.5,0.07,0.37,0.63" for budget in (10, 20, 40) for variant in ("a", "b")]
    (run_dir / "summary.csv").write_text(HEADER + "".join(row + "\n" for row in rows), encoding="utf-8")
    return run_dir


def _caller(body: str, *, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """A fresh interpreter running ``body`` with a PlotProcess named ``plotter`` (single-threaded)."""
    script = ("import os, sys, time\nfrom pathlib import Path\n"
              "from dpbandits.experiments.plot_process import PlotProcess\n" + textwrap.dedent(body))
    return subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, "MPLBACKEND": "Agg", **(env or {})})


def test_the_plot_process_draws_the_files_plot_run_draws(tmp_path: Path) -> None:
    run_dir = _run_dir(tmp_path)
    caller = _caller(f"""
        with PlotProcess(("png",)) as plotter:
            assert plotter._process is not None and plotter._process.is_alive(), "not forked"
            print("\\n".join(str(path) for path in plotter.start(Path({str(run_dir)!r})).result()))
    """)
    out, err = caller.communicate(timeout=120)
    assert caller.returncode == 0, err
    drawn = [Path(line) for line in out.splitlines()]
    here = plot_run(run_dir, out_dir=tmp_path / "here", formats=("png",), workers=1)
    assert [path.name for path in drawn] == [path.name for path in here] and len(here) == 2
    assert all(path.parent == run_dir / "plots" for path in drawn)
    for a, b in zip(drawn, here, strict=True):
        assert a.read_bytes() == b.read_bytes()


def test_a_failure_to_draw_is_the_callers_one_line_error_at_result(tmp_path: Path) -> None:
    run_dir = _run_dir(tmp_path)
    (run_dir / "plots").write_text("a file where the plots' directory goes", encoding="utf-8")
    caller = _caller(f"""
        from dpbandits._core.errors import StudyError
        with PlotProcess(("png",)) as plotter:
            pending = plotter.start(Path({str(run_dir)!r}))
            try:
                pending.result()
            except StudyError as exc:
                print(exc)
            assert not plotter._process, "not released"
    """)
    out, err = caller.communicate(timeout=120)
    assert caller.returncode == 0, err
    assert out.startswith("cannot write plots to") and len(out.splitlines()) == 1


@pytest.mark.parametrize("how", ["closed", "caller-killed"])
def test_the_plot_process_never_outlives_its_caller(how: str) -> None:
    marker = uuid.uuid4().hex
    body = "plotter = PlotProcess(('png',))\nprint(plotter._process.pid, flush=True)\n"
    if how == "closed":
        body += "plotter.close()\nprint('closed', flush=True)\n"
    body += "time.sleep(60)\n"
    caller = _caller(body, env={"DPBANDITS_PLOT_PROCESS_TEST": marker})
    try:
        assert caller.stdout is not None
        child = int(caller.stdout.readline())
        if how == "closed":
            assert caller.stdout.readline().strip() == "closed"
            assert processes_with(marker) == [caller.pid]  # closed and joined: the caller sleeps on alone
        else:
            assert child in processes_with(marker)
            caller.send_signal(signal.SIGKILL)  # no clean-up runs in the caller: the kernel ends the child
            caller.wait(timeout=10)
            assert wait_until_gone(marker, timeout=5.0) == []
    finally:
        caller.kill()
        caller.communicate(timeout=30)  # times out (the test fails) if an orphan still holds its output


@pytest.mark.parametrize("kill_signal", [signal.SIGKILL, signal.SIGTERM, signal.SIGINT],
                         ids=["sigkill", "sigterm", "sigint"])
def test_a_run_stopped_while_its_plot_process_waits_leaves_no_process(
        tmp_path: Path, kill_signal: signal.Signals) -> None:
    study_file = tmp_path / "study.toml"
    study_file.write_text(STUDY, encoding="utf-8")
    marker = uuid.uuid4().hex
    run_dir = tmp_path / "run"
    run = subprocess.Popen(
        [sys.executable, "-m", "dpbandits", "run", str(study_file), "--out", str(run_dir), "--progress", "none"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "MPLBACKEND": "Agg", "DPBANDITS_PLOT_PROCESS_TEST": marker},
    )
    try:
        deadline = time.monotonic() + 60
        # the plot process is forked before the study is read; the run handles signals once it has
        # opened its directory (before, a signal ends the command as it ends any other)
        while ((len(processes_with(marker)) < 2 or not (run_dir / "manifest.json").exists())
               and run.poll() is None and time.monotonic() < deadline):
            time.sleep(0.01)
        assert run.poll() is None and len(processes_with(marker)) == 2, "no plot process beside the run"
        run.send_signal(kill_signal)
        _, stderr = run.communicate(timeout=60)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    survivors = wait_until_gone(marker, timeout=5.0)
    for pid in survivors:
        os.kill(pid, signal.SIGKILL)
    assert not survivors, f"processes of the stopped run still alive: {survivors}"
    assert "Traceback" not in stderr
    if kill_signal != signal.SIGKILL:
        assert stderr.startswith("Error: stopped by"), stderr
