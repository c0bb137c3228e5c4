"""No module of the package grows past a size a newcomer can read and change in one sitting.

A module over ``LIMIT`` lines usually holds two ideas: split it along its seam (keep the names it
exports importable from it, and a persistable class where it is defined: its module path is in state
files). A module that must stay larger is listed in ``ALLOWED`` with the reason and its size today, so
it cannot grow unnoticed either.
"""

from __future__ import annotations

from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "dpbandits"
LIMIT = 800

ALLOWED: dict[str, tuple[int, str]] = {}
"""Module (relative to ``src/dpbandits``) -> (its most lines, why it may exceed ``LIMIT``)."""


def _lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def oversized(root: Path, limit: int = LIMIT, allowed: dict[str, tuple[int, str]] | None = None) -> list[str]:
    """The modules under ``root`` longer than ``limit`` lines (or than their allowance), in words."""
    allowed = ALLOWED if allowed is None else allowed
    found = []
    for path in sorted(root.rglob("*.py")):
        name = path.relative_to(root).as_posix()
        most = allowed[name][0] if name in allowed else limit
        if (n := _lines(path)) > most:
            found.append(f"{name}: {n} lines (at most {most})")
    return found


def test_no_module_exceeds_the_line_limit() -> None:
    assert oversized(SRC) == [], f"split these modules along their seams (at most {LIMIT} lines each)"


def test_each_allowance_is_still_needed() -> None:
    """An allowance goes once its module is back under the limit (the list only shrinks; today it is empty)."""
    for name in sorted(ALLOWED):
        path = SRC / name
        assert path.is_file(), f"{name} is allowed to be long but no longer exists: remove its allowance"
        assert _lines(path) > LIMIT, f"{name} is within {LIMIT} lines now: remove its allowance"


def test_the_check_catches_a_long_module(tmp_path: Path) -> None:
    """The checker flags a module one line over the limit, and one over its allowance (a test that can fail)."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "short.py").write_text("x = 1\n" * 10, encoding="utf-8")
    (tmp_path / "pkg" / "long.py").write_text("x = 1\n" * 11, encoding="utf-8")
    (tmp_path / "big.py").write_text("x = 1\n" * 13, encoding="utf-8")
    assert oversized(tmp_path, limit=10, allowed={"big.py": (12, "test")}) == [
        "big.py: 13 lines (at most 12)", "pkg/long.py: 11 lines (at most 10)"]
    assert oversized(tmp_path, limit=11, allowed={"big.py": (13, "test")}) == []
