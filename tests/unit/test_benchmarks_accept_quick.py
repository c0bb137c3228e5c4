"""Every benchmark accepts ``--quick`` (``python benchmarks/run.py --quick`` passes it to each of them)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

BENCHMARKS = sorted((Path(__file__).resolve().parents[2] / "benchmarks").glob("bench_*.py"))


def _options(path: Path) -> set[str]:
    """The option strings of every ``add_argument`` call in a script."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "add_argument":
            found |= {arg.value for arg in node.args if isinstance(arg, ast.Constant) and isinstance(arg.value, str)}
    return found


def test_benchmarks_are_found() -> None:
    assert len(BENCHMARKS) >= 5


@pytest.mark.parametrize("path", BENCHMARKS, ids=[path.stem for path in BENCHMARKS])
def test_benchmark_accepts_quick(path: Path) -> None:
    assert "--quick" in _options(path), f"{path.name} must accept --quick (benchmarks/run.py --quick passes it)"
