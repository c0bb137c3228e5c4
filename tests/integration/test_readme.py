"""The README stays true: every Python block and every CLI command in it runs as written.

The install, test and benchmark commands are what CI itself runs (or, for the benchmarks, too long
for the suite); every other line of a ``bash`` block is executed, in order, in a fresh directory
that holds a copy of ``examples/`` (the README's commands run from the repository's root).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)
NOT_RUN_HERE = ("python -m pip install", "python -m pytest", "python benchmarks/")


def blocks(language: str) -> list[str]:
    return [body for lang, body in FENCE.findall(README.read_text(encoding="utf-8")) if lang == language]


def shell_commands() -> list[str]:
    lines = [line.strip() for body in blocks("bash") for line in body.splitlines()]
    return [line for line in lines if line and not line.startswith(NOT_RUN_HERE)]


def test_readme_has_the_documented_commands() -> None:
    commands = shell_commands()
    assert any(command.startswith("dpbandits reproduce") for command in commands)
    # the tour of your own algorithm: a study beside the built-ins, and the audit of its claim
    assert any("dpbandits run examples/private_ucb_study.toml" in command for command in commands)
    assert any("dpbandits audit private_ucb:PrivateUCB --epsilon 1" in command for command in commands)
    assert "python -m pytest" in "\n".join(blocks("bash"))
    assert "python -m pip install -e \".[dev]\"" in "\n".join(blocks("bash"))
    assert len(blocks("python")) >= 3


def printed_comments(source: str) -> list[str | None]:
    """For each top-level ``print(...)`` line of a block, its comment (what it prints), or None."""
    found = []
    for line in source.splitlines():
        if line.startswith("print("):
            comment = line.partition("  # ")[2]
            found.append(comment.strip() or None)
    return found


def shows(comment: str, printed: str) -> bool:
    """Whether ``printed`` is what ``comment`` says: its text before an " — " aside, "..." eliding a part."""
    position = 0
    for fragment in (part.strip() for part in comment.split(" — ")[0].split("...")):
        found = printed.find(fragment, position)
        if found < 0:
            return False
        position = found + len(fragment)
    return True


def test_a_comment_that_adds_words_the_line_lacks_is_caught() -> None:
    printed = "0.277143-DP [add/remove, per-instance] protecting one logged record (arm, reward); per-instance"
    assert shows("0.277143-DP [add/remove, per-instance] protecting one logged record ... — Theorem 1", printed)
    assert not shows("0.277143-DP [add/remove, per-instance] ... (Theorem 1)", printed)


@pytest.mark.parametrize("index", range(len(blocks("python"))))
@pytest.mark.slow
def test_readme_python_block_runs(index: int, tmp_path: Path) -> None:
    # and prints what its comments say: `print(x)  # <printed, "..." elides> — <an aside>`
    source = blocks("python")[index]
    env = {**os.environ, "MPLBACKEND": "Agg"}
    result = subprocess.run([sys.executable, "-c", source], cwd=tmp_path, capture_output=True, text=True,
                            env=env, timeout=300)
    assert result.returncode == 0, f"README python block {index} failed:\n{source}\n{result.stderr}"
    expected = printed_comments(source)
    lines = result.stdout.splitlines()
    assert len(lines) == len(expected), (expected, lines)
    for comment, printed in zip(expected, lines, strict=True):
        assert comment is None or shows(comment, printed), f"README says {comment!r}; the line prints {printed!r}"


def test_the_run_directory_listing_names_every_entry_a_run_writes(tmp_path: Path) -> None:
    from dpbandits.experiments.bundled import bundled_study_text
    from dpbandits.experiments.config import parse_study_text
    from dpbandits.experiments.runner import run_study

    (listing,) = [body for body in blocks("") if body.startswith("runs/quickstart/")]
    study = parse_study_text(bundled_study_text("bai-smoke")).with_overrides(trials=2)
    run_dir = run_study(study, tmp_path / "run", progress="none").run_dir
    written = sorted(path.name for path in run_dir.iterdir())
    assert ".lock" in written
    missing = [name for name in written if name not in listing]
    assert not missing, f"the README's run directory listing lacks {missing}"


@pytest.mark.skipif(shutil.which("dpbandits") is None, reason="the dpbandits command is not installed")
@pytest.mark.slow
def test_readme_shell_commands_run_in_order(tmp_path: Path) -> None:
    env = {**os.environ, "MPLBACKEND": "Agg"}
    shutil.copytree(README.parent / "examples", tmp_path / "examples")
    commands = shell_commands()
    first = None
    for command in commands:
        result = subprocess.run(["bash", "-c", command], cwd=tmp_path, capture_output=True, text=True,
                                env=env, timeout=300)
        assert result.returncode == 0, f"README command failed: {command}\n{result.stdout}\n{result.stderr}"
        first = first or result
    # The first command is a private study that reports its guarantee and the ε it ran at.
    assert commands[0].startswith("dpbandits reproduce quickstart")
    assert first is not None
    assert "DP-BAI: ε-DP for one entry of the reward table, at ε = {0.03, 0.1, 0.3, 1.0, 3.0}" in first.stdout
    summary = tmp_path / "runs" / "my-study" / "summary.csv"  # the study init-study copied: a private one
    assert summary.read_text(encoding="utf-8").startswith("budget,epsilon,algorithm,n_trials,")
    for name in ("manifest.json", "study.toml", "cells", "plots"):
        assert (tmp_path / "runs" / "my-study" / name).exists(), name
